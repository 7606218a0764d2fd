#!/usr/bin/env python3
"""bench/capture_table.py — the table and the verdicts of
bench/capture_overhead.sh, from its raw.txt (the lines below); plain Python,
no GPU, so tests/test_capture_table.py runs it on recorded lines.

    python3 bench/capture_table.py RAW.txt [--log docs/log/DATE-TOPIC.md]

Lines it reads (anything else is ignored):
  RESULT proc=P round=R mode=M workload=W ms=X n=N [gbps=G]
      one measurement: the median of N repetitions of workload W (launch,
      copy, decode) in mode M (plain, tp_cpu_cuda, tp_cuda, kvs) of
      process P, round R (0 = the warm-up round: not counted)
  TRACE proc=P records=N dropped_records=D buffer_requests_denied=B ...
      what the trace of kvscope process P holds (its `kvscope` object)
  TIME proc=P seconds=S      a process's wall time;  TOTAL seconds=S
  SETUP proc=P seconds=S     of which its set-up (import, model build, checks)
  CONFIG proc=P k=v ...      the sizes of a process's workloads (a measurement's)
  DEVICE NAME                the GPU (nvidia-smi's name), for the benchmarks rows
  FAIL proc=P ...            a process that failed
An overhead is paired: a round's profiled measurement over the same
round's plain of the same process, minus 1; a figure is the median of those
per-round overheads, shown with their min..max.
"""
import argparse
import collections
import re
import statistics
import sys

TARGET_RATIO = 1 / 3  # issue 20: kvscope's default at most 1/3 of torch.profiler's overhead
COPY_LIMIT = 1.0      # ... and at most 1% on the copy-bound loop
TIME_BUDGET_S = 240   # the whole bench, 7 rounds, without KVS_BENCH_EXTRA

WORKLOADS = [("launch", "launch loop"), ("copy", "copy loop"), ("decode", "decode step")]
C_WORKLOADS = [("launch", "launch loop"), ("launch_nvtx", "launch loop, NVTX range each"),
               ("copy", "copy loop")]
# process -> (its profiled modes, what the rows call it); plain is every process's base
PROCS = [
    ("bare_start", [], "no profiler, first process"),
    ("bare_end", [], "no profiler, last process"),
    ("torch", ["tp_cpu_cuda", "tp_cuda"], "torch.profiler"),
    ("kvs_default", ["kvs"], "kvscope capture (default)"),
    ("kvs_gpuonly", ["kvs"], "kvscope capture, GPU only"),
    ("kvs_all", ["kvs"], "kvscope capture --activities all"),
    ("c_bare_start", [], "C program, no profiler, first"),
    ("c_bare_end", [], "C program, no profiler, last"),
    ("c_default", ["kvs"], "C program, kvscope (default)"),
    ("c_gpuonly", ["kvs"], "C program, kvscope GPU only"),
    ("c_all", ["kvs"], "C program, kvscope --activities all"),
]
MODE_NAMES = {"plain": "plain", "tp_cpu_cuda": "CPU+CUDA", "tp_cuda": "CUDA only",
              "kvs": "captured"}


def parse(lines):
    """RESULT/TRACE/TIME/FAIL lines -> a dict of what the table needs."""
    res = collections.defaultdict(dict)  # (proc, mode, workload) -> {round: ms}
    traces, times, setup, fails, total, device, config = {}, {}, {}, [], None, None, {}
    for line in lines:
        head = line.split(" ", 1)[0]
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        if head == "RESULT" and {"proc", "round", "mode", "workload", "ms"} <= kv.keys():
            r = int(kv["round"])
            if r > 0:
                res[(kv["proc"], kv["mode"], kv["workload"])][r] = float(kv["ms"])
        elif head == "TRACE" and "proc" in kv:
            traces[kv["proc"]] = {k: int(v) for k, v in kv.items() if k != "proc" and v.isdigit()}
        elif head == "TIME" and "proc" in kv:
            times[kv["proc"]] = float(kv["seconds"])
        elif head == "CONFIG" and "proc" in kv:
            config[kv["proc"]] = " ".join("%s=%s" % (k, v) for k, v in kv.items() if k != "proc")
        elif head == "SETUP" and "proc" in kv:
            setup[kv["proc"]] = float(kv["seconds"])
        elif head == "TOTAL":
            total = float(kv["seconds"])
        elif head == "FAIL":
            fails.append(line.strip())
        elif head == "DEVICE":
            device = line.split(" ", 1)[1].strip() if " " in line.strip() else None
    return {"res": res, "traces": traces, "times": times, "setup": setup, "config": config,
            "fails": fails, "total": total,
            "device": device}


