#!/usr/bin/env bash
# bench/fleet.sh [BUILD_DIR] — many ranks of one run: `kvscope report`
# of 256 rank traces in one process with --jobs 1, with --jobs N, and through the
# Dask driver (examples/fleet/kvscope_fleet.py) with N workers on this machine:
# wall time, CPU time, peak RSS (the largest process, and all of a run's
# processes at once), and whether each gives the same view across ranks as
# --jobs 1 (the kvscope.multirank/1 "ranks" object, per_rank[].report aside) and
# names the slowed rank the straggler. Then 64 of the ranks with --jobs 1, 2, 4, 8.
#
#   bench/fleet.sh build                       # 256 ranks; N = the CPUs (and 2x them)
#   RANKS=64 JOBS="2 8" bench/fleet.sh build
#
# The ranks: bench/replicate_trace.py --ranks from a real rank trace (default
# ../shared/traces/hta/negative_queue_length_values_check__rank0: PyTorch,
# 25.8 MB, 5 steps, 80 NCCL SendRecv kernels), each rank's clock shifted by
# SKEW_US x (r % 7) us, rank LATE_RANK arriving LATE_US late at every NCCL
# kernel (the others wait for it). Written under TMPDIR (6 GB for 256 ranks),
# reused between runs. Needs python3-distributed for the Dask rows (skipped,
# saying so, without). A benchmark that prints tables, not a test. CPU only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-build}
kvs=$(cd "$build" && pwd)/cli/kvscope
shared=${KVS_SHARED_DIR:-$root/../shared}
src=${TRACE:-$shared/traces/hta/negative_queue_length_values_check__rank0.json.gz}
ranks=${RANKS:-256}
late=${LATE_RANK:-200}
[ "$late" -lt "$ranks" ] || late=$((ranks - 1))
late_us=${LATE_US:-15000}
skew=${SKEW_US:-0.5}
ncpu=$(nproc)
jobs_list=${JOBS:-"$ncpu $((2 * ncpu))"}
scale=${SCALE_RANKS:-64}
[ "$scale" -le "$ranks" ] || scale=$ranks
tmp=${TMPDIR:-/tmp}/kvscope-fleet
measure="python3 $here/tree_measure.py"
[ -x "$kvs" ] || { echo "bench/fleet.sh: no $kvs (build first)" >&2; exit 2; }
[ -f "$src" ] || { echo "bench/fleet.sh: no trace $src" >&2; exit 2; }
mkdir -p "$tmp"

