#!/bin/sh
# tests/gpu/test_examples_gpu.sh KVSCOPE NAIVE_KV_CAST — walkthroughs 4 and 5
# on a GPU, small: `kvscope capture` of examples/naive_kv_cast.cu (without op
# shapes, with them, and fixed) and a torch.profiler trace of
# examples/torch_mla_decode.py, each read by `kvscope report --format json`;
# the full-buffer cast must be found with its shape and calls per step, and
# `kvscope compare` must mark it resolved by the fix. Exits 77 without a GPU;
# the PyTorch part is skipped (and said so) without torch.
#   meson test -C build --suite gpu test_examples_gpu
set -u
kvs=$1
naive=$2
root=${KVS_SOURCE_ROOT:-$(dirname "$0")/../..}
"$naive" --layers 1 --capacity 64 --active 8 --steps 1 >/dev/null 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "skip: no usable GPU"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 needed"; exit 77; }
tmp=$(mktemp -d /tmp/kvs_examples.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect NAME JSON PYTHON-ASSERTIONS: each line holds on the document `d`
# (G(op): that op's largest copy/cast group; F(id): that finding is there)
expect() {
    if python3 - "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
# G(op): the group of that op (or of the largest group whose op matches, for aten::copy_)
G = lambda op: max((g for g in d.get("groups", []) if g["op"] == op), key=lambda g: g["gpu_ms"],
                   default={"dims": None, "dtypes": [], "calls_per_step": None,
                            "bytes_per_call": None, "match": None})
F = lambda fid: any(f["id"] == fid for f in d.get("findings", []))
ok = True
for line in sys.argv[2].strip().splitlines():
    line = line.strip()
    if line and not eval(line):
        print("  assertion failed: " + line)
        ok = False
if not ok:
    # report groups carry op/dims; compare groups carry role/before/after
    print("  groups: %s" % [(g.get("op", g.get("role")), g.get("dims"), g.get("calls_per_step"))
                            for g in d.get("groups", [])][:6])
    print("  findings: %s" % [f["id"] for f in d.get("findings", [])])
sys.exit(0 if ok else 1)
PY
    then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi
}
run() { # run NAME CMD... (output kept for a failure)
    name=$1; shift
    if ! "$@" >"$tmp/$name.out" 2>&1; then
        echo "FAIL $name: $*"; cat "$tmp/$name.out"; fail=1; return 1
    fi
}

# example 4: an ordinary CUDA program under kvscope capture
small="--layers 8 --capacity 65536 --active 1024 --steps 3"
# shellcheck disable=SC2086
run plain "$kvs" capture -o "$tmp/plain.json.gz" -- "$naive" --no-annotate $small &&
run plain_report "$kvs" report "$tmp/plain.json.gz" --format json -o "$tmp/plain.json" &&
expect "no annotations: 3 steps, the cast kernel found, no shapes" "$tmp/plain.json" '
d["steps"]["count"] == 3
any("naive_cast_fp8_to_bf16" in k["name"] for k in d["kernels"])
not F("kv_full_buffer_cast")'
# shellcheck disable=SC2086
run unfixed "$kvs" capture -o "$tmp/unfixed.json.gz" -- "$naive" $small &&
run unfixed_report "$kvs" report "$tmp/unfixed.json.gz" --kv-capacity 65536 --format json -o "$tmp/unfixed.json" &&
expect "annotated: kv_full_buffer_cast [65536,1,576] x8 per step" "$tmp/unfixed.json" '
F("kv_full_buffer_cast")
G("naive::cast_fp8_to_bf16")["dims"] == [[65536, 1, 576], [65536, 1, 576]]
G("naive::cast_fp8_to_bf16")["calls_per_step"] == 8
G("naive::cast_fp8_to_bf16")["bytes_per_call"] == 65536 * 576 * 3
G("naive::cast_fp8_to_bf16")["match"]["capacity_tokens"] == 65536'
# shellcheck disable=SC2086
run fixed "$kvs" capture -o "$tmp/fixed.json.gz" -- "$naive" --fixed $small &&
run compare "$kvs" compare "$tmp/unfixed.json.gz" "$tmp/fixed.json.gz" --kv-capacity 65536 --format json -o "$tmp/compare.json" &&
expect "fixed: the cast is resolved" "$tmp/compare.json" '
"kv_full_buffer_cast" in d["resolved"]
d["after"]["gpu_ms_per_step"] < d["before"]["gpu_ms_per_step"]'

# example 5: a torch.profiler trace of the PyTorch MLA decode
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    tsmall="--layers 4 --capacity 32768 --context 1024 --steps 2"
    for p in full-cast active-cast; do
        # shellcheck disable=SC2086
        run "torch_$p" python3 "$root/examples/torch_mla_decode.py" --kv-path $p -o "$tmp/torch_$p.json.gz" $tsmall
    done
    run torch_report "$kvs" report "$tmp/torch_full-cast.json.gz" --model glm5 --kv-capacity 32768 --format json -o "$tmp/torch.json" &&
    expect "torch: aten::copy_ [32768,1,576] bf16<-fp8 x4 per step" "$tmp/torch.json" '
d["steps"]["count"] == 2
F("kv_full_buffer_cast")
G("aten::copy_")["dims"][0] == [32768, 1, 576]
G("aten::copy_")["dtypes"][:2] == ["c10::BFloat16", "c10::Float8_e4m3fn"]
G("aten::copy_")["calls_per_step"] == 4'
    run torch_compare "$kvs" compare "$tmp/torch_full-cast.json.gz" "$tmp/torch_active-cast.json.gz" --model glm5 --kv-capacity 32768 --format json -o "$tmp/torch_compare.json" &&
    expect "torch: gather-then-cast resolves it" "$tmp/torch_compare.json" '
"kv_full_buffer_cast" in d["resolved"]'
else
    echo "skip torch part: python3 cannot import torch with CUDA"
fi
exit $fail
