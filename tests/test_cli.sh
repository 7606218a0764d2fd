#!/bin/sh
# tests/test_cli.sh KVSCOPE — the CLI's contract: --help lists the commands,
# bad usage exits 2 with a message, version works.
set -u
kvs=$1
fail=0
check() { # check WANT_RC DESCRIPTION -- CMD...
    want=$1; what=$2; shift 3
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL $what: exit $rc, wanted $want; output:"; echo "$out"; fail=1
    else
        echo "ok   $what"
    fi
    LAST_OUT=$out
}
check 0 "--help exits 0" -- "$kvs" --help
for c in version engine report compare; do
    echo "$LAST_OUT" | grep -q "^  $c " || { echo "FAIL --help does not list '$c'"; fail=1; }
done
check 2 "no arguments exits 2" -- "$kvs"
check 2 "unknown command exits 2" -- "$kvs" frobnicate
echo "$LAST_OUT" | grep -q "unknown command 'frobnicate'" || { echo "FAIL no message for unknown command"; fail=1; }
check 2 "unknown option exits 2" -- "$kvs" --frob
check 2 "bad flag to a subcommand exits 2" -- "$kvs" version --frob
# `kvscope help CMD` is `kvscope CMD --help`
check 0 "help report" -- "$kvs" help report
echo "$LAST_OUT" | grep -q "^usage: kvscope report" || { echo "FAIL help report: $LAST_OUT" | head -3; fail=1; }
check 0 "help compare" -- "$kvs" help compare
echo "$LAST_OUT" | grep -q "^usage: kvscope compare" || { echo "FAIL help compare: $LAST_OUT" | head -3; fail=1; }
check 2 "help for an unknown command exits 2" -- "$kvs" help frobnicate
check 0 "version" -- "$kvs" version
echo "$LAST_OUT" | grep -q "^kvscope [0-9]" || { echo "FAIL version output: $LAST_OUT"; fail=1; }

# compare: usage errors exit 2 (an output folder that is not there among them,
# refused before reading), a write that fails 1, stdin for one side
fx=${KVS_SOURCE_ROOT:-.}/tests/fixtures/reports
check 0 "compare --help" -- "$kvs" compare --help
check 2 "compare with one trace exits 2" -- "$kvs" compare "$fx/kv_unfixed.json"
check 0 "compare with two fixes (BEFORE AFTER AFTER) exits 0" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" "$fx/kv_fixed.json" --quiet
check 2 "compare with 17 fixes exits 2" -- "$kvs" compare "$fx/kv_unfixed.json" $(for i in $(seq 17); do printf '%s ' "$fx/kv_fixed.json"; done)
check 2 "compare reading stdin twice exits 2" -- "$kvs" compare - -
check 2 "compare --format yaml exits 2" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" --format yaml
check 2 "compare --batch 0 exits 2" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" --batch 0
check 2 "compare --batch without a value exits 2" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" --batch
check 2 "compare with a missing trace exits 2" -- "$kvs" compare "$fx/no-such.json" "$fx/kv_fixed.json"
check 2 "compare -o into a missing folder exits 2" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" -o /nonexistent-dir/out.txt
check 1 "compare to a full device exits 1" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" -o /dev/full
# an option's fault is named as the option's, never blamed on a trace
check 2 "compare --model unknown exits 2" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" --model no-such-model
echo "$LAST_OUT" | grep -q "no-such-model" || { echo "FAIL compare --model error does not name the model: $LAST_OUT"; fail=1; }
echo "$LAST_OUT" | grep -q "kv_unfixed.json" && { echo "FAIL compare blames the trace for --model: $LAST_OUT"; fail=1; }
check 2 "compare --step-regex bad exits 2" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" --step-regex "(["
echo "$LAST_OUT" | grep -q "kv_unfixed.json" && { echo "FAIL compare blames the trace for --step-regex: $LAST_OUT"; fail=1; }
check 2 "compare with a missing trace: one line" -- "$kvs" compare "$fx/no-such.json" "$fx/kv_fixed.json"
[ "$(echo "$LAST_OUT" | grep -c no-such.json)" -eq 1 ] || { echo "FAIL missing trace: not one line: $LAST_OUT"; fail=1; }
check 2 "compare --kv-capacity beyond report's bound exits 2" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" --kv-capacity 99999999999999999
check 0 "compare two traces as JSON" -- "$kvs" compare "$fx/kv_unfixed.json" "$fx/kv_fixed.json" --format json --quiet
echo "$LAST_OUT" | grep -q '"schema": "kvscope.compare/1"' || { echo "FAIL compare JSON: $LAST_OUT"; fail=1; }
check 0 "compare with BEFORE from stdin" -- sh -c "\"$kvs\" compare - \"$fx/kv_fixed.json\" --format json --quiet < \"$fx/kv_unfixed.json\""
echo "$LAST_OUT" | grep -q '"path": "-"' || { echo "FAIL stdin path not '-': $LAST_OUT"; fail=1; }
exit $fail
