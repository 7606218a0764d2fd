#!/usr/bin/env python3
"""tests/test_shared_traces.py ANALYSIS_DUMP — every trace in ../shared/traces
(hta/ included) read by kvscope with the same event, op, kernel, memcpy and
memset counts, and GPU work started by a cudaGraphLaunch, as a plain Python
json.load computes here, now; and the two MLA
traces give the expected cast group, with its numbers computed independently
from the trace facts (../shared/traces/README.md) and from the JSON itself.

Exit 0 pass, 1 fail, 77 when ../shared/traces is absent (meson: skipped).
"""
import gzip
import json
import os
import subprocess
import sys

dump = sys.argv[1]
shared = os.environ.get("KVS_SHARED_DIR", "")
root = os.path.join(shared, "traces")
if not shared or not os.path.isdir(root):
    print("skip: no ../shared/traces")
    sys.exit(77)

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL", what)
    return cond


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def events_of(doc):
    return doc if isinstance(doc, list) else doc.get("traceEvents", [])


def run(path, *args):
    out = subprocess.run([dump, path, *args], capture_output=True, text=True)
    if out.returncode not in (0, 3):
        print(out.stderr)
    return json.loads(out.stdout) if out.stdout.strip() else {"status": -1}


def graph_launched(ev):
    corr = {e.get("args", {}).get("correlation") for e in ev
            if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime")
            and "GraphLaunch" in e.get("name", "")}
    corr.discard(None)
    return sum(1 for e in ev if e.get("ph") == "X"
               and e.get("cat") in ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset")
               and e.get("args", {}).get("correlation") in corr)


traces = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                if f.endswith(".json") or f.endswith(".json.gz"))
check(len(traces) > 0, "no traces found under " + root)
graph_total = 0
for path in traces:
    ev = events_of(load(path))
    want = {
        "events": len(ev),
        "ops": sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "Operator")),
        "kernels": sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel")),
        "memcpys": sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") in ("gpu_memcpy", "Memcpy")),
        "memsets": sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") in ("gpu_memset", "Memset")),
        # GPU work a cudaGraphLaunch started: its correlation id (no op shapes describe it)
        "graph_launched": graph_launched(ev),
    }
    graph_total += want["graph_launched"]
    got = run(path)
    name = os.path.relpath(path, root)
    if not check(got.get("status") == 0, "%s: status %s" % (name, got.get("status"))):
        continue
    for k, v in want.items():
        check(got[k] == v, "%s: %s = %d, json.load says %d" % (name, k, got[k], v))
    print("ok   %-75s %7d events %6d ops %6d kernels" % (name, want["events"], want["ops"], want["kernels"]))
check(graph_total > 0, "no trace has graph-launched GPU work: the graph_launched check proved nothing")


def cast_group_facts(path, tokens):
    """From the JSON alone: the aten::copy_ calls with dims
    [[tokens,1,576],[tokens,1,576],[]] and types [BFloat16, Float8_e4m3fn],
    their kernels' time (External id), and the number of profiler steps."""
    ev = events_of(load(path))
    dims = [[tokens, 1, 576], [tokens, 1, 576], []]
    ops = {e["args"]["External id"] for e in ev
           if e.get("cat") == "cpu_op" and e.get("name") == "aten::copy_"
           and e["args"].get("Input Dims") == dims
           and e["args"].get("Input type", [])[:2] == ["c10::BFloat16", "c10::Float8_e4m3fn"]}
    gpu_us = sum(e["dur"] for e in ev if e.get("cat") == "kernel"
                 and e.get("args", {}).get("External id") in ops)
    launched = len({e["args"]["External id"] for e in ev if e.get("cat") == "kernel"
                    and e.get("args", {}).get("External id") in ops})
    steps = sum(1 for e in ev if e.get("cat") == "user_annotation"
                and e.get("name", "").startswith("ProfilerStep#"))
    return len(ops), launched, gpu_us, steps


# a role names the work, not the op: cast, dtype pair, rows (the model's name
# for them when a model is given)
ROLES = {(): "cast BFloat16<-Float8_e4m3fn [*,1,576]",
         ("--model", "deepseek-v3", "--kv-capacity", "131072"):
         "cast BFloat16<-Float8_e4m3fn rows of kv_lora_rank 512 + qk_rope_head_dim 64"}
