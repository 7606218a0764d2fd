#!/usr/bin/env bash
# bench/perf_session.sh BUILD_DIR OUT_DIR — one call's worth of GPU work for the
# kernels and the engine: build, the gpu tests, the engine benchmark (batch 1,
# context 4K, full-cast and fp8-direct) and the kernel benchmarks, each stage
# time-boxed and logged as it goes, so that a lent GPU with a hard time limit
# brings back whatever finished. Tables go to stdout and to OUT_DIR:
#   log.txt            everything, in order
#   testlog.txt        meson's test log (per-test output, seeds, errors)
#   engine.tgz         bench/engine.sh's directory (tables, runs, reports)
#   bench_decode.md    small ops, GEMV vs cuBLAS, MLA phases (bench_decode)
#   bench_kernels.md   cast, MLA (bench_kernels cast mla)
#
#   bench/perf_session.sh build-dev "$OUT"          # on the device machine
# Environment: KVS_GPU_TESTS (default: the kernels' and engine's gpu tests),
# KVS_BENCH_KERNELS (sections, default "cast mla"), T_BUILD T_TESTS T_ENGINE
# T_DECODE T_KERNELS (seconds per stage).
set -uo pipefail
build=${1:?usage: bench/perf_session.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bench/perf_session.sh BUILD_DIR OUT_DIR}
mkdir -p "$out"
log=$out/log.txt
tests=${KVS_GPU_TESTS:-"test_kernels_cast test_kernels_mla test_kernels_ops test_kernels_engine_ops test_engine_gpu"}
sections=${KVS_BENCH_KERNELS:-"cast mla"}
t0=$(date +%s)
say() { printf '== [%4ss] %s\n' "$(($(date +%s) - t0))" "$*" | tee -a "$log"; }

say "GPU: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader 2>&1)"
say "build ($build)"
[ -d "$build" ] || meson setup "$build" >>"$log" 2>&1
if ! timeout "${T_BUILD:-150}" ninja -C "$build" >>"$log" 2>&1; then
    say "build FAILED"; tail -40 "$log"; exit 1
fi

say "gpu tests: $tests"
# shellcheck disable=SC2086
timeout "${T_TESTS:-150}" meson test -C "$build" --suite gpu $tests --print-errorlogs \
    >>"$log" 2>&1
say "gpu tests rc=$?"
grep -E "^ *[0-9]+/[0-9]+ .*(OK|FAIL|SKIP|TIMEOUT|ERROR)" "$log" | tail -10
cp "$build/meson-logs/testlog.txt" "$out/testlog.txt" 2>/dev/null
grep -E "check failed" "$out/testlog.txt" 2>/dev/null | head -20 | tee -a "$log"

say "engine benchmark"
eng=$(mktemp -d)
STEPS=${STEPS:-4} BATCHES=${BATCHES:-1} CONTEXTS=${CONTEXTS:-4096} \
    PATHS=${PATHS:-"full-cast fp8-direct"} \
    timeout "${T_ENGINE:-120}" bench/engine.sh "$build" "$eng/engine" 2>&1 | tee -a "$log"
say "engine rc=${PIPESTATUS[0]}"
rm -f "$eng"/engine/trace_*.json.gz # large; the reports stay
tar -C "$eng" -czf "$out/engine.tgz" engine 2>/dev/null

say "bench_decode"
timeout "${T_DECODE:-60}" "$build/kernels/bench_decode" 2>&1 | tee "$out/bench_decode.md" >>"$log"
say "bench_decode rc=${PIPESTATUS[0]}"

say "bench_kernels $sections"
# shellcheck disable=SC2086
timeout "${T_KERNELS:-90}" "$build/kernels/bench_kernels" $sections 2>&1 |
    tee "$out/bench_kernels.md" >>"$log"
say "bench_kernels rc=${PIPESTATUS[0]}"
say "done"
