#!/usr/bin/env python3
"""bench/replicate_trace.py IN OUT COPIES — a bigger trace made of COPIES
copies of IN's events, each shifted in time by the trace's span (rounded up
to a millisecond) and with External ids, correlation ids and flow ids
offset past the previous copy's, so steps, links and flows stay distinct
and valid (ProfilerStep#N renumbered). Events are written one per line with
ts/dur as "us.nnn", like Kineto. For benchmarks only: bench/report.sh writes
into /tmp, never into the repository.

  python3 bench/replicate_trace.py trace.json.gz /tmp/big.json 20
"""
import gzip
import json
import math
import sys

src, dst, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
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


with open(dst, "w") as out:
    out.write("{\n")
    for k, v in header.items():
        out.write("  %s: %s,\n" % (json.dumps(k), json.dumps(v)))
    out.write('  "traceEvents": [\n')
    first = True
    for c in range(copies):
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
            s = dumps(e2)
            if num(e, "ts") is not None:
                s = s.replace('"@TS@"', "%.3f" % (e["ts"] + c * span_us), 1)
            if num(e, "dur") is not None:
                s = s.replace('"@DUR@"', "%.3f" % e["dur"], 1)
            out.write(("  " if first else ",\n  ") + s)
            first = False
    out.write("\n  ]\n}\n")
