#!/usr/bin/env python3
"""tests/test_capture_table.py — bench/capture_table.py (the table and the
verdicts of bench/capture_overhead.sh, and of bench/capture_idle.sh with
--idle) on result lines, no GPU.

1. Lines made here with figures worked out by hand: bare processes that
   drift (10, 12, 10 ms: each profiled process is judged against the bare
   processes just before and after it, and the table shows the other two
   comparisons beside it), the capture-overhead targets met, then broken one at a
   time (the window-closed cost, the ratio to torch.profiler, GPU-only,
   the whole process, a trace that dropped records, kernels without their
   launch call), round 0 (the warm-up) ignored but for the whole-process
   result, the paired view. The torch-ops rows alone (KVS_BENCH_TORCHOPS=only):
   kvscope with torch ops against torch.profiler with record_shapes, in a
   process and whole, met and not met.
2. bench/capture_idle.sh's lines: a state against its neighbouring bare
   processes, in ns a launch (C) and in % (PyTorch); launches lost and a
   CUPTI that records nothing after attaching again are failures.
3. The command line: a missing file exits 2 with a message.
Exit 0 pass, 1 fail.
"""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.environ.get("KVS_SOURCE_ROOT", os.path.dirname(here))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(root, "bench"))
from kvs_test import check, finish  # noqa: E402
import capture_table as ct  # noqa: E402


def verdict(d, prefix):
    got = [v for v in ct.verdicts(d) if v[0].startswith(prefix)]
    return got[0] if got else (prefix, "absent", "")


def res(seq, proc, mode, w, ms, rounds=3):
    """RESULT lines of one process's mode: rounds 1..rounds at ms, round 0 at 999"""
    return ["RESULT cycle=0 seq=%d proc=%s round=%d mode=%s workload=%s ms=%s n=1"
            % (seq, proc, r, mode, w, 999 if r == 0 else ms) for r in range(rounds + 1)]


def made(closed=11.1, kvs=11.0, gpu=11.5, tp=15.0, whole_kvs=60.0, dropped=0, unlinked=0):
    """bare at seq 1, 4, 7 (10, 12, 10 ms launch; 4, 4, 4 ms decode), the
    profiled processes between them"""
    ls = []
    for q, ms in ((1, 10.0), (4, 12.0), (7, 10.0)):
        ls += res(q, "bare", "plain", "launch", ms) + res(q, "bare", "plain", "decode", 4.0)
    # seq 2: kvs_default (neighbours 1 and 4: 11 ms), seq 3: torch (1 and 4), seq 5:
    # kvs_closed (4 and 7: 11 ms), seq 6: kvs_gpuonly (4 and 7)
    ls += res(2, "kvs_default", "plain", "launch", 10.2) + res(2, "kvs_default", "kvs", "launch", kvs)
    ls += res(2, "kvs_default", "plain", "decode", 4.0) + res(2, "kvs_default", "kvs", "decode", 4.2)
    ls += res(3, "torch", "plain", "launch", 11.0) + res(3, "torch", "tp_cpu_cuda", "launch", tp)
    ls += res(3, "torch", "tp_cuda", "launch", 13.0)
    ls += res(3, "torch", "plain", "decode", 4.0) + res(3, "torch", "tp_cpu_cuda", "decode", 6.0)
    ls += res(5, "kvs_closed", "plain", "launch", closed) + res(5, "kvs_closed", "plain", "decode", 4.0)
    ls += res(6, "kvs_gpuonly", "plain", "launch", 11.0) + res(6, "kvs_gpuonly", "kvs", "launch", gpu)
    ls += res(6, "kvs_gpuonly", "plain", "decode", 4.0) + res(6, "kvs_gpuonly", "kvs", "decode", 4.2)
    for q, p, ms in ((8, "whole_bare", 50.0), (9, "whole_kvs", whole_kvs), (10, "whole_torch", 80.0),
                     (11, "whole_bare", 50.0)):
        ls.append("RESULT cycle=0 seq=%d proc=%s round=0 mode=whole workload=whole ms=%s n=5 min=1" % (q, p, ms))
        ls.append("TIME proc=%s cycle=0 seq=%d seconds=4.0" % (p, q))
        ls.append("WHOLE cycle=0 seq=%d proc=%s work_s=0.3 export_s=%s" % (q, p, "1.5" if p == "whole_torch" else "0"))
    for q, p in ((2, "kvs_default"), (5, "kvs_closed"), (6, "kvs_gpuonly"), (9, "whole_kvs")):
        ls.append("TRACE proc=%s seq=%d records=100 dropped_records=%d buffer_requests_denied=0"
                  " kernels_without_call=%d buffers_used=1 buffers_max=512"
                  % (p, q, dropped if p == "kvs_default" else 0, unlinked if p == "whole_kvs" else 0))
    ls.append("DEVICE NVIDIA H200")
    return ct.parse(ls)


