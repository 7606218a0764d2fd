/* tests/test_report_json.c — the kvscope.report/1 renderer on synthetic
 * analyses: the output parses back (cJSON) with exactly the schema's keys in
 * order, numbers equal to the struct's, hostile strings escaped, NaN/inf and
 * unknown peaks as null, write errors reported.
 *
 *   meson test -C build test_report_json
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kvs_test.h"
#include "kvscope/report.h"
#include "report_fixture.h"

/* Render `a` as JSON into a malloc'd string (caller frees). */
static char *render_json(const struct kvs_analysis *a, enum kvs_status *st)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        KVS_TEST_SETUP_FAILED("open_memstream");
    struct kvs_render_options opt = {.format = KVS_FORMAT_JSON};
    *st = kvs_render_report(f, a, &opt);
    fclose(f);
    return buf;
}

/* The object's keys are exactly `want` (NULL-terminated), in order. */
static int keys_are(const cJSON *obj, const char *const *want)
{
    const cJSON *c = obj ? obj->child : NULL;
    int i = 0;
    for (; want[i]; i++, c = c->next) {
        if (!c || !c->string || strcmp(c->string, want[i])) {
            fprintf(stderr, "key %d: got \"%s\", wanted \"%s\"\n", i,
                    c && c->string ? c->string : "(none)", want[i]);
            return 0;
        }
    }
    if (c) {
        fprintf(stderr, "extra key \"%s\"\n", c->string ? c->string : "?");
        return 0;
    }
    return 1;
}

static double num(const cJSON *obj, const char *key)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(n) ? n->valuedouble : NAN;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(n) ? n->valuestring : NULL;
}

static int is_null(const cJSON *obj, const char *key)
{
    return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj, key));
}

