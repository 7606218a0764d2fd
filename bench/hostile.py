#!/usr/bin/env python3
"""bench/hostile.py KVSCOPE [BASE_KVSCOPE] — time and peak memory of
`kvscope report` on the hostile inputs of tests/test_hostile_cli.py (the same
generators), at the test's sizes and larger, beside a normal input of the same
size; with BASE_KVSCOPE (an older build) the same runs of it in the next
columns.

    bench/hostile.py build/cli/kvscope
    bench/hostile.py build/cli/kvscope /tmp/old/kvscope

Each cell: CPU seconds (user + system of the child, from wait4: steadier than
wall time on a shared machine; median of RUNS runs, default 3) and peak RSS
(GNU time's %M where /usr/bin/time exists, else wait4's).
A run past TIMEOUT seconds (default 60) is killed and shown as ">TIMEOUT".
Inputs are written under TMPDIR, never into the repository. This is a
benchmark, not a test: the bounds are asserted by tests/test_hostile_cli.py.
"""
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(here), "tests"))
import test_hostile_cli as H  # noqa: E402  (the generators)

RUNS = int(os.environ.get("RUNS", "3"))
TIMEOUT = float(os.environ.get("TIMEOUT", "60"))


def generate(path, fn):
    """Write one input in a child, so this process stays small: Linux carries a
    parent's peak RSS into its children's ru_maxrss."""
    pid = os.fork()
    if pid == 0:
        try:
            fn(path)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    return path


GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def measure(exe, args):
    """median CPU seconds and peak RSS of RUNS runs. The RSS is GNU time's
    report where it is installed: Linux carries a parent's peak RSS over
    fork and exec into its child's, so wait4 from this (~20 MB) process
    would floor every figure at its own size."""
    cpus, rss = [], 0
    for _ in range(RUNS):
        cmd = [exe] + args
        if GNU_TIME:
            cmd = [GNU_TIME, "-f", "kvs-peak-rss-kb %M"] + cmd
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)  # its own group: killed as one
        t0 = time.monotonic()
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > TIMEOUT:
                os.killpg(p.pid, signal.SIGKILL)  # time and the kvscope it runs
            time.sleep(0.005)
        err = p.stderr.read().decode("utf-8", "replace")
        p.stderr.close()
        if time.monotonic() - t0 > TIMEOUT:
            return ">%.0f s" % TIMEOUT, "-"
        cpus.append(ru.ru_utime + ru.ru_stime)
        kb = [int(w.split()[1]) for w in err.splitlines() if w.startswith("kvs-peak-rss-kb ")]
        rss = max(rss, kb[-1] if kb else ru.ru_maxrss)
    return "%.2f s" % statistics.median(cpus), "%.1f MB" % (rss / 1024.0)


def main():
    exes = [os.path.abspath(a) for a in sys.argv[1:3] if a]
    exes = list(dict.fromkeys(exes))
    d = tempfile.mkdtemp(prefix="kvscope-hostile-", dir=os.environ.get("TMPDIR"))
    rng = random.Random(21)
    rows = []

    def ids(n, crafted):
        return H.crafted_ids(n, rng) if crafted else rng.sample(range(1, 1 << 63), n)

    for n in (30000, 100000):
        for crafted in (False, True):
            name = "%d ops+calls+kernels, %s ids" % (n, "crafted" if crafted else "random")
            rows.append((name, generate(os.path.join(d, "ids_%d_%d.json" % (n, crafted)),
                                        lambda p, n=n, c=crafted: H.write_json(
                                            p, H.id_flood(ids(n, c)))), []))
    for crafted in (False, True):
        name = "20000 long kernel names, %s" % ("equal on the old sample" if crafted else "distinct")
        rows.append((name, generate(os.path.join(d, "names_%d.json" % crafted),
                                    lambda p, c=crafted: H.write_json(p, H.name_flood(20000, c))),
                     []))

    def long_name(p):
        ev = H.step_events(2)
        ev.append({"ph": "X", "cat": "user_annotation", "name": "a" * ((1 << 20) - 16),
                   "pid": 1, "tid": 1, "ts": 999_000.0, "dur": 10})
        H.write_json(p, H.kineto(ev))
    rows.append(("--step-regex '(a|aa)*b', a 1 MiB name",
                 generate(os.path.join(d, "long_name.json"), long_name),
                 ["--step-regex", "(a|aa)*b"]))
    rows.append(("deviceProperties of 60 MB (58 KB .gz)",
                 generate(os.path.join(d, "header.json.gz"),
                          lambda p: H.header_bomb(p, 30_000_000, True)), []))

    def dims(p):
        import gzip
        with gzip.open(p, "wt") as f:
            f.write('{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],'
                    '"traceEvents":[')
            for i in range(2000):
                dd = "[" + ",".join(["[1]"] * 50000) + ",[%d]]" % i
                f.write('%s{"ph":"X","cat":"cpu_op","name":"aten::cat","pid":1,"tid":1,'
                        '"ts":%d,"dur":1,"args":{"External id":%d,"Input Dims":[%s],'
                        '"Input type":["float"]}}' % ("," if i else "", 1000 + i * 2, i + 1, dd))
            f.write(']}')
    rows.append(("2000 ops, distinct 200 KB Input Dims (0.6 MB .gz)",
                 generate(os.path.join(d, "dims.json.gz"), dims), []))

    head = ["input", "size"]
    for i, _ in enumerate(exes):
        tag = "" if i == 0 else " (base)"
        head += ["CPU" + tag, "peak RSS" + tag]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, path, extra in rows:
        cells = [name, "%.1f MB" % (os.path.getsize(path) / 1e6)]
        for exe in exes:
            cells += list(measure(exe, ["report", path, "--quiet", "--format", "json"] + extra))
        print("| " + " | ".join(cells) + " |", flush=True)
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)


if __name__ == "__main__":
    main()
