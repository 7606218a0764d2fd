/* tests/test_reader.c — the trace reader: the hand-written fixtures in
 * tests/fixtures/ (Kineto ns timestamps, old integer-us schema with old
 * category names, JSON Array Format with B/E pairs), every buffer size from
 * tiny to large giving the same records, truncation at every cut point, gzip
 * (whole, cut, concatenated), stdin, empty and event-less inputs, malformed
 * input with the byte offset through the public API.
 *
 *   meson test -C build test_reader     ./build/analyzers/test_reader [case...]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "kvscope/reader.h"

static enum kvs_status read_with(const char *path, size_t bufsize, struct kvs_trace_data *t,
                                 struct kvs_log_capture *cap)
{
    struct kvs_logger lg = kvs_capture_logger(cap);
    struct kvs_read_opts o = {0};
    o.log = &lg;
    o.bufsize = bufsize;
    return kvs_read_trace(path, &o, t);
}

/* Counted from the fixture's design (tests/fixtures/README.md): two
 * ProfilerSteps of 9 cpu_ops and 5 kernels each, plus aten::mul, an op with
 * an escaped name, and three kernels outside the steps. */
static void test_kineto_fixture_counts(void)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, "kineto_small.json");
    size_t n;
    char *text = kvs_read_all(path, &n);
    /* one event per line in this fixture: count them independently */
    uint64_t lines = 0;
    for (char *p = text; (p = strstr(p, "\n  {")); p++)
        lines++;
    free(text);
    struct kvs_trace_data t;
    struct kvs_log_capture cap;
    KVS_REQUIRE(read_with(path, 0, &t, &cap) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(t.events, lines);
    KVS_CHECK_EQ_INT(t.n_ops, 20);
    KVS_CHECK_EQ_INT(t.n_kernels, 13);
    KVS_CHECK_EQ_INT(t.n_memcpys, 2);
    KVS_CHECK_EQ_INT(t.n_memsets, 1);
    KVS_CHECK_EQ_INT(t.n_runtime, 13); /* 6 launches a step, and aten::mul's */
    KVS_CHECK_EQ_INT(t.bytes, n);
    KVS_CHECK(!t.truncated);
    KVS_CHECK_EQ_STR(t.device_names[0], "NVIDIA H200");
    KVS_CHECK_EQ_INT(t.rank, 0);
    KVS_CHECK_EQ_INT(t.world_size, 1);
    /* 2 steps + 2 layer ranges per step */
    KVS_CHECK_EQ_INT(t.nranges, 6);
    /* "us.nnn" read exactly: ProfilerStep#2 at 1001000.000 us, 1000.000 us long */
    bool found = false;
    for (size_t i = 0; i < t.nranges; i++)
        if (!strcmp(kvs_intern_str(&t.strings, t.ranges[i].name), "ProfilerStep#2")) {
            found = true;
            KVS_CHECK_EQ_INT(t.ranges[i].ts, 1001000000LL);
            KVS_CHECK_EQ_INT(t.ranges[i].dur, 1000000LL);
        }
    KVS_CHECK(found);
    /* an escaped op name is decoded */
    found = false;
    for (size_t i = 0; i < t.ops.n; i++)
        found |= !strcmp(kvs_intern_str(&t.strings, kvs_op_name_at(&t, i)), "aten::weird \"op\" \xc3\xa9 \\ name");
    KVS_CHECK(found);
    /* the memcpy keeps its bytes, the memset too */
    int64_t bytes = 0;
    for (size_t i = 0; i < t.gpus.n; i++)
        bytes += kvs_gpu_get(&t, i).bytes;
    KVS_CHECK_EQ_INT(bytes, 2 * 1152 + 4096);
    kvs_trace_data_free(&t);
}

static void test_old_schema_counts(void)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, "old_schema.json");
    struct kvs_trace_data t;
    struct kvs_log_capture cap;
    KVS_REQUIRE(read_with(path, 0, &t, &cap) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(t.events, 10);
    KVS_CHECK_EQ_INT(t.n_ops, 2);     /* "Operator" is the old cpu_op */
    KVS_CHECK_EQ_INT(t.n_kernels, 2); /* "Kernel" */
    KVS_CHECK_EQ_INT(t.n_runtime, 2); /* "Runtime" */
    KVS_CHECK_EQ_INT(t.rank, 3);      /* distributedInfo after traceEvents */
    KVS_CHECK_EQ_INT(t.world_size, 8);
    /* integer microseconds */
    KVS_CHECK_EQ_INT(kvs_op_ts(&t, 0), 1665536373729000LL * 1000);
    KVS_CHECK_EQ_INT(kvs_op_get(&t, 0).dur, 50000);
    KVS_CHECK_EQ_INT(kvs_op_ext(&t, 0), 5); /* lower-case "external id" */
    kvs_trace_data_free(&t);
}

