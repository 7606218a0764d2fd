/* tests/test_hostile.c — hostile and odd inputs: the limits that keep them
 * bounded (each one at both sides of its edge, at a default and a tiny read
 * buffer, with the byte offset in the message), and a case for every finding
 * of the fuzzers (tests/fuzz/, docs/reliability.md). The unit suite runs it,
 * under ASan/UBSan/LSan too in the sanitizer build of .ci/run, where most of
 * these bugs show.
 *
 *   meson test -C build test_hostile     ./build/tests/test_hostile [case...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "analyze_input.h"
#include "analyzer_test_util.h"
#include "devices.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "models.h"
#include "kvscope/reader.h"
#include "reader_impl.h"
#include "scan.h"

static struct kvs_log_capture cap;

/* Analyse `text` (written to a temp file); the status, *out set on success. */
static enum kvs_status analyze_text(const char *text, size_t n, struct kvs_analysis **out)
{
    char path[512];
    kvs_tmp_write(path, sizeof path, text, n, ".json");
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(&cap);
    *out = NULL;
    enum kvs_status st = kvs_analyze_file(path, &opt, out);
    unlink(path);
    return st;
}

/* groups.c sorted its (NULL, 0) group array: UBSan "null pointer passed as
 * argument 1" on HTA traces with no copy/cast work (triton_example, ...). */
static void test_no_copy_groups(void)
{
    static const char trace[] =
        "{\"traceEvents\": ["
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,"
        "\"ts\":10,\"dur\":5,\"args\":{\"External id\":1}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_kernel\",\"pid\":0,\"tid\":7,"
        "\"ts\":12,\"dur\":2,\"args\":{\"External id\":1,\"device\":0,\"stream\":7}}]}";
    struct kvs_analysis *a;
    KVS_REQUIRE(analyze_text(trace, sizeof trace - 1, &a) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(a->ngroup, 0);
    KVS_CHECK_EQ_INT(a->nkernel, 1);
    KVS_CHECK_EQ_INT(a->trace.events, 2);
    kvs_analysis_free(a);
}


/* The in-memory entry point reads like a file: the same analysis of a
 * fixture from a path, from its bytes, and from its gzip'ed bytes. */
static void test_memory_matches_file(void)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, "kineto_small.json");
    size_t n;
    char *text = kvs_read_all(path, &n);
    unsigned char gz[16384];
    uLongf gzlen = sizeof gz;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    KVS_REQUIRE(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    zs.next_in = (unsigned char *)text;
    zs.avail_in = (uInt)n;
    zs.next_out = gz;
    zs.avail_out = (uInt)gzlen;
    KVS_REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    gzlen = zs.total_out;
    deflateEnd(&zs);
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(&cap);
    struct kvs_analysis *f = NULL, *m = NULL, *g = NULL;
    KVS_REQUIRE(kvs_analyze_file(path, &opt, &f) == KVS_STATUS_OK);
    KVS_CHECK(kvs_analyze_memory(text, n, "kineto_small.json", &opt, &m) == KVS_STATUS_OK);
    KVS_CHECK(kvs_analyze_memory(gz, gzlen, NULL, &opt, &g) == KVS_STATUS_OK);
    const struct kvs_analysis *both[2] = {m, g};
    for (int k = 0; k < 2; k++) {
        const struct kvs_analysis *a = both[k];
        if (!a)
            continue;
        KVS_CHECK_EQ_INT(a->trace.events, f->trace.events);
        KVS_CHECK_EQ_INT(a->trace.bytes, n);
        KVS_CHECK_EQ_INT(a->ngroup, f->ngroup);
        KVS_CHECK_EQ_INT(a->nkernel, f->nkernel);
        KVS_CHECK_EQ_INT(a->nfinding, f->nfinding);
        KVS_CHECK_EQ_INT(a->nstep, f->nstep);
        KVS_CHECK_NEAR(a->steps.total_gpu_ms, f->steps.total_gpu_ms, 0);
        for (size_t i = 0; i < a->ngroup && i < f->ngroup; i++)
            KVS_CHECK_EQ_STR(a->groups[i].role, f->groups[i].role);
    }
    KVS_CHECK_EQ_STR(m ? m->trace.path : NULL, "kineto_small.json");
    KVS_CHECK_EQ_STR(g ? g->trace.path : NULL, "(memory)");
    /* an empty buffer is an empty trace, as an empty file is */
    struct kvs_analysis *e = NULL;
    KVS_CHECK_EQ_INT(kvs_analyze_memory("", 0, NULL, &opt, &e), KVS_STATUS_EMPTY);
    KVS_CHECK(e == NULL);
    kvs_analysis_free(f);
    kvs_analysis_free(m);
    kvs_analysis_free(g);
    free(text);
}

