"""tests/rankgen.py — a generated multi-rank run for tests: one Kineto-style
Chrome trace per rank of a tensor-parallel decode whose steps end in one
NCCL all-reduce. Per step s of rank r (T = 1 s + 40 ms x s, on the ranks'
shared clock):

- a ProfilerStep#(s+1) CPU range [T, T + 31 ms];
- a GEMM (aten::mm) from T + 0.1 ms to the rank's arrival at the all-reduce,
  a copy (aten::copy_ of [rows, 576] BF16) inside it on a second stream;
- the all-reduce from the arrival to T + 30 ms on every rank (the last
  arrival releases them all), so its ends agree;
- arrival = 20 ms + 0.01 ms x (r % 7), the slow rank's SLOW_MS later.

The slow rank arrives last: it is the straggler. clock_ms shifts one rank's
clock (its collectives then no longer end together).

    from rankgen import write_ranks
    paths = write_ranks(tmpdir, 16, slow=5)
"""
import gzip
import json
import os

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
SLOW_MS = 6.0


def arrive_ms(r, slow):
    return 20.0 + 0.01 * (r % 7) + (SLOW_MS if r == slow else 0.0)


def rank_doc(r, n, steps=5, slow=None, clock_ms=0.0):
    ev, ext = [], 0

    def launch(op, name, ts, dur, stream, dims=None):
        nonlocal ext
        ext += 1
        args = {"External id": ext}
        if dims:
            args["Input Dims"] = dims
            args["Input type"] = ["c10::BFloat16"] * len(dims)
        ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1,
                   "ts": round(ts - 50, 3), "dur": 5, "args": args})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                   "ts": round(ts, 3), "dur": round(dur, 3),
                   "args": {"External id": ext, "device": 0, "stream": stream}})

    rows = 4096 + 64 * r
    for s in range(steps):
        t = (1000.0 + 40.0 * s + clock_ms) * 1e3  # us
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % (s + 1),
                   "pid": 1, "tid": 1, "ts": round(t, 3), "dur": 31e3})
        a = t + arrive_ms(r, slow) * 1e3
        launch("aten::mm", "nvjet_tst_128x64_64x8_1x1_v_bz_TNN", t + 100, a - t - 100, 7,
               [[16, 6144], [6144, 6144]])
        launch("aten::copy_", "void at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)",
               t + 200, 150 + 3 * r, 8, [[rows, 576], [rows, 576]])
        launch("nccl:all_reduce", NCCL, a, t + 30e3 - a, 20)
    return {"schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
            "distributedInfo": {"backend": "nccl", "rank": r, "world_size": n},
            "traceEvents": ev}


def write_ranks(folder, n, steps=5, slow=None, clock_rank=None, clock_ms=0.0, gz=False):
    """n rank traces rank<r>.json[.gz] in folder; their paths, by rank."""
    paths = []
    for r in range(n):
        doc = rank_doc(r, n, steps, slow, clock_ms if r == clock_rank else 0.0)
        p = os.path.join(folder, "rank%d.json%s" % (r, ".gz" if gz else ""))
        with (gzip.open(p, "wt") if gz else open(p, "w")) as f:
            json.dump(doc, f)
        paths.append(p)
    return paths