# ---------------------------------------------------------------------------
# 1. made-up lines

d = made()
f = ct.figure(d, "kvs_closed", "plain", "launch")
check(abs(f["ms"] - 11.1) < 1e-9 and f["procs"] == 1 and f["rounds"] == 3,
      "a process's figure: the median of its rounds 1..3 (round 0 ignored): %s" % f["ms"])
check(abs(f["nb"] - 100 * (11.1 / 11.0 - 1)) < 1e-9, "against its neighbours (12 and 10 ms): +0.9%% (%s)" % f["nb"])
check(abs(f["all"] - 11.0) < 1e-9, "against all bare processes (median 10 ms): +11.0%% (%s)" % f["all"])
b = ct.figure(d, "bare", "plain", "launch")
check(abs(b["ms"] - 10.0) < 1e-9 and b["procs"] == 3 and "nb" not in b, "the bare figure: 10 ms of 3 processes")
name, met, text = verdict(d, "launch: kvscope, window never opened")
check(met is True and "+0.9%" in text and "NOT the same side on all three" in text,
      "window never opened, launch: met on the neighbours, said to disagree with all-bare (%s)" % text)
name, met, text = verdict(d, "launch: kvscope default, window closed between windows")
check(met is True and "-7.3%" in text, "between windows: 10.2 against 11 ms, -7.3%% (%s)" % text)
name, met, text = verdict(d, "launch: kvscope default <= 1/3")
# kvscope 11/11 - 1 = 0; torch.profiler 15/11 - 1 = +36.4%
check(met is True and "+0.0% / +36.4% = 0.00" in text, "default against torch.profiler, launch: 0.00 (%s)" % text)
name, met, text = verdict(d, "decode: kvscope default <= 1/3")
# 4.2/4 - 1 = +5%; 6/4 - 1 = +50%: 0.10
check(met is True and "+5.0% / +50.0% = 0.10" in text, "decode: 0.10 (%s)" % text)
name, met, text = verdict(d, "launch: kvscope GPU only <= +10%")
check(met is True and "+4.5%" in text, "GPU only, launch: 11.5 against 11, +4.5%% (%s)" % text)
name, met, text = verdict(d, "whole: whole process")
# kvscope 60/50 - 1 = +20%, torch.profiler 80/50 - 1 = +60%: 0.33
check(met is True and "+20.0% / +60.0% = 0.33" in text, "whole process: 0.33 <= 0.5 (%s)" % text)
name, met, text = verdict(d, "kvscope traces complete")
check(met is True and "4 traces" in text, "traces complete (%s)" % text)
out = ct.render(d, "log/X.md")
check("- overall: **met**" in out, "the overall verdict: met")
check("| kvscope, window never opened | 11.100 | +11.0% / **+0.9%** / +11.0% | 1 |" in out,
      "the window-closed row: ms, against all / neighbours / fastest, processes")
check("| under kvscope capture (whole run) | 60.000 | +20.0% / **+20.0%** / +20.0% | 1 | 4.0 | 0.30 | 0.00 |" in out,
      "the whole-process row: loop ms, against bare, process seconds, the profiled part, the export")
check("- kvscope default: launch +7.8% [+7.8%..+7.8%] (3); decode +5.0% [+5.0%..+5.0%] (3)" in out,
      "the paired view: 11.0 against the same process's plain 10.2 ms each round")
check("| PyTorch launch loop | kvscope GPU only | **+4.5%** against neighbouring bare (all bare +15.0%" in out and
      "[log](log/X.md)" in out, "a docs/benchmarks.md row")

