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
2. The H100 Qwen HF trace (shared): every matmul and attention op group
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
    if name == "aten::_flash_attention_forward":  # [B, L, H, D]
        (b, lq, h, d), (_, lk, _, _), (_, _, _, dv) = ts[0][0], ts[1][0], ts[2][0]
        return nb(0) + nb(1) + nb(2) + b * lq * h * dv * DT_BYTES[ts[0][1]], 2 * b * h * lq * lk * (d + dv)
    return None


def qwen():
    path = os.path.join(shared, "traces", "serving", "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
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
    peak_bw, peak_fl = 3350e9, 989e12  # H100 SXM: datasheet HBM3, dense BF16
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
        ok = (o["calls"] == calls and near(o["us_per_call"], us, 1e-6) and o["bytes_per_call"] == b and
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
    check(n >= 5, "Qwen H100: %d matmul/attention op groups checked (>= 5)" % n)
    fams = {o.get("family") for o in rep.get("ops", [])}
    check({"matmul", "attention", "elementwise", "copy", "embedding"} <= fams,
          "Qwen H100: matmul, attention, elementwise, copy and embedding groups present (%s)" % sorted(f for f in fams if f))


generated()
qwen()
sys.exit(finish())
