#!/usr/bin/env bash
# examples/3_compare.sh — prove a fix: compare the trace before it with the
# trace after it. Copy/cast work is paired by role (same op, dtypes and
# meaning, whatever the token count), findings are marked resolved or new,
# and a verdict says what the fix saved in GPU time and in wall time.
#
#   examples/3_compare.sh                              bundled: full-cast -> fp8-direct
#   examples/3_compare.sh examples/traces/glm5_full-cast.json.gz examples/traces/glm5_active-cast.json.gz --model glm5
#   examples/3_compare.sh before.json after.json --batch 8
#
# Options after the two traces go to `kvscope compare`. With no arguments at
# all, the bundled traces with GLM-5's options (--model glm5 --kv-capacity
# 495552 --batch 1). Writes out/compare.html.
set -euo pipefail
. "$(dirname "$0")/env.sh"

if [ $# -eq 0 ]; then
    before=$examples/traces/glm5_full-cast.json.gz
    after=$examples/traces/glm5_fp8-direct.json.gz
    opts=(--model glm5 --kv-capacity 495552 --batch 1)
elif [ $# -ge 2 ]; then
    before=$1 after=$2; shift 2
    opts=("$@")
else
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2
fi

say "$kvs" compare "$before" "$after" "${opts[@]}"
"$kvs" compare "$before" "$after" "${opts[@]}" --format html -o "$out/compare.html"
echo
echo "HTML comparison: $out/compare.html"
