/* kvscope/trace.h — capture what the GPU did (CUPTI activity records, NVTX
 * ranges, kvscope op annotations) and write it as Kineto-compatible
 * Chrome-trace JSON (see kvscope/trace_writer.h for the format).
 *
 * defines: struct kvs_trace, enum kvs_trace_activity, struct kvs_trace_config,
 *          kvs_trace_config_init, kvs_trace_create, kvs_trace_start,
 *          kvs_trace_stop, kvs_trace_write, kvs_trace_write_part, kvs_trace_set_extra,
 *          kvs_trace_get_stats,
 *          kvs_trace_free,
 *          kvs_trace_parse_activities, kvs_trace_activities_str, kvs_trace_api_recorded
 *
 *   struct kvs_trace_config cfg;
 *   kvs_trace_config_init(&cfg);
 *   struct kvs_trace *t;
 *   KVS_TRY(kvs_trace_create(&cfg, &t));   // before the first NVTX call if you can
 *   KVS_TRY(kvs_trace_start(t));
 *   ... launch work; kvs_op_begin()/kvs_op_end() around ops ...
 *   cudaDeviceSynchronize();                // so every GPU record is complete
 *   KVS_TRY(kvs_trace_stop(t));
 *   KVS_TRY(kvs_trace_write(t, "decode.json.gz"));
 *   kvs_trace_free(t);
 *
 * To trace a program without changing it, use `kvscope capture` (the
 * injection library libkvscope-inject.so runs this same code inside it).
 *
 * One capture per process. CUPTI accepts a single subscriber and its buffer
 * callbacks are process-wide, so the capture is a process-wide singleton:
 * kvs_trace_create fails with KVS_STATUS_CUPTI (and a message saying so)
 * while another capture, the PyTorch profiler or Nsight Systems holds CUPTI.
 *
 * Threading. Call create/start/stop/write/free from one controlling thread.
 * CUPTI calls kvscope's buffer callbacks on CUPTI's own worker thread (and,
 * during stop's flush, on the calling thread); NVTX ranges and kvs_op_*
 * annotations are recorded on whichever thread makes them. The logger in the
 * config is called from all of these, so it must be thread-safe. No kvscope
 * lock is held while CUPTI flushes.
 *
 * Memory is bounded: CUPTI records go into at most max_buffers buffers of
 * buffer_bytes each, handed out from a pool and kept on a ready list until
 * written; ranges and ops go into at most host_bytes_max bytes. When either
 * is full, records are dropped and counted (kvs_trace_get_stats, and the
 * "kvscope" object in the written trace) — never unbounded growth, never a
 * crash. Writing needs, in addition, about 100 bytes per record.
 *
 * NVTX. kvscope records NVTX ranges (push/pop and start/end, any domain)
 * through CUPTI's NVTX callbacks, which need CUPTI to be the process's NVTX
 * injection. kvs_trace_create sets NVTX_INJECTION64_PATH to CUPTI's library
 * when it is unset; NVTX reads it once per module, at that module's first
 * NVTX call, so modules that called NVTX before kvs_trace_create stay
 * unseen. kvs_range_* and kvs_op_* need none of this: while a capture of
 * this library runs they record directly.
 *
 * Available only in builds with CUDA (the capture links CUPTI), except
 * kvs_trace_parse_activities, kvs_trace_activities_str and
 * kvs_trace_api_recorded (kvs_trace_writer_dep); the header is plain C.
 */
#ifndef KVSCOPE_TRACE_H
#define KVSCOPE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "kvscope/base.h"
#include "kvscope/trace_writer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kvs_trace;

/* What to record (CUPTI activity kinds, plus NVTX ranges and ops).
 * KVS_TRACE_RUNTIME / KVS_TRACE_DRIVER record only the API calls the
 * analysis reads (kvs_trace_api_recorded: launches, copies, memsets,
 * synchronizations, event waits, graph capture); *_ALL record every call
 * of the API, as CUPTI's RUNTIME / DRIVER kinds do. */
enum kvs_trace_activity {
    KVS_TRACE_KERNEL = 1u << 0,               /* CONCURRENT_KERNEL */
    KVS_TRACE_MEMCPY = 1u << 1,
    KVS_TRACE_MEMSET = 1u << 2,
    KVS_TRACE_RUNTIME = 1u << 3,              /* the runtime API calls the analysis reads */
    KVS_TRACE_DRIVER = 1u << 4,               /* the driver API calls the analysis reads */
    KVS_TRACE_SYNC = 1u << 5,                 /* SYNCHRONIZATION */
    KVS_TRACE_EXTERNAL_CORRELATION = 1u << 6, /* "External id" on GPU work of ops */
    KVS_TRACE_OVERHEAD = 1u << 7,             /* CUPTI's own overhead */
    KVS_TRACE_NVTX = 1u << 8,                 /* NVTX ranges, kvs_range_*, kvs_op_* */
    KVS_TRACE_RUNTIME_ALL = 1u << 9,          /* every CUDA runtime API call */
    KVS_TRACE_DRIVER_ALL = 1u << 10,          /* every CUDA driver API call */
    KVS_TRACE_ALL = (1u << 11) - 1,
    /* what kvs_trace_config_init and `kvscope capture` record: not every
     * API call, and not CUPTI's synchronization records (the analysis reads
     * the synchronize calls; the SYNCHRONIZATION kind costs every runtime
     * call ~250 ns on the H200, bench/cupti_idle.cu) */
    KVS_TRACE_DEFAULT =
        KVS_TRACE_ALL & ~(KVS_TRACE_RUNTIME_ALL | KVS_TRACE_DRIVER_ALL | KVS_TRACE_SYNC),
};

