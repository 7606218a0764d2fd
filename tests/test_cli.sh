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
for c in version engine report; do
    echo "$LAST_OUT" | grep -q "^  $c " || { echo "FAIL --help does not list '$c'"; fail=1; }
done
check 2 "no arguments exits 2" -- "$kvs"
check 2 "unknown command exits 2" -- "$kvs" frobnicate
echo "$LAST_OUT" | grep -q "unknown command 'frobnicate'" || { echo "FAIL no message for unknown command"; fail=1; }
check 2 "unknown option exits 2" -- "$kvs" --frob
check 2 "bad flag to a subcommand exits 2" -- "$kvs" version --frob
check 0 "version" -- "$kvs" version
echo "$LAST_OUT" | grep -q "^kvscope [0-9]" || { echo "FAIL version output: $LAST_OUT"; fail=1; }
exit $fail