LAYERS = 61                 # README: 61 layers, one cast per layer per step
CAPACITY = 131072           # README: a pool of 131,072 tokens x 576
ACTIVE = 1024               # README: 1,024 active tokens
for kind, tokens in (("unfixed", CAPACITY), ("fixed", ACTIVE)):
    path = os.path.join(root, "mla61_cap131072_%s.pt.trace.json.gz" % kind)
    if not os.path.exists(path):
        check(False, "missing " + path)
        continue
    calls, launched, gpu_us, steps = cast_group_facts(path, tokens)
    bytes_per_call = tokens * 576 * (2 + 1)      # BF16 written + FP8 read
    gbps = bytes_per_call * launched / (gpu_us * 1e3)
    for args in ((), ("--model", "deepseek-v3", "--kv-capacity", str(CAPACITY))):
        got = run(path, *args)
        tag = "%s %s" % (kind, " ".join(args))
        ROLE = ROLES[args]
        groups = [g for g in got.get("groups", []) if g["role"] == ROLE]
        if not check(len(groups) == 1, "%s: one group with role %r" % (tag, ROLE)):
            continue
        g = groups[0]
        check(g["dims"] == [[tokens, 1, 576]] * 2, "%s: dims %s" % (tag, g["dims"]))
        check(g["dtypes"] == ["c10::BFloat16", "c10::Float8_e4m3fn"], "%s: dtypes" % tag)
        check(g["calls"] == calls, "%s: calls %d, json says %d" % (tag, g["calls"], calls))
        check(abs(g["calls_per_step"] - LAYERS) < 1e-9 and calls == LAYERS * steps,
              "%s: calls/step %s, README says %d" % (tag, g["calls_per_step"], LAYERS))
        check(g["bytes_per_call"] == bytes_per_call, "%s: bytes/call %d" % (tag, g["bytes_per_call"]))
        check(abs(g["gpu_ms"] - gpu_us / 1e3) < 1e-6, "%s: gpu_ms %s vs %s" % (tag, g["gpu_ms"], gpu_us / 1e3))
        check(abs(g["achieved_gbps"] - gbps) < 1e-6 * gbps, "%s: GB/s %s vs %s" % (tag, g["achieved_gbps"], gbps))
        check(got["device"] == "NVIDIA H200" and got["peak_gbps"] == 4800, "%s: device" % tag)
        ids = [f["id"] for f in got["findings"]]
        if kind == "unfixed":
            check(got["groups"][0]["role"] == ROLE, "%s: the cast is the top group" % tag)
            check(900 <= g["achieved_gbps"] <= 1100, "%s: %.0f GB/s is not near 1000" % (tag, g["achieved_gbps"]))
            check("kv_full_buffer_cast" in ids, "%s: kv_full_buffer_cast missing (%s)" % (tag, ids))
            check(g["match"] is not None and g["match"]["capacity_tokens"] == CAPACITY and g["match"]["per_layer"],
                  "%s: match %s" % (tag, g["match"]))
            f = [f for f in got["findings"] if f["id"] == "kv_full_buffer_cast"]
            if f:
                check(abs(f[0]["bytes_per_step"] - bytes_per_call * LAYERS) < 1,
                      "%s: bytes/step %s" % (tag, f[0]["bytes_per_step"]))
                check(abs(f[0]["needed_bytes_per_step"] - ACTIVE * 576 * 3 * LAYERS) < 1,
                      "%s: needed bytes/step %s" % (tag, f[0]["needed_bytes_per_step"]))
        else:
            check("kv_full_buffer_cast" not in ids, "%s: kv_full_buffer_cast in the fixed trace" % tag)
        print("ok   mla %-8s %-40s %.1f calls/step, %d B/call, %.0f GB/s" %
              (kind, " ".join(args), g["calls_per_step"], g["bytes_per_call"], g["achieved_gbps"]))

print("%d failed" % failures)
sys.exit(1 if failures else 0)
