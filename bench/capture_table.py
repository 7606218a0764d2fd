#!/usr/bin/env python3
"""bench/capture_table.py — the table and the verdicts of
bench/capture_overhead.sh (and, with --idle, of bench/capture_idle.sh) from
its raw.txt; plain Python, no GPU, so tests/test_capture_table.py runs it on
recorded lines.

    python3 bench/capture_table.py RAW.txt [--log log/DATE-TOPIC.md]
    python3 bench/capture_table.py --idle RAW.txt

Lines it reads (anything else is ignored):
  RESULT cycle=C seq=Q proc=P [ctx=K] round=R mode=M workload=W ms=X n=N ...
      one measurement of process number Q (of kind P; with ctx=, of its
      K-th CUDA context: capture_overhead.cu --contexts, each context a
      unit of its own below, as a process is): the median of N
      repetitions of workload W (launch, copy, decode; the C program's
      launch, launch_nvtx, copy; whole) in mode M (plain, tp_cpu_cuda,
      tp_cuda, tp_shapes, kvs, whole), round R (0 = the warm-up round: not counted,
      but for the whole-process program, whose one result is round 0)
  TRACE proc=P seq=Q records=N dropped_records=D buffer_requests_denied=B
      kernels_without_call=K ...   what the trace of a kvscope process holds
  TIME proc=P seq=Q seconds=S  a process's wall time;  TOTAL seconds=S
  SETUP proc=P seconds=S       of which its set-up (import, model build, checks)
  WHOLE proc=P work_s=S export_s=E   a whole-process program's profiled part
  CONFIG proc=P k=v ...        the sizes of a process's workloads
  DEVICE NAME                  the GPU (nvidia-smi's name)
  FAIL proc=P ...              a process that failed
Against bare (the figures judged): a process's figure is the median of its
rounds; a kind's, the median over its processes. Each is compared with the
bare processes three ways: with all of them (the median of their figures),
with the bare processes run just before and after it (neighbours: the
machine drifts during a run; the median over the kind's processes of each
one's ratio to the mean of its two neighbours — the figure judged), and
fastest round against fastest round. Where a kind and the bare have 3
units (processes, or contexts) or more each, a verdict also reads the
interval their spread allows — the kind's p25..p75 over the bare's
p75..p25 — and is "not resolved (noise)" when the target lies inside it.
The paired view (a second view): a
round's profiled measurement over the same round's plain of the same
process, minus 1, the median over every process's rounds.
"""
import argparse
import collections
import re
import statistics
import sys

CLOSED_LIMIT = 3.0   # target: window closed at most +3% against bare
TARGET_RATIO = 1 / 3  # kvscope's default at most 1/3 of torch.profiler CPU+CUDA's overhead
GPUONLY_LIMIT = 10.0  # GPU-only at most +10%
WHOLE_RATIO = 1 / 2   # whole process: kvscope at most 1/2 of torch.profiler's overhead
TORCHOPS_RATIO = 1 / 2  # torch ops: kvscope's at most 1/2 of torch.profiler's with shapes

NOISE = "noise"  # a verdict the units' spread leaves open: "not resolved (noise)"

WORKLOADS = [("launch", "launch loop"), ("copy", "copy loop"), ("decode", "decode step")]
C_WORKLOADS = [("launch", "launch loop"), ("launch_nvtx", "launch loop, NVTX range each"),
               ("copy", "copy loop")]