static void test_schema_and_values(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    enum kvs_status st;
    char *text = render_json(&fx.a, &st);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
    cJSON *root = cJSON_Parse(text);
    KVS_REQUIRE(root != NULL);

    static const char *const top[] = {"schema", "trace", "steps", "groups", "kernels", "findings", "engine", "roofline",
                                      "ops", "rank", NULL};
    static const char *const trace[] = {"path",           "bytes",           "events", "device",
                                        "peak_gbps",      "graph_launched", "capture_aligned", "with_stack",
                                        "peak_bf16_tflops", "peak_fp8_tflops", NULL};
    static const char *const steps[] = {"count", "mean_ms", "gpu_ms_per_step", "gpu_busy_fraction",
                                        "source", "mean_time_ms", "tokens_per_s", "category_ms",
                                        "by_kind", "items", "by_family", NULL};
    static const char *const step[] = {"index", "name", "kind", "batch", "tokens", "wall_ms",
                                       "gpu_span_ms", "time_ms", "gpu_busy_ms", "gpu_busy_fraction",
                                       "idle_ms", "outlier", "category_ms", NULL};
    static const char *const cats[] = {"copy/cast", "GEMM", "attention", "communication", "other",
                                       NULL};
    static const char *const group[] = {"op", "kernel", "dims", "dtypes", "calls",
                                        "calls_per_step", "gpu_ms", "gpu_fraction",
                                        "bytes_per_call", "sized_from", "bytes_bound",
                                        "launch_elements", "achieved_gbps", "efficiency", "match",
                                        NULL};
    static const char *const match[] = {"label", "capacity_tokens", "row_dim", "per_layer", NULL};
    static const char *const kernel[] = {"name", "calls", "gpu_ms", "gpu_fraction", "category",
                                         "family", NULL};
    static const char *const finding[] = {"id", "severity", "message", "gpu_ms_per_step",
                                          "bytes_per_step", "evidence", "fix", "gpus", "figures", NULL};
    /* the full-buffer findings' own figures */
    static const char *const finding_full[] = {"id", "severity", "message", "gpu_ms_per_step",
                                               "bytes_per_step", "evidence", "fix", "capacity_tokens",
                                               "active_tokens", "needed_bytes_per_step", "ops", "gpus", "figures",
                                               NULL};
    KVS_CHECK(keys_are(root, top));
    KVS_CHECK_EQ_STR(str(root, "schema"), "kvscope.report/1");
    const cJSON *t = cJSON_GetObjectItem(root, "trace");
    KVS_CHECK(keys_are(t, trace));
    KVS_CHECK_EQ_STR(str(t, "path"), fx.a.trace.path);
    KVS_CHECK_EQ_INT(num(t, "bytes"), fx.a.trace.bytes);
    KVS_CHECK_EQ_INT(num(t, "events"), fx.a.trace.events);
    KVS_CHECK_EQ_STR(str(t, "device"), "NVIDIA H200");
    KVS_CHECK(num(t, "peak_gbps") == 4800);
    KVS_CHECK(cJSON_IsFalse(cJSON_GetObjectItem(t, "with_stack")));
    KVS_CHECK(num(t, "peak_bf16_tflops") == 989 && num(t, "peak_fp8_tflops") == 1979);

    /* the roofline table: figures read back exactly; unknown ones are null, not 0 */
    static const char *const op[] = {"op", "family", "kernel", "dims", "dtypes", "calls",
                                     "calls_per_step", "gpu_ms", "gpu_ms_per_step", "gpu_fraction",
                                     "us_per_call", "bytes_per_call", "flops_per_call", "sized_from",
                                     "precision", "achieved_gbps", "achieved_tflops", "intensity",
                                     "peak_tflops", "bound", "roof_fraction", NULL};
    const cJSON *ops = cJSON_GetObjectItem(root, "ops");
    KVS_REQUIRE(cJSON_GetArraySize(ops) == 3);
    const cJSON *o0 = cJSON_GetArrayItem(ops, 0), *o1 = cJSON_GetArrayItem(ops, 1),
                *o2 = cJSON_GetArrayItem(ops, 2);
    KVS_CHECK(keys_are(o0, op) && keys_are(o1, op) && keys_are(o2, op));
    KVS_CHECK_EQ_STR(str(o0, "family"), "matmul");
    KVS_CHECK(num(o0, "flops_per_call") == 25165824 && num(o0, "bytes_per_call") == 25182208);
    KVS_CHECK(num(o0, "intensity") == fx.ops[0].intensity);
    KVS_CHECK(num(o0, "roof_fraction") == fx.ops[0].roof_fraction);
    KVS_CHECK_EQ_STR(str(o0, "bound"), "memory");
    KVS_CHECK_EQ_STR(str(o0, "precision"), "bf16");
    KVS_CHECK(num(o0, "peak_tflops") == 989);
    KVS_CHECK(is_null(o1, "flops_per_call") && is_null(o1, "achieved_tflops") &&
              is_null(o1, "intensity") && is_null(o1, "peak_tflops") && is_null(o1, "precision"));
    KVS_CHECK(num(o1, "achieved_gbps") == 12.288);
    KVS_CHECK(is_null(o2, "family") && is_null(o2, "bytes_per_call") && is_null(o2, "flops_per_call") &&
              is_null(o2, "bound") && is_null(o2, "roof_fraction") && is_null(o2, "achieved_gbps"));

    const cJSON *s = cJSON_GetObjectItem(root, "steps");
    KVS_CHECK(keys_are(s, steps));
    KVS_CHECK_EQ_INT(num(s, "count"), 4);
    /* numbers read back exactly: the renderer neither rounds nor recomputes */
    KVS_CHECK(num(s, "mean_ms") == fx.a.steps.mean_ms);
    KVS_CHECK(num(s, "gpu_ms_per_step") == fx.a.steps.gpu_ms_per_step);
    KVS_CHECK(num(s, "gpu_busy_fraction") == fx.a.steps.gpu_busy_fraction);
    KVS_CHECK_EQ_STR(str(s, "source"), "ProfilerStep#N");
    KVS_CHECK(num(s, "mean_time_ms") == fx.a.steps.mean_time_ms);
    KVS_CHECK(is_null(s, "tokens_per_s")); /* no tokens, no --batch */
    KVS_CHECK(keys_are(cJSON_GetObjectItem(s, "category_ms"), cats));
    KVS_CHECK(num(cJSON_GetObjectItem(s, "category_ms"), "GEMM") == fx.a.category_ms[KVS_CAT_GEMM]);
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(s, "by_kind")), 0);
    const cJSON *items = cJSON_GetObjectItem(s, "items");
    KVS_REQUIRE(cJSON_GetArraySize(items) == 4);
    for (int i = 0; i < 4; i++) {
        const cJSON *it = cJSON_GetArrayItem(items, i);
        KVS_CHECK(keys_are(it, step));
        KVS_CHECK_EQ_INT(num(it, "index"), fx.step[i].index);
        KVS_CHECK_EQ_STR(str(it, "kind"), "unknown");
        KVS_CHECK(is_null(it, "batch") && is_null(it, "outlier"));
        KVS_CHECK(num(it, "wall_ms") == fx.step[i].wall_ms);
        KVS_CHECK(num(it, "gpu_span_ms") == fx.step[i].gpu_span_ms);
        KVS_CHECK(num(it, "time_ms") == fx.step[i].time_ms);
        KVS_CHECK(num(it, "gpu_busy_ms") == fx.step[i].gpu_busy_ms);
        KVS_CHECK(num(it, "idle_ms") == fx.step[i].idle_ms);
        KVS_CHECK(num(cJSON_GetObjectItem(it, "category_ms"), "communication") ==
                  fx.step[i].category_ms[KVS_CAT_COMM]);
    }

    /* kvscope.rank/1: the keys of docs/report-json.md, the figures exactly */
    static const char *const rank_keys[] = {"schema", "rank", "world_size", "path", "device", "producer",
                                            "devices", "clock", "steps", "collective_names", "items",
                                            "findings", NULL};
    static const char *const rank_item[] = {"index", "start_us", "end_us", "wall_ms", "time_ms",
                                            "gpu_busy_ms", "compute_ms", "comm_ms", "exposed_comm_ms",
                                            "category_ms", "collectives", NULL};
    const cJSON *rk = cJSON_GetObjectItem(root, "rank");
    KVS_CHECK(keys_are(rk, rank_keys));
    KVS_CHECK_EQ_STR(str(rk, "schema"), "kvscope.rank/1");
    KVS_CHECK(num(cJSON_GetObjectItem(rk, "steps"), "gpu_ms_per_step") == fx.a.steps.gpu_ms_per_step);
    const cJSON *ritems = cJSON_GetObjectItem(rk, "items");
    KVS_REQUIRE(cJSON_GetArraySize(ritems) == 4);
    for (int i = 0; i < 4; i++) {
        const cJSON *it = cJSON_GetArrayItem(ritems, i);
        KVS_CHECK(keys_are(it, rank_item));
        KVS_CHECK(num(it, "start_us") == fx.step[i].start_us && num(it, "end_us") == fx.step[i].end_us);
    }
    const cJSON *rf = cJSON_GetObjectItem(rk, "findings");
    KVS_REQUIRE(cJSON_GetArraySize(rf) == (int)fx.a.nfinding);
    for (size_t i = 0; i < fx.a.nfinding; i++)
        KVS_CHECK_EQ_STR(str(cJSON_GetArrayItem(rf, (int)i), "id"), fx.a.findings[i].id);

    const cJSON *groups = cJSON_GetObjectItem(root, "groups");
    KVS_REQUIRE(cJSON_GetArraySize(groups) == 3);
    for (int i = 0; i < 3; i++) {
        const cJSON *g = cJSON_GetArrayItem(groups, i);
        const struct kvs_group *want = &fx.groups[i];
        KVS_CHECK(keys_are(g, group));
        KVS_CHECK_EQ_STR(str(g, "op"), want->op);
        KVS_CHECK_EQ_STR(str(g, "kernel"), want->kernel);
        KVS_CHECK_EQ_INT(num(g, "calls"), want->calls);
        KVS_CHECK(num(g, "calls_per_step") == want->calls_per_step);
        KVS_CHECK(num(g, "gpu_ms") == want->gpu_ms);
        KVS_CHECK(num(g, "gpu_fraction") == want->gpu_fraction);
        KVS_CHECK_EQ_INT(num(g, "bytes_per_call"), want->bytes_per_call);
        KVS_CHECK_EQ_STR(str(g, "bytes_bound"), "exact");
        KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(g, "launch_elements")));
        KVS_CHECK(num(g, "achieved_gbps") == want->achieved_gbps);
        KVS_CHECK(num(g, "efficiency") == want->efficiency);
        KVS_CHECK(cJSON_IsArray(cJSON_GetObjectItem(g, "dims")));
        KVS_CHECK(cJSON_IsArray(cJSON_GetObjectItem(g, "dtypes")));
    }
    const cJSON *g0 = cJSON_GetArrayItem(groups, 0);
    const cJSON *dims = cJSON_GetObjectItem(g0, "dims");
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(dims), 2);
    for (int i = 0; i < 2; i++) {
        const cJSON *d = cJSON_GetArrayItem(dims, i);
        KVS_CHECK_EQ_INT(cJSON_GetArraySize(d), 3);
        KVS_CHECK_EQ_INT(cJSON_GetArrayItem(d, 0)->valuedouble, 131072);
        KVS_CHECK_EQ_INT(cJSON_GetArrayItem(d, 2)->valuedouble, 576);
    }
    const cJSON *dt = cJSON_GetObjectItem(g0, "dtypes");
    KVS_CHECK_EQ_STR(cJSON_GetArrayItem(dt, 0)->valuestring, "c10::BFloat16");
    KVS_CHECK_EQ_STR(cJSON_GetArrayItem(dt, 1)->valuestring, "c10::Float8_e4m3fn");
    const cJSON *m = cJSON_GetObjectItem(g0, "match");
    KVS_CHECK(keys_are(m, match));
    KVS_CHECK_EQ_STR(str(m, "label"), fx.groups[0].match.label);
    KVS_CHECK_EQ_INT(num(m, "capacity_tokens"), 131072);
    KVS_CHECK_EQ_INT(num(m, "row_dim"), 576);
    KVS_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "per_layer")));
    /* the bare memcpy group: no match, no tensors */
    const cJSON *g1 = cJSON_GetArrayItem(groups, 1);
    KVS_CHECK(is_null(g1, "match"));
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(g1, "dims")), 0);
    /* the _to_copy group keeps the op's full record, scalars included */
    const cJSON *g2dims = cJSON_GetObjectItem(cJSON_GetArrayItem(groups, 2), "dims");
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(g2dims), 7);

    const cJSON *kernels = cJSON_GetObjectItem(root, "kernels");
    KVS_REQUIRE(cJSON_GetArraySize(kernels) == 4);
    for (int i = 0; i < 4; i++) {
        const cJSON *k = cJSON_GetArrayItem(kernels, i);
        KVS_CHECK(keys_are(k, kernel));
        KVS_CHECK(num(k, "gpu_ms") == fx.kernels[i].gpu_ms);
        KVS_CHECK(num(k, "gpu_fraction") == fx.kernels[i].gpu_fraction);
        KVS_CHECK_EQ_STR(str(k, "family"), fx.kernels[i].family);
    }
    KVS_CHECK_EQ_STR(str(cJSON_GetArrayItem(kernels, 3), "category"), "communication");
    /* markup and quotes survive; the control byte is escaped and comes back;
     * the invalid byte becomes U+FFFD */
    KVS_CHECK_EQ_STR(str(cJSON_GetArrayItem(kernels, 2), "name"),
                     "evil<script>alert(\"x\")</script>&\x01|`k`\xef\xbf\xbd");
    KVS_CHECK(strstr(text, "\\u0001") != NULL);

    const cJSON *findings = cJSON_GetObjectItem(root, "findings");
    KVS_REQUIRE(cJSON_GetArraySize(findings) == 2);
    const cJSON *f0 = cJSON_GetArrayItem(findings, 0);
    KVS_CHECK(keys_are(f0, finding_full));
    KVS_CHECK(num(f0, "capacity_tokens") == 131072 && num(f0, "active_tokens") == 1024);
    KVS_CHECK(num(f0, "needed_bytes_per_step") == fx.findings[0].needed_bytes_per_step);
    KVS_CHECK(cJSON_IsArray(cJSON_GetObjectItem(f0, "ops")) && cJSON_GetArraySize(cJSON_GetObjectItem(f0, "ops")) == 0);
    KVS_CHECK_EQ_STR(str(f0, "id"), "kv_full_buffer_cast");
    KVS_CHECK_EQ_STR(str(f0, "severity"), "high");
    KVS_CHECK(num(f0, "bytes_per_step") == fx.findings[0].bytes_per_step);
    KVS_CHECK_EQ_STR(str(f0, "evidence"), fx.findings[0].evidence);
    KVS_CHECK_EQ_STR(str(f0, "fix"), fx.findings[0].fix);
    const cJSON *f1 = cJSON_GetArrayItem(findings, 1);
    KVS_CHECK(keys_are(f1, finding)); /* gpu_idle: no capacity, no full-buffer keys */
    KVS_CHECK_EQ_STR(str(f1, "severity"), "warn");
    KVS_CHECK(is_null(f1, "bytes_per_step"));
    cJSON_Delete(root);
    free(text);
}

