/* tests/test_multirank.c — several ranks' traces read together: per-rank
 * computation and communication (NCCL) time and their overlap, the
 * rank the others wait for (arrival at the collectives) and the longest step,
 * ranks from distributedInfo (else the order given), findings by
 * rank, and the kvscope.multirank/1 document, on generated traces whose
 * answers follow from their design (below).
 *
 *   meson test -C build test_multirank     ./build/tests/test_multirank [case...]
 *
 * Each rank: two ProfilerSteps; in each step (times from the step's start, us)
 *   rank 0, 1 (steps of 1000 us):  gemm [100,400) stream 7, NCCL all-reduce
 *     [300,600) stream 20, flash [650,700) stream 7, KV cast [700,720) stream 7
 *     busy 570 = compute 370 + comm 300 - overlap 100; exposed comm 200
 *   rank 2 (steps of 1200 us):     gemm [100,600), NCCL [500,700), flash [750,800)
 *     busy 650 = compute 550 + comm 200 - overlap 100; exposed comm 100
 * so rank 2 has the longest step (1.2 ms, +20% over the median 1.0 ms), waits
 * the least in the collective and computes the most — but the all-reduces do
 * not end together (ends 0.1 and 0.3 ms apart), so no straggler is named by
 * arrival (test_arrival_straggler's ranks are synchronised); the cast (a full 16384-token
 * pool with --kv-capacity 16384) is on ranks 0 and 1 only. The case
 * replicated_latent_cast puts it on rank 2 too (at [750,770)): with rows of
 * 576 (the MLA latent, kv_lora_rank 512 + rope 64) on every rank the notes
 * say that each rank casts the whole replicated pool (GLM-5's config); with
 * rows of 1024 they do not.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "kvscope/multirank.h"
#include "kvscope/report.h"

#define NCCL_KERNEL "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"

struct doc {
    char buf[1 << 15];
    size_t n;
    int ext;
};

static void put(struct doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(d->buf + d->n, sizeof d->buf - d->n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof d->buf - d->n)
        KVS_TEST_SETUP_FAILED("fixture too large");
    d->n += (size_t)k;
}

static void kernel(struct doc *d, const char *op, const char *dims, const char *name, double ts,
                   double dur, int stream)
{
    d->ext++;
    put(d, ",\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"%s\",\"pid\":1,\"tid\":1,\"ts\":%.3f,"
           "\"dur\":5,\"args\":{\"External id\":%d%s%s}}",
        op, ts - 50, d->ext, dims ? ",\"Input Dims\":" : "",
        dims ? dims : "");
    put(d, ",\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,"
           "\"dur\":%.3f,\"args\":{\"External id\":%d,\"device\":0,\"stream\":%d}}",
        name, stream, ts, dur, d->ext, stream);
}

/* the cast's rows, and whether rank 2 casts too (replicated_latent_cast) */
static int g_cast_row = 576;
static bool g_cast_on_rank2;
static const char *g_model; /* the analysis's model, NULL: inferred */

/* rank < 0: no distributedInfo */
static void write_rank(char *path, size_t size, int rank, int trace_rank)
{
    char cast_dims[160];
    snprintf(cast_dims, sizeof cast_dims,
             "[[16384,1,%d],[16384,1,%d]],\"Input type\":[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]",
             g_cast_row, g_cast_row);
    struct doc *d = calloc(1, sizeof *d);
    if (!d)
        KVS_TEST_SETUP_FAILED("out of memory");
    put(d, "{\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"}],");
    if (trace_rank >= 0)
        put(d, "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":%d,\"world_size\":3},", trace_rank);
    put(d, "\"traceEvents\":[\n{\"ph\":\"i\",\"name\":\"start\",\"pid\":1,\"tid\":1,\"ts\":0}");
    double wall = rank == 2 ? 1200 : 1000;
    for (int s = 0; s < 2; s++) {
        double t = 10000 + s * wall;
        put(d, ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\",\"pid\":1,"
               "\"tid\":1,\"ts\":%.3f,\"dur\":%.3f}", s + 1, t, wall);
        if (rank < 2) {
            kernel(d, "aten::mm", NULL, "nvjet_tst_gemm", t + 100, 300, 7);
            kernel(d, "nccl:all_reduce", NULL, NCCL_KERNEL, t + 300, 300, 20);
            kernel(d, "aten::_flash_attention_forward", NULL, "flash_fwd_kernel", t + 650, 50, 7);
            kernel(d, "aten::copy_", cast_dims, "direct_copy_kernel_cuda", t + 700, 20, 7);
        } else {
            kernel(d, "aten::mm", NULL, "nvjet_tst_gemm", t + 100, 500, 7);
            kernel(d, "nccl:all_reduce", NULL, NCCL_KERNEL, t + 500, 200, 20);
            kernel(d, "aten::_flash_attention_forward", NULL, "flash_fwd_kernel", t + 750, 50, 7);
            if (g_cast_on_rank2)
                kernel(d, "aten::copy_", cast_dims, "direct_copy_kernel_cuda", t + 800, 20, 7);
        }
    }
    put(d, "\n]}\n");
    kvs_tmp_write(path, size, d->buf, d->n, ".json");
    free(d);
}