# (row label, process kind, mode): what the tables show, in this order
ROWS = [
    ("no profiler (bare)", "bare", "plain"),
    ("torch.profiler CPU+CUDA", "torch", "tp_cpu_cuda"),
    ("torch.profiler CUDA only", "torch", "tp_cuda"),
    ("torch.profiler CPU+CUDA, record_shapes", "torch", "tp_shapes"),
    ("kvscope default", "kvs_default", "kvs"),
    ("kvscope with torch ops", "kvs_torch", "kvs"),
    ("kvscope GPU only", "kvs_gpuonly", "kvs"),
    ("kvscope every call", "kvs_all", "kvs"),
    ("kvscope, window never opened", "kvs_closed", "plain"),
    ("kvscope default, between windows", "kvs_default", "plain"),
    ("kvscope GPU only, between windows", "kvs_gpuonly", "plain"),
    ("kvscope every call, between windows", "kvs_all", "plain"),
    ("kvscope with torch ops, between windows", "kvs_torch", "plain"),
    ("torch.profiler, between sessions", "torch", "plain"),
]
C_ROWS = [
    ("no profiler (bare)", "c_bare", "plain"),
    ("kvscope default", "c_default", "kvs"),
    ("kvscope GPU only", "c_gpuonly", "kvs"),
    ("kvscope every call", "c_all", "kvs"),
    ("kvscope, window never opened", "c_closed", "plain"),
    ("kvscope default, between windows", "c_default", "plain"),
    ("kvscope GPU only, between windows", "c_gpuonly", "plain"),
    ("kvscope every call, between windows", "c_all", "plain"),
]
WHOLE_ROWS = [("plainly", "whole_bare"), ("under kvscope capture (whole run)", "whole_kvs"),
              ("under torch.profiler CPU+CUDA (one session)", "whole_torch"),
              ("under kvscope capture with torch ops (whole run)", "whole_kvs_torch"),
              ("under torch.profiler CPU+CUDA, record_shapes (one session)", "whole_torch_shapes")]
BARE = {"": "bare", "c": "c_bare", "whole": "whole_bare"}


def family(proc):
    return "c" if proc.startswith("c_") else "whole" if proc.startswith("whole") else ""


def parse(lines):
    """raw.txt's lines -> a dict of what the table needs."""
    res = collections.defaultdict(lambda: collections.defaultdict(dict))  # (proc, mode, w) -> seq -> round -> ms
    order = {}  # seq -> proc
    traces, times, setup, whole, fails, total, device, config = {}, {}, {}, {}, [], None, None, {}
    sets = []  # (name, activity list) of KVS_BENCH_SETS, in its order
    for line in lines:
        head = line.split(" ", 1)[0]
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        if head == "RESULT" and {"proc", "round", "mode", "workload", "ms"} <= kv.keys():
            r, q = int(kv["round"]), int(kv.get("seq", 0))
            if "ctx" in kv:  # capture_overhead.cu --contexts: each CUDA context a unit of its own
                q = q + (int(kv["ctx"]) + 1) / 1000.0
            if r > 0 or kv["workload"] == "whole":
                res[(kv["proc"], kv["mode"], kv["workload"])][q][r] = float(kv["ms"])
                order[q] = kv["proc"]
        elif head == "TRACE" and "proc" in kv:
            traces[(kv["proc"], kv.get("seq", "0"))] = {k: int(v) for k, v in kv.items()
                                                         if k not in ("proc", "seq") and v.isdigit()}
        elif head == "TIME" and "proc" in kv:
            times[int(kv.get("seq", 0))] = (kv["proc"], float(kv["seconds"]))
        elif head == "CONFIG" and "proc" in kv:
            config[kv["proc"]] = " ".join("%s=%s" % (k, v) for k, v in kv.items()
                                          if k not in ("proc", "seq", "cycle"))
        elif head == "SETUP" and "proc" in kv:
            setup[int(kv.get("seq", 0))] = float(kv["seconds"])
        elif head == "WHOLE" and "proc" in kv:
            whole[int(kv.get("seq", 0))] = (float(kv["work_s"]), float(kv["export_s"]))
        elif head == "TOTAL":
            total = float(kv["seconds"])
        elif head == "FAIL":
            fails.append(line.strip())
        elif head == "SET" and "name" in kv:
            sets.append((kv["name"], kv.get("activities", "?")))
        elif head == "DEVICE":
            device = line.split(" ", 1)[1].strip() if " " in line.strip() else None
    return {"res": res, "order": order, "traces": traces, "times": times, "setup": setup,
            "whole": whole, "config": config, "fails": fails, "total": total, "device": device,
            "sets": sets}


