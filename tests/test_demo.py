#!/usr/bin/env python3
"""tests/test_demo.py BUILD_DIR — the README's main job (examples/demo.sh, what
`./run.sh` runs) end to end without a GPU, on the traces bundled in
examples/traces/, checked against the raw traces.

    meson test -C build test_demo

Every figure the job's output must name is recomputed here from the trace's
own events, independently of kvscope's analyzer: the full-buffer KV cast (the
largest cast op), its shape, calls per step, bytes per call and per step
(dims x dtype sizes), its share of GPU busy time (union of kernel, memcpy and
memset intervals), its HBM efficiency (bytes / GPU time / the device's
datasheet peak from analyzers/data/devices.json), GPU time per step of both
traces for the comparison, and each path's roofline figure (bytes per step
from the engine's log over the trace's mean step). Then the output must
carry them in the report, compare and summary sections (the summary is
kvscope compare's own IN SHORT), in that order, and end with the path of an
HTML report that exists.

The GPU branch runs too, with a fake nvidia-smi and a fake `kvscope engine`
(which fails like the real one when the pool does not fit, and otherwise
writes the bundled trace): it must retry with the capacity the engine names
and report the traces it captured.
"""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

from kvs_test import check, failures, finish, union

SRC = os.environ.get("KVS_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), ".."))
TRACES = os.path.join(SRC, "examples", "traces")
DTYPE_BYTES = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "c10::Float8_e4m3fn": 1, "int": 4}


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def union_ms(iv):
    return union(iv) / 1000.0