static void test_nonfinite_and_unknown_peak(void)
{
    struct kvs_fixture fx;
    kvs_fixture_fixed(&fx);
    fx.a.trace.peak_gbps = 0;
    fx.a.trace.device = NULL;
    fx.a.steps.mean_ms = NAN;
    fx.a.steps.gpu_busy_fraction = INFINITY;
    fx.groups[0].achieved_gbps = -INFINITY;
    fx.kernels[1].gpu_ms = NAN;
    enum kvs_status st;
    char *text = render_json(&fx.a, &st);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
    KVS_CHECK(!strstr(text, ": nan") && !strstr(text, ": inf") && !strstr(text, ": -inf"));
    cJSON *root = cJSON_Parse(text);
    KVS_REQUIRE(root != NULL);
    const cJSON *t = cJSON_GetObjectItem(root, "trace");
    KVS_CHECK(is_null(t, "device"));
    KVS_CHECK(is_null(t, "peak_gbps"));
    const cJSON *s = cJSON_GetObjectItem(root, "steps");
    KVS_CHECK(is_null(s, "mean_ms"));
    KVS_CHECK(is_null(s, "gpu_busy_fraction"));
    KVS_CHECK(num(s, "gpu_ms_per_step") == fx.a.steps.gpu_ms_per_step);
    const cJSON *g0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "groups"), 0);
    KVS_CHECK(is_null(g0, "achieved_gbps"));
    KVS_CHECK(is_null(g0, "efficiency")); /* no peak, no efficiency */
    const cJSON *m = cJSON_GetObjectItem(g0, "match");
    KVS_CHECK(is_null(m, "capacity_tokens")); /* active tokens, not a capacity */
    KVS_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "per_layer")));
    const cJSON *k1 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "kernels"), 1);
    KVS_CHECK(is_null(k1, "gpu_ms"));
    cJSON_Delete(root);
    free(text);
}