def py_rows(d):
    """ROWS and, after kvscope's own, a row pair for each activity set of the run"""
    extra = [("kvscope set %s (%s)" % (n, a), "kvs_set_" + n, "kvs") for n, a in d.get("sets", [])]
    extra += [("kvscope set %s, between windows" % n, "kvs_set_" + n, "plain") for n, _ in d.get("sets", [])]
    at = next(i for i, r in enumerate(ROWS) if r[1] == "kvs_closed")
    return ROWS[:at] + extra + ROWS[at:]


def pct(x):
    return "-" if x is None else "%+.1f%%" % x


def quartiles(v):
    """(p25, p75) of v, inclusive method (a single value: itself twice)"""
    if len(v) < 2:
        return (v[0], v[0]) if v else (None, None)
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def per_process(d, proc, mode, w):
    """{seq: (median round, fastest round, rounds)} of proc's mode"""
    return {q: (statistics.median(r.values()), min(r.values()), len(r))
            for q, r in d["res"].get((proc, mode, w), {}).items() if r}


def figure(d, proc, mode, w):
    """None, or a dict: ms (the kind's figure), fast, procs, rounds, and against
    bare: all, nb (neighbours: the figure judged), fastest (all in %)"""
    pp = per_process(d, proc, mode, w)
    if not pp:
        return None
    f = {"ms": statistics.median(v[0] for v in pp.values()),
         "fast": statistics.median(v[1] for v in pp.values()),
         "procs": len(pp), "rounds": sum(v[2] for v in pp.values()),
         "meds": sorted(v[0] for v in pp.values())}
    bproc = BARE[family(proc)]
    bmode = "whole" if family(proc) == "whole" else "plain"
    bare = per_process(d, bproc, bmode, w)
    if proc == bproc or not bare:
        return f
    bm = statistics.median(v[0] for v in bare.values())
    bf = statistics.median(v[1] for v in bare.values())
    f["all"] = 100 * (f["ms"] / bm - 1)
    f["fastest"] = 100 * (f["fast"] / bf - 1)
    seqs = sorted(bare)
    ratios = []
    for q, v in pp.items():
        ref = [bare[s][0] for s in [s for s in seqs if s < q][-1:] + [s for s in seqs if s > q][:1]]
        if ref:
            ratios.append(v[0] / (sum(ref) / len(ref)) - 1)
    f["nb"] = 100 * statistics.median(ratios) if ratios else None
    if len(pp) >= 3 and len(bare) >= 3:  # the spread of units: an interval of the overhead
        k25, k75 = quartiles(sorted(v[0] for v in pp.values()))
        b25, b75 = quartiles(sorted(v[0] for v in bare.values()))
        f["lo"], f["hi"] = 100 * (k25 / b75 - 1), 100 * (k75 / b25 - 1)
    return f


def interval(f):
    """' [lo..hi] from the units' spread' or ''"""
    return "" if "lo" not in f else "; units' spread allows %s..%s" % (pct(f["lo"]), pct(f["hi"]))


def paired(d, proc, mode, w):
    """the paired view: per-round overheads (%) of proc's mode against the same
    round's plain of the same process, over every process of the kind"""
    got, base = d["res"].get((proc, mode, w), {}), d["res"].get((proc, "plain", w), {})
    o = [100 * (r[k] / base[q][k] - 1) for q, r in got.items() for k in r
         if q in base and k in base[q] and base[q][k] > 0]
    if not o:
        return None
    p25, p75 = quartiles(o)
    return statistics.median(o), p25, p75, len(o)


def against(f):
    """'+x% / +y% / +z%' (all / neighbours / fastest)"""
    return "%s / **%s** / %s" % (pct(f.get("all")), pct(f.get("nb")), pct(f.get("fastest")))


def judged(f):
    """the figure a verdict reads: against the neighbouring bare processes"""
    return None if not f else f.get("nb")