/* Analyse text in memory with a read buffer of bufsize (0: the default). */
static enum kvs_status analyze_mem(const char *text, size_t n, size_t bufsize,
                                   struct kvs_analysis **out)
{
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(&cap);
    struct kvs_analyze_input in;
    memset(&in, 0, sizeof in);
    in.path = "hostile.json";
    in.data = text;
    in.len = n;
    in.in_memory = true;
    in.read_bufsize = bufsize;
    *out = NULL;
    return kvs_analyze_input(&in, &opt, out);
}

/* A growing string. */
struct str {
    char *p;
    size_t n, cap;
};

static void put(struct str *s, const char *text, size_t n)
{
    if (s->n + n + 1 > s->cap) {
        s->cap = (s->n + n + 1) * 2;
        s->p = realloc(s->p, s->cap);
        if (!s->p)
            KVS_TEST_SETUP_FAILED("out of memory");
    }
    memcpy(s->p + s->n, text, n);
    s->n += n;
    s->p[s->n] = 0;
}

static void puts_(struct str *s, const char *text) { put(s, text, strlen(text)); }

static void put_rep(struct str *s, const char *text, size_t times)
{
    for (size_t i = 0; i < times; i++)
        puts_(s, text);
}

static const size_t bufsizes[] = {0, 64};

/* text must give LIMIT at byte `at` with `what` in the message, at every
 * buffer size; with `ok_text` (the same one step inside the limit) OK. */
static void check_limit(const struct str *bad, const struct str *ok, uint64_t at, const char *what)
{
    char want[64];
    snprintf(want, sizeof want, "at byte %llu:", (unsigned long long)at);
    for (size_t i = 0; i < sizeof bufsizes / sizeof bufsizes[0]; i++) {
        struct kvs_analysis *a;
        enum kvs_status st = analyze_mem(bad->p, bad->n, bufsizes[i], &a);
        KVS_CHECK_MSG(st == KVS_STATUS_LIMIT && !a, "%s, buffer %zu: status %d", what, bufsizes[i], (int)st);
        KVS_CHECK_MSG(strstr(cap.last, what) && strstr(cap.last, want) && strstr(cap.last, "limit"),
                      "buffer %zu: want \"%s\" %s in \"%s\"", bufsizes[i], what, want, cap.last);
        kvs_analysis_free(a);
        st = analyze_mem(ok->p, ok->n, bufsizes[i], &a);
        KVS_CHECK_MSG(st == KVS_STATUS_OK && a, "%s, inside the limit, buffer %zu: status %d (%s)",
                      what, bufsizes[i], (int)st, cap.last);
        kvs_analysis_free(a);
    }
}

#define EV_HEAD "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1}," \
                "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"ts\":1,\"dur\":1,\"args\":{\"x\":"
#define EV_TAIL "}}]}"