/* "kernel,memcpy,runtime" -> bits; names: kernel memcpy memset runtime
 * runtime-all driver driver-all sync extcorr overhead nvtx, "default"
 * (KVS_TRACE_DEFAULT) or "all". KVS_STATUS_PARSE names nothing (an unknown
 * or empty list); *bits is left alone then. Needs no CUDA. */
KVS_API enum kvs_status kvs_trace_parse_activities(const char *list, unsigned *bits);

/* bits -> "kernel,memcpy,..." in a fixed order, "runtime-all" standing for
 * "runtime" too (and "driver-all" for "driver"). Writes at most n bytes
 * (always terminated when n > 0); returns the length the whole list needs.
 * Needs no CUDA. */
KVS_API size_t kvs_trace_activities_str(unsigned bits, char *buf, size_t n);

/* 1 when KVS_TRACE_RUNTIME / KVS_TRACE_DRIVER record the API call of this
 * name (CUPTI's, with or without its _vNNNN suffix): calls that launch GPU
 * work (kernels, cooperative kernels, graphs; not host functions), copies,
 * memsets, synchronizations, stream waits on events, graph capture and
 * instantiation. cudaGetDevice, cudaGetLastError, cuKernelGetAttribute and
 * the like are left out. Needs no CUDA. */
KVS_API int kvs_trace_api_recorded(const char *name);

/* 1 when the call of this name launches kernels (cudaLaunchKernel,
 * cudaLaunchKernelExC, cudaLaunchCooperativeKernel, cuLaunchKernel, ...;
 * not graph launches, not host functions). The default capture records a
 * runtime call of these by the driver launch it makes (one pair of CUPTI
 * callbacks a launch instead of two; libtrace/capture_api.c). Needs no CUDA. */
KVS_API int kvs_trace_api_kernel_launch(const char *name);

/* The injected capture's bounds on KVS_CAPTURE_BUFFER_MB and
 * KVS_CAPTURE_MAX_BUFFERS (`kvscope capture --buffer-mb/--max-buffers`). */
#define KVS_CAPTURE_BUFFER_MB_MAX 1024
#define KVS_CAPTURE_MAX_BUFFERS_MAX 65536

struct kvs_trace_config {
    unsigned activities;      /* KVS_TRACE_* bits; init: KVS_TRACE_DEFAULT */
    size_t buffer_bytes;      /* one CUPTI buffer; init: 4 MiB (min 64 KiB) */
    unsigned max_buffers;     /* the pool's cap; init: 32 (128 MiB, Kineto's default) */
    size_t host_bytes_max;    /* ranges and ops; init: 64 MiB */
    struct kvs_logger logger; /* must be thread-safe; init: stderr, INFO and up */
    int rank;                 /* distributed rank, -1 unknown (init) */
    int world_size;           /* 0 unknown (init) */
    const char *process_name; /* copied; NULL: the process's own name */
    int set_nvtx_env;         /* set NVTX_INJECTION64_PATH when unset; init: 1 */
};

KVS_API void kvs_trace_config_init(struct kvs_trace_config *cfg);

/* Subscribe to CUPTI and prepare the pools; records nothing yet. */
KVS_API enum kvs_status kvs_trace_create(const struct kvs_trace_config *cfg,
                                         struct kvs_trace **out);

/* Start recording (again: windows accumulate into one trace). */
KVS_API enum kvs_status kvs_trace_start(struct kvs_trace *t);

/* Stop recording and flush every CUPTI buffer. Synchronize the devices
 * first, or kernels still running are missing. */
KVS_API enum kvs_status kvs_trace_stop(struct kvs_trace *t);

/* Write everything recorded so far (after stop): a .gz path is compressed,
 * "-" is stdout. May be called again; records stay until kvs_trace_free. */
KVS_API enum kvs_status kvs_trace_write(struct kvs_trace *t, const char *path);

/* Several GPUs in one process (one thread per GPU, as `kvscope engine --tp N`
 * runs): CUPTI records the whole process in one capture; write each rank's
 * file with its share (struct kvs_trace_part, kvs_trace_select in
 * kvscope/trace_writer.h): its device's GPU work, its threads' ranges, ops
 * and API calls, and the rank, world size and backend as Kineto's
 * "distributedInfo". Drop and buffer counts in "kvscope" are the whole
 * capture's. part NULL: everything, as kvs_trace_write. */
KVS_API enum kvs_status kvs_trace_write_part(struct kvs_trace *t, const char *path,
                                             const struct kvs_trace_part *part);

/* A top-level object of the caller's own (struct kvs_trace_extra in
 * kvscope/trace_writer.h: a key and one JSON object, both copied) written
 * into every later kvs_trace_write / kvs_trace_write_part file of this
 * capture, after "kvscope". Setting a key again replaces its object; json
 * NULL removes it. KVS_STATUS_INVALID_ARGUMENT (logged) for what the writer
 * would refuse, KVS_STATUS_LIMIT beyond KVS_TRACE_MAX_EXTRA keys. Call it
 * from the thread that writes. */
#define KVS_TRACE_MAX_EXTRA 4
KVS_API enum kvs_status kvs_trace_set_extra(struct kvs_trace *t, const char *key,
                                            const char *json);

/* Counts so far (records are counted when written). */
KVS_API void kvs_trace_get_stats(const struct kvs_trace *t, struct kvs_trace_stats *out);

/* Stop if running, unsubscribe, release every buffer. NULL is fine. */
KVS_API void kvs_trace_free(struct kvs_trace *t);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_TRACE_H */
