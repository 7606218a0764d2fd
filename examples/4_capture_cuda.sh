#!/usr/bin/env bash
# examples/4_capture_cuda.sh — trace an ordinary CUDA program with
# `kvscope capture` (no change to the program, no rebuild), then report and
# compare. The program, examples/naive_kv_cast.cu, is a decode-like loop with
# the bug kvscope is built around: each of its 78 layers casts its whole FP8
# KV pool [131072,1,576] to BF16 with a naive kernel, to read 4096 rows.
# Needs an NVIDIA GPU (~6 GB) and a CUDA build (build/examples/naive_kv_cast).
#
#   examples/4_capture_cuda.sh           three captures, two reports, one comparison
#
# 1. --no-annotate: the program has NVTX step/layer ranges only. The report
#    still finds the steps, the layers and the cast kernel's GPU time, but
#    without shapes it cannot say what the kernel moved or why.
# 2. as built: its two ops carry their dims and dtypes through kvscope's
#    annotation API (kvscope/annotate.h; NVTX underneath). Now the report
#    names the full-buffer cast: shape, calls per step, bytes, % of GPU time,
#    GB/s against the HBM peak.
# 3. --fixed: attention reads the FP8 rows directly; compare 2 -> 3.
# Writes out/naive_{plain,unfixed,fixed}.json.gz and out/naive_*.html.
set -euo pipefail
. "$(dirname "$0")/env.sh"

prog=$build/examples/naive_kv_cast
if [ ! -x "$prog" ]; then
    echo "4_capture_cuda: $prog not built (it needs the CUDA toolkit: ninja -C build)" >&2
    exit 2
fi

# 1. unannotated: what any CUDA program gives
say "$kvs" capture -o "$out/naive_plain.json.gz" -- "$prog" --no-annotate
say "$kvs" report "$out/naive_plain.json.gz" --top 5

# 2. with op shapes: the report names the bottleneck
say "$kvs" capture -o "$out/naive_unfixed.json.gz" -- "$prog"
say "$kvs" report "$out/naive_unfixed.json.gz" --kv-capacity 131072 --batch 1
"$kvs" report "$out/naive_unfixed.json.gz" --kv-capacity 131072 --batch 1 --format html \
    -o "$out/naive_unfixed.html"

# 3. the fix, and the proof
say "$kvs" capture -o "$out/naive_fixed.json.gz" -- "$prog" --fixed
say "$kvs" compare "$out/naive_unfixed.json.gz" "$out/naive_fixed.json.gz" --kv-capacity 131072 --batch 1
"$kvs" compare "$out/naive_unfixed.json.gz" "$out/naive_fixed.json.gz" --kv-capacity 131072 \
    --batch 1 --format html -o "$out/naive_compare.html"
echo
echo "HTML report: $out/naive_unfixed.html   (comparison: $out/naive_compare.html)"
