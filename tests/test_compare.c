/* tests/test_compare.c — kvs_compare() on synthetic analyses: groups paired
 * by role across different token counts, deltas, resolved/new findings by
 * id, the verdict's explanation of GPU-time vs wall-time savings in each
 * regime (launch-bound, GPU-bound, CPU work removed), tokens/s from --batch,
 * and the kvscope.compare/1 JSON read back with cJSON. Expected numbers are
 * computed here from the fixture's fields, not copied from output.
 *
 *   meson test -C build test_compare
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kvs_test.h"
#include "kvscope/compare.h"
#include "kvscope/report.h"
#include "report_fixture.h"

static char *render(const struct kvs_comparison *c, enum kvs_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        KVS_TEST_SETUP_FAILED("open_memstream");
    struct kvs_render_options opt = {.format = fmt};
    KVS_CHECK_EQ_INT(kvs_render_compare(f, c, &opt), KVS_STATUS_OK);
    fclose(f);
    return buf;
}

static cJSON *compare_json(const struct kvs_analysis *x, const struct kvs_analysis *y, int batch)
{
    struct kvs_comparison *c = NULL;
    KVS_CHECK_EQ_INT(kvs_compare(x, y, batch, &c), KVS_STATUS_OK);
    if (!c)
        return NULL;
    char *text = render(c, KVS_FORMAT_JSON);
    kvs_comparison_free(c);
    cJSON *root = cJSON_Parse(text);
    if (!root)
        fprintf(stderr, "unparseable compare JSON:\n%s\n", text);
    free(text);
    return root;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(n) ? n->valuedouble : NAN;
}

/* The verdict sentence containing `needle`, or NULL. */
static const char *verdict_with(const cJSON *root, const char *needle)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(root, "verdict"))
        if (cJSON_IsString(v) && strstr(v->valuestring, needle))
            return v->valuestring;
    return NULL;
}

