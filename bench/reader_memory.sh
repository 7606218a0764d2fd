#!/usr/bin/env bash
# bench/reader_memory.sh [BUILD_DIR] — how much memory `kvscope report` takes
# to read a trace, against the size of the trace, beside python3's json.load
# on the same files in the same run (the target: memory bounded by what is
# kept, not by what is read).
#
#   bench/reader_memory.sh build          # needs ../shared (the real MLA trace)
#
# Traces (generated under TMPDIR/kvscope-bench, never in the repository, and
# reused while their source is unchanged):
#   mla61_unfixed xN  ../shared/traces/mla61_cap131072_unfixed (a real PyTorch
#                     2.11 decode trace, 106 MB) replicated N = 1, 2, 5, 10 times
#                     by bench/replicate_trace.py (events shifted, ids offset)
#   dims600x3.json.gz three aten::copy_ ops whose Input Dims are each a 600 MB
#                     list of rank-1 tensors, and their kernels (a 1.8 MB .gz)
# Each tool runs pinned to one core (taskset -c CPU); peak RSS and CPU time
# from GNU time (%M, %U+%S). json.load runs on the x1 and x2 traces only (it
# holds the whole document: ~5 GB for x5). "per GB" is the slope of kvscope's
# peak RSS between the smallest and the largest replica: what each further GB
# of trace costs, without the fixed part (program, buffers).
#
# Environment: CPU (default the last core), KVS_SHARED_DIR, TMPDIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-build}
kvs=$build/cli/kvscope
[ -x "$kvs" ] || { echo "bench/reader_memory.sh: no $kvs (build first)" >&2; exit 2; }
gnu_time=/usr/bin/time
$gnu_time -f %M true >/dev/null 2>&1 || { echo "bench/reader_memory.sh: needs GNU time (Debian: time)" >&2; exit 2; }
shared=${KVS_SHARED_DIR:-$root/../shared}
src=$shared/traces/mla61_cap131072_unfixed.pt.trace.json.gz
[ -f "$src" ] || { echo "bench/reader_memory.sh: no $src (../shared)" >&2; exit 2; }
cpu=${CPU:-$(($(nproc) - 1))}
tmp=${TMPDIR:-/tmp}/kvscope-bench
mkdir -p "$tmp"

replica() { # replica N -> path
    local f=$tmp/reader_mla61_unfixed_x$1.json
    if [ ! -s "$f" ] || [ "$src" -nt "$f" ] || [ "$here/replicate_trace.py" -nt "$f" ]; then
        echo "generating $f" >&2
        python3 "$here/replicate_trace.py" "$src" "$f.part" "$1" >&2
        mv "$f.part" "$f"
    fi
    echo "$f"
}
dims=$tmp/dims600x3.json.gz
if [ ! -s "$dims" ] || [ "$0" -nt "$dims" ]; then
    echo "generating $dims" >&2
    python3 - "$dims.part" <<'EOF'
import gzip, sys
chunk = b"[1]," * (1 << 18)  # 1 MiB
with gzip.open(sys.argv[1], "wb", compresslevel=9) as f:
    f.write(b'{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],"traceEvents":[')
    for i in range(3):
        f.write(b'%s{"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":1,"tid":1,"ts":%d,"dur":5,'
                b'"args":{"External id":%d,"Input Dims":[' % (b"," if i else b"", 1000 + 10 * i, i + 1))
        for _ in range(600):
            f.write(chunk)
        f.write(b'[1]],"Input type":["c10::BFloat16"]}},{"ph":"X","cat":"kernel","name":"copy_kernel",'
                b'"pid":0,"tid":7,"ts":%d,"dur":3,"args":{"device":0,"stream":7,"External id":%d,'
                b'"correlation":%d}}' % (1001 + 10 * i, i + 1, 100 + i))
    f.write(b"]}")
EOF
    mv "$dims.part" "$dims"
fi

measure() { # measure CMD... -> "peak_rss_kb cpu_s"
    local out
    out=$(mktemp)
    taskset -c "$cpu" "$gnu_time" -f "%M %U %S" -o "$out" "$@" >/dev/null 2>&1 || true
    awk '{printf "%d %.2f\n", $1, $2 + $3}' "$out"
    rm -f "$out"
}
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN {printf "%.0f", b / 1e6}'; }

printf 'bench/reader_memory.sh: %s, %s, core %s, %s\n' "$kvs" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$cpu" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-28s %8s %14s %9s %16s %11s\n' trace "MB" "kvscope RSS MB" "kvscope s" "json.load RSS MB" "json.load s"
first_rss="" first_mb="" last_rss="" last_mb=""
for n in 1 2 5 10; do
    f=$(replica $n)
    read -r rss cpu_s < <(measure "$kvs" report "$f" --format json -o /dev/null --quiet)
    jl="-" jls="-"
    if [ "$n" -le 2 ]; then
        read -r jrss jcpu < <(measure python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$f")
        jl=$(awk -v k="$jrss" 'BEGIN {printf "%.1f", k / 1024}') jls=$jcpu
    fi
    m=$(mb "$f")
    printf '%-28s %8s %14.1f %9s %16s %11s\n' "mla61_unfixed x$n" "$m" "$(awk -v k="$rss" 'BEGIN {print k / 1024}')" "$cpu_s" "$jl" "$jls"
    [ -z "$first_rss" ] && first_rss=$rss first_mb=$m
    last_rss=$rss last_mb=$m
done
read -r rss cpu_s < <(measure "$kvs" report "$dims" --format json -o /dev/null --quiet)
unpacked=$(zcat "$dims" | wc -c)
printf '%-28s %8s %14.1f %9s %16s %11s\n' "dims600x3.json.gz (.gz $(mb "$dims") MB)" \
    "$(awk -v b="$unpacked" 'BEGIN {printf "%.0f", b / 1e6}')" "$(awk -v k="$rss" 'BEGIN {print k / 1024}')" "$cpu_s" "-" "-"
awk -v a="$first_rss" -v b="$last_rss" -v x="$first_mb" -v y="$last_mb" \
    'BEGIN {printf "kvscope peak RSS per further GB of trace (x1 -> x10): %.1f MB/GB\n", (b - a) / 1024 / ((y - x) / 1000)}'
