#!/usr/bin/env python3
"""bench/measure.py N CMD... — run CMD N times; print "median_wall_s min_wall_s
median_cpu_s max_peak_rss_kb" (wall clock per run; CPU = user + system time
and peak RSS from wait4's rusage of that child alone; on a shared machine the
CPU time is the steadier figure). stdout of CMD goes to /dev/null; a failing
run stops with its exit code."""
import os
import statistics
import subprocess
import sys
import time

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)

n, cmd = int(sys.argv[1]), sys.argv[2:]
walls, cpus, rss = [], [], 0
for _ in range(n):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    walls.append(time.perf_counter() - t0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        print("run failed: %s (exit %d)" % (" ".join(cmd), p.returncode), file=sys.stderr)
        sys.exit(p.returncode or 1)
    cpus.append(ru.ru_utime + ru.ru_stime)
    rss = max(rss, ru.ru_maxrss)
print("%.4f %.4f %.4f %d" % (statistics.median(walls), min(walls), statistics.median(cpus), rss))
