/* inflate.c — gzip streams for the sources (see inflate.h): ISA-L's igzip or
 * zlib, decoding on a thread of its own into a ring of blocks that the
 * scanner's refills copy from; or, where the process may run on one CPU
 * only, straight into the scanner's buffer on the caller's thread. Private
 * to reader/. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "inflate.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KVS_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <zlib.h>
#endif

#define KVS_INFLATE_IN ((size_t)1 << 20)     /* compressed bytes asked per raw read */
#define KVS_INFLATE_BLOCK ((size_t)512 << 10) /* decompressed bytes per ring block */
#define KVS_INFLATE_NBLOCKS 4

struct block {
    char *p;
    size_t len, pos;       /* bytes in p; handed out so far */
    enum kvs_status st;    /* the decoder's status after this block */
    uint64_t consumed;     /* compressed bytes consumed once it was full */
    bool cut;              /* the stream ended inside a member */
};

struct kvs_inflate {
    kvs_raw_read_fn rd;
    void *user;
    const char *path;
    const struct kvs_logger *log;
    /* the decoder (the thread's while it runs) */
    unsigned char *in;
    uint64_t raw;          /* compressed bytes read */
    bool done, cut;
    char err[240];         /* why the data is corrupt, logged by the reader */
#ifdef KVS_HAVE_ISAL
    struct inflate_state *is;
#else
    z_stream zs;
    bool zs_ready;
#endif
    /* the ring: the thread fills blocks at tail, the reader takes them at head */
    bool threaded, started;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t filled, freed;
    struct block blk[KVS_INFLATE_NBLOCKS];
    unsigned head, tail, count;
    bool stop;
    /* the reader's side */
    bool final;            /* the end or an error was handed out */
    enum kvs_status final_st;
    uint64_t consumed;
    bool cut_seen;
};

const char *kvs_inflate_decoder(void)
{
#ifdef KVS_HAVE_ISAL
    return "isa-l";
#else
    return "zlib";
#endif
}

// ----------------------------------------------------------------------------
// the decoders: fill buf with up to cap bytes, in whichever thread runs them

/* Past a member's end: skip zero padding; true when more input follows
 * (another member), false at the end of input or on an error (*st). */
static bool next_member(struct kvs_inflate *z, unsigned char **next_in, uint32_t *avail_in,
                        enum kvs_status *st)
{
    *st = KVS_STATUS_OK;
    for (;;) {
        while (*avail_in && **next_in == 0) {
            (*next_in)++;
            (*avail_in)--;
        }
        if (*avail_in)
            return true;
        size_t n;
        *st = z->rd(z->user, z->in, KVS_INFLATE_IN, &n);
        if (*st != KVS_STATUS_OK)
            return false;
        z->raw += n;
        if (n == 0) {
            z->done = true;
            return false;
        }
        *next_in = z->in;
        *avail_in = (uint32_t)n;
    }
}

#ifdef KVS_HAVE_ISAL
static const char *isal_reason(int r)
{
    switch (r) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid distance too far back";
    case ISAL_INVALID_WRAPPER: return "incorrect header check";
    case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect data check";
    case ISAL_NEED_DICT: return "a preset dictionary is needed";
    default: return "inflate failed";
    }
}

static enum kvs_status decoder_init(struct kvs_inflate *z)
{
    z->is = malloc(sizeof *z->is);
    if (!z->is)
        return KVS_STATUS_NO_MEMORY;
    isal_inflate_init(z->is);
    z->is->crc_flag = ISAL_GZIP; /* parse the gzip header, check the trailer */
    return KVS_STATUS_OK;
}

static void decoder_end(struct kvs_inflate *z)
{
    free(z->is);
}

