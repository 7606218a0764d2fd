#!/usr/bin/env python3
"""examples/torch_mla_decode.py — an MLA-style decode loop in plain PyTorch with
an FP8 KV cache, profiled with torch.profiler (record_shapes=True) and saved
as a Chrome trace for `kvscope report`: how to use kvscope when your engine is
PyTorch. examples/5_pytorch_profiler.sh runs it for both KV paths and reads
the traces. Needs torch with CUDA and an NVIDIA GPU (~7 GB).

    python3 examples/torch_mla_decode.py --kv-path full-cast   -o out/torch_full-cast.json.gz
    python3 examples/torch_mla_decode.py --kv-path active-cast -o out/torch_active-cast.json.gz
    kvscope report out/torch_full-cast.json.gz --model glm5 --kv-capacity 131072 --batch 1

One decode step, per layer (a `layer_N` range), GLM-5's attention shapes
(absorbed MLA: 64 heads, latent 512 + rope 64 = 576 per cached token):
  q     = absorbed query [B, 64, 576] from the hidden state
  cache = the new token's latent row appended to the layer's FP8 e4m3 pool
          [capacity, 1, 576] at a free slot (the pool is preallocated)
  K     full-cast:   pool.to(bfloat16) — the WHOLE pool, every layer (the bug:
                     aten::copy_ [[capacity,1,576],[capacity,1,576]]
                     BFloat16 <- Float8_e4m3fn), then the active rows
        active-cast: pool.index_select(active rows), then .to(bfloat16) (the fix)
  out   = softmax(q K^T / 16) K[..., :512], then per-head up-projection, o_proj
  mlp   = two GEMVs (a stand-in for the MoE experts)
Weights are synthetic and shared by all layers to keep the example small (a
real model reads a different set per layer). The active tokens are scattered
over the pool, as in a long-running server. Before profiling, the two paths'
attention outputs are checked against each other, and unprofiled steps are
timed with CUDA events (median).
"""
import argparse
import gzip
import os
import shutil
import statistics
import sys
import tempfile

import torch

ROPE, LATENT = 64, 512
ROW = LATENT + ROPE  # 576


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kv-path", choices=["full-cast", "active-cast"], default="full-cast")
    p.add_argument("-o", "--output", default="torch_mla_decode.json.gz",
                   help="Chrome trace to write (.gz compresses)")
    p.add_argument("--layers", type=int, default=78)
    p.add_argument("--capacity", type=int, default=131072, help="KV pool tokens per layer")
    p.add_argument("--context", type=int, default=4096, help="tokens per sequence before decode")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=64)
    p.add_argument("--hidden", type=int, default=6144)
    p.add_argument("--steps", type=int, default=4, help="profiled decode steps")
    return p.parse_args()


class Model:
    """Synthetic weights (one set for every layer) and one FP8 pool per layer."""

    def __init__(self, a, dev):
        g = torch.Generator(device=dev).manual_seed(1)
        bf = torch.bfloat16

        def w(*shape):
            return (torch.randn(*shape, device=dev, generator=g) * shape[-2] ** -0.5).to(bf)

        h, H = a.hidden, a.heads
        self.wq_a = w(h, 2048)
        self.wq_b = w(2048, H * (192 + ROPE))
        self.w_uk = w(H, 192, LATENT)          # absorbs the key up-projection into q
        self.wkv_a = w(h, ROW)
        self.w_uv = w(H, LATENT, 256)          # value up-projection, per head
        self.wo = w(H * 256, h)
        self.w_up = w(h, 2048)
        self.w_down = w(2048, h)
        self.pool = [(torch.randn(a.capacity, 1, ROW, device=dev, generator=g) * 0.5)
                     .to(torch.float8_e4m3fn) for _ in range(a.layers)]
        # each sequence's slots: a scattered run of the pool, room for the decode steps
        total = a.batch * (a.context + a.steps + 16)  # + warm-up and timed steps
        if total > a.capacity:
            sys.exit("torch_mla_decode: batch x (context + steps) exceeds --capacity")
        perm = torch.randperm(a.capacity, device=dev, generator=g)[:total]
        self.slots = perm.view(a.batch, -1)
        self.length = a.context  # tokens per sequence so far


