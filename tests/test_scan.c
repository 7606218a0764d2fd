/* tests/test_scan.c — the streaming JSON scanner: escapes and unicode,
 * numbers (exact microsecond -> nanosecond conversion, huge integers),
 * nesting limits, skipping and capturing, malformed input with the exact
 * byte offset, truncation, and every buffer-refill boundary (tiny buffers).
 *
 *   meson test -C build test_scan     ./build/analyzers/test_scan [case...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "scan.h"
#include "source.h"

struct sc {
    char path[256];
    struct kvs_source *src;
    struct kvs_scan s;
};

static void sc_open(struct sc *c, const char *text, size_t n, size_t bufsize)
{
    kvs_tmp_write(c->path, sizeof c->path, text, n, ".json");
    if (kvs_source_open(c->path, NULL, &c->src, NULL) != KVS_STATUS_OK ||
        kvs_scan_init(&c->s, c->src, NULL, bufsize) != KVS_STATUS_OK)
        KVS_TEST_SETUP_FAILED("cannot open the scanner on %s", c->path);
}

static void sc_close(struct sc *c)
{
    kvs_scan_free(&c->s);
    kvs_source_close(c->src);
    unlink(c->path);
}

/* read one string value from text; returns a malloc'ed copy (len in *n) or NULL */
static char *read_string(const char *text, size_t bufsize, size_t *n, enum kvs_status *st, uint64_t *off)
{
    struct sc c;
    sc_open(&c, text, strlen(text), bufsize);
    char *out = NULL;
    const char *s;
    size_t len;
    if (kvs_scan_peek(&c.s) == '"' && kvs_scan_string(&c.s, &s, &len)) {
        out = malloc(len + 1);
        memcpy(out, s, len);
        out[len] = 0;
        *n = len;
    }
    *st = c.s.status;
    *off = c.s.err_offset;
    sc_close(&c);
    return out;
}

static void test_escapes(void)
{
    static const size_t bufs[] = {64, 65, 77, 1 << 16};
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++) {
        size_t n;
        enum kvs_status st;
        uint64_t off;
        char *s = read_string("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\te\"", bufs[b], &n, &st, &off);
        KVS_REQUIRE(s != NULL);
        KVS_CHECK_EQ_INT(n, 13);
        KVS_CHECK(!memcmp(s, "a\"b\\c/d\b\f\n\r\te", 13));
        free(s);
        /* BMP, a surrogate pair (U+1F600), a lone surrogate (U+FFFD) */
        s = read_string("\"\\u00e9\\u20AC\\ud83d\\ude00\\ud800x\"", bufs[b], &n, &st, &off);
        KVS_REQUIRE(s != NULL);
        const char want[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbdx";
        KVS_CHECK_EQ_INT(n, sizeof want - 1);
        KVS_CHECK(!memcmp(s, want, sizeof want - 1));
        free(s);
        /* raw UTF-8 passes through untouched */
        s = read_string("\"caf\xc3\xa9\"", bufs[b], &n, &st, &off);
        KVS_REQUIRE(s != NULL);
        KVS_CHECK_EQ_STR(s, "caf\xc3\xa9");
        free(s);
    }
}

static void test_bad_escapes(void)
{
    const char *cases[] = {"\"abc\\x\"", "\"ab\\u12G4\"", "\"\\u12\""};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        enum kvs_status st;
        uint64_t off;
        char *s = read_string(cases[i], 64, &n, &st, &off);
        KVS_CHECK(s == NULL);
        KVS_CHECK_EQ_INT(st, KVS_STATUS_PARSE);
        /* the offset names the backslash */
        KVS_CHECK_EQ_INT(off, (uint64_t)(strchr(cases[i], '\\') - cases[i]));
        free(s);
    }
}

/* Backslash runs that end exactly at buffer boundaries decide whether the
 * next quote closes the string: check every alignment. */
