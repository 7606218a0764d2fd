/* reader_impl.h — state shared by reader.c (the document), event.c (decoding
 * one event) and keep.c (keeping it as records). Private to reader/. */
#ifndef KVS_READER_READER_IMPL_H
#define KVS_READER_READER_IMPL_H

#include <string.h>

#include "kvscope/reader.h"
#include "scan.h"

/* An event resolved to interned ids: what 'X' events, and 'B'/'E' pairs
 * once closed, become before they are kept. A pending 'B' waits as one. */
struct kvs_dec_event {
    uint8_t cat;
    int64_t ts, dur, ext, corr, bytes;
    uint32_t name, shape, thread;
    int32_t device, stream;
    int64_t grid_blocks;   /* kernels: grid x*y*z, 0 when not recorded */
    int32_t block_threads; /* kernels: block x*y*z, 0 when not recorded */
    bool graph_launch;     /* a runtime call that launches a CUDA/HIP graph */
    bool kernel_launch;    /* a runtime/driver call that launches a kernel */
    bool graph_node;       /* GPU work with a "graph node id": a graph replayed it */
};

struct kvs_thread_stack {
    struct kvs_dec_event *v;
    size_t n, cap;
};

/* limits on the records kept (docs/reliability.md): with timestamps in
 * [KVS_READ_TS_MIN, KVS_READ_TS_MAX] and the durations (and bytes) of all
 * kept records summing to at most KVS_READ_MAX_TOTAL, every start + duration,
 * every difference of two times and every sum the analysis forms fits in an
 * int64. Integer ns: 2^62 is the year 2116 on the Unix epoch clock; 2^60 ns
 * is 36 years of activity, 2^60 bytes is 1 EiB. */
#define KVS_READ_TS_MIN (-((int64_t)1 << 60))
#define KVS_READ_TS_MAX ((int64_t)1 << 62)
#define KVS_READ_MAX_TOTAL ((int64_t)1 << 60)
/* the rank of one tensor in an op's "Input Dims" (PyTorch allows 25 on a GPU) */
#define KVS_READ_MAX_RANK 64
/* bytes of one op's Input Dims + Input type kept (interned) as its shape;
 * real ones are a few KB. A larger shape is not kept: the op has no shape
 * (counted in shapes_cut and said once), so memory stays proportional to
 * what the analysis keeps, not to what an event carries. */
#define KVS_READ_MAX_SHAPE ((size_t)64 << 10)

/* The text of one kept event field (name, cat, pid, tid, Input Dims, Input
 * type). It points into the scanner's buffer where it was read; when a
 * refill is about to move the buffer before the event ends (rare: an event
 * across the buffer's end), kvs_reader_before_move copies it into the
 * field's own buffer in struct kvs_reader. So the scanner's buffer never
 * holds an event whole, only the value being read, and the usual event is
 * not copied at all. A key given twice keeps its last value, as Python's
 * json does. */
struct kvs_text {
    const char *p;
    uint32_t len;
    bool in_scan;  /* p is in the scanner's buffer (not yet copied) */
};
struct kvs_textbuf {
    char *p;
    size_t cap;
};
enum kvs_ev_field { KVS_F_CAT, KVS_F_NAME, KVS_F_PID, KVS_F_TID, KVS_F_DIMS, KVS_F_TYPES, KVS_F_COUNT_ };

struct kvs_ev;

/* event_fast.c's guess of the next member: Kineto writes the members of one
 * kind of event in one order, so after a key (in a class: the event's ph for
 * its members, its cat for args) the key that followed it the last two times
 * is checked first, as its whole text "key": with one 32-byte compare, before
 * any search for the closing quote. A slot is a key's text as it was read;
 * which is kvs_event_key's (or kvs_args_key's) number for it. Only a guess: a
 * key that is not the one guessed is read as before (and learnt). */
#define KVS_KEY_SLOTS 62
#define KVS_KEY_LOST (KVS_KEY_SLOTS + 1) /* after a key not learnt: no guess */
#define KVS_KEY_CLASSES 16
struct kvs_key_slot {
    char lit[32];    /* "key": — the quotes, the key, the colon and one space */
    uint32_t mask;   /* the low len bits */
    uint8_t len;
    int8_t which;
};
/* ... and the value a key had the last time in a class (pid 421, "cat":
 * "cpu_op", "Record function id": 0): when the bytes at the value and the
 * one after it (',' or '}') are those again, the value reads as it did, so
 * what reading it gave is set again and the parser goes on after it. */
