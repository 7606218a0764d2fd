#!/usr/bin/env bash
# examples/5_pytorch_profiler.sh — kvscope on a PyTorch engine: profile an
# MLA-style decode with an FP8 KV cache with torch.profiler (record_shapes on),
# export the Chrome trace, and let kvscope name the bottleneck and prove the
# fix. Nothing of kvscope runs inside Python: the trace file is the interface.
# Needs python3 with torch (CUDA) and an NVIDIA GPU (~7 GB).
#
#   examples/5_pytorch_profiler.sh                 78 layers, pool 131072 tokens, 4096 active
#   PYTHON=/opt/venv/bin/python examples/5_pytorch_profiler.sh --layers 61
#
# Arguments go to examples/torch_mla_decode.py (--layers, --capacity, --context,
# --batch, --steps). It runs the script twice, --kv-path full-cast (each layer
# casts its whole FP8 pool to BF16: aten::copy_ [[131072,1,576],[131072,1,576]])
# and --kv-path active-cast (index_select the active rows, then cast them),
# then `kvscope report` on the first and `kvscope compare` of the two.
# In your own code the same three lines do it:
#   with torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True,
#                               schedule=torch.profiler.schedule(wait=1, warmup=1, active=4)) as p:
#       for step in ...: decode_step(); p.step()
#   p.export_chrome_trace("trace.json")       # then: kvscope report trace.json --model <config.json>
set -euo pipefail
. "$(dirname "$0")/env.sh"

py=${PYTHON:-python3}
capacity=131072
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do   # the report wants the pool's capacity too
    [ "${args[i]}" = --capacity ] && [ $((i + 1)) -lt ${#args[@]} ] && capacity=${args[i + 1]}
done
for path in full-cast active-cast; do
    say "$py" "$examples/torch_mla_decode.py" --kv-path "$path" -o "$out/torch_$path.json.gz" "$@"
done
opts=(--model glm5 --kv-capacity "$capacity" --batch 1)
say "$kvs" report "$out/torch_full-cast.json.gz" "${opts[@]}"
"$kvs" report "$out/torch_full-cast.json.gz" "${opts[@]}" --format html -o "$out/torch_full-cast.html"
say "$kvs" compare "$out/torch_full-cast.json.gz" "$out/torch_active-cast.json.gz" "${opts[@]}"
"$kvs" compare "$out/torch_full-cast.json.gz" "$out/torch_active-cast.json.gz" "${opts[@]}" \
    --format html -o "$out/torch_compare.html"
echo
echo "HTML report: $out/torch_full-cast.html   (comparison: $out/torch_compare.html)"
