#!/usr/bin/env bash
# bench/mla_ab.sh NEW BASE [OUT_DIR] — the MLA kernels of two kvscope source
# trees against each other on one GPU, in one call (~330 s on the H200:
# the gpu tests ~230, builds ~30, timing ~70):
#
#   bench/mla_ab.sh .wt/mla5 . "$OUT"     # device call: a branch vs main
#   bench/mla_ab.sh --table OUT_DIR       # only the tables, from the logs there
#
# Builds the timing targets of both trees (build-dev in each; the base's
# build beside NEW's tests), runs the ten MLA/engine gpu tests of NEW and
# times nothing if one fails, then alternates the trees (base first in each
# pair): `bench_decode mlaprof` and the engine (glm5 fp8-direct, batch 1 x
# 4K, with and without --graph) x3 each (MLA_AB_REPS), `bench_kernels mla` x2
# (the second left out past MLA_AB_BUDGET seconds), and the SASS of each tree's MLA kernels
# (load/copy order up to the third barrier, and a hash of the code: equal
# hashes, same code). Writes under OUT_DIR (default out/mla_ab): steps.log,
# build_new.log, build_base.log, tests.log, mlaprof.log, engine.log, bk.log,
# sass.txt, table.md; prints table.md: best of each tree's runs against
# each other per size, "SLOWER" where NEW is more than 2% slower (the
# landing bar of docs/kernels.md).
# Environment: MLA_AB_BUDGET (default 150: seconds after which the second
# bench_kernels pair is left out), MLA_AB_JOBS (build jobs, default 16),
# MLA_AB_REPS (mlaprof and engine runs a tree, default 3), MLA_AB_TESTS (the
# gpu tests to run first, default the ten named below; all must pass). The
# ten take ~230 s on the H200 (test_kernels_mla and its five variants ~31 s
# each, 2026-12-02).
set -uo pipefail

table() { # LOGDIR: table.md from mlaprof.log, engine.log, bk.log
    python3 - "$1" <<'PY'
import re, statistics, sys
d = sys.argv[1]
out = []
def read(name):
    try:
        return open(f"{d}/{name}").read().splitlines()
    except OSError:
        return []
def pct(n, b):
    return 100.0 * (n - b) / b if b else float("nan")
def flag(p):
    return " SLOWER" if p > 2.0 else ""
def tree_rows(name, tag):
    """(tree, table cells) of each table row in a log of "### TAG rep R tree T" runs"""
    tree = None
    for line in read(name):
        m = re.match(rf"### {tag} rep \d+ tree (\w+)", line)
        if m:
            tree = m.group(1)
            continue
        if tree:
            yield tree, [x.strip() for x in line.strip().strip("|").split("|")]
slower = []

# mlaprof rows: B, ctx, KV, splits x tiles, call us, decode span, skew,
# prologue, tiles, epilogue, combine gap, combine span
runs = {}  # (key) -> {"base": [rows], "new": [rows]}
order = []
for tree, c in tree_rows("mlaprof.log", "mlaprof"):
    if len(c) == 12 and c[0].isdigit():
        key = (int(c[0]), int(c[1]), c[2], c[3])
        if key not in runs:
            runs[key] = {"base": [], "new": []}
            order.append(key)
        runs[key].setdefault(tree, []).append([float(x) for x in c[4:]])
if order:
    out.append("## bench_decode mlaprof (token list; call us: each run; cycles and ns: medians)\n")
    out.append("| B | ctx | KV | splits x tiles | call us base | call us new | best vs best"
               " | prologue cyc | tiles cyc | epilogue cyc | combine span ns |")
    out.append("|---|---|---|---|---|---|---:|---|---|---|---|")
    for k in order:
        b, n = runs[k]["base"], runs[k]["new"]
        if not b or not n:
            continue
        med = lambda rows, i: statistics.median(r[i] for r in rows)
        p = pct(min(r[0] for r in n), min(r[0] for r in b))
        if p > 2.0:
            slower.append(f"mlaprof B{k[0]} x {k[1]} {k[2]} {p:+.1f}%")
        col = lambda i: f"{med(b, i):.0f} -> {med(n, i):.0f}"
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " +
                   " / ".join(f"{r[0]:.1f}" for r in b) + " | " +
                   " / ".join(f"{r[0]:.1f}" for r in n) +
                   f" | {p:+.1f}%{flag(p)} | {col(3)} | {col(4)} | {col(5)} | {col(7)} |")
    out.append("")

