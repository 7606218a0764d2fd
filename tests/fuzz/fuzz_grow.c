/* tests/fuzz/fuzz_grow.c — libFuzzer harness, structure-aware: a small trace
 * with a marked value, the value grown to megabytes, then the whole analysis.
 *
 *   tests/fuzz/run.sh grow 60
 *   build-fuzz/tests/fuzz/fuzz_grow -malloc_limit_mb=16 CORPUS_DIR
 *
 * Input: 4 bytes, then a seed document. The first "@" string of the seed
 * (three bytes: quote, at sign, quote) is the mark: it is replaced by a value
 * of the kind byte 0 picks (digits, a plain string, a string of escapes and
 * backslash runs, an array of numbers, an array of literals, a list of
 * tensors, an object, nesting around a string) and of about 2^(byte 1 % 25)
 * bytes (up to 16 MiB, byte 2 varies it). So libFuzzer mutates the small
 * seed — where the mark sits (a header field, Input Dims, a name, an
 * unknown arg, a top-level key, ...) and the document around it — while the
 * harness makes the big value, which a byte-level fuzzer under a 1 MiB
 * max_len never reaches (values past the header bound crossing a
 * refill crashed the reader). Byte 3 picks the reader's buffer.
 *
 * Properties: the status is one a trace can cause; an error names a byte
 * offset; and the same document read through a second buffer size (64 bytes
 * for documents under 2 MiB, else 4096) gives the same status, the same last
 * error and the same JSON report byte for byte. The grown document is
 * mmap'ed, not malloc'ed, so with -malloc_limit_mb=16 (run.sh) any single
 * allocation of the reader or the analysis over 16 MB — a value held whole —
 * is a finding.
 */
#include <sys/mman.h>

#include "analyze_input.h"
#include "fuzz_common.h"
#include "kvscope/analysis.h"
#include "kvscope/report.h"

#define GROW_MAX ((size_t)16 << 20)

/* the bytes of one piece of the value, repeated to fill it */
static size_t put(char *w, size_t at, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (at + n > cap)
        return at;
    memcpy(w + at, s, n);
    return at + n;
}

/* Write a value of about `want` bytes of kind k at w (room: cap); returns
 * its length. Every value is valid JSON except where the kind's limits make
 * it a limit (digits over 4096, nesting over 512). */
static size_t grow(char *w, size_t cap, unsigned k, size_t want, unsigned depth)
{
    if (want > cap - 64)
        want = cap - 64;
    size_t n = 0;
    switch (k % 8) {
    case 0: /* digits */
        memset(w, '7', want ? want : 1);
        return want ? want : 1;
    case 1: /* a plain string */
    case 2: { /* escapes and backslash runs */
        static const char *const esc[] = {"\\\"", "\\\\", "\\/", "\\u00e9", "\\\\\\\\", "ab", "\\n", "x"};
        n = put(w, n, cap, "\"");
        for (unsigned i = 0; n + 8 < want; i++)
            n = put(w, n, cap, k % 8 == 1 ? "s" : esc[i % 8]);
        return put(w, n, cap, "\"");
    }
    case 3: { /* numbers only */
        static const char *const num[] = {"0", "-2.5e3", "123456789", "1e-7", "-0.5"};
        n = put(w, n, cap, "[0");
        for (unsigned i = 0; n + 12 < want; i++) {
            n = put(w, n, cap, ",");
            n = put(w, n, cap, num[i % 5]);
        }
        return put(w, n, cap, "]");
    }
    case 4: { /* literals only */
        static const char *const lit[] = {"true", "false", "null"};
        n = put(w, n, cap, "[null");
        for (unsigned i = 0; n + 8 < want; i++) {
            n = put(w, n, cap, ",");
            n = put(w, n, cap, lit[i % 3]);
        }
        return put(w, n, cap, "]");
    }
    case 5: /* a list of rank-1 tensors, as Input Dims carry */
        n = put(w, n, cap, "[[1]");
        while (n + 8 < want)
            n = put(w, n, cap, ",[8]");
        return put(w, n, cap, "]");
    case 6: { /* an object of mixed members */
        static const char *const mem[] = {"\"a\":1", "\"bb\":\"x\"", "\"c\":[true,{}]", "\"d\":null"};
        n = put(w, n, cap, "{\"k\":0");
        for (unsigned i = 0; n + 20 < want; i++) {
            n = put(w, n, cap, ",");
            n = put(w, n, cap, mem[i % 4]);
        }
        return put(w, n, cap, "}");
    }
    default: { /* nesting around a long string */
        unsigned d = depth % 600 + 1;
        if ((size_t)d * 2 + 16 > want)
            d = (unsigned)(want / 4) + 1;
        for (unsigned i = 0; i < d && n < cap / 2; i++)
            n = put(w, n, cap, i % 2 ? "{\"o\":" : "[");
        n = put(w, n, cap, "\"");
        while (n + (size_t)d * 2 + 2 < want && n < cap - (size_t)d * 2 - 8)
            w[n++] = 'z';
        n = put(w, n, cap, "\"");
        for (unsigned i = d; i-- > 0;)
            n = put(w, n, cap, i % 2 ? "}" : "]");
        return n;
    }
    }
}

