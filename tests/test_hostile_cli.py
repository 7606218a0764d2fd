#!/usr/bin/env python3
"""tests/test_hostile_cli.py KVSCOPE — the CLI on hostile inputs, generated
here, one section per class of docs/reliability.md ("Hostile input"):

1. data loss through -o: an output that is an input (stdin, /dev/stdin,
   /proc/self/fd/0, a hard link, the --model file, stdout appended to the
   trace) is refused and the input is left byte for byte; a write that fails
   (a file-size limit, /dev/full) leaves the old report and names the file;
   a missing output folder is refused before any trace is read.
2. algorithmic blow-up: N ops, runtime calls and kernels whose External ids
   and correlation ids were crafted to fall in one slot of the old id hash
   take within a small factor of N random ids; so do N distinct long kernel
   names that agree on every byte the old string hash sampled; --step-regex
   over a 1 MiB name with a pattern that is quadratic in it returns at once,
   and a back-reference (exponential) is refused.
3. memory bombs: a deviceProperties of 60 MB of numbers in a 58 KB .gz, and
   2,000 ops each with a distinct 200 KB Input Dims in a 0.6 MB .gz, read in
   a few MB (peak RSS under a fixed cap), each said in a warning; a header
   cJSON cannot parse for want of memory (an address-space limit) is
   NO_MEMORY (exit 1), not a silently unknown device; a header with a bad
   \\u escape is a warning.
4. silent wrong numbers: a second traceEvents array is skipped, not summed,
   and said; step ranges without a positive dur are not 0 ms steps; a 'B'
   that never closes and an 'E' without a 'B' are said; two ops sharing an
   External id are said; a device id holding under 1% of the busiest
   device's GPU time is not one of the step's GPUs (idle never exceeds the
   step) and is said.
5. output that is not what it says: md and html cut names at a character
   and replace invalid UTF-8 (as text and json do); a control character in
   a device name never reaches the terminal; a gzip member followed by zero
   padding reads (gzip -t accepts it); a UTF-8 byte-order mark reads and
   UTF-16 is named; compare --peak-gbps refuses what report refuses.

Each run's peak RSS comes from wait4() on the child and its wall time from
the clock; bounds are asserted here, scaled when the binary is built with
AddressSanitizer (its shadow memory and quarantine).

    meson test -C build test_hostile_cli
"""
import gzip
import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

from kvs_test import check, finish

KVSCOPE = os.path.abspath(sys.argv[1])


def asan_build():
    with open(KVSCOPE, "rb") as f:
        return b"__asan_init" in f.read()


ASAN = asan_build()
SLOW = 4.0 if ASAN else 1.0  # time and memory bounds scale under ASan
TIMEOUT = 30 * SLOW  # seconds: a run past it is killed (and fails its check)


class Run:
    def __init__(self, rc, out, err, rss_mb, secs):
        self.rc, self.out, self.err, self.rss_mb, self.secs = rc, out, err, rss_mb, secs


def _spawn(req):
    """Run one request in the runner: the child's rc, output, peak RSS, time."""
    args, stdin, stdout_path, fsize, as_bytes = req
    def limit():
        if fsize:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if as_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
    with tempfile.TemporaryFile() as eo, tempfile.TemporaryFile() as oo:
        fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
        fout = open(stdout_path, "ab") if stdout_path else oo
        t0 = time.monotonic()
        p = subprocess.Popen([KVSCOPE] + args, stdin=fin, stdout=fout, stderr=eo,
                             preexec_fn=limit if fsize or as_bytes else None)
        while True:  # wait4 for the child's own rusage; killed past TIMEOUT
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > TIMEOUT:
                p.kill()
            time.sleep(0.005)
        secs = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        for f in (fin, fout):
            if f not in (oo, subprocess.DEVNULL):
                f.close()
        oo.seek(0)
        eo.seek(0)
        return (p.returncode, oo.read().decode("utf-8", "replace"),
                eo.read().decode("utf-8", "replace"), ru.ru_maxrss / 1024.0, secs)