static void test_empty_analysis(void)
{
    struct kvs_analysis a;
    memset(&a, 0, sizeof a);
    enum kvs_status st;
    char *text = render_json(&a, &st);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
    cJSON *root = cJSON_Parse(text);
    KVS_REQUIRE(root != NULL);
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(root, "groups")), 0);
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(root, "kernels")), 0);
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(root, "findings")), 0);
    KVS_CHECK(is_null(cJSON_GetObjectItem(root, "trace"), "path"));
    KVS_CHECK_EQ_INT(num(cJSON_GetObjectItem(root, "steps"), "count"), 0);
    cJSON_Delete(root);
    free(text);
}

/* a group's dims and dtypes in JSON are its parsed tensors (the one form a
 * group carries), each tensor on its own: the second tensor changed shows */
static void test_dims_from_tensors(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    fx.dims[0][1].d[0] = 4096;
    fx.dtypes[0][1] = "c10::Float8_e5m2";
    enum kvs_status st;
    char *text = render_json(&fx.a, &st);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
    cJSON *root = cJSON_Parse(text);
    KVS_REQUIRE(root != NULL);
    const cJSON *g0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "groups"), 0);
    const cJSON *dims = cJSON_GetObjectItem(g0, "dims");
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(dims), 2);
    KVS_CHECK_EQ_INT(cJSON_GetArrayItem(cJSON_GetArrayItem(dims, 0), 0)->valuedouble, 131072);
    KVS_CHECK_EQ_INT(cJSON_GetArrayItem(cJSON_GetArrayItem(dims, 1), 0)->valuedouble, 4096);
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetArrayItem(dims, 1)), 3);
    const cJSON *dt = cJSON_GetObjectItem(g0, "dtypes");
    KVS_CHECK_EQ_STR(cJSON_GetArrayItem(dt, 0)->valuestring, "c10::BFloat16");
    KVS_CHECK_EQ_STR(cJSON_GetArrayItem(dt, 1)->valuestring, "c10::Float8_e5m2");
    cJSON_Delete(root);
    free(text);
}