struct run {
    enum kvs_status st;
    struct fuzz_log log;
    char *json;
    size_t njson;
};

static void analyze(const char *doc, size_t n, size_t bufsize, struct run *r)
{
    struct kvs_analyze_input in;
    memset(&in, 0, sizeof in);
    in.path = "grow.json";
    in.data = doc;
    in.len = n;
    in.in_memory = true;
    in.read_bufsize = bufsize;
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = fuzz_logger(&r->log);
    struct kvs_analysis *a = NULL;
    r->st = kvs_analyze_input(&in, &opt, &a);
    r->json = NULL;
    r->njson = 0;
    bool sqlite = n >= 16 && !memcmp(doc, "SQLite format 3", 16);
    FUZZ_CHECK(r->st == KVS_STATUS_OK || r->st == KVS_STATUS_TRUNCATED || r->st == KVS_STATUS_PARSE ||
                   r->st == KVS_STATUS_LIMIT || r->st == KVS_STATUS_EMPTY ||
                   (sqlite && r->st == KVS_STATUS_UNSUPPORTED),
               "status %d (%s): %s", (int)r->st, kvs_status_str(r->st), r->log.last_error);
    FUZZ_CHECK((r->st == KVS_STATUS_OK || r->st == KVS_STATUS_TRUNCATED) == (a != NULL),
               "status %d with result %p", (int)r->st, (void *)a);
    if (r->st == KVS_STATUS_PARSE || r->st == KVS_STATUS_LIMIT)
        FUZZ_CHECK(strstr(r->log.last_error, "byte "), "no byte offset in \"%s\"", r->log.last_error);
    if (!a)
        return;
    struct kvs_render_options ro;
    memset(&ro, 0, sizeof ro);
    ro.format = KVS_FORMAT_JSON;
    struct fuzz_log rlog;
    ro.log = fuzz_logger(&rlog);
    FILE *f = open_memstream(&r->json, &r->njson);
    FUZZ_CHECK(f, "open_memstream failed");
    enum kvs_status st = kvs_render_report(f, a, &ro);
    FUZZ_CHECK(fclose(f) == 0 && st == KVS_STATUS_OK, "rendering the JSON report: status %d", (int)st);
    kvs_analysis_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    static const size_t bufsizes[] = {0, 64, 100, 4096};
    unsigned kind = data[0], depth = data[2];
    size_t want = ((size_t)1 << (data[1] % 25)) + (size_t)data[2] * 4099;
    if (want > GROW_MAX)
        want = GROW_MAX;
    size_t bufsize = bufsizes[data[3] % 4];
    const char *seed = (const char *)data + 4;
    size_t nseed = size - 4;
    const char *mark = NULL;
    for (size_t i = 0; i + 3 <= nseed; i++)
        if (seed[i] == '"' && seed[i + 1] == '@' && seed[i + 2] == '"') {
            mark = seed + i;
            break;
        }
    size_t cap = nseed + (mark ? want + 4096 : 0) + 64;
    char *doc = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FUZZ_CHECK(doc != MAP_FAILED, "mmap of %zu bytes failed", cap);
    size_t n = 0;
    if (mark) {
        size_t head = (size_t)(mark - seed);
        memcpy(doc, seed, head);
        n = head + grow(doc + head, cap - head - (nseed - head - 3), kind, want, depth);
        memcpy(doc + n, mark + 3, nseed - head - 3);
        n += nseed - head - 3;
    } else {
        memcpy(doc, seed, nseed);
        n = nseed;
    }
    struct run a, b;
    analyze(doc, n, bufsize, &a);
    size_t other = n < ((size_t)2 << 20) ? (bufsize == 64 ? 4096 : 64) : (bufsize == 4096 ? 0 : 4096);
    analyze(doc, n, other, &b);
    FUZZ_CHECK(a.st == b.st, "buffer %zu: status %d, buffer %zu: status %d (%s / %s)", bufsize, (int)a.st,
               other, (int)b.st, a.log.last_error, b.log.last_error);
    FUZZ_CHECK(!strcmp(a.log.last_error, b.log.last_error), "buffer %zu: \"%s\", buffer %zu: \"%s\"",
               bufsize, a.log.last_error, other, b.log.last_error);
    FUZZ_CHECK(a.njson == b.njson && (!a.njson || !memcmp(a.json, b.json, a.njson)),
               "the JSON report differs between buffers %zu and %zu (%zu / %zu bytes)", bufsize, other,
               a.njson, b.njson);
    free(a.json);
    free(b.json);
    munmap(doc, cap);
    return 0;
}
