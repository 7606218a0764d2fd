#!/usr/bin/env python3
"""bench/capture_torch.py — PyTorch workloads timed plain and profiled in
paired rounds inside ONE process (bench/capture_overhead.sh runs one process
per profiler and prints the table with bench/capture_table.py).

    python3 bench/capture_torch.py --label torch --modes plain,tp_cpu_cuda,tp_cuda
    kvscope capture --window cudaProfilerStart --torch-ops on --max-buffers 512 -o t.json -- \
        python3 bench/capture_torch.py --label kvs_torch --modes plain,kvs
    kvscope capture --window cudaProfilerStart --max-buffers 512 -o t.json -- \
        python3 bench/capture_torch.py --label kvs_default --modes plain,kvs
    python3 bench/capture_torch.py --label bare_start --modes plain

Workloads, each checked before anything is timed:
  launch   1000 one-element in-place adds on one stream (launch-bound)
  copy     10 device-to-device copies of 1 GiB (copy-bound)
  decode   greedy decode of a small Hugging Face transformers Llama with random
           weights (4 layers, hidden 1024, 16 heads, 4 KV heads, bf16, eager,
           DynamicCache): a 64-token prompt, then 12 one-token steps, each timed
           to the device's completion inside an NVTX range "step_N" (skipped,
           and said so, when transformers is missing)
A measurement is short, so that it pairs tightly with its plain neighbour
(launch times on the H200 switch between two levels from one moment to the
next): --reps repetitions (default 1; decode: --decode-reps generations,
default 1) timed to the device's completion (host wall clock); its figure is
the median repetition (decode: the median step of the generation).
A round measures, for each workload, every mode once, the modes' order
turning each round; round 0 is a warm-up round, then --rounds rounds
(default KVS_BENCH_ROUNDS, else 40). Modes:
  plain        nothing around the measurement
  tp_cpu_cuda  inside its own torch.profiler session, CPU+CUDA activities
  tp_cuda      the same, CUDA activities only
  tp_shapes    CPU+CUDA with record_shapes=True (what kvscope's torch ops
               record: the torch-ops comparison)
  kvs          between torch.cuda.profiler.start() and .stop()
               (cudaProfilerStart/Stop: `kvscope capture --window
               cudaProfilerStart` records only there; refused otherwise)
Each profiled measurement synchronizes, starts its profiler, is timed, then
stops it: starting, stopping and collecting the trace are never timed.
Prints one line per measurement:
  RESULT proc=LABEL round=R mode=MODE workload=W ms=MEDIAN n=N [gbps=G]
SETUP proc=LABEL seconds=S (import, model build, checks) and CONFIG
proc=LABEL launches=... (the workloads' sizes). Exit 77
without a CUDA device, 2 on bad arguments.
"""
import argparse
import os
import statistics
import sys
import time
import traceback

T_START = time.perf_counter()  # SETUP counts torch's import too
import torch  # noqa: E402

LAUNCHES = 1000  # a measurement: short, so that it pairs tightly with its neighbour
COPIES = 10
COPY_BYTES = 1 << 30
PROMPT, STEPS = 64, 12


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
            for _ in range(reps):
                t += self.generate(timed=True)[1]
        return t, {}


def report(label, rnd, mode, w, times, extra):
    kv = "".join(" %s=%s" % (k, v) for k, v in extra.items())
    print("RESULT proc=%s round=%d mode=%s workload=%s ms=%.4f n=%d%s"
          % (label, rnd, mode, w.name, statistics.median(times), len(times), kv), flush=True)


def measure(mode, w, reps):
    """one measurement of w in mode: (times, extra); the profiler around it untimed"""
    if mode == "plain":
        return w.run(reps)
    torch.cuda.synchronize()
    if mode == "kvs":
        torch.cuda.profiler.start()  # cudaProfilerStart: kvscope's window opens
        try:
            return w.run(reps)  # ends synchronized
        finally:
            torch.cuda.profiler.stop()
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CUDA] if mode == "tp_cuda" else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    prof = profile(activities=acts, record_shapes=True) if mode == "tp_shapes" else profile(activities=acts)
    prof.start()
    try:
        return w.run(reps)
    finally:
        prof.stop()  # Kineto collects its trace here, outside the timed runs
        del prof


MODES = ("plain", "tp_cpu_cuda", "tp_cuda", "tp_shapes", "kvs")


def main():
    p = argparse.ArgumentParser(description="PyTorch workloads, plain and profiled, in paired rounds "
                                "(bench/capture_overhead.sh runs it)")
    p.add_argument("--label", default="bare", help="the proc= of every line")
    p.add_argument("--modes", default="plain", help="comma-separated, of: " + ", ".join(MODES))
    p.add_argument("--rounds", type=int, default=int(os.environ.get("KVS_BENCH_ROUNDS", "40")),
                   help="timed rounds after the warm-up round (default KVS_BENCH_ROUNDS, else 40)")
    p.add_argument("--reps", type=int, default=1, help="timed repetitions of launch and copy a measurement")
    p.add_argument("--decode-reps", type=int, default=1, help="timed generations of decode a measurement")
    p.add_argument("--workloads", default="launch,copy,decode")
    p.add_argument("--settle-ms", type=float, default=0.0,
                   help="sleep this long before each measurement (every process alike), so that"
                   " the plain measurement after a window times the state between windows, not"
                   " what the window's close sets going (docs/capture.md)")
    a = p.parse_args()
    modes = a.modes.split(",")
    bad = [m for m in modes if m not in MODES] + [w for w in a.workloads.split(",")
                                                  if w not in ("launch", "copy", "decode")]
    if bad or a.rounds < 1 or a.reps < 1 or a.decode_reps < 1:
        p.error("unknown mode or workload %s, or a count below 1" % ",".join(bad))
    if "kvs" in modes and os.environ.get("KVS_CAPTURE_WINDOW") != "cudaProfilerStart":
        p.error("mode kvs runs under `kvscope capture --window cudaProfilerStart` (its window"
                " is the profiled measurement); without it kvs would time plain runs")
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 77
    works = []
    for name in a.workloads.split(","):
        cls = {"launch": Launch, "copy": Copy, "decode": Decode}[name]
        try:
            works.append(cls())
        except ImportError as e:  # transformers missing: said, and the rest still runs
            print("SKIP proc=%s workload=%s reason=%s" % (a.label, name, str(e).replace(" ", "_")),
                  flush=True)
        except Exception as e:  # another transformers than this was written for
            if name != "decode":
                raise
            traceback.print_exc()
            print("SKIP proc=%s workload=decode reason=%s" % (a.label, type(e).__name__), flush=True)
    print("SETUP proc=%s seconds=%.1f" % (a.label, time.perf_counter() - T_START), flush=True)
    print("CONFIG proc=%s launches=%d copies=%d copy_gib=%g steps=%d reps=%d decode_reps=%d"
          % (a.label, LAUNCHES, COPIES, COPY_BYTES / (1 << 30), STEPS, a.reps, a.decode_reps), flush=True)
    reps = lambda w: a.decode_reps if w.name == "decode" else a.reps
    for r in range(a.rounds + 1):  # round 0: the warm-up round (Kineto's and CUPTI's first start)
        order = modes[r % len(modes):] + modes[:r % len(modes)]
        for w in works:
            for mode in order:
                if a.settle_ms > 0:
                    time.sleep(a.settle_ms / 1000.0)
                report(a.label, r, mode, w, *measure(mode, w, reps(w)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
