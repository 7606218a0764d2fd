#!/usr/bin/env python3
"""tests/test_engine_traces.py KVSCOPE — `kvscope report` and `kvscope compare`
on kvscope's own GLM-5 engine captures bundled in examples/traces/ (one H200,
batch 1, context 4096, KV pool 495,552 tokens x 576 per layer, 78 layers):

- full-cast: every layer casts the whole FP8 pool -> kv_full_buffer_cast with
  the pool's token count, once per layer, dims x dtype bytes per call; with the
  capacity given and inferred without it;
- active-cast: every layer gathers the ~4099 active tokens and casts only them
  -> no kv_full_buffer_cast and no group called a buffer, with or without
  --kv-capacity / --model (the gather's rows grow one token a step, and its
  index list is as long as its output);
- fp8-direct: no cast at all -> no kv_full_buffer_cast;
- compare full-cast active-cast: the two casts pair as one role although the
  ops are named differently (kvs::cast_fp8_to_bf16, kvs::gather_cast_...);
- each trace's kvscope.engine object (added from its .log by
  examples/traces/add_engine_meta.py): the report's `engine` repeats the log's
  result: line and its `roofline` is bytes_per_step over the trace's mean
  ProfilerStep, against the H200's 4800 GB/s and the engine's copy rate;
- compare full-cast fp8-direct active-cast --format json: one kvscope.summary/1
  document holding the two one-AFTER comparisons as they are and IN SHORT's
  sentences as the text prints them, its roofline rows from the raw traces and
  logs (the copy rate: the baseline's).

Expected figures come from the raw traces (json.load), not from kvscope.

    meson test -C build test_engine_traces
"""
import gzip
import json
import os
import subprocess
import sys

from kvs_test import check, finish

