#!/usr/bin/env bash
# bench/mla_bk.sh NEW BASE [OUT_DIR] — `bench_kernels mla` of two kvscope
# source trees against each other, alternating (base first), REPS times
# each (default 5; ~50 s on the H200 with both builds). Narrower and
# longer than bench/mla_ab.sh's two bench_kernels passes: for a size where
# one pass left a doubt. Runs no tests (mla_ab.sh gates on those).
#
#   REPS=5 bench/mla_bk.sh .wt/mla5 . "$OUT"   # device call: a branch vs main
#   bench/mla_bk.sh --table OUT_DIR            # only the table, from bk.log
#
# Writes OUT_DIR/bk.log (default out/mla_bk), build logs and table.md; prints
# table.md: every run of each tree per size, median vs median and best vs
# best ("SLOWER" past +2%, the landing bar of docs/kernels.md).
set -uo pipefail

table() { # LOGDIR
    python3 - "$1" <<'PY'
import re, statistics as st, sys
d = sys.argv[1]
runs, order, tree = {}, [], None
for line in open(f"{d}/bk.log"):
    m = re.match(r"### bench_kernels rep \d+ tree (\w+)", line)
    if m:
        tree = m.group(1)
        continue
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if tree and len(c) >= 5 and c[0].isdigit() and c[1].isdigit():
        k = (int(c[0]), int(c[1]), c[2])
        if k not in runs:
            runs[k] = {"base": [], "new": []}
            order.append(k)
        runs[k][tree].append(float(c[3]))
out = ["| B | ctx | KV | base (us, each run) | new (us, each run) | median vs median | best vs best |",
       "|---|---|---|---|---|---:|---:|"]
slower = []
for k in order:
    b, n = runs[k]["base"], runs[k]["new"]
    if not b or not n:
        continue
    pm = 100 * (st.median(n) - st.median(b)) / st.median(b)
    pb = 100 * (min(n) - min(b)) / min(b)
    flag = " SLOWER" if pb > 2.0 else ""
    if flag:
        slower.append(f"B{k[0]} x {k[1]} {k[2]} {pb:+.1f}%")
    out.append(f"| {k[0]} | {k[1]} | {k[2]} | {' / '.join(map(str, b))} | "
               f"{' / '.join(map(str, n))} | {pm:+.1f}% | {pb:+.1f}%{flag} |")
out.append("")
out.append("slower than 2% (best vs best): " + (", ".join(slower) if slower else "none"))
text = "\n".join(out) + "\n"
open(f"{d}/table.md", "w").write(text)
print(text, end="")
PY
}

if [ "${1:-}" = --table ]; then
    table "${2:?usage: bench/mla_bk.sh --table OUT_DIR}"
    exit
fi
new=${1:?usage: bench/mla_bk.sh NEW BASE [OUT_DIR]} base=${2:?usage: bench/mla_bk.sh NEW BASE [OUT_DIR]}
out=${3:-out/mla_bk} reps=${REPS:-5}
mkdir -p "$out"
build() { (cd "$1" && { [ -f build-dev/build.ninja ] || meson setup build-dev >/dev/null; } &&
    ninja -C build-dev -j8 kernels/bench_kernels); }
build "$new" >"$out/build_new.log" 2>&1 &
p1=$!
build "$base" >"$out/build_base.log" 2>&1 &
p2=$!
wait $p1 || { tail -30 "$out/build_new.log"; exit 1; }
wait $p2 || { tail -30 "$out/build_base.log"; exit 1; }
echo "built at ${SECONDS}s"
for r in $(seq "$reps"); do for t in base new; do
    d=$([ $t = new ] && echo "$new" || echo "$base")
    echo "### bench_kernels rep $r tree $t" >>"$out/bk.log"
    "$d/build-dev/kernels/bench_kernels" mla >>"$out/bk.log" 2>&1 ||
        { echo "bench_kernels failed (tree $t)"; tail -20 "$out/bk.log"; exit 1; }
done; done
echo "done at ${SECONDS}s"
table "$out"
