#!/usr/bin/env python3
"""examples/traces/add_engine_meta.py — give the bundled engine traces the
`kvscope.engine` object (docs/report-json.md) that `kvscope engine --trace`
writes into newer traces, from the engine log of the same run.

    python3 examples/traces/add_engine_meta.py [DIR]      (DIR: this folder)

The traces in DIR (glm5_PATH.json.gz) were captured before the engine wrote
that object; their logs (glm5_PATH.log, the engine's stdout of the same run)
hold the same facts: the `result:` line (config, path, batch, context,
steps, graph, bytes_per_step, copy_gbps, step_ms), the first line (KV
capacity) and the memory plan (layers: "KV pool (FP8 e4m3, 78 x ..."). What
no log line says is left out (a reader takes a missing key as unknown): the
byte model's split into weight and KV bytes (the log rounds it to 10 MB)
and the tensor-parallel degree. The object goes right after the document's
opening brace; a trace that already has one is left as it is. The gzip
output is reproducible (no name, mtime 0).
"""
import gzip
import json
import os
import re
import sys

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)

KEY = '"kvscope.engine"'


def facts(log_path):
    with open(log_path) as f:
        text = f.read()
    results = [l for l in text.splitlines() if l.startswith("result:")]
    if not results:
        raise SystemExit("%s: no result: line" % log_path)
    kv = dict(t.split("=", 1) for t in results[-1].split()[1:] if "=" in t)
    cap = re.search(r"KV capacity (\d+) tokens", text)
    layers = re.search(r"KV pool \([^,]*, (\d+) x \d+ x \d+\)", text)
    obj = {"schema": "kvscope.engine/1", "config": kv["config"], "kv_path": kv["path"],
           "batch": int(kv["batch"]), "context": int(kv["context"])}
    if cap:
        obj["kv_capacity"] = int(cap.group(1))
    if layers:
        obj["layers"] = int(layers.group(1))
    obj["graph"] = kv["graph"] == "1"
    obj["steps"] = int(kv["steps"])
    # bytes_per_step as the log printed it (%g: six significant digits)
    obj["bytes_per_step"] = int(float(kv["bytes_per_step"]))
    obj["copy_gbps"] = float(kv["copy_gbps"]) if "copy_gbps" in kv else None
    obj["step_ms"] = float(kv["step_ms"])
    return obj


def add(trace, log):
    with gzip.open(trace, "rb") as f:
        data = f.read()
    if KEY.encode() in data[:4096]:
        print("%s: has kvscope.engine already" % trace)
        return
    start = data.index(b"{") + 1
    obj = json.dumps(facts(log), separators=(", ", ": "))
    data = data[:start] + ('\n  %s: %s,' % (KEY, obj)).encode() + data[start:]
    json.loads(data)  # still one valid document
    with open(trace + ".tmp", "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
            f.write(data)
    os.replace(trace + ".tmp", trace)
    print("%s: %s" % (trace, obj))


def main(argv):
    d = argv[1] if len(argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    n = 0
    for name in sorted(os.listdir(d)):
        m = re.fullmatch(r"(glm5_[a-z0-9-]+)\.json\.gz", name)
        if m and os.path.isfile(os.path.join(d, m.group(1) + ".log")):
            add(os.path.join(d, name), os.path.join(d, m.group(1) + ".log"))
            n += 1
    if n == 0:
        print("no glm5_PATH.json.gz with a glm5_PATH.log in %s" % d, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
