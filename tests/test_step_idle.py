#!/usr/bin/env python3
"""tests/test_step_idle.py KVSCOPE — a step's idle time is one figure, the
analysis's kvs_step.idle_ms, and the text table, the JSON and the HTML chart
all print it: step time x devices - GPU busy time, not below 0, the
complement of the busy fraction that the text and JSON print beside it.

On real single-GPU traces whose GPU work outlasts some steps' CPU ranges
(tests/traces/h200/gqa_static_graph: a torch.cuda.CUDAGraph replay, 3 of 4
steps; ../shared/traces/hta/trace_diff__test__test: 4 of 6) and one where
it does not (gqa_static_eager), each step's idle is checked against a
reading of the trace with json.load that shares no code with kvscope: the
GPU work a step launched is every kernel/memcpy/memset whose runtime call
(by correlation; its own start when the trace has none) starts inside the
step's CPU range; busy = the union of
their intervals; time = the larger of the range and the work's first start
to last end. Then text (idle ms column), JSON (steps.items[].idle_ms) and
HTML (each bar's title, "idle X ms", and its idle block's height against
the axis) must say the same. Before the fix the HTML block was the CPU range
less busy: 0 for gqa_static_graph's ProfilerStep#2 (0.865 ms range, 1.110
ms busy) although its step takes 1.559 ms.

Exit 0 pass, 1 fail, 77 when a shared trace is absent.
"""
import gzip
import json
import os
import re
import subprocess
import sys

from kvs_test import check, finish, union

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(os.environ.get("KVS_SHARED_DIR", os.path.join(HERE, "..", "..", "shared")),
                      "traces")
TRACES = [
    (os.path.join(HERE, "traces", "h200", "gqa_static_graph.json.gz"), 3),
    (os.path.join(HERE, "traces", "h200", "gqa_static_eager.json.gz"), 0),
    (os.path.join(SHARED, "hta", "trace_diff__test__test.json.gz"), 4),
]
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver", "Runtime")

def by_hand(path):
    """{step name: (time_ms, busy_ms, idle_ms)} read with json.load"""
    with gzip.open(path, "rt") as f:
        ev = json.load(f)["traceEvents"]
    launch = {}
    for e in ev:
        if e.get("cat") in RUNTIME_CATS and "correlation" in e.get("args", {}):
            launch[e["args"]["correlation"]] = float(e["ts"])
    work = [e for e in ev if e.get("cat") in GPU_CATS and e.get("ph") == "X"]
    devices = {e.get("args", {}).get("device") for e in work}
    assert len(devices) == 1, f"{path}: {len(devices)} devices; this test reads one"
    out = {}
    for s in ev:
        if s.get("cat") not in ("user_annotation", "cpu_op") or s.get("ph") != "X":
            continue
        if not str(s.get("name", "")).startswith("ProfilerStep#"):
            continue
        t0, t1 = float(s["ts"]), float(s["ts"]) + float(s["dur"])
        mine = []
        for e in work:
            # its launch; work with no runtime call in the trace goes by its own start
            at = launch.get(e.get("args", {}).get("correlation"), float(e["ts"]))
            if t0 <= at <= t1:
                mine.append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
        busy = union(mine)
        span = (max(b for _, b in mine) - min(a for a, _ in mine)) if mine else 0.0
        time = max(t1 - t0, span)
        out[s["name"]] = (time / 1e3, busy / 1e3, max(0.0, time - busy) / 1e3)
    return out


def kvscope(exe, path, fmt):
    r = subprocess.run([exe, "report", path, "--quiet", "--format", fmt], capture_output=True,
                       text=True, timeout=120)
    if not check(r.returncode == 0, f"{os.path.basename(path)} --format {fmt}: exit {r.returncode}"):
        print(r.stderr[-600:])
    return r.stdout


def fmt_ms(x):
    """kvs_fmt_ms's text (analyzers/units.c)"""
    v = abs(x)
    return f"{x:.1f}" if v >= 99.95 else f"{x:.2f}" if v >= 9.995 else f"{x:.3f}"


TOL = 5e-4  # ms: the trace's microsecond floats (5.3e12 us) carry ~1 ns each


def main():
    exe = sys.argv[1]
    for path, lagging in TRACES:
        if not os.path.exists(path):
            print(f"skip: no {path}")
            return 77
        name = os.path.basename(path)
        hand = by_hand(path)
        doc = json.loads(kvscope(exe, path, "json"))
        text = kvscope(exe, path, "text")
        html = kvscope(exe, path, "html")
        items = doc["steps"]["items"]
        check(len(items) == len(hand), f"{name}: {len(items)} steps, json.load {len(hand)}")
        check(sum(1 for s in items if s["time_ms"] > s["wall_ms"] * 1.001) == lagging,
              f"{name}: steps whose GPU work outlasts the range")
        chart = html[html.find('aria-label="GPU time per step by category"'):]
        chart = chart[:chart.find("</svg>")]
        # the y axis: 240 px for the tallest bar (its categories and idle
        # stacked) plus 5% (reports/html_svg.c)
        ymax = 1.05 * max(sum(max(0.0, v) for v in s["category_ms"].values()) +
                          max(0.0, s.get("idle_ms", hand.get(s["name"], (0, 0, 0))[2])) for s in items)
        bars = re.findall(r'<g><title>([^<]*)</title>\n((?:<rect [^>]*/>\n)*)</g>', chart)
        check(len(bars) == len(items), f"{name}: {len(bars)} bars in the steps chart")
        for i, s in enumerate(items):
            want = hand.get(s["name"])
            check(want is not None, f"{name}: {s['name']} not read by hand")
            if want is None:
                continue
            time, busy, idle = want
            tag = f"{name} {s['name']}"
            check(abs(s["time_ms"] - time) < TOL and abs(s["gpu_busy_ms"] - busy) < TOL,
                  f"{tag}: time/busy {s['time_ms']}/{s['gpu_busy_ms']}, by hand {time}/{busy}")
            # the JSON's idle: the hand count, and the complement of its busy fraction
            check(abs(s.get("idle_ms", -1) - idle) < TOL,
                  f"{tag}: json idle_ms {s.get('idle_ms')}, by hand {idle:.6f}")
            shown = fmt_ms(s.get("idle_ms", idle))
            check(abs(s.get("idle_ms", -1) - s["time_ms"] * (1 - s["gpu_busy_fraction"])) < 1e-6,
                  f"{tag}: idle_ms is not time_ms x (1 - busy fraction)")
            # the text table's row: wall, GPU, busy, idle
            row = re.search(re.escape(s["name"]) + r"(?: \([a-z-]+\))?\s+([0-9.]+)\s+([0-9.]+)\s+"
                            r"([0-9.]+)%\s+([0-9.]+)\s", text)
            check(row is not None and row.group(4) == shown,
                  f"{tag}: text idle {row.group(4) if row else None}, json {shown}")
            if i < len(bars):
                title, rects = bars[i]
                check(title.startswith(s["name"] + ":") and f"idle {shown} ms" in title,
                      f"{tag}: HTML title '{title}' lacks idle {shown} ms")
                # the idle block is the bar's last (topmost) rect, fill #e8e8e8
                hs = re.findall(r'height="([0-9.]+)" fill="#e8e8e8"', rects)
                drawn = float(hs[0]) / 240 * ymax if hs else 0.0
                check(abs(drawn - idle) <= 0.05 / 240 * ymax + TOL,
                      f"{tag}: HTML idle block {drawn:.4f} ms, want {idle:.4f}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
