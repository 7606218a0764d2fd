/* kvscope/reader.h — reading traces: bytes in, typed records out, no analysis.
 *
 * defines: struct kvs_trace_data (struct kvs_op_rec, kvs_rt_rec, kvs_gpu_rec,
 *          kvs_range_rec, kvs_opkey, kvs_engine_rec), kvs_trace_data_init,
 *          kvs_trace_data_free, kvs_op_get, kvs_op_ts/dur/end/ext/key/thread/captured/name_at,
 *          kvs_op_push, kvs_op_set_captured, kvs_op_name, kvs_op_shape,
 *          kvs_gpu_get, kvs_gpu_ts/dur, kvs_gpu_push, kvs_rt_get, kvs_rt_push,
 *          KVS_VEC_PUSH, kvs_vec_grow, enum kvs_gpu_kind, KVS_MAX_DEVICES;
 *          struct kvs_packed, kvs_packed_push, kvs_packed_add, kvs_packed_get,
 *          kvs_packed_free, kvs_packed_bytes (packed.c);
 *          struct kvs_read_opts, struct kvs_read_input, kvs_read_any,
 *          kvs_read_trace, kvs_read_trace_memory;
 *          struct kvs_intern, kvs_intern_init, kvs_intern_free, kvs_intern_id,
 *          kvs_intern_str, kvs_intern_len, kvs_intern_count, KVS_INTERN_NONE;
 *          struct kvs_u64map, kvs_u64map_get, kvs_u64map_put, kvs_u64map_free,
 *          kvs_pair_key; kvs_hash_seed, kvs_hash_fmix, kvs_hash_u64,
 *          kvs_hash_bytes; struct kvs_arena, kvs_arena_alloc,
 *          kvs_arena_strdup, kvs_arena_printf, kvs_arena_free;
 *          kvs_kvscope_doc_sniff, kvs_read_kvscope_doc (kvsdoc.c)
 *
 * The reader streams a trace once — Chrome-trace JSON (plain, gzip, or "-"
 * for stdin, through the streaming scanner in reader/scan.c), or an Nsight
 * Systems SQLite export — and keeps compact fixed-size records (interned
 * strings, integer nanoseconds) and the header facts. Memory is proportional
 * to the number of retained records (ops, runtime calls, GPU activities,
 * annotation ranges), never to the file size: event types nobody analyses
 * ([memory] instants, flows, metadata, counters) are counted and dropped.
 * The limits on hostile input are in docs/reliability.md.
 *
 * The tables the records are built with (interning, the u64 map, the seeded
 * hashes, the arena) are here too: the analysis (analyzers/) reads records
 * through them and builds its own. One thread per kvs_trace_data: nothing
 * here is shared between threads, and the reader keeps no global state.
 */
#ifndef KVSCOPE_READER_H
#define KVSCOPE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * interning: each distinct string stored once, named by a 32-bit id. Kernel
 * names (hundreds of bytes, thousands of launches) and op shapes cost 4 bytes
 * per retained record this way. Id 0 is the empty string. Strings are
 * NUL-terminated copies that live until kvs_intern_free(). */

#define KVS_INTERN_NONE UINT32_MAX /* returned when memory ran out */

struct kvs_intern_ent {
    const char *s;
    uint32_t len;
    uint32_t hash;
};

struct kvs_intern {
    struct kvs_intern_ent *ents;
    uint32_t n, cap;
    uint32_t *slots;       /* id + 1, 0 = empty; open addressing */
    uint32_t nslots;       /* power of two */
    char **chunks;         /* string storage */
    size_t nchunks, chunks_cap;
    size_t used, avail;    /* in the last chunk */
    size_t bytes;          /* total string bytes, for memory accounting */
    uint64_t seed;         /* of the hash of every byte (hash.h) */
};

int kvs_intern_init(struct kvs_intern *in); /* 0 or -1 (no memory) */
void kvs_intern_free(struct kvs_intern *in);

/* The id of s[0..len), adding it if new; KVS_INTERN_NONE on no memory. */
uint32_t kvs_intern_id(struct kvs_intern *in, const char *s, size_t len);

