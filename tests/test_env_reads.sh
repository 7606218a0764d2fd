#!/bin/sh
# tests/test_env_reads.sh — the libraries read and write no environment
# (docs/conventions.md, Environment): no getenv/setenv/putenv/unsetenv call
# in common/, libtrace/, kernels/, engine/, reader/, analyzers/ or reports/, their
# tests and benches aside (programs read the variables they honour and list
# them in --help). The two documented exceptions are named below.
#   meson test -C build test_env_reads
set -u
src=${KVS_SOURCE_ROOT:-.}
# the injection library configured by `kvscope capture` through KVS_CAPTURE_*
# (docs/capture.md), and libtrace's capture pointing NVTX_INJECTION64_PATH at
# itself (NVTX finds its injection library only through that variable)
allowed='^(libtrace/inject\.c|libtrace/capture\.c):'
cd "$src" || exit 99
[ -d engine ] && [ -d reader ] && [ -d analyzers ] || { echo "FAIL no source tree at $src"; exit 99; }
hits=$(grep -rnE '\b(secure_getenv|getenv|setenv|putenv|unsetenv|clearenv)[[:space:]]*\(|\benviron\b' \
           common libtrace kernels engine reader analyzers reports \
           --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' --include='*.cpp' |
       grep -vE '^[^:]*/(tests|bench)/' | grep -vE "$allowed")
if [ -n "$hits" ]; then
    echo "FAIL the environment is read or written inside a library (move it to cli/ and pass it"
    echo "     through the library's options or params struct):"
    echo "$hits"
    exit 1
fi
n=$(grep -rlE '\b(getenv|setenv)[[:space:]]*\(' libtrace --include='*.c' | wc -l)
echo "ok   no environment access in the libraries ($n documented exception files in libtrace)"
