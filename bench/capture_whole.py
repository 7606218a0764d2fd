#!/usr/bin/env python3
"""bench/capture_whole.py — a PyTorch program as a user profiles it whole
(the capture table's whole-process rows): bench/capture_overhead.sh runs it plainly,
under `kvscope capture -o T -- python3 bench/capture_whole.py` (the default
window: the whole run recorded, the trace written at exit) and with
--profiler torch (torch.profiler, CPU+CUDA, one session around all of its
work, the trace exported at the end), alternating processes.

    python3 bench/capture_whole.py --label whole_bare
    kvscope capture -o t.json -- python3 bench/capture_whole.py --label whole_kvs
    python3 bench/capture_whole.py --label whole_torch --profiler torch --trace t.json
    kvscope capture --torch-ops on -o t.json -- python3 bench/capture_whole.py --label whole_kvs_torch
    python3 bench/capture_whole.py --label whole_torch_shapes --profiler torch --shapes --trace t.json

The work: a warm-up loop, checked (the counter must count every add), then
--reps timed loops of --launches one-element in-place adds on one stream,
each timed to the device's completion. Prints
  RESULT proc=LABEL round=0 mode=whole workload=whole ms=MEDIAN n=REPS min=MIN
  WHOLE proc=LABEL work_s=S export_s=E   (the profiled part, the trace export)
and a SETUP line. Exit 77 without a CUDA device, 2 on bad arguments.
"""
import argparse
import statistics
import sys
import time

T_START = time.perf_counter()
import torch  # noqa: E402


def main():
    p = argparse.ArgumentParser(description="a PyTorch launch loop, profiled whole (capture_overhead.sh)")
    p.add_argument("--label", default="whole")
    p.add_argument("--profiler", choices=("none", "torch"), default="none")
    p.add_argument("--trace", default=None, help="with --profiler torch: where to export its trace")
    p.add_argument("--shapes", action="store_true", help="with --profiler torch: record_shapes=True")
    p.add_argument("--launches", type=int, default=5000)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    if (a.launches < 1 or a.reps < 1 or (a.profiler == "torch") != (a.trace is not None) or
            (a.shapes and a.profiler != "torch")):
        p.error("counts below 1, or --trace/--shapes without --profiler torch (or no --trace with it)")
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 77
    x = torch.zeros(1, device="cuda", dtype=torch.int32)
    torch.cuda.synchronize()
    print("SETUP proc=%s seconds=%.1f" % (a.label, time.perf_counter() - T_START), flush=True)
    prof = None
    t0 = time.perf_counter()
    if a.profiler == "torch":
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        prof = profile(activities=acts, record_shapes=True) if a.shapes else profile(activities=acts)
        prof.start()
    for _ in range(a.launches):  # warm-up, checked
        x.add_(1)
    torch.cuda.synchronize()
    assert int(x.item()) == a.launches, "%d adds counted, wanted %d" % (int(x.item()), a.launches)
    times = []
    for _ in range(a.reps):
        torch.cuda.synchronize()
        s = time.perf_counter()
        for _ in range(a.launches):
            x.add_(1)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - s) * 1e3)
    assert int(x.item()) == a.launches * (a.reps + 1)
    work = time.perf_counter() - t0
    export = 0.0
    if prof is not None:
        prof.stop()
        e0 = time.perf_counter()
        prof.export_chrome_trace(a.trace)
        export = time.perf_counter() - e0
    print("RESULT proc=%s round=0 mode=whole workload=whole ms=%.4f n=%d min=%.4f"
          % (a.label, statistics.median(times), len(times), min(times)), flush=True)
    print("WHOLE proc=%s work_s=%.3f export_s=%.3f" % (a.label, work, export), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