def overheads(d, proc, mode, w):
    """per-round overheads (%) of proc's mode against proc's plain, by round"""
    got, base = d["res"].get((proc, mode, w), {}), d["res"].get((proc, "plain", w), {})
    return {r: 100 * (got[r] / base[r] - 1) for r in sorted(got) if r in base and base[r] > 0}


def quartiles(v):
    """(p25, p75) of v, inclusive method (a single value: itself twice)"""
    if len(v) < 2:
        return (v[0], v[0]) if v else (None, None)
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def summary(d, proc, mode, w):
    """(median ms, rounds, median overhead %, min %, max %, p25 %, p75 %) or None
    when not measured; the overheads are None for plain"""
    got = d["res"].get((proc, mode, w))
    if not got:
        return None
    o = list(overheads(d, proc, mode, w).values()) if mode != "plain" else []
    med = statistics.median(o) if o else None
    return (statistics.median(got.values()), len(got), med, min(o) if o else None,
            max(o) if o else None) + quartiles(o)


def pct(x):
    return "-" if x is None else "%+.1f%%" % x


def ratio_criteria(d, tp, tname):
    """[(criterion, met, text)]: kvscope's default over torch.profiler mode tp
    on the launch loop and the decode step, against TARGET_RATIO"""
    out = []
    for w in ("launch", "decode"):
        k = summary(d, "kvs_default", "kvs", w)
        t = summary(d, "torch", tp, w)
        name = "%s: kvscope default <= 1/3 of torch.profiler %s" % (w, tname)
        if not k or not t or k[2] is None or t[2] is None:
            out.append((name, None, "not measured"))
            continue
        if t[2] <= 0:
            out.append((name, None, "torch.profiler %s costs nothing here (%s): no ratio"
                        % (tname, pct(t[2]))))
            continue
        ratio = k[2] / t[2]
        # the same comparison round by round (same round index, two processes)
        ko, to = overheads(d, "kvs_default", "kvs", w), overheads(d, "torch", tp, w)
        both = [r for r in ko if r in to]
        agree = sum((ko[r] <= TARGET_RATIO * to[r]) == (ratio <= TARGET_RATIO) for r in both)
        out.append((name, ratio <= TARGET_RATIO,
                    "%s [p25..p75 %s..%s] / %s [%s..%s] = %.2f (target <= %.2f); rounds on the"
                    " same side: %d of %d" % (pct(k[2]), pct(k[5]), pct(k[6]), pct(t[2]), pct(t[5]),
                                              pct(t[6]), ratio, TARGET_RATIO, agree, len(both))))
    return out


def references(d):
    """The same ratios against torch.profiler with CUDA activities only: shown,
    not judged. Issue 20's torch.profiler is the profiler as one runs it, its
    default activities (CPU and CUDA: the +25%..+65% the issue measured);
    CUDA only costs about half as much, and CUPTI's kernel records alone
    (kvscope GPU-only) are ~0.4..0.6 of it on the H200."""
    return ratio_criteria(d, "tp_cuda", "CUDA only")


def verdicts(d):
    """[(criterion, met: True/False/None (not measured), text)]: issue 20's target"""
    out = ratio_criteria(d, "tp_cpu_cuda", "CPU+CUDA")
    k = summary(d, "kvs_default", "kvs", "copy")
    name = "copy: kvscope default <= %.0f%%" % COPY_LIMIT
    if not k or k[2] is None:
        out.append((name, None, "not measured"))
    else:
        out.append((name, k[2] <= COPY_LIMIT, "%s [p25..p75 %s..%s] (rounds %s..%s)"
                    % (pct(k[2]), pct(k[5]), pct(k[6]), pct(k[3]), pct(k[4]))))
    captured = sorted({p for (p, m, _) in d["res"] if m == "kvs"})
    lost = [p for p, t in sorted(d["traces"].items())
            if t.get("dropped_records", 0) or t.get("buffer_requests_denied", 0)]
    missing = [p for p in captured if p not in d["traces"]]
    why = []
    if lost:
        why.append("records lost in " + ", ".join(lost) + " (raise KVS_BENCH_MAX_BUFFERS)")
    if missing:
        why.append("no trace summary of " + ", ".join(missing))
    out.append(("kvscope traces complete (no dropped record, no denied buffer)",
                None if not captured else not why,
                "no kvscope process" if not captured else "; ".join(why) if why else
                "%d traces, none dropped" % len(captured)))
    return out


