#!/usr/bin/env python3
"""tests/test_capture_bench.py — bench/capture_overhead.sh end to end on a
CPU, with stand-ins for what needs the GPU: a `torch` package (tensors that
count, a profiler that logs its start, stop and export), a C program that
prints the paired lines bench/capture_overhead.cu --paired prints, and a
`kvscope` whose `capture` logs its arguments, runs the program with the
environment the real launcher gives it and writes a small trace with a
`kvscope` object. What bench/capture_torch.py, bench/capture_whole.py and
the script do around them is real.

(decode is skipped: a `transformers` stand-in that fails to import.)
Expected, written down for KVS_BENCH_ROUNDS=2, KVS_BENCH_CYCLES=1,
KVS_BENCH_WHOLE=2:
  - processes in this order, each with a TIME line (cycle and seq): C
    c_bare, c_default, c_gpuonly, c_bare, c_closed, c_all, c_bare; PyTorch
    bare, torch, kvs_default, bare, kvs_gpuonly, kvs_closed, bare; whole
    whole_bare, whole_kvs, whole_torch, whole_kvs, whole_torch, whole_bare;
    a TOTAL line; every RESULT line tagged with its process's seq;
  - the C program run with --paired 2 --launches 1000 --copies 10 --reps 1
    (with --bare for c_bare and c_closed);
  - torch: per workload (launch, copy) and round r, the modes plain,
    tp_cpu_cuda, tp_cuda turned by r; kvs_default/gpuonly: plain, kvs
    turned the same; bare and kvs_closed: plain only;
  - the window processes under --window cudaProfilerStart --max-buffers 512
    with their activities; whole_kvs under the default window (none given);
  - each profiled measurement inside its own profiler start/stop, right
    after a synchronize: 12 torch.profiler sessions of the torch process, 6
    cudaProfilerStart/Stop pairs in each of kvs_default and kvs_gpuonly,
    none in kvs_closed; whole_torch one CPU+CUDA session each, exported;
  - a TRACE line per kvscope trace with its records, drops and kernels
    without their launch call (kvs_gpuonly's made to drop 7 records, a
    whole_kvs one to miss 2 launch calls: the verdict names both),
    traces.txt, table.md with the targets' verdicts;
  - again with KVS_BENCH_TORCHOPS=only: no C program; bare, torch (plain,
    tp_cpu_cuda, tp_shapes), kvs_torch (--torch-ops on), bare; whole rounds
    of whole_bare, whole_kvs_torch, whole_torch_shapes; the torch-ops verdicts.
Exit 0 pass, 1 fail, 77 without bash.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.environ.get("KVS_SOURCE_ROOT", os.path.dirname(here))
sys.path.insert(0, here)
from kvs_test import check, finish  # noqa: E402

if not shutil.which("bash"):
    print("no bash")
    sys.exit(77)

FAKE_TORCH = {
    "torch/__init__.py": '''
import os
from . import cuda, profiler  # noqa: F401
int32, uint8, bfloat16 = "int32", "uint8", "bfloat16"


def log(what):
    with open(os.environ["FAKE_TORCH_LOG"], "a") as f:
        f.write(what + "\\n")


class Tensor:
    def __init__(self, v=0):
        self.v = v

    def add_(self, k):
        self.v += k
        return self

    def item(self):
        return self.v

    def copy_(self, o):
        self.v = o.v
        return self

    def __getitem__(self, i):
        return Tensor(self.v) if isinstance(i, slice) else self.v


def zeros(*a, **k):
    return Tensor()


def randint(*a, **k):
    return Tensor(7)


def empty_like(t):
    return Tensor()


def equal(a, b):
    return a.v == b.v
''',
    "torch/cuda/__init__.py": '''
from . import profiler, nvtx  # noqa: F401


def is_available():
    return True


def synchronize():
    import torch
    torch.log("sync")
''',
    "torch/cuda/profiler.py": '''
import os


def start():
    import torch
    torch.log("cudaProfilerStart window=%s" % os.environ.get("KVS_CAPTURE_WINDOW"))


def stop():
    import torch
    torch.log("cudaProfilerStop")
''',
    "transformers/__init__.py": 'raise ImportError("transformers stand-in")\n',
    "torch/cuda/nvtx.py": "def range_push(s):\n    pass\n\n\ndef range_pop():\n    pass\n",
    "torch/profiler/__init__.py": '''
class ProfilerActivity:
    CPU, CUDA = "CPU", "CUDA"


class profile:
    def __init__(self, activities, record_shapes=False):
        self.acts = ",".join(activities) + (",shapes" if record_shapes else "")

    def start(self):
        import torch
        torch.log("profile.start " + self.acts)

    def stop(self):
        import torch
        torch.log("profile.stop")

    def export_chrome_trace(self, path):
        import torch
        torch.log("profile.export")
        open(path, "w").write("{}")
''',
}

FAKE_C = r'''#!/bin/sh
# the lines capture_overhead --paired R --label L [--bare] prints (plain 20 ms, kvs 23 ms)
echo "c $*" >>"$FAKE_C_LOG"
r=0 label=c bare=0
while [ $# -gt 0 ]; do
    case $1 in --paired) r=$2; shift ;; --label) label=$2; shift ;; --bare) bare=1 ;; esac
    shift
done
echo "CONFIG proc=$label launches=1000 copies=10 copy_gib=1 reps=1"
i=0
while [ $i -le "$r" ]; do
    if [ $((i % 2)) = 0 ]; then order="plain kvs"; else order="kvs plain"; fi
    for m in $order; do
        [ $m = kvs ] && [ $bare = 1 ] && continue
        if [ $m = kvs ]; then l=23.0; c=25.1; else l=20.0; c=25.0; fi
        echo "RESULT proc=$label round=$i mode=$m workload=launch ms=$l n=1 us_per_launch=4.0"
        echo "RESULT proc=$label round=$i mode=$m workload=launch_nvtx ms=$l n=1 us_per_launch=4.0"
        echo "RESULT proc=$label round=$i mode=$m workload=copy ms=$c n=1 gbps=4200.0"
    done
    i=$((i + 1))
done
'''

FAKE_KVSCOPE = r'''#!/bin/sh
# capture: logs its arguments, runs the program as the launcher would, writes a trace
if [ "$1" = report ]; then echo "report of $2"; exit 0; fi
[ "$1" = capture ] || exit 2
shift
echo "capture $*" >>"$FAKE_KVSCOPE_LOG"
out= win=all
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case $1 in -o) out=$2; shift ;; --window) win=$2; shift ;; esac
    shift
done
shift
KVS_CAPTURE_WINDOW=$win "$@"
rc=$?
drop=0 unlinked=0
case $out in *kvs_gpuonly*) drop=7 ;; */whole_kvs.18.json) unlinked=2 ;; esac
cat >"$out" <<EOF
{
  "schemaVersion": 1,
  "kvscope": {"tool": "kvscope capture", "version": "0.1.0", "window": "$win", "window_start_us": 1.000, "window_end_us": 2.000, "rank": -1, "world_size": 0,
    "activities": ["kernel"],
    "records": 3, "dropped_records": $drop, "buffer_requests_denied": 0, "host_records": 0, "host_dropped": 0,
    "kernels_without_call": $unlinked,
    "buffers_used": 1, "buffers_max": 512, "buffer_bytes": 4194304,
    "overhead_ns": {"callbacks": 1, "cupti": 2, "flush": 3}},
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 0,
  "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "one(int*)", "pid": 0, "tid": 7, "ts": 1.000, "dur": 0.002, "args": {}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0.500, "dur": 0.004, "args": {}},
  {"ph": "X", "cat": "overhead", "name": "Buffer Flush", "pid": 1, "tid": 1, "ts": 0.500, "dur": 12.500, "args": {}}
  ]
}
EOF
exit $rc
'''


def write(path, text, exe=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if exe:
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


h = subprocess.run(["bash", os.path.join(root, "bench", "capture_overhead.sh"), "--help"],
                   capture_output=True, text=True)
check(h.returncode == 0 and "against bare" in h.stdout and "KVS_BENCH_MAX_BUFFERS" in h.stdout and
      "KVS_BENCH_WHOLE" in h.stdout and "set -u" not in h.stdout, "--help prints the header (exit %d)" % h.returncode)

tmp = tempfile.mkdtemp(prefix="kvs_capbench_test.")
try:
    for rel, text in FAKE_TORCH.items():
        write(os.path.join(tmp, "py", rel), text)
    write(os.path.join(tmp, "build", "libtrace", "capture_overhead"), FAKE_C, exe=True)
    write(os.path.join(tmp, "build", "cli", "kvscope"), FAKE_KVSCOPE, exe=True)
    out = os.path.join(tmp, "out")
    tlog, klog, clog = (os.path.join(tmp, f) for f in ("torch.log", "kvscope.log", "c.log"))
    env = dict(os.environ, PYTHONPATH=os.path.join(tmp, "py"), FAKE_TORCH_LOG=tlog, FAKE_KVSCOPE_LOG=klog,
               FAKE_C_LOG=clog, KVS_BENCH_ROUNDS="2", KVS_BENCH_CYCLES="1", KVS_BENCH_WHOLE="2",
               KVS_BENCH_CPUS="none", KVS_BENCH_SETTLE_MS="1", KVS_BENCH_CONTEXTS="3")
    env.pop("KVS_BENCH_EXTRA", None)
    p = subprocess.run(["bash", os.path.join(root, "bench", "capture_overhead.sh"),
                        os.path.join(tmp, "build"), out], env=env, capture_output=True, text=True,
                       timeout=300)
    check(p.returncode == 0, "the bench exits 0 (%d; stderr tail %r)" % (p.returncode, p.stderr[-600:]))
    raw = open(os.path.join(out, "raw.txt")).read().splitlines()
    table = open(os.path.join(out, "table.md")).read()

    timed = [dict(re.findall(r"(\w+)=(\S+)", ln)) for ln in raw if ln.startswith("TIME ")]
    procs = [t["proc"] for t in timed]
    want = ["c_bare", "c_default", "c_gpuonly", "c_bare", "c_closed", "c_all", "c_bare",
            "bare", "torch", "kvs_default", "bare", "kvs_gpuonly", "kvs_closed", "bare",
            "whole_bare", "whole_kvs", "whole_torch", "whole_kvs", "whole_torch", "whole_bare"]
    check(procs == want, "processes in order, each timed: %s" % procs)
    check([int(t["seq"]) for t in timed] == list(range(1, 21)), "each process numbered in the run (seq)")
    check(any(ln.startswith("TOTAL seconds=") for ln in raw), "a TOTAL line")
    check(not any(ln.startswith("FAIL") for ln in raw), "no process failed")
    results = [dict(re.findall(r"(\w+)=(\S+)", ln)) for ln in raw if ln.startswith("RESULT ")]
    check(results and all("seq" in r and "cycle" in r for r in results), "every RESULT line tagged with seq, cycle")

    def order(proc, w):
        got = {}
        for kv in results:
            if kv.get("proc") == proc and kv.get("workload") == w and kv["seq"] == str(procs.index(proc) + 1):
                got.setdefault(int(kv["round"]), []).append(kv["mode"])
        return got

    tm = ["plain", "tp_cpu_cuda", "tp_cuda"]
    for w in ("launch", "copy"):
        got = order("torch", w)
        check(got == {r: tm[r % 3:] + tm[:r % 3] for r in range(3)}, "torch %s: modes turned each round %s" % (w, got))
        for proc in ("kvs_default", "kvs_gpuonly", "c_default"):
            got = order(proc, w)
            check(got == {0: ["plain", "kvs"], 1: ["kvs", "plain"], 2: ["plain", "kvs"]},
                  "%s %s: plain and kvs turned each round %s" % (proc, w, got))
        for proc in ("bare", "kvs_closed", "c_bare", "c_closed"):
            check(order(proc, w) == {r: ["plain"] for r in range(3)}, "%s %s: plain only, 3 rounds" % (proc, w))
    wres = [r for r in results if r["workload"] == "whole"]
    check(len(wres) == 6 and all(r["mode"] == "whole" and r["round"] == "0" for r in wres),
          "one whole-process result from each of the 6 whole processes")
    check(sum(ln.startswith("WHOLE ") for ln in raw) == 6, "their WHOLE lines")
    check(any(ln.startswith("SKIP ") and "proc=torch" in ln and "workload=decode" in ln for ln in raw),
          "decode skipped and said so (no transformers)")

    caps = open(klog).read().splitlines()
    check(len(caps) == 9, "9 kvscope captures (4 C, 3 PyTorch, 2 whole): %d" % len(caps))
    gpu = "kernel,memcpy,memset,extcorr,nvtx"
    for c, acts in zip(caps, ["default", gpu, "default", "all", "default", gpu, "default"]):
        check("--window cudaProfilerStart --torch-ops off --max-buffers 512 --activities %s -o " % acts in c,
              "capture arguments: %s" % c[:120])
    for c in caps[7:]:
        check("--window" not in c and "--torch-ops off --max-buffers 512 --activities default -o " in c and
              "capture_whole.py" in c,
              "whole_kvs under the default window: %s" % c[:120])

    ev = open(tlog).read().splitlines()
    starts = [i for i, e in enumerate(ev) if e.startswith("profile.start")]
    check(len(starts) == 14 and sum(e == "profile.stop" for e in ev) == 14,
          "14 torch.profiler sessions (3 rounds x 2 workloads x 2 modes, 2 whole): %d" % len(starts))
    check(sum(e == "profile.start CPU,CUDA" for e in ev) == 8 and sum(e == "profile.start CUDA" for e in ev) == 6,
          "8 of them CPU+CUDA, 6 CUDA only")
    check(sum(e == "profile.export" for e in ev) == 2, "the whole_torch sessions exported")
    kst = [i for i, e in enumerate(ev) if e.startswith("cudaProfilerStart")]
    check(len(kst) == 12 and all(ev[i] == "cudaProfilerStart window=cudaProfilerStart" for i in kst) and
          sum(e == "cudaProfilerStop" for e in ev) == 12,
          "6 cudaProfilerStart/Stop pairs in each of kvs_default, kvs_gpuonly, under its window: %d" % len(kst))
    check(all(ev[i - 1] == "sync" for i in starts[:-2] + kst), "every measurement's profiler starts right after a synchronize")
    cl = open(clog).read().splitlines()
    check(len(cl) == 7 and all("--paired 2 " in c and "--launches 1000 --copies 10 --reps 1" in c for c in cl) and
          sum("--bare" in c for c in cl) == 4, "the C program: 7 runs of short paired measurements, 4 --bare: %s" % cl)
    check(all("--contexts 3 --settle-ms 1" in c for c in cl),
          "the C program gets KVS_BENCH_CONTEXTS and KVS_BENCH_SETTLE_MS: %s" % cl[:1])

    traces = {(re.search(r"proc=(\S+)", ln).group(1), re.search(r"seq=(\d+)", ln).group(1)): ln
              for ln in raw if ln.startswith("TRACE ")}
    check(sorted(p for p, _ in traces) == sorted(["c_default", "c_gpuonly", "c_closed", "c_all", "kvs_default",
                                                  "kvs_gpuonly", "kvs_closed", "whole_kvs", "whole_kvs"]),
          "a TRACE line per trace: %s" % sorted(traces))
    check("records=3 dropped_records=0 buffer_requests_denied=0" in traces.get(("kvs_default", "10"), ""),
          "kvs_default's TRACE line from its kvscope object")
    check("kernels_without_call=2" in traces.get(("whole_kvs", "18"), ""),
          "a whole_kvs trace's 2 kernels without their launch call read")
    check("dropped_records=7" in traces.get(("kvs_gpuonly", "12"), ""), "kvs_gpuonly's 7 dropped records read")
    check("kvs_gpuonly #12: 3 records, 7 dropped" in table and "RECORDS LOST" in table,
          "the table says kvs_gpuonly lost records")
    check(re.search(r"kvscope traces complete .*\*\*NOT met\*\* — records lost in kvs_gpuonly#12 \(", table)
          is not None and "kernels without their launch call in whole_kvs#" in table,
          "the completeness verdict names the traces that lost records or launch calls")
    tx = open(os.path.join(out, "traces.txt")).read()
    check("events by category: {'kernel': 1, 'cuda_runtime': 1, 'overhead': 1}" in tx and
          "[('cudaLaunchKernel', 1)]" in tx and "'Buffer Flush': (1, 12.5)" in tx,
          "traces.txt: categories, API calls, overhead records of the trace")
    # the C stand-in: plain 20 ms, kvs 23 ms in every process
    check(re.search(r"\| kvscope default \| 23\.000 \| \+15\.0% / \*\*\+15\.0%\*\* / \+15\.0% \| 1 \|", table)
          is not None, "the C default row: 23 against bare 20 ms, +15.0% three ways")
    check(re.search(r"\| kvscope, window never opened \| 20\.000 \| \+0\.0% / \*\*\+0\.0%\*\* / \+0\.0%", table)
          is not None, "the C window-closed row against bare")
    check("- C, kvscope default: launch +15.0% [+15.0%..+15.0%] (2)" in table, "the paired view of the C default")
    for crit in ("launch: kvscope, window never opened <= +3%", "decode: kvscope default <= 1/3",
                 "whole: whole process: kvscope capture <= 1/2 of torch.profiler's"):
        check(re.search(r"- %s.*: \*\*(met|NOT met|no verdict)\*\*" % re.escape(crit), table) is not None,
              "a verdict line for %s" % crit)
    check("| under kvscope capture (whole run) |" in table, "the whole-process rows")
    check("PyTorch, a measurement: launches=1000 copies=10 copy_gib=1 steps=12 reps=1 decode_reps=1" in table and
          "C program, a measurement: launches=1000 copies=10 copy_gib=1 reps=1" in table,
          "the table says the sizes of a measurement (capture_torch.py's CONFIG line, the C program's)")
    check(os.path.exists(os.path.join(out, "report_kvs_default.txt")), "the default capture's report kept")
    check(not any(f.endswith(".json") for f in os.listdir(out)), "no trace left in OUT_DIR")

    # KVS_BENCH_TORCHOPS=only: the torch-ops rows alone
    for f in (tlog, klog, clog):
        if os.path.exists(f):
            os.remove(f)
    out2 = os.path.join(tmp, "out2")
    p = subprocess.run(["bash", os.path.join(root, "bench", "capture_overhead.sh"),
                        os.path.join(tmp, "build"), out2], env=dict(env, KVS_BENCH_TORCHOPS="only"),
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, "torch ops only: the bench exits 0 (%d; %r)" % (p.returncode, p.stderr[-400:]))
    raw = open(os.path.join(out2, "raw.txt")).read().splitlines()
    procs = [dict(re.findall(r"(\w+)=(\S+)", ln))["proc"] for ln in raw if ln.startswith("TIME ")]
    want = ["bare", "torch", "kvs_torch", "bare", "whole_bare", "whole_kvs_torch", "whole_torch_shapes",
            "whole_kvs_torch", "whole_torch_shapes", "whole_bare"]
    check(procs == want, "torch ops only: no C program, processes in order: %s" % procs)
    caps = open(klog).read().splitlines()
    check(len(caps) == 3 and "--window cudaProfilerStart --torch-ops on --max-buffers 512 --activities default"
          in caps[0] and all("--window" not in c and "--torch-ops on --max-buffers 512" in c and
                             "capture_whole.py" in c for c in caps[1:]),
          "kvs_torch under the window, the whole runs without, all --torch-ops on: %s" % [c[:90] for c in caps])
    ev = open(tlog).read().splitlines()
    check(sum(e == "profile.start CPU,CUDA,shapes" for e in ev) == 8 and
          sum(e == "profile.start CPU,CUDA" for e in ev) == 6 and sum(e == "profile.export" for e in ev) == 2,
          "torch.profiler with record_shapes: 6 in the torch process, 2 whole (exported); 6 without")
    results = [dict(re.findall(r"(\w+)=(\S+)", ln)) for ln in raw if ln.startswith("RESULT ")]
    tm = ["plain", "tp_cpu_cuda", "tp_shapes"]
    got = {}
    for kv in results:
        if kv["proc"] == "torch" and kv["workload"] == "launch":
            got.setdefault(int(kv["round"]), []).append(kv["mode"])
    check(got == {r: tm[r % 3:] + tm[:r % 3] for r in range(3)}, "torch: plain, tp_cpu_cuda, tp_shapes turned %s" % got)
    table = open(os.path.join(out2, "table.md")).read()
    for crit in ("launch: kvscope with torch ops <= 1/2", "decode: kvscope with torch ops <= 1/2",
                 "whole: whole process: kvscope capture with torch ops <= 1/2"):
        check(re.search(r"- %s.*: \*\*(met|NOT met|no verdict)\*\*" % re.escape(crit), table) is not None,
              "torch ops only: a verdict line for %s" % crit)
    check("| kvscope with torch ops |" in table and "window never opened" not in table,
          "torch ops only: its rows, no issue-32 verdict")
    check(os.path.exists(os.path.join(out2, "report_kvs_torch.txt")), "the torch-ops capture's report kept")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(finish())