class Runner:
    """A process forked while this script is still small, which runs the
    children: Linux carries a parent's peak RSS over fork and exec into the
    child's ru_maxrss, so children forked after the traces are generated
    here would report this script's memory, not their own."""

    def __init__(self):
        import pickle
        self.pickle = pickle
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(w1)
            os.close(r2)
            inp, out = os.fdopen(r1, "rb"), os.fdopen(w2, "wb")
            while True:
                try:
                    req = pickle.load(inp)
                except EOFError:
                    os._exit(0)
                pickle.dump(_spawn(req), out)
                out.flush()
        os.close(r1)
        os.close(w2)
        self.inp, self.out = os.fdopen(r2, "rb"), os.fdopen(w1, "wb")

    def run(self, req):
        self.pickle.dump(req, self.out)
        self.out.flush()
        return self.pickle.load(self.inp)


RUNNER = None


def run(args, stdin=None, stdout_path=None, fsize=0, as_bytes=0):
    """Run kvscope ARGS (stdin a path or None; fsize a file-size limit,
    as_bytes an address-space limit)."""
    return Run(*RUNNER.run((args, stdin, stdout_path, fsize, as_bytes)))


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ---------------------------------------------------------------------------
# trace generator: a Kineto-shaped trace, steps of one copy op and its kernel

def kineto(events, header=None):
    d = {"schemaVersion": 1,
         "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320}]}
    d.update(header or {})
    d["traceEvents"] = events
    return d


def step_events(nsteps=3, step_us=1000.0, ext0=1, corr0=1000, t0=1_000_000.0):
    ev = []
    for s in range(nsteps):
        ts = t0 + s * step_us * 1.5
        ext, corr = ext0 + s, corr0 + s
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s,
                   "pid": 1, "tid": 1, "ts": ts, "dur": step_us})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1, "tid": 1,
                   "ts": ts + 10, "dur": 50, "args": {
                       "External id": ext, "Input Dims": [[4096, 1, 576], [4096, 1, 576], []],
                       "Input type": ["c10::BFloat16", "c10::Float8_e4m3fn", "Scalar"]}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": ts + 20, "dur": 5, "args": {"correlation": corr,
                                                               "External id": ext}})
        ev.append({"ph": "X", "cat": "kernel", "name": "copy_kernel", "pid": 0, "tid": 7,
                   "ts": ts + 30, "dur": step_us * 0.8, "args": {
                       "External id": ext, "correlation": corr, "device": 0, "stream": 7,
                       "grid": [1024, 1, 1], "block": [128, 1, 1]}})
    return ev


def write_json(path, obj, gz=False):
    data = json.dumps(obj).encode()
    with (gzip.open(path, "wb") if gz else open(path, "wb")) as f:
        f.write(data)


# ---------------------------------------------------------------------------
# 1. data loss through -o

def no_temp_left(folder):
    return not [n for n in os.listdir(folder) if n.startswith(".")]


def test_output_is_input(d):
    t = os.path.join(d, "t.json")
    write_json(t, kineto(step_events()))
    before = digest(t)
    for out in [t, "/dev/stdin", "/proc/self/fd/0"]:
        r = run(["report", "-", "-o", out, "--quiet"], stdin=t)
        check(r.rc == 2 and digest(t) == before and "would overwrite" in r.err,
              "report - -o %s < t.json: refused (exit %d), the trace unchanged" % (out, r.rc))
    r = run(["compare", t, "-", "-o", t, "--quiet"], stdin=t)
    check(r.rc == 2 and digest(t) == before, "compare t.json - -o t.json < t.json: refused")
    link = os.path.join(d, "hardlink.json")
    os.link(t, link)
    r = run(["report", t, "-o", link, "--quiet"])
    check(r.rc == 2 and digest(t) == before, "-o a hard link of the trace: refused")
    cfg = os.path.join(d, "config.json")
    with open(cfg, "w") as f:
        json.dump({"num_hidden_layers": 2, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                   "num_attention_heads": 8, "hidden_size": 1024}, f)
    cfg_before = digest(cfg)
    for cmd in (["report", t], ["compare", t, t]):
        r = run(cmd + ["--model", cfg, "-o", cfg, "--quiet"])
        check(r.rc == 2 and digest(cfg) == cfg_before and "--model" in r.err,
              "%s --model config.json -o config.json: refused, the config unchanged" % cmd[0])
    r = run(["report", t, "--quiet"], stdout_path=t)
    check(r.rc == 2 and digest(t) == before and "stdout" in r.err,
          "report t.json >> t.json: refused, the trace unchanged")


