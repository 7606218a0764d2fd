/* nsys_impl.h — the Nsight Systems SQLite reader (`nsys export --type
 * sqlite`) into the same records the Chrome-trace reader keeps, so that the
 * analysis applies unchanged; kvs_read_any (read.c) calls it. State shared by
 * nsys.c (the database: opening, metadata, devices, the summary) and
 * nsys_rows.c (the activity rows, stepped in time order).
 *
 * The file is opened read-only and immutable (no locks, no journal, never
 * written). Rows of the kernel, memcpy, memset, runtime, synchronisation and
 * NVTX tables are stepped together in start order (one query per table,
 * merged), so records come out in time order and nothing is loaded whole.
 * Columns are selected by name; absent tables are normal and are named in
 * the summary line. Private to reader/; docs/analysis.md describes the
 * mapping.
 */
#ifndef KVS_READER_NSYS_IMPL_H
#define KVS_READER_NSYS_IMPL_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/reader.h"

/* the longest string (a name in StringIds, an NVTX text) a row may hold */
#define KVS_NSYS_MAX_STRING (16 << 20)

enum kvs_nsys_kind {
    KVS_NSYS_NOT = 0,   /* not an Nsight Systems file: the JSON reader's */
    KVS_NSYS_SQLITE,    /* starts with "SQLite format 3\0" */
    KVS_NSYS_REPORT,    /* a .nsys-rep / .qdrep report: must be exported first */
};

/* What path holds, by its first bytes (and a report's file name); "-" and
 * unreadable paths are KVS_NSYS_NOT (the JSON reader reports them). */
enum kvs_nsys_kind kvs_nsys_sniff(const char *path);

/* Fill *t (the caller frees it with kvs_trace_data_free() whatever the
 * outcome). KVS_STATUS_OK, or an error that was logged: PARSE (not a
 * database, corrupt, a column of the wrong type), LIMIT (a time, duration
 * or string past the reader's limits), NO_MEMORY, IO. */
enum kvs_status kvs_read_nsys(const char *path, const struct kvs_read_opts *opt,
                              struct kvs_trace_data *t);

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
