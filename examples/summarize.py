#!/usr/bin/env python3
"""examples/summarize.py — the closing summary of the main job (examples/demo.sh):
what the bottleneck was, what each fix saved, and how efficient each KV path
is against the HBM roofline, in a few lines a newcomer can read.

    python3 examples/summarize.py OUT_DIR TRACE_DIR

It reads kvscope's own outputs that demo.sh left in OUT_DIR:
report_<path>.json (`kvscope report --format json`, kvscope.report/1) for the
engine's KV paths full-cast (unfixed), fp8-direct and active-cast (fixes), and
compare_<path>.json (`kvscope compare full-cast -> path --format json`,
kvscope.compare/1; both in docs/report-json.md); and, for the roofline, the
log `kvscope engine` printed while it made each trace, TRACE_DIR/glm5_<path>.log
(its `result:` line gives the bytes moved per step by the engine's model:
weights read + KV traffic, docs/engine.md). Paths whose files are absent are
left out. Every number printed comes from those files; nothing here measures.
"""
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def engine_result(path):
    """The key=value pairs of the engine log's last `result:` line, or None."""
    try:
        with open(path) as f:
            lines = [l for l in f if l.startswith("result:")]
    except OSError:
        return None
    if not lines:
        return None
    kv = dict(tok.split("=", 1) for tok in lines[-1].split()[1:] if "=" in tok)
    return kv


def bytes_text(b):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return "%.2f %s" % (b / scale, unit)
    return "%d B" % b


def short_dtype(t):
    return t.replace("c10::", "")


def dims_text(dims):
    return "[" + ",".join(str(d) for d in dims) + "]"


def bottleneck(rep):
    """The group behind the top copy/cast finding: the full-buffer KV cast."""
    cast = [g for g in rep["groups"] if g.get("match") and g["match"].get("capacity_tokens")]
    return max(cast, key=lambda g: g["gpu_ms"]) if cast else None


def wrap(text, width, indent):
    words, lines, cur = text.split(), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = cur + " " + w if cur else w
    if cur:
        lines.append(cur)
    return ("\n" + " " * indent).join(lines)


# the fixes, in the order the summary lists them, with what each does
FIXES = (("fp8-direct", "attention reads the FP8 pool"),
         ("active-cast", "gather the active rows, then cast them"))
PAD = 17


def line(label, text):
    print("  %-*s%s" % (PAD - 2, label, wrap(text, 84, PAD)))


def saved_text(cmp):
    b, a = cmp["before"], cmp["after"]
    saved_gpu = b["gpu_ms_per_step"] - a["gpu_ms_per_step"]
    moved = sum(-x["delta"]["bytes_per_step"] for x in cmp["groups"])
    text = ("GPU time per step %.4g -> %.4g ms (-%.4g ms, -%.1f%%); wall time per step %.4g -> %.4g ms "
            "(-%.1f%%)" % (b["gpu_ms_per_step"], a["gpu_ms_per_step"], saved_gpu,
                            100 * saved_gpu / b["gpu_ms_per_step"], b["mean_ms"], a["mean_ms"],
                            100 * (b["mean_ms"] - a["mean_ms"]) / b["mean_ms"]))
    if b.get("tokens_per_s") and a.get("tokens_per_s"):
        text += "; %.1f -> %.1f tokens/s (x%.2f)" % (b["tokens_per_s"], a["tokens_per_s"],
                                                      a["tokens_per_s"] / b["tokens_per_s"])
    return text + "; %s less copy/cast traffic per step. Resolved: %s." % (
        bytes_text(moved), ", ".join(cmp["resolved"]) or "nothing")


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out, traces = argv[1], argv[2]

    def opt(path, fn):
        return fn(path) if os.path.isfile(path) else None

    unfixed = load(os.path.join(out, "report_full-cast.json"))
    dev = unfixed["trace"]["device"] or "this GPU"
    peak = unfixed["trace"]["peak_gbps"]
    print("IN SHORT")

    # -- the bottleneck
    g = bottleneck(unfixed)
    if g is None:
        line("The bottleneck", "none found: the unfixed trace has no full-buffer KV cast")
    else:
        m = g["match"]
        bps = g["bytes_per_call"] * g["calls_per_step"]
        eff = ("%.1f%% of the %s's %.0f GB/s HBM peak" % (100 * g["efficiency"], dev, peak)
               if g["efficiency"] is not None else "HBM peak unknown")
        line("The bottleneck",
             "%s %s %s<-%s casts the WHOLE preallocated KV pool (%s = %s) %.0f times per step%s: "
             "%s per call (read + written), %s per step, %.1f%% of the GPU time, at %.0f GB/s = %s." % (
                 g["op"], dims_text(g["dims"][0]), short_dtype(g["dtypes"][0]),
                 short_dtype(g["dtypes"][1]), dims_text(g["dims"][0]), m["label"],
                 g["calls_per_step"], " (once per layer)" if m.get("per_layer") else "",
                 bytes_text(g["bytes_per_call"]), bytes_text(bps), 100 * g["gpu_fraction"],
                 g["achieved_gbps"], eff))

    # -- what each fix saved
    label = "The fix saved"
    for name, what in FIXES:
        cmp = opt(os.path.join(out, "compare_%s.json" % name), load)
        if cmp:
            line(label, "%s (%s): %s" % (name, what, saved_text(cmp)))
            label = ""

    # -- each path against the roofline
    rows = []
    for name in ["full-cast"] + [f for f, _ in FIXES]:
        rep = unfixed if name == "full-cast" else opt(os.path.join(out, "report_%s.json" % name), load)
        log = opt(os.path.join(traces, "glm5_%s.log" % name), engine_result)
        if rep and log:
            rows.append((name, rep, log))
    if not rows:
        line("HBM roofline", "(no engine logs beside the traces: bytes per step unknown)")
        return 0
    copy = float(rows[0][2].get("copy_gbps", "nan"))
    line("HBM roofline",
         "bytes moved per step (engine model: weights read + KV traffic) over the step time "
         "the trace measured; 100%% would be a step at the HBM peak (%s) or at the "
         "device-to-device copy rate measured by the engine (%.0f GB/s)." % (
             "%.0f GB/s" % peak if peak else "unknown for this device", copy))
    print("%*s%-12s %9s %13s %11s %13s %14s" % (PAD, "", "path", "step ms", "moved/step",
                                               "achieved", "% HBM peak", "% copy rate"))
    for name, rep, log in rows:
        ms = rep["steps"]["mean_ms"]
        by = float(log["bytes_per_step"])
        gbps = by / (ms * 1e6)
        of_peak = "%.1f%%" % (100 * gbps / peak) if peak else "-"
        print("%*s%-12s %9.2f %13s %8.0f GB/s %13s %13.1f%%" % (
            PAD, "", name, ms, bytes_text(by), gbps, of_peak, 100 * gbps / copy))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