def test_failed_write_keeps_old(d):
    t = os.path.join(d, "t.json")
    write_json(t, kineto(step_events()))
    rep = os.path.join(d, "report.md")
    with open(rep, "w") as f:
        f.write("old report\n")
    r = run(["report", t, "-o", rep, "--quiet"], fsize=512)
    with open(rep) as f:
        kept = f.read()
    check(r.rc == 1 and kept == "old report\n" and rep in r.err,
          "a write cut at 512 bytes (RLIMIT_FSIZE): exit %d, the old report kept, the file named"
          % r.rc)
    check(no_temp_left(d), "no temporary file left beside it: %s" % sorted(os.listdir(d)))
    r = run(["compare", t, t, "-o", rep, "--quiet"], fsize=64)
    with open(rep) as f:
        kept = f.read()
    check(r.rc == 1 and kept == "old report\n", "compare, the same: old file kept")
    r = run(["report", t, "-o", rep, "--quiet"])
    with open(rep) as f:
        check(r.rc == 0 and f.read().startswith("# kvscope report"),
              "without the limit the report replaces it (exit %d)" % r.rc)
    r = run(["report", t, "-o", "/dev/full", "--quiet"])
    check(r.rc == 1 and "/dev/full" in r.err, "-o /dev/full: exit 1 naming /dev/full")


def test_output_folder_first(d):
    for cmd in (["report", os.path.join(d, "absent.json")],
                ["compare", os.path.join(d, "absent.json"), os.path.join(d, "absent.json")]):
        r = run(cmd + ["-o", os.path.join(d, "no", "such", "r.txt")])
        check(r.rc == 2 and "cannot write into" in r.err and "absent.json" not in r.err,
              "%s -o into a missing folder: refused before the trace is read" % cmd[0])


# ---------------------------------------------------------------------------
# 2. algorithmic blow-up

GOLDEN = 0x9E3779B97F4A7C15  # the multiplier of the old fixed id hash


def crafted_ids(n, rng):
    """n distinct ids k with bits 32..52 of k * GOLDEN zero: one slot of every
    table (up to 2^21 slots) of the old hash (k * GOLDEN) >> 32 & mask."""
    inv = pow(GOLDEN, -1, 1 << 64)
    out, seen = [], set()
    while len(out) < n:
        k = (((rng.getrandbits(11) << 53) | rng.getrandbits(32)) * inv) % (1 << 64)
        if 0 < k < (1 << 63) and k not in seen:  # a positive int64
            seen.add(k)
            out.append(k)
    return out


def id_flood(ids):
    ev = []
    for i, k in enumerate(sorted(ids, reverse=True)):  # not rising: no binary search
        ts = 1000.0 + i * 2.0
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1, "tid": 1,
                   "ts": ts, "dur": 1.5, "args": {
                       "External id": k, "Input Dims": [[64, 576], [64, 576]],
                       "Input type": ["c10::BFloat16", "c10::Float8_e4m3fn"]}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": ts + 0.2, "dur": 1, "args": {"correlation": k, "External id": k}})
        ev.append({"ph": "X", "cat": "kernel", "name": "copy_kernel", "pid": 0, "tid": 7,
                   "ts": ts + 0.5,
                   "dur": 1, "args": {"External id": k, "correlation": k, "device": 0,
                                      "stream": 7}})
    return kineto(ev)


def name_flood(n, crafted):
    ev = []
    for i in range(n):
        tag = "%08x" % i
        # the old hash of a long string read the words at 0, 32, 64, ... and
        # the last 8 bytes: the crafted names differ in bytes 8..15 only
        name = "k_aaaaaa" + (tag + "b" * 300 if crafted else "b" * 300 + tag)
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                   "ts": 1000.0 + i * 2, "dur": 1, "args": {"device": 0, "stream": 7}})
    return kineto(ev)


