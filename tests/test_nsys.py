#!/usr/bin/env python3
"""tests/test_nsys.py ANALYSIS_DUMP KVSCOPE — Nsight Systems SQLite exports.

1. Every real export in ../shared/traces/nsys read by kvscope with the kernel,
   memcpy, memset, runtime, synchronisation and NVTX counts, kernel names,
   GPU busy time (union of activity per device), device name and export
   version that independent SQL (Python's sqlite3) computes here, now; the
   absent tables named; the file unchanged (sha256 before and after).
2. Generated exports for what the real files lack: the old metadata table
   (EXPORT_META_DATA), NVTX step ranges and registered strings (textId),
   graph-launched kernels (graphNodeId set, cudaGraphLaunch_v10000), several
   devices, extra and reordered columns.
3. Hostile files: a cut export, the magic with garbage behind it, a column
   of the wrong type, a string past the reader's limit: a clear error,
   exit 2, never a crash. A .nsys-rep says how to export it.
4. Several exports as ranks, and compare, on sqlite inputs.

Exit 0 pass, 1 fail.
"""
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from kvs_test import check, finish, union

dump, kvscope = sys.argv[1], sys.argv[2]
shared = os.environ.get("KVS_SHARED_DIR", "")
root = os.path.join(shared, "traces", "nsys")
tmp = tempfile.mkdtemp(prefix="kvs-nsys-")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run_dump(path):
    out = subprocess.run([dump, path], capture_output=True, text=True)
    return json.loads(out.stdout) if out.stdout.strip() else {"status": -1}, out.returncode


def run_report(*args):
    out = subprocess.run([kvscope, "report", *args], capture_output=True, text=True)
    return out.returncode, out.stdout, out.stderr


SUMMARY = re.compile(
    r"Nsight Systems export \(nsys (?P<ver>[^,]+), schema (?P<schema>[^)]+)\): (?P<kernels>\d+) kernels, "
    r"(?P<memcpys>\d+) memcpys, (?P<memsets>\d+) memsets, (?P<runtime>\d+) runtime/driver calls, "
    r"(?P<sync>\d+) synchronizations, (?P<ranges>\d+) NVTX ranges \((?P<ops>\d+) of them ops with "
    r"emit_nvtx shapes\), (?P<marks>\d+) NVTX marks; GPU work on device (?P<devices>.*?); "
    r"absent tables: (?P<absent>.*)$", re.M)

TABLES = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
          "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS"]
GPU_TABLES = TABLES[:3]


