#!/usr/bin/env bash
# bench/engine_tp.sh BUILD_DIR [OUT_DIR] — kvscope's GLM-5 engine tensor-parallel
# over 1, 2, 4 and 8 GPUs of this machine (as many as it has): step time, the
# all-reduce share of it, the roofline per rank, for the full-cast bug and the
# fp8-direct fix; then one capture per tp with a trace per rank, reported
# together by `kvscope report`.
#
#   bench/engine_tp.sh build "$OUT"      # on a multi-GPU machine, after a CUDA build
#
# First the correctness gates (tests/test_engine_tp on one GPU, and
# tests/test_engine_tp_multi with 2+ GPUs: tp N against the CPU reference and
# one GPU); nothing is timed when they fail. The plain one-GPU engine runs
# beside tp 1 (the NCCL path with a communicator of one) as the baseline.
# Writes under OUT_DIR (default ./out/engine_tp):
#   engine_tp_bench.txt / .md     the table
#   runs/*.log                    every run's full output
#   trace_tp<N>.rank<R>.json.gz   per-rank captures; report_tp<N>.txt their report
# Environment: TPS ("1 2 4 8"), PATHS ("full-cast fp8-direct"), BATCHES ("1 8"),
# CONTEXT (4096), STEPS (8), WARMUP (2), CAPACITY (495552), TRACE_STEPS (3),
# MODES ("eager graph": each tp run eagerly, where the all-reduces are timed
# with events, and as one CUDA graph per rank, where only the step is timed).
# GATE_TIMEOUT (600 s per correctness test). NCCL_NVLS_ENABLE stays 0
# (NVLink multicast off) unless already set.
set -uo pipefail
build=${1:?usage: bench/engine_tp.sh BUILD_DIR [OUT_DIR]}
out=${2:-out/engine_tp}
kvs=$build/cli/kvscope
tps=${TPS:-"1 2 4 8"}
paths=${PATHS:-"full-cast fp8-direct"}
batches=${BATCHES:-"1 8"}
ctx=${CONTEXT:-4096}
steps=${STEPS:-8}
warmup=${WARMUP:-2}
capacity=${CAPACITY:-495552}
trace_steps=${TRACE_STEPS:-3}
modes=${MODES:-"eager graph"}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mkdir -p "$out/runs"

[ -x "$kvs" ] || { echo "bench/engine_tp.sh: no $kvs (a CUDA build is needed)" >&2; exit 2; }
"$kvs" engine --help 2>/dev/null | grep -q -- "--tp" ||
    { echo "bench/engine_tp.sh: this kvscope's engine has no --tp" >&2; exit 2; }
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    gpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
fi
[ "$gpus" -ge 1 ] || { echo "bench/engine_tp.sh: no GPU visible" >&2; exit 2; }
echo "== $gpus GPU(s); NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
    sed 's/^/== GPU /'
nvidia-smi topo -m >"$out/runs/topology.txt" 2>&1 || true

# ---------------------------------------------------------------------------
# correctness first

