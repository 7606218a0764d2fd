#!/usr/bin/env python3
"""tests/test_serving_traces.py KVSCOPE — `kvscope report --format json` on
every trace in ../shared/traces/serving/ (vLLM, SGLang, HF, torch.compile,
old-schema ResNet) held against an independent reading of the same JSON
here (json.load): the steps (their kind, batch and tokens, written down
below from the traces' README and range names), the GPU work each step
launched (a kernel's correlation id -> its runtime call -> the step whose CPU
range holds the call; graph launches included), its busy time (the union per
device) and its time (CPU range, or the span of its GPU work when longer),
the GPU ms per step of each category (by the kernel's library, else its
launching op) and of each kernel family, within 1%. On every trace under
../shared/traces (hta/, graphs/ and the MLA pair too), each kernel with 3% or
more of the GPU time has the family written down here for its library.

Exit 0 pass, 1 fail, 77 when ../shared/traces/serving is absent (meson: skipped).
"""
import gzip
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish, union  # noqa: E402

kvscope = sys.argv[1]
shared = os.environ.get("KVS_SHARED_DIR", "")
root = os.path.join(shared, "traces", "serving")
if not shared or not os.path.isdir(root):
    print("skip: no ../shared/traces/serving")
    sys.exit(77)

# What each trace's steps are, from its README row and its range names:
# (kind, batch, tokens) per step; None = no step markers.
EXPECT_STEPS = {
    # step[DECODE bs=32] inside execute_32_context_0(...)_generation_32(...)
    "tracelens__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz": [("decode", 32, 32)],
    # ProfilerStep#134 around the graph capture (capture_32_DECODE is no step)
    "tracelens__inference__sglang_decode__capture_traces__bs_32_rank0.json.gz": [("unknown", None, None)],
    "tracelens__inference__vllm_decode_full__graph_execution.json.gz": [("decode", 32, 32)],
    "tracelens__inference__vllm_decode_full__capture_traces__graph_capture_rank_0."
    "1773709742341309550.pt.trace.json.gz": None,
    # 8192 tokens, 9 context + 37 generation requests
    "tracelens__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz": [("mixed", 46, 8192)],
    # execute_context_1(888_788544)_generation_0(0): one 888-token prefill
    "tracelens__b200__eager_trace.json.gz": [("prefill", 1, 888)],
    "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz": [("unknown", None, None)],
    "tracelens__torch_compile_triton__trace.json.gz": None,
    "resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz": [("unknown", None, None)] * 6,
    "resnet50_num_workers_4__worker0.1623213129365.pt.trace.json.gz": [("unknown", None, None)] * 6,
}

# A kernel's family from what its library names it (first match), written
# here apart from analyzers/data/kernel_families.json.
FAMILY_OF = [
    (r"^Cijk_", "hipblaslt"),
    (r"^bmm_", "mx_bmm"),
    (r"_matmul_ogs", "triton_matmul"),
    (r"nvjet|sm90_xmma_gemm|[a-z]+_sgemm_|gemmk1_kernel|splitKreduce", "cublas"),
    (r"cutlass::Kernel<cutlass_\d+_(wmma_)?tensorop", "cutlass"),
    (r"ncclKernel|ncclDevKernel", "nccl"),
    (r"multimem_all_reduce", "all_reduce"),
    (r"paged_attention", "paged_attention"),
    (r"flash_fwd_kernel", "flash_attention"),
    (r"(^|void )flashinfer::|_flashinfer_", "flashinfer"),
    (r"unified_attention|^attn_fwd$", "triton_attention"),
    (r"^fmha", "fmha"),
    (r"^Memcpy", "memcpy"),
    (r"^Memset", "memset"),
    (r"direct_copy_kernel|_copy_kernel_cuda|CatArrayBatchedCopy|_to_copy", "copy_cast"),
    (r"rms_norm|Rmsnorm|rmsnorm|bn_bw_|bn_fw_", "norm"),
    (r"dgrad_engine|wgrad_alg|implicit_convolve|fprop_implicit_gemm|scudnn", "convolution"),
    (r"split_embedding|permute_pooled_embs", "embedding"),
    (r"finalize_matmul_scatter|^void moe::dev::finalize::", "moe_routing"),
    (r"elementwise_kernel|distribution_elementwise|reduce_kernel|triton_poi_|triton_red_|"
     r"multi_tensor_apply|gather_kernel|softmax_warp|act_and_mul", "elementwise"),
    (r"spin_kernel|nchwToNhwc|DeviceRadixSort", "other"),
]
# families an op can take over (a pointwise kernel of aten::copy_ is a copy):
# their per-step totals follow the ops, not the kernel names alone
OP_DECIDED = {"elementwise", "other", "copy_cast", "attention", "gemm"}
# each family's category, as its library's kernels are; a kernel no family
# above names (or elementwise / other) is what its launching op is: a copy,
# attention or matmul op (the op names below), else other
CATEGORY = {"hipblaslt": "GEMM", "mx_bmm": "GEMM", "triton_matmul": "GEMM", "cublas": "GEMM",
            "cutlass": "GEMM", "nccl": "communication", "all_reduce": "communication",
            "paged_attention": "attention", "flash_attention": "attention", "flashinfer": "attention",
            "triton_attention": "attention", "fmha": "attention", "memcpy": "copy/cast",
            "memset": "copy/cast", "copy_cast": "copy/cast", "norm": "other", "convolution": "other",
            "embedding": "other", "moe_routing": "other"}
