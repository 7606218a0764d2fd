#!/usr/bin/env bash
# tests/gpu/torch_ops_device.sh OUT [BUILD] — the GPU checks of kvscope's torch
# ops in one go, on a machine with a GPU, python3 with torch and transformers:
#
#   1. builds only what they need into BUILD (default build-torchops: meson
#      setup when missing; kvscope, the injection library, the hook's files,
#      the bench's C program);
#   2. tests/gpu/test_torch_ops_gpu.py over KVS_TORCH_VARIANTS (default all
#      eight; its traces, reports and logs in OUT/gpu), output OUT/gpu.txt;
#   3. bench/capture_overhead.sh with KVS_BENCH_TORCHOPS=only (the torch-ops
#      rows against torch.profiler with record_shapes; KVS_BENCH_CYCLES
#      default 2, KVS_BENCH_WHOLE default 6, KVS_BENCH_ROUNDS default 8,
#      KVS_BENCH_CPUS default probe) into OUT/bench, unless KVS_TORCH_BENCH=0.
#
# Each part's exit code is printed (PART name rc=N); the script's is the
# first failure's (77 when the GPU test skipped and nothing failed).
#   tests/gpu/torch_ops_device.sh "$OUT"
set -u
out=${1:?usage: tests/gpu/torch_ops_device.sh OUT [BUILD]}
build=${2:-build-torchops}
cd "$(dirname "$0")/../.." || exit 99
mkdir -p "$out"
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
rc_all=0
part() { # part NAME RC
    echo "PART $1 rc=$2" | tee -a "$out/parts.txt"
    # the first failure; a skip (77) only while nothing failed
    if [ "$2" -ne 0 ] && { [ "$rc_all" -eq 0 ] || { [ "$rc_all" -eq 77 ] && [ "$2" -ne 77 ]; }; }; then
        rc_all=$2
    fi
}
t0=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" >"$out/setup.txt" 2>&1 || { part setup $?; exit 1; }
fi
ninja -C "$build" cli/kvscope libtrace/libkvscope-inject.so libtrace/torch/sitecustomize.py \
    libtrace/torch/kvs_torch_ops.cpp libtrace/torch/kvs_torch_ops.h libtrace/capture_overhead \
    >"$out/build.txt" 2>&1
part build $?
echo "built in $(( $(date +%s) - t0 )) s" | tee -a "$out/parts.txt"
# shellcheck disable=SC2086
KVS_TEST_OUT="$out/gpu" python3 tests/gpu/test_torch_ops_gpu.py "$build/cli/kvscope" \
    ${KVS_TORCH_VARIANTS:-} >"$out/gpu.txt" 2>&1
part gpu_test $?
tail -3 "$out/gpu.txt"
echo "GPU test done at $(( $(date +%s) - t0 )) s" | tee -a "$out/parts.txt"
if [ "${KVS_TORCH_BENCH:-1}" != 0 ]; then
    KVS_BENCH_TORCHOPS=only KVS_BENCH_CYCLES=${KVS_BENCH_CYCLES:-2} KVS_BENCH_WHOLE=${KVS_BENCH_WHOLE:-6} \
        KVS_BENCH_ROUNDS=${KVS_BENCH_ROUNDS:-8} KVS_BENCH_CPUS=${KVS_BENCH_CPUS:-probe} \
        bench/capture_overhead.sh "$build" "$out/bench" >"$out/bench.txt" 2>&1
    part bench $?
    echo "bench done at $(( $(date +%s) - t0 )) s" | tee -a "$out/parts.txt"
fi
# the traces stay in OUT/gpu only when small: a device's OUT comes back whole
find "$out/gpu" -name '*.json.gz' -size +20M -delete 2>/dev/null
exit "$rc_all"
