#!/usr/bin/env python3
"""tests/gpu/torch_decode.py VARIANT (--profile TRACE | --kvscope) — one HF
transformers decode variant of tests/traces/h200/make_traces.py (its models,
caches and steps), recorded either way the GPU test of kvscope's torch ops
(tests/gpu/test_torch_ops_gpu.py) compares:

  --profile TRACE  torch.profiler CPU+CUDA, record_shapes=True, schedule
                   warm-up 2 / active 4 (ProfilerStep#2..#5), exported to
                   TRACE (.json.gz); the graph variant also writes
                   TRACE's name with _capture (the profile of the capture)
  --kvscope        no profiler: run under `kvscope capture --window
                   cudaProfilerStart`; the 4 steps after the same 2 warm-up
                   steps inside torch.cuda.profiler.start()/stop(), each
                   iteration in record_function("ProfilerStep#N"): the
                   profiler's names over the span its steps cover

The same work either way: prefill (512 tokens), compile/capture warm-ups,
2 warm-up steps, a synchronize, 4 recorded steps (without the synchronize
the profiler's trace held the last warm-up step's GPU work, still running
as its recording began: 162 kernels outside its steps in the graph
variant). Prints one line of what ran.
"""
import argparse
import gzip
import os
import shutil
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "traces", "h200"))
import make_traces as mt  # noqa: E402  (make_model, make_cache, PROMPT, WARM, ACTIVE)


class Profiler:
    """torch.profiler over the steps, as make_traces.py records them"""

    def __init__(self, path):
        self.path = path
        sched = torch.profiler.schedule(wait=0, warmup=mt.WARM, active=mt.ACTIVE, repeat=1)
        self.prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            record_shapes=True, schedule=sched)

    def __enter__(self):
        self.prof.__enter__()
        return self

    def begin(self, i):
        pass  # ProfilerStep#i began at the previous prof.step()

    def end(self, i):
        if i == mt.WARM - 1:  # as Kvscope.begin(WARM): the recorded steps start on an idle GPU
            torch.cuda.synchronize()
        self.prof.step()

    def __exit__(self, *a):
        self.prof.__exit__(*a)

    def capture_profile(self):
        return torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            record_shapes=True)

    def save(self):
        export(self.prof, self.path)


class Kvscope:
    """kvscope's window (cudaProfilerStart/Stop) over the recorded steps"""

    def __init__(self):
        self.on = False
        self.rf = None

    def __enter__(self):
        return self

    def begin(self, i):
        if i == mt.WARM:
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            self.on = True
        if i >= mt.WARM:  # the span the profiler's ProfilerStep#i covers: the whole iteration
            self.rf = torch.autograd.profiler.record_function("ProfilerStep#%d" % i)
            self.rf.__enter__()

    def end(self, i):
        if self.rf is not None:
            self.rf.__exit__(None, None, None)
            self.rf = None

    def __exit__(self, *a):
        torch.cuda.synchronize()
        if self.on:
            torch.cuda.profiler.stop()

    def capture_profile(self):
        return None

    def save(self):
        pass


def export(prof, path):
    raw = path[:-3] if path.endswith(".gz") else path
    prof.export_chrome_trace(raw)
    if raw != path:
        with open(raw, "rb") as fi, gzip.open(path, "wb", compresslevel=6) as fo:
            shutil.copyfileobj(fi, fo)
        os.remove(raw)


def run(variant, rec, capture_path):
    model_kind, cache_kind, mode = variant.split("_")
    model, cfg = mt.make_model(model_kind)
    cache = mt.make_cache(cache_kind, model, cfg)
    g = torch.Generator(device="cuda").manual_seed(1)
    prompt = torch.randint(0, cfg.vocab_size, (1, mt.PROMPT), device="cuda", generator=g)
    with torch.no_grad():
        out0 = model(input_ids=prompt, past_key_values=cache, use_cache=True,
                     cache_position=torch.arange(mt.PROMPT, device="cuda"))
    tok = out0.logits[:, -1:].argmax(-1)
    pos = mt.PROMPT

    def eager_step(tok, cpos):
        o = model(input_ids=tok, past_key_values=cache, use_cache=True, cache_position=cpos)
        return o.logits[:, -1:].argmax(-1)

    step = eager_step
    if mode == "compile":
        import torch._dynamo as dynamo
        dynamo.config.cache_size_limit = 64
        if cache_kind == "static":
            cstep = torch.compile(eager_step, mode="reduce-overhead", fullgraph=False)

            def step(tok, cpos):
                torch.compiler.cudagraph_mark_step_begin()
                return cstep(tok, cpos).clone()
        else:
            step = torch.compile(eager_step, mode="default", dynamic=True)
        with torch.no_grad():
            for _ in range(3):
                tok = step(tok, torch.tensor([pos], device="cuda"))
                pos += 1
        torch.cuda.synchronize()
    if mode == "graph":
        static_tok = tok.clone()
        static_pos = torch.tensor([pos], device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(s):
            for _ in range(2):
                static_next = eager_step(static_tok, static_pos)
                static_pos += 1
                pos += 1
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        cprof = rec.capture_profile()
        if cprof is not None:
            cprof.__enter__()
        with torch.no_grad(), torch.cuda.graph(graph):
            static_next = eager_step(static_tok, static_pos)
        if cprof is not None:
            cprof.__exit__(None, None, None)
            export(cprof, capture_path)

        def step(tok, cpos):  # noqa: F811
            static_tok.copy_(tok)
            static_pos.copy_(cpos)
            graph.replay()
            return static_next.clone()

    t0 = time.time()
    with rec:
        for i in range(mt.WARM + mt.ACTIVE):
            rec.begin(i)
            with torch.no_grad():
                tok = step(tok, torch.tensor([pos], device="cuda"))
            if mode == "sync":
                t = tok.item()  # the host waits for the step: a DtoH copy + sync each step
                tok = torch.tensor([[t]], device="cuda")
            pos += 1
            rec.end(i)
    torch.cuda.synchronize()
    rec.save()
    print("variant %s torch %s steps %d active tokens %d..%d in %.1f s" % (
        variant, torch.__version__, mt.ACTIVE, pos - mt.ACTIVE, pos - 1, time.time() - t0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variant")
    ap.add_argument("--profile", metavar="TRACE")
    ap.add_argument("--kvscope", action="store_true")
    a = ap.parse_args()
    if bool(a.profile) == a.kvscope:
        ap.error("one of --profile TRACE or --kvscope")
    if a.profile:
        base = a.profile[:-8] if a.profile.endswith(".json.gz") else a.profile
        run(a.variant, Profiler(a.profile), base + "_capture.json.gz")
    else:
        run(a.variant, Kvscope(), None)


if __name__ == "__main__":
    main()
