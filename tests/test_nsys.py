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
   exit 2, never a crash. A .nsys-rep says how to export it; an export on
   stdin or gzipped says to give the .sqlite file's name.
4. Several exports as ranks, and compare, on sqlite inputs.

Exit 0 pass, 1 fail.
"""
import gzip
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
if shared and not os.path.isdir(shared):
    shared = ""  # a clone without ../shared (meson names it anyway): those parts skip
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
    r"(?P<sync>\d+) synchronizations, (?P<ranges>\d+) NVTX ranges \((?P<ops>\d+) of them emit_nvtx "
    r"ops\), (?P<marks>\d+) NVTX marks; GPU work on device (?P<devices>.*?); "
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
    # memcpy/memset names from the file's own enum tables (where it has them):
    # "Memcpy HtoD (Pageable -> Device)" as Kineto writes them
    if {"ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND"} <= names:
        def short(enum):  # CUDA_MEMCPY_KIND_UVM_HTOD -> "Unified HtoD"
            k = enum.split("_")[-1]
            return ("Unified " if "_UVM_" in enum else "") + ("Unknown" if k == "UNKNOWN" else k[0] + "to" + k[3])
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in names:
            for op, src, dst, n in db.execute(
                    "SELECT o.name, s.label, d.label, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
                    "JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind "
                    "JOIN ENUM_CUDA_MEM_KIND d ON d.id = m.dstKind GROUP BY 1, 2, 3"):
                f["kernel_calls"]["Memcpy %s (%s -> %s)" % (short(op), src, dst)] = n
        if "CUPTI_ACTIVITY_KIND_MEMSET" in names:
            for kind, n in db.execute("SELECT k.label, count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET m "
                                      "JOIN ENUM_CUDA_MEM_KIND k ON k.id = m.memKind GROUP BY 1"):
                f["kernel_calls"]["Memset (%s)" % kind] = n
    db.close()
    return f


def check_export(path, label, want_status=0):
    """kvscope against SQL on one export; returns the dump."""
    before = sha256(path)
    f = sql_facts(path)
    got, rc = run_dump(path)
    rrc, _, err = run_report(path, "--format", "json", "-o", os.path.join(tmp, "r.json"))
    check(sha256(path) == before, "%s: the file is unchanged by the read" % label)
    m = SUMMARY.search(err)
    if not check(m, "%s: a summary line on stderr%s" % (label, "" if m else ": " + err)):
        return got
    s = m.groupdict()
    for k in ("kernels", "memcpys", "memsets", "runtime", "sync", "ranges", "marks"):
        check(int(s[k]) == f[k], "%s: %s %s, SQL says %s" % (label, k, s[k], f[k]))
    check(s["ver"] == f["ver"], "%s: version %s, SQL says %s" % (label, s["ver"], f["ver"]))
    absent = [] if s["absent"] == "none" else s["absent"].split(", ")
    check(absent == f["absent"], "%s: absent %s, SQL says %s" % (label, absent, f["absent"]))
    has_rows = any(f[k] for k in ("kernels", "memcpys", "memsets", "runtime", "sync", "ranges", "marks"))
    if not has_rows:
        check(rc == 3 and rrc == 2, "%s: no activity: dump rc %d, report rc %d (3, 2 wanted)" % (label, rc, rrc))
        check("holds no CUDA or NVTX activity" in err, "%s: says it holds no CUDA or NVTX activity" % label)
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

    def launch(self, ts, name, start, dur, dev=0, stream=7, api="cudaLaunchKernel_v7000", graph_node=None,
               grid=128, block=256):
        self.corr += 1
        self.db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                        (ts, ts + 2000, GTID, self.corr, self.sid(api)))
        self.db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('dlprof', ?, ?, ?, 1, ?, ?, ?, ?, ?, NULL,"
                        " ?, 1, 1, ?, 1, 1, ?)",
                        (start, start + dur, dev, stream, self.corr, GPID, self.sid(name),
                         self.sid(name.split("<")[0]), grid, block, graph_node))

    def call(self, ts, dur, api):
        """a runtime call that launches nothing (cudaStreamSynchronize_v3020)"""
        self.corr += 1
        self.db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                        (ts, ts + dur, GTID, self.corr, self.sid(api)))

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
# the full-pool FP8 -> BF16 cast kernel of the shared MLA trace, and its launch: 4 elements per thread
CAST = ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
        "::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, "
        "std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
        "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::"
        "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::"
        "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, "
        "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)")
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

# (a2) runtime names without their version suffix: a 6 ms cudaStreamSynchronize_v3020
# a step while the GPU idles is the host_blocking finding, named as Kineto names the
# call (cudaStreamSynchronize), as SQL's StringIds name less its _vNNNN says
e = Export(os.path.join(tmp, "sync.sqlite"))
e.gpu("NVIDIA H200", 0)
for step in range(3):
    s0 = t + step * 10_000_000
    e.nvtx(s0, s0 + 9_500_000, "step %d" % step)
    e.launch(s0 + 10_000, GEMM, s0 + 50_000, 2_000_000)
    e.call(s0 + 2_100_000, 6_000_000, "cudaStreamSynchronize_v3020")
got = check_export(e.close(), "sync")
db = sqlite3.connect(e.path)
sync_name = re.sub(r"_v[0-9]+$", "", db.execute(
    "SELECT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
    "WHERE s.value LIKE '%Synchronize%'").fetchone()[0])
db.close()
rc, _, err = run_report(e.path, "--format", "json", "-o", os.path.join(tmp, "sync.json"))
with open(os.path.join(tmp, "sync.json")) as f:
    hb = [x for x in json.load(f).get("findings", []) if x.get("id") == "host_blocking"]
check(rc == 0 and len(hb) == 1, "sync: one host_blocking finding (exit %d): %s" % (rc, hb or err))
check(hb and "most of it in %s (" % sync_name in hb[0].get("message", "") and "_v3020" not in hb[0]["message"],
      "sync: the blocking call named %s, without its suffix: %s" % (sync_name, hb and hb[0].get("message")))

# (b) graph-launched kernels (graphNodeId set, launched by cudaGraphLaunch) beside NULL ids
e = Export(os.path.join(tmp, "graphs.sqlite"))
e.gpu("NVIDIA H200", 0)
for i in range(4):
    e.launch(t + i * 1_000_000, GEMM, t + i * 1_000_000 + 5000, 200_000)
for i in range(6):
    e.launch(t + 9_000_000 + i * 1000, COPY, t + 9_100_000 + i * 300_000, 100_000,
             api="cudaGraphLaunch_v10000", graph_node=1000 + i)
# emit_nvtx without record_shapes: ops with no dims; an NVTX text that only looks like one is a range
e.nvtx(t - 500_000, t - 400_000, "aten::mm, seq = 1, op_id = 2")
e.nvtx(t - 300_000, t - 200_000, "aten::empty, op_id = 3")
e.nvtx(t - 100_000, t - 50_000, "warmup, batch 4")
got = check_export(e.close(), "graphs")
check(got.get("graph_launched") == 6, "graphs: %s graph-launched, want 6" % got.get("graph_launched"))
check(got.get("ops") == 2, "graphs: %s ops from emit_nvtx ranges without sizes, want 2" % got.get("ops"))

# (c) several devices: TARGET_INFO_GPU lists four, kernels ran on two
e = Export(os.path.join(tmp, "devices.sqlite"))
for d in range(4):
    e.gpu("NVIDIA H100 80GB HBM3", d)
for i in range(8):
    e.launch(t + i * 1_000_000, GEMM, t + i * 1_000_000 + 5000, 400_000, dev=i % 2)
e.memcpy(t + 20_000_000, t + 20_100_000, 50_000, 1 << 20, kind=1, src=1, dst=2, dev=1)
e.nvtx(t, None, "TensorRT", kind=75)                       # a domain's creation
e.nvtx(t + 1_000_000, t + 9_000_000, "prefill", kind=60)   # a start/end range
e.close()
got = check_export(e.path, "devices")
_, _, err = run_report(e.path)
check("GPU work on device 0 (NVIDIA H100 80GB HBM3), 1 (NVIDIA H100 80GB HBM3);" in err,
      "devices: the summary names devices 0 and 1 only: " + err)
check(": NVTX domains: TensorRT" in err, "devices: the NVTX domain is named")
kc = dict(got.get("kernel_calls", []))
check(kc.get("Memcpy HtoD (Pinned -> Device)") == 1, "devices: memcpy named as Kineto does: %s" % kc)

# ---------------------------------------------------------------------------
# 3. hostile files

def refuse(path, label, words):
    before = sha256(path)
    rc, out, err = run_report(path)
    check(rc == 2, "%s: exit %d, want 2 (%s)" % (label, rc, err.strip()))
    check(words in err, "%s: message lacks %r: %s" % (label, words, err.strip()))
    check("Sanitizer" not in err and "Segmentation" not in err, "%s: no crash" % label)
    check(sha256(path) == before, "%s: the file is unchanged" % label)


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

# an export on stdin, or gzipped, is not a file SQLite can open: say so (was the
# JSON reader's "expected '{' or '[' ..., found 'S'")
if shared:  # a real export to feed it
    matmul = os.path.join(root, "nvfuser_matmul_h200_nsys2024.6.2.sqlite")
    hint = "an SQLite database (an Nsight Systems export?), which cannot be read from stdin or through gzip"
    with open(matmul, "rb") as f:
        out = subprocess.run([kvscope, "report", "-"], stdin=f, capture_output=True, text=True)
    check(out.returncode == 2 and hint in out.stderr and "found 'S'" not in out.stderr,
          "stdin: exit %d, the export hint: %s" % (out.returncode, out.stderr.strip()))
    gz = os.path.join(tmp, "export.sqlite.gz")
    with open(matmul, "rb") as f, gzip.open(gz, "wb") as g:
        g.write(f.read())
    refuse(gz, "gzipped export", hint)
else:
    print("skip: stdin and gzipped export refusals (no ../shared/traces/nsys)")

# ---------------------------------------------------------------------------
# 5. a decode-like program written twice, as an nsys export with emit_nvtx
#    op ranges and NVTX step ranges, and as the Chrome trace that carries the
#    same facts (Input Dims, no Input type: emit_nvtx records no dtypes):
#    the same groups, steps and findings

POOL = 495552          # an FP8 KV pool's capacity in tokens, cast whole every layer
STEPS, LAYERS = 4, 6


def decode_program():
    """[(kind, fields)] in time order: ranges, ops, launches (ns)."""
    ev = []
    t = 2_000_000_000
    seq = 0
    for step in range(STEPS):
        s0 = t
        body = []
        for layer in range(LAYERS):
            l0 = t
            seq += 1
            # the full-pool cast: one copy kernel, 0.86 ms
            body.append(("op", "aten::copy_", seq, "[[%d, 1, 576], [%d, 1, 576]]" % (POOL, POOL), t, 30_000))
            body.append(("kernel", CAST, t + 5_000, t + 40_000, 860_000, POOL * 576 // (128 * 4), 128))
            t += 40_000
            seq += 1
            # a small copy done by a DtoD memcpy: its bytes size the group
            body.append(("op", "aten::copy_", seq, "[[4099, 576], [4099, 576]]", t, 20_000))
            body.append(("memcpy", None, t + 5_000, t + 900_000, 3_000, 4099 * 576 * 2))
            t += 20_000
            seq += 1
            body.append(("op", "aten::mm", seq, "[[1, 6144], [6144, 2048]]", t, 20_000))
            body.append(("kernel", GEMM, t + 5_000, t + 910_000, 150_000, 128, 256))
            t += 1_200_000
            body.append(("range", "layer %d" % layer, l0, t - l0))
        t += 30_000_000  # the host stalls (sampling, a sync): no GPU work
        ev.append(("range", "step %d" % step, s0, t - s0 + 100_000))
        ev.extend(body)
        t += 300_000
    return ev


def write_nsys(path, ev):
    e = Export(path)
    e.gpu("NVIDIA H200", 0)
    for x in ev:
        if x[0] == "range":
            e.nvtx(x[2], x[2] + x[3], x[1])
        elif x[0] == "op":
            _, name, seq, sizes, ts, dur = x
            e.nvtx(ts, ts + dur, "%s, seq = %d, op_id = %d, sizes = %s, input_op_ids = [(%d, 0)]"
                   % (name, seq, seq + 1000, sizes, seq + 999))
        elif x[0] == "kernel":
            _, name, ts, start, dur, grid, block = x
            e.launch(ts, name, start, dur, grid=grid, block=block)
        elif x[0] == "memcpy":
            _, _, ts, start, dur, nbytes = x
            e.memcpy(ts, start, dur, nbytes)
    return e.close()


def write_chrome(path, ev):
    us = lambda ns: "%d.%03d" % (ns // 1000, ns % 1000)
    out, corr = [], 0
    cpu = '"pid": %d, "tid": %d' % (PID, 4243)
    for x in ev:
        if x[0] == "range":
            out.append('{"ph": "X", "cat": "user_annotation", "name": "%s", %s, "ts": %s, "dur": %s}'
                       % (x[1], cpu, us(x[2]), us(x[3])))
        elif x[0] == "op":
            _, name, seq, sizes, ts, dur = x
            out.append('{"ph": "X", "cat": "cpu_op", "name": "%s", %s, "ts": %s, "dur": %s, '
                       '"args": {"Input Dims": %s}}' % (name, cpu, us(ts), us(dur), sizes))
        else:
            corr += 1
            ts, start, dur = x[2], x[3], x[4]
            api = "cudaLaunchKernel" if x[0] == "kernel" else "cudaMemcpyAsync"
            out.append('{"ph": "X", "cat": "cuda_runtime", "name": "%s", %s, "ts": %s, "dur": "2.000", '
                       '"args": {"correlation": %d}}' % (api, cpu, us(ts), corr))
            if x[0] == "kernel":
                out.append('{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "ts": %s, '
                           '"dur": %s, "args": {"correlation": %d, "device": 0, "stream": 7, '
                           '"grid": [%d, 1, 1], "block": [%d, 1, 1]}}'
                           % (x[1], us(start), us(dur), corr, x[5], x[6]))
            else:
                out.append('{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", '
                           '"pid": 0, "tid": 7, "ts": %s, "dur": %s, "args": {"correlation": %d, '
                           '"device": 0, "stream": 7, "bytes": %d}}' % (us(start), us(dur), corr, x[5]))
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],\n'
                '"traceEvents": [\n' + ",\n".join(out) + "\n]}\n")
    return path


ev = decode_program()
nsys_path = write_nsys(os.path.join(tmp, "decode.sqlite"), ev)
json_path = write_chrome(os.path.join(tmp, "decode.json"), ev)
check_export(nsys_path, "decode")
for extra in ([], ["--model", "glm5", "--kv-capacity", str(POOL)]):
    label = "decode %s" % (" ".join(extra) or "(no model)")
    a = subprocess.run([dump, nsys_path, *extra], capture_output=True, text=True)
    b = subprocess.run([dump, json_path, *extra], capture_output=True, text=True)
    ga, gb = json.loads(a.stdout), json.loads(b.stdout)
    check(ga["steps"] == STEPS and gb["steps"] == STEPS, "%s: steps %s / %s, want %d"
          % (label, ga["steps"], gb["steps"], STEPS))
    check(ga["ops"] == gb["ops"] == STEPS * LAYERS * 3, "%s: ops %s / %s" % (label, ga["ops"], gb["ops"]))
    check(ga["groups"] == gb["groups"], "%s: groups differ: nsys %s | json %s" % (label, ga["groups"], gb["groups"]))
    check(ga["findings"] == gb["findings"], "%s: findings differ: nsys %s | json %s"
          % (label, ga["findings"], gb["findings"]))
    pool = [g for g in ga["groups"] if g["op"] == "aten::copy_" and abs(g["gpu_ms"] - STEPS * LAYERS * 0.86) < 1e-9]
    if check(len(pool) == 1, "%s: one group holds the pool cast's time: %s" % (label, ga["groups"])):
        g = pool[0]
        check(g["calls_per_step"] == LAYERS, "%s: pool cast %s calls a step, want %d"
              % (label, g["calls_per_step"], LAYERS))
        check(g["match"] and g["match"]["capacity_tokens"] == POOL,
              "%s: pool cast matched to the %d-token buffer: %s" % (label, POOL, g["match"]))
        if not extra:
            # the emit_nvtx dims, no dtypes; no memcpy bytes, and the launch alone
            # (grid x block) does not say the count exactly: bytes unknown, not guessed
            check(g["dims"] == [[POOL, 1, 576], [POOL, 1, 576]] and g["dtypes"] == ["", ""],
                  "%s: pool cast with its recorded dims and no dtypes: %s" % (label, g))
            check(g["bytes_per_call"] == 0, "%s: pool cast bytes %s, want 0 (unknown)" % (label, g["bytes_per_call"]))
        else:
            # the launch (557496 x 128 threads x 4 elements) factored by the model's 576-wide
            # row: BF16 written (2 B) + at least 1 B read per element
            check(g["bytes_per_call"] == POOL * 576 * 3, "%s: pool cast sized from its launch: %s bytes, want %d"
                  % (label, g["bytes_per_call"], POOL * 576 * 3))
            # the launch sizes the bytes only: the recorded dims stay (were [[495552, 576], ...])
            check(g["dims"] == [[POOL, 1, 576], [POOL, 1, 576]] and g["dtypes"] == ["", ""],
                  "%s: pool cast keeps its recorded dims when sized from its launch: %s" % (label, g))
            check("kv_full_buffer_cast" in [f["id"] for f in ga["findings"]],
                  "%s: kv_full_buffer_cast found: %s" % (label, ga["findings"]))
    small = [g for g in ga["groups"] if g["dims"] == [[4099, 576], [4099, 576]]]
    if check(len(small) == 1, "%s: one group with the small copy's dims" % label):
        # a DtoD memcpy reads and writes its bytes
        check(small[0]["bytes_per_call"] == 2 * 4099 * 576 * 2,
              "%s: small copy sized by its memcpy bytes: %s" % (label, small[0]["bytes_per_call"]))
    # the host stalls 30 ms a step: the GPU idles most of each step
    check("gpu_idle" in [f["id"] for f in ga["findings"]], "%s: gpu_idle found: %s" % (label, ga["findings"]))

# the same program as a Kineto trace with dtypes: compare pairs its groups
# with the export's by role (without the dtype pair), and does not call the
# full-buffer cast resolved because the export cannot show it
with open(json_path) as f:
    typed = f.read()
typed = typed.replace('"Input Dims": [[%d, 1, 576], [%d, 1, 576]]}' % (POOL, POOL),
                      '"Input Dims": [[%d, 1, 576], [%d, 1, 576]], '
                      '"Input type": ["c10::BFloat16", "c10::Float8_e4m3fn"]}' % (POOL, POOL))
typed = typed.replace('"Input Dims": [[4099, 576], [4099, 576]]}',
                      '"Input Dims": [[4099, 576], [4099, 576]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}')
typed_path = os.path.join(tmp, "typed.json")
with open(typed_path, "w") as f:
    f.write(typed)
cmp_ = subprocess.run([kvscope, "compare", typed_path, nsys_path, "--format", "json"], capture_output=True, text=True)
cmp_m = subprocess.run([kvscope, "compare", typed_path, nsys_path, "--format", "json", "--model", "glm5",
                        "--kv-capacity", str(POOL)], capture_output=True, text=True)
if check(cmp_m.returncode == 0, "kineto vs nsys compare --model: exit %d" % cmp_m.returncode):
    c = json.loads(cmp_m.stdout)
    # sized from its launch on the nsys side: the cast is found in both, not resolved
    check("kv_full_buffer_cast" not in c["resolved"] + c["new"],
          "kineto vs nsys --model: the cast neither resolved nor new: %s / %s" % (c["resolved"], c["new"]))
if check(cmp_.returncode == 0, "kineto vs nsys compare: exit %d: %s" % (cmp_.returncode, cmp_.stderr[-300:])):
    c = json.loads(cmp_.stdout)
    roles = {g["role"]: (g["before"] is not None, g["after"] is not None) for g in c["groups"]}
    check(roles == {"copy/cast [*,1,576]": (True, True), "copy/cast [*,576]": (True, True)},
          "kineto vs nsys: both copies paired by role: %s" % roles)
    check("kv_full_buffer_cast" not in c["resolved"], "kineto vs nsys: the cast is not called resolved: %s"
          % c["resolved"])
    check(any(v.startswith("Not judged: kv_full_buffer_cast") for v in c["verdict"]),
          "kineto vs nsys: the verdict says the cast cannot be judged: %s" % c["verdict"])

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
