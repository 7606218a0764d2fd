/* tests/test_steps.c — the step model (analyzers/steps.c) on traces written
 * here: serving engines' step names parsed into kind, batch and tokens;
 * steps of different kinds reported apart; a warm-up step said and left out
 * of its kind's mean; GPU work that runs after its step's CPU range still
 * belongs to the step that launched it; the figures the renderers print
 * as they are (idle time, category shares, over-peak groups).
 *
 *   meson test -C build test_steps
 */
#include <stdio.h>
#include <string.h>

#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "host_blocking.h"
#include "steps.h"

#define TOL 1e-9

static struct kvs_analysis *analyze_peak(const char *json, size_t n, double peak_gbps)
{
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.peak_gbps = peak_gbps;
    struct kvs_analysis *a = NULL;
    enum kvs_status st = kvs_analyze_memory(json, n, "steps.json", &opt, &a);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
    return a;
}

static struct kvs_analysis *analyze_text(const char *json, size_t n)
{
    return analyze_peak(json, n, 0);
}

static void test_names(void)
{
    struct kvs_step_desc d;
    KVS_REQUIRE(kvs_step_name_parse("step[DECODE bs=32]", &d));
    KVS_CHECK(d.kind == KVS_STEP_DECODE && d.batch == 32 && d.tokens == 32);
    KVS_REQUIRE(kvs_step_name_parse("step[EXTEND bs=15 toks=15360]", &d));
    KVS_CHECK(d.kind == KVS_STEP_PREFILL && d.batch == 15 && d.tokens == 15360);
    KVS_REQUIRE(kvs_step_name_parse("step[MIXED bs=4 toks=900 extra=1]", &d));
    KVS_CHECK(d.kind == KVS_STEP_MIXED && d.batch == 4 && d.tokens == 900);
    KVS_REQUIRE(kvs_step_name_parse(
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)", &d));
    KVS_CHECK(d.kind == KVS_STEP_DECODE && d.batch == 32 && d.tokens == 32);
    KVS_REQUIRE(kvs_step_name_parse(
        "execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)",
        &d));
    KVS_CHECK(d.kind == KVS_STEP_MIXED && d.batch == 46 && d.tokens == 8192);
    /* the older spelling: context requests' tokens in the parentheses */
    KVS_REQUIRE(kvs_step_name_parse("execute_context_1(888_788544)_generation_0(0)", &d));
    KVS_CHECK(d.kind == KVS_STEP_PREFILL && d.batch == 1 && d.tokens == 888);
    KVS_REQUIRE(kvs_step_name_parse("execute_context_0(0_0)_generation_8(8)", &d));
    KVS_CHECK(d.kind == KVS_STEP_DECODE && d.batch == 8 && d.tokens == 8);
    /* not steps: other ranges, and the names cut short */
    KVS_CHECK(!kvs_step_name_parse("ProfilerStep#3", &d));
    KVS_CHECK(!kvs_step_name_parse("step[DECODE bs=32", &d));
    KVS_CHECK(!kvs_step_name_parse("step[DECODER bs=32]", &d));
    KVS_CHECK(!kvs_step_name_parse("step[DECODE bs=]", &d));
    KVS_CHECK(!kvs_step_name_parse("execute_32_context_", &d));
    KVS_CHECK(!kvs_step_name_parse("execute_model", &d));
    KVS_CHECK(!kvs_step_name_parse("capture_32_DECODE", &d));
    KVS_CHECK(!kvs_step_name_parse("execute_99999999999999999999_context_0()_generation_1()", &d));
}

/* One SGLang prefill of 1000 tokens, then four decode steps of batch 4: the
 * first decode step is a slow warm-up (3 ms against 1 ms). Each step
 * launches one kernel through a graph launch 100 us into its CPU range; the
 * kernel runs 2 ms after the launch, past the step's CPU end, for `busy` us.
 * A ProfilerStep#1 around everything is not the step: the engine's ranges
 * are finer and say more. */
static size_t serving_trace(char *buf, size_t cap)
{
    static const struct {
        const char *name;
        double start, dur, busy;
    } steps[] = {
        {"step[EXTEND bs=2 toks=1000]", 0, 5000, 4000},
        {"step[DECODE bs=4]", 10000, 3000, 300},
        {"step[DECODE bs=4]", 20000, 1000, 300},
        {"step[DECODE bs=4]", 30000, 1000, 300},
        {"step[DECODE bs=4]", 40000, 1000, 300},
    };
    size_t n = (size_t)snprintf(buf, cap,
                                "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"user_annotation\","
                                "\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":50000}");
    for (int i = 0; i < 5; i++) {
        double launch = steps[i].start + 100;
        n += (size_t)snprintf(
            buf + n, cap - n,
            ",{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"%s\",\"pid\":1,\"tid\":1,"
            "\"ts\":%.0f,\"dur\":%.0f}"
            ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaGraphLaunch\",\"pid\":1,"
            "\"tid\":1,\"ts\":%.0f,\"dur\":10,\"args\":{\"correlation\":%d}}"
            ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_kernel\",\"pid\":0,\"tid\":7,"
            "\"ts\":%.0f,\"dur\":%.0f,\"args\":{\"correlation\":%d,\"device\":0,\"stream\":7}}",
            steps[i].name, steps[i].start, steps[i].dur, launch, 100 + i,
            launch + 2000 + (i == 0 ? 3000 : 0), steps[i].busy, 100 + i);
    }
    n += (size_t)snprintf(buf + n, cap - n, "]}");
    return n;
}

static void test_serving_steps(void)
{
    char json[8192];
    size_t n = serving_trace(json, sizeof json);
    KVS_REQUIRE(n < sizeof json);
    struct kvs_analysis *a = analyze_text(json, n);
    KVS_REQUIRE(a);
    KVS_REQUIRE(a->nstep == 5);
    KVS_CHECK_EQ_STR(a->steps.source, "serving-engine step ranges");
    KVS_CHECK_EQ_INT(a->step[0].kind, KVS_STEP_PREFILL);
    KVS_CHECK_EQ_INT(a->step[0].batch, 2);
    KVS_CHECK_EQ_INT(a->step[0].tokens, 1000);
    for (int i = 1; i < 5; i++) {
        KVS_CHECK_EQ_INT(a->step[i].kind, KVS_STEP_DECODE);
        KVS_CHECK_EQ_INT(a->step[i].batch, 4);
        KVS_CHECK_EQ_INT(a->step[i].tokens, 4);
        KVS_CHECK_EQ_INT(a->step[i].index, i); /* "bs=4" is a batch, not an index */
    }
    /* the prefill's kernel runs 5.1 to 9.1 ms into the step: all 4 ms its,
     * the step's time runs to the kernel's end */
    KVS_CHECK_NEAR(a->step[0].gpu_busy_ms, 4.0, TOL);
    KVS_CHECK_NEAR(a->step[0].wall_ms, 5.0, TOL);
    KVS_CHECK_NEAR(a->step[0].gpu_span_ms, 4.0, TOL);
    KVS_CHECK_NEAR(a->step[0].time_ms, 5.0, TOL);
    /* a decode kernel starts 2.1 ms in and ends after the 1 ms CPU range:
     * still the step's own 0.3 ms (clipping to the range gave 0) */
    KVS_CHECK_NEAR(a->step[2].gpu_busy_ms, 0.3, TOL);
    KVS_CHECK_NEAR(a->step[2].category_ms[KVS_CAT_GEMM], 0.3, TOL);
    KVS_CHECK_NEAR(a->step[2].time_ms, 1.0, TOL);
    /* the warm-up: 3 ms against a 1 ms median of the decode steps */
    KVS_CHECK_EQ_STR(a->step[1].outlier, "warm-up");
    for (int i = 2; i < 5; i++)
        KVS_CHECK(a->step[i].outlier == NULL);
    KVS_CHECK(a->step[0].outlier == NULL); /* the only prefill: no median to judge it by */
    /* kinds apart; the warm-up left out of the decode figures */
    KVS_REQUIRE(a->nkind == 2);
    const struct kvs_step_kind_stat *dec = &a->kinds[0], *pre = &a->kinds[1];
    KVS_CHECK_EQ_INT(dec->kind, KVS_STEP_DECODE);
    KVS_CHECK_EQ_INT(dec->count, 4);
    KVS_CHECK_EQ_INT(dec->outliers, 1);
    KVS_CHECK_NEAR(dec->mean_ms, 1.0, TOL);
    KVS_CHECK_NEAR(dec->gpu_ms_per_step, 0.3, TOL);
    KVS_CHECK_NEAR(dec->busy_fraction, 0.3, TOL);
    KVS_CHECK_NEAR(dec->batch, 4, TOL);
    KVS_CHECK_NEAR(dec->tokens_per_s, 4000.0, 1e-6);
    KVS_CHECK_EQ_INT(pre->kind, KVS_STEP_PREFILL);
    KVS_CHECK_NEAR(pre->tokens_per_s, 1000 * 1000.0 / 5.0, 1e-6);
    /* all steps: (1000 + 16) tokens over 5 + 3 + 1 + 1 + 1 ms */
    KVS_CHECK_NEAR(a->steps.tokens_per_s, 1016 * 1000.0 / 11.0, 1e-6);
    KVS_CHECK_NEAR(a->steps.mean_time_ms, 11.0 / 5, TOL);
    /* the figures the renderers print as they are (docs/analysis.md): one
     * outlier in all; each step's idle time in its CPU range; the GPU work
     * ends inside the CPU ranges on average (mean_time_ms == mean_ms) */
    KVS_CHECK_EQ_INT(a->steps.outliers, 1);
    KVS_CHECK_NEAR(a->step[0].idle_ms, 1.0, TOL);
    KVS_CHECK_NEAR(a->step[2].idle_ms, 0.7, TOL);
    KVS_CHECK(!a->steps.gpu_lags);
    kvs_analysis_free(a);
}

/* A vLLM-style graph step: 0.5 ms on the CPU, its graph's kernels 9.8 ms on
 * the GPU, 1 ms later. The step takes 9.8 ms, busy all of it. */
static void test_gpu_behind_cpu(void)
{
    char json[4096];
    size_t n = (size_t)snprintf(
        json, sizeof json,
        "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"user_annotation\","
        "\"name\":\"execute_32_context_0(sq0)_generation_32(sq32)\",\"pid\":1,\"tid\":1,\"ts\":0,"
        "\"dur\":500},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaGraphLaunch\",\"pid\":1,\"tid\":1,"
        "\"ts\":100,\"dur\":50,\"args\":{\"correlation\":7}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"nvjet_tst_64x8\",\"pid\":0,\"tid\":7,"
        "\"ts\":1500,\"dur\":4900,\"args\":{\"correlation\":7,\"device\":0,\"stream\":7}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"nvjet_tst_64x8\",\"pid\":0,\"tid\":7,"
        "\"ts\":6400,\"dur\":4900,\"args\":{\"correlation\":7,\"device\":0,\"stream\":7}}]}");
    struct kvs_analysis *a = analyze_text(json, n);
    KVS_REQUIRE(a);
    KVS_REQUIRE(a->nstep == 1);
    KVS_CHECK_EQ_INT(a->step[0].kind, KVS_STEP_DECODE);
    KVS_CHECK_NEAR(a->step[0].wall_ms, 0.5, TOL);
    KVS_CHECK_NEAR(a->step[0].gpu_busy_ms, 9.8, TOL);
    KVS_CHECK_NEAR(a->step[0].time_ms, 9.8, TOL);
    KVS_CHECK_NEAR(a->steps.gpu_busy_fraction, 1.0, TOL);
    KVS_CHECK_NEAR(a->steps.tokens_per_s, 32 * 1000.0 / 9.8, 1e-6);
    for (size_t i = 0; i < a->nfinding; i++)
        KVS_CHECK_MSG(strcmp(a->findings[i].id, "gpu_idle"), "%s", a->findings[i].message);
    /* busy 9.8 ms in a 0.5 ms CPU range: no idle time (not -9.3), and the
     * steps take as long as their GPU work */
    KVS_CHECK_NEAR(a->step[0].idle_ms, 0.0, TOL);
    KVS_CHECK(a->steps.gpu_lags);
    KVS_CHECK_EQ_INT(a->steps.outliers, 0);
    kvs_analysis_free(a);
}

/* One 10 ms ProfilerStep on two GPUs: a 3 ms GEMM on device 0 and a 2 ms
 * one on device 1, a 1 ms device-to-device copy of 2 GB (read and written:
 * 4000 GB/s) and a 0.5 ms host-to-device copy of 1 GB, all launched in the
 * step, one after another. With --peak-gbps 1000 the DtoD copy is over the
 * peak (4 times it);
 * the HtoD copy, bound by the host link, is not judged against it. */
static void test_step_figures(void)
{
    static const struct {
        const char *cat, *name, *args;
        double ts, dur;
    } gpu[] = {
        {"kernel", "gemm_kernel", "\"device\":0,\"stream\":7", 1000, 3000},
        {"kernel", "gemm_kernel", "\"device\":1,\"stream\":7", 1000, 2000},
        {"gpu_memcpy", "Memcpy DtoD (Device -> Device)", "\"device\":0,\"stream\":7,\"bytes\":2000000000", 4500, 1000},
        {"gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", "\"device\":0,\"stream\":7,\"bytes\":1000000000", 6000, 500},
    };
    static const char *const launch[] = {"cudaLaunchKernel", "cudaLaunchKernel", "cudaMemcpyAsync",
                                         "cudaMemcpyAsync"};
    char json[8192];
    size_t n = (size_t)snprintf(json, sizeof json,
                                "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"user_annotation\","
                                "\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":10000}");
    for (int i = 0; i < 4; i++)
        n += (size_t)snprintf(
            json + n, sizeof json - n,
            ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"%s\",\"pid\":1,\"tid\":1,"
            "\"ts\":%d,\"dur\":10,\"args\":{\"correlation\":%d}}"
            ",{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":0,\"tid\":7,"
            "\"ts\":%.0f,\"dur\":%.0f,\"args\":{\"correlation\":%d,%s}}",
            launch[i], 100 + 10 * i, 50 + i, gpu[i].cat, gpu[i].name, gpu[i].ts, gpu[i].dur, 50 + i,
            gpu[i].args);
    n += (size_t)snprintf(json + n, sizeof json - n, "]}");
    KVS_REQUIRE(n < sizeof json);
    struct kvs_analysis *a = analyze_peak(json, n, 1000);
    KVS_REQUIRE(a);
    KVS_REQUIRE(a->nstep == 1);
    KVS_CHECK_EQ_INT(a->trace.gpu_devices, 2);
    /* busy 3 + 2 + 1 + 0.5 ms of 2 GPUs x 10 ms */
    KVS_CHECK_NEAR(a->step[0].gpu_busy_ms, 6.5, TOL);
    KVS_CHECK_NEAR(a->step[0].idle_ms, 13.5, TOL);
    /* GEMM 5 ms, copy/cast 1.5 ms: shares of their sum */
    KVS_CHECK_NEAR(a->category_ms[KVS_CAT_GEMM], 5.0, TOL);
    KVS_CHECK_NEAR(a->category_ms[KVS_CAT_COPY_CAST], 1.5, TOL);
    KVS_CHECK_NEAR(a->category_share[KVS_CAT_GEMM], 5.0 / 6.5, TOL);
    KVS_CHECK_NEAR(a->category_share[KVS_CAT_COPY_CAST], 1.5 / 6.5, TOL);
    KVS_CHECK_NEAR(a->category_share[KVS_CAT_ATTENTION], 0.0, TOL);
    KVS_CHECK(!a->steps.gpu_lags);
    int seen = 0;
    for (size_t i = 0; i < a->ngroup; i++) {
        const struct kvs_group *g = &a->groups[i];
        if (strstr(g->op, "DtoD")) {
            seen |= 1;
            KVS_CHECK_NEAR(g->efficiency, 4.0, 1e-9);
            KVS_CHECK(g->over_peak);
        } else if (strstr(g->op, "HtoD")) {
            seen |= 2;
            KVS_CHECK(g->host_link);
            KVS_CHECK(!g->over_peak); /* over 1000 GB/s too, but not an HBM rate */
        }
    }
    KVS_CHECK_EQ_INT(seen, 3);
    kvs_analysis_free(a);
    /* without a peak nothing is over it */
    a = analyze_text(json, n);
    KVS_REQUIRE(a);
    for (size_t i = 0; i < a->ngroup; i++)
        KVS_CHECK(!a->groups[i].over_peak);
    kvs_analysis_free(a);
}

/* kvs_kiv_busy (16-byte intervals while they fit, widened at the first that
 * does not) gives what kvs_busy_by_key gives on the same intervals, and the
 * host-time index (kvs_ival_index, kvs_ival_covered) what a plain sum over
 * the merged intervals gives: random intervals in sorted runs one after
 * another (GPU work stream by stream) or in random order, and partway one
 * that does not fit: a length past 2^32, a device past 255, a negative
 * device, or the list widened by hand (as a key past 2^24 widens it). */
static uint64_t kiv_rng = 88172645463325252ull;
static uint64_t kiv_next(void)
{
    kiv_rng ^= kiv_rng << 13;
    kiv_rng ^= kiv_rng >> 7;
    kiv_rng ^= kiv_rng << 17;
    return kiv_rng;
}

static void test_compact_intervals(void)
{
    enum { NKEY = 40 };
    static struct kvs_keyed_ival ref[6000];
    for (int round = 0; round < 60; round++) {
        size_t n = 1 + kiv_next() % 6000, runs = 1 + kiv_next() % 8;
        int widen = round % 5; /* 0: stays compact; 1-4: as above */
        struct kvs_kiv_list l = {0};
        int64_t busy_a[NKEY] = {0}, busy_b[NKEY] = {0};
        size_t at = kiv_next() % n;
        for (size_t i = 0; i < n; i++) {
            uint32_t key = (uint32_t)(kiv_next() % NKEY);
            int32_t dev = (int32_t)(kiv_next() % 3);
            int64_t start = round % 2 ? (int64_t)((i % (n / runs + 1)) * 1000 + kiv_next() % 1500)
                                      : (int64_t)(kiv_next() % 1000000);
            int64_t len = (int64_t)(kiv_next() % 3000);
            if (i == at && widen == 1)
                len = (int64_t)1 << 33;
            if (i == at && widen == 2)
                dev = 300;
            if (i == at && widen == 3)
                dev = -1;
            if (i == at && widen == 4)
                KVS_REQUIRE(kvs_kiv_widen(&l) == 0);
            ref[i] = (struct kvs_keyed_ival){key, dev, start, start + len};
            KVS_REQUIRE(kvs_kiv_add(&l, key, dev, start, start + len) == 0);
        }
        KVS_CHECK(widen ? l.w != NULL && l.c == NULL : l.c != NULL && l.w == NULL);
        KVS_CHECK_EQ_INT(l.n, n);
        kvs_kiv_busy(&l, busy_a);
        kvs_busy_by_key(ref, n, busy_b);
        for (int k = 0; k < NKEY; k++)
            KVS_CHECK_EQ_INT(busy_a[k], busy_b[k]);
        kvs_kiv_free(&l);
    }
}

static void test_ival_index(void)
{
    static struct kvs_ival u[3001];
    for (int round = 0; round < 40; round++) {
        size_t n = 1 + kiv_next() % 3000;
        for (size_t i = 0; i < n; i++) {
            int64_t a = (int64_t)(kiv_next() % 200000);
            u[i] = (struct kvs_ival){a, a + (int64_t)(kiv_next() % (round % 2 ? 50 : 400))};
        }
        size_t m = kvs_ival_merge(u, n);
        static struct kvs_ival plain[3001];
        memcpy(plain, u, m * sizeof *u);
        kvs_ival_index(u, m);
        for (int q = 0; q < 200; q++) {
            int64_t a = (int64_t)(kiv_next() % 210000) - 5000, b = a + (int64_t)(kiv_next() % 20000);
            int64_t want = 0;
            for (size_t i = 0; i < m; i++) {
                int64_t lo = plain[i].a > a ? plain[i].a : a, hi = plain[i].b < b ? plain[i].b : b;
                if (hi > lo)
                    want += hi - lo;
            }
            KVS_CHECK_EQ_INT(kvs_ival_covered(u, m, a, b), want);
        }
    }
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"names", test_names},
        {"serving_steps", test_serving_steps},
        {"gpu_behind_cpu", test_gpu_behind_cpu},
        {"step_figures", test_step_figures},
        {"compact_intervals", test_compact_intervals},
        {"ival_index", test_ival_index},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
