#!/usr/bin/env bash
# bench/mla_ws.sh OUT_DIR — one device call for the warp-specialized FP8 MLA
# kernel (KVS_MLA_WGV=32, kernels/cuda/mla_ws.cuh) against the landed wgmma
# kernel (variant 0), ~200-300 s on one H100/H200:
#
#   cd .wt/mla && timeout 560 bash bench/mla_ws.sh "$OUT"
#
# Builds this tree in a fresh folder under /tmp (the wgmma/MLA gpu tests,
# bench_kernels, bench_decode; the engine and its gpu tests with MLA_WS_ENGINE=1),
# runs test_kernels_mla with every FP8 case through variants 0 and 32
# (KVS_TEST_MLA_WGVS=0,32: each against the CPU reference, 32 against 0),
# then `bench_kernels mlawgv` (0 and 32 in turn in one process, each
# checked against BF16 first) MLA_WS_REPS times, and with MLA_WS_NCU=1 one
# ncu of the B64 x 32K decode per variant (dram__throughput, the tensor
# pipe, warp stall reasons). A failed test is logged and the timing runs
# anyway (a variant lands only if its tests pass). Every step under its own
# timeout, its exit code in steps.log; everything under OUT_DIR. Without a
# usable GPU it stops after the build with exit 77.
# Environment: MLA_WS_VARS (default 0,32), MLA_WS_REPS (2), MLA_WS_NCU (0),
# MLA_WS_ENGINE (0), MLA_WS_JOBS (16), MLA_WS_TESTS (1; 0 skips the tests).
set -u
out=${1:?usage: bench/mla_ws.sh OUT_DIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
VARS=${MLA_WS_VARS:-0,32}
REPS=${MLA_WS_REPS:-2}
jobs=${MLA_WS_JOBS:-16}
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
log() { echo "[$((SECONDS - T0))s] $*" | tee -a "$out/steps.log" >&2; }
B=/tmp/mla_ws_build_$$
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$out/gpu.txt" 2>&1
log "tree $(pwd), kernels/cuda md5 $(cat kernels/cuda/* | md5sum | cut -c1-12), $(head -2 "$out/gpu.txt" | tail -1)"
timeout 90 meson setup "$B" -Dshared_traces=/tmp/mla_ws_no_traces >"$out/setup.log" 2>&1
log "setup rc=$?"
T="kernels/bench_kernels kernels/bench_decode tests/test_kernels_mla tests/test_kernels_wgmma"
[ "${MLA_WS_ENGINE:-0}" = 1 ] && T="$T cli/kvscope tests/test_engine_gpu tests/test_kernels_engine_ops"
# shellcheck disable=SC2086
timeout 240 ninja -C "$B" -j"$jobs" $T >"$out/build.log" 2>&1
rc=$?
log "build rc=$rc"
[ $rc -eq 0 ] || { tail -40 "$out/build.log"; exit 1; }
grep -A3 "mla_ws_kernel" "$out/build.log" | grep -E "spill|Used|C7512" >"$out/ptxas.txt" 2>/dev/null

timeout 60 "$B/tests/test_kernels_wgmma" >"$out/test_wgmma.log" 2>&1
rc=$?
log "test_kernels_wgmma rc=$rc"
[ $rc -eq 77 ] && { tail -3 "$out/test_wgmma.log"; log "no usable GPU: stopped (77)"; exit 77; }
if [ "${MLA_WS_TESTS:-1}" = 1 ]; then
    KVS_MLA_HG=64 KVS_MLA_WG=1 KVS_TEST_MLA_WGVS=$VARS timeout 100 "$B/tests/test_kernels_mla" \
        >"$out/test_mla_ws.log" 2>&1
    rc=$?
    log "test_kernels_mla (KVS_TEST_MLA_WGVS=$VARS) rc=$rc"
    grep -E "FAIL|failed|wgv" "$out/test_mla_ws.log" | tail -40
    # a hang (timeout) would only repeat in the benches
    [ $rc -eq 124 ] && { tail -20 "$out/test_mla_ws.log"; log "test timed out: stopped"; exit 1; }
fi
if [ "${MLA_WS_ENGINE:-0}" = 1 ]; then
    for tst in test_engine_gpu test_kernels_engine_ops; do
        # forced onto the 64-head wgmma kernel: at the engine's sizes the
        # planner would pick 32-head blocks, which have no variants
        KVS_MLA_HG=64 KVS_MLA_WG=1 KVS_MLA_WGV=32 timeout 150 "$B/tests/$tst" >"$out/$tst.log" 2>&1
        log "$tst (KVS_MLA_HG=64 KVS_MLA_WG=1 KVS_MLA_WGV=32) rc=$?"
    done
fi
for rep in $(seq "$REPS"); do
    KVS_BENCH_WGV=$VARS timeout 120 "$B/kernels/bench_kernels" mlawgv >>"$out/bench_ws.log" 2>&1
    log "bench_kernels mlawgv rep $rep rc=$?"
done
grep -E "^\| (1|8|64) \|" "$out/bench_ws.log"
if [ "${MLA_WS_NCU:-0}" = 1 ]; then
    for v in ${VARS//,/ }; do
        KVS_MLA_WGV=$v KVS_MLA_WG=1 timeout 90 ncu --clock-control none -k regex:"mla_(decode|ws)_kernel" \
            --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
            --section SchedulerStats --section LaunchStats --section Occupancy \
            --metrics "dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active" \
            "$B/kernels/bench_kernels" mla32k 64 32768 >"$out/ncu_v$v.txt" 2>&1
        log "ncu v$v rc=$?"
    done
fi
log "end"