def best_time(args, tries=2):
    runs = [run(args) for _ in range(tries)]
    return min(r.secs for r in runs), runs[0]


def test_colliding_ids(d):
    import random
    rng = random.Random(21)
    n = 30000
    crafted, rand = os.path.join(d, "crafted.json"), os.path.join(d, "random.json")
    write_json(crafted, id_flood(crafted_ids(n, rng)))
    write_json(rand, id_flood(rng.sample(range(1, 1 << 63), n)))
    tc, rc_ = best_time(["report", crafted, "--quiet", "--format", "json"])
    tr, rr = best_time(["report", rand, "--quiet", "--format", "json"])
    g = json.loads(rc_.out)["groups"] if rc_.rc == 0 else []
    linked = len(g) == 1 and g[0]["op"] == "aten::copy_" and g[0]["calls"] == n
    check(linked and rr.rc == 0, "%d ops/calls/kernels with crafted ids: read and all linked" % n)
    check(tc <= 3 * tr + 0.3 * SLOW,
          "crafted ids %.2f s against random ids %.2f s (bound 3x + %.1f s)" % (tc, tr, 0.3 * SLOW))


def test_colliding_names(d):
    n = 20000
    crafted, rand = os.path.join(d, "crafted.json"), os.path.join(d, "random.json")
    write_json(crafted, name_flood(n, True))
    write_json(rand, name_flood(n, False))
    tc, rc_ = best_time(["report", crafted, "--quiet"])
    tr, rr = best_time(["report", rand, "--quiet"])
    check(rc_.rc == 0 and rr.rc == 0, "%d distinct long kernel names: read" % n)
    check(tc <= 2 * tr + 0.3 * SLOW,
          "names equal on the old hash's sample %.2f s against names that are not %.2f s "
          "(bound 2x + %.1f s)" % (tc, tr, 0.3 * SLOW))


def test_step_regex_bounded(d):
    ev = step_events(2)
    ev.append({"ph": "X", "cat": "user_annotation", "name": "a" * ((1 << 20) - 16), "pid": 1,
               "tid": 1, "ts": 999_000.0, "dur": 10})
    t = os.path.join(d, "long_name.json")
    write_json(t, kineto(ev))
    r = run(["report", t, "--quiet", "--step-regex", "(a|aa)*b"])
    check(r.rc == 0 and r.secs < 5 * SLOW,
          "--step-regex '(a|aa)*b' over a 1 MiB name: %.2f s, exit %d (bound %.0f s)"
          % (r.secs, r.rc, 5 * SLOW))
    r = run(["report", t, "--quiet", "--step-regex", "^(a*)\\1b"])
    check(r.rc == 2 and "back-reference" in r.err and r.rss_mb < 200 * SLOW,
          "--step-regex with a back-reference: refused (exit %d, %.0f MB)" % (r.rc, r.rss_mb))
    r = run(["report", t, "--quiet", "--format", "json", "--step-regex", "^ProfilerStep#[0-9]+$"])
    check(r.rc == 0 and json.loads(r.out)["steps"]["count"] == 2,
          "a bounded --step-regex still finds the steps")


# ---------------------------------------------------------------------------
# 3. memory bombs

KERNEL = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1000, "dur": 10,
          "args": {"device": 0, "stream": 7}}


def header_bomb(path, zeros, gz):
    with (gzip.open(path, "wt") if gz else open(path, "w")) as f:
        f.write('{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200","junk":[')
        f.write(",".join(["0"] * zeros))
        f.write(']}],"traceEvents":[%s]}' % json.dumps(KERNEL))