/* engine and roofline: null for a trace without kvscope.engine, else the
 * analysis's figures; unknown members null */
static void test_engine_and_roofline(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    enum kvs_status st;
    char *text = render_json(&fx.a, &st);
    cJSON *root = cJSON_Parse(text);
    KVS_REQUIRE(root != NULL);
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(root, "engine")));
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(root, "roofline")));
    cJSON_Delete(root);
    free(text);

    fx.a.engine = (struct kvs_engine_info){.present = true, .config = "glm5", .kv_path = "full-cast",
                                           .batch = 1, .context = 4096, .graph = -1,
                                           .bytes_per_step = 1.47367e11, .copy_gbps = 4227.1,
                                           .step_ms = 96.6685};
    fx.a.roofline = (struct kvs_step_roofline){.known = true, .bytes_per_step = 1.47367e11,
                                               .step_ms = 97.26, .step_source = "trace",
                                               .achieved_gbps = 1515.2, .peak_fraction = 0.3157,
                                               .copy_gbps = 4227.1, .copy_fraction = NAN};
    text = render_json(&fx.a, &st);
    root = cJSON_Parse(text);
    KVS_REQUIRE(root != NULL);
    const cJSON *e = cJSON_GetObjectItem(root, "engine");
    static const char *const ekeys[] = {"config", "kv_path", "batch", "context", "kv_capacity",
                                        "layers", "tp", "graph", "steps", "bytes_per_step",
                                        "weight_bytes_per_step", "kv_bytes_per_step", "copy_gbps",
                                        "step_ms", NULL};
    KVS_CHECK(keys_are(e, ekeys));
    KVS_CHECK_EQ_STR(str(e, "kv_path"), "full-cast");
    KVS_CHECK_EQ_INT(num(e, "context"), 4096);
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(e, "kv_capacity"))); /* 0: unknown */
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(e, "graph")));
    KVS_CHECK(num(e, "bytes_per_step") == 1.47367e11);
    const cJSON *r = cJSON_GetObjectItem(root, "roofline");
    static const char *const rkeys[] = {"bytes_per_step", "step_ms", "step_source", "achieved_gbps",
                                        "peak_fraction", "copy_gbps", "copy_fraction", NULL};
    KVS_CHECK(keys_are(r, rkeys));
    KVS_CHECK(num(r, "achieved_gbps") == 1515.2 && num(r, "peak_fraction") == 0.3157);
    KVS_CHECK_EQ_STR(str(r, "step_source"), "trace");
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "copy_fraction")));
    cJSON_Delete(root);
    free(text);
}