static void test_backslash_runs_across_refills(void)
{
    for (int pad = 0; pad < 80; pad++) {
        for (int run = 1; run <= 6; run++) {
            char doc[512];
            size_t n = 0;
            doc[n++] = '[';
            for (int i = 0; i < pad; i++)
                doc[n++] = ' ';
            doc[n++] = '"';
            for (int i = 0; i < run; i++)
                doc[n++] = '\\';
            if (run % 2) /* an odd run escapes the quote that follows */
                doc[n++] = '"';
            n += (size_t)snprintf(doc + n, sizeof doc - n, "x\", \"after\"]");
            for (int mode = 0; mode < 2; mode++) {
                struct sc c;
                sc_open(&c, doc, n, 64);
                KVS_CHECK(kvs_scan_expect(&c.s, '[', "["));
                kvs_scan_peek(&c.s);
                const char *s;
                size_t len;
                bool ok = mode == 0 ? kvs_scan_skip(&c.s) : kvs_scan_string(&c.s, &s, &len);
                KVS_CHECK_MSG(ok, "pad %d run %d mode %d: %s", pad, run, mode, c.s.err);
                if (ok && mode == 1)
                    KVS_CHECK_EQ_INT(len, (size_t)(run / 2 + (run % 2) + 1));
                KVS_CHECK(kvs_scan_expect(&c.s, ',', ","));
                kvs_scan_peek(&c.s);
                ok = kvs_scan_string(&c.s, &s, &len);
                KVS_CHECK_MSG(ok && len == 5 && !memcmp(s, "after", 5), "pad %d run %d mode %d", pad,
                              run, mode);
                sc_close(&c);
            }
        }
    }
}

static bool number_of(const char *text, struct kvs_number *num, enum kvs_status *st)
{
    struct sc c;
    sc_open(&c, text, strlen(text), 64);
    kvs_scan_peek(&c.s);
    bool ok = kvs_scan_number(&c.s, num);
    if (ok) /* text pointers die with the scanner: keep what the tests read */
        num->text = NULL;
    *st = c.s.status;
    sc_close(&c);
    return ok;
}

static void test_numbers(void)
{
    struct {
        const char *text;
        int64_t ns;
    } ts[] = {
        {"5091211322205.042", 5091211322205042LL}, /* Kineto ns precision */
        {"1665536373729077", 1665536373729077000LL}, /* old integer us */
        {"0.0005", 1},                               /* half a ns rounds up */
        {"0.0004", 0},
        {"1.5e3", 1500000},
        {"-2.25", -2250},
        {"205058.758", 205058758},
        {"0", 0},
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        struct sc c;
        sc_open(&c, ts[i].text, strlen(ts[i].text), 64);
        kvs_scan_peek(&c.s);
        struct kvs_number num;
        KVS_REQUIRE(kvs_scan_number(&c.s, &num));
        KVS_CHECK_MSG(kvs_number_us_to_ns(&num) == ts[i].ns, "%s -> %lld", ts[i].text,
                      (long long)kvs_number_us_to_ns(&num));
        sc_close(&c);
    }
    struct kvs_number num;
    enum kvs_status st;
    KVS_CHECK(number_of("18446744073709551616", &num, &st)); /* 2^64: 20 digits */
    KVS_CHECK(num.overflow);
    KVS_CHECK(num.is_integer);
    KVS_CHECK(number_of("123456789012345678901234567890.5e-3", &num, &st));
    KVS_CHECK(num.overflow && !num.is_integer);
    KVS_CHECK(number_of("9223372036854775807", &num, &st));
    KVS_CHECK(!num.overflow && num.int_part == 9223372036854775807ULL);
    /* followed by more input these are malformed ... */
    const char *bad[] = {"01 ", "1. ", "- ", "1e ", "1e+ ", ".5 ", "-a ", "1.2.3 ", "1e5e5 ", "+1 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool ok = number_of(bad[i], &num, &st);
        KVS_CHECK_MSG(!ok && st == KVS_STATUS_PARSE, "'%s': ok %d status %d", bad[i], ok, st);
    }
    /* ... and at the end of input the valid prefixes are truncation */
    const char *cut[] = {"1.", "-", "1e", "1e+", "123.456e-"};
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        bool ok = number_of(cut[i], &num, &st);
        KVS_CHECK_MSG(!ok && st == KVS_STATUS_TRUNCATED, "'%s': ok %d status %d", cut[i], ok, st);
    }
    KVS_CHECK(!number_of("01", &num, &st) && st == KVS_STATUS_PARSE);
}

