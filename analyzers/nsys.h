/* nsys.h — read an Nsight Systems SQLite export (`nsys export --type sqlite`)
 * into the same retained records the Chrome-trace reader produces, so that
 * linking, steps, groups, findings, compare and the renderers apply unchanged.
 *
 * defines: kvs_nsys_sniff, kvs_read_nsys, KVS_NSYS_MAX_STRING
 *
 * The file is opened read-only and immutable (no locks, no journal, never
 * written). Rows of the kernel, memcpy, memset, runtime, synchronisation and
 * NVTX tables are stepped together in start order (one query per table,
 * merged), so records come out in time order and nothing is loaded whole.
 * Columns are selected by name; absent tables are normal and are named in
 * the summary line. Private to analyzers/; docs/analysis.md describes the
 * mapping.
 */
#ifndef KVS_ANALYZERS_NSYS_H
#define KVS_ANALYZERS_NSYS_H

#include <stdbool.h>

#include "reader.h"

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

#endif