static void test_pairs_by_role(void)
{
    static struct kvs_fixture x, y;
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    cJSON *root = compare_json(&x.a, &y.a, 0);
    KVS_REQUIRE(root != NULL);
    const char *top[] = {"schema", "before", "after", "groups", "resolved", "new", "verdict"};
    const cJSON *k = root->child;
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++, k = k ? k->next : NULL)
        KVS_CHECK_MSG(k && !strcmp(k->string, top[i]), "key %zu wanted %s", i, top[i]);
    KVS_CHECK(k == NULL);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItem(root, "schema")->valuestring, "kvscope.compare/1");

    const cJSON *groups = cJSON_GetObjectItem(root, "groups");
    KVS_REQUIRE(cJSON_GetArraySize(groups) == 3); /* same roles on both sides: 3 pairs, not 6 */
    const cJSON *g0 = cJSON_GetArrayItem(groups, 0);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItem(g0, "role")->valuestring, x.groups[0].role);
    const cJSON *gb = cJSON_GetObjectItem(g0, "before"), *ga = cJSON_GetObjectItem(g0, "after");
    KVS_REQUIRE(cJSON_IsObject(gb) && cJSON_IsObject(ga));
    KVS_CHECK_EQ_INT(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(gb, "dims"), 0), 0)
                         ->valuedouble, 131072);
    KVS_CHECK_EQ_INT(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(ga, "dims"), 0), 0)
                         ->valuedouble, 1024);
    double bytes_b = (double)x.groups[0].bytes_per_call * x.groups[0].calls_per_step;
    double bytes_a = (double)y.groups[0].bytes_per_call * y.groups[0].calls_per_step;
    KVS_CHECK_NEAR(num(gb, "bytes_per_step"), bytes_b, 1e-6 * bytes_b);
    KVS_CHECK_NEAR(num(ga, "bytes_per_step"), bytes_a, 1e-6 * bytes_a);
    KVS_CHECK(num(gb, "gpu_ms_per_step") == x.groups[0].gpu_ms_per_step);
    KVS_CHECK(num(gb, "efficiency") == x.groups[0].efficiency);
    const cJSON *d = cJSON_GetObjectItem(g0, "delta");
    KVS_CHECK_NEAR(num(d, "gpu_ms_per_step"), y.groups[0].gpu_ms_per_step - x.groups[0].gpu_ms_per_step,
                   1e-12);
    KVS_CHECK_NEAR(num(d, "bytes_per_step"), bytes_a - bytes_b, 1e-6 * bytes_b);
    KVS_CHECK_NEAR(num(d, "efficiency"), y.groups[0].efficiency - x.groups[0].efficiency, 1e-12);

    const cJSON *res = cJSON_GetObjectItem(root, "resolved"), *nw = cJSON_GetObjectItem(root, "new");
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(res), 1);
    KVS_CHECK_EQ_STR(cJSON_GetArrayItem(res, 0)->valuestring, "kv_full_buffer_cast");
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(nw), 1);
    KVS_CHECK_EQ_STR(cJSON_GetArrayItem(nw, 0)->valuestring, "low_bandwidth_efficiency");

    const cJSON *sb = cJSON_GetObjectItem(root, "before"), *sa = cJSON_GetObjectItem(root, "after");
    KVS_CHECK(num(sb, "mean_ms") == x.a.steps.mean_ms);
    KVS_CHECK(num(sa, "gpu_ms_per_step") == y.a.steps.gpu_ms_per_step);
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(sa, "tokens_per_s"))); /* no batch */

    /* the verdict: percentages computed here from the fixture */
    char want[128];
    double gpu_fell = (x.a.steps.gpu_ms_per_step - y.a.steps.gpu_ms_per_step) /
                      x.a.steps.gpu_ms_per_step * 100;
    double wall_fell = (x.a.steps.mean_ms - y.a.steps.mean_ms) / x.a.steps.mean_ms * 100;
    snprintf(want, sizeof want, "GPU time per step fell %.1f%%", gpu_fell);
    KVS_CHECK_MSG(verdict_with(root, want) != NULL, "no verdict with \"%s\"", want);
    snprintf(want, sizeof want, "wall time per step fell %.1f%%", wall_fell);
    KVS_CHECK_MSG(verdict_with(root, want) != NULL, "no verdict with \"%s\"", want);
    KVS_CHECK(verdict_with(root, "launch-bound") != NULL);
    KVS_CHECK(verdict_with(root, "Resolved: kv_full_buffer_cast") != NULL);
    KVS_CHECK(verdict_with(root, "[131072,1,576] x2 -> [1024,1,576] x2") != NULL);
    cJSON_Delete(root);

    /* paired across op names (the engine's full cast and its gather-cast):
     * the verdict names both ops, not the before op on the after's rows */
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    const char *before_op = x.groups[0].op;
    y.groups[0].op = "kvs::gather_cast_fp8_to_bf16";
    root = compare_json(&x.a, &y.a, 0);
    KVS_REQUIRE(root != NULL);
    const char *v = verdict_with(root, "Largest change in copy/cast work");
    KVS_REQUIRE(v != NULL);
    char both[160];
    snprintf(both, sizeof both, "%s [131072,1,576] x2 -> kvs::gather_cast_fp8_to_bf16 [1024,1,576] x2",
             before_op);
    KVS_CHECK_MSG(strstr(v, both) != NULL, "%s", v);
    cJSON_Delete(root);
    /* and the groups table's op column */
    struct kvs_comparison *cmp = NULL;
    KVS_CHECK_EQ_INT(kvs_compare(&x.a, &y.a, 0, &cmp), KVS_STATUS_OK);
    KVS_REQUIRE(cmp);
    char *text = render(cmp, KVS_FORMAT_TEXT);
    snprintf(both, sizeof both, "%s -> kvs::gather_cast_fp8_to_bf16 ", before_op);
    KVS_CHECK_MSG(strstr(text, both) != NULL, "%s", text);
    free(text);
    kvs_comparison_free(cmp);
}

