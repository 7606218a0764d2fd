#!/usr/bin/env python3
"""tests/test_kv_read.py KVSCOPE — kv_full_buffer_read on traces written by
tests/hf_decode_trace.py (torch.profiler-shaped Hugging Face decode, sdpa ->
_scaled_dot_product_efficient_attention -> _efficient_attention_forward ->
fmha kernel, 4 layers, 4 ProfilerSteps, H200). Expected figures are worked
out here from the generated shapes and kernel durations, not read back from
kvscope:

- mla: StaticCache(8192), keys [1,16,8192,192], values [1,16,8192,128]
  bf16: 83,886,080 B per call, + 26,624 B of queries, mask and output
  (opcost.c's attention bytes), 4 calls a step; with --context 520 needed =
  the rest + keys and values x 520/8192, recoverable = the fmha kernels' GPU
  ms/step x (1 - needed/read); one finding, the sdpa op listed, capacity
  8192, active 520 (keys in the JSON);
- the same without --context or a prefill in the trace: nothing says how
  many tokens are active; the keys' length held over the 4 steps infers the
  capacity (a growing cache adds a token a step), and the finding comes with
  the active count unknown and all of the attention's GPU time recoverable
  (so with --kv-capacity 8192); a one-step trace shows no growth: declines;
- prefill: a prefill step of 512 tokens before the decode steps: the
  capacity is inferred (8192 in 4 of 5 steps) and the active count is the
  512 new keys written into the cache ([1,16,512,192]);
- gqa: 32 query heads, 8 KV heads, repeat_kv's copy of the cache
  (aten::copy_ [1,8,4,8192,128], K and V: 8 a step) and the sdpa over
  [1,32,8192,128]: ONE finding listing both ops, bytes = copies' read +
  written + attention's keys and values;
- dynamic: DynamicCache (keys grow 521, 522, ...): no kv_full_buffer_read,
  with --context 520 or --kv-capacity 8192; compare static -> dynamic
  resolves it (and lists nothing new);
- tests/traces/h200 (real H200 HF decode, README there): gqa/mla
  static_eager get one finding, capacity 8192, active unknown (the trace
  does not count them), the sdpa and the whole-cache copies listed, bytes
  against a hand count, GPU ms against an independent json.load reading
  (kernels inside the sdpa calls + the copies' kernels); --context 516 sizes
  needed and recoverable; dynamic_eager: none; compare resolves it; the
  graphed step with its capture reads as eager (4 attentions, 8 copies).

Exit 0 pass, 1 fail.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish  # noqa: E402

kvscope = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
tmp = tempfile.mkdtemp(prefix="kvs_kv_read_")
FMHA = "fmha_cutlassF"


def make(name, *args):
    path = os.path.join(tmp, name + ".json")
    subprocess.run([sys.executable, os.path.join(here, "hf_decode_trace.py"), path] + list(args), check=True)
    return path


def run(*args):
    out = subprocess.run([kvscope] + list(args) + ["--format", "json"], capture_output=True, text=True)
    check(out.returncode == 0, "kvscope %s exits 0 (%s)" % (args[0], out.stderr.strip()[-200:]))
    return json.loads(out.stdout) if out.stdout.strip() else {}


def reads(rep):
    return [f for f in rep.get("findings", []) if f["id"] == "kv_full_buffer_read"]


def kernel_ms_per_step(path, name, skip_first=False):
    """GPU ms of the kernels named `name` launched inside the steps, per step"""
    ev = json.load(open(path))["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"].startswith("ProfilerStep#"))
    launch = {e["args"]["correlation"]: e["ts"] for e in ev if e.get("cat") == "cuda_runtime"}
    lo = steps[1][0] if skip_first else steps[0][0]
    total = sum(e["dur"] for e in ev if e.get("cat") == "kernel" and e["name"].startswith(name)
                and lo <= launch[e["args"]["correlation"]] <= steps[-1][1])
    return total / 1e3 / len(steps)


def near(x, y, rel=1e-6):
    return x is not None and abs(x - y) <= rel * max(abs(y), 1e-12)


# --- mla, --context 520 ---------------------------------------------------
mla = make("mla", "--cache", "static")
rep = run("report", mla, "--context", "520")
f = reads(rep)
check(len(f) == 1, "mla --context: one kv_full_buffer_read (%s)" % [x["id"] for x in rep.get("findings", [])])
if f:
    f = f[0]
    # opcost.c's attention bytes: q + k + v + mask + output, by hand
    kv = 16 * 8192 * 192 * 2 + 16 * 8192 * 128 * 2
    rest = 16 * 1 * 192 * 2 + 1 * 1 * 1 * 8192 * 2 + 16 * 1 * 128 * 2
    check(kv == 83886080 and rest == 26624, "hand count: 83,886,080 B of keys + values, 26,624 B of the rest")
    per_call = kv + rest
    check(f["bytes_per_step"] == 4 * per_call, "mla: %s B/step = 4 x %d" % (f["bytes_per_step"], per_call))
    need = 4 * (rest + kv * 520 / 8192)
    check(near(f["needed_bytes_per_step"], need), "mla: needed %s = 4 x (rest + kv x 520/8192) = %.0f"
          % (f["needed_bytes_per_step"], need))
    ms = kernel_ms_per_step(mla, FMHA)
    check(near(f["gpu_ms_per_step"], ms * (1 - need / (4 * per_call))),
          "mla: recoverable %.6f = fmha %.6f ms/step x (1 - needed/read)" % (f["gpu_ms_per_step"], ms))
    check(f["capacity_tokens"] == 8192 and f["active_tokens"] == 520,
          "mla: capacity %s, active %s" % (f["capacity_tokens"], f["active_tokens"]))
    check(len(f["ops"]) == 1 and f["ops"][0].startswith("aten::scaled_dot_product_attention (keys [1,16,8192,192], "
                                                         "values [1,16,8192,128]"),
          "mla: the sdpa is the one op listed: %s" % f["ops"])
    check("8192" in f["message"] and "520" in f["message"], "mla: the message gives 8192 and 520")
    check("Attend over the active length" in f["fix"] and "FP8" not in f["fix"],
          "mla: the fix is the attention's, no FP8 advice: %s" % f["fix"][:80])
    check(f["severity"] == "high", "mla: high (the attention is half the step's GPU time)")

# --- mla without the active count ------------------------------------------
for extra in ([], ["--kv-capacity", "8192"]):
    rep = run("report", mla, *extra)
    f = reads(rep)
    tag = "mla %s" % (" ".join(extra) or "(nothing says the active tokens)")
    check(len(f) == 1, "%s: one kv_full_buffer_read (the keys' length held over 4 steps)" % tag)
    if f:
        f = f[0]
        check(f["capacity_tokens"] == 8192 and f["active_tokens"] is None and f["needed_bytes_per_step"] is None,
              "%s: capacity 8192, active and needed unknown (null)" % tag)
        check(near(f["gpu_ms_per_step"], kernel_ms_per_step(mla, FMHA)),
              "%s: all of the attention's time recoverable (%s)" % (tag, f["gpu_ms_per_step"]))
        check("--context" in f["message"], "%s: the message asks for --context" % tag)
one = make("one", "--cache", "static", "--steps", "1")
check(not reads(run("report", one)), "one step, no active count: no growth can be seen, so no capacity inferred")
check(len(reads(run("report", one, "--context", "520"))) == 1, "one step with --context 520: the finding")
rep = run("report", mla, "--kv-capacity", "16384", "--context", "520")
check(not reads(rep), "mla --kv-capacity 16384: the given capacity is the only one (no finding at 8192)")

# --- prefill in the trace --------------------------------------------------
pre = make("prefill", "--cache", "static", "--prefill", "512")
rep = run("report", pre)
f = reads(rep)
check(len(f) == 1, "prefill: one kv_full_buffer_read, capacity inferred")
if f:
    f = f[0]
    check(f["capacity_tokens"] == 8192 and f["active_tokens"] == 512,
          "prefill: capacity %s, active %s (the prompt's 512 keys)" % (f["capacity_tokens"], f["active_tokens"]))
    # 16 decode calls over the 5 steps (the prefill's attention, 1 step of 5, is no reader)
    check(f["bytes_per_step"] == 16 * 83912704 / 5, "prefill: %s B/step = 16 calls x 83,912,704 / 5 steps"
          % f["bytes_per_step"])
    check("in 4 of 5 steps" in f["evidence"], "prefill: evidence says 4 of 5 steps: %s" % f["evidence"][:140])

# --- gqa with repeat_kv ------------------------------------------------------
gqa = make("gqa", "--cache", "static", "--heads", "32", "--kv-heads", "8", "--dk", "128", "--dv", "128",
           "--repeat-kv")
rep = run("report", gqa, "--context", "520")
f = reads(rep)
check(len(f) == 1, "gqa: ONE kv_full_buffer_read for the copies and the attention (%d)" % len(f))
if f:
    f = f[0]
    copy = 2 * (8 * 4 * 8192 * 128 * 2)      # read + written, a call
    kv = 2 * (32 * 8192 * 128 * 2)           # keys + values, a call
    rest = 32 * 128 * 2 + 8192 * 2 + 32 * 128 * 2  # queries, mask, output
    check(f["bytes_per_step"] == 8 * copy + 4 * (kv + rest),
          "gqa: %s B/step = 8 copies x %d + 4 attentions x %d" % (f["bytes_per_step"], copy, kv + rest))
    need = (8 * copy + 4 * kv) * 520 / 8192 + 4 * rest
    check(near(f["needed_bytes_per_step"], need), "gqa: needed %s = %.0f" % (f["needed_bytes_per_step"], need))
    check(len(f["ops"]) == 2 and f["ops"][0].startswith("aten::copy_ [[1,8,4,8192,128]")
          and f["ops"][1].startswith("aten::scaled_dot_product_attention"),
          "gqa: copy_ then sdpa listed (most GPU time first): %s" % f["ops"])
    cms = kernel_ms_per_step(gqa, "void at::native::elementwise_kernel")
    ams = kernel_ms_per_step(gqa, FMHA)
    want = cms * (1 - 520 / 8192) + ams * (1 - (kv * 520 / 8192 + rest) / (kv + rest))
    check(near(f["gpu_ms_per_step"], want),
          "gqa: recoverable %.6f = copies %.6f and fmha %.6f ms/step x (1 - needed/read)"
          % (f["gpu_ms_per_step"], cms, ams))
    check("enable_gqa=True" in f["fix"] and "FP8" not in f["fix"], "gqa: the fix names enable_gqa, no FP8")
check(not [x for x in rep.get("findings", []) if x["id"] == "kv_full_buffer_cast"],
      "gqa: a bf16 copy of the cache is no kv_full_buffer_cast")
low = [x for x in rep.get("findings", []) if x["id"] == "low_bandwidth_efficiency"]
check(all("FP8" not in x["fix"] for x in low), "gqa: no FP8 advice for a bf16 copy")

# --- dynamic cache: the fixed path ------------------------------------------
dyn = make("dyn", "--cache", "dynamic")
for extra in (["--context", "520"], ["--kv-capacity", "8192"], []):
    rep = run("report", dyn, *extra)
    check(not reads(rep), "dynamic %s: no kv_full_buffer_read (%s)" % (" ".join(extra),
                                                                      [x["id"] for x in rep.get("findings", [])]))
dgqa = make("dgqa", "--cache", "dynamic", "--heads", "32", "--kv-heads", "8", "--dk", "128", "--dv", "128",
            "--repeat-kv")
check(not reads(run("report", dgqa, "--context", "520")), "dynamic gqa: no kv_full_buffer_read")
cmp = run("compare", mla, dyn, "--context", "520")
check("kv_full_buffer_read" in cmp.get("resolved", []), "compare static -> dynamic: kv_full_buffer_read resolved")
check("kv_full_buffer_read" not in cmp.get("new", []), "compare static -> dynamic: not new")
cmp = run("compare", dyn, mla, "--context", "520")
check("kv_full_buffer_read" in cmp.get("new", []), "compare dynamic -> static: kv_full_buffer_read new")

# --- hostile dims: lengths near 2^63 are read, judged and not overflowed ------
big = 2 ** 62
doc = json.load(open(mla))
for e in doc["traceEvents"]:
    if e.get("cat") == "cpu_op" and "attention" in e["name"]:
        d = e["args"]["Input Dims"]
        e["args"]["Input Dims"] = [[1, 16, big, 192], [1, 16, big + 1, 192], [1, 16, big + 1, 128]] + d[3:]
hostile = os.path.join(tmp, "hostile.json")
json.dump(doc, open(hostile, "w"))
for extra in ([], ["--context", "520"], ["--kv-capacity", "8192"]):
    out = subprocess.run([kvscope, "report", hostile, "--format", "json"] + extra, capture_output=True, text=True)
    check(out.returncode == 0 and json.loads(out.stdout).get("schema") == "kvscope.report/1",
          "hostile dims near 2^62 %s: a report, exit %d" % (" ".join(extra), out.returncode))

# --- the H200 Hugging Face traces (tests/traces/h200/README.md) -------------
h200 = os.path.join(here, "traces", "h200")


def h200_reading(path, attn_k, copies, gemms=()):
    """an independent reading: per step, the sdpa calls whose keys are attn_k,
    the GPU ms of every kernel launched inside them, and the GPU ms of the
    aten::copy_ ops whose first tensor is one of `copies` and of the aten::mm
    ops whose input dims are one of `gemms` (a GEMM over every cache slot)"""
    import gzip
    ev = json.load(gzip.open(path))["traceEvents"]
    steps = sorted({(e["ts"], e["ts"] + e["dur"]) for e in ev
                    if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")})
    launch = {e["args"]["correlation"]: e["ts"] for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
              and "correlation" in e.get("args", {})}
    ops = [e for e in ev if e.get("cat") == "cpu_op"]

    def in_steps(ts):
        return any(a <= ts <= b for a, b in steps)
    sdpa = [e for e in ops if e["name"] == "aten::scaled_dot_product_attention"
            and e["args"]["Input Dims"][1] == attn_k and in_steps(e["ts"])]
    inside = set()
    for a in sdpa:
        for e in ops:
            if e["tid"] == a["tid"] and a["ts"] <= e["ts"] and e["ts"] + e["dur"] <= a["ts"] + a["dur"]:
                inside.add(e["args"]["External id"])
    cp = {e["args"]["External id"] for e in ops if e["name"] == "aten::copy_" and e["args"]["Input Dims"][0] in copies}
    gm = {e["args"]["External id"] for e in ops if e["name"] == "aten::mm" and e["args"]["Input Dims"][:2] in gemms}
    attn_us = copy_us = gemm_us = 0.0
    for e in ev:
        # every GPU activity the ops launched (cuBLAS's GEMM launches a workspace memset too)
        if e.get("cat") not in ("kernel", "gpu_memset", "gpu_memcpy") or \
                not in_steps(launch.get(e["args"].get("correlation"), -1)):
            continue
        x = e["args"].get("External id")
        attn_us += e["dur"] if x in inside else 0
        copy_us += e["dur"] if x in cp else 0
        gemm_us += e["dur"] if x in gm else 0
    n = len(steps)
    return len(sdpa) / n, attn_us / 1e3 / n, copy_us / 1e3 / n, gemm_us / 1e3 / n


if os.path.isdir(h200):
    cases = {
        # name: keys dims, copies, sdpa bytes a call (q, k + v, bool mask + out), copies'
        # bytes a call (read + written) and calls a step (GQA: K and V each layer)
        "gqa": ([1, 16, 8192, 64], [[1, 4, 4, 8192, 64]],
                (16 * 64 * 2, 16 * 8192 * 64 * 2 * 2, 8192 + 16 * 64 * 2), [(2 * 4 * 4 * 8192 * 64 * 2, 8)], []),
        "mla": ([1, 16, 8192, 192], [[1, 16, 8192, 128], [1, 16, 8192, 64]],
                (16 * 192 * 2, 16 * 8192 * (192 + 128) * 2, 8192 + 16 * 128 * 2),
                [(2 * 16 * 8192 * 128 * 2, 4), (2 * 16 * 8192 * 64 * 2, 4)],
                # kv_b_proj over every latent row: [8192,512] x [512,4096] bf16, 4 a step; its
                # activation and output scale with the tokens, its weight does not
                [([[8192, 512], [512, 4096]], (8192 * 512 + 8192 * 4096) * 2, 512 * 4096 * 2, 4)]),
    }
    for m, (kdims, copies, (q, kv, rest), cbytes, gemm) in cases.items():
        static = os.path.join(h200, m + "_static_eager.json.gz")
        dynamic = os.path.join(h200, m + "_dynamic_eager.json.gz")
        calls, attn_ms, copy_ms, gemm_ms = h200_reading(static, kdims, copies, [g[0] for g in gemm])
        check(calls == 4, "h200 %s static: 4 sdpa calls over 8192 keys a step (%s)" % (m, calls))
        rep = run("report", static)
        f = reads(rep)
        check(len(f) == 1, "h200 %s static: one kv_full_buffer_read without options" % m)
        if f:
            f = f[0]
            check(f["capacity_tokens"] == 8192 and f["active_tokens"] is None,
                  "h200 %s static: capacity 8192 inferred, active unknown (the trace does not count them)" % m)
            names = " | ".join(f["ops"])
            check(("aten::scaled_dot_product_attention (keys %s" % str(kdims).replace(" ", "")) in names
                  and all(("aten::copy_ [%s" % str(cd).replace(" ", "")) in names for cd in copies)
                  and all(("aten::mm %s x %s" % tuple(str(d).replace(" ", "") for d in g[0])) in names for g in gemm),
                  "h200 %s static: the sdpa and the whole-cache copies listed: %s" % (m, f["ops"]))
            copied = sum(b * n for b, n in cbytes) + sum((act + w) * n for _, act, w, n in gemm)
            want = 4 * (q + kv + rest) + copied
            check(f["bytes_per_step"] == want, "h200 %s static: %s B/step = hand count %d" % (m, f["bytes_per_step"], want))
            check(near(f["gpu_ms_per_step"], attn_ms + copy_ms + gemm_ms, 1e-4),
                  "h200 %s static: %.4f ms/step = attention %.4f + copies %.4f + GEMM %.4f (json.load)"
                  % (m, f["gpu_ms_per_step"], attn_ms, copy_ms, gemm_ms))
        rep = run("report", static, "--context", "516")
        f = reads(rep)
        if check(len(f) == 1, "h200 %s static --context 516: one kv_full_buffer_read" % m):
            f = f[0]
            need = (4 * (q + rest + kv * 516 / 8192) + sum(b * n for b, n in cbytes) * 516 / 8192
                    + sum((w + act * 516 / 8192) * n for _, act, w, n in gemm))
            check(f["active_tokens"] == 516 and near(f["needed_bytes_per_step"], need),
                  "h200 %s static --context 516: needed %s = %.0f" % (m, f["needed_bytes_per_step"], need))
            save = copy_ms * (1 - 516 / 8192) + attn_ms * (1 - (q + rest + kv * 516 / 8192) / (q + kv + rest))
            save += sum(gemm_ms * (1 - (w + act * 516 / 8192) / (w + act)) for _, act, w, _n in gemm)
            check(near(f["gpu_ms_per_step"], save, 1e-4),
                  "h200 %s static --context 516: recoverable %.4f = %.4f" % (m, f["gpu_ms_per_step"], save))
            check("FP8" not in f["fix"] and "Attend over the active length" in f["fix"],
                  "h200 %s static: attention advice, no FP8" % m)
            # the copies' advice by their shape: GQA's repeat_kv [1,4,4,8192,64] vs MLA's expand
            check(("enable_gqa=True" in f["fix"]) == (m == "gqa") and ("absorbed attention" in f["fix"]) == (m == "mla"),
                  "h200 %s static: the copy advice fits the copy (%s)" % (m, f["fix"][-160:]))
        low = [x for x in rep.get("findings", []) if x["id"] == "low_bandwidth_efficiency"]
        check(low and all("kv_full_buffer_read" in x["fix"] and "FP8" not in x["fix"] for x in low),
              "h200 %s static: the slow whole-cache copies are told a faster copy is not the fix (%d)" % (m, len(low)))
        check(all(("enable_gqa=True" in x["fix"]) == (m == "gqa") for x in low),
              "h200 %s static: enable_gqa only for repeat_kv's copy" % m)
        for extra in ([], ["--context", "516"]):
            check(not reads(run("report", dynamic, *extra)),
                  "h200 %s dynamic %s: no kv_full_buffer_read" % (m, " ".join(extra)))
        cmp = run("compare", static, dynamic)
        check("kv_full_buffer_read" in cmp.get("resolved", []), "h200 %s: compare static dynamic resolves it" % m)
    # the graphed step with its capture: the same reads, from the replayed kernels
    g = os.path.join(h200, "gqa_static_graph.json.gz")
    rep = run("report", g, "--graph-capture", os.path.join(h200, "gqa_static_graph_capture.json.gz"))
    f = reads(rep)
    # captured under aten::_cudnn_attention_forward, whose mask is bf16 (sdpa's is bool)
    cudnn = 16 * 64 * 2 + 2 * 16 * 8192 * 64 * 2 + 8192 * 2 + 16 * 64 * 2
    check(len(f) == 1 and f[0]["bytes_per_step"] == 4 * cudnn + 8 * 2 * 4 * 4 * 8192 * 64 * 2,
          "h200 gqa graph + capture: one finding, 4 attentions and 8 copies a step, as eager (%s)"
          % [x.get("bytes_per_step") for x in f])
else:
    check(False, "tests/traces/h200 is missing")

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(finish())