static struct kvs_log_capture logcap;

/* the ranks' traces in the order given by `order`; trace ranks or none */
static void analyze_ranks(const int *order, bool named, struct kvs_analysis **a)
{
    struct kvs_analysis_options o;
    kvs_analysis_options_init(&o);
    o.log = kvs_capture_logger(&logcap);
    o.kv_capacity = 16384;
    o.model = g_model;
    for (int i = 0; i < 3; i++) {
        char path[256];
        write_rank(path, sizeof path, order[i], named ? order[i] : -1);
        a[i] = NULL;
        KVS_CHECK_EQ_INT(kvs_analyze_file(path, &o, &a[i]), KVS_STATUS_OK);
        unlink(path);
    }
}

static cJSON *render_json(const struct kvs_multirank *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        KVS_TEST_SETUP_FAILED("open_memstream");
    struct kvs_render_options ro = {.format = KVS_FORMAT_JSON};
    KVS_CHECK_EQ_INT(kvs_render_multirank(f, m, &ro), KVS_STATUS_OK);
    fclose(f);
    cJSON *j = cJSON_Parse(text);
    KVS_CHECK_MSG(j != NULL, "not JSON: %.200s", text);
    free(text);
    return j;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

#define MS(us) ((us) / 1000.0)

static void test_comm_and_compute(void)
{
    int order[3] = {0, 1, 2};
    struct kvs_analysis *a[3];
    analyze_ranks(order, true, a);
    KVS_REQUIRE(a[0] && a[2]);
    KVS_CHECK_NEAR(a[0]->steps.gpu_ms_per_step, MS(570), 1e-12);
    KVS_CHECK_NEAR(a[0]->steps.comm_ms_per_step, MS(300), 1e-12);
    KVS_CHECK_NEAR(a[0]->steps.compute_ms_per_step, MS(370), 1e-12);
    KVS_CHECK_NEAR(a[0]->steps.overlap_ms_per_step, MS(100), 1e-12);
    KVS_CHECK_NEAR(a[0]->step[1].comm_busy_ms, MS(300), 1e-12);
    KVS_CHECK_NEAR(a[0]->step[1].compute_busy_ms, MS(370), 1e-12);
    KVS_CHECK_NEAR(a[2]->steps.gpu_ms_per_step, MS(650), 1e-12);
    KVS_CHECK_NEAR(a[2]->steps.overlap_ms_per_step, MS(100), 1e-12);
    KVS_CHECK_NEAR(a[2]->steps.compute_ms_per_step, MS(550), 1e-12);
    KVS_CHECK_EQ_INT(a[2]->trace.rank, 2);
    KVS_CHECK_EQ_INT(a[2]->trace.world_size, 3);
    for (int i = 0; i < 3; i++)
        kvs_analysis_free(a[i]);
}

static void test_straggler_and_ranks(void)
{
    /* given out of order: the traces' ranks put them in order */
    int order[3] = {2, 0, 1};
    struct kvs_analysis *a[3];
    analyze_ranks(order, true, a);
    KVS_REQUIRE(a[0] && a[1] && a[2]);
    struct kvs_multirank *m = NULL;
    KVS_CHECK_EQ_INT(kvs_multirank((const struct kvs_analysis *const *)a, 3, &m), KVS_STATUS_OK);
    KVS_REQUIRE(m);
    cJSON *j = render_json(m);
    KVS_REQUIRE(j);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItem(j, "schema")->valuestring, "kvscope.multirank/1");
    const cJSON *r = cJSON_GetObjectItem(j, "ranks");
    KVS_CHECK_NEAR(num(r, "count"), 3, 0);
    KVS_CHECK_NEAR(num(r, "world_size"), 3, 0);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItem(r, "rank_source")->valuestring, "trace");
    /* these ranks' all-reduces do not end together (0.1 ms apart in step 1,
     * 0.3 ms in step 2): nothing shows who waits for whom, so no straggler;
     * the longest step is said apart (before: it was called the straggler) */
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "straggler")));
    const cJSON *ar = cJSON_GetObjectItem(r, "arrival");
    KVS_CHECK_NEAR(num(ar, "steps"), 2, 0);
    KVS_CHECK_NEAR(num(ar, "end_spread_ms"), 0.2, 1e-9);
    KVS_CHECK_NEAR(num(ar, "start_spread_ms"), 0.3, 1e-9);
    KVS_CHECK(cJSON_IsFalse(cJSON_GetObjectItem(ar, "ends_agree")));
    const cJSON *st = cJSON_GetObjectItem(r, "longest_step");
    KVS_CHECK_NEAR(num(st, "rank"), 2, 0);
    KVS_CHECK_NEAR(num(st, "step_ms"), 1.2, 1e-12);
    KVS_CHECK_NEAR(num(st, "over_median_ms"), 0.2, 1e-12);
    KVS_CHECK_NEAR(num(st, "over_median_fraction"), 0.2, 1e-12);
    KVS_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(st, "stands_out")));
    KVS_CHECK(cJSON_IsFalse(cJSON_GetObjectItem(st, "is_straggler")));
    KVS_CHECK_NEAR(num(r, "most_compute_rank"), 2, 0);
    const cJSON *per = cJSON_GetObjectItem(r, "per_rank");
    KVS_REQUIRE(cJSON_GetArraySize(per) == 3);
    for (int i = 0; i < 3; i++) {
        const cJSON *x = cJSON_GetArrayItem(per, i);
        KVS_CHECK_NEAR(num(x, "rank"), i, 0);
        KVS_CHECK_NEAR(num(x, "exposed_comm_ms"), i == 2 ? 0.1 : 0.2, 1e-12);
        KVS_CHECK_NEAR(num(x, "comm_fraction"), i == 2 ? 200.0 / 650 : 300.0 / 570, 1e-12);
        /* the HTML chart's parts come computed: rank 0/1 busy 100-600 and 650-720 us of a
         * 1000 us step, compute 370 us of which 100 under the all-reduce; rank 2 busy 100-700
         * and 750-800 us of 1200, compute 550 us of which 100 under the all-reduce */
        KVS_CHECK_NEAR(m->rows[i].compute_only_ms, i == 2 ? 0.45 : 0.27, 1e-9);
        KVS_CHECK_NEAR(m->rows[i].idle_ms, i == 2 ? 0.55 : 0.43, 1e-9);
    }
    /* the cast on ranks 0 and 1 only; the reports in rank order */
    const cJSON *fs = cJSON_GetObjectItem(r, "findings");
    bool cast = false;
    for (int i = 0; i < cJSON_GetArraySize(fs); i++) {
        const cJSON *f = cJSON_GetArrayItem(fs, i);
        if (strcmp(cJSON_GetObjectItem(f, "id")->valuestring, "kv_full_buffer_cast"))
            continue;
        cast = true;
        const cJSON *rk = cJSON_GetObjectItem(f, "ranks");
        KVS_CHECK(cJSON_GetArraySize(rk) == 2 && cJSON_GetArrayItem(rk, 0)->valueint == 0 &&
                  cJSON_GetArrayItem(rk, 1)->valueint == 1);
    }
    KVS_CHECK(cast);
    const cJSON *reps = cJSON_GetObjectItem(j, "reports");
    KVS_REQUIRE(cJSON_GetArraySize(reps) == 3);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(reps, 0), "schema")->valuestring,
                     "kvscope.report/1");
    KVS_CHECK_NEAR(num(cJSON_GetObjectItem(cJSON_GetArrayItem(reps, 2), "steps"), "mean_ms"), 1.2, 1e-12);
    /* the notes say it in words */
    char notes[4096] = "";
    const cJSON *n;
    cJSON_ArrayForEach(n, cJSON_GetObjectItem(r, "notes"))
    {
        strncat(notes, n->valuestring, sizeof notes - strlen(notes) - 2);
        strcat(notes, "\n");
    }
    KVS_CHECK_MSG(strstr(notes, "Rank 2 has the longest step: 1.20 ms, 0.20 ms (20.0%)"), "%s", notes);
    KVS_CHECK_MSG(strstr(notes, "do not end together (median spread of their ends 0.20 ms") &&
                      !strstr(notes, "is the straggler"),
                  "%s", notes);
    KVS_CHECK_MSG(strstr(notes, "rank 2, with the least waiting and the most computation"), "%s", notes);
    KVS_CHECK_MSG(strstr(notes, "kv_full_buffer_cast on ranks 0, 1 (2 of 3)"), "%s", notes);
    KVS_CHECK_MSG(!strstr(notes, "replicated"), "%s", notes); /* not on every rank */
    cJSON_Delete(j);
    kvs_multirank_free(m);
    for (int i = 0; i < 3; i++)
        kvs_analysis_free(a[i]);
}