def test_header_bomb(d):
    t = os.path.join(d, "header_bomb.json.gz")
    header_bomb(t, 30_000_000, True)
    r = run(["report", t, "--quiet"])
    cap = 64 * SLOW
    check(r.rc == 0 and "deviceProperties" in r.err and "skipped" in r.err and r.rss_mb < cap,
          "deviceProperties of 60 MB (a %d KB .gz): skipped with a warning, exit %d, peak RSS "
          "%.0f MB (cap %.0f MB; it took 2.4 GB)" % (os.path.getsize(t) >> 10, r.rc, r.rss_mb, cap))
    t = os.path.join(d, "header_1mb.json")
    header_bomb(t, 500_000, False)  # just under the bound: parsed with cJSON
    r = run(["report", t, "--quiet", "--format", "json"])
    check(r.rc == 0 and json.loads(r.out)["trace"]["device"] == "NVIDIA H200",
          "a 1.0 MB deviceProperties (under the bound) is read: the device is named")
    if ASAN:
        print("skip the address-space limit under ASan (its shadow needs terabytes)")
    else:
        r = run(["report", t, "--quiet"], as_bytes=32 << 20)
        check(r.rc == 1 and "out of memory" in r.err and "deviceProperties" in r.err,
              "cJSON out of memory on that header (RLIMIT_AS 32 MB): exit %d, said, not an "
              "unknown device" % r.rc)
    t = os.path.join(d, "bad_escape.json")
    write_json(t, {"deviceProperties": [{"id": 0, "name": "H200"}], "traceEvents": [KERNEL]})
    with open(t) as f:
        text = f.read().replace('"H200"', '"H200 \\udc00"')
    with open(t, "w") as f:
        f.write(text)
    r = run(["report", t, "--quiet"])
    check(r.rc == 0 and "escape" in r.err, "a header with a lone \\udc00: a warning, exit %d" % r.rc)


def test_header_over_bound_numbers(d):
    # a header field over its 1 MiB bound is skipped after its mark
    # is dropped at a refill; a number (or literal) crossing that refill was
    # read through the dropped mark: SIGSEGV for 1.1 M zeros, plain, stdin and
    # .gz alike (which inputs crashed depended on where the refill fell, so
    # two alignments of two kinds of number)
    for value, count, pad in (("0", 1_100_000, 1), ("0", 1_100_000, 3), ("-1.5e3", 300_000, 0)):
        t = os.path.join(d, "header_%s_%d.json" % (value, pad))
        with open(t, "w") as f:
            f.write('{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200",'
                    '"junk":[' + " " * pad + ",".join([value] * count) + ']}],'
                    '"traceEvents":[%s]}' % json.dumps(KERNEL))
        with open(t, "rb") as f, gzip.open(t + ".gz", "wb") as g:
            g.write(f.read())
        for args, stdin, how in ((["report", t], None, "a file"), (["report", "-"], t, "stdin"),
                                 (["report", t + ".gz"], None, ".gz")):
            r = run(args + ["--quiet"], stdin=stdin)
            check(r.rc == 0 and "deviceProperties" in r.err and "skipped" in r.err,
                  "deviceProperties holding %d x %s (%d KB, over the 1 MiB bound), %s: skipped "
                  "with a warning, exit %d" % (count, value, os.path.getsize(t) >> 10, how, r.rc))


def test_dims_bomb(d):
    t = os.path.join(d, "dims_bomb.json.gz")
    with gzip.open(t, "wt") as f:
        f.write('{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],'
                '"traceEvents":[')
        for i in range(2000):
            dims = "[" + ",".join(["[1]"] * 50000) + ",[%d]]" % i  # a list of rank-1 tensors
            f.write('%s{"ph":"X","cat":"cpu_op","name":"aten::cat","pid":1,"tid":1,"ts":%d,'
                    '"dur":1,"args":{"External id":%d,"Input Dims":[%s],"Input type":["float"]}}'
                    % ("," if i else "", 1000 + i * 2, i + 1, dims))
        f.write(']}')
    r = run(["report", t, "--quiet"])
    cap = 64 * SLOW
    check(r.rc == 0 and "2000 ops" in r.err and r.rss_mb < cap,
          "2000 ops with distinct 200 KB Input Dims (a %d KB .gz): exit %d, said, peak RSS "
          "%.0f MB (cap %.0f MB; it took 396 MB)" % (os.path.getsize(t) >> 10, r.rc, r.rss_mb,
                                                      cap))