def sql_facts(path):
    """What the export holds, by plain SQL."""
    db = sqlite3.connect("file:%s?mode=ro&immutable=1" % path, uri=True)
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    count = lambda t, where="": db.execute("SELECT count(*) FROM %s %s" % (t, where)).fetchone()[0] \
        if t in names else 0
    f = {
        "kernels": count("CUPTI_ACTIVITY_KIND_KERNEL"),
        "memcpys": count("CUPTI_ACTIVITY_KIND_MEMCPY"),
        "memsets": count("CUPTI_ACTIVITY_KIND_MEMSET"),
        "runtime": count("CUPTI_ACTIVITY_KIND_RUNTIME"),
        "sync": count("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"),
        "ranges": count("NVTX_EVENTS", "WHERE eventType IN (59, 60) AND end IS NOT NULL"),
        "marks": count("NVTX_EVENTS", "WHERE eventType = 34"),
        "absent": [t for t in TABLES if t not in names],
    }
    meta = "META_DATA_EXPORT" if "META_DATA_EXPORT" in names else \
        "EXPORT_META_DATA" if "EXPORT_META_DATA" in names else None
    f["ver"] = "unknown"
    if meta:
        row = db.execute("SELECT value FROM %s WHERE name='EXPORT_PRODUCT_VERSION'" % meta).fetchone()
        f["ver"] = row[0] if row else "unknown"
    else:
        f["absent"].append("META_DATA_EXPORT / EXPORT_META_DATA (version unknown)")
    # GPU busy: the union of kernel/memcpy/memset intervals, per device, summed
    iv = {}
    for t in GPU_TABLES:
        if t in names:
            for dev, s, e in db.execute("SELECT deviceId, start, end FROM %s" % t):
                iv.setdefault(dev, []).append((s, max(s, e)))
    busy = sum(union(xs) for xs in iv.values())
    f["busy_ms"] = busy / 1e6
    f["devices"] = sorted(iv)
    f["device_names"] = {}
    for d in iv:
        row = db.execute("SELECT name FROM TARGET_INFO_GPU WHERE id = ?", (d,)).fetchone()
        f["device_names"][d] = row[0] if row else None
    # kernel names as the demangled name, and memcpy/memset rows by Kineto's naming
    f["kernel_calls"] = {}
    if "CUPTI_ACTIVITY_KIND_KERNEL" in names:
        for name, n in db.execute("SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                                  "JOIN StringIds s ON s.id = k.demangledName GROUP BY 1"):
            f["kernel_calls"][name] = n
    db.close()
    return f


def check_export(path, label, want_status=0):
    """kvscope against SQL on one export; returns the dump."""
    before = sha256(path)
    f = sql_facts(path)
    got, rc = run_dump(path)
    rrc, _, err = run_report(path, "--format", "json", "-o", os.path.join(tmp, "r.json"))
    check(sha256(path) == before, "%s: the file changed while read" % label)
    m = SUMMARY.search(err)
    if not check(m, "%s: no summary line in: %s" % (label, err)):
        return got
    s = m.groupdict()
    for k in ("kernels", "memcpys", "memsets", "runtime", "sync", "ranges", "marks"):
        check(int(s[k]) == f[k], "%s: %s %s, SQL says %s" % (label, k, s[k], f[k]))
    check(s["ver"] == f["ver"], "%s: version %s, SQL says %s" % (label, s["ver"], f["ver"]))
    absent = [] if s["absent"] == "none" else s["absent"].split(", ")
    check(absent == f["absent"], "%s: absent %s, SQL says %s" % (label, absent, f["absent"]))
    has_rows = any(f[k] for k in ("kernels", "memcpys", "memsets", "runtime", "sync", "ranges", "marks"))
    if not has_rows:
        check(rc == 3 and rrc == 2, "%s: no activity: dump rc %d, report rc %d (want 3, 2)" % (label, rc, rrc))
        check("holds no CUDA or NVTX activity" in err, "%s: no clear message: %s" % (label, err))
        return got
    check(rrc == 0, "%s: report exit %d: %s" % (label, rrc, err))
    check(got.get("status") == want_status, "%s: status %s" % (label, got.get("status")))
    check(got.get("producer") == "nsight-systems", "%s: producer %s" % (label, got.get("producer")))
    for k in ("kernels", "memcpys", "memsets"):
        check(got.get(k) == f[k], "%s: %s %s, SQL says %s" % (label, k, got.get(k), f[k]))
    check(abs(got.get("total_gpu_ms", -1) - f["busy_ms"]) < 1e-6,
          "%s: GPU busy %s ms, SQL says %s ms" % (label, got.get("total_gpu_ms"), f["busy_ms"]))
    check(got.get("gpu_devices") == len(f["devices"]),
          "%s: %s devices, SQL says %s" % (label, got.get("gpu_devices"), f["devices"]))
    if f["devices"]:
        want_dev = f["device_names"][f["devices"][0]] if len(f["devices"]) == 1 else got.get("device")
        check(got.get("device") == want_dev, "%s: device %s, SQL says %s" % (label, got.get("device"), want_dev))
    kc = {n: c for n, c in got.get("kernel_calls", [])}
    for name, n in f["kernel_calls"].items():
        check(kc.get(name) == n, "%s: kernel %.60s: %s calls, SQL says %s" % (label, name, kc.get(name), n))
    return got


# ---------------------------------------------------------------------------
# 1. the real exports

real = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".sqlite")) \
    if os.path.isdir(root) else []
if shared:
    check(len(real) == 6, "expected six real exports under %s, found %d" % (root, len(real)))
for path in real:
    check_export(path, os.path.basename(path))

# ---------------------------------------------------------------------------
# 2. generated exports: the real schema's columns (a subset), some reordered,
#    one extra column a post-processing tool adds

