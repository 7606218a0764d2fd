#!/usr/bin/env bash
# bench/capture_idle.sh BUILD OUT [BASE_BUILD] — what being captured costs a
# launch while nothing is recorded: processes that are attached
# to CUPTI, or run under `kvscope capture --window cudaProfilerStart` with
# the window closed, against bare processes of the same run. Such a state
# lasts the process's life, so each process is in one state and the
# processes take turns, a bare one before every three others, for
# KVS_IDLE_CYCLES cycles (default 5; the order turning each cycle).
#
#   bench/capture_idle.sh build out/idle               # this tree
#   bench/capture_idle.sh build out/idle build-main    # and main's kvscope beside it
#
# Processes (kinds; the PyTorch ones for KVS_IDLE_PY_CYCLES cycles, default 3,
# a bare one before every two others):
#   c:STATE        build/libtrace/cupti_idle --state STATE, no kvscope: the
#                  CUPTI states of bench/cupti_idle.cu (KVS_IDLE_STATES, a
#                  space-separated list; default all but bare, which is the
#                  reference and runs between them)
#   c:kvs-closed   cupti_idle --state bare under this tree's `kvscope capture
#                  --window cudaProfilerStart`: never opened
#   c:kvs-between  the same after one window opened and closed (--window-once)
#                  with KVS_CAPTURE_DETACH=1: kvscope detaches CUPTI between windows
#   c:kvs-between-attached  the same with KVS_CAPTURE_DETACH=0: CUPTI stays
#                  attached between windows (kvscope's default for now)
#   c:base-closed, c:base-between   the same under BASE_BUILD's kvscope
#   py:bare        python3 bench/capture_torch.py --workloads launch --modes plain
#   py:kvs-closed  the same under this tree's kvscope, window never opened
#   py:kvs-between --modes plain,kvs: its plain rounds come between windows
#                  (each measurement after a 100 ms sleep, every py: process
#                  alike: kvscope has detached CUPTI by then)
#                  (KVS_CAPTURE_DETACH=1)
#   py:kvs-between-attached  the same with KVS_CAPTURE_DETACH=0
#   py:base-closed, py:base-between  under BASE_BUILD's kvscope
# (the py: kinds when python3 has torch and KVS_IDLE_TORCH is not 0).
# Each process runs KVS_IDLE_ROUNDS rounds (default 10) after a warm-up
# round, every process pinned as bench/bench_cpus.sh says. OUT keeps raw.txt
# (the processes' RESULT/STATE/CHECK/RECORDS lines, each with its cycle and
# process number) and
# table.md (bench/capture_table.py --idle: per kind the median over its
# processes of each process's median, against the bare processes', with
# the bare processes' spread).
set -u
case ${1:-} in
-h|--help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
out=${2:-out/capture_idle}
base=${3:-}
cycles=${KVS_IDLE_CYCLES:-5}
rounds=${KVS_IDLE_ROUNDS:-10}
idle=$build/libtrace/cupti_idle
mkdir -p "$out"
raw=$out/raw.txt
err=$out/stderr.txt
: >"$raw"
: >"$err"
for f in "$idle" "$build/cli/kvscope" ${base:+"$base/cli/kvscope"}; do
    [ -x "$f" ] || { echo "no $f: build with CUDA first" >&2; exit 1; }
done
tmp=$(mktemp -d /tmp/kvs_idle.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
. bench/bench_cpus.sh
command -v nvidia-smi >/dev/null &&
    echo "DEVICE $(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)" >>"$raw"
echo "cpus: ${cpus:-all} (${pin[*]:-not pinned}); cycles $cycles; rounds $rounds" | tee -a "$raw"

states=${KVS_IDLE_STATES:-sub sub+act drvstart rtstart rec-rt rec-drv closed-old closed-new after-K after-def detached re-attached reattach-own reattach-own-busy reattach-cs}
kinds=()
for s in $states; do kinds+=("c:$s"); done
kinds+=(c:kvs-closed c:kvs-between c:kvs-between-attached)
[ -n "$base" ] && kinds+=(c:base-closed c:base-between)
have_torch=0
if [ "${KVS_IDLE_TORCH:-1}" != 0 ] &&
    python3 -c 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("torch") else 1)' 2>/dev/null; then
    have_torch=1
    kinds+=(py:kvs-closed py:kvs-between py:kvs-between-attached)
    [ -n "$base" ] && kinds+=(py:base-closed py:base-between)
