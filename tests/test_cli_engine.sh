#!/bin/sh
# tests/test_cli_engine.sh KVSCOPE — `kvscope engine`'s command line, without a
# GPU: --help, and every bad usage refused with exit 2 before the GPU is
# touched (the memory plan is checked first). In a build without the engine,
# the command must say so and exit 2. --tp is refused before any GPU work
# when it does not split the model or asks for more GPUs than exist (no
# machine here shows 64). `kvscope` itself links no CUDA library:
# the engine is the program kvscope-engine beside it (cli/engine_exec.c).
set -u
kvs=$1
fail=0
. "$(dirname "$0")/cli_check.sh"
# every subcommand pays for what kvscope links at start-up: no CUDA library there
if command -v readelf >/dev/null; then
    cuda_needed=$(readelf -d "$kvs" | grep NEEDED | grep -Ei 'cuda|cublas|cupti|nccl|nvrtc|nvToolsExt' || true)
    if [ -n "$cuda_needed" ]; then
        echo "FAIL kvscope links CUDA libraries:"; echo "$cuda_needed"; fail=1
    else
        echo "ok   kvscope links no CUDA library"
    fi
fi
if ! "$kvs" engine --help >/dev/null 2>&1; then
    check 2 "engine refused without the engine built" "built without CUDA" -- "$kvs" engine
    # (no kvscope-engine to miss in a build without the engine)
    exit $fail
fi
check 0 "engine --help" "full-cast" -- "$kvs" engine --help
check 2 "unknown kv path" "fp8-direct" -- "$kvs" engine --kv-path fast
# the kernels' A/B switches are read here, in the CLI, and a bad one refused
check 0 "engine --help lists the environment it honours" "KVS_MLA_WAVES=1|2" -- "$kvs" engine --help
check 2 "a bad KVS_MLA_HG" "KVS_MLA_HG is 32 or 64, not '48'" -- \
    env KVS_MLA_HG=48 "$kvs" engine --config tiny --context 16
check 2 "a bad KVS_PDL" "KVS_PDL is 0 or 1, not 'off'" -- env KVS_PDL=off "$kvs" engine --config tiny
check 2 "batch 0" "--batch" -- "$kvs" engine --batch 0
check 2 "batch not a number" "--batch" -- "$kvs" engine --batch 3x
check 2 "missing value" "needs a value" -- "$kvs" engine --steps
check 2 "unknown option" "unknown option" -- "$kvs" engine --frob 1
check 2 "stray argument" "unexpected" -- "$kvs" engine glm5
check 2 "short option" "unknown option '-q'" -- "$kvs" engine -q
check 2 "unknown config" "neither a bundled config" -- "$kvs" engine --config no-such-model
# a user's config.json: errors name the file as given
cfgdir=$(mktemp -d) || exit 99
printf '{"hidden_size": 12' > "$cfgdir/bad.json"
check 2 "malformed config.json names its path" "$cfgdir/bad.json: malformed JSON" -- \
    "$kvs" engine --config "$cfgdir/bad.json"
printf '{}' > "$cfgdir/empty.json"
check 2 "config.json without a field names its path" "$cfgdir/empty.json: required field" -- \
    "$kvs" engine --config "$cfgdir/empty.json"
# a config.json read as Hugging Face reads it. A run that gets past
# the config stops at the memory plan (capacity too small), before the GPU;
# its first line names the config.
tiny=${KVS_SOURCE_ROOT:?run through meson test}/engine/configs/tiny.json
small="--batch 4 --context 1000 --kv-capacity 2048"
check 2 "a folder without config.json" "a folder without a config.json" -- \
    "$kvs" engine --config "$cfgdir"
mkdir "$cfgdir/ckpt" && cp "$tiny" "$cfgdir/ckpt/config.json"
# shellcheck disable=SC2086
check 2 "a checkpoint folder: its config.json, said" "reading $cfgdir/ckpt/config.json" -- \
    "$kvs" engine --config "$cfgdir/ckpt" $small
# shellcheck disable=SC2086
check 2 "a checkpoint folder: read" "engine: ckpt, kv-path" -- "$kvs" engine --config "$cfgdir/ckpt" $small
mkfifo "$cfgdir/pipe"
(timeout 20 sh -c "cat '$tiny' > '$cfgdir/pipe'" >/dev/null 2>&1 &)
# shellcheck disable=SC2086
check 2 "a pipe: read to its end" "engine: pipe, kv-path" -- "$kvs" engine --config "$cfgdir/pipe" $small
sed 's/"num_attention_heads": 4/"num_attention_heads": -4/' "$tiny" > "$cfgdir/neg.json"
check 2 "a negative count: refused, named" '"num_attention_heads" is -4' -- \
    "$kvs" engine --config "$cfgdir/neg.json"
# duplicate keys: the last value counts (the first, 256, would be refused)
sed 's/^{/{"kv_lora_rank": 256,/' "$tiny" > "$cfgdir/dup.json"
# shellcheck disable=SC2086
check 2 "duplicate keys: the last value" "engine: dup, kv-path" -- "$kvs" engine --config "$cfgdir/dup.json" $small
{ cat "$tiny"; echo '{"num_hidden_layers": 1}'; } > "$cfgdir/trail.json"
check 2 "data after the object: refused" "more after the object" -- \
    "$kvs" engine --config "$cfgdir/trail.json"