def attention(m, a, l, q, path):
    """Scores of q [B, H, 576] against each sequence's rows of layer l's pool."""
    n = m.length
    idx = m.slots[:, :n].reshape(-1)                       # [B*n] active rows
    if path == "full-cast":
        k = m.pool[l].to(torch.bfloat16)[idx]              # casts the whole pool
    else:
        k = m.pool[l].index_select(0, idx).to(torch.bfloat16)   # gather, then cast
    k = k.view(a.batch, n, ROW)
    s = torch.einsum("bhd,bnd->bhn", q, k).float() * (1.0 / 16.0)
    p = torch.softmax(s, dim=-1).to(torch.bfloat16)
    return torch.einsum("bhn,bnd->bhd", p, k[..., :LATENT])  # [B, H, 512]


def decode_step(m, a, x, path):
    B, H = a.batch, a.heads
    new = m.slots[:, m.length]                              # one new slot per sequence
    for l in range(a.layers):
        with torch.profiler.record_function("layer_%d" % l):
            q = (x @ m.wq_a) @ m.wq_b
            q = q.view(B, H, 192 + ROPE)
            q_lat = torch.einsum("bhd,hdl->bhl", q[..., :192], m.w_uk)
            q = torch.cat([q_lat, q[..., 192:]], dim=-1)    # [B, H, 576]
            row = (x @ m.wkv_a).to(torch.float8_e4m3fn).view(B, 1, ROW)
            # append through a byte view: index_copy_ on uint8 is supported everywhere
            m.pool[l].view(torch.uint8).index_copy_(0, new, row.view(torch.uint8))
            o = attention(m, a, l, q, path)
            o = torch.einsum("bhl,hlv->bhv", o, m.w_uv).reshape(B, H * 256)
            x = x + o @ m.wo
            x = x + torch.nn.functional.silu(x @ m.w_up) @ m.w_down
            x = x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype)
    m.length += 1
    return x


def main():
    a = parse()
    if not torch.cuda.is_available():
        print("torch_mla_decode: no CUDA device", file=sys.stderr)
        return 77
    dev = "cuda"
    m = Model(a, dev)
    x = torch.randn(a.batch, a.hidden, device=dev).to(torch.bfloat16) * 0.1

    # the two KV paths attend to the same rows: check before measuring anything
    q = torch.randn(a.batch, a.heads, ROW, device=dev).to(torch.bfloat16)
    torch.testing.assert_close(attention(m, a, 0, q, "full-cast"),
                               attention(m, a, 0, q, "active-cast"), rtol=1e-3, atol=1e-3)
    print("check: full-cast and active-cast attention agree on layer 0")

    # unprofiled steps, CUDA events, after a warm-up
    x = decode_step(m, a, x, a.kv_path)
    times = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        x = decode_step(m, a, x, a.kv_path)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    print("%s: %.3f ms per step unprofiled (median of 5), %d layers, batch %d, KV pool %d tokens, "
          "%d active per sequence" % (a.kv_path, statistics.median(times), a.layers, a.batch,
                                      a.capacity, m.length))

    # the profiled steps: ProfilerStep#N from prof.step(), shapes from record_shapes
    tmp = tempfile.NamedTemporaryFile(suffix=".json", delete=False)
    tmp.close()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    sched = torch.profiler.schedule(wait=1, warmup=1, active=a.steps, repeat=1)
    with torch.profiler.profile(activities=acts, record_shapes=True, schedule=sched,
                                on_trace_ready=lambda p: p.export_chrome_trace(tmp.name)) as prof:
        for _ in range(2 + a.steps):
            x = decode_step(m, a, x, a.kv_path)
            torch.cuda.synchronize()
            prof.step()
    out = a.output
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    if out.endswith(".gz"):
        with open(tmp.name, "rb") as fin, gzip.open(out, "wb") as fout:
            shutil.copyfileobj(fin, fout)
        os.remove(tmp.name)
    else:
        shutil.move(tmp.name, out)
    print("trace: %s (%d profiled steps)" % (out, a.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