static inline const char *kvs_intern_str(const struct kvs_intern *in, uint32_t id)
{
    return in->ents[id].s;
}
static inline uint32_t kvs_intern_len(const struct kvs_intern *in, uint32_t id)
{
    return in->ents[id].len;
}
static inline uint32_t kvs_intern_count(const struct kvs_intern *in) { return in->n; }

/* ---------------------------------------------------------------------------
 * an open-addressing map from 64-bit keys to 32-bit values, for the places
 * that key by an id pair (op name + shape, group + kernel). Values are stored
 * + 1 so that 0 marks an empty slot. Keys are hashed with a seed of the
 * map's own: crafted keys cannot choose to collide. */

struct kvs_u64map {
    uint64_t *keys;
    uint32_t *vals; /* value + 1, 0 = empty */
    size_t cap, n;  /* cap: a power of two */
    uint64_t seed;  /* drawn when the first slots are made (hash.h) */
};

/* The value slot of key (holding value + 1), or NULL when absent. */
uint32_t *kvs_u64map_get(const struct kvs_u64map *m, uint64_t key);

/* The value slot of key, inserted (holding 0 + 1) when new: *added says so.
 * NULL when memory ran out. */
uint32_t *kvs_u64map_put(struct kvs_u64map *m, uint64_t key, bool *added);

void kvs_u64map_free(struct kvs_u64map *m);

static inline uint64_t kvs_pair_key(uint32_t hi, uint32_t lo)
{
    return ((uint64_t)hi << 32) | lo;
}

/* ---------------------------------------------------------------------------
 * the seeded hashes every table uses (interning, the u64 map, the analysis's
 * id tables), so that a table's cost does not depend on the values a trace
 * chooses: ids and names crafted to collide under a fixed function (an
 * invertible multiply, a hash of a sample of the bytes) made linking and
 * interning quadratic. Each table draws its own seed when it is made;
 * results never depend on it (tables are only looked up, never walked in
 * slot order). */

/* A fresh seed from the system's entropy (getentropy), else from the clock
 * and addresses; never fails. */
uint64_t kvs_hash_seed(void);

/* murmur3's finaliser: every input bit reaches every output bit */
static inline uint64_t kvs_hash_fmix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* A 64-bit key; use any bits of the result. */
static inline uint64_t kvs_hash_u64(uint64_t k, uint64_t seed)
{
    return kvs_hash_fmix(k ^ seed);
}

/* All n bytes, mixed into the state 16 at a time by a 64x64->128-bit
 * multiply (wyhash's "mum"), in three independent lanes for long strings
 * (kernel names run to ~1 KB), each word xor'ed with a key drawn from the
 * seed: with the seed unknown, no choice of bytes lines two strings up or
 * zeroes a lane. */
#if defined(__SIZEOF_INT128__)
static inline uint64_t kvs_hash_mum(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t kvs_hash_word(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint64_t kvs_hash_bytes(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)data;
    const uint64_t k1 = seed ^ 0xa0761d6478bd642full, k2 = seed ^ 0xe7037ed1a0b428dbull,
                   k3 = seed ^ 0x8ebc6af09c88c6e3ull;
    uint64_t a = seed ^ ((uint64_t)n * 0x9E3779B97F4A7C15ull), b = a ^ k2, c = a ^ k3;
    size_t left = n;
    if (left >= 48) {
        for (; left >= 48; p += 48, left -= 48) {
            a = kvs_hash_mum(kvs_hash_word(p) ^ k1, kvs_hash_word(p + 8) ^ a);
            b = kvs_hash_mum(kvs_hash_word(p + 16) ^ k2, kvs_hash_word(p + 24) ^ b);
            c = kvs_hash_mum(kvs_hash_word(p + 32) ^ k3, kvs_hash_word(p + 40) ^ c);
        }
        a ^= b ^ c;
    }
    for (; left >= 16; p += 16, left -= 16)
        a = kvs_hash_mum(kvs_hash_word(p) ^ k1, kvs_hash_word(p + 8) ^ a);
    uint64_t t0 = 0, t1 = 0;
    memcpy(&t0, p, left < 8 ? left : 8);
    if (left > 8)
        memcpy(&t1, p + 8, left - 8);
    a = kvs_hash_mum(t0 ^ k2, t1 ^ a ^ ((uint64_t)left << 56));
    return kvs_hash_fmix(a ^ k3);
}
#else
static inline uint64_t kvs_hash_bytes(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)data;
    uint64_t h = seed ^ ((uint64_t)n * 0x9E3779B97F4A7C15ull);
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = kvs_hash_fmix(h ^ w);
    }
    uint64_t tail = 0;
    memcpy(&tail, p, n);
    return kvs_hash_fmix(h ^ tail ^ ((uint64_t)n << 56));
}
#endif

