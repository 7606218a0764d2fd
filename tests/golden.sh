#!/bin/sh
# tests/golden.sh GOLDEN CMD [ARG...] — run CMD from the source root and
# compare its stdout with the file GOLDEN (relative to tests/golden/), byte
# for byte. Any difference fails and is shown as a unified diff.
#
# Regenerate (after a deliberate change; review the diff before committing):
#   KVS_UPDATE_GOLDEN=1 meson test -C build --suite golden
set -u
golden=$1; shift
root=${KVS_SOURCE_ROOT:?set by meson test}
file=$root/tests/golden/$golden
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
cmd=$1; shift
case $cmd in /*) ;; */*) cmd=$(pwd)/$cmd ;; esac # meson gives it relative to the build dir
cd "$root" || exit 99
"$cmd" "$@" >"$out"
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "FAIL: '$cmd $*' exited $rc"
    exit 1
fi
if [ "${KVS_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$out" "$file" && echo "updated $file"
    exit 0
fi
if [ ! -f "$file" ]; then
    echo "FAIL: no golden file $file; create it with KVS_UPDATE_GOLDEN=1 meson test -C build --suite golden"
    exit 1
fi
if ! cmp -s "$out" "$file"; then
    echo "FAIL: output of '$cmd $*' differs from tests/golden/$golden:"
    diff -u "$file" "$out" | head -80
    exit 1
fi
echo "ok   $golden"
