#!/usr/bin/env python3
"""capture_torch.py — a small PyTorch decode-like loop to trace with
`kvscope capture` (bench/capture_overhead.sh runs it with and without).

    python3 bench/capture_torch.py --steps 20
    kvscope capture -o torch.json.gz -- python3 bench/capture_torch.py

Each step (NVTX range "step_N") runs L layers (NVTX "layer_i"): the FP8 KV
pool of the layer cast to BF16 in full (the bug kvscope is built around,
`aten::copy_` [131072, 1, 576]), two GEMVs, a SiLU. Prints the median step
time (CUDA events) after a warm-up: RESULT torch_step_ms=...
--with-profiler also turns on torch.profiler around the loop, to see how
the two CUPTI clients get along (only one can hold CUPTI).
"""
import argparse
import statistics
import sys

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--capacity", type=int, default=131072)
    p.add_argument("--with-profiler", action="store_true")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 77
    dev = "cuda"
    kv = [torch.randn(a.capacity, 1, 576, device=dev).to(torch.float8_e4m3fn)
          for _ in range(a.layers)]
    w1 = torch.randn(6144, 2048, device=dev, dtype=torch.bfloat16) * 0.01
    w2 = torch.randn(2048, 6144, device=dev, dtype=torch.bfloat16) * 0.01
    x = torch.randn(1, 6144, device=dev, dtype=torch.bfloat16)
    # correctness of the cast before timing anything
    ref = kv[0][:4].float().to(torch.bfloat16)
    assert torch.equal(kv[0][:4].to(torch.bfloat16), ref)

    def step(n):
        nonlocal x
        torch.cuda.nvtx.range_push(f"step_{n}")
        for i in range(a.layers):
            torch.cuda.nvtx.range_push(f"layer_{i}")
            k = kv[i].to(torch.bfloat16)          # the full-buffer cast
            h = torch.nn.functional.silu(x @ w1)
            x = (h @ w2) + k[:1, 0, :1].sum() * 0  # use k so it is not optimised away
            torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()

    prof = None
    if a.with_profiler:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
    for n in range(2):
        step(-1 - n)
    torch.cuda.synchronize()
    times = []
    for n in range(a.steps):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        step(n)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    if prof is not None:
        prof.__exit__(None, None, None)
        print("torch.profiler saw %d CUDA events" % len(prof.events()), file=sys.stderr)
    print("RESULT torch_step_ms=%.4f steps=%d layers=%d capacity=%d"
          % (statistics.median(times), a.steps, a.layers, a.capacity))
    return 0


if __name__ == "__main__":
    sys.exit(main())