def limit_verdict(d, name, proc, mode, workloads, limit):
    out = []
    for w in workloads:
        f = figure(d, proc, mode, w)
        n = "%s: %s <= %+.0f%%" % (w, name, limit)
        if not f or judged(f) is None:
            out.append((n, None, "not measured"))
            continue
        others = [f.get("all"), f.get("fastest")]
        agree = all(x is not None and (x <= limit) == (f["nb"] <= limit) for x in others)
        met = f["nb"] <= limit
        if "lo" in f and f["lo"] <= limit <= f["hi"]:
            met = NOISE
        out.append((n, met, "%s against its neighbouring bare processes (all bare: %s;"
                    " fastest rounds: %s; %s); %d %s, %d rounds%s" % (
                        pct(f["nb"]), pct(f.get("all")), pct(f.get("fastest")),
                        "the same side on all three" if agree else "NOT the same side on all three",
                        f["procs"], "units" if any(isinstance(q, float) for q in per_process(d, proc, mode, w))
                        else "processes", f["rounds"], interval(f))))
    return out


def ratio_verdict(d, name, k, t, workloads, target):
    """kvscope's overhead over torch.profiler's, both against bare"""
    out = []
    for w in workloads:
        kf, tf = figure(d, k[0], k[1], w), figure(d, t[0], t[1], w)
        n = "%s: %s <= %s of torch.profiler's" % (w, name, "1/3" if target < 0.4 else "1/2")
        if not kf or not tf or judged(kf) is None or judged(tf) is None:
            out.append((n, None, "not measured"))
            continue
        if tf["nb"] <= 0:
            out.append((n, None, "torch.profiler costs nothing here (%s): no ratio" % pct(tf["nb"])))
            continue
        ratio = max(kf["nb"], 0.0) / tf["nb"]
        alts = [(kf.get(e), tf.get(e)) for e in ("all", "fastest")]
        alt = ["%.2f" % (max(a, 0.0) / b) if a is not None and b and b > 0 else "-" for a, b in alts]
        met, spread = ratio <= target, ""
        if "lo" in kf and "lo" in tf and tf["lo"] > 0:
            rlo, rhi = max(kf["lo"], 0.0) / tf["hi"], max(kf["hi"], 0.0) / tf["lo"]
            spread = "; units' spread allows %.2f..%.2f" % (rlo, rhi)
            if rlo <= target <= rhi:
                met = NOISE
        elif "lo" in kf and "lo" in tf:
            spread = "; torch.profiler's spread reaches 0: the ratio is not resolved"
            met = NOISE
        out.append((n, met, "%s / %s = %.2f (target <= %.2f) against the neighbouring bare"
                    " processes; against all bare %s, fastest rounds %s%s" % (
                        pct(kf["nb"]), pct(tf["nb"]), ratio, target, alt[0], alt[1], spread)))
    return out


def verdicts(d):
    """[(criterion, met: True/False/None (not measured), text)]: the capture targets, and
    the torch-ops targets where their kinds ran (KVS_BENCH_TORCHOPS; the capture targets
    then only where their own kinds ran too)"""
    out = []
    torchops = any(figure(d, p, m, w) for p, m, w in (("kvs_torch", "kvs", "launch"),
                                                       ("kvs_torch", "kvs", "decode"),
                                                       ("whole_kvs_torch", "whole", "whole")))
    issue32 = any(figure(d, p, m, w) for p, m, w in (("kvs_default", "kvs", "launch"),
                                                      ("kvs_closed", "plain", "launch"),
                                                      ("whole_kvs", "whole", "whole")))
    if issue32 or not torchops:
        out += issue32_verdicts(d)
    if figure(d, "c_bare", "plain", "launch"):  # the C program's loop, where it ran
        out += limit_verdict(d, "C program, window never opened", "c_closed", "plain", ("launch",),
                             CLOSED_LIMIT)
        out += limit_verdict(d, "C program, kvscope default between windows", "c_default", "plain",
                             ("launch",), CLOSED_LIMIT)
        out += limit_verdict(d, "C program, kvscope GPU only", "c_gpuonly", "kvs", ("launch",),
                             GPUONLY_LIMIT)
    if torchops:
        # torch ops against torch.profiler with record_shapes=True
        out += ratio_verdict(d, "kvscope with torch ops", ("kvs_torch", "kvs"), ("torch", "tp_shapes"),
                             ("launch", "decode"), TORCHOPS_RATIO)
        out += ratio_verdict(d, "whole process: kvscope capture with torch ops", ("whole_kvs_torch", "whole"),
                             ("whole_torch_shapes", "whole"), ("whole",), TORCHOPS_RATIO)
    return out + [complete_verdict(d)]


