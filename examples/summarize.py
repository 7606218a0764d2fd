#!/usr/bin/env python3
"""examples/summarize.py — the closing summary of the main job (examples/demo.sh):
what the bottleneck was, what the fix saved, and how efficient each KV path is
against the HBM roofline, in a few lines a newcomer can read.

    python3 examples/summarize.py UNFIXED.report.json FIXED.report.json COMPARE.json \
        [UNFIXED_ENGINE.log FIXED_ENGINE.log]

The inputs are kvscope's own outputs: `kvscope report --format json` of each
trace (kvscope.report/1), `kvscope compare --format json` (kvscope.compare/1;
both in docs/report-json.md) and, for the roofline, the log `kvscope engine`
printed while it made each trace (its `result:` line gives the bytes moved per
step by the engine's model: weights read + KV traffic, docs/engine.md). Every
number printed comes from those files; nothing here measures anything.
"""
import json
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


def main(argv):
    if len(argv) not in (4, 6):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    unfixed, fixed, cmp = load(argv[1]), load(argv[2]), load(argv[3])
    logs = (engine_result(argv[4]), engine_result(argv[5])) if len(argv) == 6 else (None, None)
    dev = unfixed["trace"]["device"] or "this GPU"
    peak = unfixed["trace"]["peak_gbps"]
    pad = 17
    print("IN SHORT")

    # -- the bottleneck
    g = bottleneck(unfixed)
    if g is None:
        print("  %-*s none found: the unfixed trace has no full-buffer KV cast" % (pad - 2, "The bottleneck"))
    else:
        m = g["match"]
        bps = g["bytes_per_call"] * g["calls_per_step"]
        eff = ("%.1f%% of the %s's %.0f GB/s HBM peak" % (100 * g["efficiency"], dev, peak)
               if g["efficiency"] is not None else "HBM peak unknown")
        text = ("%s %s %s<-%s casts the WHOLE preallocated KV pool (%s = %s) "
                "%.0f times per step%s: %s per call (read + written), %s per step, %.1f%% of the GPU "
                "time, at %.0f GB/s = %s." % (
                    g["op"], dims_text(g["dims"][0]), short_dtype(g["dtypes"][0]),
                    short_dtype(g["dtypes"][1]), dims_text(g["dims"][0]), m["label"],
                    g["calls_per_step"],
                    " (once per layer)" if m.get("per_layer") else "",
                    bytes_text(g["bytes_per_call"]), bytes_text(bps), 100 * g["gpu_fraction"],
                    g["achieved_gbps"], eff))
        print("  %-*s%s" % (pad - 2, "The bottleneck", wrap(text, 84, pad)))

    # -- what the fix saved
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
    text += "; %s less copy/cast traffic per step. Resolved: %s." % (
        bytes_text(moved), ", ".join(cmp["resolved"]) or "nothing")
    print("  %-*s%s" % (pad - 2, "The fix saved", wrap(text, 84, pad)))

    # -- each path against the roofline
    if logs[0] and logs[1]:
        copy = float(logs[0].get("copy_gbps", "nan"))
        print("  %-*s%s" % (pad - 2, "HBM roofline", wrap(
            "bytes moved per step (engine model: weights read + KV traffic) over the step time "
            "the trace measured; 100%% would be a step at the HBM peak (%s) or at the "
            "device-to-device copy rate measured by the engine (%.0f GB/s)." % (
                "%.0f GB/s" % peak if peak else "unknown for this device", copy),
            84, pad)))
        print("%*s%-12s %9s %13s %11s %13s %14s" % (pad, "", "path", "step ms", "moved/step",
                                                   "achieved", "% HBM peak", "% copy rate"))
        for rep, log in ((unfixed, logs[0]), (fixed, logs[1])):
            ms = rep["steps"]["mean_ms"]
            by = float(log["bytes_per_step"])
            gbps = by / (ms * 1e6)
            of_peak = "%.1f%%" % (100 * gbps / peak) if peak else "-"
            print("%*s%-12s %9.2f %13s %8.0f GB/s %13s %13.1f%%" % (
                pad, "", log.get("path", "?"), ms, bytes_text(by), gbps, of_peak,
                100 * gbps / copy))
    else:
        print("  %-*s(no engine logs beside the traces: bytes per step unknown)" % (pad - 2, "HBM roofline"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