static void test_regimes(void)
{
    static struct kvs_fixture x, y;
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    double saved_gpu = x.a.steps.gpu_ms_per_step - y.a.steps.gpu_ms_per_step;

    /* GPU-bound: the wall time falls by the GPU time saved */
    x.a.steps.mean_ms = x.a.steps.gpu_ms_per_step * 1.02;
    y.a.steps.mean_ms = x.a.steps.mean_ms - saved_gpu;
    x.a.steps.gpu_busy_fraction = 0.98;
    y.a.steps.gpu_busy_fraction = 0.97;
    cJSON *root = compare_json(&x.a, &y.a, 0);
    KVS_REQUIRE(root != NULL);
    KVS_CHECK(verdict_with(root, "about as much as GPU time") != NULL);
    KVS_CHECK(verdict_with(root, "launch-bound") == NULL);
    cJSON_Delete(root);

    /* CPU work removed too: the wall time falls by more than the GPU time */
    y.a.steps.mean_ms = x.a.steps.mean_ms - 2 * saved_gpu;
    root = compare_json(&x.a, &y.a, 0);
    KVS_REQUIRE(root != NULL);
    KVS_CHECK(verdict_with(root, "more than GPU time") != NULL);
    cJSON_Delete(root);

    /* launch-bound and noisy, as eager PyTorch under the profiler: GPU time
     * falls, the mean wall time rises a little, within the steps' spread */
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    y.a.steps.mean_ms = x.a.steps.mean_ms + 1.5;
    y.a.steps.gpu_busy_fraction = y.a.steps.gpu_ms_per_step / y.a.steps.mean_ms;
    y.step[0].wall_ms = x.a.steps.mean_ms + 12; /* one slow step */
    root = compare_json(&x.a, &y.a, 0);
    KVS_REQUIRE(root != NULL);
    KVS_CHECK(verdict_with(root, "wall time per step rose") != NULL);
    KVS_CHECK(verdict_with(root, "Wall time did not fall although the GPU saved") != NULL);
    KVS_CHECK(verdict_with(root, "launch-bound") != NULL);
    KVS_CHECK(verdict_with(root, "within the step-to-step variation") != NULL);
    KVS_CHECK(num(cJSON_GetObjectItem(root, "after"), "wall_max_ms") == y.step[0].wall_ms);
    KVS_CHECK(num(cJSON_GetObjectItem(root, "before"), "wall_min_ms") == x.step[0].wall_ms);
    cJSON_Delete(root);
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);

    /* a regression: more GPU time after */
    root = compare_json(&y.a, &x.a, 0);
    KVS_REQUIRE(root != NULL);
    KVS_CHECK(verdict_with(root, "GPU time per step rose") != NULL);
    const cJSON *res = cJSON_GetObjectItem(root, "resolved"), *nw = cJSON_GetObjectItem(root, "new");
    KVS_CHECK_EQ_STR(cJSON_GetArrayItem(nw, 0)->valuestring, "kv_full_buffer_cast");
    KVS_CHECK_EQ_STR(cJSON_GetArrayItem(res, 0)->valuestring, "low_bandwidth_efficiency");
    cJSON_Delete(root);
}

static void test_batch_tokens(void)
{
    static struct kvs_fixture x, y;
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    cJSON *root = compare_json(&x.a, &y.a, 8);
    KVS_REQUIRE(root != NULL);
    KVS_CHECK_NEAR(num(cJSON_GetObjectItem(root, "before"), "tokens_per_s"), 8 * 1000.0 / 52.0, 1e-9);
    KVS_CHECK_NEAR(num(cJSON_GetObjectItem(root, "after"), "tokens_per_s"), 8 * 1000.0 / 41.6, 1e-9);
    KVS_CHECK(verdict_with(root, "at batch 8") != NULL);
    cJSON_Delete(root);
}

