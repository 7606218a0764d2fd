/* inflate.h — gzip streams for the sources: ISA-L's igzip when the build
 * found it (meson: libisal, KVS_HAVE_ISAL), zlib otherwise, decoding on a
 * thread of its own a few blocks ahead of the scanner (on one CPU, in the
 * caller's reads, straight into its buffer).
 *
 * defines: struct kvs_inflate, kvs_raw_read_fn, kvs_inflate_open,
 *          kvs_inflate_read, kvs_inflate_consumed, kvs_inflate_cut,
 *          kvs_inflate_close
 *
 * Concatenated members (`cat a.gz b.gz`) continue the stream; zero bytes
 * after a member (tape and block padding) are skipped, as gzip -t does; a
 * stream that ends inside a member is "cut" (kvs_inflate_cut). Corrupt data
 * is KVS_STATUS_PARSE with one "corrupt gzip data near compressed byte N"
 * message, logged on the caller's thread when its read reaches it (so the
 * order of messages is the order of the input).
 *
 * Threading: the decoder thread calls the raw reader (rd) and nothing else
 * of the caller's; every kvs_inflate_* call is the caller's thread's. The
 * thread starts at the first read; when it cannot start, or when the
 * process may run on one CPU only (sched_getaffinity: the thread could only
 * take turns with the scanner, and costs a copy of every byte), reads decode
 * in the caller. Private to reader/.
 */
#ifndef KVS_READER_INFLATE_H
#define KVS_READER_INFLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/base.h"

struct kvs_inflate;

/* Up to cap compressed bytes into buf; *got = 0 at the end of input. */
typedef enum kvs_status (*kvs_raw_read_fn)(void *user, void *buf, size_t cap, size_t *got);

/* The decoder reads through rd(user, ...); path names the input in messages. */
enum kvs_status kvs_inflate_open(kvs_raw_read_fn rd, void *user, const char *path,
                                 const struct kvs_logger *lg, struct kvs_inflate **out);

/* Up to cap decompressed bytes into buf; *got = 0 at the end. An error is
 * returned once its bytes are reached, and again by every later read. */
enum kvs_status kvs_inflate_read(struct kvs_inflate *z, char *buf, size_t cap, size_t *got);

/* Compressed bytes consumed for the bytes handed out so far (progress). */
uint64_t kvs_inflate_consumed(const struct kvs_inflate *z);

/* True once a read reached the end of a stream cut inside a member. */
bool kvs_inflate_cut(const struct kvs_inflate *z);

/* Stops the thread (waiting for a raw read in progress) and frees z. */
void kvs_inflate_close(struct kvs_inflate *z);

/* "isa-l" or "zlib": the decoder this build uses */
const char *kvs_inflate_decoder(void);

#endif
