#!/usr/bin/env bash
# bench/reader.sh — how fast and how lean kvscope reads a trace, beside a
# baseline program timed in the same run; and the CI gate built on it.
#
#   bench/reader.sh [BUILD_DIR]                    # the full table (~200 MB trace)
#   bench/reader.sh --check ci [BUILD_DIR]         # CI's short form: fails on a regression
#   bench/reader.sh --check full [BUILD_DIR]       # the full form, checked the same way
#
# Each form generates its traces with bench/replicate_trace.py (under TMPDIR, never
# in the repository; reused while the source is unchanged), T.gz by gzip -6:
#   full  T = ../shared/traces/mla61_cap131072_unfixed (a real PyTorch 2.11 trace,
#         106 MB) x 2 copies, ~195 MB (without ../shared: the bundled trace x 26);
#         json.load reads T too
#   ci    T = examples/traces/glm5_full-cast.json.gz (bundled, 7.5 MB unpacked:
#         kvscope's own trace of the GLM-5 engine, which a clean clone has) x 10,
#         ~75 MB; P (json.load's input) is one copy, 7.5 MB, and zcat reads P.gz,
#         so that no run is long and many fit in half a minute
# and times, each pinned to one core (taskset -c CPU):
#   plain  kvscope report T --format json -o /dev/null --quiet
#          beside PY -c 'import json; json.load(open(P))', PY = the system's
#          /usr/bin/python3 (Debian's, which ./run.sh installs), else python3
#          on PATH, or KVS_BENCH_PYTHON: the json module's speed is the
#          interpreter build's (a pyenv 3.11.7 here loads 2.5x slower than
#          Debian's 3.11.2), so the recorded ratios hold for one of them
#   gz     kvscope report T.gz --format json -o /dev/null --quiet
#          beside zcat P.gz >/dev/null (P = T in the full form)
# in rounds that alternate the four (load that comes and goes hits all of them).
# A tool's figure is the least CPU time (user + system of the child, from wait4) of
# its runs: on a shared machine other work only ever adds time, and on the loaded
# 2-core dev box the least moved 2-5% between repeated gates where the median
# moved 20% (docs/log/2026-12-02-reader-speed.md); the median CPU and wall times
# are printed beside it. MB/s = bytes of JSON (uncompressed) / that CPU time.
# ratio = kvscope's MB/s / the baseline's: how many times faster than the
# baseline kvscope reads the same kind of file, in one run, so a slower or busier
# machine moves both. Peak RSS: GNU time's %M where it is installed.
#
# --check FORM compares each ratio with the one recorded for FORM in
# bench/reader_baseline.txt and fails (exit 1) when one falls below 70% of it (a
# reader 1.5x slower gives 67%). The recorded ratios are updated on purpose, in the
# commit whose change earns them. Exit 2: cannot run (no build, no trace, no tool).
#
# Environment: ROUNDS (default ci 20, full 3), CPU (the core, default the last
# one), KVS_SHARED_DIR (default ../shared), TMPDIR, KVS_BENCH_PYTHON (json.load's
# interpreter). --help prints this.
set -euo pipefail
case ${1:-} in
-h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

check=""
if [ "${1:-}" = "--check" ]; then
    check=${2:?--check needs a form: ci or full}
    shift 2
fi
form=${check:-full}
case "$form" in ci|full) ;; *) echo "bench/reader.sh: unknown form '$form' (ci or full)" >&2; exit 2 ;; esac
build=${1:-build}
kvs=$build/cli/kvscope
[ -x "$kvs" ] || { echo "bench/reader.sh: no $kvs (build first: ninja -C $build cli/kvscope)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench/reader.sh: needs python3" >&2; exit 2; }
if [ -n "${KVS_BENCH_PYTHON:-}" ]; then basepy=$KVS_BENCH_PYTHON
elif [ -x /usr/bin/python3 ]; then basepy=/usr/bin/python3
else basepy=$(command -v python3); fi
command -v taskset >/dev/null || { echo "bench/reader.sh: needs taskset (util-linux)" >&2; exit 2; }
command -v zcat >/dev/null || { echo "bench/reader.sh: needs zcat (gzip)" >&2; exit 2; }

