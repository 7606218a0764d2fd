#!/bin/sh
# tests/test_cli_engine.sh KVSCOPE — `kvscope engine`'s command line, without a
# GPU: --help, and every bad usage refused with exit 2 before the GPU is
# touched (the memory plan is checked first). In a build without the engine,
# the command must say so and exit 2.
set -u
kvs=$1
fail=0
check() { # check WANT_RC DESCRIPTION PATTERN -- CMD...
    want=$1; what=$2; pat=$3; shift 4
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL $what: exit $rc, wanted $want; output:"; echo "$out"; fail=1
    elif [ -n "$pat" ] && ! echo "$out" | grep -q -- "$pat"; then
        echo "FAIL $what: output lacks '$pat':"; echo "$out"; fail=1
    else
        echo "ok   $what"
    fi
}
if ! "$kvs" engine --help >/dev/null 2>&1; then
    check 2 "engine refused without the engine built" "built without CUDA" -- "$kvs" engine
    exit $fail
fi
check 0 "engine --help" "full-cast" -- "$kvs" engine --help
check 2 "unknown kv path" "fp8-direct" -- "$kvs" engine --kv-path fast
check 2 "batch 0" "--batch" -- "$kvs" engine --batch 0
check 2 "batch not a number" "--batch" -- "$kvs" engine --batch 3x
check 2 "missing value" "needs a value" -- "$kvs" engine --steps
check 2 "unknown option" "unknown option" -- "$kvs" engine --frob 1
check 2 "stray argument" "unexpected" -- "$kvs" engine glm5
check 2 "unknown config" "neither a bundled config" -- "$kvs" engine --config no-such-model
check 2 "capacity below the run's tokens" "too small" -- \
    "$kvs" engine --config tiny --batch 4 --context 1000 --kv-capacity 2048
check 2 "resident experts below top-k" "resident" -- \
    "$kvs" engine --config glm5 --resident-experts 4 --context 16
exit $fail