/* ---------------------------------------------------------------------------
 * an arena: allocations freed together (an analysis result's strings and
 * arrays) */

struct kvs_arena {
    void **blocks;
    size_t n, cap;
    bool failed;  /* an allocation returned NULL: the owner fails with NO_MEMORY at its end */
};
void *kvs_arena_alloc(struct kvs_arena *a, size_t size);     /* zeroed; NULL on no memory */
char *kvs_arena_strdup(struct kvs_arena *a, const char *s);
char *kvs_arena_printf(struct kvs_arena *a, const char *fmt, ...) KVS_PRINTF(2, 3);
void kvs_arena_free(struct kvs_arena *a);

/* What distinguishes op calls for grouping: the name and the recorded shapes.
 * Decode loops repeat a few thousand of these, so ops point to them. */
struct kvs_opkey {
    uint32_t name;         /* interned op name */
    uint32_t shape;        /* interned "<Input Dims>\x1f<Input type>" raw text, 0 when none */
};

/* ---------------------------------------------------------------------------
 * packed tables: how the records are held. A table of records of nf int64
 * fields (nf <= KVS_PK_MAX_FIELDS) in blocks of KVS_PK_BLOCK records; in a
 * sealed block each field is base + slope x j + u_j (j the record's place in
 * the block), u_j in the fewest bits the block needs (past 57, 64): 0 for a
 * field constant or rising evenly over the block (a thread, an External id),
 * a few for an interned name, 20-30 for a time. Exact for every
 * int64. The last block is held plain until it fills. Append-only: records
 * are read by value (kvs_packed_get), never changed in place (packed.c). */
#define KVS_PK_BLOCK 128
#define KVS_PK_MAX_FIELDS 12

struct kvs_pk_field {  /* one field of a sealed block, at its start */
    int64_t base;
    int32_t slope;
    uint16_t off;      /* of the field's u_j from the block's start (w 0: 8 zero bytes) */
    uint8_t w;         /* bits a u_j, 0-57 or 64; u_j of record j starts at bit j x w */
    uint8_t sh;        /* 64 - w, 0 for w 0: u_j is the 8 bytes read at its first bit's byte,
                        * >> its bit there, & (~0 >> sh) */
};

struct kvs_packed {
    size_t n;          /* records */
    int64_t *open;     /* the unsealed block, field by field (nf x KVS_PK_BLOCK) */
    uint8_t **blocks;  /* sealed blocks: nf struct kvs_pk_field, then the fields' u_j */
    size_t nblocks, blocks_cap;
    uint8_t **chunks;  /* where sealed blocks are (never moved) */
    size_t nchunks, chunks_cap;
    uint8_t *chunk_at;
    size_t chunk_avail;
    uint8_t nf;
    uint16_t sloped;   /* bit f: field f is tried with a slope */
};

/* Append one record of nf fields (the same nf every time; bit f of sloped:
 * field f may rise through a block, a time or an id, so a slope is tried for
 * it): 0, or -1 when memory ran out (the table is as it was). */
int kvs_packed_push(struct kvs_packed *p, unsigned nf, unsigned sloped, const int64_t *v);
void kvs_packed_free(struct kvs_packed *p);
/* the bytes the table holds (its chunks, the block list, the open block) */
size_t kvs_packed_bytes(const struct kvs_packed *p);

/* the decoders are inlined where they are used, so that a caller reading one
 * field of a record decodes that field only */
#if defined(__GNUC__)
#define KVS_PK_INLINE static inline __attribute__((always_inline))
#else
#define KVS_PK_INLINE static inline
#endif