def issue32_verdicts(d):
    out = []
    out += limit_verdict(d, "kvscope, window never opened", "kvs_closed", "plain", ("launch", "decode"),
                         CLOSED_LIMIT)
    out += limit_verdict(d, "kvscope default, window closed between windows", "kvs_default", "plain",
                         ("launch", "decode"), CLOSED_LIMIT)
    out += ratio_verdict(d, "kvscope default", ("kvs_default", "kvs"), ("torch", "tp_cpu_cuda"),
                         ("launch", "decode"), TARGET_RATIO)
    out += limit_verdict(d, "kvscope GPU only", "kvs_gpuonly", "kvs", ("launch", "decode"), GPUONLY_LIMIT)
    out += ratio_verdict(d, "whole process: kvscope capture", ("whole_kvs", "whole"),
                         ("whole_torch", "whole"), ("whole",), WHOLE_RATIO)
    return out


def complete_verdict(d):
    lost = sorted("%s#%s" % k for k, t in d["traces"].items()
                  if t.get("dropped_records", 0) or t.get("buffer_requests_denied", 0))
    unlinked = sorted("%s#%s (%d)" % (k + (t["kernels_without_call"],)) for k, t in d["traces"].items()
                      if t.get("kernels_without_call", 0))
    why = []
    if lost:
        why.append("records lost in " + ", ".join(lost) + " (raise KVS_BENCH_MAX_BUFFERS)")
    if unlinked:
        why.append("kernels without their launch call in " + ", ".join(unlinked))
    return ("kvscope traces complete (no dropped record, no denied buffer, every kernel tied to its"
            " launch call)", None if not d["traces"] else not why,
            "no kvscope trace" if not d["traces"] else "; ".join(why) if why else
            "%d traces, none lost a record, kernels_without_call 0 in each" % len(d["traces"]))


def table(d, rows, wl, p):
    have = [(label, proc, mode) for label, proc, mode in rows
            if any(figure(d, proc, mode, w) for w, _ in wl)]
    if not have:
        return False
    p("| process | " + " | ".join("%s ms | against bare: all / **neighbours** / fastest | procs"
                                   % t for _, t in wl) + " |")
    p("|---|" + "---|---|---|" * len(wl))
    for label, proc, mode in have:
        cells = []
        for w, _ in wl:
            f = figure(d, proc, mode, w)
            if not f:
                cells.append("- | - | -")
            elif "all" not in f:
                cells.append("%.3f (%.3f..%.3f) | - | %d" % (f["ms"], f["meds"][0], f["meds"][-1], f["procs"]))
            else:
                cells.append("%.3f | %s | %d" % (f["ms"], against(f), f["procs"]))
        p("| %s | %s |" % (label, " | ".join(cells)))
    p("")
    return True


