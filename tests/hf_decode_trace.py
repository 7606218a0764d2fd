#!/usr/bin/env python3
"""tests/hf_decode_trace.py — write a Chrome-trace JSON file shaped like a
torch.profiler trace of Hugging Face transformers decode with sdpa
attention (record_shapes=True), for tests/test_kv_read.py:

    python3 tests/hf_decode_trace.py OUT.json --cache static|dynamic
        [--capacity 8192] [--active 520] [--steps 4] [--layers 4]
        [--heads 16] [--kv-heads 16] [--dk 192] [--dv 128] [--prefill N]
        [--repeat-kv] [--mask-cat]

Per ProfilerStep#N (one decode token) and layer: the cache update
(aten::index_copy_ of the new key and value into a StaticCache's
[1,Hkv,capacity,D] tensors; aten::cat onto a DynamicCache's growing
[1,Hkv,S,D] ones), optionally repeat_kv's copy of the cache to all heads
(aten::clone of [1,Hkv,H/Hkv,S,D], GQA without enable_gqa), then
aten::scaled_dot_product_attention ->
aten::_scaled_dot_product_efficient_attention -> aten::_efficient_attention_forward
([B,S,H,D] layout) whose fmha kernel carries the innermost op's External id,
and an o_proj aten::mm. Kernel times follow the bytes they move at 3 TB/s (so
the attention over 8192 slots is 16x slower than over 520). --mask-cat
writes the growing 2-D attention mask generate() extends each step
(aten::cat [[1,n-1],[1,1]] int64); --prefill N writes a prefill step (query
length N, N new keys written into the cache) before the decode steps.
"""
import argparse
import json

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--cache", choices=("static", "dynamic"), required=True)
p.add_argument("--capacity", type=int, default=8192)
p.add_argument("--active", type=int, default=520)
p.add_argument("--steps", type=int, default=4)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--heads", type=int, default=16)
p.add_argument("--kv-heads", type=int, default=16)
p.add_argument("--dk", type=int, default=192)
p.add_argument("--dv", type=int, default=128)
p.add_argument("--prefill", type=int, default=0)
p.add_argument("--repeat-kv", action="store_true")
p.add_argument("--mask-cat", action="store_true", help="write generate()'s growing 2-D mask cat")
a = p.parse_args()

BF = "c10::BFloat16"
ev = []
ext = [1000]
corr = [1]


def op(name, ts, dur, dims, types, tid=1):
    ext[0] += 1
    ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
               "args": {"External id": ext[0], "Input Dims": dims, "Input type": types}})
    return ext[0]


def kernel(name, x, launch_ts, gpu_ts, dur):
    c = corr[0]
    corr[0] += 1
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
               "ts": launch_ts, "dur": 4, "args": {"correlation": c, "External id": x}})
    ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": gpu_ts, "dur": dur,
               "args": {"correlation": c, "External id": x, "device": 0, "stream": 7,
                        "grid": [1, 1, 1], "block": [128, 1, 1]}})


def us_for(nbytes):
    """microseconds to move nbytes at 3 TB/s (3e6 bytes per us), at least 2"""
    return max(2.0, round(nbytes / 3e6, 3))


H, HKV, DK, DV = a.heads, a.kv_heads, a.dk, a.dv
t = 1000.0
gt = 1000.0
steps = []
if a.prefill:
    steps.append(("prefill", a.prefill, a.prefill))
for s in range(a.steps):
    steps.append(("decode", 1, (a.prefill or a.active) + s + (1 if a.prefill else 0)))
for si, (kind, lq, active) in enumerate(steps):
    step_start = t
    cpu = t + 5
    gpu = max(gt, t + 10)
    S = a.capacity if a.cache == "static" else active
    if a.mask_cat:
        x = op("aten::cat", cpu, 6, [[[1, active - 1], [1, 1]], []], ["TensorList", "Scalar"])
        kernel("void at::native::CatArrayBatchedCopy<int, unsigned int, 2, 128, 1>(...)", x, cpu + 1, gpu, 2)
        cpu += 8
        gpu += 3
    for layer in range(a.layers):
        # q/k/v projection
        x = op("aten::mm", cpu, 8, [[lq, 2048], [2048, H * DK]], [BF, BF])
        kernel("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", x, cpu + 2, gpu, 12)
        cpu += 10
        gpu += 13
        for name, d in (("k", DK), ("v", DV)):
            if a.cache == "static":
                x = op("aten::index_copy_", cpu, 6, [[1, HKV, S, d], [], [lq], [1, HKV, lq, d]],
                       [BF, "Scalar", "long int", BF])
                kernel("void at::native::index_copy_kernel_impl<at::native::OpaqueType<2> >(...)", x,
                       cpu + 1, gpu, 2)
            else:
                x = op("aten::cat", cpu, 6, [[[1, HKV, S - lq, d], [1, HKV, lq, d]], []], ["TensorList", "Scalar"])
                kernel("void at::native::CatArrayBatchedCopy<at::native::OpaqueType<2>, unsigned int, 4, 64, 64>(...)",
                       x, cpu + 1, gpu, us_for(2 * HKV * S * d * 2))
            cpu += 8
            gpu += 3
        kh = HKV
        if a.repeat_kv and HKV != H:
            n = H // HKV
            for d in (DK, DV):
                x = op("aten::clone", cpu, 9, [[1, HKV, n, S, d], []], [BF, ""])
                c2 = op("aten::copy_", cpu + 2, 5, [[1, HKV, n, S, d], [1, HKV, n, S, d], []], [BF, BF, "Scalar"])
                kernel("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})",
                       c2, cpu + 3, gpu, us_for(2 * H * S * d * 2))
                gpu += us_for(2 * H * S * d * 2) + 1
                cpu += 11
            kh = H
        kv_bytes = kh * S * (DK + DV) * 2
        fdur = us_for(kv_bytes)
        mask = [1, 1, lq, S]
        x0 = op("aten::scaled_dot_product_attention", cpu, 30,
                [[1, H, lq, DK], [1, kh, S, DK], [1, kh, S, DV], mask, [], [], [], []],
                [BF, BF, BF, BF, "Scalar", "Scalar", "Scalar", "Scalar"])
        x1 = op("aten::_scaled_dot_product_efficient_attention", cpu + 3, 25,
                [[1, H, lq, DK], [1, kh, S, DK], [1, kh, S, DV], [1, H, lq, S], [], [], [], []],
                [BF, BF, BF, BF, "Scalar", "Scalar", "Scalar", "Scalar"])
        x2 = op("aten::_efficient_attention_forward", cpu + 6, 18,
                [[1, lq, H, DK], [1, S, kh, DK], [1, S, kh, DV], [1, H, lq, S], [], [], [], [], [], [], [], [], []],
                [BF, BF, BF, BF, "", "", "Scalar", "Scalar", "Scalar", "Scalar", "", "", ""])
        kernel("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)",
               x2, cpu + 10, gpu, fdur)
        cpu += 32
        gpu += fdur + 1
        x = op("aten::mm", cpu, 8, [[lq, H * DV], [H * DV, 2048]], [BF, BF])
        kernel("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", x, cpu + 2, gpu, 10)
        cpu += 10
        gpu += 11
    t = max(cpu, gpu) + 20
    gt = gpu
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % si, "pid": 1, "tid": 1,
               "ts": step_start, "dur": t - step_start})
    t += 5
doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": ev}
with open(a.out, "w") as f:
    json.dump(doc, f)