# engine: "### engine rep R mode M tree T" then "  step   22.945 ms"
eng = {}
key = None
for line in read("engine.log"):
    m = re.match(r"### engine rep \d+ mode (\S+) tree (\w+)", line)
    if m:
        key = m.groups()
        continue
    m = re.match(r"\s+step\s+([\d.]+) ms", line)
    if key and m:
        eng.setdefault(key[0], {}).setdefault(key[1], []).append(float(m.group(1)))
        key = None
if eng:
    out.append("## engine glm5 fp8-direct batch 1 x 4K (step ms, median of 8 steps, each run)\n")
    out.append("| mode | base | new | best vs best | median vs median |")
    out.append("|---|---|---|---:|---:|")
    for mode, t in eng.items():
        b, n = t.get("base", []), t.get("new", [])
        if not b or not n:
            continue
        p = pct(min(n), min(b))
        if p > 2.0:
            slower.append(f"engine {mode} {p:+.1f}%")
        dm = statistics.median(n) - statistics.median(b)
        out.append(f"| {mode} | " + " / ".join(f"{x:.3f}" for x in b) + " | " +
                   " / ".join(f"{x:.3f}" for x in n) +
                   f" | {p:+.2f}%{flag(p)} | {dm:+.3f} ms |")
    out.append("")

# bench_kernels: | B | ctx | KV | median us | KV GB/s | % of copy | TFLOP/s | check |
bk = {}
order = []
for tree, c in tree_rows("bk.log", "bench_kernels"):
    if len(c) == 8 and c[0].isdigit() and c[2] in ("bf16", "fp8"):
        k = (int(c[0]), int(c[1]), c[2])
        if k not in bk:
            bk[k] = {}
            order.append(k)
        bk[k].setdefault(tree, []).append(float(c[3]))
if order:
    out.append("## bench_kernels mla (no token list; median us per run)\n")
    out.append("| B | ctx | KV | base | new | best vs best |")
    out.append("|---|---|---|---|---|---:|")
    for k in order:
        b, n = bk[k].get("base", []), bk[k].get("new", [])
        if not b or not n:
            continue
        p = pct(min(n), min(b))
        if p > 2.0:
            slower.append(f"bench_kernels B{k[0]} x {k[1]} {k[2]} {p:+.1f}%")
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | " + " / ".join(f"{x:.1f}" for x in b) +
                   " | " + " / ".join(f"{x:.1f}" for x in n) + f" | {p:+.1f}%{flag(p)} |")
    out.append("")

if not (runs or eng or bk):
    out.append("no bench logs in " + d)
else:
    out.append("slower than 2% (best vs best): " + (", ".join(slower) if slower else "none"))
text = "\n".join(out) + "\n"
open(f"{d}/table.md", "w").write(text)
sys.stdout.write(text)
PY
}

sass_summary() { # cuobjdump -sass on stdin: one line per kernel
    python3 -c '
import hashlib, re, sys
def emit(name, ins):
    if name is None:
        return
    s, nb = "", 0
    for i in ins:
        if nb >= 3:
            break
        if "LDGSTS" in i: s += "C"
        elif "LDG.E.128" in i: s += "q"
        elif "LDG" in i: s += "L"
        elif "BAR.SYNC" in i: s += "|"; nb += 1
    h = hashlib.md5("\n".join(ins).encode()).hexdigest()[:12]
    print(f"{name}: {len(ins)} instructions, md5 {h}, {s}")
name, ins = None, []
for line in sys.stdin:
    m = re.search(r"Function : (\S+)", line)
    if m:
        emit(name, ins)
        name = re.sub(r"_GLOBAL__N__[0-9a-f]+_[0-9]+_(\w+?)_cu_[0-9a-f]+", r"ANON_\1", m.group(1))
        ins = []
        continue
    m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;?\s*/\*", line)
    if m and name is not None:
        ins.append(m.group(1))
emit(name, ins)
'
}

if [ "${1:-}" = "--table" ]; then
    table "${2:?usage: bench/mla_ab.sh --table OUT_DIR}"
    exit $?
fi

new=$(cd "${1:?usage: bench/mla_ab.sh NEW BASE [OUT_DIR]}" && pwd) || exit 2
base=$(cd "${2:?usage: bench/mla_ab.sh NEW BASE [OUT_DIR]}" && pwd) || exit 2
out=${3:-out/mla_ab}
mkdir -p "$out" && out=$(cd "$out" && pwd)
budget=${MLA_AB_BUDGET:-150}
reps=${MLA_AB_REPS:-3}
jobs=${MLA_AB_JOBS:-16}
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
log() { echo "[$((SECONDS - T0))s] $*" | tee -a "$out/steps.log" >&2; }

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv \
    >>"$out/steps.log" 2>&1