/* kvs_packed_push, the usual case (a record that neither starts the table nor
 * fills its open block) inlined: nf is the caller's constant. */
KVS_PK_INLINE int kvs_packed_add(struct kvs_packed *p, unsigned nf, unsigned sloped, const int64_t *v)
{
    size_t j = p->n % KVS_PK_BLOCK;
    if (!p->open || j == KVS_PK_BLOCK - 1)
        return kvs_packed_push(p, nf, sloped, v);
    for (unsigned f = 0; f < nf; f++)
        p->open[(size_t)f * KVS_PK_BLOCK + j] = v[f];
    p->n++;
    return 0;
}

/* Field f of record i (i < p->n). */
KVS_PK_INLINE int64_t kvs_packed_get(const struct kvs_packed *p, size_t i, unsigned f)
{
    size_t b = i / KVS_PK_BLOCK, j = i % KVS_PK_BLOCK;
    if (b >= p->nblocks)
        return p->open[(size_t)f * KVS_PK_BLOCK + j];
    const uint8_t *blk = p->blocks[b];
    struct kvs_pk_field h;
    memcpy(&h, blk + (size_t)f * sizeof h, sizeof h);
    const size_t at = j * h.w;
    const uint8_t *d = blk + h.off + (at >> 3);
    uint64_t u;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&u, d, 8); /* a sealed block has 8 bytes after its last value */
#else
    u = 0;
    for (unsigned k = 0; k < 8; k++)
        u |= (uint64_t)d[k] << (8 * k);
#endif
    u = (u >> (at & 7)) & (~(uint64_t)0 >> h.sh);
    return (int64_t)((uint64_t)h.base + (uint64_t)(int64_t)h.slope * j + u);
}

/* ---------------------------------------------------------------------------
 * the records: what the reader keeps of a trace */

/* A cpu_op (PyTorch operator or kvscope annotated op), as read from the
 * trace's table (kvs_op_get): about 6 bytes an op there. */
struct kvs_op_rec {
    int64_t ts, dur;       /* ns on the trace clock */
    int64_t ext;           /* External id, 0 when none */
    uint32_t key;          /* index into kvs_trace_data.opkeys */
    uint32_t thread;       /* dense thread id (kvs_trace_data.threads), below KVS_READ_MAX_THREADS */
    bool captured;         /* recorded while a CUDA graph was captured: its work ran in the
                            * replays, each given a copy of it (link.c); not a call itself */
};

/* Bounds on ids the records hold in fewer than 32 bits (docs/reliability.md):
 * dense thread ids (kvs_trace_data.threads), and the interned name of a GPU
 * record (kvs_trace_data.strings). A trace past either is refused
 * (KVS_STATUS_LIMIT): the intern tables alone would hold over 10 GiB first. */
#define KVS_READ_MAX_THREADS ((uint32_t)1 << 30)
#define KVS_READ_MAX_GPU_NAME ((uint32_t)1 << 29)

/* A CUDA/HIP runtime or driver call: the CPU side of a launch, as read from
 * the trace's table (kvs_rt_get): about 8 bytes one there. */
struct kvs_rt_rec {
    int64_t ts;
    int64_t dur;           /* how long the CPU spent in the call (a blocking call's wait) */
    int64_t corr;          /* correlation id */
    int64_t ext;           /* External id when the call carries one, else 0 */
    uint32_t name;         /* interned call name ("cudaStreamSynchronize", ...) */
    uint32_t thread;       /* dense thread id, below KVS_READ_MAX_THREADS */
    bool graph_launch;     /* cudaGraphLaunch / cuGraphLaunch / hipGraphLaunch */
    bool kernel_launch;    /* cudaLaunchKernel[ExC], cuLaunchKernel[Ex], hipLaunchKernel, ... */
};

enum kvs_gpu_kind { KVS_GPU_KERNEL = 0, KVS_GPU_MEMCPY, KVS_GPU_MEMSET };

/* A kernel, memcpy or memset that ran on a device, as read from the trace's
 * table (kvs_gpu_get): about 10 bytes one there. */