#define KVS_VAL_GUESSES 256
struct kvs_val_guess {
    char text[16];   /* the value's bytes and the one after it */
    int64_t num;     /* the number it read as (VG_NUM) */
    uint32_t mask;   /* the low len bits */
    uint8_t len;     /* 0: none */
    uint8_t slot, cls; /* whose value: the key's slot, the class */
    uint8_t kind;    /* what reading it gave (event_fast.c's VG_*) */
    char ph;         /* VG_PH */
};
struct kvs_key_guess {
    uint8_t n; /* slots 1..n are used; 0 is the object's start */
    uint8_t next[KVS_KEY_CLASSES][KVS_KEY_SLOTS + 2][2];
    struct kvs_key_slot slot[KVS_KEY_SLOTS + 1];
    struct kvs_val_guess val[KVS_VAL_GUESSES]; /* by slot and class */
};

struct kvs_reader {
    struct kvs_scan scan;
    struct kvs_textbuf fields[KVS_F_COUNT_]; /* the current event's kept fields, once copied */
    struct kvs_ev *cur;                      /* the event being read, or NULL */
    uint64_t ev_off;  /* input offset of the current event's '{': limits it hits are said there */
    bool events_seen; /* a traceEvents array was read: a second one is skipped */
    struct kvs_trace_data *t;
    const struct kvs_read_opts *opt;
    /* per name id: 0 = not asked yet, 1 = a step name, 2 = not */
    uint8_t *step_name;
    size_t step_name_cap;
    /* per name id, for runtime calls: 0 = not asked yet, else 1 | 2 (a graph
     * launch) | 4 (a kernel launch) */
    uint8_t *rt_name;
    size_t rt_name_cap;
    /* the last thread key interned and its id: most events repeat it */
    char last_tkey[160];
    size_t last_tkey_len;
    uint32_t last_thread;
    bool has_last_thread;
    /* B/E pairing, by dense thread id */
    struct kvs_thread_stack *stacks;
    size_t nstacks;
    /* scratch for concatenating shape keys */
    char *scratch;
    size_t scratch_cap;
    struct kvs_key_guess ev_keys, args_keys; /* event_fast.c's guesses of the next key */
    uint64_t total_bytes;          /* file size for progress, 0 if unknown */
    int64_t kept_ns, kept_bytes;   /* sums over kept records, for the limits above */
    struct kvs_source *src;
};

/* event categories the analysis keeps (old Kineto names included) */
enum kvs_ev_cat {
    KVS_EV_NONE = 0,
    KVS_EV_OP,
    KVS_EV_USER,
    KVS_EV_KERNEL,
    KVS_EV_MEMCPY,
    KVS_EV_MEMSET,
    KVS_EV_RUNTIME,
    KVS_EV_OTHER,
};

struct kvs_ev {
    char ph;
    bool has_cat, has_name, has_pid, has_tid, has_dims, has_types;
    bool dims_over, types_over; /* Input Dims / Input type over KVS_READ_MAX_SHAPE: skipped, not kept */
    bool has_ts, has_dur, has_device, has_stream;
    struct kvs_text cat, name, pid, tid, dims, types;
    int64_t ts, dur;
    int64_t ext, corr, bytes, device, stream;
    int64_t grid_blocks, block_threads; /* products of args "grid" / "block", 0 when absent */
    int64_t graph_node;    /* args "graph node id" (a CUDA graph replayed it), 0 when absent */
};


/* *e = {0} for each event (event_fast.c, event.c) in 16-byte stores: gcc
 * makes memset of these 192 bytes a `rep stosq`, which takes tens of cycles
 * to start and holds up the loads of e's fields right after it */
static inline void kvs_ev_clear(struct kvs_ev *e)
{
#if defined(__SSE2__)
    __m128i z = _mm_setzero_si128();
    char *d = (char *)e;
    /* unrolled whole, or gcc makes the loop a memset again */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 16
#endif
    for (size_t i = 0; i + 16 <= sizeof *e; i += 16)
        _mm_storeu_si128((__m128i *)(void *)(d + i), z);
    if (sizeof *e % 16) /* none on x86-64 (192 bytes) */
        memset(d + sizeof *e / 16 * 16, 0, sizeof *e % 16);
#else
    memset(e, 0, sizeof *e);
#endif
}