COPY_OPS = {"aten::copy_", "aten::_to_copy", "aten::to", "aten::clone", "aten::contiguous",
            "aten::_copy_from", "aten::_copy_from_and_resize", "aten::copy", "aten::type_as"}
GEMM_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
            "aten::_scaled_mm", "aten::addbmm", "aten::einsum", "aten::_grouped_mm"}
ATTN_WORDS = ("flash", "fmha", "attention", "attn", "mla_", "_mla", "sdpa", "paged_", "scaled_dot_product")


def op_category(op):
    o = (op or "").lower()
    if op in COPY_OPS or "copy" in o:
        return "copy/cast"
    if any(w in o for w in ATTN_WORDS):
        return "attention"
    return "GEMM" if op in GEMM_OPS else "other"

# The findings each trace should get, no more (ids, by rank), and why:
EXPECT_FINDINGS = {
    # the step waits 463 ms in a blocking hipMemcpyWithStream; its GPU work is
    # dense once launched, so no gpu_idle
    "tracelens__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz": ["host_blocking"],
    # graph captures: the captured kernels do not run, an idle GPU says nothing
    "tracelens__inference__sglang_decode__capture_traces__bs_32_rank0.json.gz": [],
    "tracelens__inference__vllm_decode_full__capture_traces__graph_capture_rank_0."
    "1773709742341309550.pt.trace.json.gz": [],
    # graph steps busy all through their GPU work
    "tracelens__inference__vllm_decode_full__graph_execution.json.gz": [],
    "tracelens__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz": [],
    # eager prefill, 929 small launches, 13% busy: launch-bound
    "tracelens__b200__eager_trace.json.gz": ["gpu_idle"],
    # bf16 transposes/contiguous copies at 37-40% of the H100's peak
    "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz": ["low_bandwidth_efficiency"] * 3,
    "tracelens__torch_compile_triton__trace.json.gz": [],
    # 66% busy, under the launch-bound line; the input-bound pair's unfixed side (num_workers=0):
    # each step waits ~35 ms on the CPU in DataLoader.__next__ with the GPU idle (host_op_bound)
    "resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz": ["host_op_bound"],
    # each step's first input copy (cudaMemcpyAsync from pageable memory) holds the host
    "resnet50_num_workers_4__worker0.1623213129365.pt.trace.json.gz": ["host_blocking"],
}

GPU_CATS = ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset")
RT_CATS = ("cuda_runtime", "cuda_driver", "Runtime")
VLLM = re.compile(r"^execute_(?:\d+_)?context_(\d+)\((\d+)?[^)]*\)_generation_(\d+)\(")
VLLM_TOTAL = re.compile(r"^execute_(\d+)_context_")
SGLANG = re.compile(r"^step\[(DECODE|EXTEND|PREFILL|MIXED|IDLE)((?: \w+=\d+)*)\]$")


def load(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return doc if isinstance(doc, list) else doc.get("traceEvents", [])


def ns(us):
    """the reader's integer nanoseconds"""
    return int(round(float(us) * 1000))


def step_ranges(ev):
    """the step ranges kvscope should pick: serving-engine ranges, else
    ProfilerStep#N (outermost of overlapping ones), as (start, end) in ns"""
    cpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in
           ("user_annotation", "cpu_op", "Operator")]
    serving = [e for e in cpu if e.get("cat") == "user_annotation" and
               (VLLM.match(e["name"]) or SGLANG.match(e["name"]))]
    chosen = serving or [e for e in cpu if e["name"].startswith("ProfilerStep#")]
    wins = sorted(((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]) for e in chosen),
                  key=lambda w: (w[0], -w[1]))
    kept = []
    for w in wins:
        if kept and w[0] < kept[-1][1]:
            continue
        kept.append(w)
    return kept


