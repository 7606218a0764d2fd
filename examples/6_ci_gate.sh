#!/usr/bin/env bash
# examples/6_ci_gate.sh — the gate step of a CI job (docs/ci.md): compare a
# stored baseline trace with the trace of the build under test, and fail on
# a regression the way a failing test fails.
#
#   examples/6_ci_gate.sh                     bundled: fp8-direct (baseline) -> full-cast: exits 3
#   examples/6_ci_gate.sh baseline.json.gz new.json.gz --batch 8 [--threshold 3]
#
# Options after the two traces go to `kvscope compare`. With no arguments at
# all, the bundled traces with GLM-5's options: full-cast is the bug come
# back, so the gate fails. Prints the gate on the log, and writes into out/:
# gate.xml (JUnit, for the CI's test report), gate.md (a PR comment),
# compare.html (to upload). Exit code: kvscope compare's with --fail-on
# regression: 0 not worse, 3 worse, 1 or 2 kvscope failed or bad input.
set -uo pipefail # not -e: exit 3 is the gate's answer, not an error
. "$(dirname "$0")/env.sh"

if [ $# -eq 0 ]; then
    base=$examples/traces/glm5_fp8-direct.json.gz
    new=$examples/traces/glm5_full-cast.json.gz
    opts=(--model glm5 --kv-capacity 495552 --batch 1)
elif [ $# -ge 2 ]; then
    base=$1 new=$2; shift 2
    opts=("$@")
else
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2
fi

# the gate on the log (text); its exit code is the job's
say "$kvs" compare "$base" "$new" "${opts[@]}" --fail-on regression
rc=$?
case $rc in
    0 | 3) ;;
    *) echo "kvscope compare failed (exit $rc): no verdict" >&2; exit "$rc" ;;
esac
# the same verdict for the CI: test report, PR comment, page to upload
for f in junit:gate.xml md:gate.md html:compare.html; do
    "$kvs" compare "$base" "$new" "${opts[@]}" --fail-on regression --quiet \
        --format "${f%%:*}" -o "$out/${f#*:}"
    r=$?
    [ "$r" -eq "$rc" ] || { echo "kvscope compare --format ${f%%:*} exited $r, not $rc" >&2; exit 1; }
done
echo
echo "JUnit: $out/gate.xml   PR comment: $out/gate.md   HTML: $out/compare.html"
[ "$rc" -eq 3 ] && echo "gate: FAILED (exit 3): $new is worse than $base"
exit "$rc"