static void test_unpaired_and_merged(void)
{
    static struct kvs_fixture x, y;
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    /* after: the KV cast is gone entirely; the memcpy group is split in two
     * groups of the same role; the _to_copy group has no role (pairs by op+dtypes) */
    y.groups[0] = y.groups[1];
    y.groups[0].gpu_ms_per_step = 0.5;
    y.groups[0].calls_per_step = 3;
    y.groups[0].bytes_per_call = 1000000;
    x.groups[2].role = NULL;
    y.groups[2].role = NULL;
    cJSON *root = compare_json(&x.a, &y.a, 0);
    KVS_REQUIRE(root != NULL);
    const cJSON *groups = cJSON_GetObjectItem(root, "groups");
    KVS_REQUIRE(cJSON_GetArraySize(groups) == 3);
    const cJSON *kv = NULL, *mc = NULL, *tc = NULL, *g;
    cJSON_ArrayForEach(g, groups) {
        const char *role = cJSON_GetObjectItem(g, "role")->valuestring;
        if (!strcmp(role, x.groups[0].role))
            kv = g;
        else if (!strcmp(role, "Memcpy HtoD"))
            mc = g;
        else if (strstr(role, "aten::_to_copy"))
            tc = g;
    }
    KVS_REQUIRE(kv && mc && tc);
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(kv, "after")));
    KVS_CHECK_NEAR(num(cJSON_GetObjectItem(kv, "delta"), "gpu_ms_per_step"),
                   -x.groups[0].gpu_ms_per_step, 1e-12);
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(kv, "delta"), "efficiency")));
    const cJSON *ma = cJSON_GetObjectItem(mc, "after");
    KVS_CHECK_EQ_INT(num(ma, "groups"), 2);
    double ms = 0.5 + y.groups[1].gpu_ms_per_step;
    double bytes = 3 * 1000000.0 + y.groups[1].calls_per_step * (double)y.groups[1].bytes_per_call;
    KVS_CHECK_NEAR(num(ma, "gpu_ms_per_step"), ms, 1e-12);
    KVS_CHECK_NEAR(num(ma, "bytes_per_step"), bytes, 1e-6);
    KVS_CHECK_NEAR(num(ma, "achieved_gbps"), bytes / (ms * 1e6), 1e-9);
    KVS_CHECK_NEAR(num(ma, "efficiency"), bytes / (ms * 1e6) / 4800, 1e-12);
    KVS_CHECK(cJSON_IsObject(cJSON_GetObjectItem(tc, "before")));
    KVS_CHECK(cJSON_IsObject(cJSON_GetObjectItem(tc, "after")));
    KVS_CHECK(verdict_with(root, "gone after the fix") != NULL);
    cJSON_Delete(root);
}

/* GPU time from zero (a CPU-only trace before) moved: no "did not change
 * 0.0%" beside "rose by" in the next line; an equal time says "did not
 * change" with no percentage */
static void test_from_zero_gpu_time(void)
{
    static struct kvs_fixture x, y;
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    x.a.steps.gpu_ms_per_step = 0;
    x.a.steps.gpu_busy_fraction = 0;
    cJSON *root = compare_json(&x.a, &y.a, 0);
    KVS_REQUIRE(root != NULL);
    const char *v = verdict_with(root, "GPU time per step");
    KVS_REQUIRE(v != NULL);
    KVS_CHECK_MSG(strstr(v, "GPU time per step rose (0.000 -> ") == v, "%s", v);
    KVS_CHECK_MSG(!strstr(v, "did not change"), "%s", v);
    cJSON_Delete(root);

    kvs_fixture_unfixed(&x);
    kvs_fixture_unfixed(&y);
    root = compare_json(&x.a, &y.a, 0);
    KVS_REQUIRE(root != NULL);
    v = verdict_with(root, "GPU time per step");
    KVS_REQUIRE(v != NULL);
    KVS_CHECK_MSG(strstr(v, "GPU time per step did not change (") == v, "%s", v);
    KVS_CHECK_MSG(!strstr(v, "did not change 0.0%"), "%s", v);
    /* no change at all is not "within the step-to-step variation: profile
     * more steps to measure it" */
    KVS_CHECK(verdict_with(root, "step-to-step variation") == NULL);
    cJSON_Delete(root);
}

