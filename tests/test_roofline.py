#!/usr/bin/env python3
"""tests/test_roofline.py KVSCOPE — the per-op roofline table (`ops` in
`kvscope report --format json`; docs/analysis.md "Per-op roofline").

1. Generated traces (one H200, ProfilerStep ranges), figures worked out here:
   - aten::mm [1,4096] x [4096,4096] bf16 (a decode GEMV), 20 us a call:
     bytes 8,192 + 33,554,432 + 8,192 = 33,570,816, FLOPs 2*4096*4096 =
     33,554,432: 1678.5 GB/s, 1.678 TFLOP/s, intensity 0.9995 FLOP/B, below
     the ridge 989e12 / 4.8e12 = 206: memory-bound, roof 0.9995 x 4800 GB/s
     = 4.798 TFLOP/s, fraction 0.3497;
   - aten::mm [8192,8192] x [8192,8192] bf16, 2 ms a call: 1.0995e12 FLOPs,
     549.8 TFLOP/s, intensity 2730.7: compute-bound, 0.5559 of 989;
   - aten::_scaled_mm FP8 [4096,4096] x [4096,4096], 0.25 ms: 1.374e11
     FLOPs, 549.8 TFLOP/s, intensity 2730.7 (1-byte inputs, BF16 out):
     compute-bound against the FP8 peak 1979: 0.2778;
   - aten::cat (no formula): family, bytes, FLOPs, bound all null.
2. gemm_memory_bound (a generated decode step): three aten::mm [1,4096] x
   [4096,4096] bf16 of 20 us and one M=512 prefill GEMM (intensity 410,
   compute-bound) a step: one finding for the three (0.06 ms/step, 100.7 MB of
   weights a step, advice in a GEMM's terms: batch, FP8 weights, no
   "vectorized" copy advice), none for the prefill GEMM alone or for an FP32
   GEMV (no tensor peak: bound unknown); the bundled GLM-5 engine traces:
   the finding's bytes per step are the weights the engine's own log says a
   step reads (80.20 GB) to 0.1%.
3. The text report prints the table, "unknown" for an op without a formula.
4. The H100 Qwen HF trace (shared) and our own H200 HF decode traces
   (tests/traces/h200: GQA and MLA, static and dynamic cache): every matmul and attention op group
   against an independent reading of the raw JSON (json.load, kernels joined
   to their op by External id, durations summed per op + shapes, bytes and
   FLOPs from the shapes by the formulas written again below).

Exit 0 pass, 1 fail.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish  # noqa: E402

kvscope = sys.argv[1]
shared = os.environ.get("KVS_SHARED_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
BF, F8 = "c10::BFloat16", "c10::Float8_e4m3fn"


def near(a, b, rel=1e-9):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def report(path, *extra):
    out = subprocess.run([kvscope, "report", path, "--format", "json", *extra], capture_output=True, text=True)
    check(out.returncode == 0, "kvscope report %s exits 0 (%s)" % (os.path.basename(path), out.stderr.strip()[-200:]))
    return json.loads(out.stdout) if out.stdout.strip() else {}


def generated():
    ops = [("aten::mm", [[1, 4096], [4096, 4096]], [BF, BF], 20.0),
           ("aten::mm", [[8192, 8192], [8192, 8192]], [BF, BF], 2000.0),
           ("aten::_scaled_mm", [[4096, 4096], [4096, 4096], [], []], [F8, F8, "float", "float"], 250.0),
           ("aten::cat", [[[1, 8], [1, 8]], []], ["TensorList", "Scalar"], 5.0)]
    ev, ext, t = [], 1, 1000.0
    steps, calls = 2, 3
    for s in range(steps):
        t0 = t
        for name, dims, types, dur in ops:
            for _ in range(calls):
                ev.append({"ph": "X", "cat": "cpu_op", "name": name, "ts": t, "dur": 5, "pid": 1, "tid": 1,
                           "args": {"External id": ext, "Input Dims": dims, "Input type": types}})
                ev.append({"ph": "X", "cat": "kernel", "name": "kernel_" + name, "ts": t + 1, "dur": dur,
                           "pid": 0, "tid": 7, "args": {"External id": ext, "device": 0, "stream": 7}})
                ext += 1
                t += dur + 10
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s, "ts": t0 - 1,
                   "dur": t - t0 + 2, "pid": 1, "tid": 1})
        t += 100
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": ev}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    try:
        rep = report(f.name)
    finally:
        os.unlink(f.name)
    tr = rep.get("trace", {})
    check(tr.get("peak_bf16_tflops") == 989 and tr.get("peak_fp8_tflops") == 1979,
          "H200: dense tensor peaks 989 / 1979 TFLOP/s (%s / %s)" % (tr.get("peak_bf16_tflops"),
                                                                     tr.get("peak_fp8_tflops")))
    by = {(o["op"], o["dims"][0][0] if o["dims"] else 0): o for o in rep.get("ops", [])}
    gemv = by.get(("aten::mm", 1), {})
    b, fl, us = 8192 + 4096 * 4096 * 2 + 8192, 2 * 4096 * 4096, 20.0
    check(gemv.get("bytes_per_call") == b and gemv.get("flops_per_call") == fl,
          "GEMV: %s bytes, %s FLOPs a call (want %d, %d)" % (gemv.get("bytes_per_call"), gemv.get("flops_per_call"), b, fl))
    check(gemv.get("calls") == steps * calls and near(gemv.get("calls_per_step"), calls), "GEMV: 6 calls, 3 a step")
    check(near(gemv.get("us_per_call"), us), "GEMV: 20 us a call (%s)" % gemv.get("us_per_call"))
    check(near(gemv.get("achieved_gbps"), b / (us * 1e3)), "GEMV: %.1f GB/s (want %.1f)" % (gemv.get("achieved_gbps") or 0, b / (us * 1e3)))
    check(near(gemv.get("achieved_tflops"), fl / (us * 1e-6) / 1e12), "GEMV: %.3f TFLOP/s" % (gemv.get("achieved_tflops") or 0))
    inten = fl / b
    check(near(gemv.get("intensity"), inten), "GEMV: intensity %.4f FLOP/B (want %.4f)" % (gemv.get("intensity") or 0, inten))
    roof = inten * 4800e9
    check(gemv.get("bound") == "memory" and near(gemv.get("roof_fraction"), fl / (us * 1e-6) / roof),
          "GEMV: memory-bound, %.4f of the roof (want %.4f)" % (gemv.get("roof_fraction") or 0, fl / (us * 1e-6) / roof))
    check(gemv.get("precision") == "bf16" and gemv.get("peak_tflops") == 989, "GEMV: bf16, roof 989")

    big = by.get(("aten::mm", 8192), {})
    fl = 2 * 8192 ** 3
    check(big.get("bound") == "compute" and near(big.get("roof_fraction"), fl / 2000e-6 / 989e12),
          "8192^3 GEMM: compute-bound, %.4f of 989 TFLOP/s (want %.4f)" % (big.get("roof_fraction") or 0, fl / 2000e-6 / 989e12))
    fp8 = by.get(("aten::_scaled_mm", 4096), {})
    b8 = 2 * 4096 * 4096 + 8 + 4096 * 4096 * 2
    fl = 2 * 4096 ** 3
    check(fp8.get("bytes_per_call") == b8 and fp8.get("precision") == "fp8" and fp8.get("peak_tflops") == 1979,
          "FP8 _scaled_mm: %s bytes (want %d: 1-byte inputs, BF16 out), fp8 roof 1979" % (fp8.get("bytes_per_call"), b8))
    check(fp8.get("bound") == "compute" and near(fp8.get("roof_fraction"), fl / 250e-6 / 1979e12),
          "FP8 _scaled_mm: compute-bound, %.4f of 1979 (want %.4f)" % (fp8.get("roof_fraction") or 0, fl / 250e-6 / 1979e12))
    cat = by.get(("aten::cat", 0), {})
    check(cat and all(cat.get(k) is None for k in ("family", "bytes_per_call", "flops_per_call", "bound",
                                                   "roof_fraction", "achieved_gbps")),
          "aten::cat: no formula: family, bytes, FLOPs, bound are null (not 0)")


def decode_trace(gemms, path):
    """gemms: (dims, dtypes, us) per call, each called once a step, 4 steps"""
    ev, ext, t = [], 1, 1000.0
    for s_ in range(4):
        t0 = t
        for dims, types, dur in gemms:
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": t, "dur": 5, "pid": 1, "tid": 1,
                       "args": {"External id": ext, "Input Dims": dims, "Input type": types}})
            ev.append({"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN", "ts": t + 1,
                       "dur": dur, "pid": 0, "tid": 7, "args": {"External id": ext, "device": 0, "stream": 7}})
            ext += 1
            t += dur + 2
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s_, "ts": t0 - 1,
                   "dur": t - t0 + 2, "pid": 1, "tid": 1})
        t += 5
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": ev}, f)


def gemm_findings():
    gemv = ([[1, 4096], [4096, 4096]], [BF, BF], 20.0)
    prefill = ([[512, 4096], [4096, 4096]], [BF, BF], 60.0)
    fp32 = ([[1, 4096], [4096, 4096]], ["float", "float"], 40.0)
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.json")
        decode_trace([gemv, gemv, gemv, prefill], p)
        rep = report(p)
        g = [f for f in rep.get("findings", []) if f["id"] == "gemm_memory_bound"]
        if check(len(g) == 1, "3 decode GEMVs + a prefill GEMM: one gemm_memory_bound (%d)" % len(g)):
            f = g[0]
            b = 3 * (8192 + 4096 * 4096 * 2 + 8192)  # the three GEMVs' bytes a step
            check(near(f["bytes_per_step"], b), "its bytes: %s a step (want %d: the 3 GEMVs, not the prefill)" % (f["bytes_per_step"], b))
            w = 3 * 4096 * 4096 * 2
            check("1 GEMM shape (3 calls per step)" in f["message"] and "0.06 ms per step" in f["message"]
                  and "100.7 MB" in f["message"],
                  "message: 1 GEMM shape, 3 calls a step, 0.06 ms per step, 100.7 MB of weights (%s)" % f["message"][:160])
            want = 0.06 * w / b / 2
            check(near(f["gpu_ms_per_step"], want, 1e-6), "recoverable %.5f ms/step = half the weight bytes at today's rate (want %.5f)" % (f["gpu_ms_per_step"], want))
            fix = f["fix"] or ""
            check("batch more sequences" in fix and "FP8 weights" in fix and "vectorized copy" not in fix
                  and "16-byte" not in fix, "fix in a GEMM's terms (batch, FP8 weights), not copy advice")
        decode_trace([prefill], p)
        rep = report(p)
        check(not [f for f in rep.get("findings", []) if f["id"] == "gemm_memory_bound"],
              "a compute-bound M=512 GEMM alone: no gemm_memory_bound")
        pre = [o for o in rep.get("ops", []) if o["op"] == "aten::mm"]
        check(pre and pre[0]["bound"] == "compute", "M=512: compute-bound (intensity %.1f)" % (pre[0]["intensity"] if pre else 0))
        decode_trace([fp32], p)
        rep = report(p)
        check(not [f for f in rep.get("findings", []) if f["id"] == "gemm_memory_bound"],
              "an FP32 GEMV (no tensor peak, bound unknown): no gemm_memory_bound")
        decode_trace([gemv, gemv, gemv, ([[[1, 8], [1, 8]], []], ["TensorList", "Scalar"], 3.0)], p)
        out = subprocess.run([kvscope, "report", p, "--format", "text"], capture_output=True, text=True)
        text = out.stdout
        rows = [l for l in text.splitlines() if l.strip().startswith("aten::mm") and "matmul" in l]
        check("ROOFLINE OF EVERY OP GROUP" in text and rows and "memory" in rows[0],
              "text: the roofline table, aten::mm a memory-bound matmul row")
    # the engine's own traces: the weights its log says a step reads
    root = os.environ.get("KVS_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), ".."))
    for kv in ("full-cast", "fp8-direct", "active-cast"):
        tr = os.path.join(root, "examples", "traces", "glm5_%s.json.gz" % kv)
        with open(tr.replace(".json.gz", ".log")) as f:
            line = [l for l in f if "bytes moved per step" in l][0]
        weights = float(line.split("(weights")[1].split(",")[0]) * 1e9
        g = [f for f in report(tr).get("findings", []) if f["id"] == "gemm_memory_bound"]
        check(g and abs(g[0]["bytes_per_step"] - weights) / weights < 1e-3,
              "glm5 %s: gemm_memory_bound reads %.4g bytes/step, the engine log's weights %.4g (0.1%%)"
              % (kv, g[0]["bytes_per_step"] if g else 0, weights))


DT_BYTES = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "c10::Float8_e4m3fn": 1, "long int": 8, "int": 4}


def tensors(dims, types):
    """the op's tensors: flat int lists with a dtype"""
    return [(d, t) for d, t in zip(dims, types)
            if t in DT_BYTES and isinstance(d, list) and all(isinstance(x, int) for x in d)]


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def hand_cost(name, ts):
    nb = lambda i: prod(ts[i][0]) * DT_BYTES[ts[i][1]]  # noqa: E731
    if name == "aten::mm":
        (m, k), (_, n) = ts[0][0], ts[1][0]
        return nb(0) + nb(1) + m * n * DT_BYTES[ts[0][1]], 2 * m * n * k
    if name == "aten::addmm":
        (m, k), (_, n) = ts[1][0], ts[2][0]
        return nb(0) + nb(1) + nb(2) + m * n * DT_BYTES[ts[1][1]], 2 * m * n * k
    if name == "aten::bmm":
        (b, m, k), (_, _, n) = ts[0][0], ts[1][0]
        return nb(0) + nb(1) + b * m * n * DT_BYTES[ts[0][1]], 2 * b * m * n * k
    if name == "aten::_cudnn_attention_forward":  # [B, H, L, D], a mask tensor after v
        (b, h, lq, d), (_, _, lk, _), (_, _, _, dv) = ts[0][0], ts[1][0], ts[2][0]
        return sum(nb(i) for i in range(len(ts))) + b * h * lq * dv * DT_BYTES[ts[0][1]], 2 * b * h * lq * lk * (d + dv)
    if name == "aten::_grouped_mm" and len(ts[0][0]) == 2 and len(ts[1][0]) == 3:  # tokens x experts
        (t, k), (g, _, n) = ts[0][0], ts[1][0]
        return nb(0) + nb(1) * min(t, g) / g + nb(2) + t * n * DT_BYTES[ts[0][1]], 2 * t * n * k
    if name == "aten::_flash_attention_forward":  # [B, L, H, D]
        (b, lq, h, d), (_, lk, _, _), (_, _, _, dv) = ts[0][0], ts[1][0], ts[2][0]
        return nb(0) + nb(1) + nb(2) + b * lq * h * dv * DT_BYTES[ts[0][1]], 2 * b * h * lq * lk * (d + dv)
    return None


