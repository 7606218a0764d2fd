#!/usr/bin/env python3
"""bench/replicate_trace.py IN OUT COPIES — a bigger trace made of COPIES
copies of IN's events, each shifted in time by the trace's span (rounded up
to a millisecond) and with External ids, correlation ids and flow ids
offset past the previous copy's, so steps, links and flows stay distinct
and valid (ProfilerStep#N renumbered). Events are written one per line with
ts/dur as "us.nnn", like Kineto. For benchmarks only: bench/report.sh writes
into /tmp, never into the repository.

  python3 bench/replicate_trace.py trace.json.gz /tmp/big.json 20

Ranks of one run (bench/fleet.sh): with --ranks N it writes N traces
OUT.rank<r>.json instead, each the COPIES copies with distributedInfo
{rank r, world_size N}, its clock shifted by --clock-skew-us x (r % 7) us
(unsynchronised hosts, within the arrival check's tolerance), and one rank
(--late-rank R) arriving --late-us D late at every NCCL kernel: its
collectives start D later, and every other rank's last D longer — they
wait for it and all end together, as a synchronous collective does (the
rest of each trace unchanged: a model of the straggler, not a new run).

  python3 bench/replicate_trace.py rank0.json.gz /tmp/fleet/run 1 --ranks 256 \
      --late-rank 200 --late-us 2000 --clock-skew-us 0.5
"""
import gzip
import json
import math
import sys

import argparse

ap = argparse.ArgumentParser(description=__doc__.replace("%", "%%"),
                             formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("src")
ap.add_argument("dst")
ap.add_argument("copies", type=int)
ap.add_argument("--ranks", type=int, default=0, help="write N rank traces OUT.rank<r>.json")
ap.add_argument("--late-rank", type=int, default=-1, help="the straggler rank (default none)")
ap.add_argument("--late-us", type=float, default=0.0, help="how late it arrives at every NCCL kernel, us")
ap.add_argument("--clock-skew-us", type=float, default=0.0, help="clock shift per rank: x (r %% 7) us")
opt = ap.parse_args()
src, dst, copies = opt.src, opt.dst, opt.copies
opener = gzip.open if src.endswith(".gz") else open
with opener(src, "rt", encoding="utf-8") as f:
    doc = json.load(f)
events = doc["traceEvents"] if isinstance(doc, dict) else doc
header = {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {}


def num(e, k):
    v = e.get(k)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


ts = [num(e, "ts") for e in events if num(e, "ts") is not None]
ends = [num(e, "ts") + (num(e, "dur") or 0) for e in events if num(e, "ts") is not None]
span_us = math.ceil((max(ends) - min(ts)) / 1000.0) * 1000.0 + 1000.0
max_ext = max_corr = max_id = 0
steps = []
for e in events:
    a = e.get("args") or {}
    for k in ("External id", "external id"):
        if isinstance(a.get(k), int):
            max_ext = max(max_ext, a[k])
    if isinstance(a.get("correlation"), int):
        max_corr = max(max_corr, a["correlation"])
    if isinstance(e.get("id"), int):
        max_id = max(max_id, e["id"])
    if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation":
        steps.append(int(e["name"].split("#")[1]))
nsteps = len(set(steps)) or 1
first_step = min(steps) if steps else 0


def dumps(e):
    s = json.dumps(e, separators=(", ", ": "))
    return s


def is_nccl(e):
    return e.get("cat") in ("kernel", "Kernel") and str(e.get("name", "")).startswith(("nccl", "ncclDev"))


_templates = {}


def template(c):
    """copy c's events as (text, ts, dur, nccl): text with "@TS@"/"@DUR@" where
    the numbers go (made once, reused for every rank)"""
    if c in _templates:
        return _templates[c]
    out = []
    for e in events:
        e2 = dict(e)
        if num(e, "ts") is not None:
            e2["ts"] = "@TS@"
        if num(e, "dur") is not None:
            e2["dur"] = "@DUR@"
        if isinstance(e.get("id"), int):
            e2["id"] = e["id"] + c * (max_id + 1)
        a = e.get("args")
        if isinstance(a, dict):
            a2 = dict(a)
            for k in ("External id", "external id"):
                if isinstance(a.get(k), int) and a[k]:
                    a2[k] = a[k] + c * (max_ext + 1)
            if isinstance(a.get("correlation"), int) and a["correlation"]:
                a2["correlation"] = a["correlation"] + c * (max_corr + 1)
            e2["args"] = a2
        name = e.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            e2["name"] = "ProfilerStep#%d" % (int(name.split("#")[1]) + c * nsteps)
        out.append((dumps(e2), num(e, "ts"), num(e, "dur"), is_nccl(e)))
    _templates[c] = out
    return out


def write(path, hdr, rank=None):
    """the copies into path; rank: (r, clock offset us, this rank late?, late us)"""
    off, late, late_us = (rank[1], rank[2], rank[3]) if rank else (0.0, False, 0.0)
    with open(path, "w") as out:
        out.write("{\n")
        for k, v in hdr.items():
            out.write("  %s: %s,\n" % (json.dumps(k), json.dumps(v)))
        out.write('  "traceEvents": [\n')
        first = True
        for c in range(copies):
            for s, t, d, nccl in template(c):
                if rank and late_us and nccl:
                    if late:  # arrives D late: its kernel runs as long, D later
                        t = t + late_us
                    elif d is not None:  # waits D for the late rank: ends with it
                        d = d + late_us
                if t is not None:
                    s = s.replace('"@TS@"', "%.3f" % (t + c * span_us + off), 1)
                if d is not None:
                    s = s.replace('"@DUR@"', "%.3f" % d, 1)
                out.write(("  " if first else ",\n  ") + s)
                first = False
            if not rank:
                _templates.pop(c)  # one pass: keep no more than a copy
        out.write("\n  ]\n}\n")


if opt.ranks <= 0:
    write(dst, header)
else:
    for r in range(opt.ranks):
        hdr = dict(header)
        hdr["distributedInfo"] = dict(header.get("distributedInfo") or {}, rank=r, world_size=opt.ranks)
        write("%s.rank%d.json" % (dst, r), hdr,
              (r, opt.clock_skew_us * (r % 7), r == opt.late_rank, opt.late_us))
