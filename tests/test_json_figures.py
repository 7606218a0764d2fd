#!/usr/bin/env python3
"""tests/test_json_figures.py KVSCOPE [--update] — each finding of a
`--format json` report carries its detector's figures (findings[].figures,
docs/report-json.md), and they are only an addition: the JSON with every
findings[].figures member cut out is byte for byte the JSON as it was
before figures were written (the digests in
tests/golden/report_digests_without_figures.txt), so a figure added or
renamed changes nothing else, and a change to the rest of the JSON is seen
here as in test_report_identity.

The reports are test_report_identity's commands that write JSON (same
scratch-folder layout, same ../shared). Each finding must end with
"figures", an object, and its figures must agree with the finding's own
keys where both say a thing (the buffer's capacity and bytes of the
full-buffer findings, the readers' ops).

Update the digests on purpose only, with the change to the JSON that
earns it:
    tests/test_json_figures.py build/cli/kvscope --update
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

from kvs_test import check, finish
import test_report_identity as ident

DIGESTS = os.path.join(ident.ROOT, "tests", "golden", "report_digests_without_figures.txt")


def without_figures(text):
    """text with every '"figures": {...}' member (and its leading comma) cut out."""
    out, i, key = [], 0, '"figures": '
    while True:
        j = text.find(key, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        k = j - 1
        while k >= i and text[k] in " \n\t":
            k -= 1
        if text[k] != ",":  # a string's content, not a member
            out.append(text[i:j + len(key)])
            i = j + len(key)
            continue
        out.append(text[i:k])
        depth, p, in_str = 0, j + len(key), False
        while True:
            c = text[p]
            if in_str:
                if c == "\\":
                    p += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    break
            p += 1
        i = p + 1


def agree(f, where):
    """a finding's figures against its own keys"""
    figs = f.get("figures")
    check(isinstance(figs, dict) and list(f)[-1] == "figures",
          "%s: findings[].figures is its last key, an object" % where)
    if not isinstance(figs, dict):
        return
    if f["id"] == "kv_full_buffer_cast":
        check(figs["tokens"] == f["capacity_tokens"], "%s: tokens = capacity_tokens" % where)
        check(figs["bytes_per_step"] == f["bytes_per_step"], "%s: bytes_per_step" % where)
        check(figs["active_tokens"] == (f["active_tokens"] or 0), "%s: active_tokens" % where)
        check([figs["group"]] == f["ops"], "%s: group = ops" % where)
    elif f["id"] == "kv_full_buffer_read":
        check(figs["capacity"] == f["capacity_tokens"], "%s: capacity = capacity_tokens" % where)
        check(figs["bytes_per_step"] == f["bytes_per_step"], "%s: bytes_per_step" % where)
        check([r["desc"] for r in figs["readers"]] == f["ops"], "%s: readers = ops" % where)
    elif f["id"] == "gpu_idle":
        check(figs["gpus"] == f["gpus"], "%s: gpus" % where)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    kvscope = os.path.abspath(sys.argv[1])
    update = "--update" in sys.argv[2:]
    have_shared = os.path.isdir(ident.SHARED)
    cmds = [c for c in ident.commands() if c[0] == "report" and c[c.index("--format") + 1] == "json"
            and (have_shared or not ident.needs_shared(c))]
    want = {}
    if os.path.exists(DIGESTS):
        with open(DIGESTS) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    d, args = line.rstrip("\n").split(" ", 1)
                    want[args] = d
    got, nfind = {}, 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, target in ident.FOLDERS.items():
            if os.path.isdir(target):
                os.symlink(os.path.abspath(target), os.path.join(scratch, name))
        for c in cmds:
            p = subprocess.run([kvscope] + list(c), cwd=scratch, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            text = p.stdout.decode("utf-8")
            key = " ".join(c)
            got[key] = hashlib.sha256(without_figures(text).encode("utf-8")).hexdigest()[:16]
            if p.returncode != 0 or not text.strip():
                continue
            doc = json.loads(text)
            reports = doc["reports"] if "reports" in doc else [doc]  # kvscope.multirank/1: one a rank
            for r in reports:
                for i, f in enumerate(r.get("findings") or []):
                    agree(f, "'kvscope %s' findings[%d] %s" % (key, i, f["id"]))
                    nfind += 1
    if update:
        if not have_shared:
            print("FAIL --update needs ../shared (its lines would be lost)")
            return 1
        with open(DIGESTS, "w") as f:
            f.write("# tests/test_json_figures.py: sha256 (16 hex) of the JSON report's stdout with every\n"
                    "# findings[].figures cut out, kvscope's arguments. Regenerate on purpose only.\n")
            for k in sorted(got):
                f.write("%s %s\n" % (got[k], k))
        print("updated %s: %d commands" % (DIGESTS, len(got)))
        return 0
    same = 0
    for k, d in got.items():
        if k not in want:
            check(False, "no digest for 'kvscope %s': add it with --update" % k)
        elif want[k] != d:
            check(False, "'kvscope %s' without its figures: %s, recorded %s" % (k, d, want[k]))
        else:
            same += 1
    print("%d of %d JSON reports the same without their figures; %d findings' figures checked"
          % (same, len(got), nfind))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
