#!/usr/bin/env python3
"""tests/fuzz/make_seeds.py — seed inputs for the kvscope fuzz harnesses.

  tests/fuzz/make_seeds.py --handmade tests/fuzz/corpus      (what is committed)
  tests/fuzz/make_seeds.py --generated OUT [--shared ../shared]  (at fuzz time)

--handmade writes the small hand-made edge cases into DIR/<harness>/ as
hm-*.json files (deep nesting, huge numbers, invalid UTF-8, control bytes, NUL
bytes, odd events, odd configs and device tables); tests/fuzz/corpus holds its
output plus the regression input of every finding (regress-*), and the unit
tests fuzz_replay_* run them all. Run it again after editing the cases here.

--generated writes what is too many or too large to commit: a small trace cut
at every byte offset, large traces of many events made here from a model of
a decode trace (many_events: steps, ops with shapes, launches, kernels of each
family on several devices and streams, copies, B/E pairs, shared and missing
ids; up to ~1 MiB, the trace harness's -max_len), and slices (a few KB each) of every trace under
SHARED/traces (header + a sample of events of each kind, closed so that the
slice is a complete document; the same slice gzipped, whole and cut, for the
gz harness). Traces are read, never copied whole. Deterministic.
"""
import argparse
import gzip
import io
import json
import os
import sys
import zlib

HARNESSES = ("trace", "scan", "gz", "model", "devices", "cli", "grow")
SLICE_BYTES = 4096