def test_huge_event_values(d):
    # one event was held whole while it was read, so a single huge
    # value cost its size: three aten::copy_ ops with 600 MB Input Dims each
    # (a 1.8 MB .gz) took 1.05 GB. Now what is not kept streams, whatever its
    # place: Input Dims over 64 KiB (skipped, the shape said cut), an unknown
    # arg, a grid list, a skipped top-level key
    t = os.path.join(d, "huge_values.json.gz")
    mb = 40
    chunk = "[1]," * (1 << 18)  # 1 MiB
    with gzip.open(t, "wt", compresslevel=1) as f:
        f.write('{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],"traceEvents":[')
        f.write('{"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":1,"tid":1,"ts":1000,"dur":5,'
                '"args":{"External id":1,"Input Dims":[' + chunk * mb + '[1]],"Input type":["float"]}},')
        f.write('{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1001,"dur":3,"args":{'
                '"Concrete Inputs":[' + chunk * mb + '[1]],"grid":[' + chunk * mb + '1],'
                '"device":0,"stream":7,"External id":1}},')
        f.write('{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1010,"dur":3,'
                '"stack":"' + "x" * (mb << 20) + '","args":{"device":0,"stream":7}}]}')
    r = run(["report", t, "--quiet", "--format", "json"])
    cap = 64 * SLOW
    doc = json.loads(r.out) if r.rc == 0 else {}
    events = doc.get("trace", {}).get("events")
    check(r.rc == 0 and events == 3 and "1 ops carry Input Dims" in r.err and r.rss_mb < cap,
          "Input Dims, an unknown arg, a grid list and a stack string of %d MB each in three "
          "events (a %d KB .gz): exit %d, %s events read, the shape said cut, peak RSS %.0f MB "
          "(cap %.0f MB; the event was held whole)"
          % (mb, os.path.getsize(t) >> 10, r.rc, events, r.rss_mb, cap))


# ---------------------------------------------------------------------------
# 4. silent wrong numbers

def report_json(path, *extra):
    r = run(["report", path, "--format", "json"] + list(extra))
    return r, (json.loads(r.out) if r.rc == 0 else None)


def test_duplicate_trace_events(d):
    ev = step_events(3)
    body = json.dumps(ev)
    t = os.path.join(d, "twice.json")
    with open(t, "w") as f:
        f.write('{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],'
                '"traceEvents":%s,"traceEvents":%s}' % (body, body))
    r, j = report_json(t)
    calls = j and sum(k["calls"] for k in j["kernels"])
    check(j and calls == 3 and "second" in r.err and "traceEvents" in r.err,
          "a duplicated traceEvents key: read once (%s kernel calls, not 6) and said" % calls)


def test_step_without_duration(d):
    ev = step_events(3, step_us=1000.0)
    for dur in (None, -500.0, 0.0):
        e = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#9", "pid": 1, "tid": 1,
             "ts": 900_000.0}
        if dur is not None:
            e["dur"] = dur
        t = os.path.join(d, "nodur.json")
        write_json(t, kineto(ev + [e]))
        r, j = report_json(t)
        steps = j and j["steps"]
        check(steps and steps["count"] == 3 and abs(steps["mean_ms"] - 1.0) < 1e-9 and
              "positive duration" in r.err,
              "a step range with dur %s: not a step (%s steps, mean %s ms), said"
              % (dur, steps and steps["count"], steps and steps["mean_ms"]))


def test_begin_end_unpaired(d):
    ev = step_events(2)
    ev.append({"ph": "B", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1,
               "ts": 990_000.0})
    t = os.path.join(d, "open_b.json")
    write_json(t, kineto(ev))
    r = run(["report", t])
    check(r.rc == 0 and "'B'" in r.err and "no matching 'E'" in r.err,
          "a 'B' that never closes: said (exit %d)" % r.rc)
    ev = step_events(2) + [{"ph": "E", "pid": 1, "tid": 1, "ts": 990_000.0 + i} for i in range(3)]
    write_json(t, kineto(ev))
    r = run(["report", t])
    check(r.rc == 0 and "3 'E' events" in r.err, "3 'E' without a 'B': said (exit %d)" % r.rc)