SRC = os.environ.get("KVS_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), ".."))
TRACES = os.path.join(SRC, "examples", "traces")
DTYPE_BYTES = {"c10::BFloat16": 2, "c10::Float8_e4m3fn": 1, "int": 4}
CAP = 495552  # examples/traces/README.md: the engine's default pool


def trace(name):
    return os.path.join(TRACES, "glm5_%s.json.gz" % name)


def raw_ops(name, op):
    """(dims, types) of every call of `op`, and the number of ProfilerSteps."""
    ev = json.load(gzip.open(trace(name)))["traceEvents"]
    calls = [(e["args"]["Input Dims"], e["args"]["Input type"]) for e in ev
             if e.get("cat") == "cpu_op" and e.get("name") == op]
    steps = sum(1 for e in ev if e.get("cat") == "user_annotation"
                and e.get("name", "").startswith("ProfilerStep#"))
    return calls, steps


def report(name, *args):
    out = subprocess.run([sys.argv[1], "report", trace(name), "--format", "json", *args],
                         capture_output=True, text=True)
    if out.returncode != 0:
        check(False, "kvscope report %s %s exited %d: %s" % (name, args, out.returncode, out.stderr))
        return None
    return json.loads(out.stdout)


OPTS = [(), ("--model", "glm5"), ("--kv-capacity", str(CAP)),
        ("--model", "glm5", "--kv-capacity", str(CAP))]


def full_cast():
    calls, steps = raw_ops("full-cast", "kvs::cast_fp8_to_bf16")
    dims, types = calls[0]
    check(all(c == (dims, types) for c in calls) and dims[0][0] == CAP,
          "raw full-cast: every cast is of the whole %d-token pool" % CAP)
    per_call = sum(DTYPE_BYTES[t] * d[0] * d[1] * d[2] for d, t in zip(dims, types))
    for args in OPTS:
        tag = "full-cast %s" % " ".join(args)
        r = report("full-cast", *args)
        if not r:
            continue
        f = [f for f in r["findings"] if f["id"] == "kv_full_buffer_cast"]
        if not check(len(f) == 1, "%s: one kv_full_buffer_cast" % tag):
            continue
        g = [g for g in r["groups"] if g["op"] == "kvs::cast_fp8_to_bf16"]
        if not check(len(g) == 1, "%s: one cast group" % tag):
            continue
        g = g[0]
        check(g["match"] and g["match"]["capacity_tokens"] == CAP and g["match"]["per_layer"],
              "%s: match %s" % (tag, g["match"]))
        check(g["calls_per_step"] == len(calls) / steps == 78, "%s: %s calls/step" % (tag, g["calls_per_step"]))
        check(g["bytes_per_call"] == per_call, "%s: %d bytes per call (856.3 MB)" % (tag, per_call))
        check(abs(f[0]["bytes_per_step"] - per_call * 78) < 1, "%s: bytes per step" % tag)
        check("%d tokens" % CAP in f[0]["message"], "%s: the message names the pool" % tag)


def active_cast():
    calls, steps = raw_ops("active-cast", "kvs::gather_cast_fp8_to_bf16")
    rows = sorted({d[0][0] for d, _ in calls})
    check(len(calls) == 78 * steps and rows == list(range(rows[0], rows[0] + steps)) and
          all(d[2] == [d[0][0]] for d, _ in calls),
          "raw active-cast: %d gathers, rows %s, each with its index list" % (len(calls), rows))
    for args in OPTS:
        tag = "active-cast %s" % " ".join(args)
        r = report("active-cast", *args)
        if not r:
            continue
        ids = [f["id"] for f in r["findings"]]
        check("kv_full_buffer_cast" not in ids, "%s: no kv_full_buffer_cast (%s)" % (tag, ids))
        buf = [g["dims"] for g in r["groups"] if g["match"] and g["match"]["capacity_tokens"]]
        check(not buf, "%s: no group called a buffer %s" % (tag, buf))
        gathers = [g for g in r["groups"] if g["op"] == "kvs::gather_cast_fp8_to_bf16"]
        check(sorted(g["dims"][0][0] for g in gathers) == rows, "%s: one group per context" % tag)
        if "--model" in args:
            check(all(g["match"] and g["match"]["label"] ==
                      "tokens x kv_lora_rank 512 + qk_rope_head_dim 64" for g in gathers),
                  "%s: the gathers are tokens of the MLA row" % tag)


def fp8_direct():
    for args in OPTS:
        r = report("fp8-direct", *args)
        if r:
            ids = [f["id"] for f in r["findings"]]
            check("kv_full_buffer_cast" not in ids, "fp8-direct %s: no kv_full_buffer_cast" % " ".join(args))


def compare_pairs():
    """The full-buffer cast and the active-token gather-then-cast are one role
    although their ops are named differently; the gather's per-context groups
    are summed."""
    _, steps = raw_ops("active-cast", "kvs::gather_cast_fp8_to_bf16")
    for args in ((), ("--model", "glm5", "--kv-capacity", str(CAP))):
        tag = "compare full-cast active-cast %s" % " ".join(args)
        out = subprocess.run([sys.argv[1], "compare", trace("full-cast"), trace("active-cast"),
                              "--format", "json", *args], capture_output=True, text=True)
        if not check(out.returncode == 0, "%s: exit %d %s" % (tag, out.returncode, out.stderr)):
            continue
        cmp = json.loads(out.stdout)
        pair = [g for g in cmp["groups"] if g["before"] and g["after"]
                and g["before"]["op"] == "kvs::cast_fp8_to_bf16"
                and g["after"]["op"] == "kvs::gather_cast_fp8_to_bf16"]
        if not check(len(pair) == 1, "%s: the full cast and the gather-then-cast are paired" % tag):
            continue
        g = pair[0]
        check(g["after"]["groups"] == steps and abs(g["after"]["calls_per_step"] - 78) < 1e-9,
              "%s: the gather's %d per-context groups summed to 78 calls/step" % (tag, steps))
        check(g["role"].startswith("cast BFloat16<-Float8_e4m3fn "), "%s: role %r" % (tag, g["role"]))
        check(not [x for x in cmp["groups"] if x["before"] is None
                   and x["after"]["op"] == "kvs::gather_cast_fp8_to_bf16"],
              "%s: no gather left unpaired" % tag)
        check("kv_full_buffer_cast" in cmp["resolved"], "%s: kv_full_buffer_cast resolved" % tag)


def log_result(name):
    """The key=value pairs of the engine log's result: line."""
    with open(os.path.join(TRACES, "glm5_%s.log" % name)) as f:
        line = [l for l in f if l.startswith("result:")][-1]
    return dict(t.split("=", 1) for t in line.split()[1:] if "=" in t)


def roofline():
    for name in ("full-cast", "fp8-direct", "active-cast"):
        res = log_result(name)
        ev = json.load(gzip.open(trace(name)))["traceEvents"]
        durs = [e["dur"] for e in ev if e.get("cat") == "user_annotation"
                and e.get("name", "").startswith("ProfilerStep#")]
        step_ms = sum(durs) / len(durs) / 1000
        rep = report(name, "--model", "glm5")
        if rep is None:
            continue
        e, r = rep["engine"], rep["roofline"]
        if not check(e is not None and r is not None, "%s: engine and roofline read" % name):
            continue
        check(e["kv_path"] == res["path"] and e["config"] == res["config"]
              and e["batch"] == int(res["batch"]) and e["context"] == int(res["context"])
              and e["steps"] == int(res["steps"]) and e["graph"] is (res["graph"] == "1")
              and e["kv_capacity"] == CAP and e["layers"] == 78,
              "%s: engine %s against the log's %s" % (name, e, res))
        by = float(res["bytes_per_step"])
        check(e["bytes_per_step"] == by and abs(e["step_ms"] - float(res["step_ms"])) < 1e-9
              and abs(e["copy_gbps"] - float(res["copy_gbps"])) < 1e-9, "%s: engine figures" % name)
        gbps = by / (step_ms * 1e6)
        check(r["step_source"] == "trace" and abs(r["step_ms"] - step_ms) < 1e-6,
              "%s: roofline step %.4f ms, the trace's mean step %.4f" % (name, r["step_ms"], step_ms))
        check(abs(r["achieved_gbps"] - gbps) < 1e-6 * gbps
              and abs(r["peak_fraction"] - gbps / 4800) < 1e-9
              and abs(r["copy_fraction"] - gbps / float(res["copy_gbps"])) < 1e-9,
              "%s: roofline %s, want %.1f GB/s" % (name, r, gbps))


def in_short(text):
    """The text IN SHORT's blocks by label, words joined by single spaces."""
    blocks, label = {}, None
    for line in text.split("IN SHORT\n", 1)[1].splitlines():
        if line[:17].strip():
            label = line[:17].strip()
        if line.lstrip().startswith("path "):
            break
        blocks[label] = (blocks.get(label, "") + " " + line[17:]).strip()
    return {k: " ".join(v.split()) for k, v in blocks.items()}


def summary_json():
    fixes = ("fp8-direct", "active-cast")
    run = lambda *a: subprocess.run([sys.argv[1], "compare", trace("full-cast"), *a, "--quiet"],
                                    capture_output=True, text=True)
    js, tx = run(*map(trace, fixes), "--format", "json"), run(*map(trace, fixes))
    if not check(js.returncode == 0 and tx.returncode == 0,
                 "compare 3 traces: exit %d (json) %d (text): %s" % (js.returncode, tx.returncode,
                                                                    js.stderr)):
        return
    d = json.loads(js.stdout)
    check(d["schema"] == "kvscope.summary/1" and len(d["comparisons"]) == 2,
          "summary json: schema %s, %d comparisons" % (d["schema"], len(d["comparisons"])))
    for fix, c in zip(fixes, d["comparisons"]):
        one = run(trace(fix), "--format", "json")
        check(one.returncode == 0 and json.loads(one.stdout) == c,
              "summary json: the %s comparison is compare full-cast %s's document" % (fix, fix))
    s, t = d["summary"], in_short(tx.stdout)
    check(s["bottleneck"] == t.get("The bottleneck"),
          "summary json bottleneck %r, text %r" % (s["bottleneck"], t.get("The bottleneck")))
    check(len(s["fixes"]) == 2 and " ".join(s["fixes"]) == t.get("The fix saved"),
          "summary json fixes %r, text %r" % (s["fixes"], t.get("The fix saved")))
    check(s["roofline"] == t.get("HBM roofline"), "summary json roofline %r" % s["roofline"])
    copy = float(log_result("full-cast")["copy_gbps"])
    names = [p["name"] for p in s["paths"]]
    check(names == ["full-cast", *fixes], "summary json paths %s" % names)
    for p in s["paths"]:
        res = log_result(p["name"])
        ev = json.load(gzip.open(trace(p["name"])))["traceEvents"]
        durs = [e["dur"] for e in ev if e.get("cat") == "user_annotation"
                and e.get("name", "").startswith("ProfilerStep#")]
        step_ms, by = sum(durs) / len(durs) / 1000, float(res["bytes_per_step"])
        gbps = by / (step_ms * 1e6)
        check(abs(p["step_ms"] - step_ms) < 1e-6 and p["bytes_per_step"] == by
              and abs(p["achieved_gbps"] - gbps) < 1e-6 * gbps
              and abs(p["peak_fraction"] - gbps / 4800) < 1e-9
              and abs(p["copy_fraction"] - gbps / copy) < 1e-9,
              "summary json %s: %s, want %.4f ms, %.1f GB/s" % (p["name"], p, step_ms, gbps))


if not all(os.path.exists(trace(n)) for n in ("full-cast", "active-cast", "fp8-direct")):
    print("skip: the engine traces are not in examples/traces")
    sys.exit(77)
full_cast()
active_cast()
fp8_direct()
compare_pairs()
roofline()
summary_json()
sys.exit(finish())
