/* tests/test_alloc_fail.c — every allocation of the reader and of the
 * analysis made to fail in turn, on small fixtures (plain and gzip): each
 * run must end with KVS_STATUS_NO_MEMORY, no result, and nothing leaked
 * (LeakSanitizer checks at exit in the sanitizer build of .ci/run).
 *
 *   meson test -C build test_alloc_fail     ./build/tests/test_alloc_fail [case...]
 *
 * The hook is the linker, not the library: this program is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup, so every
 * call to those in kvscope's own objects (the analyzers, zlib's allocations
 * too: source.c hands zlib its own calloc/free) lands in __wrap_* below,
 * which fail the Nth one. Shared libraries (libc, cJSON, zlib) keep theirs:
 * cJSON's few header parses are not counted. The count is atomic: the
 * kvs_analyze_many case allocates from two threads.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "analyze_input.h"
#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "kvscope/analyze_many.h"
#include "kvscope/rank_summary.h"
#include "kvscope/reader.h"
#include "kvscope/report.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

/* test-only state: the allocation to fail (-1: none) and the count so far */
static long fail_at = -1;
static long allocs;
static bool failed;

/* in sanitizer builds: KVS_ALLOC_FAIL_TRACE=1 prints where each failed
 * allocation was made */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

static bool fail_now(void)
{
    if (__atomic_fetch_add(&allocs, 1, __ATOMIC_RELAXED) == fail_at) {
        __atomic_store_n(&failed, true, __ATOMIC_RELAXED);
        if (getenv("KVS_ALLOC_FAIL_TRACE") && __sanitizer_print_stack_trace)
            __sanitizer_print_stack_trace();
        return true;
    }
    return false;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { return fail_now() ? NULL : __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }

static struct kvs_log_capture cap;

/* the fixture text; gzip'ed when gz (by this test's zlib, before counting) */
static char *load(const char *name, bool gz, size_t *n)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, name);
    char *text = kvs_read_all(path, n);
    if (!gz)
        return text;
    uLongf cap_out = compressBound((uLong)*n) + 64;
    unsigned char *out = __real_malloc(cap_out);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (!out || deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        KVS_TEST_SETUP_FAILED("deflateInit2 failed");
    zs.next_in = (unsigned char *)text;
    zs.avail_in = (uInt)*n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap_out;
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
        KVS_TEST_SETUP_FAILED("deflate failed");
    *n = zs.total_out;
    deflateEnd(&zs);
    free(text);
    return (char *)out;
}

static enum kvs_status read_once(const char *data, size_t n, struct kvs_trace_data *t)
{
    struct kvs_logger lg = kvs_capture_logger(&cap);
    struct kvs_read_opts o;
    memset(&o, 0, sizeof o);
    o.log = &lg;
    o.bufsize = 256; /* small: the buffer grows and refills on the fixture too */
    return kvs_read_trace_memory(data, n, "fixture", &o, t);
}

/* Fail allocation k for every k the clean run makes. */
static void reader_fails_cleanly(const char *fixture, bool gz)
{
    size_t n;
    char *data = load(fixture, gz, &n);
    struct kvs_trace_data t;
    fail_at = -1;
    allocs = 0;
    KVS_REQUIRE(read_once(data, n, &t) == KVS_STATUS_OK);
    long total = allocs;
    uint64_t events = t.events;
    kvs_trace_data_free(&t);
    KVS_CHECK(total > 10);
    fprintf(stderr, "%s%s: the reader allocates %ld times\n", fixture, gz ? " (gzip)" : "", total);
    for (long k = 0; k < total; k++) {
        fail_at = k;
        allocs = 0;
        failed = false;
        enum kvs_status st = read_once(data, n, &t);
        KVS_CHECK_MSG(failed, "allocation %ld of %ld was not made", k, total);
        KVS_CHECK_MSG(st == KVS_STATUS_NO_MEMORY,
                      "allocation %ld of %ld failed: status %d (%s), %llu of %llu events; log: %s", k,
                      total, (int)st, kvs_status_str(st), (unsigned long long)t.events,
                      (unsigned long long)events, cap.last);
        kvs_trace_data_free(&t);
    }
    fail_at = -1;
    free(data);
}

static void test_reader_plain(void) { reader_fails_cleanly("kineto_small.json", false); }
static void test_reader_gzip(void) { reader_fails_cleanly("kineto_small.json", true); }
static void test_reader_array_be(void) { reader_fails_cleanly("array_be.json", false); }

static enum kvs_status analyze_once(const char *data, size_t n, const char *model,
                                    struct kvs_analysis **a)
{
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(&cap);
    opt.model = model;
    opt.kv_capacity = model ? 16384 : 0;
    opt.batch = 1;
    struct kvs_analyze_input in;
    memset(&in, 0, sizeof in);
    in.path = "fixture";
    in.data = data;
    in.len = n;
    in.in_memory = true;
    in.read_bufsize = 256;
    return kvs_analyze_input(&in, &opt, a);
}

static void analysis_fails_cleanly(const char *fixture, const char *model)
{
    size_t n;
    char *data = load(fixture, false, &n);
    struct kvs_analysis *a = NULL;
    fail_at = -1;
    allocs = 0;
    KVS_REQUIRE(analyze_once(data, n, model, &a) == KVS_STATUS_OK);
    long total = allocs;
    size_t groups = a->ngroup, findings = a->nfinding;
    kvs_analysis_free(a);
    KVS_CHECK(total > 20 && groups > 0 && findings > 0);
    fprintf(stderr, "%s%s%s: the analysis allocates %ld times\n", fixture, model ? " --model " : "",
            model ? model : "", total);
    for (long k = 0; k < total; k++) {
        fail_at = k;
        allocs = 0;
        failed = false;
        a = NULL;
        enum kvs_status st = analyze_once(data, n, model, &a);
        KVS_CHECK_MSG(failed, "allocation %ld of %ld was not made", k, total);
        KVS_CHECK_MSG(st == KVS_STATUS_NO_MEMORY && a == NULL,
                      "allocation %ld of %ld failed: status %d (%s), result %p (%zu of %zu groups, "
                      "%zu of %zu findings); log: %s", k, total, (int)st, kvs_status_str(st),
                      (void *)a, a ? a->ngroup : 0, groups, a ? a->nfinding : 0, findings, cap.last);
        kvs_analysis_free(a);
    }
    fail_at = -1;
    free(data);
}

