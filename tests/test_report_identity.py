#!/usr/bin/env python3
"""tests/test_report_identity.py KVSCOPE [--update] — every report kvscope
writes on the real traces is byte for byte what it was: a change to the
reader (a move, a faster scanner, parallel reading) must not change a byte
of any report.

The reports: `kvscope report` of every trace in ../shared/traces (hta/,
serving/, graphs/, nsys/ and the MLA pair), examples/traces, tests/traces
and tests/fixtures, in each format (text, md, json, html); the demo's
options on the bundled GLM-5 traces; a graph replay with its capture; the
ranks of one run together; and `kvscope compare` of the pairs the tests and
examples compare (and the summary of three). Each line of
tests/golden/report_digests.txt holds, for one command, the first 16 hex
digits of the sha256 of its stdout and of its stderr, its exit code, and
its arguments. Paths in the arguments are relative to a scratch folder
holding `shared` (-> ../shared/traces), `examples` (-> examples/traces),
`tests` (-> tests/traces) and `fixtures` (-> tests/fixtures), so reports
that name their trace do not depend on where the folders are.

Without ../shared the commands on it are not run (said in one line); the
rest are. A command with no digest line fails (add it with --update), as
does a digest line no command makes.

Update on purpose, with the change that earns it, and say in the commit
why the reports changed:
    KVS_UPDATE_GOLDEN=1 meson test -C build test_report_identity
    (or: tests/test_report_identity.py build/cli/kvscope --update)
To see what changed, run the command printed with a FAIL line from the
scratch folder layout above with the old and the new kvscope and diff.

    meson test -C build test_report_identity
"""
import concurrent.futures
import glob
import hashlib
import os
import subprocess
import sys
import tempfile

from kvs_test import check, finish