def facts(path):
    """What the main job must say about one trace, from its raw events."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    steps = [e for e in ev if e.get("cat") == "user_annotation"
             and e.get("name", "").startswith("ProfilerStep#")]
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    busy = union_ms([(e["ts"], e["ts"] + e["dur"]) for e in gpu])
    f = {"steps": len(steps), "busy_ms": busy,
         "mean_ms": sum(s["dur"] for s in steps) / len(steps) / 1000.0,
         "device": doc["deviceProperties"][0]["name"]}
    # per-step GPU busy time, as docs/analysis.md defines it: the activities whose
    # launch (the runtime call with the same correlation id) lies inside the step
    launch = {e["args"]["correlation"]: e["ts"] for e in ev
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    in_step = []
    for s in steps:
        a, b = s["ts"], s["ts"] + s["dur"]
        in_step.append(union_ms([(e["ts"], e["ts"] + e["dur"]) for e in gpu
                                 if a <= launch.get(e["args"].get("correlation"), e["ts"]) < b]))
    f["busy_per_step_ms"] = sum(in_step) / len(in_step)
    casts = [e for e in ev if e.get("cat") == "cpu_op" and "cast" in e.get("name", "")
             and e.get("args", {}).get("Input Dims")]
    if casts:
        big = max(casts, key=lambda e: e["args"]["Input Dims"][0][0])
        dims, types = big["args"]["Input Dims"], big["args"]["Input type"]
        same = [e for e in casts if e["name"] == big["name"] and e["args"]["Input Dims"] == dims]
        ids = {e["args"]["External id"] for e in same}
        ms = sum(e["dur"] for e in gpu if e.get("args", {}).get("External id") in ids) / 1000.0
        per_call = 0
        for d, t in zip(dims, types):
            n = 1
            for x in d:
                n *= x
            per_call += n * DTYPE_BYTES[t]
        f.update(op=big["name"], dims=dims[0], calls_per_step=len(same) / len(steps),
                 bytes_per_call=per_call, bytes_per_step=per_call * len(same) / len(steps),
                 cast_share=ms / busy, cast_gbps=per_call * len(same) / (ms * 1e6))
    return f


def peak_gbps(device):
    with open(os.path.join(SRC, "analyzers", "data", "devices.json")) as fh:
        table = json.load(fh)["devices"]
    for d in table:
        if d["name"] == device:
            return d["hbm_gbps"]
    return None


def engine_bytes(log):
    with open(log) as fh:
        res = [l for l in fh if l.startswith("result:")][-1]
    return float(re.search(r"bytes_per_step=(\S+)", res).group(1))


def main():
    build = sys.argv[1]
    out_dir = tempfile.mkdtemp(prefix="kvs-demo-")
    env = dict(os.environ, KVS_DEMO_SOURCE="bundled", NO_COLOR="1")
    r = subprocess.run([os.path.join(SRC, "examples", "demo.sh"), build, out_dir], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    out = r.stdout
    check(r.returncode == 0, "examples/demo.sh exits 0 (got %d)" % r.returncode)
    if r.returncode != 0:
        print(out)

    u = facts(os.path.join(TRACES, "glm5_full-cast.json.gz"))
    x = facts(os.path.join(TRACES, "glm5_fp8-direct.json.gz"))
    peak = peak_gbps(u["device"])
    check(peak is not None, "the bundled trace's device %r is in the device table" % u["device"])
    check("op" in u and u["dims"][0] >= 100000 and ("op" not in x or x["dims"][0] < 100000),
          "the unfixed trace casts a pool of %s rows, fp8-direct none that large (raw events)"
          % u.get("dims", ["?"])[0])

    # the order of the sections
    pos = [out.find(s) for s in ("kvscope report", "kvscope compare", "IN SHORT", "HTML report:")]
    check(all(p >= 0 for p in pos) and pos == sorted(pos),
          "report, compare, summary and the HTML line appear, in that order")
    report = out[pos[0]:pos[1]] if pos[0] >= 0 and pos[1] >= 0 else ""
    compare = out[pos[1]:pos[2]] if pos[1] >= 0 and pos[2] >= 0 else ""
    summary = out[pos[2]:] if pos[2] >= 0 else ""

    # the summary is kvscope's own: `kvscope compare BEFORE AFTER AFTER` prints the same block
    kvs = os.path.join(build, "cli", "kvscope")
    c = subprocess.run([kvs, "compare"] + [os.path.join(TRACES, "glm5_%s.json.gz" % p) for p in
                                           ("full-cast", "fp8-direct", "active-cast")]
                       + ["--model", "glm5", "--kv-capacity", "495552", "--batch", "1", "--quiet"],
                       env=env, capture_output=True, text=True, timeout=120)
    own = c.stdout[c.stdout.find("IN SHORT"):] if "IN SHORT" in c.stdout else None
    check(c.returncode == 0 and own is not None and summary.startswith(own.rstrip("\n")),
          "the demo's IN SHORT is kvscope compare's (exit %d)" % c.returncode)
    check(not os.path.exists(os.path.join(SRC, "examples", "summarize.py")),
          "no Python summary script is left beside the demo")

    # the report names the full-buffer cast with its shape
    shape = ",".join(str(d) for d in u["dims"])
    check(re.search(r"1\. high\s+kv_full_buffer_cast", report) is not None,
          "the report's first finding is kv_full_buffer_cast")
    check("[[%s],[%s]]" % (shape, shape) in report, "the report names the shape [[%s],..]" % shape)
    check(u["op"] in report, "the report names the op %s" % u["op"])

    # the summary: shape, calls per step, bytes, share of GPU time, HBM efficiency
    m = re.search(r"The bottleneck\s+(\S+) \[([\d,]+)\]", summary)
    if m:
        check(m.group(1) == u["op"] and m.group(2) == shape,
              "summary names %s [%s] (got %s [%s])" % (u["op"], shape, m.group(1), m.group(2)))
    flat = re.sub(r"\s+", " ", summary)
    m = re.search(r"(\d+) times per step.*?([\d.]+) MB per call.*?([\d.]+) GB per step.*?"
                  r"([\d.]+)% of the GPU time, at ([\d.]+) GB/s = ([\d.]+)% of the (.+?) HBM peak", flat)
    check(m is not None, "summary has calls, bytes, share, GB/s and efficiency")
    if m:
        calls, mb, gb, share, gbps, eff = (float(m.group(i)) for i in range(1, 7))
        check(calls == u["calls_per_step"], "calls per step %g == %g" % (calls, u["calls_per_step"]))
        check(close(mb * 1e6, u["bytes_per_call"], 1e-4),
              "bytes per call %.2f MB ~ %d B" % (mb, u["bytes_per_call"]))
        check(close(gb * 1e9, u["bytes_per_step"], 1e-3),
              "bytes per step %.2f GB ~ %.0f B" % (gb, u["bytes_per_step"]))
        check(abs(share - 100 * u["cast_share"]) < 0.15,
              "share of GPU time %.1f%% ~ %.2f%%" % (share, 100 * u["cast_share"]))
        check(close(gbps, u["cast_gbps"], 0.01), "GB/s %.0f ~ %.1f" % (gbps, u["cast_gbps"]))
        check(peak and abs(eff - 100 * u["cast_gbps"] / peak) < 0.1,
              "HBM efficiency %.1f%% ~ %.2f%% of %s GB/s" % (eff, 100 * u["cast_gbps"] / peak, peak))

    # the comparison
    check("Resolved: kv_full_buffer_cast" in compare, "compare: kv_full_buffer_cast resolved")
    m = re.search(r"GPU time per step fell ([\d.]+)% \(([\d.]+) -> ([\d.]+) ms\)", compare)
    check(m is not None, "compare: GPU time per step fell ...")
    if m:
        before, after = float(m.group(2)), float(m.group(3))
        check(close(before, u["busy_per_step_ms"], 0.01) and close(after, x["busy_per_step_ms"], 0.01),
              "compare: GPU ms/step %.4g -> %.4g ~ %.4g -> %.4g (raw events)" % (
                  before, after, u["busy_per_step_ms"], x["busy_per_step_ms"]))
    y = facts(os.path.join(TRACES, "glm5_active-cast.json.gz"))
    for name, f in (("fp8-direct", x), ("active-cast", y)):
        m = re.search(r"%s \([^)]*\): GPU time per step ([\d.]+) -> ([\d.]+) ms" % name, flat)
        check(m is not None and close(float(m.group(1)), u["busy_per_step_ms"], 0.01)
              and close(float(m.group(2)), f["busy_per_step_ms"], 0.01),
              "summary: what %s saved, GPU ms/step %s -> %s ~ %.4g -> %.4g" % (
                  name, m and m.group(1), m and m.group(2), u["busy_per_step_ms"],
                  f["busy_per_step_ms"]))
    check(flat.find("The fix saved fp8-direct") >= 0, "summary: fp8-direct is the fix listed first")

    # each path against the HBM roofline
    for name, f in (("full-cast", u), ("fp8-direct", x), ("active-cast", y)):
        by = engine_bytes(os.path.join(TRACES, "glm5_%s.log" % name))
        m = re.search(r"^\s+%s\s+([\d.]+)\s+([\d.]+) GB\s+([\d.]+) GB/s\s+([\d.]+)%%" % name, summary, re.M)
        check(m is not None, "roofline row for %s" % name)
        if m:
            want = 100 * by / (f["mean_ms"] * 1e6) / peak
            check(close(float(m.group(1)), f["mean_ms"], 0.001) and abs(float(m.group(4)) - want) < 0.1,
                  "%s: %.2f ms/step, %.1f%% of HBM peak ~ %.4g ms, %.2f%%" % (
                      name, float(m.group(1)), float(m.group(4)), f["mean_ms"], want))

    m = re.search(r"HTML report: (\S+)", out)
    check(m is not None and os.path.isfile(m.group(1)), "the HTML report named at the end exists")
    if m and os.path.isfile(m.group(1)):
        with open(m.group(1)) as fh:
            html = fh.read()
        check("<svg" in html and "kv_full_buffer_cast" in html, "the HTML report has its charts and the finding")
    if failures:
        print("\n--- demo output ---\n" + out)
    gpu_path(build)
    return finish()


FAKE_SMI = """#!/bin/sh
case "$*" in
  *-L*) echo "GPU 0: NVIDIA H200 (UUID: GPU-fake)" ;;
  *) echo "NVIDIA H200, 143771 MiB, 580.00" ;;