# broken one at a time
for kw, crit, want in ((dict(closed=11.5), "launch: kvscope, window never opened", "+4.5%"),
                       (dict(kvs=13.0), "launch: kvscope default <= 1/3", "= 0.50"),
                       (dict(gpu=12.5), "launch: kvscope GPU only", "+13.6%"),
                       (dict(whole_kvs=70.0), "whole: whole process", "= 0.67"),
                       (dict(dropped=5), "kvscope traces complete", "records lost in kvs_default#2"),
                       (dict(unlinked=3), "kvscope traces complete", "launch call in whole_kvs#9 (3)")):
    dd = made(**kw)
    name, met, text = verdict(dd, crit)
    check(met is False and want in text, "%s: NOT met with %s (%s)" % (crit, kw, text))
    check("- overall: **NOT met**" in ct.render(dd), "... and the overall verdict says so")
dd = made(tp=11.0)  # torch.profiler at its neighbours' 11 ms: nothing to divide by
name, met, text = verdict(dd, "launch: kvscope default <= 1/3")
check(met is None and "costs nothing" in text, "a profiler that costs nothing: no verdict (%s)" % text)
check(verdict(ct.parse([]), "launch: kvscope GPU only")[1] is None, "nothing measured: no verdict")

# an activity set of KVS_BENCH_SETS (kvs_set_NAME): its own rows, in and
# between windows, against the same bare processes
ls = ["SET name=drv activities=kernel,memcpy,memset,extcorr,nvtx,driver"]
for q, ms in ((1, 10.0), (3, 12.0)):
    ls += res(q, "bare", "plain", "launch", ms)
ls += res(2, "kvs_set_drv", "plain", "launch", 11.5) + res(2, "kvs_set_drv", "kvs", "launch", 12.1)
ds = ct.parse(ls)
check(ds["sets"] == [("drv", "kernel,memcpy,memset,extcorr,nvtx,driver")], "the SET line is read")
out = ct.render(ds, "log/X.md")
check("| kvscope set drv (kernel,memcpy,memset,extcorr,nvtx,driver) | 12.100 | +10.0% / **+10.0%** / +10.0% | 1 |"
      in out, "the set's row: 12.1 against neighbours of 10 and 12 ms, +10.0%")
check("| kvscope set drv, between windows | 11.500 | +4.5% / **+4.5%** / +4.5% | 1 |" in out,
      "the set's between-windows row: 11.5 against 11 ms, +4.5%")

# ---------------------------------------------------------------------------
# 1b. the torch-ops rows (KVS_BENCH_TORCHOPS=only): kvscope with torch ops against
# torch.profiler with record_shapes=True, in process and whole

def made_torchops(kvs=11.0, whole_kvs=60.0):
    ls = []
    for q, ms in ((1, 10.0), (4, 12.0)):
        ls += res(q, "bare", "plain", "launch", ms) + res(q, "bare", "plain", "decode", 4.0)
    # seq 2: torch (neighbours 1 and 4: 11 ms, 4 ms), seq 3: kvs_torch
    ls += res(2, "torch", "plain", "launch", 11.0) + res(2, "torch", "tp_shapes", "launch", 16.5)
    ls += res(2, "torch", "plain", "decode", 4.0) + res(2, "torch", "tp_shapes", "decode", 6.0)
    ls += res(3, "kvs_torch", "plain", "launch", 10.5) + res(3, "kvs_torch", "kvs", "launch", kvs)
    ls += res(3, "kvs_torch", "plain", "decode", 4.0) + res(3, "kvs_torch", "kvs", "decode", 4.4)
    for q, p, ms in ((5, "whole_bare", 50.0), (6, "whole_kvs_torch", whole_kvs),
                     (7, "whole_torch_shapes", 90.0), (8, "whole_bare", 50.0)):
        ls.append("RESULT cycle=0 seq=%d proc=%s round=0 mode=whole workload=whole ms=%s n=5 min=1" % (q, p, ms))
    for q, p in ((3, "kvs_torch"), (6, "whole_kvs_torch")):
        ls.append("TRACE proc=%s seq=%d records=100 dropped_records=0 buffer_requests_denied=0"
                  " kernels_without_call=0 buffers_used=1 buffers_max=512" % (p, q))
    return ct.parse(ls)