def against_python(path, peak_bw, peak_fl, at_least):
    """every matmul/attention op group of the report against json.load of the trace"""
    if not os.path.exists(path):
        check(False, "shared trace %s present" % path)
        return
    rep = report(path)
    with gzip.open(path, "rt") as f:
        ev = json.load(f)["traceEvents"]
    ops = {e["args"]["External id"]: e for e in ev if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    acc = {}
    for e in ev:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        o = ops.get(e.get("args", {}).get("External id"))
        if not o:
            continue
        ts = tensors(o["args"].get("Input Dims", []), o["args"].get("Input type", []))
        key = (o["name"], json.dumps([d for d, _ in ts]))
        a = acc.setdefault(key, {"dur": 0.0, "calls": set(), "ts": ts})
        a["dur"] += e["dur"]
        a["calls"].add(o["args"]["External id"])
    n = 0
    for o in rep.get("ops", []):
        if o.get("family") not in ("matmul", "attention"):
            continue
        a = acc.get((o["op"], json.dumps(o["dims"])))
        if not check(a is not None, "%s %s found in the raw JSON" % (o["op"], o["dims"])):
            continue
        cost = hand_cost(o["op"], a["ts"])
        if not check(cost is not None, "%s: a hand formula here" % o["op"]):
            continue
        b, fl = cost
        calls = len(a["calls"])
        us = a["dur"] / calls
        ok = (o["calls"] == calls and near(o["us_per_call"], us, 1e-6) and near(o["bytes_per_call"], b) and
              o["flops_per_call"] == fl)
        inten = fl / b
        if a["ts"][0][1] == "float" or (o["op"] == "aten::addmm" and a["ts"][1][1] == "float"):
            # an FP32 matmul: no tensor peak in the device table, so no bound
            bound, frac = None, None
            ok = ok and o["bound"] is None and o["roof_fraction"] is None and near(o["intensity"], inten)
        else:
            bound = "memory" if inten < peak_fl / peak_bw else "compute"
            roof = min(peak_fl, inten * peak_bw)
            frac = fl / (us * 1e-6) / roof
            ok = ok and o["bound"] == bound and near(o["roof_fraction"], frac, 1e-6) and near(o["intensity"], inten)
        check(ok, "%s %s: %d calls, %.2f us, %d B, %d FLOPs, %.1f FLOP/B, %s-bound, %s of the roof "
              "(kvscope: %s calls, %.2f us, %s B, %s FLOPs, %s, %.3f)"
              % (o["op"], o["dims"], calls, us, b, fl, inten, bound, "%.3f" % frac if frac else "none",
                 o["calls"], o["us_per_call"],
                 o["bytes_per_call"], o["flops_per_call"], o["bound"], o["roof_fraction"] or 0))
        n += 1
    check(n >= at_least, "%s: %d matmul/attention op groups checked (>= %d)" % (os.path.basename(path), n, at_least))
    return rep


def qwen():
    # H100 SXM: datasheet HBM3 3350 GB/s, dense BF16 989 TFLOP/s
    if not os.path.isdir(os.path.join(shared, "traces")):
        print("skip: the Qwen H100 trace (no ../shared/traces)")
        return
    rep = against_python(os.path.join(shared, "traces", "serving",
                                      "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"), 3350e9, 989e12, 5)
    fams = {o.get("family") for o in rep.get("ops", [])}
    check({"matmul", "attention", "elementwise", "copy", "embedding"} <= fams,
          "Qwen H100: matmul, attention, elementwise, copy and embedding groups present (%s)" % sorted(f for f in fams if f))


def h200():
    """our own H200 HF decode traces (tests/traces/h200): H200 4800 GB/s, 989 TFLOP/s"""
    root = os.environ.get("KVS_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), ".."))
    for name in ("gqa_static_eager", "gqa_dynamic_eager", "mla_static_eager", "mla_dynamic_eager"):
        rep = against_python(os.path.join(root, "tests", "traces", "h200", name + ".json.gz"), 4800e9, 989e12, 6)
        att = [o for o in rep.get("ops", []) if o.get("family") == "attention"]
        if "static" in name:  # the attention reads the whole 8192-slot cache: its bytes say so
            k, v = (att[0]["dims"][1], att[0]["dims"][2]) if att else ([], [])
            check(att and k[2] == 8192 and att[0]["bytes_per_call"] > (prod(k) + prod(v)) * 2,
                  "%s: attention over k %s reads %s bytes a call (the whole 8192-slot cache)"
                  % (name, k, att[0]["bytes_per_call"] if att else None))


generated()
gemm_findings()
qwen()
h200()
sys.exit(finish())