fi

# run KIND CYCLE: one process; its lines, tagged with the cycle and the
# process's number in the run (seq), into raw
seq=0
run() {
    local kind=$1 cycle=$2 tree=$build lines rc cmd=() t0
    case $kind in *:base-*) tree=$base ;; esac
    local kvs=("$tree/cli/kvscope" capture --window cudaProfilerStart -o "$tmp/t.json" --)
    case $kind in
    c:kvs-*|c:base-*) cmd=("${kvs[@]}" "$idle" --state bare) ;;
    c:*) cmd=("$idle" --state "${kind#c:}") ;;
    py:bare) cmd=(python3 bench/capture_torch.py --modes plain) ;;
    py:*-closed) cmd=("${kvs[@]}" python3 bench/capture_torch.py --modes plain) ;;
    py:*-between|py:*-between-attached) cmd=("${kvs[@]}" python3 bench/capture_torch.py --modes plain,kvs) ;;
    esac
    case $kind in
    c:*-between|c:*-between-attached) cmd+=(--window-once) ;;
    esac
    case $kind in
    *-attached) cmd=(env KVS_CAPTURE_DETACH=0 "${cmd[@]}") ;;
    *:kvs-between) cmd=(env KVS_CAPTURE_DETACH=1 "${cmd[@]}") ;;
    esac
    case $kind in
    c:*) cmd+=(--label "$kind" --rounds "$rounds") ;;
    py:*) cmd+=(--label "$kind" --rounds "$rounds" --workloads launch --settle-ms 100) ;;
    esac
    t0=$(date +%s%N)
    lines=$("${pin[@]}" "${cmd[@]}" 2>>"$err")
    rc=$?
    seq=$((seq + 1))
    echo "$lines" | grep '^\(RESULT\|STATE\|CHECK\|RECORDS\|CORR\|DETACH\)' | sed "s/^\([A-Z]*\) /\1 cycle=$cycle seq=$seq /" >>"$raw"
    printf 'TIME proc=%s cycle=%d seconds=%d\n' "$kind" "$cycle" $(( ($(date +%s%N) - t0) / 1000000000 )) >>"$raw"
    if [ $rc -ne 0 ]; then
        echo "FAIL proc=$kind cycle=$cycle exit=$rc (see $err)" | tee -a "$raw" >&2
    fi
    rm -f "$tmp/t.json"
}

# schedule LANG CYCLES KIND...: the kinds in turn, a LANG:bare process before
# every three (C) or two (PyTorch: a process costs seconds) others
schedule() {
    local lang=$1 ncyc=$2 every=3 c i; shift 2
    local ks=("$@") n=$#
    [ "$lang" = py ] && every=2
    for ((c = 0; c < ncyc; c++)); do
        for ((i = 0; i < n; i++)); do
            [ $((i % every)) = 0 ] && run "$lang:bare" "$c"
            run "${ks[$(( (i + c) % n ))]}" "$c"
        done
    done
    run "$lang:bare" "$ncyc"
}
start=$(date +%s)
c_kinds=() py_kinds=()
for k in "${kinds[@]}"; do
    case $k in c:*) c_kinds+=("$k") ;; *) py_kinds+=("$k") ;; esac
done
schedule c "$cycles" "${c_kinds[@]}"
[ $have_torch = 1 ] && schedule py "${KVS_IDLE_PY_CYCLES:-3}" "${py_kinds[@]}"
echo "TOTAL seconds=$(( $(date +%s) - start ))" | tee -a "$raw" >&2
python3 bench/capture_table.py --idle "$raw" | tee "$out/table.md"