/* skip + capture return exactly the value's text, across refills */
static void test_skip_and_capture(void)
{
    const char *value = "{\"a\": [1, -2.5e3, true, false, null, {\"b\": \"c\\\"}d\"}], \"e\": {}, \"f\": []}";
    char doc[512];
    snprintf(doc, sizeof doc, "[%s, 7]", value);
    static const size_t bufs[] = {64, 70, 100, 4096};
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++) {
        struct sc c;
        sc_open(&c, doc, strlen(doc), bufs[b]);
        KVS_CHECK(kvs_scan_expect(&c.s, '[', "["));
        const char *t;
        size_t len;
        KVS_REQUIRE(kvs_scan_capture(&c.s, &t, &len));
        KVS_CHECK_EQ_INT(len, strlen(value));
        KVS_CHECK(!memcmp(t, value, strlen(value)));
        KVS_CHECK(kvs_scan_expect(&c.s, ',', ","));
        kvs_scan_peek(&c.s);
        struct kvs_number num;
        KVS_CHECK(kvs_scan_number(&c.s, &num) && num.int_part == 7);
        KVS_CHECK(kvs_scan_expect(&c.s, ']', "]"));
        KVS_CHECK_EQ_INT(kvs_scan_peek(&c.s), KVS_SCAN_EOF);
        sc_close(&c);
    }
}

/* kvs_scan_capture_max drops its mark at the first refill past its bound,
 * in the middle of whatever value the skip is in: numbers, literals and
 * strings must go on from the cursor, not from the mark. Once a header
 * field of 1.1 M zeros (over the 1 MiB cap) read a number through the
 * dropped mark (SIGSEGV in number_extent); literals did the same. Every
 * kind, each at every alignment to a 64-byte buffer, under and over bounds. */
static void test_capture_max_across_refills(void)
{
    static const char *items[] = {"0", "-12.5e3", "1234567890123", "true", "false", "null",
                                  "\"ab\\\"c\\\\\"", "[0,{\"a\":[true,-1e-2]}]", "{\"k\":null}"};
    static const size_t maxes[] = {1, 40, 300};
    static const size_t counts[] = {1, 3, 400};
    char *doc = malloc(16384);
    KVS_REQUIRE(doc);
    for (size_t it = 0; it < sizeof items / sizeof items[0]; it++)
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
            for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++)
                for (int pad = 0; pad < 70; pad++) {
                    size_t n = 0;
                    doc[n++] = '[';
                    for (int i = 0; i < pad; i++)
                        doc[n++] = ' ';
                    size_t v0 = n;
                    doc[n++] = '[';
                    for (size_t i = 0; i < counts[k]; i++)
                        n += (size_t)sprintf(doc + n, "%s%s", i ? "," : "", items[it]);
                    doc[n++] = ']';
                    size_t vlen = n - v0;
                    n += (size_t)sprintf(doc + n, ",7]");
                    struct kvs_source *src;
                    struct kvs_scan sc;
                    if (kvs_source_open_memory(doc, n, "doc", 0, NULL, &src) != KVS_STATUS_OK ||
                        kvs_scan_init(&sc, src, NULL, 64) != KVS_STATUS_OK)
                        KVS_TEST_SETUP_FAILED("cannot open the scanner on memory");
                    const char *t = NULL;
                    size_t len = 0;
                    bool over = false;
                    KVS_CHECK(kvs_scan_expect(&sc, '[', "["));
                    bool ok = kvs_scan_capture_max(&sc, maxes[m], &t, &len, &over);
                    KVS_CHECK_MSG(ok, "%s x%zu, max %zu, pad %d: %s", items[it], counts[k], maxes[m],
                                  pad, sc.err);
                    KVS_CHECK_MSG(over == (vlen > maxes[m]), "%s x%zu (%zu bytes), max %zu, pad %d: over %d",
                                  items[it], counts[k], vlen, maxes[m], pad, over);
                    if (ok && !over)
                        KVS_CHECK_MSG(len == vlen && !memcmp(t, doc + v0, vlen), "%s x%zu, pad %d: text",
                                      items[it], counts[k], pad);
                    if (ok && over)
                        KVS_CHECK_EQ_INT(len, 0);
                    KVS_CHECK(kvs_scan_expect(&sc, ',', ","));
                    kvs_scan_peek(&sc);
                    struct kvs_number num;
                    KVS_CHECK(kvs_scan_number(&sc, &num) && num.int_part == 7);
                    KVS_CHECK(kvs_scan_expect(&sc, ']', "]"));
                    KVS_CHECK_EQ_INT(kvs_scan_peek(&sc), KVS_SCAN_EOF);
                    kvs_scan_free(&sc);
                    kvs_source_close(src);
                }
    free(doc);
}

