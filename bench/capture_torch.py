#!/usr/bin/env python3
"""capture_torch.py — PyTorch workloads to time plain, under torch.profiler and
under `kvscope capture` (bench/capture_overhead.sh runs one process of this per
mode and round, and prints the table).

    python3 bench/capture_torch.py --label plain --profiler      # plain, then torch.profiler
    kvscope capture -o t.json -- python3 bench/capture_torch.py --label kvs_default

Workloads, each checked before it is timed, each one warm-up run then --reps
timed runs (host wall clock to the device's completion):
  launch   5000 one-element in-place adds on one stream (launch-bound)
  copy     50 device-to-device copies of 1 GiB (copy-bound)
  decode   greedy decode of a small Hugging Face transformers Llama with random
           weights (4 layers, hidden 1024, 16 heads, 4 KV heads, bf16, eager,
           DynamicCache): a 64-token prompt, then 20 one-token steps, each timed
           to the device's completion inside an NVTX range "step_N" (skipped,
           and said so, when transformers is missing)
--profiler: after every workload has run plain, run each again under
torch.profiler with CPU+CUDA activities (mode tp_cpu_cuda) and with CUDA only
(tp_cuda), one profiler session per workload and mode, its start and its
post-processing outside the timed runs; --round alternates the two modes'
order. Prints one line per mode and workload:
  RESULT proc=LABEL mode=MODE workload=W ms=MEDIAN n=N [gbps=G]
(launch/copy: median run; decode: median step over all runs).
"""
import argparse
import statistics
import sys
import time
import traceback

import torch

LAUNCHES = 5000
COPIES = 50
COPY_BYTES = 1 << 30
PROMPT, STEPS = 64, 20


def sync_ms(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


class Launch:
    name = "launch"

    def __init__(self):
        self.x = torch.zeros(1, device="cuda", dtype=torch.int32)
        self.loop()
        torch.cuda.synchronize()
        assert int(self.x.item()) == LAUNCHES, "launch loop: %d adds, wanted %d" % (
            int(self.x.item()), LAUNCHES)

    def loop(self):
        x = self.x
        for _ in range(LAUNCHES):
            x.add_(1)

    def run(self, reps):
        self.loop()  # warm-up
        return [sync_ms(self.loop) for _ in range(reps)], {}


class Copy:
    name = "copy"

    def __init__(self):
        self.src = torch.randint(0, 256, (COPY_BYTES,), device="cuda", dtype=torch.uint8)
        self.dst = torch.empty_like(self.src)
        self.dst.copy_(self.src)
        for at in (0, COPY_BYTES // 2 + 7, COPY_BYTES - 1):
            assert int(self.dst[at]) == int(self.src[at]), "copy differs at byte %d" % at
        assert torch.equal(self.dst[-4096:], self.src[-4096:])

    def loop(self):
        for _ in range(COPIES):
            self.dst.copy_(self.src)

    def run(self, reps):
        self.loop()
        t = [sync_ms(self.loop) for _ in range(reps)]
        gbps = 2 * COPY_BYTES * COPIES / (statistics.median(t) / 1e3) / 1e9
        return t, {"gbps": "%.0f" % gbps}


class Decode:
    name = "decode"

    def __init__(self):
        from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM
        self.cache_cls = DynamicCache
        cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                          num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                          max_position_embeddings=2048)
        torch.manual_seed(0)
        with torch.device("cuda"):
            self.model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
        self.prompt = torch.randint(0, cfg.vocab_size, (1, PROMPT), device="cuda")
        # check: the cached decode's next-token logits match a full forward
        with torch.inference_mode():
            toks, _ = self.generate(timed=False)
            seq = torch.cat([self.prompt, toks[:, :-1]], dim=1)
            full = self.model(input_ids=seq).logits[0, PROMPT - 1:].float()
            ref = full.argmax(-1)
            agree = (ref == toks[0]).float().mean().item()
        print("check decode: %.0f%% of %d greedy tokens agree with a cache-free forward"
              % (100 * agree, STEPS + 1), file=sys.stderr)
        # bf16 and near-tied random logits flip a few; a broken cache agrees ~never
        assert agree >= 0.5, "the cached decode disagrees with a full forward"

    def generate(self, timed):
        cache = self.cache_cls()
        out = self.model(input_ids=self.prompt, past_key_values=cache, use_cache=True)
        tok = out.logits[:, -1:].argmax(-1)
        toks, times = [tok], []
        torch.cuda.synchronize()
        for s in range(STEPS):
            t0 = time.perf_counter()
            torch.cuda.nvtx.range_push("step_%d" % s)
            out = self.model(input_ids=tok, past_key_values=cache, use_cache=True)
            tok = out.logits[:, -1:].argmax(-1)
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
            toks.append(tok)
        return torch.cat(toks, dim=1), times

    def run(self, reps):
        t = []
        with torch.inference_mode():
            self.generate(timed=False)
            for _ in range(reps):
                t += self.generate(timed=True)[1]
        return t, {}


def report(label, mode, w, times, extra):
    kv = "".join(" %s=%s" % (k, v) for k, v in extra.items())
    print("RESULT proc=%s mode=%s workload=%s ms=%.4f n=%d%s"
          % (label, mode, w.name, statistics.median(times), len(times), kv), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--label", default="plain")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--decode-reps", type=int, default=3)
    p.add_argument("--workloads", default="launch,copy,decode")
    p.add_argument("--profiler", action="store_true")
    p.add_argument("--round", type=int, default=0)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 77
    works = []
    for name in a.workloads.split(","):
        cls = {"launch": Launch, "copy": Copy, "decode": Decode}[name]
        try:
            works.append(cls())
        except ImportError as e:  # transformers missing: said, and the rest still runs
            print("SKIP workload=%s reason=%s" % (name, str(e).replace(" ", "_")), flush=True)
        except Exception as e:  # another transformers than this was written for
            if name != "decode":
                raise
            traceback.print_exc()
            print("SKIP workload=decode reason=%s" % type(e).__name__, flush=True)
    reps = lambda w: a.decode_reps if w.name == "decode" else a.reps
    for w in works:  # plain first: no profiler has run in this process yet
        report(a.label, "plain", w, *w.run(reps(w)))
    if not a.profiler:
        return 0
    from torch.profiler import ProfilerActivity, profile
    modes = [("tp_cpu_cuda", [ProfilerActivity.CPU, ProfilerActivity.CUDA]),
             ("tp_cuda", [ProfilerActivity.CUDA])]
    if a.round % 2:
        modes.reverse()
    with profile(activities=modes[0][1]):  # Kineto's one-time start-up, untimed
        torch.ones(1, device="cuda").add_(1)
        torch.cuda.synchronize()
    for w in works:
        for mode, acts in modes:
            with profile(activities=acts) as prof:
                times, extra = w.run(reps(w))
            report(a.label, mode, w, times, extra)
            del prof
    return 0


if __name__ == "__main__":
    sys.exit(main())