/* nesting deeper than KVS_SCAN_MAX_DEPTH inside a value that is skipped */
static void test_limit_depth(void)
{
    struct str bad = {0}, ok = {0};
    puts_(&bad, EV_HEAD);
    uint64_t at = bad.n + KVS_SCAN_MAX_DEPTH; /* the bracket one level too deep */
    put_rep(&bad, "[", KVS_SCAN_MAX_DEPTH + 1);
    put_rep(&bad, "]", KVS_SCAN_MAX_DEPTH + 1);
    puts_(&bad, EV_TAIL);
    puts_(&ok, EV_HEAD);
    put_rep(&ok, "[", KVS_SCAN_MAX_DEPTH);
    put_rep(&ok, "]", KVS_SCAN_MAX_DEPTH);
    puts_(&ok, EV_TAIL);
    check_limit(&bad, &ok, at, "nesting deeper than 512 levels");
    free(bad.p);
    free(ok.p);
}

static void test_limit_number(void)
{
    struct str bad = {0}, ok = {0};
    puts_(&bad, EV_HEAD);
    uint64_t at = bad.n;
    put_rep(&bad, "7", KVS_SCAN_MAX_NUMBER + 1);
    puts_(&bad, EV_TAIL);
    puts_(&ok, EV_HEAD);
    put_rep(&ok, "7", KVS_SCAN_MAX_NUMBER);
    puts_(&ok, EV_TAIL);
    check_limit(&bad, &ok, at, "a number longer than 4096 characters");
    free(bad.p);
    free(ok.p);
}

/* a kernel name (read, not skipped) one byte too long */
static void test_limit_string(void)
{
    struct str bad = {0}, ok = {0};
    static const char head[] = "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"ts\":1,\"dur\":1,\"name\":";
    puts_(&bad, head);
    uint64_t at = bad.n;
    puts_(&bad, "\"");
    put_rep(&bad, "k", KVS_SCAN_MAX_STRING + 1);
    puts_(&bad, "\"}]}");
    puts_(&ok, head);
    puts_(&ok, "\"");
    put_rep(&ok, "k", KVS_SCAN_MAX_STRING);
    puts_(&ok, "\"}]}");
    check_limit(&bad, &ok, at, "a string longer than 1048576 bytes");
    /* cut inside the long string: the same LIMIT, not truncation, at any buffer size */
    bad.n = at + 1 + KVS_SCAN_MAX_STRING + 10;
    for (size_t i = 0; i < sizeof bufsizes / sizeof bufsizes[0]; i++) {
        struct kvs_analysis *a;
        KVS_CHECK_EQ_INT(analyze_mem(bad.p, bad.n, bufsizes[i], &a), KVS_STATUS_LIMIT);
        kvs_analysis_free(a);
    }
    free(bad.p);
    free(ok.p);
}

static void rank_trace(struct str *s, int rank, uint64_t *at)
{
    puts_(s, "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"ts\":1,"
             "\"dur\":1,\"args\":{\"Input Dims\":[[2,3],");
    *at = s->n;
    puts_(s, "[");
    for (int i = 0; i < rank; i++)
        puts_(s, i ? ",1" : "1");
    /* a tensor list of 100 tensors is not a rank of 100 */
    puts_(s, "],[[1,2]");
    put_rep(s, ",[1,2]", 99);
    puts_(s, "]],\"Input type\":[\"float\",\"float\",\"TensorList\"]}}]}");
}

static void test_limit_rank(void)
{
    struct str bad = {0}, ok = {0};
    uint64_t at, at_ok;
    rank_trace(&bad, KVS_READ_MAX_RANK + 1, &at);
    rank_trace(&ok, KVS_READ_MAX_RANK, &at_ok);
    check_limit(&bad, &ok, at, "a tensor of rank 65 in Input Dims (more than 64)");
    free(bad.p);
    free(ok.p);
}

/* Times and byte counts whose sums would overflow int64 in the analysis:
 * found by the fuzzer as signed overflows in steps.c, findings.c, event.c
 * (B/E durations) and groups.c (2 x bytes of a device-to-device copy). */
