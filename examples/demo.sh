#!/usr/bin/env bash
# examples/demo.sh — kvscope's main job, the one `./run.sh` runs: find the
# bottleneck of GLM-5 decode, prove the fix, and say how close each KV path
# comes to the HBM roofline.
#
#   examples/demo.sh BUILD_DIR [OUT_DIR]     (OUT_DIR defaults to ./out)
#   KVS_DEMO_SOURCE=bundled examples/demo.sh build     never touch a GPU
#
# 1. Traces. With a usable NVIDIA GPU and a CUDA build (kvscope engine), it
#    captures fresh decode traces of kvscope's GLM-5 engine, batch 1, context
#    4096, 4 steps, for the unfixed KV path (full-cast: every layer casts the
#    whole FP8 KV pool to BF16), the fix (fp8-direct: attention reads FP8)
#    and the first fix (active-cast: gather the active rows, then cast). If
#    the GPU has too little memory for the default KV pool it retries with
#    the largest capacity that fits (the engine says which); if that fails
#    too, or there is no GPU, it reads the real H200 traces bundled in
#    examples/traces/ (and says so).
# 2. kvscope report on each (text here for full-cast and fp8-direct; HTML
#    and JSON of all into OUT_DIR).
# 3. kvscope compare full-cast -> fp8-direct (in full) and -> active-cast.
# 4. A summary, printed by kvscope compare BEFORE AFTER AFTER (its IN SHORT
#    closing): the bottleneck, what each fix saved, each path against the HBM
#    roofline (bytes per step from the kvscope.engine object in each trace);
#    then where the HTML reports are.
#
# Environment: KVS_DEMO_SOURCE=auto|gpu|bundled (default auto; gpu: capture
# or fail, never fall back),
# KVS_DEMO_KV_CAPACITY (default 495552), KVS_DEMO_STEPS (default 4).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1
out=${2:-out}
kvs=$build/cli/kvscope
[ -x "$kvs" ] || { echo "demo: $kvs not found: build first (./run.sh does)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

source_mode=${KVS_DEMO_SOURCE:-auto}
capacity=${KVS_DEMO_KV_CAPACITY:-495552}
steps=${KVS_DEMO_STEPS:-4}
paths=(full-cast fp8-direct active-cast)

rule() { printf '\n%s\n %s\n%s\n' "======================================================================" \
    "$*" "======================================================================"; }
note() { printf '  %s\n' "$@"; }

# ---------------------------------------------------------------------------
# 1. the traces: fresh from the GPU, else bundled

gpu_reason=""
gpu_usable() {
    if ! "$kvs" engine --help >/dev/null 2>&1; then
        gpu_reason="this build has no engine (it needs the CUDA toolkit at build time)"; return 1
    fi
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && return 0
        gpu_reason="no NVIDIA GPU found (nvidia-smi lists none)"; return 1
    fi
    # no nvidia-smi (some containers): ask CUDA, through the smallest run of example 4's program
    local probe=$build/examples/naive_kv_cast
    if [ -x "$probe" ] && "$probe" --layers 1 --capacity 64 --active 8 --steps 1 >/dev/null 2>&1; then
        return 0
    fi
    gpu_reason="no NVIDIA GPU found (no nvidia-smi, and CUDA sees no device)"; return 1
}
gpu_name() {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null |
        head -n 1 | grep . || echo "a CUDA device (nvidia-smi absent)"
}

capture_one() { # capture_one PATH CAPACITY -> OUT/glm5_PATH.json.gz, OUT/glm5_PATH.log
    "$kvs" engine --config glm5 --kv-path "$1" --batch 1 --context 4096 --steps "$steps" \
        --warmup 2 --kv-capacity "$2" --trace "$out/glm5_$1.json.gz" \
        >"$out/glm5_$1.log" 2>&1
}

capture_fresh() {
    local p fit
    for p in "${paths[@]}"; do
        note "kvscope engine --config glm5 --kv-path $p --batch 1 --context 4096 --steps $steps" \
             "    --kv-capacity $capacity --trace $out/glm5_$p.json.gz"
        if ! capture_one "$p" "$capacity"; then
            fit=$(sed -n 's/.*largest KV capacity that fits is \([0-9]*\) tokens (--kv-capacity.*/\1/p' \
                  "$out/glm5_$p.log" | head -n 1)
            if [ -n "$fit" ] && [ "$fit" -lt "$capacity" ]; then
                note "the GPU has too little memory for a $capacity-token KV pool;" \
                     "retrying with the largest that fits: --kv-capacity $fit"
                capacity=$fit
                capture_one "$p" "$capacity" || { tail -n 5 "$out/glm5_$p.log" | sed 's/^/  | /'; return 1; }
            else
                tail -n 5 "$out/glm5_$p.log" | sed 's/^/  | /'
                return 1
            fi
        fi
        sed -n '/^summary over/,/^result:/p' "$out/glm5_$p.log" | grep -v '^result:' | sed 's/^/  | /'
    done
}

rule "1/4  decode traces of kvscope's GLM-5 engine (unfixed: full-cast; fixed: fp8-direct, active-cast)"
traces=$here/traces
src=bundled
[ "$source_mode" = bundled ] && gpu_reason="KVS_DEMO_SOURCE=bundled"
if [ "$source_mode" != bundled ] && gpu_usable; then
    note "GPU: $(gpu_name)" \
         "capturing fresh traces (each run first fills 82 GB of synthetic weights and the KV pool)"
    if capture_fresh; then
        src=gpu
        traces=$out
        { echo "captured: $(date -u '+%Y-%m-%d %H:%M UTC')"
          echo "gpu: $(gpu_name)"
          echo "kvscope: $("$kvs" version | head -n 1)"
          echo "command: kvscope engine --config glm5 --kv-path PATH --batch 1 --context 4096" \
               "--steps $steps --warmup 2 --kv-capacity $capacity --trace glm5_PATH.json.gz"
        } >"$out/captured.txt"
    elif [ "$source_mode" = gpu ]; then
        echo "demo: KVS_DEMO_SOURCE=gpu but the capture failed (log above; $out/glm5_*.log)" >&2
        exit 1
    else
        note "the capture failed (log above; $out/glm5_*.log): using the bundled traces instead"
    fi
elif [ "$source_mode" = gpu ]; then
    echo "demo: KVS_DEMO_SOURCE=gpu but $gpu_reason" >&2
    exit 1
else
    note "$gpu_reason: using the traces bundled in examples/traces/"
fi
if [ "$src" = bundled ]; then
    capacity=495552
    note "(real captures of this engine on an NVIDIA H200, 2026-11-29: examples/traces/README.md)"
fi
unfixed=$traces/glm5_full-cast.json.gz
fixed=$traces/glm5_fp8-direct.json.gz
opts=(--model glm5 --kv-capacity "$capacity" --batch 1)
note "unfixed: $unfixed" "fixed:   $fixed"

# ---------------------------------------------------------------------------
# 2. the reports

rule "2/4  kvscope report (unfixed: full-cast)"
note "\$ kvscope report glm5_full-cast.json.gz ${opts[*]}"
echo
"$kvs" report "$unfixed" "${opts[@]}" | tee "$out/report_full-cast.txt"
for p in "${paths[@]}"; do
    t=$traces/glm5_$p.json.gz
    [ -f "$t" ] || continue
    "$kvs" report "$t" "${opts[@]}" --format html -o "$out/report_$p.html"
    "$kvs" report "$t" "${opts[@]}" --format json -o "$out/report_$p.json"
done

rule "3/4  kvscope report (fixed: fp8-direct), up to its copy/cast table"
"$kvs" report "$fixed" "${opts[@]}" | tee "$out/report_fp8-direct.txt" | sed '/^TOP KERNELS/,$d'

# ---------------------------------------------------------------------------
# 3. the comparisons: the fix (fp8-direct) in full, the first fix (active-cast) in brief

rule "4/4  kvscope compare (unfixed -> fixed)"
note "\$ kvscope compare glm5_full-cast.json.gz glm5_fp8-direct.json.gz ${opts[*]}"
echo
"$kvs" compare "$unfixed" "$fixed" "${opts[@]}" | tee "$out/compare_fp8-direct.txt"
for p in fp8-direct active-cast; do
    t=$traces/glm5_$p.json.gz
    [ -f "$t" ] || continue
    "$kvs" compare "$unfixed" "$t" "${opts[@]}" --format html -o "$out/compare_$p.html"
    "$kvs" compare "$unfixed" "$t" "${opts[@]}" --format json -o "$out/compare_$p.json"
done
if [ -f "$traces/glm5_active-cast.json.gz" ]; then
    echo
    note "The first fix, gather-then-cast of the active tokens (active-cast), for comparison:" \
         "\$ kvscope compare glm5_full-cast.json.gz glm5_active-cast.json.gz ${opts[*]}"
    echo
    "$kvs" compare "$unfixed" "$traces/glm5_active-cast.json.gz" "${opts[@]}" |
        tee "$out/compare_active-cast.txt" | sed -n '/^VERDICT/,/^$/p'
fi

# ---------------------------------------------------------------------------
# 4. in short

echo
fixes=()
for p in fp8-direct active-cast; do
    [ -f "$traces/glm5_$p.json.gz" ] && fixes+=("$traces/glm5_$p.json.gz")
done
"$kvs" compare "$unfixed" "${fixes[@]}" "${opts[@]}" | sed -n '/^IN SHORT$/,$p' |
    tee "$out/summary.txt"
echo
if [ "$src" = gpu ]; then
    echo "Traces captured on this GPU: $out/glm5_{$(IFS=,; echo "${paths[*]}")}.json.gz"
else
    echo "Traces: bundled (captured on an NVIDIA H200, 2026-11-29), in $traces/"
fi
cmps=$(ls "$out"/compare_*.html | tr '\n' ' ')
echo "HTML report: $out/report_full-cast.html   (comparisons: ${cmps% })"