def test_shared_external_id(d):
    ev = step_events(1)
    ts = ev[0]["ts"]
    ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts + 100,
               "dur": 50, "args": {"External id": 1}})  # the copy op's id
    ev.append({"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7,
               "ts": ts + 120, "dur": 10, "args": {"External id": 1, "device": 0, "stream": 7}})
    t = os.path.join(d, "shared_ext.json")
    write_json(t, kineto(ev))
    r = run(["report", t])
    check(r.rc == 0 and "share" in r.err and "External id" in r.err,
          "two ops sharing an External id: said (exit %d)" % r.rc)


def test_stray_device(d):
    """A 1 us kernel on another device id (or on 62 of them) in a 1.0 ms step
    whose one GPU is busy 0.4 ms: the step still has one GPU, idle 0.6 ms,
    and the stray devices are said."""
    for nstray in (1, 62):
        ev = step_events(3, step_us=1000.0)
        for e in ev:
            if e["cat"] == "kernel":
                e["dur"] = 400.0
        steps = [e for e in ev if e["cat"] == "user_annotation"]
        for s, st in enumerate(steps):
            for k in range(nstray):
                corr = 50_000 + s * 100 + k
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 1, "tid": 1, "ts": st["ts"] + 500 + k, "dur": 1,
                           "args": {"correlation": corr}})
                ev.append({"ph": "X", "cat": "kernel", "name": "stray_kernel", "pid": 1 + k,
                           "tid": 7, "ts": st["ts"] + 600 + k, "dur": 1.0,
                           "args": {"correlation": corr, "device": 1 + k, "stream": 7}})
        t = os.path.join(d, "stray%d.json" % nstray)
        write_json(t, kineto(ev))
        r, j = report_json(t)
        idle = j and [f["gpu_ms_per_step"] for f in j["findings"] if f["id"] == "gpu_idle"]
        frac = j and j["steps"]["gpu_busy_fraction"]
        step_ms = j and j["steps"]["mean_ms"]
        # the stray work stays in the busy time: 0.4 ms + 1 us per stray device
        busy = 0.4 + nstray * 0.001
        check(j and idle and step_ms and idle[0] <= step_ms and abs(idle[0] - (1 - busy)) < 0.002
              and abs(frac - busy) < 0.002 and "stray device" in r.err,
              "%d stray device id(s) with a 1 us kernel: idle %s ms of a %s ms step (want %.3f), "
              "busy %s, said" % (nstray, idle and idle[0], step_ms, 1 - busy, frac))
        r = run(["report", t])
        check(r.rc == 0 and "over 2 GPUs" not in r.out and "GPUs are" not in r.out,
              "%d stray device id(s): the text report does not say several GPUs" % nstray)


# ---------------------------------------------------------------------------
# 5. output that is not what it says

def utf8_trace(prefix):
    ev = []
    for k in range(2):
        ts = 1000.0 + k * 200
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % k, "pid": 1,
                   "tid": 1, "ts": ts, "dur": 100})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::copy_" + prefix + "\u00e9" * 40,
                   "pid": 1, "tid": 1, "ts": ts + 5, "dur": 50, "args": {
                       "External id": k + 1, "Input Dims": [[4096, 576], [4096, 576]],
                       "Input type": ["c10::BFloat16", "c10::Float8_e4m3fn"]}})
        ev.append({"ph": "X", "cat": "kernel", "name": "copy_" + prefix + "\u00e9" * 200,
                   "pid": 0, "tid": 7, "ts": ts + 10, "dur": 60,
                   "args": {"External id": k + 1, "device": 0, "stream": 7}})
    return kineto(ev)


def valid_utf8(text_bytes):
    try:
        text_bytes.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def run_bytes(args):
    """stdout as bytes: run() decodes with replacement"""
    with tempfile.NamedTemporaryFile(delete=False) as f:
        out = f.name
    try:
        r = run(args + ["-o", out])
        with open(out, "rb") as f:
            return r, f.read()
    finally:
        os.unlink(out)