shared=${KVS_SHARED_DIR:-$root/../shared}
bundled=$root/examples/traces/glm5_full-cast.json.gz
if [ "$form" = full ] && [ -f "$shared/traces/mla61_cap131072_unfixed.pt.trace.json.gz" ]; then
    src=$shared/traces/mla61_cap131072_unfixed.pt.trace.json.gz name=mla61_unfixed copies=2 pcopies=2
elif [ "$form" = full ]; then
    src=$bundled name=glm5_full-cast copies=26 pcopies=26
else
    src=$bundled name=glm5_full-cast copies=10 pcopies=1
fi
[ -f "$src" ] || { echo "bench/reader.sh: no trace $src" >&2; exit 2; }

tmp=${TMPDIR:-/tmp}/kvscope-bench
mkdir -p "$tmp"
replica() { # replica COPIES -> the path of the generated trace
    local f=$tmp/reader_${name}_x$1.json
    if [ ! -s "$f" ] || [ "$src" -nt "$f" ] || [ "$here/replicate_trace.py" -nt "$f" ]; then
        echo "bench/reader.sh: generating $f ($1 copies of $(basename "$src"))" >&2
        python3 "$here/replicate_trace.py" "$src" "$f.part" "$1" >&2
        mv "$f.part" "$f"
        rm -f "$f.gz"
    fi
    echo "$f"
}
trace=$(replica "$copies")
ptrace=$(replica "$pcopies")
for f in "$trace" "$ptrace"; do
    if [ ! -s "$f.gz" ]; then
        gzip -6 -c "$f" >"$f.gz.part"
        mv "$f.gz.part" "$f.gz"
    fi
done

# the build's gzip decoder: its .gz ratio is held to the line recorded for it
# (ISA-L: "gz"; zlib, where libisal-dev was not found: "gz-zlib")
decoder=isal
grep -q '"name": "libisal"' "$build/meson-info/intro-dependencies.json" 2>/dev/null || decoder=zlib
cpu=${CPU:-$(( $(nproc) - 1 ))}
if [ "$form" = ci ]; then rounds=${ROUNDS:-20}; else rounds=${ROUNDS:-3}; fi
KVS_GZ_DECODER=$decoder KVS_BENCH_BASEPY=$basepy exec python3 - "$form" "$check" "$kvs" "$trace" "$ptrace" "$cpu" "$rounds" \
    "$here/reader_baseline.txt" "$src" "$copies" "$pcopies" <<'PY'
import os, statistics, subprocess, sys, time

(form, check, kvs, trace, ptrace, cpu, rounds, baseline_file, src, copies,
 pcopies) = sys.argv[1:]
rounds = int(rounds)
gz = trace + ".gz"
mb = {trace: os.path.getsize(trace) / 1e6, ptrace: os.path.getsize(ptrace) / 1e6}
pin = ["taskset", "-c", cpu]

# Peak RSS: a child forked from this Python starts with its pages counted (~14 MB),
# so where GNU time is installed it starts the tool (from its own ~2 MB) and says
# the tool's peak; CPU and wall time come from wait4 either way (GNU time's own
# share is a fraction of a millisecond).
gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
rss_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), "kvscope-bench", "rss.%d" % os.getpid())