gate() { # gate TEST: 0 passed, 77 skipped, else stop
    local t=$build/tests/$1
    [ -x "$t" ] || { echo "   $1 not built: not checked"; return 0; }
    # a hang (tp 2 --graph once hung at exit) becomes a failure, not a stuck bench
    timeout "${GATE_TIMEOUT:-600}" "$t" >"$out/runs/check_$1.log" 2>&1
    local rc=$?
    [ $rc -eq 124 ] && echo "   $1: did not finish within ${GATE_TIMEOUT:-600} s" >>"$out/runs/check_$1.log"
    if [ $rc -eq 0 ]; then
        echo "   $1: passed"; grep -E "vs (reference|one GPU|plain)" "$out/runs/check_$1.log" | sed 's/^/      /' | head -12
    elif [ $rc -eq 77 ]; then
        echo "   $1: skipped ($(tail -1 "$out/runs/check_$1.log"))"
    else
        cat "$out/runs/check_$1.log"
        echo "bench/engine_tp.sh: $1 failed; not timing anything" >&2
        exit 1
    fi
}
# the tests check the traces they write with tests/check_trace.py, found here
export KVS_SOURCE_ROOT=${KVS_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
echo "== checking tensor parallel against the plain engine and the CPU reference"
gate test_engine_tp
[ "$gpus" -ge 2 ] && gate test_engine_tp_multi

copy=$("$kvs" engine --config tiny --kv-capacity 4096 --context 16 --steps 1 --warmup 0 --quiet 2>/dev/null |
       sed -n 's/.*copy_gbps=\([0-9.]*\).*/\1/p')
[ -n "$copy" ] || { echo "bench/engine_tp.sh: could not measure the copy rate" >&2; exit 1; }
echo "== device-to-device copy rate (GPU 0): $copy GB/s (bytes read + written)"

# ---------------------------------------------------------------------------
# the grid

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
txt=$out/engine_tp_bench.txt
md=$out/engine_tp_bench.md
printf '%-4s %-5s %-12s %5s %10s %10s %12s %8s %8s %8s %6s\n' tp mode path batch step_ms tok/s allreduce_ms ar%% %roof kv%% slow | tee "$txt"
{
    echo "| tp | mode | path | batch | step ms (slowest rank) | tokens/s | all-reduce ms | all-reduce share | % of roofline (per rank) | KV cast share | slowest rank |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$md"

run() { # run TP|plain PATH BATCH MODE
    local tp=$1 path=$2 b=$3 mode=$4
    local tag=tp${tp}_${mode}_${path}_b${b} tpflag=()
    [ "$tp" = plain ] || tpflag=(--tp "$tp")
    [ "$mode" = graph ] && tpflag+=(--graph)
    local log=$out/runs/$tag.log
    "$kvs" engine --config glm5 --kv-path "$path" --batch "$b" --context "$ctx" --steps "$steps" \
        --warmup "$warmup" --kv-capacity "$capacity" --copy-gbps "$copy" --quiet "${tpflag[@]}" \
        >"$log" 2>&1
    local rc=$? res; res=$(grep '^result:' "$log" | tail -1)
    if [ $rc -ne 0 ] || [ -z "$res" ]; then
        local why="failed (rc $rc, runs/$tag.log)"
        grep -q "largest KV capacity" "$log" && why="does not fit in GPU memory"
        printf '%-4s %-5s %-12s %5s   %s\n' "$tp" "$mode" "$path" "$b" "$why" | tee -a "$txt"
        echo "| $tp | $mode | $path | $b | $why | | | | | | |" >>"$md"
        return
    fi
    local ms tps ar arp pct kv slow
    ms=$(field step_ms "$res"); tps=$(field tokens_per_s "$res"); pct=$(field roofline_pct "$res")
    kv=$(field kv_share_pct "$res"); ar=$(field allreduce_ms "$res"); arp=$(field allreduce_share_pct "$res")
    slow=$(field slowest_rank "$res")
    [ "$tp" = plain ] && { ar="-"; arp="-"; slow="-"; }
    [ "$mode" = graph ] && { ar="-"; arp="-"; kv="-"; }  # a graph times the step only
    [ "$path" = fp8-direct ] && kv="-"
    printf '%-4s %-5s %-12s %5s %10s %10s %12s %8s %8s %8s %6s\n' "$tp" "$mode" "$path" "$b" "$ms" "$tps" "$ar" "$arp" "$pct" "$kv" "$slow" | tee -a "$txt"
    echo "| $tp | $mode | $path | $b | $ms | $tps | $ar | $arp | $pct | $kv | $slow |" >>"$md"
}

for b in $batches; do
    for path in $paths; do
        for mode in $modes; do
            run plain "$path" "$b" "$mode"
            for tp in $tps; do
                [ "$tp" -le "$gpus" ] || continue
                run "$tp" "$path" "$b" "$mode"
            done
        done
    done
done

# ---------------------------------------------------------------------------
# per-rank traces, reported together

echo "== captures (full-cast, batch 1, $trace_steps steps), one trace per rank, and kvscope report"
for tp in $tps; do
    [ "$tp" -le "$gpus" ] || { echo "   tp $tp: skipped ($gpus GPU(s))"; continue; }
    trace=$out/trace_tp$tp.json.gz
    "$kvs" engine --config glm5 --kv-path full-cast --batch 1 --context "$ctx" --steps "$trace_steps" \
        --warmup 2 --copy-gbps "$copy" --tp "$tp" --trace "$trace" >"$out/runs/trace_tp$tp.log" 2>&1 ||
        { echo "   tp $tp: capture failed (see runs/trace_tp$tp.log)"; continue; }
    files=("$out"/trace_tp"$tp".rank*.json.gz)
    [ "$tp" -eq 1 ] && files=("$trace")
    echo "   tp $tp: ${#files[@]} file(s): $(basename -a "${files[@]}" | tr '\n' ' ')"
    rep=$out/report_tp$tp.txt
    "$kvs" report "${files[@]}" --model glm5 --kv-capacity "$capacity" >"$rep" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && grep -q "one trace at a time" "$rep"; then
        # a kvscope without the multi-rank report: one report per rank
        echo "      this kvscope reports one trace at a time: one report per rank"
        : >"$rep"
        for f in "${files[@]}"; do
            { echo "### $(basename "$f")"; "$kvs" report "$f" --model glm5 --kv-capacity "$capacity"; } >>"$rep" 2>&1
        done
    elif [ $rc -ne 0 ]; then
        echo "      kvscope report failed (rc $rc): $rep"
    fi
    grep -c "kv_full_buffer_cast" "$rep" | sed 's/^/      lines naming kv_full_buffer_cast: /'
    sed -n '1,30p' "$rep" | sed 's/^/      /'
done
echo "== written: $txt, $md, $out/runs/"