static void test_file_order_and_formats(void)
{
    int order[3] = {2, 0, 1};
    struct kvs_analysis *a[3];
    analyze_ranks(order, false, a);
    KVS_REQUIRE(a[0] && a[1] && a[2]);
    struct kvs_multirank *m = NULL;
    KVS_CHECK_EQ_INT(kvs_multirank((const struct kvs_analysis *const *)a, 3, &m), KVS_STATUS_OK);
    KVS_REQUIRE(m);
    cJSON *j = render_json(m);
    KVS_REQUIRE(j);
    const cJSON *r = cJSON_GetObjectItem(j, "ranks");
    KVS_CHECK_EQ_STR(cJSON_GetObjectItem(r, "rank_source")->valuestring, "file order");
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "world_size")));
    /* the first file (rank 2's trace) is rank 0 now: it has the longest step */
    KVS_CHECK_NEAR(num(cJSON_GetObjectItem(r, "longest_step"), "rank"), 0, 0);
    cJSON_Delete(j);
    static const enum kvs_format fmts[] = {KVS_FORMAT_TEXT, KVS_FORMAT_MARKDOWN, KVS_FORMAT_HTML};
    static const char *const want[] = {"ACROSS RANKS", "## Across ranks", "<section id=\"rank-2\">"};
    for (int k = 0; k < 3; k++) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        struct kvs_render_options ro = {.format = fmts[k]};
        KVS_CHECK_EQ_INT(kvs_render_multirank(f, m, &ro), KVS_STATUS_OK);
        fclose(f);
        KVS_CHECK_MSG(strstr(text, want[k]) && strstr(text, "Not every trace names a rank"), "%.300s",
                      text);
        free(text);
    }
    kvs_multirank_free(m);
    for (int i = 0; i < 3; i++)
        kvs_analysis_free(a[i]);
    KVS_CHECK_EQ_INT(kvs_multirank(NULL, 0, &m), KVS_STATUS_INVALID_ARGUMENT);

    /* every trace names a rank, two the same one (a file given twice):
     * said as such, not as "not every trace names a rank" */
    int twice[3] = {1, 0, 1};
    analyze_ranks(twice, true, a);
    KVS_REQUIRE(a[0] && a[1] && a[2]);
    KVS_CHECK_EQ_INT(kvs_multirank((const struct kvs_analysis *const *)a, 3, &m), KVS_STATUS_OK);
    KVS_REQUIRE(m);
    j = render_json(m);
    KVS_REQUIRE(j);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "ranks"), "rank_source")->valuestring,
                     "file order");
    bool said = false, wrong = false;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "ranks"), "notes")) {
        said = said || strstr(s->valuestring, "Traces 1 and 3 both name rank 1");
        wrong = wrong || strstr(s->valuestring, "Not every trace names a rank");
    }
    KVS_CHECK(said && !wrong);
    cJSON_Delete(j);
    kvs_multirank_free(m);
    for (int i = 0; i < 3; i++)
        kvs_analysis_free(a[i]);
}