static void test_limit_times_and_bytes(void)
{
    static const struct {
        const char *second_event; /* after a good first event */
        const char *what;
    } cases[] = {
        {"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":4611686018427387.905,\"dur\":1}",
         "an event at 4611686018427387905 ns, outside"},
        {"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":-1152921504606846.977,\"dur\":1}",
         "an event at -1152921504606846977 ns, outside"},
        {"{\"ph\":\"B\",\"cat\":\"cpu_op\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":-9223372036854775808}",
         "outside the times a trace can hold"},
        {"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":9223372036854775807}",
         "takes the events' total time past 2^60 ns"},
        {"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":600000000000000},"
         "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":600000000000000}",
         "takes the events' total time past 2^60 ns"},
        {"{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoD\",\"ts\":1,\"dur\":1,"
         "\"args\":{\"bytes\":4611686018427387904}}",
         "a copy of 4611686018427387904 bytes takes the copies' total past 2^60 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct str t = {0};
        puts_(&t, "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1},");
        puts_(&t, cases[i].second_event);
        puts_(&t, "]}");
        struct kvs_analysis *a;
        KVS_CHECK_EQ_INT(analyze_mem(t.p, t.n, 0, &a), KVS_STATUS_LIMIT);
        KVS_CHECK_MSG(strstr(cap.last, cases[i].what) && strstr(cap.last, "at byte "),
                      "case %zu: \"%s\" not in \"%s\"", i, cases[i].what, cap.last);
        kvs_analysis_free(a);
        free(t.p);
    }
    /* the edges themselves are fine: the first and last times, the byte total */
    static const char edges[] =
        "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":4611686018427387.904,"
        "\"dur\":1},{\"ph\":\"B\",\"cat\":\"cpu_op\",\"name\":\"b\",\"pid\":1,\"tid\":1,"
        "\"ts\":-1152921504606846.976},{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":-1152921504606845.976},"
        "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoD\",\"ts\":1,\"dur\":1,"
        "\"args\":{\"bytes\":1152921504606846976}}]}";
    struct kvs_analysis *a;
    KVS_CHECK_MSG(analyze_mem(edges, sizeof edges - 1, 0, &a) == KVS_STATUS_OK, "%s", cap.last);
    kvs_analysis_free(a);
}

/* Model configs whose numbers do not fit: converting 1e300 to int64 was
 * undefined (found by fuzz_model); now INVALID_ARGUMENT naming the key. */
