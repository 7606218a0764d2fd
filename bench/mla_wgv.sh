#!/usr/bin/env bash
# bench/mla_wgv.sh OUT_DIR — one device call for the FP8 wgmma MLA kernel's
# variants (KVS_MLA_WGV, docs/kernels.md "MLA decode"), ~300 s on one H200:
#
#   cd .wt/mla && timeout 490 bash bench/mla_wgv.sh "$OUT"
#
# Builds this tree from a fresh folder under /tmp (the kernels, their gpu
# tests, bench_kernels, bench_decode), runs test_kernels_wgmma (the e4m3
# product's layout) and test_kernels_mla_wgv (every FP8 case through each
# variant, against one CPU reference); a failure is logged and the timing
# runs anyway (a variant lands only if its tests pass; the timing of one that
# fails goes to "Tried and measured"; mlawgv times no variant whose output
# fails its own check against BF16): `bench_kernels mlawgv` twice per group (every variant in turn in one process:
# B1 x 32K, B1 x 128K, B8 x 128K, B64 x 16K, B64 x 128K; checked against BF16
# first), one ncu of the B64 x 32K decode (the steady state of B64 x 128K in
# a quarter of the memory ncu saves and restores) per variant of WGVS_NCU,
# `bench_decode mlaprof` once per variant of WGVS_PROF (phase stamps, batch
# 1..8), and per-kernel SASS instruction counts. Every step under its own
# timeout; each step's exit code in steps.log; everything under OUT_DIR.
# Without a usable GPU it stops after the build with exit 77 (as the gpu
# tests do).
# Environment: WGVS (default 0,4,16: the exact variants) and WGVS2
# (0,1,5,8,12,24: S on FP8 tensor cores), each group tested and timed in its own
# processes; WGVS_PROF (0,1,4,8,12), WGVS_NCU (0,1,4,8), MLA_WGV_JOBS (16).
set -u
out=${1:?usage: bench/mla_wgv.sh OUT_DIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
WGVS=${WGVS:-0,4,16}
WGVS2=${WGVS2:-0,1,5,8,12,24}
WGVS_PROF=${WGVS_PROF:-0,1,4,8,12}
WGVS_NCU=${WGVS_NCU:-0,1,4,8}
jobs=${MLA_WGV_JOBS:-16}
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
log() { echo "[$((SECONDS - T0))s] $*" | tee -a "$out/steps.log" >&2; }
B=/tmp/mla_wgv_build
# MLA_WGV_REUSE=1: B was built just before by the same call (e.g. beside other
# work on the other CPUs); ninja then only checks it
[ "${MLA_WGV_REUSE:-0}" = 1 ] && [ -f "$B/build.ninja" ] || rm -rf "$B"

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$out/gpu.txt" 2>&1
log "tree $(pwd), kernels/cuda md5 $(cat kernels/cuda/* | md5sum | cut -c1-12)"
[ -f "$B/build.ninja" ] || timeout 60 meson setup "$B" >"$out/setup.log" 2>&1
log "setup rc=$?"
timeout 200 ninja -C "$B" -j"$jobs" kernels/bench_kernels kernels/bench_decode \
    tests/test_kernels_mla tests/test_kernels_wgmma >"$out/build.log" 2>&1
rc=$?
log "build rc=$rc"
[ $rc -eq 0 ] || { tail -40 "$out/build.log"; exit 1; }

# SASS instruction classes per wgmma kernel (the object holds each variant)
timeout 30 cuobjdump -sass "$B/kernels/mla_wgmma_sm90a.o" 2>/dev/null | python3 -c '
import collections, re, sys
name, c = None, collections.Counter()
def emit():
    if name:
        keys = ["HGMMA", "QGMMA", "PRMT", "F2FP", "LOP3", "SHF", "IMAD", "IADD3", "FADD", "FMUL",
                "FFMA", "MUFU", "LDS", "STS", "LDSM", "LDGSTS", "BAR", "STL", "LDL", "WARPGROUP"]
        print(name[-40:], "total", sum(c.values()), " ".join(f"{k} {c[k]}" for k in keys))
for line in sys.stdin:
    m = re.search(r"Function : (\S+)", line)
    if m:
        emit(); name, c = m.group(1), collections.Counter(); continue
    m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(?:@!?U?P\w+\s+)?([A-Z0-9_]+)", line)
    if m and name:
        c[m.group(1).split(".")[0]] += 1
emit()
' >"$out/sass_counts.txt" 2>&1
log "sass counts rc=$?"

timeout 60 "$B/tests/test_kernels_wgmma" >"$out/test_wgmma.log" 2>&1
rc1=$?
log "test_kernels_wgmma rc=$rc1"
if [ $rc1 -eq 77 ]; then # the gpu tests' skip: no usable GPU here
    tail -3 "$out/test_wgmma.log"
    log "no usable GPU: built and stopped (exit 77)"
    exit 77
fi
# two groups of variants, each in its own process (a fault in one cannot
# take the other's results with it): the exact ones, then the FP8-S ones
rc2=0
for grp in $WGVS $WGVS2; do
    KVS_MLA_HG=64 KVS_MLA_WG=1 KVS_TEST_MLA_WGVS=$grp timeout 150 "$B/tests/test_kernels_mla" \
        >>"$out/test_mla_wgv.log" 2>&1
    r=$?
    [ $r -eq 0 ] || rc2=$r
    log "test_kernels_mla (KVS_TEST_MLA_WGVS=$grp) rc=$r"
done
if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
    tail -30 "$out/test_wgmma.log" "$out/test_mla_wgv.log"
    log "a test failed: the benches run anyway, each variant checked against BF16 before it is timed"
fi

for rep in 1 2; do
    for grp in $WGVS $WGVS2; do
        echo "### group $grp" >>"$out/bench_wgv_$rep.log"
        KVS_BENCH_WGV=$grp timeout 90 "$B/kernels/bench_kernels" mlawgv >>"$out/bench_wgv_$rep.log" 2>&1
        log "bench_kernels mlawgv rep $rep ($grp) rc=$?"
    done
done

for v in ${WGVS_NCU//,/ }; do
    KVS_MLA_WGV=$v timeout 60 ncu --clock-control none -k regex:mla_decode_kernel --launch-skip 2 \
        --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
        --section WarpStateStats --section SchedulerStats --section InstructionStats \
        --section MemoryWorkloadAnalysis \
        --metrics "regex:sm__inst_executed_pipe_.*\.sum$,regex:sm__pipe_.*cycles_active\.avg\.pct_of_peak_sustained_active$" \
        "$B/kernels/bench_kernels" mla32k 64 32768 >"$out/ncu_wgv$v.txt" 2>&1
    log "ncu wgv $v rc=$?"
done

for v in ${WGVS_PROF//,/ }; do
    echo "### mlaprof KVS_MLA_WGV=$v" >>"$out/mlaprof.log"
    KVS_MLA_WGV=$v timeout 40 "$B/kernels/bench_decode" mlaprof >>"$out/mlaprof.log" 2>&1
    log "mlaprof wgv $v rc=$?"
done

cat "$out/steps.log"
echo "--- test summary"
tail -5 "$out/test_wgmma.log"
python3 - "$out/test_mla_wgv.log" <<'PY'
import re, sys
worst = {}
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"fp8 +wgv(\d+) vs cpu: max normalized error (\S+), lse (\S+)", line)
    if m:
        v, e, l = int(m.group(1)), float(m.group(2)), float(m.group(3))
        w = worst.setdefault(v, [0.0, 0.0, 0])
        w[0], w[1], w[2] = max(w[0], e), max(w[1], l), w[2] + 1
for v, (e, l, n) in sorted(worst.items()):
    print(f"wgv{v}: {n} FP8 cases, max normalized error {e:.3g}, max lse error {l:.3g} (relative)")
PY
grep -E "FAIL|failed" "$out/test_mla_wgv.log" | head -10
echo "--- bench"
grep -E "^\| (1|8|64) \|" "$out/bench_wgv_1.log" "$out/bench_wgv_2.log"
echo "--- sass"
cat "$out/sass_counts.txt"