def render(d, log="log/DATE-capture-overhead.md"):
    o = []
    p = o.append
    p("Against bare processes of the same run (no profiler, no kvscope), taking turns with the"
      " profiled ones: a process's figure is the median of its rounds, a kind's the median over its"
      " processes; against bare three ways — all bare processes, the bare processes just before and"
      " after each (neighbours, **the figure judged**), fastest round against fastest round.")
    p("")
    for c in ("", "c"):
        sizes = sorted({v for k, v in d["config"].items() if family(k) == c})
        if sizes:
            p("%s a measurement: %s" % ("C program," if c else "PyTorch,", "; ".join(sizes)))
            p("")
    for title, rows, wl in (("PyTorch (bench/capture_torch.py)", py_rows(d), WORKLOADS),
                            ("bench/capture_overhead.cu", C_ROWS, C_WORKLOADS)):
        body = []
        if table(d, rows, wl, body.append):
            p(title + ":")
            p("")
            o.extend(body)
    wh = [(label, proc, figure(d, proc, "whole", "whole")) for label, proc in WHOLE_ROWS]
    if any(f for _, _, f in wh):
        p("Whole process (bench/capture_whole.py: 5 x 5000 adds timed inside the program, the median;"
          " the process's wall time beside it):")
        p("")
        p("| program run | loop ms | against bare: all / **neighbours** / fastest | processes |"
          " process s (median) | profiled part s | trace export s |")
        p("|---|---|---|---|---|---|---|")
        for label, proc, f in wh:
            if not f:
                continue
            secs = [s for q, (pr, s) in d["times"].items() if pr == proc]
            work = [d["whole"][q] for q, (pr, _) in d["times"].items() if pr == proc and q in d["whole"]]
            p("| %s | %.3f | %s | %d | %s | %s | %s |" % (
                label, f["ms"], against(f) if "all" in f else "-", f["procs"],
                "%.1f" % statistics.median(secs) if secs else "-",
                "%.2f" % statistics.median(w for w, _ in work) if work else "-",
                "%.2f" % statistics.median(e for _, e in work) if work else "-"))
        p("")
    p("Issue 32's and 33's targets (H200, same run, against bare):")
    p("")
    vs = verdicts(d)
    for name, met, text in vs:
        p("- %s: **%s** — %s" % (name, "not resolved (noise)" if met == NOISE else "met" if met is True
                                 else "NOT met" if met is False else "no verdict", text))
    flags = [m for _, m, _ in vs]
    p("- overall: **%s**" % ("met" if all(m is True for m in flags) else
                           "NOT met" if any(m is False for m in flags) else
                           "not resolved (noise)" if any(m == NOISE for m in flags) else
                           "no verdict (not all measured)"))
    p("")
    p("Paired view (a second view, not judged): a round's profiled measurement over the same round's"
      " plain of the same process - 1, the median over every process's rounds [p25..p75] (rounds):")
    p("")
    for proc, mode, label in (("torch", "tp_cpu_cuda", "torch.profiler CPU+CUDA"),
                              ("torch", "tp_cuda", "torch.profiler CUDA only"),
                              ("torch", "tp_shapes", "torch.profiler CPU+CUDA, record_shapes"),
                              ("kvs_torch", "kvs", "kvscope with torch ops"),
                              ("kvs_default", "kvs", "kvscope default"), ("kvs_gpuonly", "kvs", "kvscope GPU only"),
                              ("kvs_all", "kvs", "kvscope every call"), ("c_default", "kvs", "C, kvscope default"),
                              ("c_gpuonly", "kvs", "C, kvscope GPU only"), ("c_all", "kvs", "C, kvscope every call")):
        cells = []
        for w, _ in (C_WORKLOADS if proc.startswith("c_") else WORKLOADS):
            x = paired(d, proc, mode, w)
            if x:
                cells.append("%s %s [%s..%s] (%d)" % (w, pct(x[0]), pct(x[1]), pct(x[2]), x[3]))
        if cells:
            p("- %s: %s" % (label, "; ".join(cells)))
    p("")
    if d["traces"]:
        p("kvscope traces (their `kvscope` object):")
        p("")
        for (proc, q), t in sorted(d["traces"].items(), key=lambda x: (x[0][0], int(x[0][1]))):
            bad = t.get("dropped_records", 0) or t.get("buffer_requests_denied", 0)
            p("- %s #%s: %d records, %d dropped, %d buffer requests denied, kernels_without_call %s%s%s" % (
                proc, q, t.get("records", 0), t.get("dropped_records", 0), t.get("buffer_requests_denied", 0),
                t.get("kernels_without_call", "?"),
                ", %d buffers used of %d" % (t["buffers_used"], t["buffers_max"])
                if "buffers_used" in t and "buffers_max" in t else "",
                " — RECORDS LOST: this process's figures are not valid" if bad else ""))
        p("")
    for f in d["fails"]:
        p("- %s" % f)
    if d["times"] or d["total"] is not None:
        per = collections.defaultdict(list)
        for q, (proc, s) in d["times"].items():
            per[proc].append(s)
        p("Time: " + ", ".join("%s %d x %.0f s" % (k, len(v), statistics.median(v)) for k, v in sorted(per.items())) +
          ("; total %.0f s" % d["total"] if d["total"] is not None else ""))
        p("")
    dev = d["device"] or "DEVICE"
    p("docs/benchmarks.md rows (fill in the date):")
    p("")
    for rows, wl, lang in ((py_rows(d), WORKLOADS, "PyTorch"), (C_ROWS, C_WORKLOADS, "C")):
        for w, t in wl:
            for label, proc, mode in rows:
                f = figure(d, proc, mode, w)
                if not f or "all" not in f:
                    continue
                p("| %s %s | %s | **%s** against neighbouring bare (all bare %s, fastest %s; %d processes) |"
                  " DATE | %s | [log](%s) |" % (lang, t, label, pct(f["nb"]), pct(f["all"]), pct(f["fastest"]),
                                                f["procs"], dev, log))
    for label, proc, f in wh:
        if f and "all" in f:
            p("| whole process, 5 x 5000 adds | %s | **%s** against neighbouring bare (all bare %s, fastest %s;"
              " %d processes) | DATE | %s | [log](%s) |" % (label, pct(f["nb"]), pct(f["all"]), pct(f["fastest"]),
                                                           f["procs"], dev, log))
    return "\n".join(o) + "\n"