static void test_no_steps_and_devices(void)
{
    static struct kvs_fixture x, y;
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    y.a.steps.count = 0;
    y.a.trace.device = "NVIDIA H100 80GB HBM3";
    y.a.trace.peak_gbps = 0;
    cJSON *root = compare_json(&x.a, &y.a, 0);
    KVS_REQUIRE(root != NULL);
    KVS_CHECK(verdict_with(root, "after trace has no step markers") != NULL);
    KVS_CHECK(verdict_with(root, "different devices") != NULL);
    KVS_CHECK(verdict_with(root, "(whole trace)") != NULL);
    const cJSON *ga = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "groups"), 0),
                                          "after");
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(ga, "efficiency")));
    cJSON_Delete(root);
}

static void test_human_formats(void)
{
    static struct kvs_fixture x, y;
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    struct kvs_comparison *c = NULL;
    KVS_REQUIRE(kvs_compare(&x.a, &y.a, 1, &c) == KVS_STATUS_OK);
    char *t = render(c, KVS_FORMAT_TEXT);
    KVS_CHECK(strstr(t, "VERDICT") && strstr(t, "VERDICT") < strstr(t, "STEPS"));
    KVS_CHECK(strstr(t, "resolved       kv_full_buffer_cast") != NULL);
    KVS_CHECK(strstr(t, "-10.40 (-20.0%)") != NULL); /* 41.6 - 52.0 ms */
    free(t);
    char *m = render(c, KVS_FORMAT_MARKDOWN);
    KVS_CHECK(strstr(m, "## Verdict") != NULL);
    KVS_CHECK(strstr(m, "| wall ms |") != NULL);
    free(m);
    char *h = render(c, KVS_FORMAT_HTML);
    KVS_CHECK(!strncmp(h, "<!DOCTYPE html>", 15));
    KVS_CHECK(strstr(h, "<svg ") != NULL && !strstr(h, "<script"));
    KVS_CHECK(strstr(h, "traces/mla &quot;unfixed&quot;.json.gz") != NULL);
    free(h);
    kvs_comparison_free(c);
}