def describe(name):
    m = VLLM.match(name)
    if m:
        nctx, ctx_tokens, ngen = int(m.group(1)), int(m.group(2) or 0), int(m.group(3))
        total = VLLM_TOTAL.match(name)
        tokens = int(total.group(1)) if total else ctx_tokens + ngen
        kind = "mixed" if nctx and ngen else "prefill" if nctx else "decode"
        return kind, nctx + ngen, tokens
    m = SGLANG.match(name)
    if m:
        fields = dict(f.split("=") for f in m.group(2).split())
        kind = {"DECODE": "decode", "EXTEND": "prefill", "PREFILL": "prefill",
                "MIXED": "mixed"}.get(m.group(1), "unknown")
        bs = int(fields["bs"]) if "bs" in fields else None
        toks = int(fields["toks"]) if "toks" in fields else (bs if kind == "decode" else None)
        return kind, bs, toks
    return "unknown", None, None


def attributed(ev, wins):
    """per step: the GPU activities it launched, as (start, end, device, name)"""
    rt = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in RT_CATS:
            c = e.get("args", {}).get("correlation")
            if c is not None and c not in rt:
                rt[c] = ns(e["ts"])
    ops, opname, rt_ext = {}, {}, {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "Operator"):
            x = e.get("args", {}).get("External id")
            if x and x not in ops:
                ops[x] = ns(e["ts"])
                opname[x] = e["name"]
        if e.get("ph") == "X" and e.get("cat") in RT_CATS:
            a = e.get("args", {})
            if a.get("correlation") is not None and a.get("External id"):
                rt_ext.setdefault(a["correlation"], a["External id"])
    per = [[] for _ in wins]
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") not in GPU_CATS:
            continue
        a = e.get("args", {})
        launch = rt.get(a.get("correlation")) if a.get("correlation") else None
        if launch is None:
            launch = ops.get(a.get("External id")) if a.get("External id") else None
        if launch is None:
            launch = ns(e["ts"])
        # the op that launched it: its own External id, else its runtime call's
        x = a.get("External id") or rt_ext.get(a.get("correlation"))
        for k, (s, t, _) in enumerate(wins):
            if s <= launch < t:
                per[k].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), a.get("device", 0), e["name"],
                               opname.get(x)))
                break
    return per


def category_of(kernel, op):
    c = CATEGORY.get(family_of(kernel))
    return c if c else op_category(op)


def near(a, b, rel=0.01, absolute=1e-6):
    return a is not None and b is not None and abs(a - b) <= max(rel * abs(b), absolute)


def report(path):
    out = subprocess.run([kvscope, "report", path, "--format", "json"], capture_output=True,
                         text=True)
    if not check(out.returncode == 0, "%s: kvscope report exits 0" % os.path.basename(path)):
        print(out.returncode, out.stderr.strip()[-300:])
    return json.loads(out.stdout) if out.stdout.strip() else {}


def family_of(kernel):
    for pat, fam in FAMILY_OF:
        if re.search(pat, kernel):
            return fam
    return None