python3 -c 'import sys; sys.stdout.write("{\"x\": [" + "0," * (7 << 20) + "0]}")' > "$cfgdir/big.json"
check 2 "a 14 MB config: refused, the cap said" "more than the 1048576" -- \
    "$kvs" engine --config "$cfgdir/big.json"
rm -rf "$cfgdir"
check 2 "capacity below the run's tokens" "too small" -- \
    "$kvs" engine --config tiny --batch 4 --context 1000 --kv-capacity 2048
check 2 "resident experts below top-k" "resident" -- \
    "$kvs" engine --config glm5 --resident-experts 4 --context 16
# tensor parallel: refused before any GPU work unless the split and the GPUs are there
check 2 "tp that does not divide the heads" "does not split glm5 evenly" -- \
    "$kvs" engine --config glm5 --tp 3 --context 16
check 2 "tp 8 over the tiny model's 4 heads" "attention heads (4)" -- \
    "$kvs" engine --config tiny --tp 8 --context 16
check 2 "tp 0" "--tp wants" -- "$kvs" engine --tp 0
check 2 "tp with one trace on stdout" "one per rank" -- "$kvs" engine --tp 2 --trace -
# --trace's folder is checked before the run (it was written only after it)
check 2 "trace into a missing folder" "cannot write into '/nonexistent-kvs-dir'" -- \
    "$kvs" engine --config tiny --context 16 --trace /nonexistent-kvs-dir/t.json
check 2 "trace per rank into a missing folder" "cannot write into" -- \
    "$kvs" engine --config tiny --tp 2 --context 16 --trace /nonexistent-kvs-dir/t.json.gz
# --trace -: stdout holds the trace alone (for `| kvscope report -`), the
# engine's own lines go to stderr
plan_out=$("$kvs" engine --config tiny --context 16 --steps 1 --quiet --trace - 2>/dev/null)
if echo "$plan_out" | grep -q "memory plan\|kvscope engine"; then
    echo "FAIL --trace -: the engine's lines on stdout beside the trace:"; echo "$plan_out" | head -3; fail=1
else
    echo "ok   --trace - keeps stdout for the trace"
fi
check 2 "trace into a folder" "a folder, not a file name" -- \
    "$kvs" engine --config tiny --context 16 --trace /tmp/
check 2 "context above the plan's bound" "--context wants" -- \
    "$kvs" engine --config tiny --context 1073741824
check 2 "capacity too small, one sequence" "1 sequence of up to" -- \
    "$kvs" engine --config tiny --context 16 --kv-capacity 8
# the plan and header come before the error, also in one file or pipe
out=$("$kvs" engine --config tiny --context 16 --kv-capacity 8 2>&1)
first=$(echo "$out" | head -1)
case $first in
    "kvscope engine: tiny,"*) echo "ok   header before the error in one pipe" ;;
    *) echo "FAIL error before the header in one pipe: $out"; fail=1 ;;
esac
# no GPU here: one line that says so (exit 1, the work cannot be done), not
# CUDA's "driver version is insufficient" from a cudaMalloc deep inside
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
    check 1 "engine without a GPU says so" "no NVIDIA GPU is usable here" -- \
        "$kvs" engine --config tiny --steps 1 --context 16 --quiet
    echo "$out" | grep -q "insufficient\|at ../engine" &&
        { echo "FAIL engine without a GPU: CUDA's words: $out"; fail=1; }
    # the plan first, then the one line (not 'needs 2 GPUs; sees 0')
    check 1 "engine --tp 2 without a GPU says so" "no NVIDIA GPU is usable here" -- \
        "$kvs" engine --config tiny --tp 2 --steps 1 --context 16 --quiet
    echo "$out" | tail -1 | grep -q "no NVIDIA GPU is usable here" ||
        { echo "FAIL engine --tp 2 without a GPU: not the last line: $out"; fail=1; }
    echo "$out" | grep -q "memory plan" ||
        { echo "FAIL engine --tp 2 without a GPU: no memory plan first: $out"; fail=1; }
else
    echo "skip engine without a GPU (this machine has one)"
    # a plan that cannot fit: said before the copy-rate probe allocates anything
    check 1 "misfit said before any allocation" "largest KV capacity that fits" -- \
        "$kvs" engine --config glm5 --context 16 --kv-capacity 2000000000 --quiet
    echo "$out" | grep -q "copy rate" &&
        { echo "FAIL misfit: the copy-rate probe ran first: $out"; fail=1; }
    check 2 "tp over more GPUs than visible" "needs 64 GPUs" -- \
        "$kvs" engine --config glm5 --tp 64 --context 16 --kv-capacity 8192
fi

# without kvscope-engine beside it, kvscope says which program is missing
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cp "$kvs" "$tmp/kvscope" || exit 99
check 1 "engine without kvscope-engine beside kvscope" "kvscope-engine, and it is missing" -- \
    "$tmp/kvscope" engine --help
exit $fail
