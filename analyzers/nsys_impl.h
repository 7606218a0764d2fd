/* nsys_impl.h — state shared by nsys.c (the database: opening, metadata,
 * devices, the summary) and nsys_rows.c (the activity rows, stepped in
 * time order). Private to analyzers/. */
#ifndef KVS_ANALYZERS_NSYS_IMPL_H
#define KVS_ANALYZERS_NSYS_IMPL_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsys.h"

/* the tables whose rows become records, in the order they are reported */
enum kvs_nsys_table {
    KVS_NSYS_KERNEL = 0,
    KVS_NSYS_MEMCPY,
    KVS_NSYS_MEMSET,
    KVS_NSYS_RUNTIME,
    KVS_NSYS_SYNC,
    KVS_NSYS_NVTX,
    KVS_NSYS_TABLES_
};

struct kvs_nsys {
    sqlite3 *db;
    const char *path;
    const struct kvs_read_opts *opt;
    struct kvs_trace_data *t;
    bool have_strings;                 /* a StringIds table */
    sqlite3_stmt *string_q;            /* SELECT value FROM StringIds WHERE id = ? */
    struct kvs_u64map string_map;      /* StringIds id -> interned id + 1 */
    struct kvs_u64map api_map;         /* StringIds id of a runtime call -> its name without the
                                          version suffix | launch bits << 30 (nsys_rows.c) */
    bool present[KVS_NSYS_TABLES_];
    uint64_t rows[KVS_NSYS_TABLES_];   /* rows read per table */
    uint64_t nvtx_ranges, nvtx_ops, nvtx_marks, nvtx_open; /* NVTX rows by what they became */
    uint64_t graph_nodes;              /* GPU rows with a graph node id */
    uint64_t bad_dur;                  /* rows whose end is before their start (kept with 0 ns) */
    uint64_t used_devices;             /* bit d: device d (< 64) ran GPU work */
    int64_t kept_ns, kept_bytes;       /* sums over kept records (reader_impl.h's limits) */
    char *domains;                     /* NVTX domain names, "; "-separated, or NULL */
    size_t domains_len;
};

/* Log the SQLite error of the last call as a read failure and return its
 * status (PARSE for a damaged or foreign file, NO_MEMORY, LIMIT, IO). */
enum kvs_status kvs_nsys_fail(struct kvs_nsys *n, const char *what);

/* Does the table exist? Does it have this column? (by name, PRAGMA table_info) */
bool kvs_nsys_has_table(struct kvs_nsys *n, const char *table);
bool kvs_nsys_has_column(struct kvs_nsys *n, const char *table, const char *column);

/* The interned id of StringIds row `sid` (0: none or absent) into *out. */
enum kvs_status kvs_nsys_string(struct kvs_nsys *n, int64_t sid, uint32_t *out);

/* nsys_rows.c: every activity row, in start order, into n->t */
enum kvs_status kvs_nsys_read_rows(struct kvs_nsys *n);

/* An emit_nvtx op string ("aten::copy_, seq = 3, op_id = 7, sizes = [[4, 2],
 * [4, 2]], input_op_ids = [...]"): the op name (*name_len bytes of text) and
 * the sizes list (*sizes, *sizes_len; NULL when the range has none). False:
 * not such a string (a plain NVTX range). */
bool kvs_nsys_emit_nvtx(const char *text, size_t len, size_t *name_len, const char **sizes,
                        size_t *sizes_len);

#endif
