#!/usr/bin/env python3
"""tests/test_code_rules.py — rules of docs/conventions.md that a reader of
the source can check, checked on the source itself:

1. comments name files that exist: every repository path a comment cites
   (a word beginning with a top-level folder, such as analyzers/tables.h or
   tests/golden/report_digests.txt) is a file or folder of the tree;
2. no function in analyzers/, reports/ or cli/ is over 120 lines (from the
   first line of its definition to its closing brace);
3. in analyzers/, findings are phrased in one place: no kvs_arena_printf
   outside the phrasing module (PHRASING below: the detectors compute
   figures, it turns them into words).

ALLOWED_LONG and ALLOWED_PRINTF list places that do not follow rules 2
and 3 (empty now: keep them so); each entry is checked to still need its
exemption, so the lists only shrink.

    tests/test_code_rules.py            (from meson: meson test -C build test_code_rules)
"""
import os
import re
import subprocess
import sys

from kvs_test import check, finish

ROOT = os.environ.get("KVS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 120
FUNCTION_DIRS = ("analyzers", "reports", "cli")
PHRASING = "analyzers/phrase.c"
# "file:function" still over MAX_LINES
ALLOWED_LONG = set()
# files of analyzers/ that still phrase findings themselves
ALLOWED_PRINTF = set()

C_EXT = (".c", ".h", ".cu", ".cuh", ".cpp", ".c.in")
HASH_EXT = (".py", ".sh")
HASH_NAMES = ("meson.build", "meson.options", "meson_options.txt", "run")


def tracked_files():
    """The files git tracks (and those it does not ignore), relative to ROOT."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
        return sorted(set(f for f in out.decode().splitlines() if os.path.exists(os.path.join(ROOT, f))))
    except (OSError, subprocess.CalledProcessError):  # no git, or a tarball: walk it
        return walked_files()


def walked_files():
    """The files under ROOT but what .gitignore leaves out (its folder and name
    patterns: ./run.sh's out/ and the build folders are not the source)."""
    import fnmatch
    top, anywhere, names_out = [], [], []
    try:
        for ln in read(".gitignore").splitlines():
            ln = ln.strip()
            if not ln or ln.startswith("#"):
                continue
            if ln.endswith("/"):
                (top if ln.startswith("/") else anywhere).append(ln.strip("/"))
            else:
                names_out.append(ln.lstrip("/"))
    except OSError:
        pass
    files = []
    for d, subdirs, names in os.walk(ROOT):
        at_top = os.path.samefile(d, ROOT)
        subdirs[:] = [s for s in subdirs if (s == ".ci" or not s.startswith(".")) and
                      not any(fnmatch.fnmatch(s, p) for p in anywhere) and
                      not (at_top and any(fnmatch.fnmatch(s, p) for p in top))]
        files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names
                  if not any(fnmatch.fnmatch(n, p) for p in names_out)]
    return sorted(files)


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def c_comments(text):
    """(line, comment text) of each /* */ and // comment, strings skipped."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            line += text.count("\n", i, j)
            i = j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        else:
            i += 1
    return out


def hash_comments(text):
    """(line, text) of each # comment (and of Python docstrings, which say
    as much); a # inside a quoted string is not one."""
    out = []
    for k, ln in enumerate(text.splitlines(), 1):
        quote = None
        for j, ch in enumerate(ln):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif ch == "#":
                out.append((k, ln[j + 1:]))
                break
    for m in re.finditer(r'"""(.*?)"""', text, re.S):
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1)))
    return out


# a cited path: a top-level folder, then folders and a name with an extension
PATH_RE = re.compile(r"(?<![\w./-])((?:%s)/(?:[\w.+-]+/)*[\w+-]+(?:\.[\w]+)+)")