static enum kvs_status decode(struct kvs_inflate *z, char *buf, size_t cap, size_t *got)
{
    struct inflate_state *is = z->is;
    *got = 0;
    is->next_out = (uint8_t *)buf;
    is->avail_out = (uint32_t)(cap > ((size_t)1 << 30) ? ((size_t)1 << 30) : cap);
    while (is->avail_out > 0 && !z->done) {
        if (is->avail_in == 0) {
            size_t n;
            enum kvs_status st = z->rd(z->user, z->in, KVS_INFLATE_IN, &n);
            if (st != KVS_STATUS_OK)
                return st;
            z->raw += n;
            if (n == 0) {
                z->cut = true; /* EOF before the trailer */
                z->done = true;
                break;
            }
            is->next_in = z->in;
            is->avail_in = (uint32_t)n;
        }
        uint32_t in0 = is->avail_in, out0 = is->avail_out;
        int r = isal_inflate(is);
        if (r < 0 || r == ISAL_NEED_DICT) {
            snprintf(z->err, sizeof z->err, "%s: corrupt gzip data near compressed byte %llu: %s",
                     z->path, (unsigned long long)(z->raw - is->avail_in), isal_reason(r));
            return KVS_STATUS_PARSE;
        }
        if (is->block_state == ISAL_BLOCK_FINISH) {
            unsigned char *next_in = is->next_in;
            uint32_t avail_in = is->avail_in;
            enum kvs_status st;
            if (!next_member(z, &next_in, &avail_in, &st)) {
                if (st != KVS_STATUS_OK)
                    return st;
                break;
            }
            /* what follows a member must be one: zlib checks the magic
             * once it has two bytes, and so does this (ISA-L would wait
             * for a whole header, and call a short tail a cut stream) */
            if (avail_in >= 2 && (next_in[0] != 0x1f || next_in[1] != 0x8b)) {
                snprintf(z->err, sizeof z->err, "%s: corrupt gzip data near compressed byte %llu: %s",
                         z->path, (unsigned long long)(z->raw - avail_in), isal_reason(ISAL_INVALID_WRAPPER));
                return KVS_STATUS_PARSE;
            }
            uint8_t *next_out = is->next_out;
            uint32_t avail_out = is->avail_out;
            isal_inflate_reset(is);
            is->crc_flag = ISAL_GZIP;
            is->next_in = next_in;
            is->avail_in = avail_in;
            is->next_out = next_out;
            is->avail_out = avail_out;
            continue;
        }
        if (is->avail_in == in0 && is->avail_out == out0 && is->avail_in > 0) {
            snprintf(z->err, sizeof z->err, "%s: corrupt gzip data near compressed byte %llu: %s",
                     z->path, (unsigned long long)(z->raw - is->avail_in), "inflate made no progress");
            return KVS_STATUS_PARSE;
        }
    }
    *got = (size_t)((char *)is->next_out - buf);
    return KVS_STATUS_OK;
}
#else
/* zlib allocates through these (not its own defaults) so that every
 * allocation of a read goes through this library's malloc: the
 * failing-allocator test (tests/test_alloc_fail.c) then reaches zlib's too. */
static voidpf zalloc_fn(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return calloc(items, size);
}

static void zfree_fn(voidpf opaque, voidpf p)
{
    (void)opaque;
    free(p);
}

static enum kvs_status decoder_init(struct kvs_inflate *z)
{
    z->zs.zalloc = zalloc_fn;
    z->zs.zfree = zfree_fn;
    /* 16 + MAX_WBITS: gzip wrapper only */
    int r = inflateInit2(&z->zs, 16 + MAX_WBITS);
    if (r != Z_OK) {
        if (r != Z_MEM_ERROR)
            kvs_log(z->log, KVS_LOG_ERROR, "%s: zlib initialisation failed", z->path);
        return r == Z_MEM_ERROR ? KVS_STATUS_NO_MEMORY : KVS_STATUS_INTERNAL;
    }
    z->zs_ready = true;
    return KVS_STATUS_OK;
}

static void decoder_end(struct kvs_inflate *z)
{
    if (z->zs_ready)
        inflateEnd(&z->zs);
}

