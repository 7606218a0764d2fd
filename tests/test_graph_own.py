#!/usr/bin/env python3
"""tests/test_graph_own.py KVSCOPE — kvscope's own capture of a graphed
program: the ops recorded while the graph was captured (before the window,
outside every step) and the kernels each replay ran, which carry the
External id of the op their graph node was captured under and their
"graph id" / "graph node id" (what libtrace's writer emits: test_trace_writer
graph_replay, the gpu test test_capture graph_replay).

Generated here, expectations written down:
  61 layers, each captured under layer_N > kvs::kv_cast [[131072,1,576] x2]
  (BF16 <- FP8 e4m3) and kvs::mla_attention; 4 steps, each one cudaGraphLaunch
  replaying 61 x (cast 0.86 ms, attention 0.05 ms).
  - the cast group is the capture's op with its dims and dtypes, 61 calls per
    step (244 calls: the captured ops themselves are not calls), exact bytes
    131072 x 576 x 3 per call;
  - kv_full_buffer_cast is the first finding with --kv-capacity 131072;
  - before this change each kernel linked to the one captured op outside every
    step: 61 calls, 0 per step.
  - compare against the same trace with the cast gone resolves
    kv_full_buffer_cast.
  - the same without API records (a GPU-only capture: no cudaGraphLaunch
    call; the kernels' "graph node id" and correlation tell the replays apart).
Exit 0 pass, 1 fail.
"""
import json
import os
import subprocess
import sys
import tempfile

from kvs_test import check, finish

kvscope = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="kvs-graphown-")
L, S, CAP = 61, 4, 131072
PID, TID = 100, 101
US = 1.0  # microseconds


def x(cat, name, pid, tid, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
            "ts": round(ts, 3), "dur": round(dur, 3), "args": args}


def make(path, with_cast=True, api=True):
    ev = []
    ext = 1
    cast_ext, attn_ext = [], []
    t = 1000.0
    # the capture: ranges and ops, no GPU work of their own
    for l in range(L):
        ev.append(x("user_annotation", "layer_%d" % l, PID, TID, t, 20, **{"External id": ext}))
        ext += 1
        if with_cast:
            ev.append(x("cpu_op", "kvs::kv_cast", PID, TID, t + 1, 8, **{
                "External id": ext, "Input type": ["c10::BFloat16", "c10::Float8_e4m3fn"],
                "Input Dims": [[CAP, 1, 576], [CAP, 1, 576]]}))
            cast_ext.append(ext)
            ext += 1
        ev.append(x("cpu_op", "kvs::mla_attention", PID, TID, t + 10, 8, **{
            "External id": ext, "Input type": ["c10::BFloat16"], "Input Dims": [[1, 64, 576]]}))
        attn_ext.append(ext)
        ext += 1
        t += 25
    # the replays, inside the window
    t = 100000.0
    node = 1
    for s in range(S):
        corr = 5000 + s
        step_len = L * (910 if with_cast else 50) + 200
        ev.append(x("user_annotation", "ProfilerStep#%d" % s, PID, TID, t, step_len,
                    **{"External id": ext}))
        ext += 1
        if api:  # a GPU-only capture (--activities kernel,...,nvtx) records no API call
            ev.append(x("cuda_runtime", "cudaGraphLaunch", PID, TID, t + 5, 20,
                        cbid=311, correlation=corr))
        g = t + 100
        node = 1
        for l in range(L):
            if with_cast:
                ev.append(x("kernel", "kvs::cast_fp8_to_bf16_kernel(unsigned char const*, "
                            "__nv_bfloat16*, long)", 0, 7, g, 860, **{
                                "External id": cast_ext[l], "device": 0, "stream": 7,
                                "correlation": corr, "graph id": 1, "graph node id": node,
                                "grid": [73728, 1, 1], "block": [256, 1, 1]}))
                g += 860
            node += 1
            ev.append(x("kernel", "kvs::mla_decode_kernel(...)", 0, 7, g, 50, **{
                "External id": attn_ext[l], "device": 0, "stream": 7, "correlation": corr,
                "graph id": 1, "graph node id": node, "grid": [64, 1, 1], "block": [128, 1, 1]}))
            g += 50
            node += 1
        t += step_len + 100
    doc = {"schemaVersion": 1,
           "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
                                 "computeMajor": 9, "computeMinor": 0, "numSms": 132,
                                 "warpSize": 32}],
           "kvscope": {"tool": "kvscope capture", "window": "api",
                       "window_start_us": 99000.0, "window_end_us": t + 1000},
           "displayTimeUnit": "ms", "baseTimeNanoseconds": 1790857026000000000,
           "traceEvents": ev}
    with open(path, "w") as f:
        json.dump(doc, f)


def report_json(*args):
    r = subprocess.run([kvscope, "report", *args, "--format", "json"], capture_output=True,
                       text=True)
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 else None), r.stderr


full = os.path.join(tmp, "graphed_full.json")
fix = os.path.join(tmp, "graphed_fix.json")
make(full)
make(fix, with_cast=False)

gpu_only = os.path.join(tmp, "graphed_full_gpu_only.json")
make(gpu_only, api=False)

for path in (full, gpu_only):
    what = os.path.basename(path)
    rc, a, err = report_json(path, "--kv-capacity", str(CAP))
    check(rc == 0, "%s: report exits 0 (%d: %s)" % (what, rc, err[-300:]))
    if a:
        g = a["groups"][0]
        check(g["op"] == "kvs::kv_cast" and g["dims"] == [[CAP, 1, 576], [CAP, 1, 576]]
              and g["dtypes"] == ["c10::BFloat16", "c10::Float8_e4m3fn"],
              "%s: top group is the captured op with its dims and dtypes: %s %s %s"
              % (what, g["op"], g["dims"], g["dtypes"]))
        check(g["calls"] == L * S and abs(g["calls_per_step"] - L) < 1e-9,
              "%s: %d calls, %d per step: %s, %s" % (what, L * S, L, g["calls"], g["calls_per_step"]))
        check(g["bytes_per_call"] == CAP * 576 * 3 and g["bytes_bound"] == "exact",
              "exact bytes per call %d: %s (%s)" % (CAP * 576 * 3, g["bytes_per_call"],
                                                     g["bytes_bound"]))
        check(a["findings"] and a["findings"][0]["id"] == "kv_full_buffer_cast",
              "kv_full_buffer_cast first: %s" % [f["id"] for f in a["findings"]])

r = subprocess.run([kvscope, "compare", full, fix, "--kv-capacity", str(CAP), "--format",
                    "json"], capture_output=True, text=True)
check(r.returncode == 0, "compare exits 0 (%d: %s)" % (r.returncode, r.stderr[-300:]))
if r.returncode == 0:
    c = json.loads(r.stdout)
    check("kv_full_buffer_cast" in c.get("resolved", []),
          "compare resolves kv_full_buffer_cast: %s" % c.get("resolved"))
finish()