static void test_config_numbers(void)
{
    static const struct {
        const char *text;
        enum kvs_status want;
        const char *key;
    } cases[] = {
        {"{\"num_hidden_layers\": 1e300}", KVS_STATUS_INVALID_ARGUMENT, "\"num_hidden_layers\" is 1e+300"},
        {"{\"num_hidden_layers\": 61, \"head_dim\": 9.3e18}", KVS_STATUS_INVALID_ARGUMENT, "\"head_dim\""},
        {"{\"num_hidden_layers\": 61, \"kv_lora_rank\": 16777217}", KVS_STATUS_INVALID_ARGUMENT,
         "\"kv_lora_rank\""},
        {"{\"num_hidden_layers\": 61.5}", KVS_STATUS_INVALID_ARGUMENT, "\"num_hidden_layers\""},
        {"{\"num_hidden_layers\": 61, \"kv_lora_rank\": 16777216}", KVS_STATUS_OK, NULL},
        {"{\"num_hidden_layers\": -3}", KVS_STATUS_INVALID_ARGUMENT, "\"num_hidden_layers\" is -3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct kvs_model m;
        struct kvs_logger lg = kvs_capture_logger(&cap);
        enum kvs_status st = kvs_model_parse(cases[i].text, strlen(cases[i].text), "cfg", &lg, &m);
        KVS_CHECK_MSG(st == cases[i].want, "case %zu: status %d", i, (int)st);
        if (cases[i].key)
            KVS_CHECK_MSG(strstr(cap.last, cases[i].key), "case %zu: \"%s\"", i, cap.last);
        else
            KVS_CHECK_EQ_INT(m.kv_lora_rank, 16777216);
    }
}

/* Header numbers out of int's range (undefined conversions, found by
 * fuzz_trace): ignored, or saturated for the dropped-record count. */
static void test_header_numbers(void)
{
    static const char trace[] =
        "{\"deviceProperties\":[{\"id\":1e300,\"name\":\"NVIDIA B200\"},{\"id\":-1e300,\"name\":\"x\"},"
        "{\"id\":0,\"name\":\"NVIDIA H200\"}],\"distributedInfo\":{\"rank\":1e300,\"world_size\":-7},"
        "\"kvscope\":{\"dropped_records\":1e300,\"dropped_ranges\":5},"
        "\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1,"
        "\"args\":{\"device\":0}}]}";
    struct kvs_analysis *a;
    KVS_REQUIRE(analyze_mem(trace, sizeof trace - 1, 0, &a) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(a->trace.rank, -1);
    KVS_CHECK_EQ_INT(a->trace.world_size, 0);
    KVS_CHECK(a->trace.dropped_records == UINT64_MAX);
    KVS_CHECK_EQ_STR(a->trace.device, "NVIDIA H200");
    kvs_analysis_free(a);
    /* kvscope's own metadata names the rank when distributedInfo does not:
     * the same bounds there */
    static const char meta[] =
        "{\"kvscope\":{\"rank\":1e300,\"world_size\":3e9},"
        "\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1}]}";
    KVS_REQUIRE(analyze_mem(meta, sizeof meta - 1, 0, &a) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(a->trace.rank, -1);
    KVS_CHECK_EQ_INT(a->trace.world_size, 0);
    kvs_analysis_free(a);
}

/* A header field with an escape JSON does not have ("\-"): the scanner
 * skips header strings without decoding them, cJSON refuses the field, and
 * the reader called that "out of memory" (KVS_STATUS_NO_MEMORY; found by
 * fuzz_trace in CI: corpus/trace/regress-header-bad-escape.json). Now the
 * field is ignored with a warning and the events are read. */
static void test_header_bad_escape(void)
{
    static const char trace[] =
        "{\"deviceProperties\":[{\"id\":0,\"name\":\"Tesla V100\\\\\\-DGXS\"}],"
        "\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":4,"
        "\"args\":{\"device\":0}}]}";
    struct kvs_analysis *a;
    memset(&cap, 0, sizeof cap);
    KVS_REQUIRE(analyze_text(trace, sizeof trace - 1, &a) == KVS_STATUS_OK);
    KVS_CHECK(strstr(cap.all, "\"deviceProperties\" holds an escape JSON does not have") != NULL);
    KVS_CHECK_EQ_INT(a->trace.kernels, 1);
    kvs_analysis_free(a);
    /* the escapes JSON has, \u ones included, still read */
    static const char good[] =
        "{\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\\t\\u0041\\/\"}],"
        "\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":4}]}";
    memset(&cap, 0, sizeof cap);
    KVS_REQUIRE(analyze_text(good, sizeof good - 1, &a) == KVS_STATUS_OK);
    KVS_CHECK_EQ_STR(a->trace.device, "NVIDIA H200\tA/");
    KVS_CHECK_EQ_INT(cap.warnings, 0);
    kvs_analysis_free(a);
}

/* Dims whose products overflow int64 (match.c row_of, found by fuzz_trace:
 * corpus/trace/regress-match-row-overflow.json): no match, no overflow. */
