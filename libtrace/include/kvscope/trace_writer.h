/* kvscope/trace_writer.h — plain trace records in, Kineto-compatible
 * Chrome-trace JSON out. No CUDA and no CUPTI here: the capture converts
 * CUPTI's activity records into these structs, tests build them by hand.
 *
 * defines: enum kvs_trace_rec_kind, struct kvs_trace_rec (and its parts),
 *          struct kvs_trace_device, struct kvs_trace_stats,
 *          struct kvs_trace_extra, kvs_trace_check_extra, struct kvs_trace_meta,
 *          kvs_trace_meta_init, kvs_trace_write_json,
 *          kvs_trace_write_json_stream, kvs_trace_format_us, KVS_TRACE_US_BUF,
 *          struct kvs_trace_part, kvs_trace_select, kvs_trace_rank_path
 *
 * What is written (the field names and layout of PyTorch's profiler/Kineto):
 *   { "schemaVersion": 1, "deviceProperties": [...], "distributedInfo": {...},
 *     "cupti_version": N, "cuda_driver_version": N, "kvscope": {...},
 *     "<extra key>": {...}, (the caller's objects: struct kvs_trace_extra)
 *     "displayTimeUnit": "ms", "baseTimeNanoseconds": N,
 *     "traceEvents": [ ... ], "traceName": "..." }
 * with events of category cpu_op, user_annotation, gpu_user_annotation,
 * kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver, cuda_sync,
 * overhead, ac2g flow pairs ("s" at the launching API call, "f" at the GPU
 * activity, id = correlation) and "M" metadata naming processes and threads.
 * `ts`/`dur` are microseconds printed from integer nanoseconds as "us.nnn"
 * (no floating point on the way). All timestamps are on one CPU clock
 * (CLOCK_MONOTONIC); baseTimeNanoseconds + ts*1000 is the wall-clock time.
 *
 * Derived data, never mutation: the writer reads the records as given
 * (const) and builds its own indices to attach "External id" to GPU work and
 * API calls (through KVS_TREC_EXTERNAL_ID links), to emit flows, and to
 * project every range (user_annotation) onto the GPU streams that ran the
 * work launched inside it (gpu_user_annotation, one per device and stream).
 * Work a CUDA graph replays is given the op and the ranges its node was
 * created under (KVS_TREC_GRAPH_NODE links), and says its "graph id" and
 * "graph node id" as Kineto does.
 *
 * Thread safety: the functions are reentrant; records must not change while
 * being written.
 */
#ifndef KVSCOPE_TRACE_WRITER_H
#define KVSCOPE_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvscope/annotate.h"
#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

enum kvs_trace_rec_kind {
    KVS_TREC_KERNEL = 1,  /* cat "kernel" on pid=device, tid=stream */
    KVS_TREC_MEMCPY,      /* cat "gpu_memcpy" */
    KVS_TREC_MEMSET,      /* cat "gpu_memset" */
    KVS_TREC_RUNTIME,     /* cat "cuda_runtime" on pid/tid of the calling thread */
    KVS_TREC_DRIVER,      /* cat "cuda_driver" */
    KVS_TREC_SYNC,        /* cat "cuda_sync" on the device/stream waited for */
    KVS_TREC_OVERHEAD,    /* cat "overhead" (CUPTI's own cost) on pid -1 */
    KVS_TREC_RANGE,       /* cat "user_annotation": an NVTX or kvs_range range */
    KVS_TREC_OP,          /* cat "cpu_op": a kvs_op_begin/end op with shapes */
    KVS_TREC_EXTERNAL_ID, /* no event: links `correlation` to an op's external id */
    KVS_TREC_GRAPH_NODE,  /* no event: the op and ranges a CUDA graph node was created under */
};

/* GPU activity: kernels, memcpy, memset. */
struct kvs_trace_gpu {
    uint32_t device, context, stream;
    int32_t grid[3], block[3];   /* kernels */
    uint32_t registers;          /* kernels: registers per thread */
    int32_t shared_mem;          /* kernels: static + dynamic shared memory, bytes */
    uint64_t bytes;              /* memcpy/memset */
    /* memcpy: "HtoD", "DtoD", ...; src/dst memory kinds "Pageable", "Device", ...
     * memset: dst_kind only. Static strings; the writer composes the event name
     * "Memcpy HtoD (Pageable -> Device)" / "Memset (Device)" when name is NULL. */
    const char *copy_kind, *src_kind, *dst_kind;
    /* work a CUDA graph launched: CUPTI's graph id and graph node id
     * (written as "graph id", "graph node id"); 0 = not from a graph */
    uint32_t graph_id;
    uint64_t graph_node_id;
};

/* A CUDA runtime/driver API call (CPU side). */
struct kvs_trace_api {
    uint32_t pid, tid;           /* system ids of the calling process/thread */
    uint32_t cbid;               /* CUPTI callback id, written as "cbid" */
};