SCHEMA = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (kernel_name TEXT, start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,
  blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER,
  graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER);
"""

PID = 4242
GPID = PID << 24
GTID = GPID | 4243


class Export:
    """A small export written with the real tables' column names."""

    def __init__(self, path, meta="META_DATA_EXPORT", version="2025.1.1.110"):
        if os.path.exists(path):
            os.remove(path)
        self.db = sqlite3.connect(path)
        self.db.executescript(SCHEMA)
        if meta:
            self.db.execute("CREATE TABLE %s (name TEXT NOT NULL, value TEXT)" % meta)
            self.db.execute("INSERT INTO %s VALUES ('EXPORT_PRODUCT_VERSION', ?)" % meta, (version,))
            self.db.execute("INSERT INTO %s VALUES ('EXPORT_SCHEMA_VERSION', '3.0.0')" % meta)
        self.strings = {}
        self.corr = 0
        self.path = path

    def sid(self, s):
        if s not in self.strings:
            self.strings[s] = len(self.strings) + 1
            self.db.execute("INSERT INTO StringIds VALUES (?, ?)", (self.strings[s], s))
        return self.strings[s]

    def gpu(self, name, dev=0):
        self.db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, ?, '')", (dev, name))

    def launch(self, ts, name, start, dur, dev=0, stream=7, api="cudaLaunchKernel_v7000", graph_node=None):
        self.corr += 1
        self.db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                        (ts, ts + 2000, GTID, self.corr, self.sid(api)))
        self.db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('dlprof', ?, ?, ?, 1, ?, ?, ?, ?, ?, NULL,"
                        " 128, 1, 1, 256, 1, 1, ?)",
                        (start, start + dur, dev, stream, self.corr, GPID, self.sid(name),
                         self.sid(name.split("<")[0]), graph_node))

    def memcpy(self, ts, start, dur, nbytes, kind=8, src=2, dst=2, dev=0):
        self.corr += 1
        self.db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                        (ts, ts + 2000, GTID, self.corr, self.sid("cudaMemcpyAsync_v3020")))
        self.db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1, 7, ?, ?, ?, ?, ?, ?, NULL)",
                        (start, start + dur, dev, self.corr, GPID, nbytes, kind, src, dst))

    def nvtx(self, start, end, text, registered=False, kind=59):
        if registered:
            self.db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, NULL, NULL, NULL, NULL, ?, NULL, ?, 0)",
                            (start, end, kind, GTID, self.sid(text)))
        else:
            self.db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, NULL, NULL, NULL, ?, ?, NULL, NULL, 0)",
                            (start, end, kind, text, GTID))

    def close(self):
        self.db.commit()
        self.db.close()
        return self.path


GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(T1::Params)"
COPY = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]>>(int, T3)"

# (a) old metadata table, registered NVTX strings as step ranges, 3 steps
e = Export(os.path.join(tmp, "old_meta.sqlite"), meta="EXPORT_META_DATA", version="2023.2.3.1001")
e.gpu("NVIDIA H200", 0)
t = 1_000_000_000
for step in range(3):
    s0 = t + step * 10_000_000
    e.nvtx(s0, s0 + 9_000_000, "step %d" % step, registered=True)
    e.launch(s0 + 10_000, GEMM, s0 + 50_000, 3_000_000)
    e.launch(s0 + 20_000, COPY, s0 + 3_100_000, 1_000_000)
    e.nvtx(s0 + 5_000_000, None, "a mark", kind=34)
got = check_export(e.close(), "old_meta")
check(got.get("steps") == 3, "old_meta: %s steps from registered NVTX 'step N' ranges, want 3" % got.get("steps"))

# (b) graph-launched kernels (graphNodeId set, launched by cudaGraphLaunch) beside NULL ids
e = Export(os.path.join(tmp, "graphs.sqlite"))
e.gpu("NVIDIA H200", 0)
for i in range(4):
    e.launch(t + i * 1_000_000, GEMM, t + i * 1_000_000 + 5000, 200_000)
for i in range(6):
    e.launch(t + 9_000_000 + i * 1000, COPY, t + 9_100_000 + i * 300_000, 100_000,
             api="cudaGraphLaunch_v10000", graph_node=1000 + i)