/* the notes of three ranks' traces, all with the cast, rows of `row` */
static void notes_with_cast_everywhere(int row, char *notes, size_t size)
{
    g_cast_row = row;
    g_cast_on_rank2 = true;
    g_model = "glm5"; /* MLA: kv_lora_rank 512, qk_rope_head_dim 64 */
    int order[3] = {0, 1, 2};
    struct kvs_analysis *a[3];
    analyze_ranks(order, true, a);
    g_cast_row = 576;
    g_cast_on_rank2 = false;
    g_model = NULL;
    notes[0] = '\0';
    KVS_REQUIRE(a[0] && a[1] && a[2]);
    struct kvs_multirank *m = NULL;
    KVS_CHECK_EQ_INT(kvs_multirank((const struct kvs_analysis *const *)a, 3, &m), KVS_STATUS_OK);
    KVS_REQUIRE(m);
    cJSON *j = render_json(m);
    const cJSON *n;
    cJSON_ArrayForEach(n, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "ranks"), "notes"))
    {
        strncat(notes, n->valuestring, size - strlen(notes) - 2);
        strcat(notes, "\n");
    }
    cJSON_Delete(j);
    kvs_multirank_free(m);
    for (int i = 0; i < 3; i++)
        kvs_analysis_free(a[i]);
}