static enum kvs_status decode(struct kvs_inflate *z, char *buf, size_t cap, size_t *got)
{
    *got = 0;
    z->zs.next_out = (unsigned char *)buf;
    z->zs.avail_out = (uInt)(cap > (1u << 30) ? (1u << 30) : cap);
    while (z->zs.avail_out > 0 && !z->done) {
        if (z->zs.avail_in == 0) {
            size_t n;
            enum kvs_status st = z->rd(z->user, z->in, KVS_INFLATE_IN, &n);
            if (st != KVS_STATUS_OK)
                return st;
            z->raw += n;
            if (n == 0) {
                z->cut = true; /* EOF before the trailer */
                z->done = true;
                break;
            }
            z->zs.next_in = z->in;
            z->zs.avail_in = (uInt)n;
        }
        int r = inflate(&z->zs, Z_NO_FLUSH);
        if (r == Z_STREAM_END) {
            unsigned char *next_in = z->zs.next_in;
            uint32_t avail_in = z->zs.avail_in;
            enum kvs_status st;
            bool more = next_member(z, &next_in, &avail_in, &st);
            z->zs.next_in = next_in;
            z->zs.avail_in = avail_in;
            if (!more) {
                if (st != KVS_STATUS_OK)
                    return st;
                break;
            }
            if (inflateReset(&z->zs) != Z_OK)
                return KVS_STATUS_INTERNAL;
            continue;
        }
        if (r == Z_BUF_ERROR && z->zs.avail_in == 0)
            continue;
        if (r == Z_MEM_ERROR) /* inflate allocates its window on first use */
            return KVS_STATUS_NO_MEMORY;
        if (r != Z_OK) {
            snprintf(z->err, sizeof z->err, "%s: corrupt gzip data near compressed byte %llu: %s",
                     z->path, (unsigned long long)(z->raw - z->zs.avail_in),
                     z->zs.msg ? z->zs.msg : "inflate failed");
            return KVS_STATUS_PARSE;
        }
    }
    *got = (size_t)((char *)z->zs.next_out - buf);
    return KVS_STATUS_OK;
}
#endif

// ----------------------------------------------------------------------------
// the decoder thread and the ring

static void *pump(void *arg)
{
    struct kvs_inflate *z = arg;
    for (;;) {
        pthread_mutex_lock(&z->mu);
        while (z->count == KVS_INFLATE_NBLOCKS && !z->stop)
            pthread_cond_wait(&z->freed, &z->mu);
        bool stop = z->stop;
        struct block *b = &z->blk[z->tail];
        pthread_mutex_unlock(&z->mu);
        if (stop)
            break;
        size_t got = 0;
        enum kvs_status st = decode(z, b->p, KVS_INFLATE_BLOCK, &got);
        pthread_mutex_lock(&z->mu);
        /* a failed decode's partial output is dropped, as the unthreaded read drops it */
        b->len = st == KVS_STATUS_OK ? got : 0;
        b->pos = 0;
        b->st = st;
        b->consumed = z->raw;
        b->cut = z->cut;
        z->tail = (z->tail + 1) % KVS_INFLATE_NBLOCKS;
        z->count++;
        pthread_cond_signal(&z->filled);
        pthread_mutex_unlock(&z->mu);
        if (st != KVS_STATUS_OK || got == 0)
            break;
    }
    return NULL;
}

/* the CPUs this process may run on (2, "more than one", when it cannot tell) */
static int cpus_allowed(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    return 2;
}

enum kvs_status kvs_inflate_open(kvs_raw_read_fn rd, void *user, const char *path,
                                 const struct kvs_logger *lg, struct kvs_inflate **out)
{
    *out = NULL;
    struct kvs_inflate *z = calloc(1, sizeof *z);
    if (!z)
        return KVS_STATUS_NO_MEMORY;
    z->rd = rd;
    z->user = user;
    z->path = path;
    z->log = lg;
    z->in = malloc(KVS_INFLATE_IN);
    enum kvs_status st = z->in ? decoder_init(z) : KVS_STATUS_NO_MEMORY;
    if (st != KVS_STATUS_OK) {
        kvs_inflate_close(z);
        return st;
    }
    /* On one CPU a decoder thread can only take turns with the scanner, and
     * its blocks cost a copy and a hand-over each: decode in the reads,
     * into the scanner's buffer (the same decoding, the same messages; the
     * .gz read of the 195 MB MLA trace pinned to one core took ~5% less
     * CPU, docs/log/2026-12-07-reader-speed.md#onecpu). The blocks are
     * allocated here, not in the thread: running out of memory is the
     * caller's NO_MEMORY, at a place a test can reach. */
    z->threaded = cpus_allowed() > 1;
    for (int i = 0; z->threaded && i < KVS_INFLATE_NBLOCKS; i++) {
        z->blk[i].p = malloc(KVS_INFLATE_BLOCK);
        if (!z->blk[i].p) {
            kvs_inflate_close(z);
            return KVS_STATUS_NO_MEMORY;
        }
    }
    *out = z;
    return KVS_STATUS_OK;
}