seen = 0
for name in sorted(os.listdir(root)):
    if not name.endswith(".json.gz"):
        continue
    seen += 1
    check(name in EXPECT_STEPS, "%s: its expected steps are written in this test" % name)
    path = os.path.join(root, name)
    ev = load(path)
    rep = report(path)
    steps = rep.get("steps", {})
    items = steps.get("items", [])
    want = EXPECT_STEPS.get(name)
    wins = step_ranges(ev)
    if want is None:
        check(steps.get("count") == 0 and not wins,
              "%s: no step markers (kvscope %s, here %d)" % (name, steps.get("count"), len(wins)))
        ids = [f["id"] for f in rep.get("findings", [])]
        check(ids == EXPECT_FINDINGS.get(name), "%s: findings %s, expected %s" % (name, ids, EXPECT_FINDINGS.get(name)))
        continue
    check(len(wins) == len(want), "%s: %d step ranges here, %d expected" % (name, len(wins), len(want)))
    check(steps.get("count") == len(want) and len(items) == len(want),
          "%s: kvscope finds %s steps, %d expected" % (name, steps.get("count"), len(want)))
    check([describe(w[2]) for w in wins] == want,
          "%s: the range names say %s" % (name, [describe(w[2]) for w in wins]))
    got = [(s.get("kind"), s.get("batch"), s.get("tokens")) for s in items]
    check(got == want, "%s: kvscope's (kind, batch, tokens) %s, expected %s" % (name, got, want))
    per = attributed(ev, wins)
    tokens = time_sum = 0.0
    for k, (w, s) in enumerate(zip(wins, items)):
        busy = 0.0
        for dev in {d for _, _, d, _, _ in per[k]}:
            busy += union([(a, b) for a, b, d, _, _ in per[k] if d == dev])
        wall = w[1] - w[0]
        span = (max(x[1] for x in per[k]) - min(x[0] for x in per[k])) if per[k] else 0
        time = max(wall, span)
        check(near(s["gpu_busy_ms"], busy / 1e6),
              "%s step %d: GPU busy %.4f ms (the work it launched), json.load says %.4f"
              % (name, k, s["gpu_busy_ms"], busy / 1e6))
        check(near(s["time_ms"], time / 1e6) and near(s["wall_ms"], wall / 1e6),
              "%s step %d: time %.4f ms (CPU range %.4f), json.load says %.4f (%.4f)"
              % (name, k, s["time_ms"], s["wall_ms"], time / 1e6, wall / 1e6))
        cat_sum = sum(s["category_ms"].values())
        dur_sum = sum(x[1] - x[0] for x in per[k]) / 1e6
        check(near(cat_sum, dur_sum),
              "%s step %d: GPU time by category adds up to %.4f ms, the launched work's %.4f"
              % (name, k, cat_sum, dur_sum))
        mine = {}
        for a, b, _, n, op in per[k]:
            c = category_of(n, op)
            mine[c] = mine.get(c, 0) + (b - a) / 1e6
        for c in set(mine) | set(s["category_ms"]):
            check(near(s["category_ms"].get(c, 0), mine.get(c, 0)),
                  "%s step %d: %s %.4f ms, json.load says %.4f" % (name, k, c, s["category_ms"].get(c, 0),
                                                                   mine.get(c, 0)))
        if s.get("tokens"):
            tokens += s["tokens"]
            time_sum += time / 1e6
    # GPU ms per step of each family, over the work the steps launched: the
    # families kvscope gives the kernel names, the sums here
    fam_of_name = {k["name"]: k["family"] for k in rep.get("kernels", [])}
    launched = [x for k in range(len(wins)) for x in per[k]]
    by_family = steps.get("by_family", {})
    check(near(sum(by_family.values()) * len(wins), sum(x[1] - x[0] for x in launched) / 1e6),
          "%s: GPU ms by family add up to the launched work" % name)
    for fam, ms in by_family.items():
        if fam in OP_DECIDED:
            continue
        mine = sum(x[1] - x[0] for x in launched if fam_of_name.get(x[3]) == fam) / 1e6 / len(wins)
        check(near(ms, mine), "%s: family %s %.4f ms/step, json.load says %.4f" % (name, fam, ms, mine))
    ids = [f["id"] for f in rep.get("findings", [])]
    check(ids == EXPECT_FINDINGS.get(name), "%s: findings %s, expected %s" % (name, ids, EXPECT_FINDINGS.get(name)))
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    with_stack = bool(doc.get("with_stack")) if isinstance(doc, dict) else False
    check(rep.get("trace", {}).get("with_stack") == with_stack,
          "%s: trace.with_stack %s, the header says %s" % (name, rep.get("trace", {}).get("with_stack"), with_stack))
    for f in rep.get("findings", []):
        check(bool(f.get("evidence")) and bool(f.get("fix")), "%s: %s has evidence and a fix" % (name, f["id"]))
        if f["id"] == "low_bandwidth_efficiency" and "Float8" not in json.dumps(rep.get("groups")):
            check("FP8" not in f["fix"] and "e4m3" not in f["fix"],
                  "%s: no FP8 advice for a copy without FP8: %s" % (name, f["fix"]))
        if f["id"] == "gpu_idle" and with_stack:
            check("with_stack" in f["evidence"], "%s: gpu_idle notes with_stack" % name)
    if name.startswith("tracelens__inference__sglang_decode__sglang"):
        # the blocking copy, named, and its GPU-idle time from the raw events
        call = [e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "hipMemcpyWithStream"]
        f = [x for x in rep.get("findings", []) if x["id"] == "host_blocking"]
        if check(len(call) == 1 and len(f) == 1, "%s: one hipMemcpyWithStream, one host_blocking" % name):
            a, b = ns(call[0]["ts"]), ns(call[0]["ts"]) + ns(call[0]["dur"])
            w0, w1 = wins[0][0], wins[0][0] + int(round(items[0]["time_ms"] * 1e6))
            a, b = max(a, w0), min(b, w1)
            gpu = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in ev
                   if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
            inside = [(max(x, a), min(y, b)) for x, y in gpu if y > a and x < b]
            idle = (b - a) - union(inside)
            check("hipMemcpyWithStream" in f[0]["message"] and "synchronous copy" in f[0]["message"],
                  "%s: host_blocking names the call: %s" % (name, f[0]["message"]))
            check(near(f[0]["gpu_ms_per_step"], idle / 1e6),
                  "%s: host-wait %.3f ms, json.load says %.3f" % (name, f[0]["gpu_ms_per_step"], idle / 1e6))
    if time_sum:
        check(near(steps.get("tokens_per_s"), tokens * 1000 / time_sum),
              "%s: %.1f tokens/s, json.load says %.1f" % (name, steps.get("tokens_per_s") or 0,
                                                          tokens * 1000 / time_sum))

