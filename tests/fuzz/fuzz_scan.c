/* tests/fuzz/fuzz_scan.c — libFuzzer harness for the streaming JSON scanner
 * alone (reader/scan.c, scan_num.c): a generic walker reads any JSON
 * document through peek/expect/string/number/skip/capture, and the same
 * bytes are walked with a 1 MiB buffer, a 64-byte buffer fed one byte per
 * read, and a 67-byte buffer fed 7 bytes per read. The three walks must
 * agree exactly: the same tokens (decoded strings, number values, captured
 * text), the same status, error offset and message. Inside each element of
 * a top-level array the walker holds the mark (as the trace reader does for
 * an event) and re-reads every string it kept, by its offset from the mark,
 * when the element ends.
 *
 *   tests/fuzz/run.sh scan 60
 *   build-fuzz/tests/fuzz/fuzz_scan -dict=tests/fuzz/trace.dict CORPUS_DIR
 */
#include "fuzz_common.h"
#include "scan.h"
#include "source.h"

/* what one walk saw */
struct transcript {
    uint64_t hash;
    uint64_t tokens;
};

static void mix(struct transcript *t, const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = t->hash ^ (n * 0x9E3779B97F4A7C15ull);
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001B3ull;
    t->hash = h;
    t->tokens++;
}

/* strings kept while the mark is held: offset from the mark, length, hash */
struct kept {
    uint32_t off, len;
    uint64_t hash;
};

struct walker {
    struct kvs_scan s;
    struct transcript t;
    struct kept kept[64];
    int nkept;
    bool marked;
};

static uint64_t hash_bytes(const char *p, size_t n)
{
    struct transcript t = {0, 0};
    mix(&t, p, n);
    return t.hash;
}

static bool walk_value(struct walker *w, int depth, uint64_t path);

static bool walk_string(struct walker *w, char tag)
{
    const char *str;
    size_t len;
    if (!kvs_scan_string(&w->s, &str, &len))
        return false;
    mix(&w->t, &tag, 1);
    mix(&w->t, str, len);
    if (w->marked && w->nkept < 64) {
        FUZZ_CHECK(str >= w->s.mark && str + len <= w->s.end, "a string outside the marked span");
        w->kept[w->nkept++] = (struct kept){(uint32_t)(str - w->s.mark), (uint32_t)len,
                                            hash_bytes(str, len)};
    }
    return true;
}

static bool walk_number(struct walker *w)
{
    struct kvs_number n;
    if (!kvs_scan_number(&w->s, &n))
        return false;
    int64_t v = kvs_number_int(&n), ns = kvs_number_us_to_ns(&n);
    double d = kvs_number_double(&n);
    mix(&w->t, "N", 1);
    mix(&w->t, n.text, n.len);
    mix(&w->t, &v, sizeof v);
    mix(&w->t, &ns, sizeof ns);
    if (d == d) /* NaN has no stable bits; JSON numbers never give one */
        mix(&w->t, &d, sizeof d);
    return true;
}

/* Members and elements: some are skipped or captured whole instead of
 * walked; the choice depends on the path, so all walks make the same one. */
static bool walk_value(struct walker *w, int depth, uint64_t path)
{
    struct kvs_scan *s = &w->s;
    int c = kvs_scan_peek(s);
    if (c == KVS_SCAN_ERROR)
        return false;
    unsigned how = (unsigned)(path % 11);
    if (depth >= 64 || how == 3) {
        mix(&w->t, "skip", 4);
        return kvs_scan_skip(s);
    }
    if (how == 5) {
        const char *start;
        size_t len;
        if (!kvs_scan_capture(s, &start, &len))
            return false;
        mix(&w->t, "C", 1);
        mix(&w->t, start, len);
        return true;
    }
    switch (c) {
    case '{':
    case '[': {
        char close = c == '{' ? '}' : ']';
        s->p++;
        mix(&w->t, &c, 1);
        c = kvs_scan_peek(s);
        if (c == close) {
            s->p++;
            return true;
        }
        for (uint64_t i = 0;; i++) {
            if (close == '}') {
                c = kvs_scan_peek(s);
                if (c != '"')
                    return c == KVS_SCAN_ERROR ? false : kvs_scan_expect(s, '"', "a string key");
                if (!walk_string(w, 'K') || !kvs_scan_expect(s, ':', "':' after a key"))
                    return false;
            }
            bool element = depth == 0 && close == ']';
            if (element) {
                /* like the reader's events: hold the mark over each element */
                if (kvs_scan_peek(s) == KVS_SCAN_ERROR)
                    return false; /* the end of input: walk_value reports it */
                kvs_scan_set_mark(s);
                w->marked = true;
                w->nkept = 0;
            }
            bool ok = walk_value(w, depth + 1, path * 31 + i + 1);
            if (element) {
                for (int k = 0; ok && k < w->nkept; k++)
                    FUZZ_CHECK(hash_bytes(s->mark + w->kept[k].off, w->kept[k].len) == w->kept[k].hash,
                               "kept string %d changed under the mark", k);
                kvs_scan_clear_mark(s);
                w->marked = false;
            }
            if (!ok)
                return false;
            c = kvs_scan_peek(s);
            if (c == ',') {
                s->p++;
                continue;
            }
            if (c == close) {
                s->p++;
                mix(&w->t, &close, 1);
                return true;
            }
            return c == KVS_SCAN_ERROR ? false
                                       : kvs_scan_expect(s, close, close == '}' ? "',' or '}'" : "',' or ']'");
        }
    }
    case '"':
        return walk_string(w, 'S');
    case 't':
    case 'f':
    case 'n':
        mix(&w->t, "L", 1);
        return kvs_scan_skip(s);
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return walk_number(w);
        return kvs_scan_expect(s, '?', "a value");
    }
}

