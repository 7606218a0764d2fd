/* reader_impl.h — state shared by reader.c (the document), event.c (decoding
 * one event) and keep.c (keeping it as records). Private to analyzers/. */
#ifndef KVS_ANALYZERS_READER_IMPL_H
#define KVS_ANALYZERS_READER_IMPL_H

#include "reader.h"
#include "scan.h"

/* An event resolved to interned ids: what 'X' events, and 'B'/'E' pairs
 * once closed, become before they are kept. A pending 'B' waits as one. */
struct kvs_dec_event {
    uint8_t cat;
    int64_t ts, dur, ext, corr, bytes;
    uint32_t name, shape, thread;
    int32_t device, stream;
};

struct kvs_thread_stack {
    struct kvs_dec_event *v;
    size_t n, cap;
};

struct kvs_reader {
    struct kvs_scan scan;
    struct kvs_trace_data *t;
    const struct kvs_read_opts *opt;
    /* per name id: 0 = not asked yet, 1 = a step name, 2 = not */
    uint8_t *step_name;
    size_t step_name_cap;
    /* B/E pairing, by dense thread id */
    struct kvs_thread_stack *stacks;
    size_t nstacks;
    /* scratch for concatenating shape keys */
    char *scratch;
    size_t scratch_cap;
    uint64_t total_bytes;          /* file size for progress, 0 if unknown */
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

struct kvs_span {
    uint32_t off, len;
};

struct kvs_ev {
    char ph;
    bool has_cat, has_name, has_pid, has_tid, has_dims, has_types;
    bool has_ts, has_dur, has_device, has_stream;
    struct kvs_span cat, name, pid, tid, dims, types;
    int64_t ts, dur;
    int64_t ext, corr, bytes, device, stream;
};


/* keep.c: an event the decoder finished -> records (X events directly,
 * B/E pairs once closed); false with the scanner's error set on failure */
bool kvs_keep_event(struct kvs_reader *r, const struct kvs_ev *e, uint8_t cat);

/* Parse the traceEvents array (cursor at '['). */
bool kvs_reader_events(struct kvs_reader *r);

void kvs_reader_free_stacks(struct kvs_reader *r);

#endif