# the ranks, made once for these parameters
stamp="$src $ranks $late $late_us $skew $(md5sum < "$here/replicate_trace.py" | cut -c1-12)"
if [ "$(cat "$tmp/stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "bench/fleet.sh: writing $ranks rank traces to $tmp ..." >&2
    rm -f "$tmp"/run.rank*.json "$tmp/stamp"
    python3 "$here/replicate_trace.py" "$src" "$tmp/run" 1 --ranks "$ranks" --late-rank "$late" \
        --late-us "$late_us" --clock-skew-us "$skew"
    echo "$stamp" > "$tmp/stamp"
fi
all=()
for ((r = 0; r < ranks; r++)); do all+=("$tmp/run.rank$r.json"); done
gb=$(du -cb "${all[@]}" | tail -1 | awk '{printf "%.2f", $1 / 1e9}')

dask_py=""
for py in python3 /usr/bin/python3; do
    if "$py" -c "import distributed" 2>/dev/null; then dask_py=$py; break; fi
done

same() { # same OUT.json SET: its view equals --jobs 1's, and names the late rank the
    # straggler (standing out) when SET holds it, none when it does not
    local want=$late
    [ "$2" = sub ] && [ "$late" -ge "$scale" ] && want=-1
    python3 - "$1" "$tmp/out.jobs1.$2.json" "$want" <<'EOF'
import json, sys
def ranks(p):
    r = json.load(open(p))["ranks"]
    for x in r["per_rank"]:
        x.pop("report", None)
    return r
a, b = ranks(sys.argv[1]), ranks(sys.argv[2])
s = a["straggler"]
st = s["rank"] if s and s.get("stands_out") else None  # the latest rank that holds the others up
want = int(sys.argv[3]) if int(sys.argv[3]) >= 0 else None  # -1: the slowed rank is not in the set
same = "reference" if sys.argv[1] == sys.argv[2] else "same" if a == b else "DIFFERENT"
said = "straggler rank %d" % st if st is not None else "no straggler stands out"
print("%s, %s%s" % (same, said, "" if st == want else
                    " (WRONG: the slowed rank is %s)" % (want if want is not None else "not in the set")))
EOF
}

row() { # row LABEL SET OUT CMD... : one measured run
    local label=$1 set=$2 out=$3
    shift 3
    read -r wall cpu rss trss < <($measure "$@" 2>/dev/null)
    local sp=""
    [ -n "${base_wall:-}" ] && sp=$(python3 -c "print('%.2fx' % ($base_wall / $wall))")
    [ -z "${base_wall:-}" ] && sp="1.00x"
    printf '%-28s %8s %8s %8s %10.1f %12.1f  %s\n' "$label" "$wall" "$cpu" "$sp" \
        "$(python3 -c "print($rss / 1024)")" "$(python3 -c "print($trss / 1024)")" "$(same "$out" "$set")"
    last_wall=$wall
}

echo "kvscope fleet benchmark — $(date -u '+%Y-%m-%d %H:%M UTC'), $ncpu CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ranks: $ranks x $(basename "$src") ($gb GB of JSON in all), rank $late $((late_us / 1000)) ms late at every NCCL kernel, clocks ${skew} us x (r % 7) apart"
echo "kvscope: $kvs"
header() { printf '\n%-28s %8s %8s %8s %10s %12s  %s\n' "$1" "wall s" "CPU s" speed-up "RSS MB" "all procs MB" "view vs --jobs 1"; }

header "$ranks ranks"
base_wall=""
row "report --jobs 1" all "$tmp/out.jobs1.all.json" "$kvs" report "${all[@]}" --format json --jobs 1 --quiet -o "$tmp/out.jobs1.all.json"
base_wall=$last_wall
for n in $jobs_list; do
    row "report --jobs $n" all "$tmp/out.j$n.all.json" "$kvs" report "${all[@]}" --format json --jobs "$n" --quiet -o "$tmp/out.j$n.all.json"
done
if [ -n "$dask_py" ]; then
    for n in $ncpu; do
        row "Dask driver, $n workers" all "$tmp/out.dask$n.all.json" env KVSCOPE="$kvs" "$dask_py" "$root/examples/fleet/kvscope_fleet.py" \
            --local "$n" --keep "$tmp/dask-reports" --format json -o "$tmp/out.dask$n.all.json" "${all[@]}"
        row "Dask, $n workers, summaries" all "$tmp/out.dasks$n.all.json" env KVSCOPE="$kvs" "$dask_py" "$root/examples/fleet/kvscope_fleet.py" \
            --local "$n" --summaries-only --keep "$tmp/dask-sums" --format json -o "$tmp/out.dasks$n.all.json" "${all[@]}"
    done
else
    echo "(Dask rows skipped: dask.distributed is not installed; Debian: apt-get install python3-distributed)"
fi

header "$scale ranks"
sub=("${all[@]:0:$scale}")
base_wall=""
row "report --jobs 1" sub "$tmp/out.jobs1.sub.json" "$kvs" report "${sub[@]}" --format json --jobs 1 --quiet -o "$tmp/out.jobs1.sub.json"
base_wall=$last_wall
for n in 2 4 8; do
    row "report --jobs $n" sub "$tmp/out.j$n.sub.json" "$kvs" report "${sub[@]}" --format json --jobs "$n" --quiet -o "$tmp/out.j$n.sub.json"
done
echo
echo "speed-up: --jobs 1's wall time over the row's; RSS: the largest process (wait4); all procs: the sum over a run's processes at once (sampled every 100 ms)."
