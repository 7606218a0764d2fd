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
Then real H200 captures of kvscope's own (tests/traces/h200/): the engine's
graphed GLM-5 decode (78 layers, 495,552 tokens) full-cast against
fp8-direct, and the gpu test's graph_replay trace.
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

# Real H200 captures made by kvscope itself (tests/traces/h200/README.md):
# the engine's graphed GLM-5 decode, 78 layers, KV capacity 495,552, 4 steps,
# full-cast and fp8-direct, and the gpu test's graph_replay trace. Made while
# the default capture recorded no API call (no cudaGraphLaunch): the replays
# are told apart by correlation. Expectations from the raw JSON here.
import gzip
h200 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "traces", "h200")
FULL = os.path.join(h200, "engine_graph_full-cast.json.gz")
FIX = os.path.join(h200, "engine_graph_fp8-direct.json.gz")
REPLAY3 = os.path.join(h200, "capture_graph_replay.json.gz")
ev = json.load(gzip.open(FULL))["traceEvents"]
ops = {e["args"]["External id"]: e for e in ev if e.get("cat") == "cpu_op"}
casts = [k for k in ev if k.get("cat") == "kernel" and "graph node id" in k["args"]
         and ops.get(k["args"].get("External id"), {}).get("name") == "kvs::cast_fp8_to_bf16"]
steps = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep")]
cast_dims = ops[casts[0]["args"]["External id"]]["args"]["Input Dims"] if casts else None
check(len(steps) == 4 and len(casts) == 78 * 4 and cast_dims == [[495552, 1, 576], [495552, 1, 576]],
      "raw: 4 steps, 312 replayed casts under kvs::cast_fp8_to_bf16 %s: %d, %d" % (cast_dims, len(steps), len(casts)))
rc, a, err = report_json(FULL)
check(rc == 0, "engine graph trace: report exits 0 (%d: %s)" % (rc, err[-300:]))
if a:
    g = a["groups"][0]
    check(g["op"] == "kvs::cast_fp8_to_bf16" and g["dims"] == cast_dims and g["calls"] == len(casts)
          and abs(g["calls_per_step"] - 78) < 1e-9 and g["bytes_per_call"] == 495552 * 576 * 3,
          "engine graph trace: the cast group, 78 calls a step, 856.3 MB a call: %s %s %s %s %s"
          % (g["op"], g["dims"], g["calls"], g["calls_per_step"], g["bytes_per_call"]))
    f = a["findings"][0] if a["findings"] else {}
    check(f.get("id") == "kv_full_buffer_cast" and f.get("gpu_ms_per_step", 0) > 50,
          "engine graph trace: kv_full_buffer_cast first with its recoverable time: %s %s"
          % (f.get("id"), f.get("gpu_ms_per_step")))
    check(a["steps"]["count"] == 4 and a["steps"]["gpu_busy_fraction"] > 0.9,
          "engine graph trace: replayed work counts in its steps: %s ms of %s ms busy"
          % (a["steps"].get("gpu_ms_per_step"), a["steps"].get("mean_ms")))
r = subprocess.run([kvscope, "compare", FULL, FIX, "--format", "json"], capture_output=True, text=True)
c = json.loads(r.stdout) if r.returncode == 0 else {}
check("kv_full_buffer_cast" in c.get("resolved", []),
      "engine graph traces: compare full-cast -> fp8-direct resolves kv_full_buffer_cast: %s (%s)"
      % (c.get("resolved"), r.stderr[-200:]))
rc, a, err = report_json(REPLAY3)
if a:
    got = sorted((g["dims"][0][0], g["calls"]) for g in a["groups"] if g["op"] == "kvs::kv_cast")
    check(got == [(1, 3), (2, 3)], "graph_replay's H200 trace: each captured op 3 calls: %s" % got)
else:
    check(False, "graph_replay's H200 trace: report exits 0 (%d: %s)" % (rc, err[-300:]))
finish()
