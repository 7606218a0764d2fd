#!/usr/bin/env bash
# bench/engine.sh BUILD_DIR [OUT_DIR] — kvscope's GLM-5 engine on this GPU: the
# three KV paths at batch 1, 8, 32, 64 and context 4K and 32K with the default
# KV capacity (495,552 tokens), plus CUDA-graph runs and --trace captures.
#
#   bench/engine.sh build "$OUT"       # e.g. on the H200, after a CUDA build
#
# First it checks the engine against the CPU reference (tests/test_engine_gpu)
# and stops if that fails: nothing is timed before it is known to be right.
# Prints a table (step ms, tokens/s, bytes/step, % of roofline, KV-cast share
# of step time) and writes, under OUT_DIR (default ./out/engine):
#   engine_bench.txt / engine_bench.md   the table, as text and markdown
#   runs/*.log                           every run's full output
#   trace_<path>.json.gz, report_<path>.txt   captures and `kvscope report` on them
# Environment: STEPS (default 8), WARMUP (default 2), BATCHES ("1 8 32 64"),
# CONTEXTS ("4096 32768"), CAPACITY (495552), PATHS (all three).
set -uo pipefail
build=${1:?usage: bench/engine.sh BUILD_DIR [OUT_DIR]}
out=${2:-out/engine}
kvs=$build/cli/kvscope
steps=${STEPS:-8}
warmup=${WARMUP:-2}
batches=${BATCHES:-"1 8 32 64"}
contexts=${CONTEXTS:-"4096 32768"}
capacity=${CAPACITY:-495552}
paths=${PATHS:-"full-cast active-cast fp8-direct"}
mkdir -p "$out/runs"

[ -x "$kvs" ] || { echo "bench/engine.sh: no $kvs (a CUDA build is needed)" >&2; exit 2; }
"$kvs" engine --help >/dev/null 2>&1 || { echo "bench/engine.sh: this kvscope has no engine" >&2; exit 2; }

# ---------------------------------------------------------------------------
# correctness first

if [ -x "$build/tests/test_engine_gpu" ]; then
    echo "== checking the engine against the CPU reference (tiny config, three paths)"
    if ! "$build/tests/test_engine_gpu" paths_match_reference >"$out/runs/check.log" 2>&1; then
        cat "$out/runs/check.log"; echo "bench/engine.sh: the engine does not match its reference; not timing it" >&2
        exit 1
    fi
    grep -E "normalized error|seed" "$out/runs/check.log" | sed 's/^/   /'
fi

# ---------------------------------------------------------------------------
# one copy-rate measurement shared by every run

copy=$("$kvs" engine --config tiny --kv-capacity 4096 --context 16 --steps 1 --warmup 0 --quiet 2>/dev/null |
       sed -n 's/.*copy_gbps=\([0-9.]*\).*/\1/p')
[ -n "$copy" ] || { echo "bench/engine.sh: could not measure the copy rate" >&2; exit 1; }
echo "== device-to-device copy rate: $copy GB/s (bytes read + written)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/== GPU: /'

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

txt=$out/engine_bench.txt
md=$out/engine_bench.md
printf '%-12s %5s %6s %5s %10s %10s %10s %10s %8s %8s\n' path batch ctx graph step_ms tok/s GB/step roof_ms %roof kv%% | tee "$txt"
{
    echo "| path | batch | context | graph | step ms | tokens/s | GB/step | roofline ms | % of roofline | KV cast share |"
    echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"
} >"$md"

run() { # run PATH BATCH CTX GRAPH(0|1) [extra args]
    local path=$1 b=$2 ctx=$3 g=$4; shift 4
    local tag=${path}_b${b}_c${ctx}${g:+_g$g}
    local gflag=(); [ "$g" = 1 ] && gflag=(--graph)
    local log=$out/runs/$tag.log
    "$kvs" engine --config glm5 --kv-path "$path" --batch "$b" --context "$ctx" --steps "$steps" \
        --warmup "$warmup" --kv-capacity "$capacity" --copy-gbps "$copy" "${gflag[@]}" "$@" >"$log" 2>&1
    local rc=$?
    local res; res=$(grep '^result:' "$log" | tail -1)
    if [ $rc -ne 0 ] || [ -z "$res" ]; then
        local why="failed (rc $rc)"
        grep -q "too small" "$log" && why="does not fit: $b x $ctx tokens > KV capacity $capacity"
        grep -q "largest KV capacity" "$log" && why="does not fit in GPU memory"
        printf '%-12s %5s %6s %5s   %s\n' "$path" "$b" "$ctx" "$g" "$why" | tee -a "$txt"
        echo "| $path | $b | $ctx | $g | $why | | | | | |" >>"$md"
        return
    fi
    local ms tps bytes roof pct kv
    ms=$(field step_ms "$res"); tps=$(field tokens_per_s "$res"); bytes=$(field bytes_per_step "$res")
    roof=$(field roofline_ms "$res"); pct=$(field roofline_pct "$res"); kv=$(field kv_share_pct "$res")
    local gb; gb=$(awk -v b="$bytes" 'BEGIN{printf "%.2f", b/1e9}')
    [ "$path" = fp8-direct ] || [ "$g" = 1 ] && kv="-"
    printf '%-12s %5s %6s %5s %10s %10s %10s %10s %8s %8s\n' "$path" "$b" "$ctx" "$g" "$ms" "$tps" "$gb" "$roof" "$pct" "$kv" | tee -a "$txt"
    echo "| $path | $b | $ctx | $g | $ms | $tps | $gb | $roof | $pct | $kv |" >>"$md"
}

for ctx in $contexts; do
    for b in $batches; do
        for path in $paths; do
            run "$path" "$b" "$ctx" 0
        done
    done
done
# launch overhead apart: the same step as one CUDA graph
for path in $paths; do
    run "$path" 1 4096 1
done

# ---------------------------------------------------------------------------
# captures: does `kvscope report` name the full-buffer cast, and only there?

echo "== captures (batch 1, context 4096, 4 steps) and kvscope report"
for path in $paths; do
    trace=$out/trace_$path.json.gz
    "$kvs" engine --config glm5 --kv-path "$path" --batch 1 --context 4096 --steps 4 --warmup 2 \
        --copy-gbps "$copy" --trace "$trace" >"$out/runs/trace_$path.log" 2>&1 ||
        { echo "   $path: capture failed (see runs/trace_$path.log)"; continue; }
    if "$kvs" report --help >/dev/null 2>&1; then
        "$kvs" report "$trace" --model glm5 --kv-capacity "$capacity" >"$out/report_$path.txt" 2>&1
        if grep -q "kv_full_buffer_cast" "$out/report_$path.txt"; then
            echo "   $path: report names kv_full_buffer_cast"
        else
            echo "   $path: report does not name kv_full_buffer_cast"
        fi
        sed -n '1,25p' "$out/report_$path.txt" | sed 's/^/      /'
    else
        echo "   $path: trace written; this kvscope has no report command yet"
    fi
done
echo "== written: $txt, $md, $out/runs/"
