# examples/env.sh — sourced by the walkthroughs in examples/: finds kvscope,
# the build and the output folder, so each script stays about its subject.
#   . "$(dirname "$0")/env.sh"
# KVSCOPE=/path/to/kvscope overrides the binary; else KVS_BUILD_DIR (default
# build/ of this checkout)/cli/kvscope, else kvscope on PATH.
# KVS_OUT_DIR (default out/ of this checkout) receives traces and reports.
examples=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$examples")
build=${KVS_BUILD_DIR:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
if [ -n "${KVSCOPE:-}" ]; then
    kvs=$KVSCOPE
elif [ -x "$build/cli/kvscope" ]; then
    kvs=$build/cli/kvscope
elif command -v kvscope >/dev/null; then
    kvs=$(command -v kvscope)
else
    echo "$(basename "$0"): no kvscope: build it first (./run.sh setup && ninja -C build)" >&2
    exit 2
fi
out=${KVS_OUT_DIR:-$root/out}
mkdir -p "$out"
# say CMD... : print a command, then run it
say() { printf '\n$ %s\n' "$*" | sed "s|$root/||g"; "$@"; }
