#!/usr/bin/env bash
# examples/2_report.sh — the bottleneck report on a trace: text on the
# terminal, a self-contained HTML page (charts: each copy/cast group's GB/s
# against the HBM peak, GPU time per step by category) beside it.
#
#   examples/2_report.sh                               the bundled unfixed GLM-5 trace
#   examples/2_report.sh out/glm5_active-cast.json.gz  one of yours (example 1's) ...
#   examples/2_report.sh my.pt.trace.json --model deepseek-v3 --kv-capacity 131072
#
# Options after the trace go to `kvscope report` (kvscope report --help).
# With no arguments at all, the bundled trace with GLM-5's options,
# --model glm5 --kv-capacity 495552 --batch 1, which let the report say that 576 is kv_lora_rank 512 + qk_rope_head_dim 64, that
# 495552 is the KV pool's capacity and that 78 calls a step is once per layer.
# Writes out/<trace name>.report.html and .json.
set -euo pipefail
. "$(dirname "$0")/env.sh"

if [ $# -eq 0 ]; then
    trace=$examples/traces/glm5_full-cast.json.gz
    opts=(--model glm5 --kv-capacity 495552 --batch 1)
else
    trace=$1; shift
    opts=("$@")
fi
name=$(basename "$trace"); name=${name%.gz}; name=${name%.json}

say "$kvs" report "$trace" "${opts[@]}"
"$kvs" report "$trace" "${opts[@]}" --format html -o "$out/$name.report.html"
"$kvs" report "$trace" "${opts[@]}" --format json -o "$out/$name.report.json"
echo
echo "HTML report: $out/$name.report.html   (JSON, keys in docs/report-json.md: $out/$name.report.json)"