/* A synchronization (cudaStreamSynchronize, cudaEventSynchronize, ...). */
struct kvs_trace_sync {
    uint32_t context;
    int32_t stream;              /* -1 when not a stream sync */
    int32_t event_id;            /* CUDA event id, -1 when none */
};

/* A range or op recorded on a CPU thread. */
struct kvs_trace_host {
    uint32_t pid, tid;
    uint64_t external_id;        /* "External id"; kernels launched in an op carry it */
    const char *domain;          /* NVTX domain name, NULL for the default domain */
    int ntensors;                /* ops: input tensors ("Input Dims", "Input type") */
    const struct kvs_tensor_desc *tensors;
    /* ops from PyTorch's dispatcher: "Input Dims" and "Input type" as
     * torch.profiler writes them, each one JSON array given whole (tensor
     * lists nest; other inputs are [] with type "Scalar", "ScalarList" or
     * ""), written as given instead of tensors when both are set and are
     * such arrays (integers, strings of printable ASCII without escapes,
     * nesting up to 16 deep); else the op is written without shapes. */
    const char *input_dims, *input_types;
    int has_sequence;            /* ops: write "Sequence number" and "Fwd thread id" */
    int64_t sequence_nr, fwd_tid;
};

/* A CUDA graph node and what was open on the thread that created it (a
 * stream capture, or cudaGraphAdd*Node): work the graph replays with this
 * node id gets the op's "External id" instead of its graph launch's, and
 * counts as launched inside the ranges that were open on `tid` at the
 * record's start_ns (projected once per replay: one gpu_user_annotation per
 * range, stream and graph launch). external_id 0: no op was open. */
struct kvs_trace_graph_node {
    uint64_t node_id;            /* CUPTI's graph node id (a clone's id maps to its original's) */
    uint64_t external_id;        /* the innermost open op's External id, 0 = none */
    uint32_t pid, tid;           /* the creating thread */
};

/* One record. Times are CPU-clock nanoseconds (CLOCK_MONOTONIC; GPU times
 * already mapped onto it). end_ns < start_ns is written as a zero duration.
 * Strings are borrowed: they must outlive the write. */
struct kvs_trace_rec {
    enum kvs_trace_rec_kind kind;
    uint32_t correlation;        /* CUPTI correlation id; 0 = none */
    int64_t start_ns, end_ns;
    const char *name;            /* kernel/API/range/op/sync/overhead name */
    union {
        struct kvs_trace_gpu gpu;
        struct kvs_trace_api api;
        struct kvs_trace_sync sync;
        struct kvs_trace_host host;
        uint64_t external_id;    /* KVS_TREC_EXTERNAL_ID */
        struct kvs_trace_graph_node node; /* KVS_TREC_GRAPH_NODE */
    } u;
};

/* A device, with the fields Kineto writes into "deviceProperties". */
struct kvs_trace_device {
    int id;
    char name[128];
    uint64_t total_global_mem;
    int compute_major, compute_minor;
    int max_threads_per_block, max_threads_per_mp;
    int regs_per_block, regs_per_mp, warp_size;
    int shared_mem_per_block, shared_mem_per_block_optin, shared_mem_per_mp;
    int num_sms;
};

/* How the capture went: written as the top-level "kvscope" object. */
struct kvs_trace_stats {
    uint64_t records;                /* records written (CUPTI + host) */
    uint64_t dropped_records;        /* lost: CUPTI had no buffer (CUPTI's count) */
    uint64_t buffer_requests_denied; /* CUPTI asked for a buffer while the pool was empty */
    uint64_t host_records;           /* ranges and ops recorded */
    uint64_t host_dropped;           /* ranges/ops lost: host store full or nesting too deep */
    uint32_t buffers_used;           /* CUPTI buffers handed out (high-water mark) */
    uint32_t buffers_max;            /* the pool's cap */
    uint64_t buffer_bytes;           /* size of one CUPTI buffer */
    uint64_t callback_ns;            /* time spent in kvscope's callbacks */
    uint64_t cupti_overhead_ns;      /* sum of CUPTI's own overhead records */
    uint64_t flush_ns;               /* time of the final flush */
};

/* A caller's own top-level object, written as given after "kvscope" (the
 * engine's "kvscope.engine": its run and byte model, docs/report-json.md).
 * `json` is one JSON object, "{...}"; the writer checks that it is one
 * object whose brackets pair up (up to 64 deep) and whose strings close
 * (not that every number is well formed), and that `key` is none of the
 * writer's own keys nor repeated: anything else is
 * KVS_STATUS_INVALID_ARGUMENT before a byte is written. */
struct kvs_trace_extra {
    const char *key;
    const char *json;
};

/* The writer's check of n extra objects (KVS_STATUS_OK, or
 * KVS_STATUS_INVALID_ARGUMENT with the reason logged), for callers that
 * keep one to write later. */
