#!/bin/sh
# tests/test_cli_capture.sh KVSCOPE CAPTURE_TARGET — `kvscope capture`'s
# command line without a GPU: bad options exit 2 before the program runs
# (an -o whose folder is missing, --buffer-mb/--max-buffers out of range),
# a program that uses no CUDA gives one line and exit 1, and on a machine
# without a driver a CUDA program's capture says so in words, not CUPTI's
# error number. The GPU side: tests/gpu/test_capture_inject.sh.
#   meson test -C build test_cli_capture
set -u
kvs=$1
target=$2
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/cli_check.sh"
check 0 "capture --help" "KVS_INJECT_LIB" -- "$kvs" capture --help
check 2 "capture without -o" "-o TRACE is required" -- "$kvs" capture -- true
check 2 "capture without a program" "no program" -- "$kvs" capture -o "$tmp/t.json"
# the folder is checked before the program runs: the marker must not appear
check 2 "capture -o into a missing folder" "cannot write into" -- \
    "$kvs" capture -o "$tmp/no-such-dir/t.json" -- touch "$tmp/ran"
[ -e "$tmp/ran" ] && { echo "FAIL capture -o into a missing folder ran the program"; fail=1; }
check 2 "capture -o under a file" "not a directory" -- \
    "$kvs" capture -o /etc/passwd/t.json -- true
check 2 "capture -o - (stdout is the program's)" "give a file name" -- "$kvs" capture -o - -- true
check 2 "capture -o empty" "empty, not a file name" -- "$kvs" capture -o "" -- true
check 2 "capture -o a folder" "a folder, not a file name" -- "$kvs" capture -o "$tmp" -- true
check 2 "capture --buffer-mb 0" "--buffer-mb wants" -- "$kvs" capture -o "$tmp/t.json" --buffer-mb 0 -- true
check 2 "capture --buffer-mb too large" "--buffer-mb wants an integer in \[1, 1024\]" -- \
    "$kvs" capture -o "$tmp/t.json" --buffer-mb 99999999999999 -- true
check 2 "capture --max-buffers wrapping an unsigned" "--max-buffers wants" -- \
    "$kvs" capture -o "$tmp/t.json" --max-buffers 4294967297 -- true
check 2 "capture --window bad" "--window" -- "$kvs" capture -o "$tmp/t.json" --window foo -- true
check 2 "capture --torch-ops bad" "--torch-ops must be auto, on or off" -- \
    "$kvs" capture -o "$tmp/t.json" --torch-ops yes -- true
check 0 "capture --help names --torch-ops" "--torch-ops auto|on|off" -- "$kvs" capture --help
check 2 "capture --activities bad" "--activities" -- \
    "$kvs" capture -o "$tmp/t.json" --activities kernel,foo -- true
# every runtime/driver call is still there to ask for; a near miss is refused
check 2 "capture --activities runtime-al" "runtime-all, driver, driver-all" -- \
    "$kvs" capture -o "$tmp/t.json" --activities runtime-al -- true
check 1 "capture --activities default,runtime-all,driver-all runs" "did the program use CUDA" -- \
    "$kvs" capture -o "$tmp/t.json" --activities default,runtime-all,driver-all -- true
check 0 "capture --help names the activities" "runtime-all/driver-all every call" -- \
    "$kvs" capture --help
check 127 "capture of a missing program" "cannot run" -- "$kvs" capture -o "$tmp/t.json" -- "$tmp/no-such-prog"
check 1 "capture of a program without CUDA" "did the program use CUDA" -- \
    "$kvs" capture -o "$tmp/t.json" -- true
# no driver here: the capture inside the program says so, the launcher in one line
if ! "$target" probe >/dev/null 2>&1 && ! ls /usr/lib*/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 >/dev/null 2>&1; then
    check 1 "capture without a driver says so" "no NVIDIA driver is installed" -- \
        "$kvs" capture -o "$tmp/t.json" -- "$target"
    echo "$out" | grep -q "CUPTI error [0-9]\|status=error" &&
        { echo "FAIL capture without a driver: CUPTI's number or the pipe's line: $out"; fail=1; }
    echo "$out" | grep -q "did the program use CUDA" &&
        { echo "FAIL capture without a driver: asks whether it used CUDA: $out"; fail=1; }
else
    echo "skip capture without a driver (this machine has one)"
fi
exit $fail
