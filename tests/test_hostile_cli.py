#!/usr/bin/env python3
"""tests/test_hostile_cli.py KVSCOPE — the CLI on hostile inputs, generated
here, one section per class of docs/reliability.md ("Hostile input"):

1. data loss through -o: an output that is an input (stdin, /dev/stdin,
   /proc/self/fd/0, a hard link, the --model file, stdout appended to the
   trace) is refused and the input is left byte for byte; a write that fails
   (a file-size limit, /dev/full) leaves the old report and names the file;
   a missing output folder is refused before any trace is read.

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


class Run:
    def __init__(self, rc, out, err, rss_mb, secs):
        self.rc, self.out, self.err, self.rss_mb, self.secs = rc, out, err, rss_mb, secs


def run(args, stdin=None, stdout_path=None, preexec=None, cwd=None):
    """Run kvscope ARGS; stdin a path or None; the child's own peak RSS."""
    with tempfile.TemporaryFile() as eo, tempfile.TemporaryFile() as oo:
        fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
        fout = open(stdout_path, "ab") if stdout_path else oo
        t0 = time.monotonic()
        p = subprocess.Popen([KVSCOPE] + args, stdin=fin, stdout=fout, stderr=eo,
                             preexec_fn=preexec, cwd=cwd)
        _, status, ru = os.wait4(p.pid, 0)
        secs = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if stdin:
            fin.close()
        if stdout_path:
            fout.close()
        oo.seek(0)
        eo.seek(0)
        return Run(p.returncode, oo.read().decode("utf-8", "replace"),
                   eo.read().decode("utf-8", "replace"), ru.ru_maxrss / 1024.0, secs)


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


def fsize_limit(nbytes):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return pre


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
    r = run(["report", t, "-o", rep, "--quiet"], preexec=fsize_limit(512))
    with open(rep) as f:
        kept = f.read()
    check(r.rc == 1 and kept == "old report\n" and rep in r.err,
          "a write cut at 512 bytes (RLIMIT_FSIZE): exit %d, the old report kept, the file named"
          % r.rc)
    check(no_temp_left(d), "no temporary file left beside it: %s" % sorted(os.listdir(d)))
    r = run(["compare", t, t, "-o", rep, "--quiet"], preexec=fsize_limit(64))
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


def main():
    with tempfile.TemporaryDirectory() as d:
        for test in (test_output_is_input, test_failed_write_keeps_old, test_output_folder_first):
            sub = os.path.join(d, test.__name__)
            os.mkdir(sub)
            test(sub)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