static void test_array_format_begin_end(void)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, "array_be.json");
    struct kvs_trace_data t;
    struct kvs_log_capture cap;
    KVS_REQUIRE(read_with(path, 0, &t, &cap) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(t.events, 9);
    KVS_CHECK_EQ_INT(t.n_ops, 1); /* one B/E pair */
    KVS_REQUIRE(t.ops.n == 1);
    KVS_CHECK_EQ_INT(kvs_op_ts(&t, 0), 10000);
    KVS_CHECK_EQ_INT(kvs_op_get(&t, 0).dur, 20000);
    KVS_CHECK_EQ_INT(kvs_op_ext(&t, 0), 1);
    KVS_REQUIRE(t.nranges == 1);
    KVS_CHECK_EQ_INT(t.ranges[0].dur, 100000);
    KVS_CHECK_EQ_INT(t.unmatched_end, 1);
    kvs_trace_data_free(&t);
}

/* Every buffer size gives the same records: refills happen at every
 * position of every token. */
static void test_buffer_sizes_agree(void)
{
    const char *fixtures[] = {"kineto_small.json", "old_schema.json", "array_be.json"};
    for (size_t f = 0; f < 3; f++) {
        char path[512];
        kvs_fixture_path(path, sizeof path, fixtures[f]);
        struct kvs_trace_data ref;
        struct kvs_log_capture cap;
        KVS_REQUIRE(read_with(path, 1 << 20, &ref, &cap) == KVS_STATUS_OK);
        for (size_t bs = 64; bs < 1200; bs += 7) {
            struct kvs_trace_data t;
            enum kvs_status st = read_with(path, bs, &t, &cap);
            KVS_CHECK_MSG(st == KVS_STATUS_OK, "%s bufsize %zu: %s", fixtures[f], bs, cap.last);
            KVS_CHECK_MSG(t.events == ref.events && t.ops.n == ref.ops.n && t.gpus.n == ref.gpus.n &&
                              t.rts.n == ref.rts.n && t.nranges == ref.nranges,
                          "%s bufsize %zu", fixtures[f], bs);
            for (size_t i = 0; i < t.ops.n && i < ref.ops.n; i++)
                KVS_CHECK(kvs_op_ts(&t, i) == kvs_op_ts(&ref, i) && kvs_op_ext(&t, i) == kvs_op_ext(&ref, i) &&
                          !strcmp(kvs_intern_str(&t.strings, t.opkeys[kvs_op_key(&t, i)].shape),
                                  kvs_intern_str(&ref.strings, ref.opkeys[kvs_op_key(&ref, i)].shape)));
            for (size_t i = 0; i < t.gpus.n && i < ref.gpus.n; i++)
                KVS_CHECK(kvs_gpu_get(&t, i).ts == kvs_gpu_get(&ref, i).ts && kvs_gpu_get(&t, i).dur == kvs_gpu_get(&ref, i).dur &&
                          !strcmp(kvs_intern_str(&t.strings, kvs_gpu_get(&t, i).name),
                                  kvs_intern_str(&ref.strings, kvs_gpu_get(&ref, i).name)));
            kvs_trace_data_free(&t);
        }
        kvs_trace_data_free(&ref);
    }
}

/* Cut the fixture at every byte: a prefix that ends inside the document
 * reads as TRUNCATED with exactly the events that ended before the cut. */