static enum kvs_status skip_doc(const char *doc, size_t n, uint64_t *off, char *err, size_t errn)
{
    struct sc c;
    sc_open(&c, doc, n, 64);
    kvs_scan_skip(&c.s);
    enum kvs_status st = c.s.status;
    *off = c.s.err_offset;
    snprintf(err, errn, "%s", c.s.err);
    sc_close(&c);
    return st;
}

static void test_nesting_limit(void)
{
    char *doc = malloc(2 * 1000 + 1);
    for (int depth = 500; depth <= 520; depth += 20) {
        size_t n = 0;
        for (int i = 0; i < depth; i++)
            doc[n++] = '[';
        for (int i = 0; i < depth; i++)
            doc[n++] = ']';
        uint64_t off;
        char err[256];
        enum kvs_status st = skip_doc(doc, n, &off, err, sizeof err);
        if (depth <= KVS_SCAN_MAX_DEPTH) {
            KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
        } else {
            KVS_CHECK_EQ_INT(st, KVS_STATUS_LIMIT);
            KVS_CHECK_EQ_INT(off, KVS_SCAN_MAX_DEPTH); /* the first '[' too many */
            KVS_CHECK(strstr(err, "nesting") != NULL);
        }
    }
    free(doc);
}

/* malformed documents: the error names the offset of the first bad byte */
static void test_malformed_offsets(void)
{
    struct {
        const char *doc, *at, *expect;
    } cases[] = {
        {"{\"a\": 1,, \"b\": 2}", ", \"b", "string key"},
        {"{\"a\" 1}", " 1", "':'"},
        {"[1, 2 3]", " 3", "','"},
        {"{\"a\": tru}", "tru", "value"},
        {"{\"a\": [1, }", "}", "value"},
        {"[\"x\" , @]", "@", "value"},
        {"{\"k\": 1} ", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t off;
        char err[256];
        enum kvs_status st = skip_doc(cases[i].doc, strlen(cases[i].doc), &off, err, sizeof err);
        if (!cases[i].at) {
            KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
            continue;
        }
        KVS_CHECK_MSG(st == KVS_STATUS_PARSE, "case %zu: status %d (%s)", i, st, err);
        const char *at = strstr(cases[i].doc, cases[i].at);
        uint64_t want = (uint64_t)(at - cases[i].doc);
        if (cases[i].at[0] == ' ')
            want++; /* whitespace is skipped: the byte after it is the bad one */
        KVS_CHECK_MSG(off == want, "case %zu: offset %llu, want %llu (%s)", i, (unsigned long long)off,
                      (unsigned long long)want, err);
        KVS_CHECK_MSG(strstr(err, cases[i].expect) != NULL, "case %zu: '%s' lacks '%s'", i, err,
                      cases[i].expect);
    }
}

static void test_truncation(void)
{
    const char *cases[] = {"[1, 2", "{\"abc", "[tru", "{\"a\": 12", "[[[", "{\"a\":"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t off;
        char err[256];
        enum kvs_status st = skip_doc(cases[i], strlen(cases[i]), &off, err, sizeof err);
        /* "{"a": 12" is a complete number but an unclosed object */
        KVS_CHECK_MSG(st == KVS_STATUS_TRUNCATED, "'%s': status %d (%s)", cases[i], st, err);
    }
}

/* control bytes and NULs outside strings are errors, not crashes */
static void test_binary_garbage(void)
{
    const char doc[] = "[1, \x01 2]";
    uint64_t off;
    char err[256];
    KVS_CHECK_EQ_INT(skip_doc(doc, sizeof doc - 1, &off, err, sizeof err), KVS_STATUS_PARSE);
    KVS_CHECK_EQ_INT(off, 4);
    const char nul[] = "[1,\0 2]";
    KVS_CHECK_EQ_INT(skip_doc(nul, sizeof nul - 1, &off, err, sizeof err), KVS_STATUS_PARSE);
    KVS_CHECK_EQ_INT(off, 3);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"escapes", test_escapes},
        {"bad_escapes", test_bad_escapes},
        {"backslash_runs_across_refills", test_backslash_runs_across_refills},
        {"numbers", test_numbers},
        {"skip_and_capture", test_skip_and_capture},
        {"capture_max_across_refills", test_capture_max_across_refills},
        {"nesting_limit", test_nesting_limit},
        {"malformed_offsets", test_malformed_offsets},
        {"truncation", test_truncation},
        {"binary_garbage", test_binary_garbage},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