d = made_torchops(kvs=13.2)
v = verdict(d, "launch: kvscope with torch ops")
# kvs +20% (13.2 / 11), tp_shapes +50% (16.5 / 11): 0.40 <= 1/2
check(v[1] is True and "0.40" in v[2], "launch: torch ops +20%% / torch.profiler with shapes +50%% = 0.40: met (%s)"
      % (v[2],))
v = verdict(d, "decode: kvscope with torch ops")
# +10% (4.4 / 4) over +50% (6 / 4): 0.20
check(v[1] is True and "0.20" in v[2], "decode: 0.20: met (%s)" % (v[2],))
v = verdict(d, "whole: whole process: kvscope capture with torch ops")
# +20% (60 / 50) over +80% (90 / 50): 0.25
check(v[1] is True and "0.25" in v[2], "whole: 0.25: met (%s)" % (v[2],))
d2 = made_torchops(kvs=15.4, whole_kvs=80.0)
check(verdict(d2, "launch: kvscope with torch ops")[1] is False and
      verdict(d2, "whole: whole process: kvscope capture with torch ops")[1] is False,
      "+40% / +50% = 0.80 and +60% / +80% = 0.75: NOT met")
check(verdict(d, "launch: kvscope default")[1] == "absent",
      "the capture targets' verdicts left out where only the torch-ops kinds ran")
text = ct.render(d)
check("| kvscope with torch ops | 13.200 |" in text and "| torch.profiler CPU+CUDA, record_shapes | 16.500 |"
      in text and "under kvscope capture with torch ops (whole run)" in text and "overall: **met**" in text,
      "the table's torch-ops rows and an overall verdict")

# ---------------------------------------------------------------------------
# 1b. capture_overhead.cu --contexts: each CUDA context a unit; verdicts the
#     units' spread leaves open are "not resolved (noise)"


def ctx_lines(bare_ms, kinds):
    """C processes with 2 contexts each: c_bare at seq 1, 3, 5 (its contexts'
    launch ms from bare_ms), the kinds {proc: (plain ms list, kvs ms list)} at 2, 4"""
    ls = []
    for i, q in enumerate((1, 3, 5)):
        for c in (0, 1):
            for r in (0, 1, 2):
                ls.append("RESULT cycle=0 seq=%d proc=c_bare ctx=%d round=%d mode=plain workload=launch"
                          " ms=%s n=1" % (q, c, r, 99 if r == 0 else bare_ms[2 * i + c]))
    for q, (proc, (plain, kvs)) in zip((2, 4), sorted(kinds.items())):
        for c in (0, 1):
            for r in (0, 1, 2):
                for mode, v in (("plain", plain), ("kvs", kvs)):
                    ls.append("RESULT cycle=0 seq=%d proc=%s ctx=%d round=%d mode=%s workload=launch"
                              " ms=%s n=1" % (q, proc, c, r, mode, 99 if r == 0 else v[c]))
    return ct.parse(ls)


steady = [5.0, 5.0, 5.02, 5.0, 4.98, 5.0]
dc = ctx_lines(steady, {"c_default": ([5.05, 5.05], [6.0, 6.0]), "c_gpuonly": ([5.0, 5.0], [7.0, 7.0])})
f = ct.figure(dc, "c_bare", "plain", "launch")
check(f["procs"] == 6, "each context a unit: 3 bare processes x 2 contexts = 6 (%s)" % f["procs"])
f = ct.figure(dc, "c_default", "plain", "launch")
check(f["procs"] == 2 and "lo" not in f, "2 units of a kind: no interval (%s)" % f)
v = verdict(dc, "launch: C program, kvscope default between windows")
check(v[1] is True and "+1.0%" in v[2] and "units" in v[2], "C between windows +1.0%%: met (%s)" % (v[2],))
v = verdict(dc, "launch: C program, kvscope GPU only")
check(v[1] is False and "+40.0%" in v[2], "C GPU only +40%%: NOT met (%s)" % (v[2],))
noisy = [4.0, 6.0, 4.2, 5.8, 4.1, 5.9]
dn = ctx_lines(noisy, {"c_default": ([5.0, 5.1], [5.0, 5.2]), "c_gpuonly": ([5.0, 5.0], [5.0, 5.0])})
dn["res"][("c_default", "plain", "launch")][4.003] = {1: 4.4, 2: 4.4}  # a third unit: an interval
v = verdict(dn, "launch: C program, kvscope default between windows")
check(v[1] == ct.NOISE and "spread allows" in v[2],
      "bare contexts at 4 or 6 ms: the +3%% target inside the units' spread, not resolved (%s)" % (v[2],))
