#!/usr/bin/env python3
"""bench/torch_ops_cpu.py BUILD_DIR [ROUNDS] — what kvscope's PyTorch hook
(libtrace/torch/) costs an op on a CPU, no GPU: a loop of one-op calls
(x.add_(y) on 4-element CPU tensors, torch.set_num_threads(1)) timed in
processes of their own, taking turns:

  bare        /usr/bin/python3 (or $KVS_BENCH_PYTHON), no hook
  recording   the hook loaded, the capture recording every op (the
              injection library's CPU stand-in, tests/torch_ops_sink.c:
              the capture's own op code and store; no CUPTI)
  closed      the hook loaded, the capture not recording (a closed window:
              RecordFunction still runs the callback, nothing is formatted)
  torch.profiler  no hook; torch.profiler (CPU activity, record_shapes=True)
              around the loops (its trace never exported: not timed)

Each process: 2 warm-up loops, then 7 loops of 20000 ops, its figure the
median loop's us per op; a kind's figure the median over its processes
(ROUNDS each, default 10, the order turning). Prints the table and the
differences to bare. The hook is built first (once) into a temporary cache.
Needs BUILD_DIR/libtrace/libkvs-torch-sink.so (a CUDA build) and a python
with torch and its headers (Debian: python3-torch libtorch-dev).
"""
import os
import statistics
import subprocess
import sys
import tempfile

LOOP = r'''
import os, sys, time, torch
torch.set_num_threads(1)
x, y = torch.zeros(4), torch.ones(4)
N = 20000
def loop():
    for _ in range(N):
        x.add_(y)
prof = None
if os.environ.get("KVS_BENCH_PROFILER"):
    from torch.profiler import ProfilerActivity, profile
    prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True)
    prof.__enter__()
for _ in range(2):
    loop()
ts = []
for _ in range(7):
    t = time.perf_counter()
    loop()
    ts.append((time.perf_counter() - t) / N * 1e6)
print("US %.4f" % sorted(ts)[3])  # the median of 7
if prof is not None:
    prof.__exit__(None, None, None)  # after the timing: its collection is not timed
'''


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    py = os.environ.get("KVS_BENCH_PYTHON", "/usr/bin/python3")
    sink = os.path.join(build, "libtrace", "libkvs-torch-sink.so")
    tdir = os.path.join(build, "libtrace", "torch")
    if not os.path.exists(sink):
        print("no %s (a CUDA build)" % sink)
        return 1
    work = tempfile.mkdtemp(prefix="kvs_torch_ops_cpu_")
    prog = os.path.join(work, "loop.py")
    with open(prog, "w") as f:
        f.write(LOOP)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KVS_", "PYTHONPATH"))}
    hook = dict(base, PYTHONPATH=tdir, CUDA_INJECTION64_PATH=sink, XDG_CACHE_HOME=os.path.join(work, "c"),
                KVS_CAPTURE_OUTPUT=os.path.join(work, "t.json"))
    closed = dict(hook, KVS_SINK_RUNNING="0", KVS_CAPTURE_OUTPUT=os.path.join(work, "closed.json"))
    kinds = {"bare": base, "recording": hook, "closed": closed,
             "torch.profiler": dict(base, KVS_BENCH_PROFILER="1")}
    subprocess.run([py, "-c", "import torch"], env=hook, check=True)  # builds the hook once
    got = {k: [] for k in kinds}
    names = list(kinds)
    for r in range(rounds):
        for i in range(len(names)):
            k = names[(i + r) % len(names)]
            out = subprocess.run([py, prog], env=kinds[k], stdout=subprocess.PIPE,
                                 universal_newlines=True, check=True).stdout
            got[k].append(float(out.split("US ")[1]))
    med = {k: statistics.median(v) for k, v in got.items()}
    print("python %s, torch %s, %d processes a kind, us per op (x.add_(y), 4 floats, 1 thread):" % (
        py, subprocess.run([py, "-c", "import torch; print(torch.__version__)"], stdout=subprocess.PIPE,
                           universal_newlines=True).stdout.strip(), rounds))
    print("")
    print("| process | us per op (median of processes) | p25..p75 | against bare |")
    print("|---|---|---|---|")
    for k in names:
        v = sorted(got[k])
        q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0], v[0], v[0]]
        print("| %s | %.3f | %.3f..%.3f | %s |" % (k, med[k], q[0], q[2], "-" if k == "bare" else
                                                   "%+.3f us (%+.0f%%)" % (med[k] - med["bare"],
                                                                          100 * (med[k] / med["bare"] - 1))))
    t = os.path.join(work, "t.json")
    n = sum(1 for ln in open(t) if '"cat": "cpu_op"' in ln) if os.path.exists(t) else 0
    print("")
    print("the last recording process's trace: %d cpu_op events (9 loops x 20000 ops: %d)" % (n, 9 * 20000))
    subprocess.run(["rm", "-rf", work])
    return 0


if __name__ == "__main__":
    sys.exit(main())