# which sources: a hash of kernels/cuda (the trees are copies, often without .git)
src_id() { (cd "$1" && cat kernels/cuda/* | md5sum | cut -c1-12); }
log "new $new (kernels/cuda md5 $(src_id "$new")), base $base (kernels/cuda md5 $(src_id "$base"))"

BT="kernels/bench_decode kernels/bench_kernels cli/kvscope cli/kvscope-engine"
TT="tests/test_kernels_mla tests/test_kernels_pdl tests/test_kernels_wgmma tests/test_kernels_engine_ops
    tests/test_engine_gpu"
TESTS=${MLA_AB_TESTS:-"test_kernels_mla test_kernels_mla_hg32 test_kernels_mla_hg64
    test_kernels_mla_wg test_kernels_mla_mma test_kernels_mla_nolazy test_kernels_wgmma
    test_kernels_pdl test_engine_gpu test_kernels_engine_ops"}
# shellcheck disable=SC2086
NTESTS=$(set -- $TESTS; echo $#)
build() { # TREE JOBS TARGETS...
    local t=$1 j=$2
    shift 2
    (cd "$t" && { [ -f build-dev/build.ninja ] || meson setup build-dev >/dev/null; } &&
        ninja -C build-dev -j"$j" "$@")
}
# shellcheck disable=SC2086
build "$new" "$jobs" $BT $TT >"$out/build_new.log" 2>&1 ||
    { log "new build FAILED"; tail -50 "$out/build_new.log"; exit 1; }
log "new built"
# shellcheck disable=SC2086
build "$base" $((jobs * 3 / 4)) $BT >"$out/build_base.log" 2>&1 &
bp=$!
# shellcheck disable=SC2086
(cd "$new" && timeout 400 meson test -C build-dev --no-rebuild --print-errorlogs $TESTS) \
    >"$out/tests.log" 2>&1
trc=$?
log "tests rc=$trc"
wait $bp || { log "base build FAILED"; tail -50 "$out/build_base.log"; exit 1; }
log "base built"
# all of them must have run (a machine without a GPU skips them, exit 77)
if [ $trc -ne 0 ] || ! grep -Eq "^Ok: +$NTESTS *\$" "$out/tests.log"; then
    tail -60 "$out/tests.log"
    log "the gpu tests did not all pass (rc $trc): nothing timed"
    exit 1
fi

dir() { [ "$1" = new ] && echo "$new/build-dev" || echo "$base/build-dev"; }
for rep in $(seq "$reps"); do for t in base new; do
    echo "### mlaprof rep $rep tree $t" >>"$out/mlaprof.log"
    "$(dir $t)/kernels/bench_decode" mlaprof >>"$out/mlaprof.log" 2>&1
done; done
log "mlaprof done"
for rep in $(seq "$reps"); do for m in --graph ""; do for t in base new; do
    echo "### engine rep $rep mode ${m:-eager} tree $t" >>"$out/engine.log"
    # shellcheck disable=SC2086
    "$(dir $t)/cli/kvscope" engine --config glm5 --kv-path fp8-direct --batch 1 --context 4096 \
        --steps 8 --warmup 2 --quiet $m >>"$out/engine.log" 2>&1
done; done; done
log "engine done"
for rep in 1 2; do
    [ $rep -gt 1 ] && [ $((SECONDS - T0)) -gt "$budget" ] &&
        { log "bench_kernels rep $rep skipped (past ${budget} s)"; break; }
    for t in base new; do
        echo "### bench_kernels rep $rep tree $t" >>"$out/bk.log"
        "$(dir $t)/kernels/bench_kernels" mla >>"$out/bk.log" 2>&1
        log "bench_kernels rep $rep $t"
    done
done

# SASS: per kernel, L = 32-bit global load, q = 16-byte global load,
# C = LDGSTS (cp.async), | = barrier, up to the third barrier; md5 of the
# instructions (addresses and encodings dropped)
for t in base new; do
    for o in kernels/libkvs_kernels_cuda.a.p/cuda_mla_decode.cu.o kernels/mla_wgmma_sm90a.o \
        kernels/libkvs_kernels_cuda.a.p/cuda_mla_combine.cu.o; do
        echo "## $t $o" >>"$out/sass.txt"
        timeout 10 cuobjdump -sass "$(dir $t)/$o" 2>/dev/null | sass_summary >>"$out/sass.txt"
    done
done
log "sass done"
table "$out"
log "end"
