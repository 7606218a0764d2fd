#!/usr/bin/env bash
# examples/1_capture_engine.sh — capture a decode trace of kvscope's GLM-5
# engine for each KV path, with `kvscope engine --trace`. Needs an NVIDIA GPU
# with ~105 GB free for the default KV pool (an H200; lower it with
# --kv-capacity) and a CUDA build.
#
#   examples/1_capture_engine.sh                      batch 1, context 4096, 4 steps
#   examples/1_capture_engine.sh --batch 8 --kv-capacity 262144    extra engine options
#
# Writes out/glm5_<path>.json.gz (the trace) and out/glm5_<path>.log (what the
# engine printed: memory plan, per-step ms, bytes moved per step, roofline)
# for the three paths:
#   full-cast    every layer casts the WHOLE FP8 pool to BF16 (the bug)
#   active-cast  gather-then-cast of the active tokens only
#   fp8-direct   attention reads the FP8 pool directly
# Then read them with examples/2_report.sh and examples/3_compare.sh. Without a
# GPU, use the traces in examples/traces/ (made with this script's command).
set -euo pipefail
. "$(dirname "$0")/env.sh"

if ! "$kvs" engine --help >/dev/null 2>&1; then
    echo "1_capture_engine: this build has no engine (build with the CUDA toolkit)" >&2
    exit 2
fi
for path in full-cast active-cast fp8-direct; do
    # the engine prints its memory plan before allocating; --quiet drops the per-step lines
    say "$kvs" engine --config glm5 --kv-path "$path" --batch 1 --context 4096 --steps 4 \
        --warmup 2 "$@" --trace "$out/glm5_$path.json.gz" | tee "$out/glm5_$path.log"
done
echo
echo "traces: $out/glm5_{full-cast,active-cast,fp8-direct}.json.gz"
echo "next:   examples/2_report.sh $out/glm5_full-cast.json.gz --model glm5 --kv-capacity 495552 --batch 1"