def write(outdir, harness, name, data):
    d = os.path.join(outdir, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def ev(**kw):
    return json.dumps(kw)


def trace_of(*events, header=""):
    return "{%s\"traceEvents\": [%s]}" % (header, ",\n".join(events))


OP = ('{"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":1,"tid":1,"ts":%s,"dur":%s,'
      '"args":{"External id":%s,"Input Dims":%s,"Input type":%s}}')
KERNEL = ('{"ph":"X","cat":"kernel","name":"direct_copy_kernel_cuda","pid":0,"tid":7,"ts":%s,'
          '"dur":%s,"args":{"External id":%s,"correlation":%s,"device":0,"stream":7}}')
STEP = '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,"ts":%s,"dur":%s}'
FP8 = '["c10::BFloat16","c10::Float8_e4m3fn"]'


def small_trace():
    """A complete small Kineto-style trace with a step, a cast and its kernel."""
    return trace_of(
        STEP % (1, "1000.000", "500.000"),
        OP % ("1010.000", "100.000", 1, "[[4096,1,576],[4096,1,576]]", FP8),
        '{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1020.5,'
        '"dur":3,"args":{"correlation":77,"External id":1}}',
        KERNEL % ("1030.250", "40.125", 1, 77),
        '{"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoD (Device -> Device)","pid":0,"tid":7,'
        '"ts":1100,"dur":5,"args":{"bytes":1152,"device":0,"stream":7,"correlation":78}}',
        '{"ph":"f","id":77,"pid":0,"tid":7,"ts":1030.250,"cat":"ac2g","name":"ac2g","bp":"e"}',
        header='"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],')


def handmade_traces():
    """name -> bytes/str: JSON edge cases for the scanner and the reader."""
    t = {}
    good = small_trace()
    t["small"] = good
    # nesting
    t["deep-511"] = "[" * 511 + "]" * 511
    t["deep-600"] = "[" * 600 + "]" * 600
    t["deep-args"] = trace_of('{"ph":"X","cat":"cpu_op","name":"a","ts":1,"dur":1,"args":{"x":%s}}'
                              % ("[" * 700 + "]" * 700))
    t["deep-objects"] = trace_of('{"ph":"X","args":%s}' % ('{"a":' * 600 + "1" + "}" * 600))
    t["deep-unclosed"] = "[" * 5000
    t["deep-header"] = '{"deviceProperties":%s,"traceEvents":[]}' % ("[" * 520 + "]" * 520)
    # numbers
    t["num-huge"] = trace_of(
        OP % ("1e400", "-1e400", "99999999999999999999999999", "[[1,2]]", FP8),
        KERNEL % ("1.7976931348623157e308", "9223372036854775807", "18446744073709551616",
                  "-9223372036854775809"),
        STEP % (2, "-9223372036854775808", "9223372036854775807"),
        STEP % (3, "9223372036854775.807", "0.0000000000000000000001"))
    t["num-4000-digits"] = trace_of(KERNEL % ("1" * 4000, "2", "3", "4"))
    t["num-5000-digits"] = trace_of(KERNEL % ("1" * 5000, "2", "3", "4"))
    t["num-frac-5000"] = trace_of(KERNEL % ("1." + "9" * 5000, "2", "3", "4"))
    for i, bad in enumerate(["012", "-", "1.", "1e", "1e+", ".5", "+1", "NaN", "Infinity",
                             "-0", "0e0", "1E-7", "--1", "0x10", "1.5.5"]):
        t["num-bad-%02d" % i] = trace_of(KERNEL % (bad, "1", "1", "1"))
    t["num-exp-ts"] = trace_of(STEP % (1, "1.5e3", "2E2"), KERNEL % ("1.6e3", "1e1", "1", "1"))
    t["num-frac-digits"] = trace_of(STEP % (1, "1000.123456789123456789", "0.0000000009"))
    # strings
    t["utf8-invalid"] = trace_of('{"ph":"X","cat":"kernel","name":"k\xff\xfe\xc0\x80\xed\xa0\x80",'
                                 '"ts":1,"dur":1,"pid":0,"tid":1}').encode("latin-1")
    t["utf8-surrogates"] = trace_of(
        '{"ph":"X","cat":"cpu_op","name":"a\\ud800 b\\udc00 c\\ud83d\\ude00 d\\ud800\\u0041","ts":1,'
        '"dur":1,"pid":1,"tid":1}')
    t["escape-bad"] = trace_of('{"ph":"X","cat":"cpu_op","name":"bad \\x escape","ts":1}')
    t["escape-u-short"] = trace_of('{"ph":"X","cat":"cpu_op","name":"\\u00","ts":1}')
    t["escape-u-bad"] = trace_of('{"ph":"X","cat":"cpu_op","name":"\\uzzzz","ts":1}')
    t["escape-end"] = '{"traceEvents":[{"name":"abc\\'
    t["escape-runs"] = trace_of('{"ph":"X","cat":"cpu_op","name":"a\\\\\\\\\\"\\\\","ts":1,"dur":1,'
                                '"pid":1,"tid":1}')
    t["control-raw"] = trace_of('{"ph":"X","cat":"kernel","name":"tab\there\nnewline\x01\x1f",'
                                '"ts":1,"dur":1}')
    t["nul-in-string"] = trace_of('{"ph":"X","cat":"kernel","name":"a\x00b","ts":1,"dur":1}')
    t["nul-between"] = '{"traceEvents":\x00[]}'
    t["nul-after"] = good + "\x00"
    t["nul-only"] = "\x00\x00\x00"
    t["bom"] = "\ufeff" + good
    t["long-name"] = trace_of('{"ph":"X","cat":"kernel","name":"%s","ts":1,"dur":1}' % ("k" * 3000))
    t["long-pid"] = trace_of('{"ph":"X","cat":"cpu_op","name":"a","pid":"%s","tid":"%s","ts":1,'
                             '"dur":1}' % ("p" * 200, "t" * 200))
    # structure
    t["empty"] = ""
    t["ws-only"] = " \n\t\r "
    t["empty-object"] = "{}"
    t["empty-array"] = "[]"
    t["trailing-garbage"] = good + " x"
    t["two-documents"] = good + good
    t["trailing-comma"] = '{"traceEvents":[{"ph":"X"},]}'
    t["missing-colon"] = '{"traceEvents" [1]}'
    t["events-not-array"] = '{"traceEvents":{"ph":"X"}}'
    t["events-twice"] = '{"traceEvents":[%s],"traceEvents":[%s]}' % (
        KERNEL % (1, 1, 1, 1), KERNEL % (2, 1, 1, 1))
    t["event-not-object"] = '{"traceEvents":[1,"x",null,[],true]}'
    t["literals-bad"] = '{"traceEvents":[{"ph":tru}]}'
    t["literal-cut"] = '{"traceEvents":[{"ph":nul'
    # events
    t["be-unbalanced"] = "[" + ",".join([
        '{"ph":"E","pid":1,"tid":1,"ts":5}',
        '{"ph":"B","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":10}',
        '{"ph":"B","cat":"cpu_op","name":"b","pid":1,"tid":2,"ts":11}',
        '{"ph":"E","cat":"cpu_op","pid":1,"tid":1,"ts":3}',
        '{"ph":"B","name":"c","pid":"x","tid":{"o":1},"ts":12}',
        '{"ph":"E","cat":"user_annotation","pid":"x","tid":{"o":1},"ts":9223372036854775807}']) + "]"
    t["be-extreme-ts"] = "[" + ",".join([
        '{"ph":"B","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":-9223372036854775.808}',
        '{"ph":"E","pid":1,"tid":1,"ts":9223372036854775.807}']) + "]"
    t["ph-odd"] = trace_of('{"ph":"","cat":"kernel"}', '{"ph":"XX","cat":"kernel"}',
                           '{"ph":1,"cat":"kernel"}', '{"ph":"i","s":"g"}', '{"ph":"M"}',
                           '{"ph":"C","args":{"v":1}}')
    t["types-odd"] = trace_of(
        '{"ph":"X","cat":["kernel"],"name":{"x":1},"pid":null,"tid":true,"ts":"10","dur":"5",'
        '"args":[]}',
        '{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"device":"0x7fffffffffffffff",'
        '"stream":"-1","External id":"abc","correlation":[1],"bytes":"9e99"}}')
    t["dims-odd"] = trace_of(
        OP % (1, 1, 1, "[[1,2,3,4,5,6,7,8,9,10],[-1,5],[0],[],[[1,2]],null,\"x\"]",
              '["float","float","float","float","float","float","float"]'),
        OP % (2, 1, 2, "[[9223372036854775807,9223372036854775807],[4611686018427387904,4]]",
              '["c10::BFloat16","c10::Float8_e4m3fn"]'),
        OP % (4, 1, 4, "[" + ",".join(["[2,2]"] * 40) + "]", "[" + ",".join(['"float"'] * 40) + "]"),
        OP % (5, 1, 5, "[[%s]]" % ",".join(["2"] * 60), '["float"]'),
        OP % (6, 1, 6, "[[1,2],[3,4]]", '["c10::Float\\u0038_e4m3fn","\\"\\\\"]'),
        KERNEL % (1, 1, 1, 1), KERNEL % (2, 1, 2, 2), KERNEL % (3, 1, 3, 3),
        KERNEL % (4, 1, 4, 4), KERNEL % (5, 1, 5, 5), KERNEL % (6, 1, 6, 6))
    t["dims-broken"] = trace_of(OP % (3, 1, 3, "[[1,2]", '["float"'), KERNEL % (3, 1, 3, 3))
    t["dims-rank-65"] = trace_of(OP % (1, 1, 1, "[[%s]]" % ",".join(["1"] * 65), '["float"]'))
    t["dims-rank-64"] = trace_of(OP % (1, 1, 1, "[[%s]]" % ",".join(["1"] * 64), '["float"]'))
    t["dims-list-100"] = trace_of(OP % (1, 1, 1, "[[%s]]" % ",".join(["[2,2]"] * 100), '["TensorList"]'))
    t["ids-odd"] = trace_of(
        OP % (1, 1, 0, "[[1]]", '["float"]'), OP % (2, 1, -1, "[[1]]", '["float"]'),
        OP % (3, 1, "18446744073709551615", "[[1]]", '["float"]'),
        KERNEL % (1, 1, 0, 0), KERNEL % (2, 1, -1, -1), KERNEL % (3, 1, "18446744073709551615", 5),
        KERNEL % (4, 1, 1, 5))
    t["header-odd"] = ('{"deviceProperties":[{"id":64,"name":"x"},{"id":-1,"name":"y"},'
                       '{"id":1e300,"name":"z"},{"id":0,"name":7},{"name":"NVIDIA H100"},'
                       '{"id":0.5,"name":"w"}],'
                       '"distributedInfo":{"rank":1e300,"world_size":-1e300},'
                       '"kvscope":{"dropped_records":1e300,"dropped":-5,"also_dropped":"x"},'
                       '"traceEvents":[%s]}' % (KERNEL % (1, 1, 1, 1)))
    t["header-after"] = '{"traceEvents":[%s],"deviceProperties":[{"id":0,"name":"NVIDIA B200"}]}' % (
        KERNEL % (1, 1, 1, 1))
    t["array-format"] = "[%s]" % ",".join([STEP % (1, 0, 100), OP % (1, 10, 1, "[[8,576]]", '["float"]'),
                                           KERNEL % (2, 5, 1, 1)])
    t["many-steps"] = trace_of(*[STEP % (i, i * 10, 15) for i in range(40)],
                               *[KERNEL % (i * 10 + 1, 3, i, i) for i in range(40)])
    t["memcpy-memset"] = trace_of(
        '{"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":1,"dur":2,'
        '"args":{"bytes":9223372036854775807,"device":0}}',
        '{"ph":"X","cat":"Memcpy","name":"Memcpy HtoD","pid":0,"tid":7,"ts":3,"dur":0,'
        '"args":{"bytes":-5,"device":63}}',
        '{"ph":"X","cat":"gpu_memcpy","name":"Memcpy PtoP","pid":0,"tid":7,"ts":4,"dur":1,'
        '"args":{"bytes":4611686018427387904,"device":64}}')
    return t


def handmade_models():
    t = {}
    here = os.path.dirname(os.path.abspath(__file__))
    models = os.path.join(here, "..", "..", "analyzers", "data", "models")
    for f in sorted(os.listdir(models)):
        with open(os.path.join(models, f), "rb") as fh:
            t["bundled-" + f[:-5]] = fh.read()
    base = {"num_hidden_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
            "num_attention_heads": 128, "hidden_size": 7168}
    t["text-config"] = json.dumps({"model_type": "x", "text_config": base})
    t["layers-huge"] = '{"num_hidden_layers": 1e300, "kv_lora_rank": 1e19, "head_dim": 9.3e18}'
    t["layers-int-max"] = '{"num_hidden_layers": 2147483648, "hidden_size": 9223372036854775807}'
    t["layers-bad"] = '{"num_hidden_layers": -1}'
    t["layers-string"] = '{"num_hidden_layers": "61"}'
    t["heads-zero"] = '{"num_hidden_layers": 2, "num_attention_heads": 0, "hidden_size": 7}'
    t["gqa"] = json.dumps({"num_hidden_layers": 80, "num_attention_heads": 64,
                           "num_key_value_heads": 8, "hidden_size": 8192, "head_dim": 128})
    t["fractional"] = '{"num_hidden_layers": 0.5, "kv_lora_rank": 511.9}'
    t["not-object"] = '[{"num_hidden_layers": 3}]'
    t["deep"] = '{"a":' * 1200 + "1" + "}" * 1200
    t["empty"] = ""
    t["truncated"] = json.dumps(base)[:-7]
    return t


def handmade_devices():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "analyzers", "data", "devices.json")) as fh:
        table = fh.read()
    t = {}
    t["h200-bundled"] = "NVIDIA H200\n" + table
    t["gb200"] = "NVIDIA GB200\n" + table
    t["empty-name"] = "\n" + table
    t["no-table"] = "H100 80GB HBM3"
    t["long-name"] = "A" * 500 + "H200\n" + table
    t["odd-table"] = ("x\n" + json.dumps({"devices": [
        {"name": "x", "match": ["", "X", 5, None], "hbm_gbps": 1},
        {"name": 3, "match": ["x"], "hbm_gbps": 2},
        {"name": "y", "match": "x", "hbm_gbps": 3},
        {"name": "z", "match": ["x"], "hbm_gbps": "fast"},
        {"name": "w" * 300, "match": ["x-_ "], "hbm_gbps": 1e308, "per_device_gbps": -1}]}))
    t["not-table"] = "x\n{\"devices\": {}}"
    t["names-utf8"] = "H\xc3\xa9200 \xff\n" + table
    return t


