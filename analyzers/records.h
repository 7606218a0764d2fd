/* records.h — what the reader keeps of a trace: compact fixed-size records
 * (interned strings, integer nanoseconds) and the header facts.
 *
 * defines: struct kvs_op_rec, struct kvs_rt_rec, struct kvs_gpu_rec,
 *          struct kvs_range_rec, struct kvs_trace_data, kvs_trace_data_init,
 *          kvs_trace_data_free,
 *          KVS_VEC_PUSH, enum kvs_gpu_kind
 *
 * Memory is proportional to the number of retained records (ops, runtime
 * calls, GPU activities, annotation ranges), never to the file size: event
 * types nobody analyses ([memory] instants, flows, metadata, counters) are
 * counted and dropped. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_RECORDS_H
#define KVS_ANALYZERS_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "intern.h"
#include "u64map.h"

/* What distinguishes op calls for grouping: the name and the recorded shapes.
 * Decode loops repeat a few thousand of these, so ops point to them. */
struct kvs_opkey {
    uint32_t name;         /* interned op name */
    uint32_t shape;        /* interned "<Input Dims>\x1f<Input type>" raw text, 0 when none */
};

/* A cpu_op (PyTorch operator or kvscope annotated op): 32 bytes. */
struct kvs_op_rec {
    int64_t ts, dur;       /* ns on the trace clock */
    int64_t ext;           /* External id, 0 when none */
    uint32_t key;          /* index into kvs_trace_data.opkeys */
    uint32_t thread : 31;  /* dense thread id (kvs_trace_data.threads) */
    uint32_t captured : 1; /* recorded while a CUDA graph was captured: its work ran in the
                            * replays, each given a copy of it (link.c); not a call itself */
};

/* A CUDA/HIP runtime or driver call: the CPU side of a launch. */
struct kvs_rt_rec {
    int64_t ts;
    int64_t dur;           /* how long the CPU spent in the call (a blocking call's wait) */
    int64_t corr;          /* correlation id */
    int64_t ext;           /* External id when the call carries one, else 0 */
    uint32_t thread;
    uint32_t name;         /* interned call name ("cudaStreamSynchronize", ...) */
    uint32_t graph_launch : 1;  /* cudaGraphLaunch / cuGraphLaunch / hipGraphLaunch */
    uint32_t kernel_launch : 1; /* cudaLaunchKernel[ExC], cuLaunchKernel[Ex], hipLaunchKernel, ... */
};

enum kvs_gpu_kind { KVS_GPU_KERNEL = 0, KVS_GPU_MEMCPY, KVS_GPU_MEMSET };

/* A kernel, memcpy or memset that ran on a device. */
struct kvs_gpu_rec {
    int64_t ts, dur;
    int64_t ext;           /* 0 when none */
    int64_t corr;          /* 0 when none */
    int64_t bytes;         /* memcpy/memset bytes, else 0 */
    uint32_t name;
    int32_t device;
    int32_t stream;
    uint8_t kind;          /* enum kvs_gpu_kind */
    uint8_t graph_node;    /* 1: args "graph node id" (kvscope's and Kineto's traces): a
                            * CUDA graph replayed it */
    int32_t block_threads; /* kernels: block x*y*z from args "block", 0 when not recorded */
    int64_t grid_blocks;   /* kernels: grid x*y*z from args "grid", 0 when not recorded */
};

/* A CPU-side range that may delimit steps: user_annotation (NVTX) events,
 * and cpu_op events whose name looks like a step. */
struct kvs_range_rec {
    int64_t ts, dur;
    uint32_t name;
    uint32_t thread;
};

#define KVS_MAX_DEVICES 64

/* The "kvscope.engine" object as read (kvs_engine_info without the
 * analysis's string storage). */
struct kvs_engine_rec {
    bool present;
    char config[64], kv_path[64];
    int64_t batch, context, kv_capacity, layers, tp, steps;
    int graph;
    double bytes_per_step, weight_bytes_per_step, kv_bytes_per_step, copy_gbps, step_ms;
};

struct kvs_trace_data {
    struct kvs_intern strings;    /* names, shapes */
    struct kvs_intern threads;    /* "pid\x1ftid" -> dense thread id */

    struct kvs_op_rec *ops;
    size_t nops, ops_cap;
    bool ops_ext_sorted;          /* every op has an External id, strictly rising in file order */
    struct kvs_opkey *opkeys;
    size_t nopkeys, opkeys_cap;
    struct kvs_u64map opkey_map;  /* (name, shape) -> opkeys index */
    struct kvs_rt_rec *rts;
    size_t nrts, rts_cap;
    struct kvs_gpu_rec *gpus;
    size_t ngpus, gpus_cap;
    struct kvs_range_rec *ranges;
    size_t nranges, ranges_cap;

    /* counts */
    uint64_t bytes;               /* uncompressed JSON bytes read */
    uint64_t events;              /* traceEvents entries read completely */
    uint64_t n_ops, n_kernels, n_memcpys, n_memsets, n_runtime;
    uint64_t unmatched_end;       /* 'E' events without a 'B' */
    uint64_t shapes_cut;          /* ops whose dims + types were over KVS_READ_MAX_SHAPE */
    bool truncated;

    /* header facts */
    struct kvs_engine_rec engine; /* the "kvscope.engine" object */
    bool has_kvscope_meta;
    bool has_kineto_meta;         /* schemaVersion / deviceProperties / traceName */
    bool with_stack;              /* "with_stack": 1/true (the profiler recorded Python stacks) */
    bool from_nsys;               /* read from an Nsight Systems SQLite export (nsys.c) */
    uint64_t dropped_records;
    int rank, world_size;         /* -1 / 0 when not recorded */
    char *device_names[KVS_MAX_DEVICES]; /* by device id (deviceProperties "id") */
};

/* Zero *t and give it its tables (no rank, ops assumed sorted until one is
 * not); false when memory ran out. Readers (reader.c, nsys.c) start here. */
bool kvs_trace_data_init(struct kvs_trace_data *t);
void kvs_trace_data_free(struct kvs_trace_data *t);

static inline uint32_t kvs_op_name(const struct kvs_trace_data *t, const struct kvs_op_rec *o)
{
    return t->opkeys[o->key].name;
}
static inline uint32_t kvs_op_shape(const struct kvs_trace_data *t, const struct kvs_op_rec *o)
{
    return t->opkeys[o->key].shape;
}

/* Append one element to a growable array (grows by 1.5x; big blocks grow in
 * place through mremap). Evaluates to 0, or -1 when memory ran out. */
int kvs_vec_grow(void **arr, size_t *cap, size_t elem, size_t need);
#define KVS_VEC_PUSH(arr, n, cap, val)                                                            \
    (((n) < (cap) || kvs_vec_grow((void **)&(arr), &(cap), sizeof *(arr), (n) + 1) == 0)         \
         ? ((arr)[(n)++] = (val), 0)                                                              \
         : -1)

#endif