# ---------------------------------------------------------------------------
# bench/capture_idle.sh: one state a process, against bare processes

IDLE_LOOPS = ("bare", "pytorch", "driver")


def idle_parse(lines):
    """capture_idle.sh's lines -> {(kind, loop): {process: [values]}}, the
    failures and the total. C values are ns a launch (loop = cupti_idle's
    loop), PyTorch ones ms a measurement (loop = 'launch' for plain rounds,
    'launch, captured' for the window's)."""
    vals = collections.defaultdict(lambda: collections.defaultdict(list))
    fails, total, checks = [], None, []
    for line in lines:
        head = line.split(" ", 1)[0]
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        if head == "RESULT" and "proc" in kv and "seq" in kv and int(kv.get("round", "1")) > 0:
            if "ns_per_launch" in kv:
                vals[(kv["proc"], kv["loop"])][int(kv["seq"])].append(float(kv["ns_per_launch"]))
            elif "ms" in kv:
                loop = kv.get("workload", "?") + (", captured" if kv.get("mode") == "kvs" else "")
                vals[(kv["proc"], loop)][int(kv["seq"])].append(float(kv["ms"]))
        elif head in ("CHECK", "RECORDS") and kv.get("kernels") != kv.get("want"):
            checks.append(line.strip())  # launches lost, or no records after attaching again
        elif head == "FAIL":
            fails.append(line.strip())
        elif head == "TOTAL":
            total = float(kv["seconds"])
    return {"vals": vals, "fails": fails + checks, "total": total}


def idle_figure(d, kind, loop):
    """(median over processes of their medians, median over processes of their
    fastest rounds, {process number: its median}) or None"""
    per = d["vals"].get((kind, loop))
    if not per:
        return None
    meds = {q: statistics.median(v) for q, v in per.items() if v}
    fast = [min(v) for v in per.values() if v]
    return statistics.median(meds.values()), statistics.median(fast), meds