esac
"""

# `kvscope engine` as a GPU would run it, minus the GPU: the first path with a
# pool larger than FIT fails the way the engine does, naming the capacity
# that fits; a run that fits writes the bundled trace and log.
FAKE_KVSCOPE = """#!/bin/sh
if [ "$1" != engine ]; then exec "%(real)s" "$@"; fi
shift
[ "$1" = --help ] && { echo "usage: kvscope engine [options]"; exit 0; }
echo "engine $*" >>"%(calls)s"
while [ $# -gt 0 ]; do
  case $1 in --kv-path) p=$2; shift ;; --kv-capacity) c=$2; shift ;; --trace) t=$2; shift ;; esac
  shift
done
if [ "$c" -gt %(fit)d ]; then
  echo "kvscope: error: the plan needs 104.97 GB but the GPU has 96.00 GB free"
  echo "kvscope: error: the largest KV capacity that fits is %(fit)d tokens (--kv-capacity %(fit)d)"
  exit 1
fi
cp "%(traces)s/glm5_$p.json.gz" "$t" && cat "%(traces)s/glm5_$p.log"
"""


def gpu_path(build):
    """The GPU branch of the main job with a fake nvidia-smi and a fake engine:
    it captures both paths, retries with the capacity the engine says fits,
    reads the fresh traces, and says so."""
    tmp = tempfile.mkdtemp(prefix="kvs-demo-gpu-")
    fake_build, bindir = os.path.join(tmp, "build"), os.path.join(tmp, "bin")
    os.makedirs(os.path.join(fake_build, "cli"))
    os.makedirs(bindir)
    calls, fit = os.path.join(tmp, "calls"), 300000
    for path, text in ((os.path.join(bindir, "nvidia-smi"), FAKE_SMI),
                       (os.path.join(fake_build, "cli", "kvscope"), FAKE_KVSCOPE % {
                           "real": os.path.abspath(os.path.join(build, "cli", "kvscope")),
                           "calls": calls, "fit": fit, "traces": TRACES})):
        with open(path, "w") as fh:
            fh.write(text)
        os.chmod(path, 0o755)
    out_dir = os.path.join(tmp, "out")
    env = dict(os.environ, KVS_DEMO_SOURCE="auto", NO_COLOR="1",
               PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run([os.path.join(SRC, "examples", "demo.sh"), fake_build, out_dir], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    out = r.stdout
    n = len(failures)
    check(r.returncode == 0, "gpu branch: demo.sh exits 0 (got %d)" % r.returncode)
    with open(calls) as fh:
        runs = fh.read().split("\n")
    want = [("full-cast", 495552), ("full-cast", fit), ("fp8-direct", fit), ("active-cast", fit)]
    got = [(re.search(r"--kv-path (\S+)", l).group(1), int(re.search(r"--kv-capacity (\d+)", l).group(1)))
           for l in runs if l]
    check(got == want, "gpu branch: engine runs %s (wanted %s)" % (got, want))
    check("retrying with the largest that fits: --kv-capacity %d" % fit in out,
          "gpu branch: says it retries with a smaller pool")
    check(re.search(r"kvscope report\s+%s/glm5_full-cast.json.gz" % re.escape(out_dir), out) is not None,
          "gpu branch: the report reads the fresh trace")
    check("--kv-capacity %d --batch 1" % fit in out, "gpu branch: report and compare use that capacity")
    check("Traces captured on this GPU" in out and os.path.isfile(os.path.join(out_dir, "captured.txt")),
          "gpu branch: says the traces were captured here, and notes how")
    # (the fake hands back the 495552-token trace, so with --kv-capacity 300000 the
    # report rightly finds no buffer of that size: only the flow is checked here)
    check("VERDICT" in out and "IN SHORT" in out, "gpu branch: compare and summary ran")
    if len(failures) > n:
        print("\n--- demo output (gpu branch) ---\n" + out)


if __name__ == "__main__":
    sys.exit(main())