static void test_write_error(void)
{
    FILE *f = fopen("/dev/full", "w");
    if (!f)
        KVS_TEST_SKIP("no /dev/full");
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    struct kvs_logger quiet = {0};
    quiet.min_level = KVS_LOG_ERROR + 1;
    struct kvs_render_options opt = {.format = KVS_FORMAT_JSON, .log = quiet};
    KVS_CHECK_EQ_INT(kvs_render_report(f, &fx.a, &opt), KVS_STATUS_IO);
    fclose(f);
}

static void test_format_parse(void)
{
    enum kvs_format f = KVS_FORMAT_HTML;
    KVS_CHECK_EQ_INT(kvs_format_parse("json", &f), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(f, KVS_FORMAT_JSON);
    KVS_CHECK_EQ_INT(kvs_format_parse("md", &f), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(f, KVS_FORMAT_MARKDOWN);
    KVS_CHECK_EQ_INT(kvs_format_parse("markdown", &f), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(f, KVS_FORMAT_MARKDOWN);
    KVS_CHECK_EQ_INT(kvs_format_parse("text", &f), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(f, KVS_FORMAT_TEXT);
    KVS_CHECK_EQ_INT(kvs_format_parse("html", &f), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(f, KVS_FORMAT_HTML);
    KVS_CHECK_EQ_INT(kvs_format_parse("yaml", &f), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_format_parse("", &f), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_format_parse(NULL, &f), KVS_STATUS_INVALID_ARGUMENT);
    struct kvs_render_options opt = {.format = (enum kvs_format)42};
    struct kvs_analysis a;
    memset(&a, 0, sizeof a);
    KVS_CHECK_EQ_INT(kvs_render_report(stdout, &a, &opt), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_render_report(stdout, NULL, &opt), KVS_STATUS_INVALID_ARGUMENT);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"schema_and_values", test_schema_and_values},
        {"nonfinite_and_unknown_peak", test_nonfinite_and_unknown_peak},
        {"empty_analysis", test_empty_analysis},
        {"dims_from_tensors", test_dims_from_tensors},
        {"engine_and_roofline", test_engine_and_roofline},
        {"write_error", test_write_error},
        {"format_parse", test_format_parse},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
