#!/bin/bash
# tests/gpu/capture_detach_device.sh OUT — the GPU checks of the capture's
# detach between cudaProfilerStart windows (docs/capture.md, "Detached
# between windows") in one call, on a machine with a GPU (python3 with
# torch for the bench part):
#
#   1. builds what they need into a fresh /tmp folder (meson setup, then
#      kvscope, the injection library, cupti_idle, capture_overhead,
#      capture_target, test_capture);
#   2. the capture's gpu tests (test_capture, test_capture_inject — its
#      detach cases with KVS_CAPTURE_DETACH=1 — test_capture_default,
#      test_cli_capture) with KVS_KEEP_TRACE=1, and every kept trace's
#      records, dropped records, denied buffers and kernels_without_call;
#   3. the detach cases by hand: capture_target windows and graphs with
#      their windows 300 ms apart, KVS_CAPTURE_DETACH=1 with and without
#      KVS_CAPTURE_NVTX_REINIT=1, and =thread (what each trace holds);
#   4. cupti_idle --state reattach-cs, reattach-own, reattach-own-busy (does
#      a CUPTI attached again record, does it number correlation ids again:
#      RECORDS and CORR lines; how long the steps took: DETACH lines);
#   5. bench/capture_idle.sh's detach kinds (IDLE=0: not);
#   6. bench/capture_overhead.sh with KVS_CAPTURE_DETACH=1 (DETACH=0: off)
#      for the window-closed and default rows against bare, within BUDGET
#      seconds of the script's start (default 555), unless NOBENCH=1 or a
#      test failed (FORCE_BENCH=1: anyway). KINDS (the PyTorch kinds, default
#      torch kvs_default kvs_gpuonly kvs_closed), R rounds (8), C cycles (2),
#      BC=0 (no C program), CPUS (KVS_BENCH_CPUS, default none).
#
# Everything goes into OUT/all.tgz (steps.txt beside it says how long each
# part took), which the device tool can bring back as one file.
#   tests/gpu/capture_detach_device.sh "$OUT"
set -u
R0=${1:?usage: tests/gpu/capture_detach_device.sh OUT}
mkdir -p "$R0"
O=/tmp/capw; rm -rf "$O"; mkdir -p "$O"
trap 'cp "$O/steps.txt" "$R0/" 2>/dev/null; tar czf "$R0/all.tgz" -C "$O" . 2>/dev/null' EXIT
cd "$(dirname "$0")/../.." || exit 1
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
T0=$(date +%s)
stamp() { echo "== $(( $(date +%s) - T0 )) s: $*" | tee -a "$O/steps.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$O/dev.txt"
B=/tmp/bcapdet-$RANDOM
stamp setup
meson setup "$B" . -Dcuda=enabled -Dshared_traces=/tmp/none >"$O/build.log" 2>&1 || { tail -30 "$O/build.log"; exit 1; }
ninja -C "$B" cli/kvscope libtrace/libkvscope-inject.so libtrace/cupti_idle libtrace/capture_overhead \
    tests/capture_target tests/test_capture >>"$O/build.log" 2>&1 || { grep -B2 -A10 "error" "$O/build.log" | head -60; exit 1; }
stamp built
rm -rf /tmp/kvs_inject.* /tmp/kvs_default.* /tmp/kvs_gpu_* 2>/dev/null
KVS_KEEP_TRACE=1 timeout 300 meson test -C "$B" --no-rebuild --print-errorlogs test_capture test_capture_inject \
    test_capture_default test_cli_capture >"$O/tests.log" 2>&1
trc=$?
grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"
grep -hE "^(ok|FAIL|  )" "$B/meson-logs/testlog.txt" | grep -E "FAIL|assert|detach|100 ms|DETACH" | head -40
cp "$B/meson-logs/testlog.txt" "$O/testlog.txt"
stamp "tests rc=$trc"
# every kept trace: what its kvscope object says about losses
python3 - <<'PY' | tee "$O/traces.txt"
import glob, gzip, json, os
for f in sorted(glob.glob("/tmp/kvs_inject.*/*.json*") + glob.glob("/tmp/kvs_default.*/*.json*") +
                glob.glob("/tmp/kvs_gpu_*.json*")):
    try:
        op = gzip.open if f.endswith(".gz") else open
        d = json.load(op(f, "rt"))
        k = d.get("kvscope") or {}
        print("%s window=%s records=%s dropped=%s denied=%s kernels_without_call=%s kernels=%d" % (
            f, k.get("window"), k.get("records"), k.get("dropped_records"), k.get("buffer_requests_denied"),
            k.get("kernels_without_call"), sum(1 for e in d.get("traceEvents", []) if e.get("cat") == "kernel")))
    except Exception as e:
        print("%s unreadable: %s" % (f, e))
PY
# the detach cases by hand, NVTX handed to CUPTI again after the attach or not
for m in windows graphs; do for nr in 0 1 thread; do
    f=$O/det-$m-$nr.json
    dm=1; [ $nr = thread ] && dm=thread
    KVS_TARGET_GAP_MS=300 KVS_CAPTURE_LOG=debug KVS_CAPTURE_NVTX_REINIT=$nr KVS_CAPTURE_DETACH=$dm timeout 60 "$B/cli/kvscope" capture \
        --window cudaProfilerStart -o "$f" -- "$B/tests/capture_target" $m 2>"$O/det-$m-$nr.err"
    echo "== $m reinit=$nr rc=$? $(grep -c 'detached between' "$O/det-$m-$nr.err") detach lines; $(grep -E 'warning|error|NVTX handed|opened while' "$O/det-$m-$nr.err" | tr '\n' '|')"
    python3 tests/check_trace.py "$f" 2>"$f.problems" | python3 -c '
import json, sys
try:
    s = json.load(sys.stdin)
except Exception as e:
    print("  check_trace failed", e); sys.exit()
kern = [k for k in s["kernels"] if "busy" in k["name"]]
ua = [u["name"] for u in s["user_annotations"]]; ga = [g["name"] for g in s["gpu_user_annotations"]]
k = s["kvscope"] or {}
print("  kernels", len(kern), "graph_node>0", sum(1 for x in kern if x.get("graph_node", 0) > 0),
      "ua", sorted(set(ua)), "layer ua/ga", ua.count("layer"), ga.count("layer"),
      "dropped", k.get("dropped_records"), "kwc", k.get("kernels_without_call"),
      "corr", sorted(x["correlation"] for x in kern)[:3], "...", sorted(x["correlation"] for x in kern)[-3:],
      "one call each", all(sum(a["correlation"] == x["correlation"] for a in s["apis"]) == 1 for x in kern))'
    [ -s "$f.problems" ] && sed "s/^/  check_trace: /" "$f.problems"
done; done 2>&1 | tee "$O/detcases.txt"
stamp detcases
for st in reattach-cs reattach-own reattach-own-busy reattach-cs reattach-own-busy; do
    timeout 60 "$B/libtrace/cupti_idle" --state $st --rounds 3 --label $st | grep -v '^RESULT'
    echo "rc=$? state=$st"
done 2>&1 | tee "$O/reattach.txt"
stamp reattach
[ "${IDLE:-1}" = 1 ] && KVS_IDLE_STATES="after-def detached reattach-cs reattach-own-busy" KVS_IDLE_CYCLES=2 KVS_IDLE_ROUNDS=5 \
    KVS_IDLE_TORCH=0 timeout 100 bench/capture_idle.sh "$B" "$O/idle" >"$O/idle.log" 2>&1
tail -25 "$O/idle/table.md"
stamp idle
[ "${NOBENCH:-0}" = 1 ] && { stamp "no bench asked"; exit $trc; }
if [ $trc != 0 ] && [ "${FORCE_BENCH:-0}" != 1 ]; then echo "tests failed: no bench"; exit 1; fi
KVS_CAPTURE_DETACH=${DETACH:-1} KVS_BENCH_PY_KINDS=${KINDS:-torch kvs_default kvs_gpuonly kvs_closed} KVS_BENCH_C=${BC:-1} \
KVS_BENCH_ROUNDS=${R:-8} KVS_BENCH_CYCLES=${C:-2} KVS_BENCH_WHOLE=0 KVS_BENCH_WORKLOADS=launch,decode \
    KVS_BENCH_SETTLE_MS=60 KVS_BENCH_CONTEXTS=3 KVS_BENCH_CPUS=${CPUS:-none} \
    timeout $(( ${BUDGET:-555} - ($(date +%s) - T0) )) bench/capture_overhead.sh "$B" "$O/bench" >"$O/bench.log" 2>&1
echo "bench rc=$?"
sed -n '/targets/,/overall/p' "$O/bench/table.md"
stamp done
