#!/usr/bin/env python3
"""bench/tree_measure.py CMD... — run CMD once and print "wall_s cpu_s
peak_rss_kb peak_tree_rss_kb": wall clock; CPU = user + system time of CMD
and every descendant it waited for (wait4's rusage); peak RSS = the largest
single process among them (rusage's maxrss); peak tree RSS = the largest sum
of VmRSS over CMD and all its descendants at once, sampled from /proc every
100 ms (so a Dask driver with its worker processes counts whole; a process
living under 100 ms may be missed; sampling costs a few % of a core). stdout of CMD goes to /dev/null, stderr
is kept; a failing CMD stops with its exit code. For bench/fleet.sh.
"""
import os
import subprocess
import sys
import threading
import time

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)


def tree_rss_kb(root):
    parent, rss = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            with open("/proc/%s/status" % d) as f:
                kb = next((int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:")), 0)
        except (OSError, ValueError, StopIteration):
            continue
        parent[int(d)], rss[int(d)] = ppid, kb
    total = 0
    for pid in rss:
        p, seen = pid, 0
        while p and p != root and seen < 64:
            p, seen = parent.get(p, 0), seen + 1
        if p == root:
            total += rss[pid]
    return total


cmd = sys.argv[1:]
t0 = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
peak = [0]
stop = threading.Event()


def sample():
    while not stop.is_set():
        peak[0] = max(peak[0], tree_rss_kb(p.pid))
        stop.wait(0.1)


th = threading.Thread(target=sample, daemon=True)
th.start()
_, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t0
stop.set()
th.join()
rc = os.waitstatus_to_exitcode(status)
if rc != 0:
    print("run failed: %s (exit %d)" % (" ".join(cmd), rc), file=sys.stderr)
    sys.exit(rc or 1)
print("%.3f %.3f %d %d" % (wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, max(peak[0], ru.ru_maxrss)))