static void test_truncation_every_cut(void)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, "kineto_small.json");
    size_t n;
    char *text = kvs_read_all(path, &n);
    /* event ends, independently of the parser: this fixture has one event
     * per line, each line "  {...}" followed by ",\n" or "\n  ]" */
    size_t ends[256], nends = 0;
    char *start = strstr(text, "\"traceEvents\": [");
    for (char *p = start; (p = strstr(p, "\n  {")); p++) {
        char *eol = strchr(p + 1, '\n');
        size_t e = (size_t)(eol - text);
        if (text[e - 1] == ',')
            e--;
        ends[nends++] = e; /* offset just after the event's '}' */
    }
    size_t events_close = (size_t)(strstr(start, "\n  ],") - text) + 4; /* after ']' */
    size_t last = n; /* the document's last byte that is not whitespace */
    while (last > 0 && (text[last - 1] == '\n' || text[last - 1] == ' '))
        last--;
    for (size_t cut = 1; cut < n; cut++) {
        char tmp[256];
        kvs_tmp_write(tmp, sizeof tmp, text, cut, ".json");
        struct kvs_trace_data t;
        struct kvs_log_capture cap;
        enum kvs_status st = read_with(tmp, 64, &t, &cap);
        size_t want = 0;
        while (want < nends && ends[want] <= cut)
            want++;
        if (cut >= last) { /* only trailing whitespace is missing: complete */
            KVS_CHECK_MSG(st == KVS_STATUS_OK && t.events == nends, "cut %zu: status %d", cut, st);
            kvs_trace_data_free(&t);
            unlink(tmp);
            continue;
        }
        KVS_CHECK_MSG(st == KVS_STATUS_TRUNCATED, "cut %zu: status %d (%s)", cut, st, cap.last);
        KVS_CHECK_MSG(t.truncated, "cut %zu", cut);
        KVS_CHECK_MSG(t.events == want, "cut %zu: %llu events, want %zu", cut,
                      (unsigned long long)t.events, want);
        if (cut > events_close)
            KVS_CHECK_EQ_INT(t.events, nends);
        KVS_CHECK_MSG(strstr(cap.last, "truncated") != NULL, "cut %zu: warning '%s'", cut, cap.last);
        kvs_trace_data_free(&t);
        unlink(tmp);
    }
    free(text);
}

static void gz_write(const char *path, const char *data, size_t n)
{
    gzFile g = gzopen(path, "wb6");
    if (!g || gzwrite(g, data, (unsigned)n) != (int)n || gzclose(g) != Z_OK)
        KVS_TEST_SETUP_FAILED("gz write failed");
}

static void test_gzip_and_stdin(void)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, "kineto_small.json");
    size_t n;
    char *text = kvs_read_all(path, &n);
    struct kvs_trace_data ref, t;
    struct kvs_log_capture cap;
    KVS_REQUIRE(read_with(path, 0, &ref, &cap) == KVS_STATUS_OK);

    /* .gz, recognised by content (the name says .dat) */
    char gz[256];
    kvs_tmp_path(gz, sizeof gz, ".dat");
    gz_write(gz, text, n);
    KVS_CHECK_EQ_INT(read_with(gz, 4096, &t, &cap), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(t.events, ref.events);
    KVS_CHECK_EQ_INT(t.ops.n, ref.ops.n);
    KVS_CHECK_EQ_INT(t.bytes, n);
    kvs_trace_data_free(&t);

    /* a cut .gz: truncated, with the events before the cut */
    size_t gzn;
    char *gzdata = kvs_read_all(gz, &gzn);
    char cut[256];
    kvs_tmp_write(cut, sizeof cut, gzdata, gzn * 2 / 3, ".json.gz");
    KVS_CHECK_EQ_INT(read_with(cut, 4096, &t, &cap), KVS_STATUS_TRUNCATED);
    KVS_CHECK(t.events > 0 && t.events < ref.events);
    kvs_trace_data_free(&t);
    unlink(cut);

    /* corrupt gzip: an error, not a crash */
    gzdata[gzn / 2] ^= 0x55;
    gzdata[gzn / 2 + 1] ^= 0x55;
    kvs_tmp_write(cut, sizeof cut, gzdata, gzn, ".json.gz");
    enum kvs_status st = read_with(cut, 4096, &t, &cap);
    KVS_CHECK(st == KVS_STATUS_PARSE || st == KVS_STATUS_TRUNCATED);
    kvs_trace_data_free(&t);
    unlink(cut);
    free(gzdata);

    /* stdin, gzipped, through the public API */
    int fd = open(gz, O_RDONLY);
    int saved = dup(STDIN_FILENO);
    KVS_REQUIRE(fd >= 0 && saved >= 0 && dup2(fd, STDIN_FILENO) >= 0);
    close(fd);
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(&cap);
    struct kvs_analysis *a = NULL;
    st = kvs_analyze_file("-", &opt, &a);
    dup2(saved, STDIN_FILENO);
    close(saved);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
    if (a) {
        KVS_CHECK_EQ_STR(a->trace.path, "-");
        KVS_CHECK_EQ_INT(a->trace.events, ref.events);
        KVS_CHECK_EQ_INT(a->trace.ops, ref.n_ops);
    }
    kvs_analysis_free(a);
    unlink(gz);
    kvs_trace_data_free(&ref);
    free(text);
}

