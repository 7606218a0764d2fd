#!/bin/sh
# tests/test_compare_mla.sh KVSCOPE — `kvscope compare` on the two real MLA
# traces in ../shared/traces (unfixed: each of 61 layers casts the whole
# 131072-token FP8 KV pool to BF16; fixed: gathers 1024 active tokens first).
# The expectations are computed here, at test time, by Python straight from
# the raw traces (json.load, no kvscope code): mean step wall time, GPU busy
# time per step (union of GPU activity inside each ProfilerStep), the casts'
# GPU time per step (kernels linked to the aten::copy_ ops by External id).
# Exit 77 when the traces are absent.
#
#   meson test -C build test_compare_mla
set -u
kvs=$1
dir=${KVS_SHARED_DIR:-}/traces
before=$dir/mla61_cap131072_unfixed.pt.trace.json.gz
after=$dir/mla61_cap131072_fixed.pt.trace.json.gz
if [ -z "${KVS_SHARED_DIR:-}" ] || [ ! -f "$before" ] || [ ! -f "$after" ]; then
    echo "skip: the MLA traces are not in \$KVS_SHARED_DIR/traces"; exit 77
fi
command -v python3 >/dev/null 2>&1 || { echo "skip: no python3"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
"$kvs" compare "$before" "$after" --batch 1 --format json -o "$tmp/cmp.json" 2>"$tmp/err" ||
    { echo "FAIL: kvscope compare exited $?"; cat "$tmp/err"; exit 1; }
"$kvs" compare "$before" "$after" --batch 1 --format text >"$tmp/cmp.txt" 2>>"$tmp/err" ||
    { echo "FAIL: kvscope compare (text) exited $?"; cat "$tmp/err"; exit 1; }

python3 - "$before" "$after" "$tmp/cmp.json" "$tmp/cmp.txt" <<'PY'
import gzip, json, re, sys

def facts(path):
    """Per-trace figures from the raw Kineto JSON, independently of kvscope."""
    ev = json.load(gzip.open(path))["traceEvents"]
    steps = sorted((e for e in ev if e.get("cat") == "user_annotation"
                    and e.get("name", "").startswith("ProfilerStep#")), key=lambda e: e["ts"])
    gpu = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in ev
                 if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    # the KV cast: aten::copy_ from FP8 of a [tokens, 1, 576] pool slice
    casts = {e["args"]["External id"]: e for e in ev if e.get("cat") == "cpu_op"
             and e.get("name") == "aten::copy_"
             and e["args"].get("Input type", [None, None])[1:2] == ["c10::Float8_e4m3fn"]
             and len(e["args"].get("Input Dims", [[]])[0]) == 3
             and e["args"]["Input Dims"][0][1:] == [1, 576]}
    cast_kernel_us = sum(float(e["dur"]) for e in ev if e.get("cat") == "kernel"
                         and e.get("args", {}).get("External id") in casts)
    walls, busys = [], []
    for s in steps:
        a, b = float(s["ts"]), float(s["ts"]) + float(s["dur"])
        busy, cs, ce = 0.0, None, None
        for x, y in gpu:
            x, y = max(x, a), min(y, b)
            if y <= x:
                continue
            if ce is None or x > ce:
                if ce is not None:
                    busy += ce - cs
                cs, ce = x, y
            else:
                ce = max(ce, y)
        if ce is not None:
            busy += ce - cs
        walls.append(float(s["dur"]) / 1000)
        busys.append(busy / 1000)
    n = len(steps)
    dims = {tuple(map(tuple, c["args"]["Input Dims"][:2])) for c in casts.values()}
    return {"steps": n, "wall": sum(walls) / n, "gpu": sum(busys) / n,
            "cast_ms": cast_kernel_us / 1000 / n, "cast_calls": len(casts) / n, "dims": dims}

B, A = facts(sys.argv[1]), facts(sys.argv[2])
cmp = json.load(open(sys.argv[3]))
text = open(sys.argv[4]).read()
bad = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        bad.append(what)
def near(x, y, rel):
    return x is not None and abs(x - y) <= rel * abs(y)

print(f"python: before wall {B['wall']:.3f} gpu {B['gpu']:.3f} cast {B['cast_ms']:.3f} ms/step "
      f"({B['cast_calls']:.0f} calls, dims {B['dims']}); after wall {A['wall']:.3f} "
      f"gpu {A['gpu']:.3f} cast {A['cast_ms']:.3f} ({A['cast_calls']:.0f} calls, dims {A['dims']})")
check(B["dims"] == {((131072, 1, 576), (131072, 1, 576))} and B["cast_calls"] == 61,
      "the raw unfixed trace casts the full 131072-token pool 61 times a step")
check(A["dims"] == {((1024, 1, 576), (1024, 1, 576))}, "the raw fixed trace casts 1024 tokens")

check(cmp["schema"] == "kvscope.compare/1", "schema")
for side, F in (("before", B), ("after", A)):
    s = cmp[side]
    check(s["count"] == F["steps"], f"{side}: {F['steps']} steps")
    check(near(s["mean_ms"], F["wall"], 0.002), f"{side}: wall ms/step {s['mean_ms']} ~ {F['wall']:.3f}")
    check(near(s["gpu_ms_per_step"], F["gpu"], 0.03),
          f"{side}: GPU ms/step {s['gpu_ms_per_step']} ~ {F['gpu']:.3f} (3%)")
    check(near(s["tokens_per_s"], 1000 / F["wall"], 0.002), f"{side}: tokens/s at batch 1")

check("kv_full_buffer_cast" in cmp["resolved"], "kv_full_buffer_cast resolved")
check("kv_full_buffer_cast" not in cmp["new"], "kv_full_buffer_cast not new")

pair = [g for g in cmp["groups"] if g["before"] and g["after"]
        and g["before"]["dims"][:2] == [[131072, 1, 576], [131072, 1, 576]]
        and g["after"]["dims"][:2] == [[1024, 1, 576], [1024, 1, 576]]]
check(len(pair) == 1, "the full-buffer cast and the active-token cast are paired by role")
if pair:
    g = pair[0]
    check(near(g["before"]["gpu_ms_per_step"], B["cast_ms"], 0.01),
          f"cast before {g['before']['gpu_ms_per_step']:.3f} ~ {B['cast_ms']:.3f} ms/step")
    check(near(g["after"]["gpu_ms_per_step"], A["cast_ms"], 0.01),
          f"cast after {g['after']['gpu_ms_per_step']:.4f} ~ {A['cast_ms']:.4f} ms/step")
    check(near(g["delta"]["gpu_ms_per_step"], A["cast_ms"] - B["cast_ms"], 0.01), "cast delta")
    full = 131072 * 576 * 3 * 61  # FP8 read + BF16 written, 61 layers
    check(near(g["before"]["bytes_per_step"], full, 1e-9), f"cast bytes/step {full}")

gpu_pct = (B["gpu"] - A["gpu"]) / B["gpu"] * 100
wall_pct = (A["wall"] - B["wall"]) / B["wall"] * 100
verdict = " ".join(cmp["verdict"])
m = re.search(r"GPU time per step fell (\d+\.\d)%", verdict)
check(m is not None and abs(float(m.group(1)) - gpu_pct) <= 2.0,
      f"verdict: GPU time fell ~{gpu_pct:.1f}% ({m.group(0) if m else 'missing'})")
word = "rose" if wall_pct > 0 else "fell"
m = re.search(r"wall time per step (fell|rose) (\d+\.\d)%", verdict)
check(m is not None and m.group(1) == word and abs(float(m.group(2)) - abs(wall_pct)) <= 0.2,
      f"verdict: wall time {word} {abs(wall_pct):.1f}% ({m.group(0) if m else 'missing'})")
check("launch-bound" in verdict, "verdict explains the gap: the step is launch-bound")
check("Resolved: kv_full_buffer_cast" in text and "VERDICT" in text, "text rendering says it too")
sys.exit(1 if bad else 0)
PY