struct kvs_gpu_rec {
    int64_t ts, dur;
    int64_t ext;           /* 0 when none */
    int64_t corr;          /* 0 when none */
    int64_t bytes;         /* memcpy/memset bytes, else 0 */
    int64_t grid_blocks;   /* kernels: grid x*y*z from args "grid", 0 when not recorded */
    uint32_t name;         /* interned name, below KVS_READ_MAX_GPU_NAME */
    uint8_t kind;          /* enum kvs_gpu_kind */
    bool graph_node;       /* args "graph node id" (kvscope's and Kineto's traces): a
                            * CUDA graph replayed it */
    int32_t device;
    int32_t stream;
    int32_t block_threads; /* kernels: block x*y*z from args "block", 0 when not recorded */
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

    struct kvs_packed ops;        /* struct kvs_op_rec: kvs_op_get, kvs_op_push; ops.n of them */
    uint8_t *op_captured;         /* bit i: op i's captured (NULL: none) */
    size_t op_captured_len;       /* its bytes */
    bool ops_ext_sorted;          /* every op has an External id, strictly rising in file order */
    bool ops_ts_sorted;           /* the ops' starts never fall in file order (kvs_op_push) */
    int64_t ops_last_ts;          /* the last op's start */
    struct kvs_opkey *opkeys;
    size_t nopkeys, opkeys_cap;
    struct kvs_u64map opkey_map;  /* (name, shape) -> opkeys index */
    struct kvs_packed rts;        /* struct kvs_rt_rec: kvs_rt_get, kvs_rt_push; rts.n of them */
    struct kvs_packed gpus;       /* struct kvs_gpu_rec: kvs_gpu_get, kvs_gpu_push; gpus.n of them */
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

/* the packed fields of an op (captured is a bit of its own) */
enum { KVS_OPF_TS, KVS_OPF_DUR, KVS_OPF_EXT, KVS_OPF_KEY, KVS_OPF_THREAD, KVS_OPF_N_ };

KVS_PK_INLINE bool kvs_op_captured(const struct kvs_trace_data *t, size_t i)
{
    return i / 8 < t->op_captured_len && (t->op_captured[i / 8] >> (i % 8) & 1);
}
/* Op i (i < t->ops.n), by value; the kvs_op_ts ... accessors below decode
 * one field each. */
KVS_PK_INLINE struct kvs_op_rec kvs_op_get(const struct kvs_trace_data *t, size_t i)
{
    struct kvs_op_rec o;
    o.ts = kvs_packed_get(&t->ops, i, KVS_OPF_TS);
    o.dur = kvs_packed_get(&t->ops, i, KVS_OPF_DUR);
    o.ext = kvs_packed_get(&t->ops, i, KVS_OPF_EXT);
    o.key = (uint32_t)kvs_packed_get(&t->ops, i, KVS_OPF_KEY);
    o.thread = (uint32_t)kvs_packed_get(&t->ops, i, KVS_OPF_THREAD);
    o.captured = kvs_op_captured(t, i);
    return o;
}
KVS_PK_INLINE int64_t kvs_op_ts(const struct kvs_trace_data *t, size_t i)
{
    return kvs_packed_get(&t->ops, i, KVS_OPF_TS);
}
KVS_PK_INLINE int64_t kvs_op_dur(const struct kvs_trace_data *t, size_t i)
{
    return kvs_packed_get(&t->ops, i, KVS_OPF_DUR);
}
KVS_PK_INLINE int64_t kvs_op_end(const struct kvs_trace_data *t, size_t i)
{
    return kvs_packed_get(&t->ops, i, KVS_OPF_TS) + kvs_packed_get(&t->ops, i, KVS_OPF_DUR);
}
KVS_PK_INLINE int64_t kvs_op_ext(const struct kvs_trace_data *t, size_t i)
{
    return kvs_packed_get(&t->ops, i, KVS_OPF_EXT);
}
KVS_PK_INLINE uint32_t kvs_op_key(const struct kvs_trace_data *t, size_t i)
{
    return (uint32_t)kvs_packed_get(&t->ops, i, KVS_OPF_KEY);
}
KVS_PK_INLINE uint32_t kvs_op_thread(const struct kvs_trace_data *t, size_t i)
{
    return (uint32_t)kvs_packed_get(&t->ops, i, KVS_OPF_THREAD);
}
KVS_PK_INLINE uint32_t kvs_op_name_at(const struct kvs_trace_data *t, size_t i)
{
    return t->opkeys[kvs_op_key(t, i)].name;
}
/* the packed fields of a GPU record (name, kind and graph_node in one) */
enum { KVS_GPF_TS, KVS_GPF_DUR, KVS_GPF_EXT, KVS_GPF_CORR, KVS_GPF_BYTES, KVS_GPF_GRID, KVS_GPF_NAME,
       KVS_GPF_DEVICE, KVS_GPF_STREAM, KVS_GPF_BLOCK, KVS_GPF_N_ };

/* GPU record i (i < t->gpus.n), by value; kvs_gpu_ts ... decode one field. */
KVS_PK_INLINE struct kvs_gpu_rec kvs_gpu_get(const struct kvs_trace_data *t, size_t i)
{
    struct kvs_gpu_rec g;
    const struct kvs_packed *p = &t->gpus;
    g.ts = kvs_packed_get(p, i, KVS_GPF_TS);
    g.dur = kvs_packed_get(p, i, KVS_GPF_DUR);
    g.ext = kvs_packed_get(p, i, KVS_GPF_EXT);
    g.corr = kvs_packed_get(p, i, KVS_GPF_CORR);
    g.bytes = kvs_packed_get(p, i, KVS_GPF_BYTES);
    g.grid_blocks = kvs_packed_get(p, i, KVS_GPF_GRID);
    uint64_t nk = (uint64_t)kvs_packed_get(p, i, KVS_GPF_NAME);
    g.name = (uint32_t)(nk >> 3);
    g.kind = (uint8_t)(nk >> 1 & 3);
    g.graph_node = nk & 1;
    g.device = (int32_t)kvs_packed_get(p, i, KVS_GPF_DEVICE);
    g.stream = (int32_t)kvs_packed_get(p, i, KVS_GPF_STREAM);
    g.block_threads = (int32_t)kvs_packed_get(p, i, KVS_GPF_BLOCK);
    return g;
}
KVS_PK_INLINE int64_t kvs_gpu_ts(const struct kvs_trace_data *t, size_t i)
{
    return kvs_packed_get(&t->gpus, i, KVS_GPF_TS);
}
KVS_PK_INLINE int64_t kvs_gpu_dur(const struct kvs_trace_data *t, size_t i)
{
    return kvs_packed_get(&t->gpus, i, KVS_GPF_DUR);
}
/* the packed fields of a runtime call (thread and the two flags in one) */
enum { KVS_RTF_TS, KVS_RTF_DUR, KVS_RTF_CORR, KVS_RTF_EXT, KVS_RTF_NAME, KVS_RTF_THREAD, KVS_RTF_N_ };

/* Runtime call i (i < t->rts.n), by value. */
KVS_PK_INLINE struct kvs_rt_rec kvs_rt_get(const struct kvs_trace_data *t, size_t i)
{
    struct kvs_rt_rec r;
    const struct kvs_packed *p = &t->rts;
    r.ts = kvs_packed_get(p, i, KVS_RTF_TS);
    r.dur = kvs_packed_get(p, i, KVS_RTF_DUR);
    r.corr = kvs_packed_get(p, i, KVS_RTF_CORR);
    r.ext = kvs_packed_get(p, i, KVS_RTF_EXT);
    r.name = (uint32_t)kvs_packed_get(p, i, KVS_RTF_NAME);
    uint64_t th = (uint64_t)kvs_packed_get(p, i, KVS_RTF_THREAD);
    r.thread = (uint32_t)(th >> 2);
    r.graph_launch = th >> 1 & 1;
    r.kernel_launch = th & 1;
    return r;
}
/* Append a runtime call: 0, or -1 when memory ran out. */
int kvs_rt_push(struct kvs_trace_data *t, const struct kvs_rt_rec *r);

/* Append a GPU record: 0, or -1 when memory ran out. */
int kvs_gpu_push(struct kvs_trace_data *t, const struct kvs_gpu_rec *g);

/* Append an op (its captured bit set when o->captured): 0, or -1 when memory
 * ran out. */
int kvs_op_push(struct kvs_trace_data *t, const struct kvs_op_rec *o);
/* Mark op i captured: 0, or -1 when memory ran out. */
int kvs_op_set_captured(struct kvs_trace_data *t, size_t i);

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

/* ---------------------------------------------------------------------------
 * reading. Chrome-trace JSON: header fields (deviceProperties,
 * distributedInfo, the kvscope metadata) are small and parsed with cJSON;
 * the traceEvents array is decoded event by event into struct
 * kvs_trace_data without ever holding the document. Accepts the JSON Object
 * Format ({"traceEvents": [...], ...} with the header before or after the
 * events) and the JSON Array Format ([...]). An Nsight Systems SQLite export
 * (nsys export --type sqlite) is opened read-only and immutable, its tables
 * stepped together in start order into the same records (docs/analysis.md
 * says how). */

struct kvs_read_opts {
    const struct kvs_logger *log;
    kvs_progress_fn progress;
    void *progress_user;
    /* does a cpu_op with this name delimit steps? asked once per distinct
     * name; NULL: names starting with "ProfilerStep#" */
    bool (*is_step_name)(void *user, const char *name);
    void *step_user;
    size_t bufsize;                /* scanner buffer; 0: default */
    size_t source_chunk;           /* in-memory input: raw bytes per read; 0: default */
    /* tests: every event through the general, token-by-token path (the
     * one-pass path for the usual event must keep exactly what it keeps) */
    bool general_path_only;
};

/* Fill *t (zeroed by the caller; freed by the caller with
 * kvs_trace_data_free() whatever the outcome).
 * KVS_STATUS_OK; KVS_STATUS_TRUNCATED: the input ended inside the document,
 * *t holds every complete event before the cut (t->truncated); other
 * statuses: the error was logged (malformed JSON: byte offset and what was
 * expected). */
enum kvs_status kvs_read_trace(const char *path, const struct kvs_read_opts *opt,
                               struct kvs_trace_data *t);

/* The same over data[0..len) in memory (plain JSON or gzip, by magic);
 * name is for messages ("(memory)" when NULL). */
enum kvs_status kvs_read_trace_memory(const void *data, size_t len, const char *name,
                                      const struct kvs_read_opts *opt, struct kvs_trace_data *t);

/* One input: a file (path; "-" reads stdin) or bytes in memory (path names
 * them in messages). */
struct kvs_read_input {
    const char *path;
    const void *data;              /* in memory: data[0..len) */
    size_t len;
    bool in_memory;
};

/* Read an input by its content: an Nsight Systems SQLite export (from a file
 * only), a report it cannot read (.nsys-rep: the message says how to export
 * it), else Chrome-trace JSON. *read_st: the reader's outcome, as
 * kvs_read_trace's; the return value is an error found before any reader
 * ran (KVS_STATUS_UNSUPPORTED, logged), KVS_STATUS_OK otherwise. *t as for
 * kvs_read_trace. */
enum kvs_status kvs_read_any(const struct kvs_read_input *in, const struct kvs_read_opts *opt,
                             struct kvs_trace_data *t, enum kvs_status *read_st);

/* ---------------------------------------------------------------------------
 * kvscope's own JSON documents as inputs (kvsdoc.c): a rank's report read
 * back as its summary (analyzers/rank_summary.c) */

/* When path is a regular file (plain or gzip) whose JSON object's first key
 * is "schema" naming a kvscope document ("kvscope.report/1",
 * "kvscope.multirank/1", ...: as kvscope writes them), that name into
 * schema[0..size), else "". Pipes and stdin ("-") are never read (what is
 * read here could not be read again). KVS_STATUS_IO when it cannot be read. */
enum kvs_status kvs_kvscope_doc_sniff(const char *path, char *schema, size_t size);

/* The whole text of such a file (decompressed, NUL-terminated; free() it),
 * at most max bytes (KVS_STATUS_LIMIT beyond), errors logged to lg. */
enum kvs_status kvs_read_kvscope_doc(const char *path, const struct kvs_logger *lg, size_t max,
                                     char **text, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