check(seen == len(EXPECT_STEPS), "%d traces in %s, %d written down here" % (seen, root, len(EXPECT_STEPS)))

# the GPU runs behind the CPU in vLLM's graph steps: a 2.4 ms CPU range whose
# graph's kernels run 10.7 ms later is busy, not idle (clipping to the CPU
# range called it 0.3% busy)
for name in ("tracelens__inference__vllm_decode_full__graph_execution.json.gz",
             "tracelens__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz"):
    rep = report(os.path.join(root, name))
    frac = rep.get("steps", {}).get("gpu_busy_fraction", 0)
    check(frac > 0.95, "%s: GPU busy %.1f%% of the step" % (name, 100 * frac))
    ids = [f["id"] for f in rep.get("findings", [])]
    check("gpu_idle" not in ids, "%s: no gpu_idle finding (findings: %s)" % (name, ids))

# No false labels: a leading dim is a "preallocated buffer" only for a KV
# role (a copy/cast of the cache's rows, in the cache's precision). None of
# these serving traces casts a whole KV pool, so no group is called one: not
# the H100 trace's aten::mm [8944,2816] (a GEMM activation, a memset under
# it), not the vLLM capture's triton_poi_fused__to_copy_1 [131072,64]
# float -> BFloat16 (a RoPE cos/sin table) when the capture is merged.
vllm_graph = os.path.join(root, "tracelens__inference__vllm_decode_full__graph_execution.json.gz")
vllm_capture = os.path.join(root, "tracelens__inference__vllm_decode_full__capture_traces__"
                                  "graph_capture_rank_0.1773709742341309550.pt.trace.json.gz")
merged = subprocess.run([kvscope, "report", vllm_graph, "--graph-capture", vllm_capture,
                         "--format", "json"], capture_output=True, text=True)
check(merged.returncode == 0, "vllm graph + capture: kvscope report exits 0")
labelled = {"vllm graph + capture": json.loads(merged.stdout) if merged.stdout.strip() else {}}
for name in sorted(EXPECT_STEPS):
    labelled[name] = report(os.path.join(root, name))
for name, rep in sorted(labelled.items()):
    for g in rep.get("groups", []):
        m = g.get("match") or {}
        check("preallocated" not in m.get("label", "") and not m.get("capacity_tokens"),
              "%s: %s %s is no KV buffer (label %r)" % (name, g["op"][:40], g["dims"][:1],
                                                       m.get("label")))
h100 = labelled["tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"]
check(any(g["op"] == "aten::mm" and g["dims"][:1] == [[8944, 2816]] for g in h100.get("groups", [])),
      "h100: the aten::mm [8944,2816] group is still there (its label is what is checked)")
rope = [g for g in labelled["vllm graph + capture"].get("groups", [])
        if g["op"] == "triton_poi_fused__to_copy_1" and g["dims"][:1] == [[131072, 64]]]
check(len(rope) == 1, "vllm graph + capture: the [131072,64] RoPE-table cast is a group")

# every shared trace's kernels of 3% of the GPU time or more: the family
# their library's name says
everything = os.path.join(shared, "traces")
for d, _, files in sorted(os.walk(everything)):
    for f in sorted(files):
        if not (f.endswith(".json.gz") or f.endswith(".json")):
            continue
        rep = report(os.path.join(d, f))
        for k in rep.get("kernels", []):
            if k["gpu_fraction"] < 0.03:
                continue
            want = family_of(k["name"])
            check(want is not None and k["family"] == want,
                  "%s: %.1f%% %s is %s (expected %s)" % (f, 100 * k["gpu_fraction"], k["name"][:70],
                                                        k["family"], want))

sys.exit(finish())