static void test_huge_dims(void)
{
    static const char trace[] =
        "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"ts\":10,\"dur\":5,"
        "\"args\":{\"External id\":1,\"Input Dims\":[[4096,1,111111111111111111,576],"
        "[4096,1,111111111111111111,576]],\"Input type\":[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"direct_copy_kernel_cuda\",\"ts\":11,\"dur\":2,"
        "\"args\":{\"External id\":1}}]}";
    for (int model = 0; model < 2; model++) {
        struct kvs_analysis_options opt;
        kvs_analysis_options_init(&opt);
        opt.log = kvs_capture_logger(&cap);
        opt.model = model ? "glm5" : NULL;
        struct kvs_analysis *a;
        KVS_REQUIRE(kvs_analyze_memory(trace, sizeof trace - 1, NULL, &opt, &a) == KVS_STATUS_OK);
        KVS_CHECK_EQ_INT(a->ngroup, 1);
        KVS_CHECK(!a->groups[0].has_match);
        KVS_CHECK_EQ_INT(a->groups[0].bytes_per_call, 0); /* unknown: past 2^56 bytes */
        kvs_analysis_free(a);
    }
}

/* A gzip stream that goes bad after good data (fuzz_gz, corpus/gz/
 * regress-gz-corrupt-sentinel.bin): zlib had written past the scanner's
 * data before it found the fault, the scanner's sentinel was gone and it
 * read on past its buffer. Now: PARSE, "corrupt gzip data". */
static void test_gzip_corrupt_after_data(void)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, "../fuzz/corpus/gz/regress-gz-corrupt-sentinel.bin");
    size_t n;
    char *bin = kvs_read_all(path, &n);
    KVS_REQUIRE(n > 10 && bin[0] == 0); /* mode 0 of fuzz_gz: the rest is gzip bytes as they are */
    static const size_t chunks[] = {1, 5, 0};
    for (size_t i = 0; i < 3; i++) {
        struct kvs_trace_data t;
        struct kvs_logger lg = kvs_capture_logger(&cap);
        struct kvs_read_opts o;
        memset(&o, 0, sizeof o);
        o.log = &lg;
        o.bufsize = 256;
        o.source_chunk = chunks[i];
        enum kvs_status st = kvs_read_trace_memory(bin + 1, n - 1, "regress.gz", &o, &t);
        KVS_CHECK_MSG(st == KVS_STATUS_PARSE, "chunk %zu: status %d", chunks[i], (int)st);
        KVS_CHECK_MSG(strstr(cap.all, "corrupt gzip data"), "chunk %zu: %s", chunks[i], cap.all);
        /* one error, the source's: not a second "malformed trace at byte 0:
         * reading the input failed" whose offset means nothing */
        KVS_CHECK_MSG(cap.errors == 1, "chunk %zu: %d errors: %s", chunks[i], cap.errors, cap.all);
        kvs_trace_data_free(&t);
    }
    free(bin);
    /* the same fault made here: a stream whose check value is wrong, read
     * through a buffer smaller than the data */
    struct str json = {0};
    puts_(&json, "{\"traceEvents\": [");
    for (int i = 0; i < 200; i++)
        puts_(&json, i ? ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1}"
                       : "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1}");
    puts_(&json, "]}");
    unsigned char gz[32768];
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    KVS_REQUIRE(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    zs.next_in = (unsigned char *)json.p;
    zs.avail_in = (uInt)json.n;
    zs.next_out = gz;
    zs.avail_out = sizeof gz;
    KVS_REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    size_t len = zs.total_out;
    deflateEnd(&zs);
    gz[len - 8] ^= 0xff; /* the CRC-32 of the trailer */
    struct kvs_trace_data t;
    struct kvs_logger lg = kvs_capture_logger(&cap);
    struct kvs_read_opts o;
    memset(&o, 0, sizeof o);
    o.log = &lg;
    o.bufsize = 64;
    KVS_CHECK_EQ_INT(kvs_read_trace_memory(gz, len, "crc.gz", &o, &t), KVS_STATUS_PARSE);
    KVS_CHECK(strstr(cap.all, "corrupt gzip data") != NULL);
    KVS_CHECK_MSG(cap.errors == 1, "%d errors: %s", cap.errors, cap.all);
    kvs_trace_data_free(&t);
    free(json.p);
}

