#!/usr/bin/env python3
"""tests/test_jobs.py KVSCOPE — `kvscope report` and `compare` with --jobs N
(several traces read at once, one thread each: kvscope/analyze_many.h) write
the same bytes, on stdout and on stderr, as with --jobs 1:

- a generated 24-rank run (tests/rankgen.py; plain and .gz, one rank slowed)
  in every format, and the same run with two unreadable ranks (a missing
  file, a malformed one): exit 2, each named, the others still read;
- the multi-rank traces of ../shared/traces/hta (HTA's NCCL ranks, mixed
  with ranks that name no rank or no GPU), when present;
- compare of BEFORE and three AFTERs (IN SHORT), and a bad --jobs.

    meson test -C build test_jobs
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish  # noqa: E402
from rankgen import write_ranks  # noqa: E402

KVS = sys.argv[1]
HTA = os.path.join(os.environ.get("KVS_SHARED_DIR", ""), "traces", "hta")
FX = os.path.join(os.environ.get("KVS_SOURCE_ROOT", ""), "tests", "fixtures")
JOBS = [2, 3, 8, 32]


def run(args, jobs):
    p = subprocess.run([KVS, *args, "--jobs", str(jobs)], capture_output=True)
    return p.returncode, p.stdout, p.stderr


def same_for_jobs(what, args, rc_want=0):
    rc1, out1, err1 = run(args, 1)
    ok = check(rc1 == rc_want, "%s: --jobs 1 exits %d (%d)" % (what, rc_want, rc1))
    if not ok:
        print(err1.decode(errors="replace")[-1500:])
    for j in JOBS:
        rc, out, err = run(args, j)
        check(rc == rc1 and out == out1 and err == err1,
              "%s: --jobs %d gives the same exit, stdout (%d bytes) and stderr (%d bytes)"
              % (what, j, len(out1), len(err1)))
    return out1, err1


with tempfile.TemporaryDirectory() as tmp:
    gzdir = os.path.join(tmp, "gz")
    os.mkdir(gzdir)
    ranks = write_ranks(tmp, 24, slow=7)[:12] + write_ranks(gzdir, 24, slow=7, gz=True)[12:]
    for fmt in ("json", "text", "md", "html"):
        out, _ = same_for_jobs("24 generated ranks, %s" % fmt, ["report", *ranks, "--format", fmt])
        if fmt == "text":
            check(b"ACROSS RANKS" in out and b"==== rank 23 ====" in out, "text: the ranks' view and every rank")
    # ranks given in another order come out in rank order, the same for every jobs
    same_for_jobs("24 ranks in reverse order", ["report", *ranks[::-1], "--format", "json"])

    # two unreadable ranks among them: each named, the others read, exit 2, no report
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "cat": "kernel" "name": 1}]}')
    missing = os.path.join(tmp, "missing.json")
    args = ["report", *ranks[:5], missing, *ranks[5:9], bad, *ranks[9:]]
    out, err = same_for_jobs("two unreadable ranks", args, rc_want=2)
    e = err.decode()
    check(out == b"" and "missing.json: cannot open" in e and "bad.json: malformed trace at byte" in e
          and "2 of 26 traces could not be read (the first: %s)" % missing in e,
          "each unreadable rank named, then how many; nothing on stdout")
    # a bad option is said once, not once per trace
    _, err = same_for_jobs("--step-regex that does not compile", ["report", *ranks, "--step-regex", "("],
                           rc_want=2)
    check(err.decode().count("step-regex") == 1 or err.decode().count("regex") == 1,
          "a bad --step-regex said once for 24 traces: %r" % err.decode()[:300])

    # compare: BEFORE and three AFTERs read at once, IN SHORT
    same_for_jobs("compare BEFORE and three AFTERs", ["compare", ranks[0], ranks[7], ranks[3], ranks[12]])
    same_for_jobs("compare, json summary", ["compare", ranks[0], ranks[7], ranks[3], "--format", "json"])
    same_for_jobs("compare with a missing AFTER", ["compare", ranks[0], missing, ranks[3]], rc_want=2)

for bad_jobs in ("0", "x", "1025", "-3"):
    p = subprocess.run([KVS, "report", os.path.join(FX, "kineto_small.json"), "--jobs", bad_jobs],
                       capture_output=True, text=True)
    check(p.returncode == 2 and "--jobs" in p.stderr, "report --jobs %s: a usage error" % bad_jobs)
    p = subprocess.run([KVS, "compare", os.path.join(FX, "kineto_small.json"),
                        os.path.join(FX, "old_schema.json"), "-j", bad_jobs], capture_output=True, text=True)
    check(p.returncode == 2 and "--jobs" in p.stderr, "compare -j %s: a usage error" % bad_jobs)

if os.path.isdir(HTA):
    h = lambda n: os.path.join(HTA, n)  # noqa: E731
    hta = [h("trace_filter__sampled_rank-0.json.gz"), h("trace_filter__sampled_rank-1.json.gz"),
           h("nccl_parser_config__nccl_data.json.gz"), h("df_index_resolver__df_index_resolver.json.gz"),
           h("trace_diff__test__test.json.gz"), h("rank_non_gpu__rank_non_gpu.json.gz"),
           h("distributed_info_unavailable__distributed_info_not_found.json.gz")]
    for fmt in ("json", "text", "html"):
        same_for_jobs("HTA's ranks, %s" % fmt, ["report", *hta, "--format", fmt])
    same_for_jobs("HTA's two NCCL ranks", ["report", *hta[:2], "--format", "md"])
    same_for_jobs("compare HTA's trace_diff", ["compare", h("trace_diff__control__control.json.gz"),
                                               h("trace_diff__test__test.json.gz"), "--format", "json"])
else:
    print("skip ../shared/traces/hta: absent (the generated ranks were checked)")
sys.exit(finish())