check("**not resolved (noise)**" in ct.render(dn), "... and the table says so")
check(verdict(d, "launch: C program")[1] == "absent", "no C verdicts where the C program did not run")

# ---------------------------------------------------------------------------
# 2. bench/capture_idle.sh's lines


def idle_lines():
    ls = []
    for q, kind, v in ((1, "c:bare", 3000), (2, "c:with:kernel", 4600), (3, "c:bare", 3200),
                       (4, "c:kvs-closed", 3150)):
        for r in (1, 2, 3):
            for loop, extra in (("bare", 0), ("pytorch", 300), ("driver", 50)):
                ls.append("RESULT cycle=0 seq=%d proc=%s state=x loop=%s round=%d ns_per_launch=%d"
                          % (q, kind, loop, r, v + extra + r))
    for q, kind, ms in ((5, "py:bare", 6.0), (6, "py:kvs-closed", 6.12), (7, "py:bare", 6.0)):
        for r in (0, 1, 2):
            ls.append("RESULT cycle=0 seq=%d proc=%s round=%d mode=plain workload=launch ms=%s n=1"
                      % (q, kind, r, 99 if r == 0 else ms))
    return ls


di = ct.idle_parse(idle_lines())
nb = ct.idle_neighbours(di, "c:with:kernel", "bare", "c")
check(nb and abs(nb[0] - (4602 - 3102)) < 1e-9, "a C state against its neighbours (3002, 3202): +1500 ns (%s)" % (nb,))
nb = ct.idle_neighbours(di, "c:kvs-closed", "bare", "c")
check(nb and abs(nb[0] - (3152 - 3202)) < 1e-9, "the last process has one neighbour before it: -50 ns (%s)" % (nb,))
nb = ct.idle_neighbours(di, "py:kvs-closed", "launch", "py")
check(nb and abs(nb[1] - 0.02) < 1e-9, "a PyTorch kind: +2.0%% against its neighbours (%s)" % (nb,))
txt = ct.idle_render(di)
check("| c:with:kernel | 1 | 4602 | +1500 / +1500 / +1500 ns |" in txt, "the idle table's row (%s)" % txt[:0])
check("| py:kvs-closed | 1 | 6.120 | +2.0% / +2.0% / +2.0% |" in txt, "the PyTorch idle row")
bad = ct.idle_parse(idle_lines() + ["CHECK cycle=0 seq=2 proc=c:with:kernel kernels=9 want=10",
                                    "RECORDS cycle=0 seq=4 proc=c:reattach-thread state=x kernels=0 want=100",
                                    "RECORDS cycle=0 seq=4 proc=c:reattach-sync state=x kernels=100 want=100"])
check(len(bad["fails"]) == 2 and "kernels=9" in bad["fails"][0] and "kernels=0" in bad["fails"][1],
      "lost launches and a CUPTI that records nothing after attaching again are listed: %s" % bad["fails"])

# ---------------------------------------------------------------------------
# 3. the command line

p = subprocess.run([sys.executable, os.path.join(root, "bench", "capture_table.py"), "/nonexistent/raw.txt"],
                   capture_output=True, text=True)
check(p.returncode == 2 and "capture_table:" in p.stderr, "a missing file: exit 2 and a message (%d)" % p.returncode)
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as t:
    t.write("\n".join(idle_lines()) + "\n")
p = subprocess.run([sys.executable, os.path.join(root, "bench", "capture_table.py"), "--idle", t.name],
                   capture_output=True, text=True)
os.unlink(t.name)
check(p.returncode == 0 and "| c:with:kernel | 1 |" in p.stdout, "--idle from the command line")
sys.exit(finish())