static void test_analysis_kineto(void) { analysis_fails_cleanly("kineto_small.json", NULL); }
static void test_analysis_kineto_model(void) { analysis_fails_cleanly("kineto_small.json", "glm5"); }
static void test_analysis_reports_fixture(void)
{
    analysis_fails_cleanly("reports/kv_unfixed.json", NULL);
}

/* kvs_analyze_many over three fixtures with two threads: whichever
 * allocation fails (the order is the threads'), each job ends analysed or
 * KVS_STATUS_NO_MEMORY without a result, at most one of them fails unless
 * the pool's own allocation did (then none was read), nothing leaks. */
static void ignore_log(void *user, enum kvs_log_level level, const char *message)
{
    (void)user, (void)level, (void)message;
}

static void test_many(void)
{
    static const char *const names[] = {"kineto_small.json", "old_schema.json", "array_be.json"};
    char paths[3][512];
    struct kvs_analysis_options opt[3];
    for (int i = 0; i < 3; i++) {
        kvs_fixture_path(paths[i], sizeof paths[i], names[i]);
        kvs_analysis_options_init(&opt[i]);
        opt[i].log = (struct kvs_logger){ignore_log, NULL, KVS_LOG_DEBUG}; /* held: allocates */
    }
    struct kvs_analyze_job job[3];
    fail_at = -1;
    allocs = 0;
    for (int i = 0; i < 3; i++)
        job[i] = (struct kvs_analyze_job){.path = paths[i], .opt = &opt[i]};
    KVS_REQUIRE(kvs_analyze_many(job, 3, 2) == KVS_STATUS_OK);
    long total = allocs;
    for (int i = 0; i < 3; i++)
        kvs_analysis_free(job[i].analysis);
    fprintf(stderr, "three fixtures, two jobs: %ld allocations\n", total);
    for (long k = 0; k < total + total / 4; k++) {
        fail_at = k;
        allocs = 0;
        failed = false;
        for (int i = 0; i < 3; i++)
            job[i] = (struct kvs_analyze_job){.path = paths[i], .opt = &opt[i]};
        enum kvs_status st = kvs_analyze_many(job, 3, 2);
        int nfail = 0, nread = 0;
        for (int i = 0; i < 3; i++) {
            bool ok = job[i].status == KVS_STATUS_OK;
            KVS_CHECK_MSG(ok || job[i].status == KVS_STATUS_NO_MEMORY, "allocation %ld: job %d status %s",
                          k, i, kvs_status_str(job[i].status));
            KVS_CHECK_MSG(ok == (job[i].analysis != NULL), "allocation %ld: job %d result", k, i);
            nfail += !ok;
            nread += ok;
            kvs_analysis_free(job[i].analysis);
        }
        KVS_CHECK_MSG(nfail <= 1 || nread == 0, "allocation %ld: %d jobs failed", k, nfail);
        KVS_CHECK_MSG((st == KVS_STATUS_OK) == (nfail == 0), "allocation %ld: returned %s", k,
                      kvs_status_str(st));
    }
    fail_at = -1;
}

/* A rank's kvscope.rank/1 summary read back (rank_summary.c): each
 * allocation failed in turn gives NO_MEMORY, no result, nothing leaked. */
static void test_rank_summary(void)
{
    size_t n;
    char *data = load("kineto_small.json", false, &n);
    struct kvs_analysis *a = NULL;
    fail_at = -1;
    KVS_REQUIRE(analyze_once(data, n, NULL, &a) == KVS_STATUS_OK);
    char path[512];
    kvs_tmp_path(path, sizeof path, ".json");
    FILE *f = fopen(path, "w");
    struct kvs_render_options ro = {.format = KVS_FORMAT_JSON};
    KVS_REQUIRE(f && kvs_render_report(f, a, &ro) == KVS_STATUS_OK);
    fclose(f);
    kvs_analysis_free(a);
    free(data);
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(&cap);
    allocs = 0;
    a = NULL;
    KVS_REQUIRE(kvs_rank_summary_read(path, &opt, &a) == KVS_STATUS_OK && a && a->nstep > 0);
    long total = allocs;
    kvs_analysis_free(a);
    fprintf(stderr, "a rank summary read back: %ld allocations\n", total);
    for (long k = 0; k < total; k++) {
        fail_at = k;
        allocs = 0;
        failed = false;
        a = NULL;
        enum kvs_status st = kvs_rank_summary_read(path, &opt, &a);
        KVS_CHECK_MSG(failed && st == KVS_STATUS_NO_MEMORY && !a,
                      "allocation %ld of %ld: status %s, result %p", k, total, kvs_status_str(st), (void *)a);
        kvs_analysis_free(a);
    }
    fail_at = -1;
    unlink(path);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"reader_plain", test_reader_plain},
        {"reader_gzip", test_reader_gzip},
        {"reader_array_be", test_reader_array_be},
        {"analysis_kineto", test_analysis_kineto},
        {"analysis_kineto_model", test_analysis_kineto_model},
        {"analysis_reports_fixture", test_analysis_reports_fixture},
        {"many", test_many},
        {"rank_summary", test_rank_summary},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