def handmade_gz(traces):
    """gz harness inputs: mode byte + payload (see fuzz_gz.c)."""
    t = {}
    small = small_trace().encode()
    whole = gzip.compress(small, mtime=0)
    t["raw-whole"] = b"\x00" + whole
    t["raw-cut"] = b"\x02" + whole[:-9]
    t["raw-two-members"] = b"\x04" + whole + gzip.compress(b" ", mtime=0)
    t["raw-trailing-zeros"] = b"\x00" + whole + b"\x00" * 8
    t["raw-bad-crc"] = b"\x02" + whole[:-8] + b"\x00\x00\x00\x00" + whole[-4:]
    t["raw-header-only"] = b"\x00" + whole[:10]
    t["raw-magic-only"] = b"\x00\x1f\x8b"
    t["json-1-member"] = b"\x01" + small
    t["json-3-members"] = b"\x41" + small
    t["json-cut"] = b"\x81" + small
    t["json-level0"] = b"\x07" + small
    return t


def handmade_cli():
    """fuzz_cli inputs: byte 0 even = report, odd = compare; arguments one a
    line up to a blank line; the rest is the file f.json."""
    small = small_trace().encode()
    c = {
        "report-text": b"\x00t.json",
        "report-json-o": b"\x00t.json\n--format\njson\n-o\nr.json",
        "report-html-by-name": b"\x00t.json\n-o\nr.html",
        "report-md-eq": b"\x00t.json\n--format=md\n--output=r.md\n--top=3",
        "report-stdin-o-stdin": b"\x00-\n-o\nt.json",
        "report-o-model": b"\x00t.json\n--model\nm.json\n-o\nm.json",
        "report-model-opts": b"\x00t.json\n--model=m.json\n--kv-capacity\n4096\n--batch\n8\n"
                             b"--kv-dtype\nfp8\n--device\nH200",
        "report-peak-both": b"\x00t.json\n--device\nH200\n--peak-gbps\n4800",
        "report-regex": b"\x00t.json\n--step-regex\n^ProfilerStep\n--peak-gbps\n1e400",
        "report-ranks": b"\x00t.json\nf.json\n--quiet\n-o\nranks.json\n\n" + small,
        "report-file": b"\x00f.json\n--format\nhtml\n\n" + small,
        "report-path-dots": b"\x00..\n-o\n.\n--output=..",
        "report-missing-value": b"\x00t.json\n-o",
        "report-unknown": b"\x00t.json\n--nope\n--help",
        "report-graph": b"\x00t.json\n--graph-capture\nc.json",
        "compare-two": b"\x01t.json\nf.json\n\n" + small,
        "compare-json-o": b"\x01t.json\nt.json\n--format\njson\n--output\nc.json",
        "compare-stdin": b"\x01-\nt.json\n-o\nt.json",
        "compare-opts": b"\x01t.json\nt.json\n--peak-gbps=0.0001\n--batch=0\n--top\n-1",
        "compare-capture": b"\x01t.json\nt.json\n--before-capture\nc.json\n--after-capture=c.json",
        "compare-gate-junit": b"\x01t.json\nf.json\n--fail-on\nregression\n--threshold\n0\n--format\n"
                              b"junit\n\n" + small,
        "compare-gate-afters": b"\x01t.json\nt.json\nf.json\n--fail-on=regression\n--format=json\n"
                               b"--threshold=1e400\n\n" + small,
    }
    return c


