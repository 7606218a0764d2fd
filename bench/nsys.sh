#!/usr/bin/env bash
# bench/nsys.sh [BUILD_DIR] [OUT_DIR] — how fast `kvscope report` reads an
# Nsight Systems SQLite export, and in how much memory: the largest shared
# export (../shared/traces/nsys) and a generated one with N kernel rows and
# their N runtime rows (KVS_BENCH_KERNELS, default 1,000,000; python3's
# sqlite3 writes it with the real tables' column names). Prints a table:
# activity rows read (kernel + memcpy + memset + runtime + sync + NVTX, by
# SQL), the median wall and CPU seconds over rounds, rows/s and peak RSS
# (GNU time). CPU only.
#
#   bench/nsys.sh build-nc out/nsys_bench
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-out/nsys_bench}
rounds=${KVS_BENCH_ROUNDS:-3}
kernels=${KVS_BENCH_KERNELS:-1000000}
kvs=$build/cli/kvscope
shared=${KVS_SHARED_DIR:-../shared}
[ -x "$kvs" ] || { echo "no $kvs: build first" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 1; }
mkdir -p "$out"

real=$(ls -S "$shared"/traces/nsys/*.sqlite 2>/dev/null | head -1)
[ -n "$real" ] || { echo "no exports under $shared/traces/nsys" >&2; exit 1; }
gen=$out/generated_${kernels}.sqlite
if [ ! -f "$gen" ]; then
    python3 - "$gen" "$kernels" <<'PY'
import sqlite3, sys
path, n = sys.argv[1], int(sys.argv[2])
db = sqlite3.connect(path)
db.executescript("""
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER, shortName INTEGER, mangledName INTEGER, gridX INTEGER, gridY INTEGER,
  gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER, graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER,
  callchainId INTEGER);
""")
names = ["void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda>",
         "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN", "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits>",
         "void at::native::reduce_kernel<512, 1>", "cudaLaunchKernel_v7000"]
db.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(names, 1)))
db.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', 'generated')")
db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200')")
pid, gtid = 4242 << 24, (4242 << 24) | 4243
def rows():
    t = 1_000_000_000
    for i in range(n):
        yield (t + 5_000, t + 25_000, 0, 1, 7, i + 1, pid, 1 + i % 4, 1 + i % 4, 1 + i % 4, 1024, 1, 1,
               128, 1, 1, None), (t, t + 3_000, 1, gtid, i + 1, 5, 0, None)
        t += 30_000
k, r = [], []
for a, b in rows():
    k.append(a); r.append(b)
    if len(k) == 100_000:
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (%s)" % ",".join("?" * 17), k)
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (%s)" % ",".join("?" * 8), r)
        k, r = [], []
if k:
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (%s)" % ",".join("?" * 17), k)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (%s)" % ",".join("?" * 8), r)
db.commit()
db.close()
PY
fi

count_rows() { # activity rows kvscope reads, by SQL
    python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro&immutable=1" % sys.argv[1], uri=True)
have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
print(sum(db.execute("SELECT count(*) FROM " + t).fetchone()[0] for t in
          ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
           "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS") if t in have))
PY
}

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

printf '%-48s %10s %8s %8s %8s %12s %10s\n' export MB rows wall_s cpu_s rows/s peak_MB
for f in "$real" "$gen"; do
    rows=$(count_rows "$f")
    mb=$(awk -v b="$(stat -c %s "$f")" 'BEGIN {printf "%.1f", b / 1e6}')
    : >"$out/times.txt"
    for _ in $(seq "$rounds"); do
        /usr/bin/time -f '%e %U %S %M' -a -o "$out/times.txt" "$kvs" report "$f" -o /dev/null 2>>"$out/stderr.txt" ||
            { echo "report failed on $f (see $out/stderr.txt)" >&2; exit 1; }
    done
    wall=$(awk '{print $1}' "$out/times.txt" | median)
    cpu=$(awk '{print $2 + $3}' "$out/times.txt" | median)
    rss=$(awk '{print $4}' "$out/times.txt" | median)
    printf '%-48s %10s %8s %8s %8s %12.0f %10.1f\n' "$(basename "$f")" "$mb" "$rows" "$wall" "$cpu" \
        "$(awk -v r="$rows" -v c="$cpu" 'BEGIN {print (c > 0 ? r / c : 0)}')" "$(awk -v k="$rss" 'BEGIN {print k / 1024}')"
done