KVS_API enum kvs_status kvs_trace_check_extra(const struct kvs_trace_extra *extra, int n,
                                              const struct kvs_logger *lg);

struct kvs_trace_meta {
    int64_t base_time_ns;            /* wall clock (Unix ns) at CPU-clock 0 */
    uint32_t pid;                    /* the captured process */
    const char *process_name;        /* NULL: "process" */
    const char *trace_name;          /* "traceName"; NULL: omitted */
    int rank, world_size;            /* distributed position; rank < 0: omitted */
    int cupti_version;               /* 0: omitted */
    int cuda_driver_version;         /* 0: omitted */
    int cuda_runtime_version;        /* 0: omitted */
    const char *window;              /* how the capture window was chosen ("all", ...) */
    unsigned activities;             /* KVS_TRACE_* bits recorded (kvscope/trace.h); 0: omitted */
    const char *runtime_launches;    /* how runtime kernel launches were recorded ("driver": as
                                      * the driver launch each makes); NULL: omitted */
    int64_t window_start_ns, window_end_ns; /* the capture window on the CPU clock */
    const struct kvs_trace_device *devices;
    int ndevices;
    struct kvs_trace_stats stats;
    const char *backend;             /* distributedInfo "backend" ("nccl"); NULL: omitted */
    const struct kvs_trace_extra *extra; /* nextra top-level objects; NULL: none */
    int nextra;
};

/* Zero everything, rank -1. */
KVS_API void kvs_trace_meta_init(struct kvs_trace_meta *meta);

/* Write the trace to `path`: gzip-compressed when it ends in ".gz", "-" for
 * stdout. The file appears complete or not at all (written to a temporary
 * name in the same folder, then renamed). KVS_STATUS_INVALID_ARGUMENT (logged,
 * nothing written) when an extra object is refused (struct kvs_trace_extra). */
KVS_API enum kvs_status kvs_trace_write_json(const struct kvs_trace_meta *meta,
                                             const struct kvs_trace_rec *recs, size_t nrecs,
                                             const char *path, const struct kvs_logger *lg);

/* The same document to an open stdio stream (flushed, not closed). */
KVS_API enum kvs_status kvs_trace_write_json_stream(const struct kvs_trace_meta *meta,
                                                    const struct kvs_trace_rec *recs,
                                                    size_t nrecs, FILE *out,
                                                    const struct kvs_logger *lg);

/* One rank's share of a capture that recorded several GPUs driven by
 * several threads of one process (CUPTI records a whole process): what
 * kvs_trace_select keeps and what the rank's file says about itself. */
struct kvs_trace_part {
    int device;              /* GPU work of this device only; -1: every device */
    const uint32_t *tids;    /* ranges, ops and API calls of these threads only (system */
    int ntids;               /*   thread ids); ntids 0: every thread */
    int process_records;     /* keep what belongs to no device or thread (CUPTI overhead) */
    int rank, world_size;    /* written as distributedInfo and in "kvscope"; rank < 0: unset */
    const char *backend;     /* distributedInfo "backend", e.g. "nccl"; NULL: omitted */
};

/* Keep the records of `part`, in place and in order; returns how many are
 * left. Kept: GPU work (kernel, memcpy, memset) on part->device; ranges and
 * ops of part's threads; an API call made on part's threads or one that
 * launched kept GPU work (libraries' helper threads launch for a rank too);
 * a synchronization on a context of part->device (contexts are learnt from
 * the GPU records), or, when its context ran no recorded work, one whose API
 * call is kept; External-id links of kept calls or work; graph-node links
 * made on part's threads; CUPTI overhead when
 * part->process_records. Returns n unchanged for a NULL part. Returns
 * (size_t)-1, the records untouched, when out of memory. */
KVS_API size_t kvs_trace_select(struct kvs_trace_rec *recs, size_t n,
                                const struct kvs_trace_part *part);

/* Where rank `rank`'s file goes: every "%r" in `path` replaced by the rank;
 * else, with world > 1, ".rank{R}" inserted before ".json" or ".json.gz"
 * ("out.json.gz" -> "out.rank3.json.gz"), before a last ".gz", or at the
 * end; else `path` itself. Returns 0, or -1 when `out` (n bytes) is too
 * small. */
KVS_API int kvs_trace_rank_path(const char *path, int rank, int world, char *out, size_t n);

/* Nanoseconds as microseconds with exactly three decimals, the way Kineto
 * writes `ts`/`dur`: 1234567891 -> "1234567.891", -5 -> "-0.005", 0 ->
 * "0.000". Integer arithmetic only, exact for every int64. Returns the length
 * written (without the NUL) into buf, which holds KVS_TRACE_US_BUF bytes. */
#define KVS_TRACE_US_BUF 32
KVS_API size_t kvs_trace_format_us(int64_t ns, char *buf);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_TRACE_WRITER_H */