def handmade_grow():
    """fuzz_grow: 4 bytes (kind, log2 size, a variation, the buffer) and a
    small trace with a "@" string marking the value to grow, in each place a
    big value can sit"""
    small = small_trace()
    places = {
        "header-junk": small.replace('"name":"NVIDIA H200"}', '"name":"NVIDIA H200","junk":"@"}'),
        "header-field": small.replace('"schemaVersion":1,', '"schemaVersion":1,"distributedInfo":"@",'),
        "top-key": small.replace('"schemaVersion":1,', '"schemaVersion":1,"extra":"@",'),
        "input-dims": small.replace('"Input Dims":[[4096,1,576],[4096,1,576]]', '"Input Dims":"@"'),
        "input-type": small.replace('"Input type":' + FP8, '"Input type":"@"'),
        "op-name": small.replace('"name":"aten::copy_"', '"name":"@"'),
        "kernel-arg": small.replace('"correlation":77,"device":0', '"correlation":77,"Concrete Inputs":"@","device":0'),
        "grid": small.replace('"correlation":77,"device":0', '"correlation":77,"grid":"@","device":0'),
        "cat": small.replace('"cat":"gpu_memcpy"', '"cat":"@"'),
        "pid": small.replace('"pid":0,"tid":7,"ts":1100', '"pid":"@","tid":7,"ts":1100'),
        "event": small.replace('"traceEvents": [', '"traceEvents": ["@",'),
        "ts": small.replace('"ts":1020.5', '"ts":"@"'),
    }
    # kinds (fuzz_grow.c): 0 digits, 1 string, 2 escapes, 3 numbers, 4 literals, 5 tensors,
    # 6 object, 7 nesting; sizes 2^12 .. 2^22
    combos = [(3, 21, 0, 0), (4, 21, 5, 1), (0, 12, 0, 2), (1, 22, 9, 3), (2, 20, 1, 1), (5, 21, 0, 0),
              (6, 20, 3, 2), (7, 16, 200, 3)]
    g = {}
    for i, (place, text) in enumerate(sorted(places.items())):
        assert '"@"' in text, place
        for j in range(2):
            k, lg, var, buf = combos[(i * 2 + j) % len(combos)]
            g["%s-k%d-2e%d" % (place, k, lg)] = bytes([k, lg, var, buf]) + text.encode()
    return g