/* A device table entry whose name is empty, or cut short by a raw NUL byte
 * that cJSON lets through, matched and named the device "" (fuzz_devices,
 * corpus/devices/regress-empty-name.txt). Such an entry is skipped now. */
static void test_device_entry_without_name(void)
{
    static const char table[] = "{\"devices\": [{\"name\": \"\\u0000x\", \"match\": [\"H200\"], "
                                "\"hbm_gbps\": 1}, {\"name\": \"\", \"match\": [\"H200\"], \"hbm_gbps\": 2},"
                                "{\"name\": \"ok\", \"match\": [\"NVIDIA\"], \"hbm_gbps\": 3}]}";
    struct kvs_logger lg = kvs_capture_logger(&cap);
    struct kvs_device_info info;
    bool found;
    KVS_REQUIRE(kvs_device_lookup_in(table, sizeof table - 1, "t", "NVIDIA H200", &lg, &info, &found) ==
                KVS_STATUS_OK);
    KVS_CHECK(found);
    KVS_CHECK_EQ_STR(info.name, "ok");
    KVS_CHECK_NEAR(info.peak_gbps, 3, 0);
    char path[512];
    kvs_fixture_path(path, sizeof path, "../fuzz/corpus/devices/regress-empty-name.txt");
    size_t n;
    char *text = kvs_read_all(path, &n);
    char *nl = memchr(text, '\n', n);
    KVS_REQUIRE(nl);
    *nl = 0;
    KVS_CHECK(kvs_device_lookup_in(nl + 1, n - (size_t)(nl + 1 - text), "t", text, &lg, &info, &found) ==
              KVS_STATUS_OK);
    KVS_CHECK(!found || info.name[0]);
    free(text);
}

/* Buffer inference on leading dims near 2^63: |a - b| x 8 and 8 x active
 * overflowed (match.c, found by fuzz_trace: corpus/trace/
 * regress-near-sibling-overflow.json). Now compared by division. */
static void test_buffer_inference_huge_dims(void)
{
    static const char *const tokens[] = {"4611686018427387902", "2305843009213693952", "4096"};
    struct str t = {0};
    puts_(&t, "{\"traceEvents\":[");
    for (int i = 0; i < 3; i++) {
        char ev[768];
        snprintf(ev, sizeof ev,
                 "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"ts\":%d,\"dur\":5,"
                 "\"args\":{\"External id\":%d,\"Input Dims\":[[%s,1,576],[%s,1,576]],"
                 "\"Input type\":[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]}},"
                 "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"direct_copy_kernel_cuda\",\"ts\":%d,"
                 "\"dur\":2,\"args\":{\"External id\":%d}}",
                 i ? "," : "", 10 * i + 10, i + 1, tokens[i], tokens[i], 10 * i + 11, i + 1);
        puts_(&t, ev);
    }
    puts_(&t, "]}");
    struct kvs_analysis *a;
    KVS_REQUIRE(analyze_mem(t.p, t.n, 0, &a) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(a->ngroup, 3);
    kvs_analysis_free(a);
    free(t.p);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"no_copy_groups", test_no_copy_groups},
        {"memory_matches_file", test_memory_matches_file},
        {"limit_depth", test_limit_depth},
        {"limit_number", test_limit_number},
        {"limit_string", test_limit_string},
        {"limit_rank", test_limit_rank},
        {"limit_times_and_bytes", test_limit_times_and_bytes},
        {"config_numbers", test_config_numbers},
        {"header_numbers", test_header_numbers},
        {"header_bad_escape", test_header_bad_escape},
        {"huge_dims", test_huge_dims},
        {"gzip_corrupt_after_data", test_gzip_corrupt_after_data},
        {"device_entry_without_name", test_device_entry_without_name},
        {"buffer_inference_huge_dims", test_buffer_inference_huge_dims},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
