#!/usr/bin/env python3
"""tests/test_exposed_comm.py KVSCOPE — the one-rank `exposed_comm` finding
on traces written here (Chrome-trace JSON, one GPU, ProfilerStep ranges),
with the expected figures worked out below:

- exposed: each 10 ms step runs a 4 ms GEMM, then a 4 ms ncclDevKernel
  AllReduce with nothing beside it: exposed 4 ms/step (40% of the step), so
  one exposed_comm finding of 4.00 ms/step, communication (steps.category_ms)
  12 ms over the 3 steps;
- hidden: the same all-reduce on its own stream under a 4 ms GEMM: exposed
  0, no finding;
- small: a 1 ms exposed all-reduce in a 10 ms step (10%, under the 20%
  threshold): no finding.

Exit 0 pass, 1 fail.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish  # noqa: E402

kvscope = sys.argv[1]
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def trace(comm_at, comm_us, comm_stream, steps=3, step_us=10000):
    ev = []
    corr = 1
    for s in range(steps):
        t0 = 1000 + s * step_us
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s,
                   "ts": t0, "dur": step_us, "pid": 1, "tid": 1})
        for name, at, dur, stream in ((GEMM, 100, 4000, 7), (NCCL, comm_at, comm_us, comm_stream)):
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t0 + 10 + corr % 2,
                       "dur": 5, "pid": 1, "tid": 1, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "ts": t0 + at, "dur": dur, "pid": 0,
                       "tid": stream, "args": {"correlation": corr, "device": 0, "stream": stream}})
            corr += 1
    return {"traceEvents": ev}


def report(doc):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    try:
        out = subprocess.run([kvscope, "report", f.name, "--format", "json"], capture_output=True,
                             text=True)
    finally:
        os.unlink(f.name)
    check(out.returncode == 0, "kvscope report exits 0 (%s)" % out.stderr.strip()[-200:])
    return json.loads(out.stdout) if out.stdout.strip() else {}


def exposed(rep):
    return [f for f in rep.get("findings", []) if f["id"] == "exposed_comm"]


rep = report(trace(4200, 4000, 7))
f = exposed(rep)
check(len(f) == 1, "exposed: one exposed_comm finding (%s)" % [x["id"] for x in rep.get("findings", [])])
if f:
    check(abs(f[0]["gpu_ms_per_step"] - 4.0) < 0.01, "exposed: 4.00 ms/step (%.3f)" % f[0]["gpu_ms_per_step"])
# the NCCL kernels count as communication: 3 steps x 4 ms
comm = rep.get("steps", {}).get("category_ms", {}).get("communication")
check(comm is not None and abs(comm - 12.0) < 0.01, "exposed: communication 12.00 ms in 3 steps (%s)" % comm)

rep = report(trace(100, 4000, 13))
check(not exposed(rep), "hidden: no exposed_comm under a GEMM on another stream")
comm = rep.get("steps", {}).get("category_ms", {}).get("communication")
check(comm is not None and abs(comm - 12.0) < 0.01, "hidden: communication 12.00 ms in 3 steps (%s)" % comm)

rep = report(trace(4200, 1000, 7))
check(not exposed(rep), "small: no exposed_comm for 10% of the step")

sys.exit(finish())