ROOT = os.environ.get("KVS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.environ.get("KVS_SHARED_DIR") or os.path.join(ROOT, "..", "shared"), "traces")
DIGESTS = os.path.join(ROOT, "tests", "golden", "report_digests.txt")
FORMATS = ("text", "md", "json", "html")
# scratch-folder name -> the folder it stands for
FOLDERS = {"shared": SHARED, "examples": os.path.join(ROOT, "examples", "traces"),
           "tests": os.path.join(ROOT, "tests", "traces"),
           "fixtures": os.path.join(ROOT, "tests", "fixtures")}
TRACE_GLOBS = ("*.json", "*.json.gz", "*.sqlite")
GLM5 = ["--model", "glm5", "--kv-capacity", "495552", "--batch", "1"]


def traces(folder):
    """Trace files under FOLDERS[folder], as scratch-relative paths, sorted."""
    top = FOLDERS[folder]
    out = []
    for dirpath, _, _ in os.walk(top):
        for g in TRACE_GLOBS:
            for f in glob.glob(os.path.join(dirpath, g)):
                out.append(folder + "/" + os.path.relpath(f, top))
    return sorted(out)


def commands():
    """Every command checked, each a tuple of kvscope's arguments."""
    cmds = []
    for folder in FOLDERS:
        for t in traces(folder):
            for fmt in FORMATS:
                cmds.append(("report", t, "--format", fmt, "--quiet"))
    ex = "examples/glm5_%s.json.gz"
    for kind in ("full-cast", "active-cast", "fp8-direct"):
        for fmt in FORMATS:
            cmds.append(("report", ex % kind, *GLM5, "--format", fmt, "--quiet"))
    graphs = "shared/graphs/g61full_%s.pt.trace.json.gz"
    mla = "shared/mla61_cap131072_%s.pt.trace.json.gz"
    hta = "shared/hta/%s.json.gz"
    for fmt in FORMATS:
        cmds.append(("report", graphs % "replay", "--graph-capture", graphs % "capture",
                     "--kv-dtype", "fp8", "--format", fmt, "--quiet"))
        cmds.append(("report", hta % "trace_filter__sampled_rank-0", hta % "trace_filter__sampled_rank-1",
                     "--format", fmt, "--quiet"))
        cmds.append(("report", hta % "nccl_parser_config__nccl_data", hta % "rank_non_gpu__rank_non_gpu",
                     hta % "rank_unavailable__rank_not_found", "--format", fmt, "--quiet"))
        cmds.append(("compare", mla % "unfixed", mla % "fixed", "--batch", "1", "--format", fmt, "--quiet"))
        cmds.append(("compare", ex % "full-cast", ex % "fp8-direct", *GLM5, "--format", fmt, "--quiet"))
        cmds.append(("compare", hta % "trace_diff__control__control", hta % "trace_diff__test__test",
                     "--format", fmt, "--quiet"))
        cmds.append(("compare", "fixtures/reports/kv_unfixed.json", "fixtures/reports/kv_fixed.json",
                     "--kv-capacity", "8192", "--batch", "1", "--format", fmt, "--quiet"))
        if fmt != "html":  # html takes one AFTER
            cmds.append(("compare", ex % "full-cast", ex % "fp8-direct", ex % "active-cast", *GLM5,
                         "--format", fmt, "--quiet"))
    return cmds


def asan_build(path):
    with open(path, "rb") as f:
        return b"__asan_init" in f.read()


def needs_shared(cmd):
    return any(a.startswith("shared/") for a in cmd)


def digest(data):
    return hashlib.sha256(data).hexdigest()[:16]


def run(kvscope, scratch, cmd):
    p = subprocess.run([kvscope] + list(cmd), cwd=scratch, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return "%s %s %d" % (digest(p.stdout), digest(p.stderr), p.returncode)


def read_digests():
    want = {}
    if os.path.exists(DIGESTS):
        with open(DIGESTS) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                out, err, rc, args = line.rstrip("\n").split(" ", 3)
                want[args] = "%s %s %s" % (out, err, rc)
    return want


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    kvscope = os.path.abspath(sys.argv[1])
    update = "--update" in sys.argv[2:] or os.environ.get("KVS_UPDATE_GOLDEN") == "1"
    have_shared = os.path.isdir(SHARED)
    cmds = commands()
    run_cmds = [c for c in cmds if have_shared or not needs_shared(c)]
    if not have_shared:
        n = sum(1 for k in read_digests() if needs_shared(k.split()))
        print("skip: %s is absent: the %d recorded reports on it are not checked" % (SHARED, n))
    if asan_build(kvscope) and not update:
        # ~8x slower: the json report of each (the formats differ only in the
        # renderers, which read the same analysis); the plain builds run all
        n = len(run_cmds)
        run_cmds = [c for c in run_cmds if "--format" not in c or c[c.index("--format") + 1] == "json"]
        print("skip: an AddressSanitizer build: the json reports only (%d of %d commands); "
              "the plain builds run every format" % (len(run_cmds), n))
    if update and not have_shared:
        print("FAIL --update needs ../shared (its lines would be lost)")
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        for name, target in FOLDERS.items():
            if os.path.isdir(target):
                os.symlink(os.path.abspath(target), os.path.join(scratch, name))
        jobs = min(2, os.cpu_count() or 1)  # the machine is shared: at most two at once
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            got = list(pool.map(lambda c: run(kvscope, scratch, c), run_cmds))
    keys = [" ".join(c) for c in run_cmds]
    if update:
        with open(DIGESTS, "w") as f:
            f.write("# tests/test_report_identity.py: sha256 (16 hex) of stdout, of stderr, exit code,\n"
                    "# kvscope's arguments. Regenerate on purpose only (see the script).\n")
            for k, g in zip(keys, got):
                f.write("%s %s\n" % (g, k))
        print("updated %s: %d commands" % (DIGESTS, len(keys)))
        return 0
    want = read_digests()
    same = 0
    for k, g in zip(keys, got):
        w = want.get(k)
        if w is None:
            check(False, "no digest for 'kvscope %s' (got %s): add it with --update" % (k, g))
        elif w != g:
            check(False, "'kvscope %s': stdout stderr rc %s, recorded %s" % (k, g, w))
        else:
            same += 1
    all_keys = {" ".join(c) for c in cmds}
    orphans = [k for k in want if k not in all_keys and (have_shared or not needs_shared(k.split()))]
    check(not orphans, "every digest line belongs to a command still made%s"
          % "".join("\n     not made: kvscope " + k for k in orphans))
    check(same == len(keys), "%d of %d reports byte-identical to the recorded digests (%s)"
          % (same, len(keys), os.path.relpath(DIGESTS, ROOT)))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
