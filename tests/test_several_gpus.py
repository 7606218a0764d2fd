#!/usr/bin/env python3
"""tests/test_several_gpus.py KVSCOPE — one process, several GPUs in one trace
(a model split over GPUs with device_map="auto"), written
here as Kineto JSON with the figures each design gives:

- two GPUs that run kernels in every step, and on two other device ids a
  memset and a copy in one step: trace.gpu_devices 2, the two said as stray
  (what they ran), not counted: busy fraction and idle time per 2 GPUs;
- a third device that runs a kernel in only 1 of 4 steps, though for 30% of
  the busiest device's kernel time: not one of the step's GPUs (said: "1
  kernel in 1 of 4 steps");
- a full-pool FP8->BF16 cast on both GPUs, 8 ms of a 10 ms step on each:
  kv_full_buffer_cast's recoverable time is per GPU (8 ms, not the 16 ms
  sum), never over the step, and says "2 GPUs share it"; gpu_idle per GPU;
- one GPU, the same cast on two streams at once (16 ms of kernels a 10 ms
  step): the recoverable time is capped at the step time, and says so;
- the same two GPUs in every report format: JSON findings[].gpus, and the
  figures never over the mean step time.

    meson test -C build test_several_gpus
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish  # noqa: E402

KVS = sys.argv[1]
STEP_US, STEPS, CAP = 10_000.0, 4, 131072


def trace(devices, cast_us=8000.0, streams=1, stray=True, rare=False, gemm_us=500.0):
    """ProfilerStep#N every 1.5 x STEP_US; per step and device: a full-pool cast
    (aten::copy_ [CAP,1,576] BF16<-FP8) of cast_us on each of `streams` streams,
    and a GEMM"""
    ev, ext, corr = [], 0, 0
    for s in range(STEPS):
        t = 1_000_000.0 + s * STEP_US * 1.5
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s,
                   "pid": 1, "tid": 1, "ts": t, "dur": STEP_US})

        def launch(op, dims, types, kernel, dev, stream, ts, dur, cat="kernel"):
            nonlocal ext, corr
            ext, corr = ext + 1, corr + 1
            ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts - 20,
                       "dur": 10, "args": {"External id": ext, "Input Dims": dims, "Input type": types}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": ts - 15, "dur": 5, "args": {"correlation": corr, "External id": ext}})
            ev.append({"ph": "X", "cat": cat, "name": kernel, "pid": dev, "tid": stream, "ts": ts,
                       "dur": dur, "args": {"External id": ext, "correlation": corr, "device": dev,
                                            "stream": stream, "bytes": 4096}})

        for d in range(devices):
            for k in range(streams):
                launch("aten::copy_", [[CAP, 1, 576], [CAP, 1, 576]], ["c10::BFloat16", "c10::Float8_e4m3fn"],
                       "void at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)", d, 7 + k,
                       t + 100 + 10 * k, cast_us)
            launch("aten::mm", [[1, 4096], [4096, 4096]], ["c10::BFloat16", "c10::BFloat16"],
                   "nvjet_tst_128x64_64x8_1x1_v_bz_TNN", d, 9, t + 100 + cast_us + 50, gemm_us)
        if stray and s == 2:
            launch("aten::zero_", [[64]], ["float"], "Memset (Device)", 4, 11, t + 300, 5.0, cat="gpu_memset")
            launch("aten::copy_", [[64], [64]], ["float", "float"], "Memcpy DtoD (Device -> Device)", 5, 12,
                   t + 400, 5.0, cat="gpu_memcpy")
        if rare and s == 1:
            launch("aten::mm", [[1, 4096], [4096, 4096]], ["c10::BFloat16", "c10::BFloat16"],
                   "nvjet_tst_128x64_64x8_1x1_v_bz_TNN", 3, 9, t + 200, 0.3 * STEPS * (cast_us + gemm_us))
    props = [{"id": d, "name": "NVIDIA H200"} for d in range(6)]
    return {"schemaVersion": 1, "deviceProperties": props, "traceEvents": ev}


def report(doc, tmp, name, fmt="json", *opts):
    p = os.path.join(tmp, name + ".json")
    with open(p, "w") as f:
        json.dump(doc, f)
    r = subprocess.run([KVS, "report", p, "--format", fmt, "--kv-capacity", str(CAP), *opts],
                       capture_output=True, text=True)
    if not check(r.returncode == 0, "%s: report exits 0 (%d)" % (name, r.returncode)):
        print(r.stderr[-800:])
        return None, r.stderr
    return (json.loads(r.stdout) if fmt == "json" else r.stdout), r.stderr


def finding(j, fid):
    return next((f for f in j["findings"] if f["id"] == fid), None)


with tempfile.TemporaryDirectory() as tmp:
    j, err = report(trace(2, stray=True), tmp, "two_gpus_stray")
    if j:
        st = j["steps"]
        check(j["rank"]["devices"] == 2 and "2 stray device ids" in err
              and "device 4: 1 memset" in err and "device 5: 1 copy" in err,
              "two GPUs counted; the memset's and the copy's devices said as stray (%r)"
              % err.strip().splitlines()[:2])
        busy = STEPS * 2 * (8000 + 500) / STEPS / 1000 + 0.01 / STEPS  # device-ms a step, + the strays
        check(abs(st["gpu_ms_per_step"] - busy) < 0.01 and abs(st["gpu_busy_fraction"] - busy / (2 * 10.0)) < 0.001,
              "busy %.3f device-ms a step, busy fraction of 2 x 10 ms (%s, %s)"
              % (busy, st["gpu_ms_per_step"], st["gpu_busy_fraction"]))
        f = finding(j, "kv_full_buffer_cast")
        step = st["mean_time_ms"]
        check(f is not None and f["gpus"] == 2 and f["gpu_ms_per_step"] <= step
              and abs(f["gpu_ms_per_step"] - 8.0) < 0.01 and "2 GPUs share it" in f["message"],
              "kv_full_buffer_cast per GPU: 8 ms a step on each of 2 GPUs, not the 16 ms sum (%s)"
              % ((f["gpu_ms_per_step"], f["gpus"]) if f else None,))
        check(all(x["gpu_ms_per_step"] <= step + 1e-9 for x in j["findings"]),
              "every finding's recoverable time within the %.1f ms step" % step)
        check(all(x["gpus"] in (1, 2) for x in j["findings"]), "findings[].gpus is 1 or 2")

    j, err = report(trace(2, stray=False, rare=True), tmp, "rare_device")
    if j:
        check(j["rank"]["devices"] == 2 and "device 3: 1 kernel in 1 of 4 steps" in err,
              "a device with a kernel in 1 of 4 steps (30%% of the busiest's time) is not a GPU of the step (%r)"
              % err.strip()[:300])

    # idle: two GPUs busy 1 ms each of a 10 ms step
    j, _ = report(trace(2, cast_us=500.0, stray=False, gemm_us=500.0), tmp, "idle_two")
    if j:
        f = finding(j, "gpu_idle")
        check(f is not None and f["gpus"] == 2 and f["gpu_ms_per_step"] <= j["steps"]["mean_time_ms"]
              and abs(f["gpu_ms_per_step"] - (10.0 - 1.0)) < 0.05,
              "gpu_idle per GPU: 9 ms of each GPU's 10 ms step, not 18 (%s)" % (f and f["gpu_ms_per_step"]))

    # one GPU, the cast on two streams at once: 16 ms of kernels a 10 ms step
    j, _ = report(trace(1, cast_us=8000.0, streams=2, stray=False), tmp, "two_streams")
    if j:
        f = finding(j, "kv_full_buffer_cast")
        step = j["steps"]["mean_time_ms"]
        check(f is not None and f["gpus"] == 1 and abs(f["gpu_ms_per_step"] - step) < 1e-9
              and "at most the step's time" in f["message"] and j["rank"]["devices"] == 1,
              "one GPU, two streams: the recoverable time capped at the %.2f ms step, said (%s)"
              % (step, f and f["gpu_ms_per_step"]))

    text, _ = report(trace(2, stray=True), tmp, "two_gpus_text", "text")
    check(text is not None and "2 GPUs share it" in text, "text: the finding says the GPUs share it")
sys.exit(finish())