def bare_plain(d, w, c):
    """every round of the bare processes' plain (the C program's with c)"""
    pre = "c_bare" if c else "bare"
    return [v for p in (pre + "_start", pre + "_end") for v in d["res"].get((p, "plain", w), {}).values()]


def render(d, log="log/2026-12-02-capture-overhead.md"):
    o = []
    p = o.append
    rounds = max((len(v) for v in d["res"].values()), default=0)
    p("Paired rounds (%d), each measurement short (one repetition by default); overhead = a round's"
      " profiled / the same round's plain of the same process - 1: the median of the rounds',"
      " [p25..p75], (min..max)." % rounds)
    p("")
    for c in (False, True):  # the sizes, once per distinct set
        sizes = sorted({v for k, v in d.get("config", {}).items() if k.startswith("c_") == c})
        if sizes:
            p("%s a measurement: %s" % ("C program," if c else "PyTorch,", "; ".join(sizes)))
            p("")
    for c, wl in ((False, WORKLOADS), (True, C_WORKLOADS)):
        rows = []
        for proc, modes, label in PROCS:
            if proc.startswith("c_") != c:
                continue
            for mode in ["plain"] + modes:
                cells = [summary(d, proc, mode, w) for w, _ in wl]
                if any(cells):
                    rows.append((label, mode, cells))
        if not rows:
            continue
        p("%s:" % ("bench/capture_overhead.cu (--paired)" if c else "PyTorch (bench/capture_torch.py)"))
        p("")
        p("| process | mode | " + " | ".join("%s ms | overhead [p25..p75] (min..max) | rounds" % t
                                              for _, t in wl) + " |")
        p("|---|---|" + "---|---|---|" * len(wl))
        for label, mode, cells in rows:
            s = []
            for x in cells:
                if not x:
                    s.append("- | - | -")
                elif x[2] is None:
                    s.append("%.3f | - | %d" % (x[0], x[1]))
                else:
                    s.append("%.3f | %s [%s..%s] (%s..%s) | %d" % (x[0], pct(x[2]), pct(x[5]), pct(x[6]),
                                                                  pct(x[3]), pct(x[4]), x[1]))
            p("| %s | %s | %s |" % (label, MODE_NAMES.get(mode, mode), " | ".join(s)))
        p("")
        # a subscribed process's plain (window closed / profiler off) against no profiler at all
        lines = []
        for w, _ in wl:
            bare = bare_plain(d, w, c)
            if not bare:
                continue
            bm, lo, hi = statistics.median(bare), min(bare), max(bare)
            for proc, modes, label in PROCS:
                if proc.startswith("c_") != c or "bare" in proc or not modes:
                    continue
                x = summary(d, proc, "plain", w)
                if x:
                    lines.append("- %s, %s: plain %.3f ms against bare %.3f ms (%+.1f%%); %s the bare"
                                 " rounds' %.3f..%.3f ms" % (w, label, x[0], bm, 100 * (x[0] / bm - 1),
                                                             "within" if lo <= x[0] <= hi else "OUTSIDE",
                                                             lo, hi))
        if lines:
            p("Plain inside a profiled process against bare processes (no profiler, no kvscope):")
            p("")
            o.extend(lines)
            p("")
    p("The other captures against torch.profiler CPU+CUDA (not judged):")
    p("")
    for w in ("launch", "decode"):  # GPU-only and every call: how far from the target
        for proc in ("kvs_gpuonly", "kvs_all"):
            k, t = summary(d, proc, "kvs", w), summary(d, "torch", "tp_cpu_cuda", w)
            if k and t and k[2] is not None and t[2] and t[2] > 0:
                p("- %s: %s %s / torch.profiler CPU+CUDA %s = %.2f" % (
                    w, dict((a, c) for a, _, c in PROCS)[proc], pct(k[2]), pct(t[2]), k[2] / t[2]))
    p("")
    p("Issue 20's target (kvscope's default: at most 1/3 of torch.profiler's overhead on the"
      " launch loop and the decode step, at most 1% on the copy loop):")
    p("")
    vs = verdicts(d)
    for name, met, text in vs:
        p("- %s: **%s** — %s" % (name, "met" if met else "NOT met" if met is False else "no verdict", text))
    judged = [m for n, m, _ in vs]
    p("- overall: **%s**" % ("met" if all(m is True for m in judged) else
                           "NOT met" if any(m is False for m in judged) else "no verdict (not all measured)"))
    p("")
    p("For reference, not judged: the same against torch.profiler with CUDA activities only"
      " (about half of its default's cost; CUPTI's kernel records alone are much of it):")
    p("")
    for name, met, text in references(d):
        p("- %s: %s — %s" % (name, "within 1/3" if met else "over 1/3" if met is False else "no ratio",
                              text))
    p("")
    if d["traces"]:
        p("kvscope traces (their `kvscope` object):")
        p("")
        for proc, t in sorted(d["traces"].items()):
            bad = t.get("dropped_records", 0) or t.get("buffer_requests_denied", 0)
            p("- %s: %d records, %d dropped, %d buffer requests denied%s%s" % (
                proc, t.get("records", 0), t.get("dropped_records", 0), t.get("buffer_requests_denied", 0),
                ", %d buffers used of %d" % (t["buffers_used"], t["buffers_max"])
                if "buffers_used" in t and "buffers_max" in t else "",
                " — RECORDS LOST: this process's figures are not valid" if bad else ""))
        p("")
    for f in d["fails"]:
        p("- %s" % f)
    if d["times"] or d["total"] is not None:
        p("Time: " + ", ".join("%s %.0f s%s" % (k, v, " (setup %.0f s)" % d["setup"][k] if k in d["setup"] else "")
                               for k, v in d["times"].items()) +
          ("; total %.0f s (budget %d s: %s)" % (d["total"], TIME_BUDGET_S,
                                                  "met" if d["total"] <= TIME_BUDGET_S else "NOT met")
           if d["total"] is not None else ""))
        p("")
    dev = d["device"] or "DEVICE"
    p("docs/benchmarks.md rows (fill in the date):")
    p("")
    rows = (("kvs_default", "kvs", "kvscope default"), ("kvs_gpuonly", "kvs", "kvscope GPU only"),
            ("kvs_all", "kvs", "kvscope every call"), ("torch", "tp_cpu_cuda", "torch.profiler CPU+CUDA"),
            ("torch", "tp_cuda", "torch.profiler CUDA only"), ("c_default", "kvs", "kvscope default"),
            ("c_gpuonly", "kvs", "kvscope GPU only"), ("c_all", "kvs", "kvscope every call"))
    for w, t in WORKLOADS + C_WORKLOADS[1:2]:
        for proc, mode, label in rows:
            x = summary(d, proc, mode, w)
            if not x or x[2] is None:
                continue
            base = summary(d, proc, "plain", w)
            p("| %s %s; plain %.3f ms | %s | **%s** (p25..p75 %s..%s; %d paired rounds) | DATE | %s | [log](%s) |"
              % ("C" if proc.startswith("c_") else "PyTorch", t, base[0], label, pct(x[2]), pct(x[5]),
                 pct(x[6]), x[1], dev, log))
    return "\n".join(o) + "\n"


def main():
    ap = argparse.ArgumentParser(description="the table of bench/capture_overhead.sh from its raw.txt")
    ap.add_argument("raw")
    ap.add_argument("--log", default="log/2026-12-02-capture-overhead.md",
                    help="the raw output's link in the docs/benchmarks.md rows")
    a = ap.parse_args()
    try:
        with open(a.raw, errors="replace") as f:
            d = parse(f)
    except OSError as e:
        print("capture_table: %s" % e, file=sys.stderr)
        return 2
    sys.stdout.write(render(d, a.log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