def idle_neighbours(d, kind, loop, lang):
    """each of kind's processes against the bare processes run just before
    and just after it (their mean): the machine drifts over a run, and a
    process is compared with its neighbours in time. The median over the
    kind's processes of (its median - the neighbours'), and of its ratio."""
    x, b = idle_figure(d, kind, loop), idle_figure(d, lang + ":bare", loop)
    if not x or not b:
        return None
    bare = sorted(b[2].items())
    diffs, ratios = [], []
    for q, m in x[2].items():
        before = [v for p, v in bare if p < q][-1:]
        after = [v for p, v in bare if p > q][:1]
        ref = before + after
        if ref:
            r = sum(ref) / len(ref)
            diffs.append(m - r)
            ratios.append(m / r - 1)
    if not diffs:
        return None
    return statistics.median(diffs), statistics.median(ratios)


def idle_render(d):
    o = []
    p = o.append
    kinds = sorted({k for k, _ in d["vals"]})
    p("One state a process, bare processes between them (bench/capture_idle.sh). A kind's figure:"
      " the median over its processes of each one's median round; against bare: the same of the"
      " bare processes (all of the run), then each process against the bare processes just before"
      " and after it (neighbours: the machine drifts during a run), then fastest round against"
      " fastest round.")
    p("")
    for lang, loops, unit in (("c", IDLE_LOOPS, "ns/launch"), ("py", ("launch", "launch, captured"), "ms")):
        bare = {l: idle_figure(d, lang + ":bare", l) for l in loops}
        rows = [k for k in kinds if k.startswith(lang + ":") and k != lang + ":bare"]
        if not any(bare.values()):
            continue
        loops = [l for l in loops if bare.get(l) or any(idle_figure(d, k, l) for k in rows)]
        p("%s:" % ("bench/cupti_idle.cu (loops: bare launches; 5 cudaGetDevice + launch +"
                   " cudaGetLastError; 3 cuCtxGetCurrent + launch)" if lang == "c" else
                   "PyTorch launch loop (bench/capture_torch.py, 1000 adds a measurement)"))
        p("")
        p("| kind | processes | " + " | ".join("%s %s | vs bare / neighbours / fastest" % (l, unit)
                                              for l in loops) + " |")
        p("|---|---|" + "---|---|" * len(loops))
        for k in [lang + ":bare"] + rows:
            cells, nproc = [], 0
            for l in loops:
                x = idle_figure(d, k, l)
                b = bare.get(l) or bare.get("launch")
                nb = idle_neighbours(d, k, l if bare.get(l) else "launch", lang)
                if not x:
                    cells.append("- | -")
                    continue
                nproc = max(nproc, len(x[2]))
                if k.endswith(":bare"):
                    cells.append("%.1f (%.1f..%.1f) | -" % (x[0], min(x[2].values()), max(x[2].values())))
                elif lang == "c":
                    cells.append("%.0f | %+.0f / %s / %+.0f ns" % (
                        x[0], x[0] - b[0], "%+.0f" % nb[0] if nb else "-", x[1] - b[1]))
                else:
                    cells.append("%.3f | %+.1f%% / %s / %+.1f%%" % (
                        x[0], 100 * (x[0] / b[0] - 1), "%+.1f%%" % (100 * nb[1]) if nb else "-",
                        100 * (x[1] / b[1] - 1)))
            p("| %s | %d | %s |" % (k, nproc, " | ".join(cells)))
        p("")
    for f in d["fails"]:
        p("- %s" % f)
    if d["total"] is not None:
        p("Time: %.0f s" % d["total"])
    return "\n".join(o) + "\n"


def main():
    ap = argparse.ArgumentParser(description="the table of bench/capture_overhead.sh from its raw.txt")
    ap.add_argument("raw")
    ap.add_argument("--log", default="log/DATE-capture-overhead.md",
                    help="the raw output's link in the docs/benchmarks.md rows")
    ap.add_argument("--idle", action="store_true",
                    help="the raw.txt is bench/capture_idle.sh's (one state a process)")
    a = ap.parse_args()
    try:
        with open(a.raw, errors="replace") as f:
            d = idle_parse(f) if a.idle else parse(f)
    except OSError as e:
        print("capture_table: %s" % e, file=sys.stderr)
        return 2
    sys.stdout.write(idle_render(d) if a.idle else render(d, a.log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
