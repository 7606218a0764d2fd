/* tests/fuzz/fuzz_gz.c — libFuzzer harness for the .gz path
 * (reader/source.c: gzip by magic, zlib's streaming inflate, concatenated
 * members, a stream cut short) under the trace reader.
 *
 *   tests/fuzz/run.sh gz 60
 *   build-fuzz/tests/fuzz/fuzz_gz -dict=tests/fuzz/trace.dict CORPUS_DIR
 *
 * The first byte picks a mode, the rest is the payload:
 *   even: the payload is gzip bytes as found (the magic is put in front when
 *         missing): corrupt headers, blocks, trailers;
 *   odd:  the payload is JSON, compressed here into 1-3 gzip members at a
 *         level the mode picks, then maybe cut or given trailing bytes.
 * Both are read with raw chunks of 1, 5 or 64 KiB bytes. Checks: corrupt
 * gzip is PARSE with a message; the compressed JSON read through a 256-byte
 * buffer keeps exactly what the plain JSON read through the default 1 MiB
 * buffer keeps (status, counts, every record field, the interned strings,
 * header facts); a cut stream is never OK.
 */
#include <zlib.h>

#include "fuzz_common.h"
#include "kvscope/reader.h"
#include "../trace_same.h" // defines: kvs_test_trace_differ

static enum kvs_status read_mem(const void *p, size_t n, size_t bufsize, size_t chunk,
                                struct kvs_trace_data *t, struct fuzz_log *log)
{
    struct kvs_logger lg = fuzz_logger(log);
    struct kvs_read_opts o;
    memset(&o, 0, sizeof o);
    o.log = &lg;
    o.bufsize = bufsize;
    o.source_chunk = chunk;
    return kvs_read_trace_memory(p, n, "fuzz.json.gz", &o, t);
}

/* gzip one member of src into dst (capacity cap); its length. */
static size_t gzip_member(const uint8_t *src, size_t n, int level, uint8_t *dst, size_t cap)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    FUZZ_CHECK(deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK,
               "deflateInit2 failed");
    zs.next_in = (Bytef *)(uintptr_t)src;
    zs.avail_in = (uInt)n;
    zs.next_out = dst;
    zs.avail_out = (uInt)cap;
    int r = deflate(&zs, Z_FINISH);
    FUZZ_CHECK(r == Z_STREAM_END, "deflate: %d", r);
    size_t out = zs.total_out;
    deflateEnd(&zs);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0];
    const uint8_t *payload = data + 1;
    size_t n = size - 1;
    static const size_t chunks[] = {1, 5, 0};
    size_t chunk = chunks[(mode >> 1) % 3];
    struct fuzz_log log;
    struct kvs_trace_data t;

    if (!(mode & 1)) {
        uint8_t *buf = malloc(n + 2);
        FUZZ_CHECK(buf, "malloc failed");
        size_t len = 0;
        if (n < 2 || payload[0] != 0x1f || payload[1] != 0x8b) {
            buf[len++] = 0x1f;
            buf[len++] = 0x8b;
        }
        memcpy(buf + len, payload, n);
        len += n;
        enum kvs_status st = read_mem(buf, len, 256, chunk, &t, &log);
        FUZZ_CHECK(st == KVS_STATUS_OK || st == KVS_STATUS_TRUNCATED || st == KVS_STATUS_PARSE ||
                       st == KVS_STATUS_LIMIT,
                   "status %d: %s", (int)st, log.last_error);
        if (st == KVS_STATUS_PARSE || st == KVS_STATUS_LIMIT)
            FUZZ_CHECK(log.errors > 0, "status %d without a message", (int)st);
        kvs_trace_data_free(&t);
        free(buf);
        return 0;
    }

    /* odd modes: compress the payload as 1-3 members */
    int level = (int)((mode >> 3) % 10);
    int members = 1 + (int)((mode >> 5) % 3);
    size_t cap = 3 * (n + 64) + 256;
    uint8_t *gz = malloc(cap + 16);
    FUZZ_CHECK(gz, "malloc failed");
    size_t len = 0;
    for (int k = 0; k < members; k++) {
        size_t from = n * (size_t)k / (size_t)members, to = n * (size_t)(k + 1) / (size_t)members;
        len += gzip_member(payload + from, to - from, level, gz + len, cap - len);
    }
    /* mode bit 7: cut the stream short, at a point the payload's length picks */
    bool cut = (mode & 0x80) && members == 1 && len > 0;
    if (cut)
        len -= 1 + n % (len < 18 ? len : 18);

    struct kvs_trace_data plain;
    struct fuzz_log plain_log;
    /* the plain read with the default 1 MiB buffer, the gzip one through 256 bytes */
    enum kvs_status plain_st = read_mem(payload, n, 0, 0, &plain, &plain_log);
    enum kvs_status st = read_mem(gz, len, 256, chunk, &t, &log);
    if (cut) {
        FUZZ_CHECK(st != KVS_STATUS_OK, "a cut gzip stream read as OK");
    } else if (n >= 2 && payload[0] == 0x1f && payload[1] == 0x8b) {
        /* the payload is itself gzip: plain read inflates it, gz read sees JSON-less bytes */
    } else {
        FUZZ_CHECK(st == plain_st, "gzip status %d, plain %d (%s | %s)", (int)st, (int)plain_st,
                   log.last_error, plain_log.last_error);
        const char *diff =
            kvs_test_trace_differ(&t, &plain, st == KVS_STATUS_OK || st == KVS_STATUS_TRUNCATED);
        FUZZ_CHECK(!diff, "gzip (256-byte buffer) and plain (1 MiB) reads differ in %s: events %llu "
                   "vs %llu, bytes %llu vs %llu", diff, (unsigned long long)t.events,
                   (unsigned long long)plain.events, (unsigned long long)t.bytes,
                   (unsigned long long)plain.bytes);
    }
    kvs_trace_data_free(&plain);
    kvs_trace_data_free(&t);
    free(gz);
    return 0;
}