/* longer than this, a "grid" or "block" list is no [x, y, z]: skipped, not kept */
#define LAUNCH_DIMS_MAX 4096

/* event.c: the product of a "grid"/"block" list's text (its '[' first) into
 * *out when it is a sensible launch (1-3 dims in (0, 2^31]); else *out is
 * left as it was, or 0 */
void kvs_launch_dims_of(const char *text, size_t len, int64_t *out);

/* event.c: whether no flat list of Input Dims text is longer than
 * KVS_READ_MAX_RANK; false with the offending list's offset and rank */
bool kvs_dims_rank_ok(const char *text, size_t len, size_t *list_off, size_t *rank);

/* event_fast.c: the event at the cursor's '{', read in one pass when it is
 * whole in the buffer and of the usual kind: true with *e filled and the
 * cursor past its '}'; false (nothing changed: not the scanner, not *e's
 * caller-visible state) for anything else, which event.c's general path then
 * reads from the same byte, errors and limits included. */
bool kvs_event_fast(struct kvs_reader *r, struct kvs_ev *e);

/* keep.c: an event the decoder finished -> records (X events directly,
 * B/E pairs once closed); false with the scanner's error set on failure */
bool kvs_keep_event(struct kvs_reader *r, const struct kvs_ev *e, uint8_t cat);

/* Record KVS_STATUS_LIMIT at input offset `off` (where the offending value
 * starts; the message names it) and return false. */
bool kvs_reader_limit_at(struct kvs_scan *s, uint64_t off, const char *fmt, ...) KVS_PRINTF(3, 4);

/* Free the event field buffers. */
void kvs_reader_free_fields(struct kvs_reader *r);

/* The scanner's before_move hook (user: the struct kvs_reader): copy the
 * current event's texts out of the buffer. */
void kvs_reader_before_move(void *user, struct kvs_scan *s);

/* Parse the traceEvents array (cursor at '['). */
bool kvs_reader_events(struct kvs_reader *r);

void kvs_reader_free_stacks(struct kvs_reader *r);


/* The keys of a traceEvents entry and of its args the reader keeps, as the
 * small numbers both event parsers (event.c's, event_fast.c's) switch on;
 * 0 for any other key. One table, so the two paths cannot disagree. */
#define KVS_KEY_IS(k, len, lit) ((len) == sizeof(lit) - 1 && !memcmp((k), (lit), sizeof(lit) - 1))
static inline int kvs_event_key(const char *k, size_t len)
{
    switch (len) {
    case 2: return KVS_KEY_IS(k, len, "ph") ? 1 : KVS_KEY_IS(k, len, "ts") ? 2 : 0;
    case 3:
        return KVS_KEY_IS(k, len, "cat")   ? 3
               : KVS_KEY_IS(k, len, "dur") ? 4
               : KVS_KEY_IS(k, len, "pid") ? 5
               : KVS_KEY_IS(k, len, "tid") ? 6
                                           : 0;
    case 4: return KVS_KEY_IS(k, len, "name") ? 7 : KVS_KEY_IS(k, len, "args") ? 8 : 0;
    default: return 0;
    }
}

static inline int kvs_args_key(const char *k, size_t len)
{
    switch (len) {
    case 4: return KVS_KEY_IS(k, len, "grid") ? 8 : 0;
    case 5: return KVS_KEY_IS(k, len, "bytes") ? 1 : KVS_KEY_IS(k, len, "block") ? 9 : 0;
    case 6: return KVS_KEY_IS(k, len, "device") ? 2 : KVS_KEY_IS(k, len, "stream") ? 3 : 0;
    case 10: return KVS_KEY_IS(k, len, "Input Dims") ? 4 : KVS_KEY_IS(k, len, "Input type") ? 5 : 0;
    case 11:
        return KVS_KEY_IS(k, len, "External id") || KVS_KEY_IS(k, len, "external id") ? 6
               : KVS_KEY_IS(k, len, "correlation")                                   ? 7
                                                                                      : 0;
    case 13: return KVS_KEY_IS(k, len, "graph node id") ? 10 : 0;
    default: return 0;
    }
}

#endif
