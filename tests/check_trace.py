#!/usr/bin/env python3
"""check_trace.py TRACE[.gz] — validate a kvscope (or Kineto) Chrome trace
with Python's own json module and print a JSON summary on stdout.

    python3 tests/check_trace.py trace.json.gz

Exit 0 when the trace is valid and consistent, 1 with the problems listed
(in the summary's "problems" and on stderr), 2 when it cannot be parsed.
Checks: the Kineto top-level layout; every complete ("X") event has
name/cat/pid/tid and ts/dur >= 0; in the raw text every "ts"/"dur" has
exactly three decimals ("us.nnn"); ac2g flows come in s/f pairs; every
External id on GPU work names a cpu_op/user_annotation; every
gpu_user_annotation names a user_annotation. Used by the unit and gpu tests.
"""
import collections
import gzip
import json
import re
import sys


def main(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        print(json.dumps({"problems": ["not valid JSON: %s" % e]}))
        return 2
    problems = []
    for key in ("schemaVersion", "deviceProperties", "traceEvents", "baseTimeNanoseconds",
                "displayTimeUnit"):
        if key not in doc:
            problems.append("missing top-level key %r" % key)
    events = doc.get("traceEvents", [])
    text = raw.decode("utf-8")
    bad_ts = re.findall(r'"(?:ts|dur)": (-?[0-9][0-9.eE+-]*)', text)
    bad_ts = [t for t in bad_ts if not re.fullmatch(r"-?[0-9]+\.[0-9]{3}", t)]
    if bad_ts:
        problems.append("%d ts/dur not written as us.nnn, e.g. %s" % (len(bad_ts), bad_ts[:3]))

    cats = collections.Counter()
    ext_ops = {}
    ranges = {}
    flows = collections.defaultdict(lambda: [0, 0])
    kernels, ops, gpu_ann, memcpys, memsets, user_ann, apis = [], [], [], [], [], [], []
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            for k in ("name", "cat", "pid", "tid", "ts", "dur"):
                if k not in e:
                    problems.append("X event without %r: %s" % (k, str(e)[:200]))
            if e.get("dur", 0) < 0:
                problems.append("negative dur: %s" % str(e)[:200])
            cat = e.get("cat")
            cats[cat] += 1
            args = e.get("args", {})
            ts_ns = round(e["ts"] * 1000)
            dur_ns = round(e["dur"] * 1000)
            item = {"name": e["name"], "ts_ns": ts_ns, "dur_ns": dur_ns, "pid": e["pid"],
                    "tid": e["tid"]}
            if "External id" in args:
                item["ext"] = args["External id"]
            if cat in ("cpu_op", "user_annotation"):
                ext_ops[args.get("External id")] = cat
            if cat == "kernel":
                item.update(grid=args.get("grid"), block=args.get("block"),
                            stream=args.get("stream"), correlation=args.get("correlation"))
                if "graph node id" in args:
                    item.update(graph_id=args.get("graph id"), graph_node=args["graph node id"])
                kernels.append(item)
            elif cat == "cpu_op":
                item.update(dims=args.get("Input Dims"), types=args.get("Input type"))
                ops.append(item)
            elif cat == "user_annotation":
                ranges[args.get("External id")] = e["name"]
                user_ann.append(item)
            elif cat == "gpu_user_annotation":
                gpu_ann.append(item)
            elif cat == "gpu_memcpy":
                item.update(bytes=args.get("bytes"), gbps=args.get("memory bandwidth (GB/s)"))
                memcpys.append(item)
            elif cat == "gpu_memset":
                item.update(bytes=args.get("bytes"))
                memsets.append(item)
            elif cat in ("cuda_runtime", "cuda_driver"):
                item.update(correlation=args.get("correlation"))
                apis.append(item)
        elif ph in ("s", "f"):
            flows[e.get("id")][0 if ph == "s" else 1] += 1
    for fid, (s, f) in flows.items():
        if s != 1 or f != 1:
            problems.append("flow %s has %d starts and %d finishes" % (fid, s, f))
    for k in kernels + memcpys + memsets:
        if "ext" in k and k["ext"] not in ext_ops:
            problems.append("GPU event %r carries External id %s of no op" % (k["name"], k["ext"]))
    for g in gpu_ann:
        if ranges.get(g.get("ext")) != g["name"]:
            problems.append("gpu_user_annotation %r has no user_annotation" % g["name"])
    summary = {
        "problems": problems,
        "categories": dict(cats),
        "flows": len(flows),
        "kernels": kernels,
        "ops": ops,
        "user_annotations": user_ann,
        "gpu_user_annotations": gpu_ann,
        "memcpys": memcpys,
        "memsets": memsets,
        "api_calls": len(apis),
        "apis": apis,
        "kvscope": doc.get("kvscope"),
        "deviceProperties": doc.get("deviceProperties"),
        "distributedInfo": doc.get("distributedInfo"),
    }
    print(json.dumps(summary))
    for p in problems:
        print("check_trace: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
