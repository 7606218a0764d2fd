#!/usr/bin/env python3
"""tests/test_multirank_hta.py KVSCOPE — `kvscope report` on several ranks'
real traces (Holistic Trace Analysis' test data in ../shared/traces/hta):

- trace_filter__sampled_rank-{0,1}: two ranks of a 128-rank NCCL job
  (distributedInfo), two ProfilerSteps each, NCCL SendRecv kernels on their
  own stream beside the compute streams. Per rank, the figures are
  recomputed here from the raw JSON (json.load, no kvscope code): mean step
  wall time, GPU busy time per step (union of kernel, memcpy and memset
  intervals clipped to the step), communication time (union of the ncclKernel*
  / ncclDevKernel* kernels), computation time (union of the rest) and their
  overlap (comm + compute - busy); the rank with the longest mean step; and
  the arrival at the collectives (the k-th NCCL kernel a step launched on
  each rank: how late each rank starts it after the earliest, the spreads of
  starts and ends). These SendRecv kernels pair the ranks with others: they
  do not end together, so no straggler is named (the old rule named the
  longest step). Given in reverse order, the ranks still come out in rank order.
- a rank without distributedInfo among them: ranks in the order given;
- nccl_parser_config__nccl_data (rank 0 of 2, AllReduce/Broadcast kernels)
  beside rank_non_gpu (also "rank 0", CPU only) and rank_unavailable
  (distributedInfo without a rank): ranks in the order given, the NCCL
  rank's figures as recomputed here.
- a single trace keeps today's kvscope.report/1 output (no summary).

Exit 77 when the traces are absent.

    meson test -C build test_multirank_hta
"""
import gzip
import json
import os
import subprocess
import sys

from kvs_test import check, finish, union

HTA = os.path.join(os.environ.get("KVS_SHARED_DIR", ""), "traces", "hta")
R0 = os.path.join(HTA, "trace_filter__sampled_rank-0.json.gz")
R1 = os.path.join(HTA, "trace_filter__sampled_rank-1.json.gz")
NORANK = os.path.join(HTA, "distributed_info_unavailable__distributed_info_not_found.json.gz")
NCCL = os.path.join(HTA, "nccl_parser_config__nccl_data.json.gz")
RANK0_CPU = os.path.join(HTA, "rank_non_gpu__rank_non_gpu.json.gz")
NO_RANK_KEY = os.path.join(HTA, "rank_unavailable__rank_not_found.json.gz")


def near(x, y, rel=1e-9, abs_=1e-9):
    return x is not None and abs(x - y) <= max(rel * abs(y), abs_)


def facts(path):
    d = json.load(gzip.open(path))
    ev = d["traceEvents"]
    steps = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev
             if e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#")]
    gpu = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e["name"]) for e in ev
           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    def clipped(pred, s):
        return union([(max(a, s[0]), min(b, s[1])) for a, b, n in gpu
                      if pred(n) and min(b, s[1]) > max(a, s[0])])
    comm = lambda n: n.startswith("ncclKernel") or n.startswith("ncclDevKernel")
    per = [(clipped(lambda n: True, s), clipped(comm, s), clipped(lambda n: not comm(n), s))
           for s in steps]
    k = len(steps)
    busy, cm, cp = (sum(p[i] for p in per) / k / 1000 for i in range(3))
    return {"rank": d["distributedInfo"]["rank"], "world": d["distributedInfo"]["world_size"],
            "steps": k, "step_ms": sum(b - a for a, b in steps) / k / 1000,
            "busy": busy, "comm": cm, "compute": cp, "overlap": cm + cp - busy}


