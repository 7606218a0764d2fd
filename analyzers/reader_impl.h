/* reader_impl.h — state shared by reader.c (the document) and event.c (one
 * event). Private to analyzers/. */
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

/* Parse the traceEvents array (cursor at '['). */
bool kvs_reader_events(struct kvs_reader *r);

void kvs_reader_free_stacks(struct kvs_reader *r);

#endif
