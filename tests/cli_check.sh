# tests/cli_check.sh — sourced by the CLI shell tests (test_cli_report.sh,
# test_cli_engine.sh, test_cli_capture.sh): check() runs one command and
# compares its exit code and output; a miss prints why and sets fail=1.
#   check WANT_RC DESCRIPTION PATTERN -- CMD...   (PATTERN "" : any output)
check() {
    want=$1; what=$2; pat=$3; shift 4
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL $what: exit $rc, wanted $want; output:"; echo "$out" | head -40; fail=1
    elif [ -n "$pat" ] && ! echo "$out" | grep -q -- "$pat"; then
        echo "FAIL $what: output lacks '$pat':"; echo "$out" | head -40; fail=1
    else
        echo "ok   $what"
    fi
}