static enum kvs_status decode_here(struct kvs_inflate *z, char *buf, size_t cap, size_t *got)
{
    enum kvs_status st = decode(z, buf, cap, got);
    z->consumed = z->raw;
    if (st == KVS_STATUS_PARSE && z->err[0])
        kvs_log(z->log, KVS_LOG_ERROR, "%s", z->err);
    if (st == KVS_STATUS_OK && *got == 0)
        z->cut_seen = z->cut;
    return st;
}

static bool start_thread(struct kvs_inflate *z)
{
    if (pthread_mutex_init(&z->mu, NULL))
        return false;
    if (pthread_cond_init(&z->filled, NULL)) {
        pthread_mutex_destroy(&z->mu);
        return false;
    }
    if (pthread_cond_init(&z->freed, NULL)) {
        pthread_cond_destroy(&z->filled);
        pthread_mutex_destroy(&z->mu);
        return false;
    }
    if (pthread_create(&z->th, NULL, pump, z)) {
        pthread_cond_destroy(&z->freed);
        pthread_cond_destroy(&z->filled);
        pthread_mutex_destroy(&z->mu);
        return false;
    }
    z->started = true;
    return true;
}

enum kvs_status kvs_inflate_read(struct kvs_inflate *z, char *buf, size_t cap, size_t *got)
{
    *got = 0;
    if (z->final)
        return z->final_st;
    if (!z->threaded)
        return decode_here(z, buf, cap, got);
    if (!z->started && !start_thread(z)) {
        z->threaded = false; /* no thread to be had: decode here */
        return decode_here(z, buf, cap, got);
    }
    size_t n = 0;
    pthread_mutex_lock(&z->mu);
    while (n < cap) {
        /* wait only while nothing is copied: then hand out what there is */
        while (z->count == 0 && n == 0)
            pthread_cond_wait(&z->filled, &z->mu);
        if (z->count == 0)
            break;
        struct block *b = &z->blk[z->head];
        if (b->st != KVS_STATUS_OK || b->len == 0) {
            if (n > 0)
                break; /* the end or the error at the next read */
            z->final = true;
            z->final_st = b->st;
            z->cut_seen = b->st == KVS_STATUS_OK && b->cut;
            z->consumed = b->consumed;
            pthread_mutex_unlock(&z->mu);
            if (b->st == KVS_STATUS_PARSE && z->err[0])
                kvs_log(z->log, KVS_LOG_ERROR, "%s", z->err);
            return b->st;
        }
        /* the block stays the reader's until it is emptied: copy unlocked */
        pthread_mutex_unlock(&z->mu);
        size_t k = b->len - b->pos < cap - n ? b->len - b->pos : cap - n;
        memcpy(buf + n, b->p + b->pos, k);
        n += k;
        b->pos += k;
        z->consumed = b->consumed;
        pthread_mutex_lock(&z->mu);
        if (b->pos == b->len) {
            z->head = (z->head + 1) % KVS_INFLATE_NBLOCKS;
            z->count--;
            pthread_cond_signal(&z->freed);
        }
    }
    pthread_mutex_unlock(&z->mu);
    *got = n;
    return KVS_STATUS_OK;
}

uint64_t kvs_inflate_consumed(const struct kvs_inflate *z)
{
    return z->consumed;
}

bool kvs_inflate_cut(const struct kvs_inflate *z)
{
    return z->cut_seen;
}

void kvs_inflate_close(struct kvs_inflate *z)
{
    if (!z)
        return;
    if (z->started) {
        pthread_mutex_lock(&z->mu);
        z->stop = true;
        pthread_cond_signal(&z->freed);
        pthread_mutex_unlock(&z->mu);
        pthread_join(z->th, NULL);
        pthread_cond_destroy(&z->freed);
        pthread_cond_destroy(&z->filled);
        pthread_mutex_destroy(&z->mu);
    }
    for (int i = 0; i < KVS_INFLATE_NBLOCKS; i++)
        free(z->blk[i].p);
    decoder_end(z);
    free(z->in);
    free(z);
}
