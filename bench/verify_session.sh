#!/usr/bin/env bash
# bench/verify_session.sh BUILD_DIR OUT_DIR — one lent-GPU call that builds,
# runs the whole gpu test suite, the short kernel benchmarks, the engine's
# batch-1 rows (both contexts, eager and graph, captures and reports) and the
# end-to-end session (README main command on the GPU + examples 4 and 5),
# each stage time-boxed against one deadline so the call ends inside its
# limit and brings back whatever finished.
#
#   bench/verify_session.sh build-dev "$OUT"        # on the device machine
#
# Leaves five files in OUT_DIR (the device tool brings back at most 8):
#   log.txt      every stage's output, with elapsed seconds
#   testlog.txt  meson's gpu test log (seeds, per-case errors)
#   bench.tgz    bench_decode.md (ops, MLA phases), bench_kernels.md (mla)
#   engine.tgz   bench/engine.sh's directory without the traces (tables,
#                runs/*.log, reports), plus the PDL A/B runs (runs/nopdl_*)
#   e2e.tgz      examples/gpu_session.sh's directory (main/cuda/torch logs,
#                session.txt, session.tar.gz with the fresh engine traces)
# Programmatic dependent launch (kernels/src/pdl_impl.cuh) is on by default;
# if a gpu test fails with it and passes with KVS_PDL=0, the later stages run
# with KVS_PDL=0 and the log says so.
# Environment: BUDGET (seconds for the whole script, default 395).
set -uo pipefail
build=${1:?usage: bench/verify_session.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bench/verify_session.sh BUILD_DIR OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/log.txt
t0=$(date +%s)
deadline=$((t0 + ${BUDGET:-395}))
say() { printf '== [%4ss] %s\n' "$(($(date +%s) - t0))" "$*" | tee -a "$log"; }
# box CAP RESERVE: seconds for a stage, at most CAP, leaving RESERVE for the
# stages after it (at least 5)
box() {
    local l=$((deadline - $(date +%s) - $2))
    [ "$l" -gt "$1" ] && l=$1
    [ "$l" -lt 5 ] && l=5
    echo "$l"
}
finish() {
    rm -f "$out"/engine/trace_*.json.gz
    [ -d "$out/engine" ] && tar -C "$out" -czf "$out/engine.tgz" engine && rm -rf "$out/engine"
    [ -d "$out/e2e" ] && tar -C "$out" -czf "$out/e2e.tgz" e2e && rm -rf "$out/e2e"
    [ -d "$out/bench" ] && tar -C "$out" -czf "$out/bench.tgz" bench && rm -rf "$out/bench"
    say "done; in $out: $(ls "$out" | tr '\n' ' ')"
}
trap finish EXIT

say "GPU: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader 2>&1)"
say "tree: $(cat .commit 2>/dev/null || echo unknown)"

# 1. build
say "build ($build)"
[ -d "$build" ] || meson setup "$build" >>"$log" 2>&1
if ! timeout "$(box 170 200)" ninja -C "$build" -j16 >>"$log" 2>&1; then
    say "build FAILED"
    tail -40 "$log"
    exit 1
fi
say "build ok"

# 2. the whole gpu suite
say "gpu suite"
timeout "$(box 150 150)" meson test -C "$build" --suite gpu --print-errorlogs >"$out/suite.txt" 2>&1
say "gpu suite rc=$?"
cat "$out/suite.txt" >>"$log"
grep -E "^ *[0-9]+/[0-9]+ " "$out/suite.txt" | tee -a "$log"
cp "$build/meson-logs/testlog.txt" "$out/testlog.txt" 2>/dev/null
rm -f "$out/suite.txt"
failed_all=$(grep -E "^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT|ERROR)" "$log" | grep -oE 'test_[a-z0-9_]+' | sort -u | tr '\n' ' ')
[ -n "$failed_all" ] && say "failed: $failed_all"
# the tests that run the PDL-launched kernels: again without PDL
failed=$(tr ' ' '\n' <<<"$failed_all" | grep -E '^test_(kernels|engine)_' | tr '\n' ' ')
if [ -n "$failed" ]; then
    say "again with KVS_PDL=0: $failed"
    pdl_only=1
    for t in $failed; do
        if [ -x "$build/tests/$t" ]; then
            KVS_PDL=0 timeout "$(box 40 130)" "$build/tests/$t" >>"$log" 2>&1
            rc=$?
        else
            KVS_PDL=0 timeout "$(box 60 130)" meson test -C "$build" --suite gpu "$t" --print-errorlogs >>"$log" 2>&1
            rc=$?
        fi
        say "  $t with KVS_PDL=0: rc=$rc"
        [ "$rc" -eq 0 ] || pdl_only=0
    done
    if [ "$pdl_only" = 1 ]; then
        export KVS_PDL=0
        say "every failure passes with KVS_PDL=0: the rest runs with KVS_PDL=0"
    fi
fi

# 3. short kernel benchmarks
mkdir -p "$out/bench"
say "bench_decode ops mlaprof"
timeout "$(box 30 135)" "$build/kernels/bench_decode" ops mlaprof >"$out/bench/bench_decode.md" 2>&1
say "bench_decode rc=$?"
say "bench_kernels mla"
timeout "$(box 45 125)" "$build/kernels/bench_kernels" mla >"$out/bench/bench_kernels.md" 2>&1
say "bench_kernels rc=$?"

# 4. the engine, batch 1 (then the same fp8-direct rows with PDL off, for A/B)
say "engine benchmark"
STEPS=4 BATCHES=1 CONTEXTS="4096 32768" timeout "$(box 130 60)" \
    bench/engine.sh "$build" "$out/engine" >>"$log" 2>&1
say "engine rc=$?"
cat "$out/engine/engine_bench.txt" 2>/dev/null | tee -a "$log"
if [ "${KVS_PDL:-1}" != 0 ] && [ -f "$out/engine/engine_bench.txt" ]; then
    copy=$(sed -n 's/.*copy_gbps=\([0-9.]*\).*/\1/p' "$out"/engine/runs/fp8-direct_b1_c4096_g0.log | tail -1)
    for g in 0 1; do
        gflag=(); [ "$g" = 1 ] && gflag=(--graph)
        KVS_PDL=0 timeout "$(box 25 55)" "$build/cli/kvscope" engine --config glm5 --kv-path fp8-direct \
            --batch 1 --context 4096 --steps 4 --warmup 2 ${copy:+--copy-gbps "$copy"} "${gflag[@]}" \
            >"$out/engine/runs/nopdl_fp8-direct_b1_c4096_g$g.log" 2>&1
        say "KVS_PDL=0 fp8-direct b1 4K graph=$g: $(grep '^result:' "$out/engine/runs/nopdl_fp8-direct_b1_c4096_g$g.log" | sed 's/.*step_ms=\([^ ]*\).*/step_ms=\1/')"
    done
fi

# 5. end to end
say "examples/gpu_session.sh"
timeout "$(box 150 3)" examples/gpu_session.sh "$out/e2e" "$build" >>"$log" 2>&1
say "gpu_session rc=$?"
tail -n 4 "$out"/e2e/*.log 2>/dev/null | tee -a "$log" >/dev/null
