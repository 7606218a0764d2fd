/* source.h — where trace bytes come from: a file, a gzip file, stdin, or
 * bytes in memory.
 *
 * defines: struct kvs_source, kvs_source_open, kvs_source_open_memory,
 *          kvs_source_read, kvs_source_close
 *
 * gzip is recognised by its magic bytes, not by the file name, so `zcat`-less
 * pipelines (`kvscope report - < trace.json.gz`) work too. Reads are large and
 * unbuffered (the scanner owns the one buffer). Private to reader/.
 */
#ifndef KVS_READER_SOURCE_H
#define KVS_READER_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/base.h"

struct kvs_source;

/* path "-" reads stdin. *total_bytes is the file size when known (plain
 * regular files), else 0. */
enum kvs_status kvs_source_open(const char *path, const struct kvs_logger *lg,
                                struct kvs_source **out, uint64_t *total_bytes);

/* A source over data[0..len), which is not copied and must outlive the
 * source; gzip is recognised by its magic as for files. name is for
 * messages. chunk > 0 hands out at most chunk raw bytes per read, so tests
 * and fuzzers reach the refill and inflate boundaries on small inputs;
 * 0: 64 KiB, like a file. */
enum kvs_status kvs_source_open_memory(const void *data, size_t len, const char *name,
                                       size_t chunk, const struct kvs_logger *lg,
                                       struct kvs_source **out);

/* Up to cap bytes of (decompressed) input into buf; *got = 0 at the end.
 * Errors (I/O, corrupt gzip) are logged and returned. */
enum kvs_status kvs_source_read(struct kvs_source *src, char *buf, size_t cap, size_t *got);

/* Bytes of the underlying file consumed so far (compressed bytes for gzip),
 * for progress against total_bytes. */
uint64_t kvs_source_consumed(const struct kvs_source *src);

/* True when the gzip stream ended before its trailer (a cut .gz file). */
bool kvs_source_gzip_cut(const struct kvs_source *src);

void kvs_source_close(struct kvs_source *src);

#endif