static void test_replicated_latent_cast(void)
{
    char notes[4096];
    notes_with_cast_everywhere(576, notes, sizeof notes);
    KVS_CHECK_MSG(strstr(notes, "kv_full_buffer_cast on every rank (3 of 3)"), "%s", notes);
    KVS_CHECK_MSG(strstr(notes, "Every rank casts the whole MLA latent KV pool"), "%s", notes);
    /* rows that are not the latent (1024): no such claim */
    notes_with_cast_everywhere(1024, notes, sizeof notes);
    KVS_CHECK_MSG(strstr(notes, "kv_full_buffer_cast on every rank (3 of 3)"), "%s", notes);
    KVS_CHECK_MSG(!strstr(notes, "MLA latent"), "%s", notes);
}

/* ----------------------------------------------------------------------------
 * ranks synchronised by their collectives, written with known arrival skew
 *
 * Four ranks, three ProfilerSteps 20 ms apart (T = 100 ms + 20 ms x s). Each
 * step: a GEMM from the step's start (+0.5 ms) until the rank arrives at the
 * first all-reduce, which ends at T+15 ms on every rank (the last arrival
 * releases them all), then a second all-reduce that every rank reaches at
 * T+15.5 ms except rank 2 (T+15.7 ms), ending at T+15.9 ms everywhere.
 *   first all-reduce arrival (ms after T):  rank 0: 5, rank 1: 6 (13 in step
 *   2: a hiccup), rank 2: 12, rank 3: 7
 * Step ranges [T, T+16 ms], except rank 3, whose CPU starts each step 3 ms
 * early ([T-3, T+16]): the longest step (19 ms, 3 ms = 18.75% over the
 * median 16 ms), spent waiting in the first all-reduce (8 ms).
 * So, per step, lateness (start minus the earliest rank's start, mean over
 * the two collectives): rank 0: 0; rank 1: (1+0)/2 = 0.5, step 2 (8+0)/2 =
 * 4.0; rank 2: (7+0.2)/2 = 3.6; rank 3: (2+0)/2 = 1.0 (rank 0 is the
 * earliest in every step). Medians over the steps: 0, 0.5, 3.6, 1.0 ms: rank
 * 2 is the straggler (3.6 ms >= 5% of 16 ms). Time in the collectives (sum
 * of both durations): rank 0 10 + 0.4 = 10.4; rank 1 9.4 (step 2: 2.4);
 * rank 2 3 + 0.2 = 3.2; rank 3 8.4 ms: rank 2 the least, by median (rank 1's
 * 2.4 ms in step 2 alone is less). Start spreads 7, 7, 8 and 0.2 x 3 ms:
 * median 3.6; end spreads 0. The old rule (longest step) named rank 3. */
#define SYNC_RANKS 4