got = check_export(e.close(), "graphs")
check(got.get("graph_launched") == 6, "graphs: %s graph-launched, want 6" % got.get("graph_launched"))

# (c) several devices: TARGET_INFO_GPU lists four, kernels ran on two
e = Export(os.path.join(tmp, "devices.sqlite"))
for d in range(4):
    e.gpu("NVIDIA H100 80GB HBM3", d)
for i in range(8):
    e.launch(t + i * 1_000_000, GEMM, t + i * 1_000_000 + 5000, 400_000, dev=i % 2)
e.memcpy(t + 20_000_000, t + 20_100_000, 50_000, 1 << 20, kind=1, src=1, dst=2, dev=1)
e.close()
got = check_export(e.path, "devices")
_, _, err = run_report(e.path)
check("GPU work on device 0 (NVIDIA H100 80GB HBM3), 1 (NVIDIA H100 80GB HBM3);" in err,
      "devices: the summary names devices 0 and 1 only: " + err)
kc = dict(got.get("kernel_calls", []))
check(kc.get("Memcpy HtoD (Pinned -> Device)") == 1, "devices: memcpy named as Kineto does: %s" % kc)

# ---------------------------------------------------------------------------
# 3. hostile files

def refuse(path, label, words):
    before = sha256(path)
    rc, out, err = run_report(path)
    check(rc == 2, "%s: exit %d, want 2 (%s)" % (label, rc, err.strip()))
    check(words in err, "%s: message lacks %r: %s" % (label, words, err.strip()))
    check("Sanitizer" not in err and "Segmentation" not in err, "%s: crashed: %s" % (label, err))
    check(sha256(path) == before, "%s: the file changed" % label)


big = real[2] if len(real) > 2 else e.path
cut = os.path.join(tmp, "cut.sqlite")
with open(big, "rb") as f:
    data = f.read()
with open(cut, "wb") as f:
    f.write(data[: len(data) // 3])
refuse(cut, "cut export", "damaged or cut")

garbage = os.path.join(tmp, "garbage.sqlite")
with open(garbage, "wb") as f:
    f.write(b"SQLite format 3\0" + bytes((i * 37 + 11) % 256 for i in range(8192)))
refuse(garbage, "magic and garbage", "SQLite")

e = Export(os.path.join(tmp, "wrong_type.sqlite"))
e.gpu("NVIDIA H200", 0)
e.launch(t, GEMM, t + 5000, 1000)
e.db.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 'soon'")
refuse(e.close(), "wrong column type", 'column "end" holds TEXT, not an integer')

e = Export(os.path.join(tmp, "huge_string.sqlite"))
e.gpu("NVIDIA H200", 0)
e.launch(t, "k" * (17 << 20), t + 5000, 1000)
refuse(e.close(), "huge string", "longer than")

e = Export(os.path.join(tmp, "no_start.sqlite"))
e.db.execute("DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME")
e.db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (begin INTEGER, nameId INTEGER)")
refuse(e.close(), "no start column", 'has no "start" column')

rep = os.path.join(tmp, "profile.nsys-rep")
with open(rep, "wb") as f:
    f.write(b"not read")
refuse(rep, ".nsys-rep", "nsys export --type sqlite --output FILE.sqlite")

# ---------------------------------------------------------------------------
# 4. ranks and compare on sqlite inputs

a, b = os.path.join(tmp, "old_meta.sqlite"), os.path.join(tmp, "graphs.sqlite")
rc, out, err = run_report(a, b, "--format", "json")
check(rc == 0 and "kvscope.multirank/1" in out, "two exports as ranks: exit %d: %s" % (rc, err[-400:]))
cmp_ = subprocess.run([kvscope, "compare", a, b], capture_output=True, text=True)
check(cmp_.returncode == 0 and cmp_.stdout.strip(), "compare of two exports: exit %d: %s"
      % (cmp_.returncode, cmp_.stderr[-400:]))

if not os.environ.get("KVS_KEEP_TMP"): shutil.rmtree(tmp)
sys.exit(finish())
