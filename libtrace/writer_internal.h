/* writer_internal.h — pieces of the Chrome-trace writer (writer.c) that are
 * worth testing alone: the buffered output (stdio or gzip), JSON string
 * escaping, number formatting, a small hash map and the projection of
 * ranges onto GPU streams.
 *
 * defines: struct kvs_out (kvs_out_*), struct kvs_map (kvs_map_*),
 *          struct kvs_gpu_span, kvs_project_ranges
 */
#ifndef KVSCOPE_WRITER_INTERNAL_H
#define KVSCOPE_WRITER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvscope/trace_writer.h"

// ----------------------------------------------------------------------------
// buffered output: everything goes through one 64 KiB buffer; the first
// failure sticks (errno saved) and later writes are skipped.

struct kvs_out {
    FILE *file;   /* one of file / gz */
    void *gz;     /* gzFile */
    int failed;   /* sticky */
    int err;      /* errno of the failure, 0 for a zlib error */
    size_t len;
    char buf[1 << 16];
};

void kvs_out_init(struct kvs_out *o, FILE *file, void *gz);
void kvs_out_write(struct kvs_out *o, const char *s, size_t n);
void kvs_out_str(struct kvs_out *o, const char *s);            /* raw text */
void kvs_out_fmt(struct kvs_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kvs_out_json_string(struct kvs_out *o, const char *s);    /* quoted; NULL -> "" */
void kvs_out_us(struct kvs_out *o, int64_t ns);                /* "us.nnn" */
void kvs_out_double(struct kvs_out *o, double v);              /* shortest exact; non-finite -> 0 */
int kvs_out_flush(struct kvs_out *o);                          /* 0 ok, -1 failed */

/* Escape s as the inside of a JSON string: ", \ and control characters
 * escaped, invalid UTF-8 bytes replaced by U+FFFD, so any input gives JSON
 * that strict parsers (Python's json) accept. Returns bytes written to dst
 * (no NUL); dst must hold 6 * strlen(s) bytes. */
size_t kvs_json_escape(char *dst, const char *s, size_t n);

/* Whether s is one JSON array of the kind PyTorch's "Input Dims" and
 * "Input type" are: arrays (nested up to 16 deep), integers and strings
 * of printable ASCII without escapes, separated by commas and spaces.
 * Such text is written as it is (struct kvs_trace_host's input_dims). */
int kvs_json_shape_ok(const char *s);

// ----------------------------------------------------------------------------
// uint64 -> uint64 open-addressing map (grows; no deletion)

struct kvs_map {
    uint64_t *keys, *vals;
    uint8_t *used;
    size_t cap, n;
};

int kvs_map_init(struct kvs_map *m, size_t expected); /* 0 ok, -1 no memory */
int kvs_map_put(struct kvs_map *m, uint64_t key, uint64_t val); /* overwrites; -1 no memory */
int kvs_map_get(const struct kvs_map *m, uint64_t key, uint64_t *val); /* 1 found, 0 not */
void kvs_map_free(struct kvs_map *m);

// ----------------------------------------------------------------------------
// projection: the GPU time of the work launched inside each range

struct kvs_gpu_span {
    size_t range;        /* index of the KVS_TREC_RANGE record */
    uint32_t device, stream;
    uint64_t replay;     /* 0, or 1 + the graph launch's correlation (a graph node's range) */
    int64_t start_ns, end_ns;
};

/* For every range record, on every (device, stream) that ran work launched
 * (by an API call on the range's thread, between its start and end) inside
 * it, one span from the first start to the last end of that work. api_of
 * maps a GPU record's correlation to the index of its API record. Work a
 * graph replays whose node is in `nodes` (graph node id -> index of its
 * KVS_TREC_GRAPH_NODE record; may be NULL) also counts as launched by the
 * node's thread when the node was made: one span per range, stream and
 * graph launch (replay). Spans come back sorted by range index, then device,
 * stream and start, in a malloc'd array (*out, *nout; free() it). Returns 0,
 * or -1 when out of memory. */
int kvs_project_ranges(const struct kvs_trace_rec *recs, size_t nrecs,
                       const struct kvs_map *api_of, const struct kvs_map *nodes,
                       struct kvs_gpu_span **out, size_t *nout);

#endif /* KVSCOPE_WRITER_INTERNAL_H */
