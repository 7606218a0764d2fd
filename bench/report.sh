#!/usr/bin/env bash
# bench/report.sh [BUILD_DIR] [TRACE] — how fast and how lean `kvscope report`
# is, against Python's json.load of the same file, in the same run.
#
#   bench/report.sh build
#   KVS_BENCH_BUILDS="build build-cpu" bench/report.sh   # several builds side by side
#
# 1. The real trace (default: ../shared/traces/mla61_cap131072_unfixed, 106 MB
#    unpacked) and a 2-copy replica of it (~195 MB): `kvscope report --format
#    json` (median of RUNS runs) vs `python3 -c 'import json; json.load(...)'`
#    (median of PYRUNS runs); wall time, peak RSS (wait4 rusage), ratios.
# 2. Scaling: replicas of COPIES copies of the trace's steps (default 5 10 22:
#    ~0.5, 1, 2.1 GB; bench/replicate_trace.py, written under TMPDIR, never into
#    the repository, reused between runs); wall time, MB/s and peak RSS vs size.
# Targets: >= 25x faster than json.load and <= 1/10 of its RSS on a
# ~100-200 MB trace; 2 GB in < 256 MB RSS, time linear in size.
# Prints a table; this is a benchmark, not a test. CPU only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
builds=${KVS_BENCH_BUILDS:-${1:-build}}
shared=${KVS_SHARED_DIR:-$root/../shared}
[ -d "$shared" ] || shared=/work/shared
trace=${2:-$shared/traces/mla61_cap131072_unfixed.pt.trace.json.gz}
runs=${RUNS:-5}
pyruns=${PYRUNS:-3}
copies_list=${COPIES:-"5 10 22"}
tmp=${TMPDIR:-/tmp}/kvscope-bench
mkdir -p "$tmp"
measure="python3 $here/measure.py"

for b in $builds; do
    [ -x "$b/cli/kvscope" ] || { echo "bench/report.sh: no $b/cli/kvscope (build first)" >&2; exit 2; }
done
[ -f "$trace" ] || { echo "bench/report.sh: no trace $trace" >&2; exit 2; }

base=$tmp/base.json
if [ ! -s "$base" ] || [ "$trace" -nt "$base" ]; then
    case "$trace" in
        *.gz) gzip -dc "$trace" > "$base" ;;
        *) cp "$trace" "$base" ;;
    esac
fi
rep() { # rep COPIES -> path of the replica
    local f=$tmp/replica_x$1.json
    [ -s "$f" ] || python3 "$here/replicate_trace.py" "$base" "$f" "$1" >&2
    echo "$f"
}
calc() { python3 -c "print($1)"; }
mb() { python3 -c "import os,sys; print('%.1f' % (os.path.getsize(sys.argv[1]) / 1e6))" "$1"; }

echo "kvscope report benchmark — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), $(uname -r)"
echo "trace: $trace"
echo
printf '%-18s %7s %-26s %8s %8s %8s %11s\n' input MB tool "wall s" "min s" "CPU s" "peak RSS MB"
declare -A py_wall py_rss
for f in "$base" "$(rep 2)"; do
    size=$(mb "$f")
    read -r pw pmin pcpu prss < <($measure "$pyruns" python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$f")
    printf '%-18s %7s %-26s %8s %8s %8s %11.1f\n' "$(basename "$f")" "$size" "python3 json.load" "$pw" "$pmin" "$pcpu" "$(calc "$prss / 1024")"
    for b in $builds; do
        read -r kw kmin kcpu krss < <($measure "$runs" "$b/cli/kvscope" report "$f" --format json -o /dev/null --quiet)
        printf '%-18s %7s %-26s %8s %8s %8s %11.1f   %.1fx faster (wall), %.1fx (CPU), %.1f%% of the RSS\n' \
            "$(basename "$f")" "$size" "kvscope ($b)" "$kw" "$kmin" "$kcpu" "$(calc "$krss / 1024")" \
            "$(calc "$pw / $kw")" "$(calc "$pcpu / $kcpu")" "$(calc "100 * $krss / $prss")"
    done
    for b in $builds; do
        read -r vw vmin vcpu vrss < <($measure 3 "$b/cli/kvscope" version)
        printf '%-18s %7s %-26s %8s %8s %8s %11.1f   (start-up alone)\n' "-" "-" "kvscope version ($b)" "$vw" "$vmin" "$vcpu" "$(calc "$vrss / 1024")"
    done
done
echo
echo "scaling (kvscope report --format json, median of $runs runs; MB/s from the fastest run)"
printf '%-18s %7s %-26s %8s %8s %8s %11s %8s\n' input MB tool "wall s" "min s" "CPU s" "peak RSS MB" "MB/s"
for c in 1 $copies_list; do
    if [ "$c" = 1 ]; then f=$base; else f=$(rep "$c"); fi
    size=$(mb "$f")
    for b in $builds; do
        read -r kw kmin kcpu krss < <($measure "$runs" "$b/cli/kvscope" report "$f" --format json -o /dev/null --quiet)
        printf '%-18s %7s %-26s %8s %8s %8s %11.1f %8.0f\n' "$(basename "$f")" "$size" "kvscope ($b)" "$kw" "$kmin" \
            "$kcpu" "$(calc "$krss / 1024")" "$(calc "$size / $kmin")"
    done
done