static enum kvs_status analyze_text(const char *text, size_t n, struct kvs_log_capture *cap,
                                    struct kvs_analysis **a)
{
    char tmp[256];
    kvs_tmp_write(tmp, sizeof tmp, text, n, ".json");
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(cap);
    enum kvs_status st = kvs_analyze_file(tmp, &opt, a);
    unlink(tmp);
    return st;
}

static void test_empty_inputs(void)
{
    const char *cases[] = {"", "   \n", "{}", "{\"traceEvents\": []}", "[]",
                           "{\"schemaVersion\": 1, \"traceEvents\": [\n"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct kvs_log_capture cap;
        struct kvs_analysis *a = (struct kvs_analysis *)1;
        enum kvs_status st = analyze_text(cases[i], strlen(cases[i]), &cap, &a);
        KVS_CHECK_MSG(st == KVS_STATUS_EMPTY, "case %zu: status %d", i, st);
        KVS_CHECK(a == NULL);
        KVS_CHECK_MSG(strstr(cap.last, "empty") || strstr(cap.last, "no events") ||
                          strstr(cap.last, "before its first"),
                      "case %zu: message '%s'", i, cap.last);
    }
}

static void test_malformed_public(void)
{
    const char doc[] = "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\"} {\"ph\": \"X\"}]}";
    struct kvs_log_capture cap;
    struct kvs_analysis *a = NULL;
    KVS_CHECK_EQ_INT(analyze_text(doc, sizeof doc - 1, &cap, &a), KVS_STATUS_PARSE);
    KVS_CHECK(a == NULL);
    char want[64];
    snprintf(want, sizeof want, "byte %zu", (size_t)(strstr(doc, "} {") - doc) + 2);
    KVS_CHECK_MSG(strstr(cap.last, want) != NULL, "'%s' lacks '%s'", cap.last, want);
    KVS_CHECK(strstr(cap.last, "expected") != NULL);
    /* trailing garbage after a complete trace */
    const char doc2[] = "{\"traceEvents\": []} x";
    KVS_CHECK_EQ_INT(analyze_text(doc2, sizeof doc2 - 1, &cap, &a), KVS_STATUS_PARSE);
    KVS_CHECK(strstr(cap.last, "byte 20") != NULL);
    /* traceEvents that is not an array */
    const char doc3[] = "{\"traceEvents\": {}}";
    KVS_CHECK_EQ_INT(analyze_text(doc3, sizeof doc3 - 1, &cap, &a), KVS_STATUS_PARSE);
    KVS_CHECK(strstr(cap.last, "byte 16") != NULL && strstr(cap.last, "array") != NULL);
    /* a missing file */
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(&cap);
    KVS_CHECK_EQ_INT(kvs_analyze_file("/nonexistent/kvs/trace.json", &opt, &a), KVS_STATUS_NOT_FOUND);
    KVS_CHECK(strstr(cap.last, "cannot open") != NULL);
}

/* The packed tables (reader/packed.c) give back every value as pushed, at
 * every place of a block, for values of every width: constant, rising evenly
 * (0 bits), small noise on a slope, random 64-bit (the extremes included),
 * 57 and 58 bits (the widest held at a bit offset, the first held in 64),
 * falling, and a slope the int32 cannot hold; through sealed blocks and the
 * open one; and ops through kvs_op_push/kvs_op_get with their captured bit. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int64_t pattern(unsigned f, size_t i)
{
    switch (f) {
    case 0: return 42;
    case 1: return 1000 + 7 * (int64_t)i;
    case 2: return 1700000000000000000ll + 1500 * (int64_t)i + (int64_t)(rng() % 300);
    case 3: return (int64_t)rng();
    case 4: return i % 97 == 0 ? INT64_MIN : i % 89 == 0 ? INT64_MAX : -(int64_t)i;
    case 5: return (int64_t)i * ((int64_t)1 << 40);
    case 6: return (int64_t)(rng() % 3000);
    case 7: return (int64_t)(i / 300);
    case 8: return (int64_t)(rng() >> 7) - ((int64_t)1 << 56); /* 57 bits: the widest read at any bit */
    default: return (int64_t)(rng() >> 6);                     /* 58 bits: held in 64 */
    }
}