def handmade(outdir):
    for name, data in handmade_grow().items():
        write(outdir, "grow", "hm-" + name + ".bin", data)
    tr = handmade_traces()
    for name, data in tr.items():
        write(outdir, "trace", "hm-" + name + ".json", data)
        write(outdir, "scan", "hm-" + name + ".json", data)
    for name, data in handmade_models().items():
        write(outdir, "model", "hm-" + name + ".json", data)
    for name, data in handmade_devices().items():
        write(outdir, "devices", "hm-" + name + ".txt", data)
    for name, data in handmade_gz(tr).items():
        write(outdir, "gz", "hm-" + name + ".bin", data)
    for name, data in handmade_cli().items():
        write(outdir, "cli", "hm-" + name + ".txt", data)


# ---------------------------------------------------------------------------
# generated: cuts of a small trace, slices of the shared traces

def element_spans(text, start):
    """(begin, end) of each top-level element of the JSON array whose '['
    is at text[start]; stops at the array's end or the end of text."""
    spans = []
    i, n = start + 1, len(text)
    depth, in_str, esc, begin = 0, False, False, None
    while i < n:
        c = text[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            if depth == 0 and begin is None:
                begin = i
        elif c in "{[":
            if depth == 0:
                begin = i
            depth += 1
        elif c in "}]":
            if depth == 0:
                break
            depth -= 1
            if depth == 0:
                spans.append((begin, i + 1))
                begin = None
        i += 1
    return spans


def slices_of(text):
    """A few complete small documents cut from one trace's text."""
    key = text.find('"traceEvents"')
    if key < 0:
        if text.lstrip().startswith("["):
            lb, header, tail = text.find("["), "[", "]"
        else:
            return []
    else:
        lb = text.find("[", key)
        header, tail = text[:lb + 1], "]}"
    if len(header) > 2048:  # keep the slices small: drop a big header
        header = '{"traceEvents": ['
    spans = element_spans(text, lb)
    if not spans:
        return []
    out = []
    # the first events, as they come
    body, size = [], len(header)
    for b, e in spans:
        if size + e - b > SLICE_BYTES:
            break
        body.append(text[b:e])
        size += e - b + 2
    out.append(header + ",\n".join(body) + tail)
    # one event of each kind (ph, cat), then more of them, from the whole trace
    kinds, picked, size = set(), [], len(header)
    for b, e in spans:
        ev = text[b:e]
        ph = ev.find('"ph"')
        cat = ev.find('"cat"')
        kind = (ev[ph:ph + 12] if ph >= 0 else "", ev[cat:cat + 24] if cat >= 0 else "")
        if kind in kinds or size + e - b > SLICE_BYTES:
            continue
        kinds.add(kind)
        picked.append(ev)
        size += e - b + 2
    out.append(header + ",\n".join(picked) + tail)
    # a window from the middle (kernels and their ops interleave there)
    mid = len(spans) // 2
    body, size = [], len(header)
    for b, e in spans[mid:]:
        if size + e - b > SLICE_BYTES:
            break
        body.append(text[b:e])
        size += e - b + 2
    if body:
        out.append(header + ",\n".join(body) + tail)
    return out


def read_prefix(path, limit=8 << 20):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


KERNELS = ("direct_copy_kernel_cuda", "sm90_xmma_gemm_bf16bf16_bf16f32", "flash_fwd_splitkv_kernel",
           "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "triton_poi_fused_add_0",
           "void at::native::elementwise_kernel<128, 4>", "Memset (Device)")
DIMS = ("[[4096,1,576],[4096,1,576]]", "[[131072,1,576],[131072,1,576]]", "[[8192,8,128],[8192,8,128]]",
        "[[1024],[131072,576]]", "[[4096,1,656],[4096,1,656],[]]", "[]", "[[1,2,3,4,5,6,7,8]]")
TYPES = (FP8, '["c10::BFloat16","float"]', '["long int","c10::BFloat16"]', '["float","Scalar"]', "[]")


def many_events(seed, nbytes):
    """A trace of many events (about nbytes of JSON) drawn from a model of a
    decode trace: steps (X, or B/E pairs, some unclosed), ops with shapes,
    runtime launches (a few graph launches), the kernels they launch on
    2 streams and now and then another device, memcpy/memset, flow events;
    ids mostly fresh, some shared, some missing; times mostly ordered, some
    not. Deterministic for a seed."""
    import random
    r = random.Random(seed)
    ev, size, ts, ext, corr, step = [], 0, 1000.0, 1, 1, 0
    header = '"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200"},{"id":1,"name":"NVIDIA H100"}],'
    while size < nbytes:
        k = r.random()
        if k < 0.05:
            step_dur = r.choice((1000.0, 500.0, 2000.0, 0.0, -5.0))
            if r.random() < 0.8:
                e = STEP % (step, "%.3f" % ts, "%.3f" % step_dur)
            else:
                e = ('{"ph":"%s","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,"ts":%.3f}'
                     % (r.choice("BBE"), step, ts))
            step += 1
        elif k < 0.35:
            e = OP % ("%.3f" % ts, "%.3f" % r.uniform(1, 50), ext, r.choice(DIMS), r.choice(TYPES))
            ext += r.random() < 0.95
        elif k < 0.6:
            name = "cudaGraphLaunch" if r.random() < 0.05 else "cudaLaunchKernel"
            e = ('{"ph":"X","cat":"cuda_runtime","name":"%s","pid":1,"tid":1,"ts":%.3f,"dur":%.3f,'
                 '"args":{"correlation":%d,"External id":%d}}' % (name, ts, r.uniform(1, 8), corr, ext - 1))
        elif k < 0.9:
            dev = 0 if r.random() < 0.9 else r.choice((1, 2, 63))
            e = ('{"ph":"X","cat":"kernel","name":"%s","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f,'
                 '"args":{"External id":%d,"correlation":%d,"device":%d,"stream":%d,'
                 '"grid":[%d,1,1],"block":[%d,1,1]}}'
                 % (r.choice(KERNELS), dev, r.choice((7, 13)), ts + r.uniform(0, 30), r.uniform(0.5, 300),
                    ext - 1, corr, dev, r.choice((7, 13)), r.choice((1, 132, 1024, 65536)),
                    r.choice((32, 128, 256, 1024))))
            corr += r.random() < 0.97
        elif k < 0.96:
            kind = r.choice(("gpu_memcpy", "gpu_memset"))
            e = ('{"ph":"X","cat":"%s","name":"%s","pid":0,"tid":7,"ts":%.3f,"dur":%.3f,'
                 '"args":{"bytes":%d,"device":0,"stream":7,"correlation":%d}}'
                 % (kind, "Memcpy DtoD (Device -> Device)" if kind == "gpu_memcpy" else "Memset (Device)",
                    ts, r.uniform(1, 20), r.choice((0, 1152, 1 << 20, 1 << 34)), corr))
            corr += 1
        else:
            e = ('{"ph":"f","id":%d,"pid":0,"tid":7,"ts":%.3f,"cat":"ac2g","name":"ac2g","bp":"e"}'
                 % (corr, ts))
        ev.append(e)
        size += len(e) + 2
        ts += r.uniform(-2, 20) if r.random() < 0.98 else r.uniform(-5000, 5000)
    return trace_of(*ev, header=header)


def generated_many(outdir):
    """Large many-event traces for trace (up to 960 KB), smaller ones for scan
    and gz (gzip'ed, whole and cut) and for cli (as the file f.json behind a report or compare command line)."""
    n = 0
    for seed, nbytes in enumerate((16 << 10, 64 << 10, 256 << 10, 960 << 10, 960 << 10, 512 << 10)):
        data = many_events(seed, nbytes).encode()
        write(outdir, "trace", "many-%d.json" % seed, data)
        if nbytes <= 64 << 10:  # scan, gz and cli take 8 KiB / 4 KiB inputs: the small ones only
            write(outdir, "scan", "many-%d.json" % seed, data)
            gz = gzip.compress(data, mtime=0)
            write(outdir, "gz", "many-%d.bin" % seed, b"\x00" + gz)
            write(outdir, "gz", "manycut-%d.bin" % seed, b"\x02" + gz[:len(gz) * 3 // 4])
            write(outdir, "cli", "many-%d.txt" % seed,
                  b"\x00f.json\n--format\njson\n-o\nr.json\n\n" + data)
            write(outdir, "cli", "many-cmp-%d.txt" % seed,
                  b"\x01t.json\nf.json\n--output=c.html\n\n" + data)
        n += 1
    return n


def generated(outdir, shared):
    small = small_trace().encode()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "fixtures", "array_be.json"), "rb") as f:
        be = f.read()
    # every cut of two small traces
    for tag, doc in (("small", small), ("array_be", be)):
        for i in range(len(doc)):
            write(outdir, "trace", "cut-%s-%05d.json" % (tag, i), doc[:i])
        for i in range(0, len(doc), 3):
            write(outdir, "scan", "cut-%s-%05d.json" % (tag, i), doc[:i])
    whole = gzip.compress(small, mtime=0)
    for i in range(0, len(whole), 2):
        write(outdir, "gz", "cut-small-%05d.bin" % i, b"\x00" + whole[:i])
    generated_many(outdir)
    # slices of the shared traces
    root = os.path.join(shared, "traces")
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                   if f.endswith(".json") or f.endswith(".json.gz"))
    nslices = 0
    for path in paths:
        base = os.path.basename(path).replace(".json.gz", "").replace(".json", "")
        for k, s in enumerate(slices_of(read_prefix(path))):
            data = s.encode("utf-8", "replace")
            write(outdir, "trace", "slice-%s-%d.json" % (base, k), data)
            write(outdir, "scan", "slice-%s-%d.json" % (base, k), data)
            gz = gzip.compress(data, mtime=0)
            write(outdir, "gz", "slice-%s-%d.bin" % (base, k), b"\x00" + gz)
            write(outdir, "gz", "slicecut-%s-%d.bin" % (base, k), b"\x02" + gz[:len(gz) * 2 // 3])
            write(outdir, "gz", "slicejson-%s-%d.bin" % (base, k), bytes([1 + 2 * (k % 3)]) + data)
            nslices += 1
    return len(paths), nslices


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--handmade", metavar="DIR")
    ap.add_argument("--generated", metavar="DIR")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "..", "..", "shared"))
    a = ap.parse_args()
    if not a.handmade and not a.generated:
        ap.error("give --handmade DIR or --generated DIR")
    if a.handmade:
        handmade(a.handmade)
    if a.generated:
        ntraces, nslices = generated(a.generated, a.shared)
        print("seeds: %d slices of %d shared traces, cuts of two small traces -> %s"
              % (nslices, ntraces, a.generated))


if __name__ == "__main__":
    sys.exit(main())