def cited_paths(files):
    """[(file, line, path)] of paths comments cite that do not exist."""
    tops = sorted({f.split("/")[0] for f in files if "/" in f} - {"shared"})
    rx = re.compile(PATH_RE.pattern % "|".join(re.escape(t) for t in tops))
    exists = set(files)
    dirs = {os.path.dirname(f) for f in files}
    while True:  # every folder above too
        more = {os.path.dirname(d) for d in dirs} - dirs
        if not more:
            break
        dirs |= more
    missing = []
    for f in files:
        base = os.path.basename(f)
        if f.endswith(C_EXT):
            comments = c_comments(read(f))
        elif f.endswith(HASH_EXT) or base in HASH_NAMES:
            comments = hash_comments(read(f))
        else:
            continue
        for line, text in comments:
            for m in rx.finditer(text):
                p = m.group(1).rstrip(".")
                if p in exists or p in dirs or os.path.exists(os.path.join(ROOT, p)):
                    continue
                missing.append((f, line + text.count("\n", 0, m.start()), p))
    return missing


FUNC_START = re.compile(r"^(?!static_assert|typedef|(?:struct|enum|union)\s+\w+\s*\{|#)[A-Za-z_][^;=]*\(")


def functions(text):
    """[(name, first line, lines)] of each function defined at file level: a
    definition starts at column 0 and its body closes with a '}' at column 0
    (labels and #if lines at column 0 inside it do not end it)."""
    lines = text.splitlines()
    out = []
    start, in_body = None, False
    for k, ln in enumerate(lines):
        if start is None:
            if FUNC_START.match(ln) and not ln.rstrip().endswith(";"):
                start, in_body = k, ln.rstrip().endswith("{")
            continue
        if in_body:
            if ln.startswith("}"):
                m = re.search(r"(\w+)\s*\(", " ".join(lines[start:k + 1]))
                if m:
                    out.append((m.group(1), start + 1, k - start + 1))
                start = None
        elif ln.startswith("{"):
            in_body = True
        elif ln.rstrip().endswith(";") or not ln.strip():
            start = None  # a prototype, or no definition
        elif ln.rstrip().endswith("{") and ln.startswith((" ", "\t")):
            in_body = True  # "    int c)  {" closing a signature
    return out


def long_functions(files):
    out = {}
    for f in files:
        if f.split("/")[0] in FUNCTION_DIRS and f.endswith(".c"):
            for name, line, n in functions(read(f)):
                if n > MAX_LINES:
                    out["%s:%s" % (f, name)] = (line, n)
    return out


def printf_files(files):
    out = {}
    for f in files:
        if f.startswith("analyzers/") and f.endswith(".c") and f != PHRASING:
            n = sum(1 for _, text in [(0, read(f))] for _ in re.finditer(r"\bkvs_arena_printf\s*\(", text))
            if n:
                out[f] = n
    return out


def main():
    files = tracked_files()
    check(any(f.startswith("analyzers/") for f in files), "the source tree is found (%s)" % ROOT)

    missing = cited_paths(files)
    check(not missing, "every file path a comment cites exists%s"
          % "".join("\n     %s:%d cites %s" % m for m in missing))

    long = long_functions(files)
    over = sorted(k for k in long if k not in ALLOWED_LONG)
    check(not over, "no function in %s over %d lines%s" % ("/, ".join(FUNCTION_DIRS) + "/", MAX_LINES,
          "".join("\n     %s (line %d): %d lines" % (k, long[k][0], long[k][1]) for k in over)))
    stale = sorted(k for k in ALLOWED_LONG if k not in long)
    check(not stale, "ALLOWED_LONG lists only functions still over %d lines%s"
          % (MAX_LINES, "".join("\n     drop: " + k for k in stale)))

    pf = printf_files(files)
    extra = sorted(k for k in pf if k not in ALLOWED_PRINTF)
    check(not extra, "no kvs_arena_printf in analyzers/ outside %s%s"
          % (PHRASING, "".join("\n     %s: %d calls" % (k, pf[k]) for k in extra)))
    stale = sorted(k for k in ALLOWED_PRINTF if k not in pf)
    check(not stale, "ALLOWED_PRINTF lists only files that still call kvs_arena_printf%s"
          % "".join("\n     drop: " + k for k in stale))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