struct outcome {
    struct transcript t;
    enum kvs_status status;
    uint64_t err_offset, end_offset;
    char err[192];
};

static void walk(const uint8_t *data, size_t size, size_t bufsize, size_t chunk, struct outcome *o)
{
    struct fuzz_log log;
    struct kvs_logger lg = fuzz_logger(&log);
    struct kvs_source *src;
    FUZZ_CHECK(kvs_source_open_memory(data, size, "fuzz", chunk, &lg, &src) == KVS_STATUS_OK,
               "opening the memory source failed");
    struct walker w;
    memset(&w, 0, sizeof w);
    FUZZ_CHECK(kvs_scan_init(&w.s, src, &lg, bufsize) == KVS_STATUS_OK, "scan init failed");
    bool ok = walk_value(&w, 0, 1);
    if (ok) {
        int c = kvs_scan_peek(&w.s);
        if (c >= 0)
            ok = kvs_scan_fail(&w.s, KVS_STATUS_PARSE, "more data after the document");
    }
    FUZZ_CHECK(ok == (w.s.status == KVS_STATUS_OK), "walk said %d with status %d", (int)ok,
               (int)w.s.status);
    memset(o, 0, sizeof *o);
    o->t = w.t;
    o->status = w.s.status;
    o->err_offset = w.s.err_offset;
    o->end_offset = ok ? kvs_scan_offset(&w.s) : 0;
    memcpy(o->err, w.s.err, sizeof o->err);
    if (o->status != KVS_STATUS_OK)
        FUZZ_CHECK(o->err_offset <= size && o->err[0], "error at %llu of %zu: \"%s\"",
                   (unsigned long long)o->err_offset, size, o->err);
    kvs_scan_free(&w.s);
    kvs_source_close(src);
}

static void same(const struct outcome *a, const struct outcome *b, const char *what)
{
    FUZZ_CHECK(a->status == b->status, "%s: status %d vs %d (\"%s\" at %llu vs \"%s\" at %llu)",
               what, (int)a->status, (int)b->status, a->err, (unsigned long long)a->err_offset,
               b->err, (unsigned long long)b->err_offset);
    FUZZ_CHECK(a->err_offset == b->err_offset, "%s: error offset %llu vs %llu (\"%s\")", what,
               (unsigned long long)a->err_offset, (unsigned long long)b->err_offset, a->err);
    FUZZ_CHECK(!strcmp(a->err, b->err), "%s: \"%s\" vs \"%s\"", what, a->err, b->err);
    FUZZ_CHECK(a->t.tokens == b->t.tokens && a->t.hash == b->t.hash,
               "%s: different tokens (%llu vs %llu)", what, (unsigned long long)a->t.tokens,
               (unsigned long long)b->t.tokens);
    FUZZ_CHECK(a->end_offset == b->end_offset, "%s: end %llu vs %llu", what,
               (unsigned long long)a->end_offset, (unsigned long long)b->end_offset);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct outcome big, tiny, odd;
    walk(data, size, (size_t)1 << 20, 0, &big);
    walk(data, size, 64, 1, &tiny);
    walk(data, size, 67, 7, &odd);
    same(&big, &tiny, "1 MiB buffer vs 64 bytes fed 1 at a time");
    same(&big, &odd, "1 MiB buffer vs 67 bytes fed 7 at a time");
    return 0;
}
