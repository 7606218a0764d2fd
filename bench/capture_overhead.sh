#!/usr/bin/env bash
# bench/capture_overhead.sh [BUILD_DIR] [OUT_DIR] — what `kvscope capture`
# costs: bench/capture_overhead.cu run plain, with the capture linked in, and
# under `kvscope capture` (injection), in interleaved rounds; then the
# PyTorch loop bench/capture_torch.py plain and captured. Prints a table
# (medians over rounds of each run's median) and keeps the raw lines and
# traces in OUT_DIR. Needs a GPU; python3 with torch for the PyTorch rows.
#
#   bench/capture_overhead.sh build out/capture_bench
#
# Reference (docs/../shared/DESIGN.md): Kineto through torch.profiler costs
# 0.06% on 50 x 1 GiB copies and 28.9% on 5000 one-element kernels.
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-out/capture_bench}
rounds=${KVS_BENCH_ROUNDS:-3}
mkdir -p "$out"
bench=$build/libtrace/capture_overhead
kvs=$build/cli/kvscope
raw=$out/raw.txt
: >"$raw"
[ -x "$bench" ] || { echo "no $bench: build with CUDA first" >&2; exit 1; }

run() { # run MODE CMD... : append "MODE RESULT ..." to raw
    local mode=$1; shift
    local line
    line=$("$@" 2>>"$out/stderr.txt" | grep '^RESULT') || { echo "$mode: run failed" >&2; return 1; }
    echo "$mode $line" >>"$raw"
}

for r in $(seq "$rounds"); do
    run plain "$bench"
    run linked "$bench" --linked "$out/linked.json.gz"
    run inject "$kvs" capture -o "$out/inject.json.gz" -- "$bench"
    # where the launch-heavy cost comes from: without driver API records,
    # then without any API records (GPU work, ops and ranges only)
    run inject_nodriver "$kvs" capture --activities kernel,memcpy,memset,runtime,sync,extcorr,overhead,nvtx \
        -o "$out/inject.json.gz" -- "$bench"
    run inject_gpuonly "$kvs" capture --activities kernel,memcpy,memset,extcorr,nvtx \
        -o "$out/inject.json.gz" -- "$bench"
done

have_torch=0
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && have_torch=1
if [ $have_torch = 1 ]; then
    for r in $(seq "$rounds"); do
        run torch_plain python3 bench/capture_torch.py --steps 20
        run torch_capture "$kvs" capture -o "$out/torch.json.gz" -- python3 bench/capture_torch.py --steps 20
        run torch_capture_nodriver "$kvs" capture --activities kernel,memcpy,memset,runtime,sync,extcorr,overhead,nvtx \
            -o "$out/torch.json.gz" -- python3 bench/capture_torch.py --steps 20
    done
fi

python3 - "$raw" <<'PY'
import collections, re, statistics, sys
vals = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    mode, rest = line.split(" ", 1)
    for k, v in re.findall(r"(\w+)=([0-9.]+)", rest):
        vals[mode][k].append(float(v))
med = lambda m, k: statistics.median(vals[m][k]) if vals[m][k] else float("nan")
print("| mode | launch loop ms (5000 kernels) | us/launch | overhead | copy loop ms (50 x 1 GiB) | GB/s (r+w) | overhead |")
print("|---|---|---|---|---|---|---|")
for m in ("plain", "linked", "inject", "inject_nodriver", "inject_gpuonly"):
    if m not in vals:
        continue
    lo = 100 * (med(m, "launch_ms") / med("plain", "launch_ms") - 1)
    co = 100 * (med(m, "copy_ms") / med("plain", "copy_ms") - 1)
    print("| %s | %.3f | %.3f | %s | %.3f | %.0f | %s |" % (
        m, med(m, "launch_ms"), med(m, "us_per_launch"), "-" if m == "plain" else "%+.2f%%" % lo,
        med(m, "copy_ms"), med(m, "copy_gbps"), "-" if m == "plain" else "%+.2f%%" % co))
if "torch_plain" in vals:
    print()
    print("| PyTorch loop (8 layers: full FP8->BF16 KV cast + 2 GEMV) | step ms | overhead |")
    print("|---|---|---|")
    for m in ("torch_plain", "torch_capture", "torch_capture_nodriver"):
        if m in vals:
            o = 100 * (med(m, "torch_step_ms") / med("torch_plain", "torch_step_ms") - 1)
            print("| %s | %.3f | %s |" % (m, med(m, "torch_step_ms"),
                                          "-" if m == "torch_plain" else "%+.2f%%" % o))
print()
print("rounds per mode: %s" % {m: len(v.get("launch_ms", v.get("torch_step_ms", []))) for m, v in vals.items()})
PY
