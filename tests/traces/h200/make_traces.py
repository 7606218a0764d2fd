#!/usr/bin/env python3
"""make_traces.py OUTDIR [VARIANT ...] — real torch.profiler traces of HF
transformers decode on this GPU, for kvscope's tests (tests/traces/h200/).

Small models with random weights (seed 0), bf16, batch 1, a 512-token prompt
(prefill, not profiled), then decode steps; the profiler records 4 steps
(ProfilerStep#N) after 2 warm-up steps, record_shapes on. Variants:

  gqa_static_eager    Llama-like GQA (16 q heads, 4 kv heads, head_dim 64), StaticCache(max_cache_len 8192)
  gqa_dynamic_eager   the same with DynamicCache (attention over the active tokens)
  mla_static_eager    DeepseekV3-like MLA (16 heads, qk 128+64, v 128, kv_lora 512), StaticCache(8192)
  mla_dynamic_eager   the same with DynamicCache
  gqa_dynamic_sync    DynamicCache, the next token read on the host every step (.item())
  gqa_static_graph    one decode step captured in a torch.cuda.CUDAGraph, replayed; also
                      writes gqa_static_graph_capture (the profile of the capture itself)
  gqa_static_compile  torch.compile(mode="reduce-overhead") over the static-cache step
  gqa_dynamic_compile torch.compile(mode="default", dynamic=True) over the dynamic-cache step

Each trace is OUTDIR/<variant>.json.gz; OUTDIR/<variant>.txt says what ran
(versions, shapes, active tokens, step times from CUDA events).
"""
import gzip
import inspect
import json
import os
import shutil
import sys
import time
import traceback

import torch

PROMPT = 512
CAP = 8192
WARM = 2
ACTIVE = 4
LAYERS = 4


def log(f, *a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    f.write(s + "\n")
    f.flush()


def make_model(kind):
    import transformers
    torch.manual_seed(0)
    if kind == "gqa":
        cfg = transformers.LlamaConfig(
            hidden_size=1024, intermediate_size=2816, num_hidden_layers=LAYERS,
            num_attention_heads=16, num_key_value_heads=4, head_dim=64,
            vocab_size=32000, max_position_embeddings=16384)
    else:
        cfg = transformers.DeepseekV3Config(
            hidden_size=1024, intermediate_size=2816, moe_intermediate_size=256,
            num_hidden_layers=LAYERS, first_k_dense_replace=1, n_routed_experts=8,
            num_experts_per_tok=2, n_shared_experts=1, n_group=1, topk_group=1,
            num_attention_heads=16, num_key_value_heads=16, q_lora_rank=384,
            kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
            v_head_dim=128, vocab_size=32000, max_position_embeddings=16384)
    cfg._attn_implementation = "sdpa"
    try:
        model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16,
                                                              attn_implementation="sdpa")
    except TypeError:
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    return model.to(device="cuda", dtype=torch.bfloat16).eval(), cfg


def make_cache(kind, model, cfg):
    import transformers
    if kind == "dynamic":
        try:
            return transformers.DynamicCache(config=cfg)
        except TypeError:
            return transformers.DynamicCache()
    sig = inspect.signature(transformers.StaticCache.__init__).parameters
    kw = {"max_cache_len": CAP}
    if "config" in sig:
        kw["config"] = cfg
    if "max_batch_size" in sig:
        kw["max_batch_size"] = 1
    if "batch_size" in sig:
        kw["batch_size"] = 1
    if "device" in sig:
        kw["device"] = "cuda"
    if "dtype" in sig:
        kw["dtype"] = torch.bfloat16
    return transformers.StaticCache(**kw)