def test_md_html_utf8(d):
    for prefix in ("", "x"):  # both parities of the cut
        t = os.path.join(d, "cut%d.json" % len(prefix))
        with open(t, "wb") as f:
            f.write(json.dumps(utf8_trace(prefix), ensure_ascii=False).encode())
        for fm in ("md", "html"):
            r, out = run_bytes(["report", t, "--quiet", "--format", fm])
            check(r.rc == 0 and valid_utf8(out),
                  "%s of names of 2-byte characters cut to width (offset %d): valid UTF-8"
                  % (fm, len(prefix)))
    t = os.path.join(d, "invalid.json")
    raw = json.dumps(utf8_trace(""), ensure_ascii=False).encode()
    with open(t, "wb") as f:
        f.write(raw.replace("\u00e9".encode() * 40, b"\xff\xfe" + "\u00e9".encode() * 39, 1))
    for fm in ("md", "html"):
        r, out = run_bytes(["report", t, "--quiet", "--format", fm])
        check(r.rc == 0 and valid_utf8(out) and "\ufffd".encode() in out,
              "%s of a name with invalid bytes: U+FFFD in their place" % fm)


def test_terminal_escape(d):
    t = os.path.join(d, "esc.json")
    write_json(t, kineto(step_events(2), {"deviceProperties": [{"id": 0, "name": "Foo\u001b[2J"}]}))
    r = run(["report", t])
    check(r.rc == 0 and "Foo" in r.err and "\x1b" not in r.err,
          "a device name with an escape sequence: warned without the escape byte")
    r = run(["report", t, "--device", "Bar\x1b[2J"])
    check("Bar" in r.err and "\x1b" not in r.err, "--device with an escape sequence: the same")


def test_gzip_padding_bom_utf16(d):
    body = json.dumps(kineto(step_events(2))).encode()
    t = os.path.join(d, "padded.json.gz")
    with open(t, "wb") as f:
        f.write(gzip.compress(body) + b"\0" * 4096)
    gz_ok = subprocess.run(["gzip", "-t", t], capture_output=True).returncode == 0
    r = run(["report", t, "--quiet"])
    check(r.rc == 0, "a gzip member and 4 KiB of zero padding: read (exit %d; gzip -t %s)"
          % (r.rc, "accepts it" if gz_ok else "refuses it"))
    t = os.path.join(d, "bom.json")
    with open(t, "wb") as f:
        f.write(b"\xef\xbb\xbf" + body)
    r = run(["report", t, "--quiet"])
    check(r.rc == 0, "a UTF-8 byte-order mark: read (exit %d)" % r.rc)
    for enc in ("utf-16", "utf-16-le", "utf-16-be"):
        t = os.path.join(d, "u16.json")
        with open(t, "wb") as f:
            f.write(body.decode().encode(enc))
        r = run(["report", t, "--quiet"])
        check(r.rc == 2 and "UTF-16" in r.err, "%s: exit %d, named as UTF-16" % (enc, r.rc))


def test_peak_gbps_one_rule(d):
    t = os.path.join(d, "t.json")
    write_json(t, kineto(step_events(2)))
    for v in ("0.0001", "1e7", "nan", "-1"):
        a = run(["report", t, "--quiet", "--peak-gbps", v])
        b = run(["compare", t, t, "--quiet", "--peak-gbps", v])
        check(a.rc == 2 and b.rc == 2, "--peak-gbps %s: report exit %d, compare exit %d"
              % (v, a.rc, b.rc))
    b = run(["compare", t, t, "--quiet", "--peak-gbps", "0.001"])
    check(b.rc == 0, "--peak-gbps 0.001 (report's lower bound): compare accepts it")


def main():
    global RUNNER
    RUNNER = Runner()
    with tempfile.TemporaryDirectory() as d:
        only = sys.argv[2:]
        for test in (test_output_is_input, test_failed_write_keeps_old, test_output_folder_first,
                     test_colliding_ids, test_colliding_names, test_step_regex_bounded,
                     test_header_bomb, test_header_over_bound_numbers, test_dims_bomb,
                     test_huge_event_values, test_duplicate_trace_events,
                     test_step_without_duration, test_begin_end_unpaired,
                     test_shared_external_id, test_stray_device, test_md_html_utf8, test_terminal_escape,
                     test_gzip_padding_bom_utf16, test_peak_gbps_one_rule):
            if only and test.__name__ not in only:  # test_hostile_cli.py KVSCOPE [TEST...]
                continue
            sub = os.path.join(d, test.__name__)
            os.mkdir(sub)
            test(sub)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