def collectives(path):
    """{step number: [(start, end) of each NCCL kernel the step launched, by start]} in us;
    a kernel's step is the ProfilerStep whose range holds its runtime call (by correlation)"""
    ev = json.load(gzip.open(path))["traceEvents"]
    steps = [(int(e["name"].split("#")[1]), float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev
             if e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#")]
    launch = {e["args"]["correlation"]: float(e["ts"]) for e in ev
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    out = {n: [] for n, a, b in steps}
    for e in ev:
        if e.get("cat") != "kernel" or not e["name"].startswith(("ncclKernel", "ncclDevKernel")):
            continue
        t = launch.get(e["args"].get("correlation"))
        for n, a, b in steps:
            if t is not None and a <= t < b:
                out[n].append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    return {n: sorted(v) for n, v in out.items()}


def median(v):
    v = sorted(v)
    k = len(v)
    return v[k // 2] if k % 2 else (v[k // 2 - 1] + v[k // 2]) / 2


def arrival(*ranks):
    """the k-th collective of a step on every rank, over steps of one number with as
    many on every rank: lateness = start - the earliest start (mean over a step's
    collectives, median over steps), the ranks' summed durations, the spreads"""
    skew, coll = [[] for _ in ranks], [[] for _ in ranks]
    ss, es, dd = [], [], []
    for n in sorted(ranks[0]):
        if not all(n in r for r in ranks) or len({len(r[n]) for r in ranks}) != 1 or not ranks[0][n]:
            continue
        late = [0.0] * len(ranks)
        for k in range(len(ranks[0][n])):
            c = [r[n][k] for r in ranks]
            lo = min(a for a, b in c)
            for i, (a, b) in enumerate(c):
                late[i] += (a - lo) / 1000
            ss.append((max(a for a, b in c) - lo) / 1000)
            es.append((max(b for a, b in c) - min(b for a, b in c)) / 1000)
            dd.append(max(b - a for a, b in c) / 1000)
        for i, r in enumerate(ranks):
            skew[i].append(late[i] / len(r[n]))
            coll[i].append(sum(b - a for a, b in r[n]) / 1000)
    return {"steps": len(skew[0]), "collectives": len(ss), "start_spread_ms": median(ss),
            "end_spread_ms": median(es), "dur_ms": median(dd),
            "skew": [median(v) for v in skew], "coll": [median(v) for v in coll]}


def report(*args):
    out = subprocess.run([sys.argv[1], "report", *args, "--format", "json", "--quiet"],
                         capture_output=True, text=True)
    what = "kvscope report %s" % " ".join(os.path.basename(a) for a in args)
    if not check(out.returncode == 0, "%s: exit %d" % (what, out.returncode)):
        print(out.stderr[-500:])
        return None
    return json.loads(out.stdout)


if not all(os.path.exists(p) for p in (R0, R1, NORANK, NCCL, RANK0_CPU, NO_RANK_KEY)):
    print("skip: the HTA rank traces are not in $KVS_SHARED_DIR/traces/hta")
    sys.exit(77)

F = [facts(R0), facts(R1)]
C = [collectives(R0), collectives(R1)]
check(F[0]["comm"] > 0 and F[1]["comm"] > 0 and F[0]["overlap"] > 0,
      "raw traces: both ranks run NCCL kernels, partly under computation")
doc = report(R1, R0)  # reverse order on purpose
if doc:
    r = doc["ranks"]
    check(doc["schema"] == "kvscope.multirank/1", "schema kvscope.multirank/1")
    check(r["count"] == 2 and r["world_size"] == 128 and r["rank_source"] == "trace",
          "2 ranks of world size 128, ranks from distributedInfo")
    check([x["rank"] for x in r["per_rank"]] == [0, 1], "per_rank in rank order")
    check([x["trace"]["path"] for x in doc["reports"]] == [R0, R1], "reports in rank order")
    for x, f in zip(r["per_rank"], F):
        tag = "rank %d" % f["rank"]
        check(x["steps"] == f["steps"], "%s: %d steps" % (tag, f["steps"]))
        check(near(x["step_ms"], f["step_ms"]), "%s: step %.3f ms (%s)" % (tag, f["step_ms"], x["step_ms"]))
        check(near(x["gpu_ms"], f["busy"], 1e-6), "%s: GPU busy %.3f ms (%s)" % (tag, f["busy"], x["gpu_ms"]))
        check(near(x["comm_ms"], f["comm"], 1e-6), "%s: comm %.3f ms (%s)" % (tag, f["comm"], x["comm_ms"]))
        check(near(x["compute_ms"], f["compute"], 1e-6),
              "%s: compute %.3f ms (%s)" % (tag, f["compute"], x["compute_ms"]))
        check(near(x["overlap_ms"], f["overlap"], 1e-6, 1e-6),
              "%s: overlap %.3f ms (%s)" % (tag, f["overlap"], x["overlap_ms"]))
        check(near(x["exposed_comm_ms"], f["comm"] - f["overlap"], 1e-6, 1e-6), "%s: exposed comm" % tag)
    slow = max(F, key=lambda f: f["step_ms"])
    med = sum(f["step_ms"] for f in F) / 2
    ls = r["longest_step"]
    check(ls["rank"] == slow["rank"] and near(ls["over_median_ms"], slow["step_ms"] - med, 1e-6)
          and not ls["stands_out"],
          "longest step rank %d, %.3f ms over the median" % (slow["rank"], slow["step_ms"] - med))
    A = arrival(C[0], C[1])
    ar = r["arrival"]
    check(ar["steps"] == A["steps"] == 2 and ar["collectives"] == A["collectives"] == 10
          and ar["skipped_steps"] == 0, "arrival: 2 steps, 10 SendRecv kernels matched")
    for key in ("start_spread_ms", "end_spread_ms", "dur_ms"):
        check(near(ar[key], A[key], 1e-6), "arrival %s %.4f (%s)" % (key, A[key], ar[key]))
    for x, sk, co in zip(r["per_rank"], A["skew"], A["coll"]):
        check(near(x["arrival_skew_ms"], sk, 1e-6) and near(x["collective_ms"], co, 1e-6),
              "rank %d arrives %.4f ms after the earliest, %.4f ms in collectives (%s, %s)" % (
                  x["rank"], sk, co, x["arrival_skew_ms"], x["collective_ms"]))
    # SendRecv pairs these ranks with others: their kernels do not end together, so
    # nothing says who waits for whom (before: the longest step was called the straggler)
    check(A["end_spread_ms"] > 0.1 * A["dur_ms"] and not ar["ends_agree"] and r["straggler"] is None,
          "ends %.2f ms apart of %.2f ms: no straggler named" % (A["end_spread_ms"], A["dur_ms"]))
    check(any("do not end together" in n for n in r["notes"]), "notes: the ends do not agree")
    check(any("2 of 128 ranks given" in n for n in r["notes"]), "notes: 2 of 128 ranks")
    check(any("Communication (NCCL kernels)" in n for n in r["notes"]), "notes: communication")

doc = report(R0, NORANK)
if doc:
    r = doc["ranks"]
    check(r["rank_source"] == "file order" and [x["rank"] for x in r["per_rank"]] == [0, 1]
          and r["world_size"] is None, "a trace without a rank: ranks in the order given")
    check(r["per_rank"][1]["gpu_ms"] == 0 and r["per_rank"][1]["comm_ms"] == 0,
          "a CPU-only rank: no GPU time")

doc = report(NCCL, RANK0_CPU, NO_RANK_KEY)
if doc:
    r, f = doc["ranks"], facts(NCCL)
    x = r["per_rank"][0]
    check(r["rank_source"] == "file order" and r["count"] == 3, "two traces say rank 0: file order")
    # its "us.nnn" timestamps have 16 digits: Python's floats keep ~1e-7 ms of them
    check(x["steps"] == f["steps"] and near(x["step_ms"], f["step_ms"], 1e-6) and near(x["gpu_ms"], f["busy"], 1e-6)
          and near(x["comm_ms"], f["comm"], 1e-6) and near(x["compute_ms"], f["compute"], 1e-6)
          and near(x["overlap_ms"], f["overlap"], 1e-6, 1e-6),
          "nccl_data: step %.3f, busy %.3f, comm %.3f, compute %.3f, overlap %.3f ms" % (
              f["step_ms"], f["busy"], f["comm"], f["compute"], f["overlap"]))
    check(f["comm"] > 0, "raw nccl_data: NCCL kernels present")

doc = report(R0)
if doc:
    check(doc["schema"] == "kvscope.report/1" and "ranks" not in doc, "one trace: kvscope.report/1 as before")
sys.exit(finish())