def export(prof, out, name):
    raw = os.path.join(out, name + ".json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as fi, gzip.open(raw + ".gz", "wb", compresslevel=9) as fo:
        shutil.copyfileobj(fi, fo)
    os.remove(raw)
    return os.path.getsize(raw + ".gz")


def run_variant(variant, out, f):
    model_kind, cache_kind, mode = variant.split("_")
    model, cfg = make_model(model_kind)
    cache = make_cache(cache_kind, model, cfg)
    g = torch.Generator(device="cuda").manual_seed(1)
    prompt = torch.randint(0, cfg.vocab_size, (1, PROMPT), device="cuda", generator=g)
    with torch.no_grad():
        out0 = model(input_ids=prompt, past_key_values=cache, use_cache=True,
                     cache_position=torch.arange(PROMPT, device="cuda"))
    tok = out0.logits[:, -1:].argmax(-1)
    pos = PROMPT
    log(f, "prefill done: prompt", PROMPT, "cache", type(cache).__name__,
        "capacity", CAP if cache_kind == "static" else "dynamic")

    def eager_step(tok, cpos):
        o = model(input_ids=tok, past_key_values=cache, use_cache=True, cache_position=cpos)
        return o.logits[:, -1:].argmax(-1)

    step = eager_step
    graph = None
    static_tok = static_pos = static_next = None
    if mode == "compile":
        import torch._dynamo as dynamo
        dynamo.config.cache_size_limit = 64
        if cache_kind == "static":
            cstep = torch.compile(eager_step, mode="reduce-overhead", fullgraph=False)

            def step(tok, cpos):
                # each call is a new cudagraph-trees step; the output is copied out
                # before the next replay overwrites it (PyTorch's advice)
                torch.compiler.cudagraph_mark_step_begin()
                return cstep(tok, cpos).clone()
        else:
            step = torch.compile(eager_step, mode="default", dynamic=True)
        t = time.time()
        with torch.no_grad():
            for _ in range(3):  # compile + warm the graphs
                tok = step(tok, torch.tensor([pos], device="cuda"))
                pos += 1
        torch.cuda.synchronize()
        log(f, "compiled in %.1f s" % (time.time() - t))
    if mode == "graph":
        static_tok = tok.clone()
        static_pos = torch.tensor([pos], device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(s):
            for _ in range(2):  # warm up on a side stream (allocations), as PyTorch advises
                static_next = eager_step(static_tok, static_pos)
                static_pos += 1
                pos += 1
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        # the capture itself, profiled (what vLLM/SGLang's capture traces are)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA],
                                    record_shapes=True) as cprof:
            with torch.no_grad(), torch.cuda.graph(graph):
                static_next = eager_step(static_tok, static_pos)
        n = export(cprof, out, variant + "_capture")
        log(f, "capture trace: %s_capture.json.gz %d bytes" % (variant, n))

        def step(tok, cpos):  # noqa: F811
            static_tok.copy_(tok)
            static_pos.copy_(cpos)
            graph.replay()
            return static_next.clone()

    times = []
    sched = torch.profiler.schedule(wait=0, warmup=WARM, active=ACTIVE, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA],
                                record_shapes=True, schedule=sched) as prof:
        for i in range(WARM + ACTIVE):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            with torch.no_grad():
                tok = step(tok, torch.tensor([pos], device="cuda"))
            e1.record()
            if mode == "sync":
                t = tok.item()  # the host waits for the step: a DtoH copy + sync each step
                tok = torch.tensor([[t]], device="cuda")
            pos += 1
            prof.step()
            times.append((e0, e1))
    torch.cuda.synchronize()
    times = [a.elapsed_time(b) for a, b in times]
    n = export(prof, out, variant)
    log(f, "trace: %s.json.gz %d bytes" % (variant, n))
    log(f, "active tokens in the profiled steps: %d..%d (prompt %d + decode steps)"
        % (pos - ACTIVE, pos - 1, PROMPT))
    log(f, "step ms (CUDA events, warm-up then profiled):", " ".join("%.3f" % t for t in times))
    kv = []
    try:
        layer0 = cache.layers[0]
        kv = [tuple(layer0.keys.shape), tuple(layer0.values.shape)]
    except Exception:
        try:
            kv = [tuple(cache.key_cache[0].shape), tuple(cache.value_cache[0].shape)]
        except Exception:
            pass
    log(f, "layer-0 cache keys/values shapes at the end:", kv)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    variants = sys.argv[2:] or ["gqa_static_eager", "gqa_dynamic_eager", "mla_static_eager",
                                "mla_dynamic_eager", "gqa_dynamic_sync", "gqa_static_graph",
                                "gqa_static_compile", "gqa_dynamic_compile"]
    import transformers
    for v in variants:
        with open(os.path.join(out, v + ".txt"), "w") as f:
            log(f, "variant", v, "torch", torch.__version__, "cuda", torch.version.cuda,
                "transformers", transformers.__version__, "gpu", torch.cuda.get_device_name())
            log(f, "model layers", LAYERS, "prompt", PROMPT, "capacity", CAP,
                "warm-up", WARM, "profiled steps", ACTIVE)
            t = time.time()
            try:
                run_variant(v, out, f)
                log(f, "ok in %.1f s" % (time.time() - t))
            except Exception:
                log(f, "FAILED:\n" + traceback.format_exc())
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
