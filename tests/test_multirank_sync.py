#!/usr/bin/env python3
"""tests/test_multirank_sync.py KVSCOPE — `kvscope report` on the ranks of a
generated 8-rank NCCL run whose steps are synchronised by one all-reduce: the
steps all end together, one rank (5) STARTS its steps 7.5 ms early and waits
11 ms in NCCL, and the rank the others wait for (2) arrives last. Written
here as Chrome-trace JSON (Kineto's fields), one file per rank, with the
design below; the expected figures follow from it:

- per step s (T = 1 s + 40 ms x s): a GEMM from T+0.1 ms to the rank's
  arrival at the all-reduce, the all-reduce from there to T+30 ms on every
  rank (the last arrival releases them all), the step's CPU range
  [T - EARLY, T+31 ms] (EARLY 7.5 ms on rank 5, else 0);
- arrival (ms after T): ARRIVE below, rank 2's later by 0.1 ms each step.

Expected: straggler = rank 2 (arrival skew = its median lateness after the
earliest rank, 5, = 8.2 ms; least time in the collective, 2.8 ms); the
longest step = rank 5 (38.5 ms, 7.5 over the median 31 ms), not the
straggler, waiting 11 ms (the old rule named rank 5). The same ranks with
rank 3's clock 50 ms ahead: the all-reduces no longer end together, and no
straggler is named.

    meson test -C build test_multirank_sync
"""
import json
import os
import subprocess
import sys
import tempfile

from kvs_test import check, finish

RANKS, STEPS = 8, 5
ARRIVE = [20.0, 20.5, 27.0, 21.0, 20.0, 19.0, 22.0, 20.8]
EARLY = [0, 0, 0, 0, 0, 7.5, 0, 0]
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def arrive(r, s):
    return ARRIVE[r] + (0.1 * s if r == 2 else 0)


def write_rank(path, r, clock_ms=0.0):
    ev, ext = [], 0

    def launch(op, name, ts, dur, stream):
        nonlocal ext
        ext += 1
        ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts - 0.05e3,
                   "dur": 5, "args": {"External id": ext}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts,
                   "dur": dur, "args": {"External id": ext, "device": 0, "stream": stream}})

    for s in range(STEPS):
        t = (1000.0 + 40.0 * s + clock_ms) * 1e3  # us
        begin = t - EARLY[r] * 1e3
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % (s + 3),
                   "pid": 1, "tid": 1, "ts": begin, "dur": t + 31e3 - begin})
        a = t + arrive(r, s) * 1e3
        launch("aten::mm", "nvjet_tst_gemm", begin + 100, a - begin - 100, 7)
        launch("nccl:all_reduce", NCCL, a, t + 30e3 - a, 20)
    doc = {"deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
           "distributedInfo": {"backend": "nccl", "rank": r, "world_size": RANKS},
           "traceEvents": ev}
    with open(path, "w") as f:
        json.dump(doc, f)


def median(v):
    v = sorted(v)
    k = len(v)
    return v[k // 2] if k % 2 else (v[k // 2 - 1] + v[k // 2]) / 2


def report(paths, fmt="json"):
    out = subprocess.run([sys.argv[1], "report", *paths, "--format", fmt, "--quiet"],
                         capture_output=True, text=True)
    if not check(out.returncode == 0, "kvscope report (%d ranks, %s): exit %d" % (len(paths), fmt, out.returncode)):
        print(out.stderr[-800:])
        return None
    return json.loads(out.stdout) if fmt == "json" else out.stdout


def near(x, y, tol=1e-6):
    return x is not None and abs(x - y) <= tol


with tempfile.TemporaryDirectory() as tmp:
    paths = [os.path.join(tmp, "rank%d.json" % r) for r in range(RANKS)]
    for r in range(RANKS):
        write_rank(paths[r], r)
    # what the design gives, step by step (the earliest arrival of each step)
    late = [[arrive(r, s) - min(arrive(q, s) for q in range(RANKS)) for s in range(STEPS)]
            for r in range(RANKS)]
    skew = [median(v) for v in late]
    coll = [median([30.0 - arrive(r, s) for s in range(STEPS)]) for r in range(RANKS)]
    step = [31.0 + EARLY[r] for r in range(RANKS)]
    last = max(range(RANKS), key=lambda r: skew[r])
    longest = max(range(RANKS), key=lambda r: step[r])
    check(last == 2 and longest == 5 and near(skew[2], 8.2) and near(coll[5], 11.0),
          "design: rank 2 arrives last (8.2 ms), rank 5 has the longest step and waits 11 ms")

    doc = report(paths[::-1])
    if doc:
        r = doc["ranks"]
        st, ls, ar = r["straggler"], r["longest_step"], r["arrival"]
        check(st is not None and st["rank"] == last and near(st["arrival_skew_ms"], skew[last])
              and near(st["collective_ms"], coll[last]) and st["stands_out"],
              "straggler rank %d, %.2f ms late, %.2f ms in the all-reduce (%s)" % (
                  last, skew[last], coll[last], st))
        check(r["least_collective_rank"] == min(range(RANKS), key=lambda q: coll[q]) == last,
              "rank %d spends the least time in the all-reduce" % last)
        med = median(step)
        check(ls["rank"] == longest and near(ls["step_ms"], step[longest])
              and near(ls["over_median_ms"], step[longest] - med) and ls["stands_out"]
              and not ls["is_straggler"],
              "longest step rank %d (%.1f ms, %.1f over the median), not the straggler (%s)" % (
                  longest, step[longest], step[longest] - med, ls))
        check(ar["steps"] == STEPS and ar["collectives"] == STEPS and ar["ends_agree"]
              and near(ar["end_spread_ms"], 0) and near(ar["start_spread_ms"], median(
                  [max(arrive(q, s) for q in range(RANKS)) - min(arrive(q, s) for q in range(RANKS))
                   for s in range(STEPS)])),
              "arrival: %d steps matched, ends together (%s)" % (STEPS, ar))
        per = r["per_rank"]
        check([x["rank"] for x in per] == list(range(RANKS))
              and all(near(x["arrival_skew_ms"], skew[x["rank"]]) and near(x["collective_ms"], coll[x["rank"]])
                      for x in per),
              "every rank's arrival skew and collective time as designed")
        notes = "\n".join(r["notes"])
        check("Rank 2 is the straggler, the rank the others wait for" in notes
              and "Rank 5 has the longest step: 38.50 ms" in notes
              and "waiting there for rank 2" in notes and "Rank 5 is the straggler" not in notes,
              "notes: rank 2 the straggler, rank 5's long step is waiting")
    text = report(paths, "text")
    if text:
        check("Rank 2 is the straggler" in text and "arrives ms" in text, "text: straggler and arrival column")

    # rank 3's clock 50 ms ahead: its all-reduces end 50 ms after the others'
    write_rank(paths[3], 3, clock_ms=50.0)
    doc = report(paths)
    if doc:
        r = doc["ranks"]
        check(r["straggler"] is None and not r["arrival"]["ends_agree"]
              and any("do not end together" in n for n in r["notes"])
              and r["longest_step"]["rank"] == longest,
              "a rank's clock 50 ms off: ends disagree, no straggler named, longest step still rank %d" % longest)
sys.exit(finish())