static void test_packed_tables(void)
{
    enum { NF = 10, N = 128 * 37 + 55 };
    struct kvs_packed p = {0};
    static int64_t want[N][NF];
    for (size_t i = 0; i < N; i++) {
        for (unsigned f = 0; f < NF; f++)
            want[i][f] = pattern(f, i);
        KVS_REQUIRE(kvs_packed_push(&p, NF, 0xff, want[i]) == 0);
        if (i % 1000 == 0) /* earlier records while later ones come */
            for (size_t k = 0; k <= i; k += 37)
                for (unsigned f = 0; f < NF; f++)
                    KVS_REQUIRE(kvs_packed_get(&p, k, f) == want[k][f]);
    }
    KVS_CHECK_EQ_INT(p.n, N);
    KVS_CHECK_EQ_INT(p.nblocks, N / 128);
    size_t bad = 0;
    for (size_t i = 0; i < N; i++)
        for (unsigned f = 0; f < NF; f++)
            bad += kvs_packed_get(&p, i, f) != want[i][f];
    KVS_CHECK_EQ_INT(bad, 0);
    /* the evenly rising and constant fields take no bits, the rest what they need */
    const struct kvs_pk_field *h = (const struct kvs_pk_field *)p.blocks[3];
    KVS_CHECK_EQ_INT(h[0].w, 0);
    KVS_CHECK_EQ_INT(h[1].w, 0);
    KVS_CHECK(h[2].w <= 12);
    KVS_CHECK_EQ_INT(h[3].w, 64);
    KVS_CHECK_EQ_INT(h[5].w, 47); /* 2^40 a record: a slope past int32, so 127 x 2^40 in bits */
    KVS_CHECK(h[6].w == 12);      /* 0-2999 */
    KVS_CHECK_EQ_INT(h[8].w, 57);
    KVS_CHECK_EQ_INT(h[9].w, 64);
    kvs_packed_free(&p);

    struct kvs_trace_data t;
    KVS_REQUIRE(kvs_trace_data_init(&t));
    for (size_t i = 0; i < 1000; i++) {
        struct kvs_op_rec o = {(int64_t)(i * 1000 + rng() % 900), (int64_t)(rng() % 50000), (int64_t)i + 1,
                               (uint32_t)(i % 13), (uint32_t)(i / 400), i % 7 == 3};
        KVS_REQUIRE(kvs_op_push(&t, &o) == 0);
        if (i % 11 == 0)
            KVS_REQUIRE(kvs_op_set_captured(&t, i / 2) == 0);
        want[i][0] = o.ts, want[i][1] = o.dur, want[i][2] = o.ext, want[i][3] = o.key, want[i][4] = o.thread;
    }
    bad = 0;
    for (size_t i = 0; i < 1000; i++) {
        struct kvs_op_rec o = kvs_op_get(&t, i);
        bool cap = i % 7 == 3 || (i * 2 < 1000 && (i * 2) % 11 == 0) || (i * 2 + 1 < 1000 && (i * 2 + 1) % 11 == 0);
        bad += o.ts != want[i][0] || o.dur != want[i][1] || o.ext != want[i][2] || o.key != want[i][3] ||
               o.thread != want[i][4] || o.captured != cap || kvs_op_end(&t, i) != o.ts + o.dur;
    }
    KVS_CHECK_EQ_INT(bad, 0);
    kvs_trace_data_free(&t);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"kineto_fixture_counts", test_kineto_fixture_counts},
        {"old_schema_counts", test_old_schema_counts},
        {"array_format_begin_end", test_array_format_begin_end},
        {"buffer_sizes_agree", test_buffer_sizes_agree},
        {"truncation_every_cut", test_truncation_every_cut},
        {"gzip_and_stdin", test_gzip_and_stdin},
        {"empty_inputs", test_empty_inputs},
        {"malformed_public", test_malformed_public},
        {"packed_tables", test_packed_tables},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
