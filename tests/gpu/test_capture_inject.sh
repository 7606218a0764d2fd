#!/bin/sh
# tests/gpu/test_capture_inject.sh KVSCOPE CAPTURE_TARGET — `kvscope capture`
# on an unmodified CUDA program (tests/gpu/capture_target.cu): the trace is
# complete and valid when the program returns from main, when it calls
# exit(), when the launcher is sent SIGTERM mid-run, and with
# --window cudaProfilerStart it holds only the window, and a graph captured
# before that window keeps its ranges in the replays, also when replayed in
# a second window. Checked with Python's
# json (tests/check_trace.py). Exits 77 without a GPU.
#   meson test -C build --suite gpu test_capture_inject
set -u
kvs=$1
target=$2
root=${KVS_SOURCE_ROOT:-$(dirname "$0")/../..}
check="$root/tests/check_trace.py"
"$target" probe || { echo "skip: no usable GPU"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 needed to check traces"; exit 77; }
tmp=$(mktemp -d /tmp/kvs_inject.XXXXXX)
keep=${KVS_KEEP_TRACE:-}
trap '[ -n "$keep" ] || rm -rf "$tmp"' EXIT
fail=0

# expect NAME TRACE PYTHON-ASSERTIONS: check_trace.py passes, then the
# assertions hold on its summary `s`
expect() {
    name=$1 trace=$2 asserts=$3
    if [ ! -s "$trace" ]; then
        echo "FAIL $name: no trace at $trace"; fail=1; return
    fi
    if ! python3 "$check" "$trace" >"$tmp/sum.json"; then
        echo "FAIL $name: check_trace.py rejected the trace"; fail=1; return
    fi
    if python3 - "$tmp/sum.json" "$asserts" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
cats = s["categories"]
kern = [k for k in s["kernels"] if "busy" in k["name"]]
ua = [u["name"] for u in s["user_annotations"]]
ga = [g["name"] for g in s["gpu_user_annotations"]]
ok = True
for line in sys.argv[2].strip().splitlines():
    line = line.strip()
    if line and not eval(line):
        print("  assertion failed: " + line)
        print("  kernels=%d cats=%s ranges=%s gpu_ranges=%s" % (len(kern), cats, sorted(set(ua)), sorted(set(ga))))
        ok = False
sys.exit(0 if ok else 1)
PY
    then echo "ok   $name"; else echo "FAIL $name"; fail=1; fi
}

# 1. returns from main
"$kvs" capture -o "$tmp/run.json.gz" -- "$target" run
rc=$?
[ $rc -eq 0 ] || { echo "FAIL run: exit $rc"; fail=1; }
expect "return from main" "$tmp/run.json.gz" '
len(kern) == 24
cats.get("gpu_memcpy") == 4 and cats.get("gpu_memset") == 4
all(k["dur_ns"] >= 49000 for k in kern)
sorted(set(ua)) == ["layer", "step_0", "step_1", "step_2", "step_3"]
ua.count("layer") == 8
ga.count("step_0") == 2 and ga.count("layer") == 8
s["kvscope"]["dropped_records"] == 0 and s["kvscope"]["window"] == "all"
cats.get("cuda_runtime", 0) + cats.get("cuda_driver", 0) >= 24 + 8
s["flows"] >= 32
s["deviceProperties"] and s["deviceProperties"][0]["numSms"] > 0
'

# ... and `kvscope report` reads it: the device, the copies as a group
if "$kvs" report --quiet --format json -o "$tmp/run.report.json" "$tmp/run.json.gz"; then
    python3 - "$tmp/run.report.json" <<'PY' && echo "ok   kvscope report reads it" || { echo "FAIL kvscope report"; fail=1; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["trace"]["device"], r["trace"]  # deviceProperties were written
g = [x for x in r["groups"] if x["op"].startswith("Memcpy DtoD")]
# a 16 MiB device-to-device copy: bytes_per_call counts bytes read + written
assert g and g[0]["calls"] == 4 and g[0]["bytes_per_call"] == 2 * (16 << 20), r["groups"]
assert r["steps"]["count"] == 4, r["steps"]
PY
else
    echo "FAIL kvscope report exited non-zero"; fail=1
fi

# 2. exit() from inside a function
"$kvs" capture -o "$tmp/exit.json" -- "$target" exit
expect "exit()" "$tmp/exit.json" '
len(kern) == 24
'

# 3. SIGTERM to the launcher while the program loops
"$kvs" capture -o "$tmp/term.json" -- "$target" loop >"$tmp/loop.out" &
pid=$!
i=0
while ! grep -q ready "$tmp/loop.out" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] || { echo "FAIL sigterm: launcher exit $rc, wanted 143 (128+SIGTERM)"; fail=1; }
expect "SIGTERM mid-run" "$tmp/term.json" '
len(kern) >= 12
"step_0" in ua and "step_1" in ua
'

# 4. only the cudaProfilerStart/Stop window
"$kvs" capture --window cudaProfilerStart -o "$tmp/win.json" -- "$target" window
expect "--window cudaProfilerStart" "$tmp/win.json" '
len(kern) == 12
sorted(set(r for r in ua if r.startswith("step"))) == ["step_2", "step_3"]
s["kvscope"]["window"] == "cudaProfilerStart"
'

# 5. a CUDA graph captured before the window and replayed inside it: each
#    replayed kernel says its graph node, and the "layer" ranges it was
#    captured under (recorded while the capture was open, outside the
#    window) are drawn over it once per replay
"$kvs" capture --window cudaProfilerStart -o "$tmp/graph.json" -- "$target" graph
expect "graph captured before the window" "$tmp/graph.json" '
len(kern) == 18
all(k.get("graph_node", 0) > 0 for k in kern)
sorted(set(r for r in ua if r.startswith("step"))) == ["step_0", "step_1", "step_2"]
ua.count("layer") == 2
ga.count("layer") == 6 and ga.count("step_1") == 1
'

# 6. two windows: both windows' kernels, copies, ranges and their
#    projections are there, none of the steps outside; every kernel is tied
#    to one launch call of its own window (one correlation id each)
"$kvs" capture --window cudaProfilerStart -o "$tmp/wins.json" -- "$target" windows
expect "two cudaProfilerStart windows" "$tmp/wins.json" '
len(kern) == 12 and all(k["name"].startswith("busy") for k in kern)
cats.get("gpu_memcpy") == 2 and cats.get("gpu_memset") == 2
sorted(set(r for r in ua if r.startswith("step"))) == ["step_1", "step_3"]
ua.count("layer") == 4 and ga.count("layer") == 4 and ga.count("step_3") == 2
s["kvscope"]["dropped_records"] == 0 and s["kvscope"]["kernels_without_call"] == 0
all(sum(a["correlation"] == k["correlation"] for a in s["apis"]) == 1 for k in kern)
all(0 <= k["ts_ns"] - [a for a in s["apis"] if a["correlation"] == k["correlation"]][0]["ts_ns"] < 50000000 for k in kern)
'

# 7. a graph captured before the first of two windows, replayed in both:
#    the replays of the second still find their nodes
"$kvs" capture --window cudaProfilerStart -o "$tmp/graphs.json" -- "$target" graphs
expect "graph replayed in two windows" "$tmp/graphs.json" '
len(kern) == 18
all(k.get("graph_node", 0) > 0 for k in kern)
sorted(set(r for r in ua if r.startswith("step"))) == ["step_0", "step_1", "step_2"]
ga.count("layer") == 6 and ga.count("step_2") == 1
s["kvscope"]["dropped_records"] == 0 and s["kvscope"]["kernels_without_call"] == 0
'

# 7b. the same two programs with their windows 300 ms apart (kernels
#    launched meanwhile), KVS_CAPTURE_DETACH=1: kvscope detaches CUPTI
#    between the windows (its
#    debug log says so) and attaches it again for the second, and nothing
#    of either window is lost: every kernel finds its own launch call
#    although CUPTI numbers correlation ids again (the writer renumbers);
#    without it (the default for now) CUPTI stays attached
for m in windows graphs; do
    KVS_TARGET_GAP_MS=300 KVS_CAPTURE_DETACH=1 KVS_CAPTURE_LOG=debug "$kvs" capture --window cudaProfilerStart \
        -o "$tmp/det-$m.json" -- "$target" $m 2>"$tmp/det-$m.err"
    if grep -q "CUPTI detached between windows" "$tmp/det-$m.err"; then
        echo "ok   $m 300 ms apart: CUPTI detached between the windows"
    else
        echo "FAIL $m 300 ms apart: no detach between the windows"; tail -20 "$tmp/det-$m.err"; fail=1
    fi
    if grep -q "warning: \|error: " "$tmp/det-$m.err"; then
        echo "FAIL $m 300 ms apart: the capture warned"; grep "warning: \|error: " "$tmp/det-$m.err"; fail=1
    fi
done
expect "two windows 300 ms apart, detached between" "$tmp/det-windows.json" '
len(kern) == 12 and all(k["name"].startswith("busy") for k in kern)
cats.get("gpu_memcpy") == 2 and cats.get("gpu_memset") == 2
sorted(set(r for r in ua if r.startswith("step"))) == ["step_1", "step_3"]
ua.count("layer") == 4 and ga.count("layer") == 4 and ga.count("step_3") == 2
s["kvscope"]["dropped_records"] == 0 and s["kvscope"]["kernels_without_call"] == 0
all(sum(a["correlation"] == k["correlation"] for a in s["apis"]) == 1 for k in kern)
all(0 <= k["ts_ns"] - [a for a in s["apis"] if a["correlation"] == k["correlation"]][0]["ts_ns"] < 50000000 for k in kern)
'
expect "graph replayed in two windows 300 ms apart, detached between" "$tmp/det-graphs.json" '
len(kern) == 18
all(k.get("graph_node", 0) > 0 for k in kern)
sorted(set(r for r in ua if r.startswith("step"))) == ["step_0", "step_1", "step_2"]
ga.count("layer") == 6 and ga.count("step_2") == 1
s["kvscope"]["dropped_records"] == 0 and s["kvscope"]["kernels_without_call"] == 0
'
KVS_TARGET_GAP_MS=300 KVS_CAPTURE_LOG=debug "$kvs" capture \
    --window cudaProfilerStart -o "$tmp/nodet.json" -- "$target" windows 2>"$tmp/nodet.err"
if grep -q "CUPTI detached" "$tmp/nodet.err"; then
    echo "FAIL no KVS_CAPTURE_DETACH: CUPTI was detached"; fail=1
else
    echo "ok   no KVS_CAPTURE_DETACH: CUPTI stays attached"
fi
expect "two windows 300 ms apart, attached between" "$tmp/nodet.json" '
len(kern) == 12
s["kvscope"]["dropped_records"] == 0 and s["kvscope"]["kernels_without_call"] == 0
'

# 8. a program that fails to start: its exit code, no trace claimed
"$kvs" capture -o "$tmp/none.json" -- /nonexistent/program 2>/dev/null
rc=$?
[ $rc -eq 127 ] && echo "ok   missing program exits 127" || { echo "FAIL missing program: exit $rc"; fail=1; }

[ -n "$keep" ] && echo "traces kept in $tmp"
exit $fail