static void write_sync_rank(char *path, size_t size, int rank, bool extra_collective)
{
    struct doc *d = calloc(1, sizeof *d);
    if (!d)
        KVS_TEST_SETUP_FAILED("out of memory");
    put(d, "{\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"}],"
           "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":%d,\"world_size\":%d},"
           "\"traceEvents\":[\n{\"ph\":\"i\",\"name\":\"start\",\"pid\":1,\"tid\":1,\"ts\":0}",
        rank, SYNC_RANKS);
    for (int s = 0; s < 3; s++) {
        double t = 100000 + s * 20000;
        double begin = rank == 3 ? t - 3000 : t;
        double arrive = t + (rank == 0 ? 5000 : rank == 1 ? (s == 2 ? 13000 : 6000) : rank == 2 ? 12000 : 7000);
        double second = t + (rank == 2 ? 15700 : 15500);
        put(d, ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\",\"pid\":1,"
               "\"tid\":1,\"ts\":%.3f,\"dur\":%.3f}", s + 7, begin, t + 16000 - begin);
        kernel(d, "aten::mm", NULL, "nvjet_tst_gemm", begin + 500, arrive - begin - 500, 7);
        kernel(d, "nccl:all_reduce", NULL, NCCL_KERNEL, arrive, t + 15000 - arrive, 20);
        kernel(d, "nccl:all_reduce", NULL, NCCL_KERNEL, second, t + 15900 - second, 20);
        if (extra_collective && s == 1)
            kernel(d, "nccl:all_reduce", NULL, NCCL_KERNEL, t + 15950, 20, 20);
    }
    put(d, "\n]}\n");
    kvs_tmp_write(path, size, d->buf, d->n, ".json");
    free(d);
}

/* rank `extra` (-1: none) launches a third collective in its second step */
static struct kvs_multirank *sync_ranks(struct kvs_analysis **a, int extra)
{
    struct kvs_analysis_options o;
    kvs_analysis_options_init(&o);
    o.log = kvs_capture_logger(&logcap);
    for (int i = 0; i < SYNC_RANKS; i++) {
        char path[256];
        write_sync_rank(path, sizeof path, SYNC_RANKS - 1 - i, SYNC_RANKS - 1 - i == extra);
        a[i] = NULL;
        KVS_CHECK_EQ_INT(kvs_analyze_file(path, &o, &a[i]), KVS_STATUS_OK);
        unlink(path);
        if (!a[i])
            return NULL;
    }
    struct kvs_multirank *m = NULL;
    KVS_CHECK_EQ_INT(kvs_multirank((const struct kvs_analysis *const *)a, SYNC_RANKS, &m), KVS_STATUS_OK);
    return m;
}

static void notes_text(const cJSON *r, char *notes, size_t size)
{
    notes[0] = '\0';
    const cJSON *n;
    cJSON_ArrayForEach(n, cJSON_GetObjectItem(r, "notes"))
    {
        strncat(notes, n->valuestring, size - strlen(notes) - 2);
        strcat(notes, "\n");
    }
}