def run(cmd):
    full = pin + cmd
    if gnu_time:
        full = [gnu_time, "-f", "%M", "-o", rss_file] + full
    t0 = time.perf_counter()
    p = subprocess.Popen(full, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        print("bench/reader.sh: run failed (exit %d): %s" % (rc, " ".join(cmd)), file=sys.stderr)
        sys.exit(2)
    rss = ru.ru_maxrss
    if gnu_time:
        with open(rss_file) as f:
            rss = int(f.read().split()[-1])
    return ru.ru_utime + ru.ru_stime, wall, rss

report = lambda f: [kvs, "report", f, "--format", "json", "-o", "/dev/null", "--quiet"]
tools = [  # key, label, command, the JSON it reads
    ("kvs_plain", "kvscope report T", report(trace), trace),
    ("json_load", "python3 json.load P", [os.environ["KVS_BENCH_BASEPY"], "-c",
                                          "import json,sys; json.load(open(sys.argv[1]))", ptrace], ptrace),
    ("kvs_gz", "kvscope report T.gz", report(gz), trace),
    ("zcat", "zcat %s.gz >/dev/null" % ("T" if ptrace == trace else "P"), ["zcat", ptrace + ".gz"], ptrace),
]
base_of = {"kvs_plain": "json_load", "kvs_gz": "zcat"}
# one untimed run each: the files in the page cache, the programs' pages too
for _, _, cmd, _ in tools:
    run(cmd)
res = {k: ([], [], 0) for k, *_ in tools}
for _ in range(rounds):
    for key, _, cmd, _ in tools:
        c, w, r = run(cmd)
        cpus, walls, rss = res[key]
        cpus.append(c)
        walls.append(w)
        res[key] = (cpus, walls, max(rss, r))
try:
    os.unlink(rss_file)
except OSError:
    pass

rate = {key: mb[f] / min(res[key][0]) for key, _, _, f in tools}  # MB/s from the least CPU time
ratios = {"plain": rate["kvs_plain"] / rate["json_load"], "gz": rate["kvs_gz"] / rate["zcat"]}

model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print("kvscope reader benchmark (%s form) — %s, %d CPUs (%s), %s" % (
    form, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count(), model, os.uname().release))
print("T = %s: %s x %s, %.1f MB JSON; T.gz %.1f MB (gzip -6)" % (
    trace, os.path.basename(src), copies, mb[trace], os.path.getsize(gz) / 1e6))
print("P = %s (%.1f MB)" % ("T" if ptrace == trace else "%s: x %s" % (ptrace, pcopies), mb[ptrace]))
print("json.load by %s (%s)" % (os.environ["KVS_BENCH_BASEPY"], sys.version.split()[0] if
      os.path.realpath(os.environ["KVS_BENCH_BASEPY"]) == os.path.realpath(sys.executable) else
      subprocess.run([os.environ["KVS_BENCH_BASEPY"], "-c", "import sys; print(sys.version.split()[0])"],
                     stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()))
print("each run pinned to core %s (taskset); %d rounds of one run of each tool" % (cpu, rounds))
print()
print("%-22s %5s %9s %8s %8s %8s %11s %8s" % ("tool", "runs", "min CPU s", "CPU s", "wall s", "MB/s", "peak RSS MB", "ratio"))
for key, label, _, f in tools:
    cpus, walls, rss = res[key]
    print("%-22s %5d %9.4f %8.4f %8.4f %8.0f %11.1f %8s" % (
        label, len(cpus), min(cpus), statistics.median(cpus), statistics.median(walls), rate[key], rss / 1024,
        "%.2fx" % (rate[key] / rate[base_of[key]]) if key in base_of else "1"))
print()
print("min CPU s: the least of the runs (the figure); CPU s, wall s: medians. MB/s = JSON MB / min CPU s.")
print("ratio = kvscope's MB/s / its baseline's (plain: json.load, .gz: zcat)")
if not gnu_time:
    print("peak RSS from wait4 includes ~14 MB of this Python's pages (install GNU time for the tools' own)")
print("plain ratio %.2f, gz ratio %.2f; kvscope .gz / plain: %.2fx the CPU time" % (
    ratios["plain"], ratios["gz"], min(res["kvs_gz"][0]) / min(res["kvs_plain"][0])))

if not check:
    sys.exit(0)
recorded = {}
for line in open(baseline_file):
    f = line.split("#", 1)[0].split()
    if len(f) == 3:
        recorded[(f[0], f[1])] = float(f[2])
fail = False
print()
zlib = os.environ.get("KVS_GZ_DECODER") == "zlib"
for kind in ("plain", "gz"):
    key = "gz-zlib" if kind == "gz" and zlib else kind  # a zlib build's own .gz line
    r = recorded.get((form, key))
    if r is None:
        print("gate %s %s: no ratio recorded for it in bench/reader_baseline.txt: FAIL" % (form, key))
        fail = True
        continue
    ok = ratios[kind] >= 0.7 * r
    fail |= not ok
    note = ""
    if ratios[kind] > 1.3 * r:
        note = "; %.0f%% above the recorded ratio: record the new one on purpose" % (100 * (ratios[kind] / r - 1))
    print("gate %s %s: ratio %.2f = %.0f%% of the recorded %.2f (floor 70%%: %.2f): %s%s" % (
        form, key, ratios[kind], 100 * ratios[kind] / r, r, 0.7 * r,
        "ok" if ok else "FAIL (kvscope reads slower than recorded)", note))
sys.exit(1 if fail else 0)
PY
