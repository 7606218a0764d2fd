#!/usr/bin/env bash
# examples/3_compare.sh — prove a fix: compare the trace before it with the
# trace after it. Copy/cast work is paired by role (same op, dtypes and
# meaning, whatever the token count), findings are marked resolved or new,
# and a verdict says what the fix saved in GPU time and in wall time.
#
#   examples/3_compare.sh                              bundled: full-cast -> fp8-direct
#   examples/3_compare.sh out/glm5_full-cast.json.gz out/glm5_active-cast.json.gz
#   examples/3_compare.sh before.json after.json --batch 8
#
# Options after the two traces go to `kvscope compare`; with none, GLM-5's
# (--model glm5 --kv-capacity 495552 --batch 1). Writes out/compare.html.
set -euo pipefail
. "$(dirname "$0")/env.sh"

before=${1:-$examples/traces/glm5_full-cast.json.gz}
after=${2:-$examples/traces/glm5_fp8-direct.json.gz}
[ $# -gt 2 ] && shift 2 || set --
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(--model glm5 --kv-capacity 495552 --batch 1)

say "$kvs" compare "$before" "$after" "${opts[@]}"
"$kvs" compare "$before" "$after" "${opts[@]}" --format html -o "$out/compare.html"
echo
echo "HTML comparison: $out/compare.html"