static void test_arrival_straggler(void)
{
    struct kvs_analysis *a[SYNC_RANKS];
    struct kvs_multirank *m = sync_ranks(a, -1);
    KVS_REQUIRE(m);
    /* the analysis keeps each step's collectives, in start order */
    KVS_CHECK_EQ_INT((int)a[0]->ncollective, 6); /* rank 3's trace */
    KVS_CHECK_EQ_INT(a[0]->collectives[2].step, 1);
    KVS_CHECK_NEAR(a[0]->collectives[2].start_us, 127000, 1e-9);
    KVS_CHECK_NEAR(a[0]->collectives[2].dur_ms, 8.0, 1e-9);
    cJSON *j = render_json(m);
    KVS_REQUIRE(j);
    const cJSON *r = cJSON_GetObjectItem(j, "ranks");
    const cJSON *st = cJSON_GetObjectItem(r, "straggler");
    KVS_REQUIRE(cJSON_IsObject(st));
    KVS_CHECK_NEAR(num(st, "rank"), 2, 0);
    KVS_CHECK_NEAR(num(st, "arrival_skew_ms"), 3.6, 1e-9);
    KVS_CHECK_NEAR(num(st, "collective_ms"), 3.2, 1e-9);
    KVS_CHECK_NEAR(num(st, "step_ms"), 16, 1e-9);
    KVS_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(st, "stands_out")));
    KVS_CHECK_NEAR(num(r, "least_collective_rank"), 2, 0);
    const cJSON *ls = cJSON_GetObjectItem(r, "longest_step");
    KVS_CHECK_NEAR(num(ls, "rank"), 3, 0);
    KVS_CHECK_NEAR(num(ls, "step_ms"), 19, 1e-9);
    KVS_CHECK_NEAR(num(ls, "over_median_ms"), 3, 1e-9);
    KVS_CHECK_NEAR(num(ls, "over_median_fraction"), 3.0 / 16, 1e-9);
    KVS_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ls, "stands_out")));
    KVS_CHECK(cJSON_IsFalse(cJSON_GetObjectItem(ls, "is_straggler")));
    const cJSON *ar = cJSON_GetObjectItem(r, "arrival");
    KVS_CHECK_NEAR(num(ar, "steps"), 3, 0);
    KVS_CHECK_NEAR(num(ar, "skipped_steps"), 0, 0);
    KVS_CHECK_NEAR(num(ar, "collectives"), 6, 0);
    KVS_CHECK_NEAR(num(ar, "start_spread_ms"), 3.6, 1e-9);
    KVS_CHECK_NEAR(num(ar, "end_spread_ms"), 0, 1e-9);
    KVS_CHECK_NEAR(num(ar, "dur_ms"), 5.2, 1e-9);
    KVS_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ar, "ends_agree")));
    static const double skew[SYNC_RANKS] = {0, 0.5, 3.6, 1.0}, coll[SYNC_RANKS] = {10.4, 9.4, 3.2, 8.4};
    const cJSON *per = cJSON_GetObjectItem(r, "per_rank");
    KVS_REQUIRE(cJSON_GetArraySize(per) == SYNC_RANKS);
    for (int i = 0; i < SYNC_RANKS; i++) {
        const cJSON *x = cJSON_GetArrayItem(per, i);
        KVS_CHECK_NEAR(num(x, "rank"), i, 0);
        KVS_CHECK_NEAR(num(x, "arrival_skew_ms"), skew[i], 1e-9);
        KVS_CHECK_NEAR(num(x, "collective_ms"), coll[i], 1e-9);
    }
    char notes[4096];
    notes_text(r, notes, sizeof notes);
    KVS_CHECK_MSG(strstr(notes, "Rank 2 is the straggler, the rank the others wait for: it arrives last "
                                "at the steps' collectives, 3.60 ms after the earliest rank (median "
                                "over 3 steps, 6 collectives), and spends 3.20 ms per step in them, "
                                "the least of any rank."),
                  "%s", notes);
    KVS_CHECK_MSG(strstr(notes, "Rank 3 has the longest step: 19.00 ms, 3.00 ms (18.8%) over the median") &&
                      strstr(notes, "it is not the straggler: it spends 8.40 ms per step in collectives "
                                    "(rank 2: 3.20 ms), waiting there for rank 2."),
                  "%s", notes);
    KVS_CHECK_MSG(!strstr(notes, "Rank 3 is the straggler"), "%s", notes);
    cJSON_Delete(j);
    /* the text page marks the straggler in the ranks table */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct kvs_render_options ro = {.format = KVS_FORMAT_TEXT};
    KVS_CHECK_EQ_INT(kvs_render_multirank(f, m, &ro), KVS_STATUS_OK);
    fclose(f);
    KVS_CHECK_MSG(strstr(text, "arrives ms") && strstr(text, "* the straggler (arrives last)"), "%.2000s", text);
    free(text);
    kvs_multirank_free(m);
    for (int i = 0; i < SYNC_RANKS; i++)
        kvs_analysis_free(a[i]);
}

/* a step that launched a different number of collectives on one rank is
 * left out of the matching (the k-th would not be the same collective) */
static void test_arrival_count_mismatch(void)
{
    struct kvs_analysis *a[SYNC_RANKS];
    struct kvs_multirank *m = sync_ranks(a, 1);
    KVS_REQUIRE(m);
    KVS_CHECK_EQ_INT((int)m->arrival.steps, 2);
    KVS_CHECK_EQ_INT((int)m->arrival.skipped_steps, 1);
    KVS_CHECK_EQ_INT((int)m->arrival.collectives, 4);
    /* steps 0 and 2 remain: rank 1 0.5 and 4.0 ms (median 2.25; with step 1, 0.5) */
    KVS_CHECK_NEAR(m->rows[1].arrival_skew_ms, 2.25, 1e-9);
    KVS_CHECK_NEAR(m->rows[2].arrival_skew_ms, 3.6, 1e-9);
    KVS_CHECK_EQ_INT(m->straggler, 2);
    kvs_multirank_free(m);
    for (int i = 0; i < SYNC_RANKS; i++)
        kvs_analysis_free(a[i]);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"comm_and_compute", test_comm_and_compute},
        {"straggler_and_ranks", test_straggler_and_ranks},
        {"file_order_and_formats", test_file_order_and_formats},
        {"replicated_latent_cast", test_replicated_latent_cast},
        {"arrival_straggler", test_arrival_straggler},
        {"arrival_count_mismatch", test_arrival_count_mismatch},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