static void test_bad_arguments(void)
{
    static struct kvs_fixture x;
    kvs_fixture_unfixed(&x);
    struct kvs_comparison *c = (struct kvs_comparison *)&x; /* must be overwritten */
    KVS_CHECK_EQ_INT(kvs_compare(NULL, &x.a, 0, &c), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(c == NULL);
    KVS_CHECK_EQ_INT(kvs_compare(&x.a, &x.a, -1, &c), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_compare(&x.a, &x.a, 0, NULL), KVS_STATUS_INVALID_ARGUMENT);
    kvs_comparison_free(NULL);
    /* identical traces: nothing resolved, nothing new, no change */
    KVS_REQUIRE(kvs_compare(&x.a, &x.a, 0, &c) == KVS_STATUS_OK);
    char *j = render(c, KVS_FORMAT_JSON);
    KVS_CHECK(strstr(j, "No finding was resolved and none is new.") != NULL);
    KVS_CHECK(strstr(j, "did not change") != NULL);
    free(j);
    kvs_comparison_free(c);
}

/* kvs_summarize: the bottleneck from before's KV-capacity group, one
 * sentence per fix with its comparison's numbers, roofline rows for the
 * traces that have one, all against the first row's copy rate */
static void test_summary(void)
{
    static struct kvs_fixture x, y, z;
    kvs_fixture_unfixed(&x);
    kvs_fixture_fixed(&y);
    kvs_fixture_fixed(&z);
    x.a.roofline = (struct kvs_step_roofline){.known = true, .bytes_per_step = 2e10, .step_ms = 20,
                                              .step_source = "trace", .achieved_gbps = 1000,
                                              .peak_fraction = 1000.0 / 4800, .copy_gbps = 4000};
    y.a.engine = (struct kvs_engine_info){.present = true, .kv_path = "fp8-direct", .graph = -1};
    y.a.roofline = (struct kvs_step_roofline){.known = true, .bytes_per_step = 1e10, .step_ms = 5,
                                              .step_source = "trace", .achieved_gbps = 2000,
                                              .peak_fraction = 2000.0 / 4800, .copy_gbps = 3000};
    z.a.trace.path = "/runs/my_fix.json.gz"; /* no roofline: no row; named by its file */
    struct kvs_comparison *c1 = NULL, *c2 = NULL;
    KVS_REQUIRE(kvs_compare(&x.a, &y.a, 0, &c1) == KVS_STATUS_OK);
    KVS_REQUIRE(kvs_compare(&x.a, &z.a, 0, &c2) == KVS_STATUS_OK);
    const struct kvs_analysis *after[] = {&y.a, &z.a};
    const struct kvs_comparison *cmp[] = {c1, c2};
    struct kvs_summary *s = NULL;
    KVS_REQUIRE(kvs_summarize(&x.a, after, cmp, 2, &s) == KVS_STATUS_OK);
    KVS_CHECK(strstr(s->bottleneck, "aten::copy_ [131072,1,576] BFloat16<-Float8_e4m3fn casts the WHOLE") != NULL);
    KVS_CHECK(strstr(s->bottleneck, " 61 times per step (once per layer)") != NULL);
    KVS_REQUIRE(s->nfix == 2);
    char want[160];
    snprintf(want, sizeof want, "fp8-direct (attention reads the FP8 pool): GPU time per step %.4g -> %.4g ms",
             x.a.steps.gpu_ms_per_step, y.a.steps.gpu_ms_per_step);
    KVS_CHECK_MSG(strstr(s->fixes[0], want) != NULL, "%s", s->fixes[0]);
    KVS_CHECK(strstr(s->fixes[0], "Resolved: kv_full_buffer_cast") != NULL);
    KVS_CHECK_MSG(!strncmp(s->fixes[1], "my_fix: GPU time", 16), "%s", s->fixes[1]);
    KVS_REQUIRE(s->npath == 2); /* x and y; z has no roofline */
    KVS_CHECK(s->paths[0].name && s->paths[1].name && !strcmp(s->paths[1].name, "fp8-direct"));
    KVS_CHECK_NEAR(s->paths[0].copy_fraction, 0.25, 1e-12); /* 1000 of the first row's 4000 */
    KVS_CHECK_NEAR(s->paths[1].copy_fraction, 0.5, 1e-12);  /* 2000 of 4000, not of its own 3000 */
    KVS_CHECK(strstr(s->roofline, "(4800 GB/s)") && strstr(s->roofline, "(4000 GB/s)"));
    struct kvs_render_options opt = {.format = KVS_FORMAT_TEXT};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    KVS_REQUIRE(f);
    KVS_CHECK_EQ_INT(kvs_render_summary(f, s, &opt), KVS_STATUS_OK);
    fclose(f);
    KVS_CHECK(!strncmp(buf, "IN SHORT\n  The bottleneck ", 26));
    /* the row laid out as "%-12s %9.2f %13s %8.0f GB/s %13s %13.1f%%" (the main job's table) */
    KVS_CHECK_MSG(strstr(buf, "\n                 fp8-direct        5.00      10.00 GB     2000 GB/s"
                              "         41.7%          50.0%\n") != NULL, "%s", buf);
    free(buf);
    opt.format = KVS_FORMAT_JSON;
    KVS_CHECK_EQ_INT(kvs_render_summary(stdout, s, &opt), KVS_STATUS_INVALID_ARGUMENT);
    kvs_summary_free(s);
    KVS_CHECK_EQ_INT(kvs_summarize(&x.a, after, cmp, 0, &s), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(s == NULL);
    kvs_comparison_free(c1);
    kvs_comparison_free(c2);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"pairs_by_role", test_pairs_by_role},
        {"regimes", test_regimes},
        {"batch_tokens", test_batch_tokens},
        {"unpaired_and_merged", test_unpaired_and_merged},
        {"no_steps_and_devices", test_no_steps_and_devices},
        {"from_zero_gpu_time", test_from_zero_gpu_time},
        {"human_formats", test_human_formats},
        {"bad_arguments", test_bad_arguments},
        {"summary", test_summary},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
