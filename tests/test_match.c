/* tests/test_match.c — shape matching on traces shaped like kvscope's own
 * GLM-5 engine captures: the full-buffer cast must be found (given capacity,
 * or inferred), the active-token gather-then-cast must never be called a
 * full-buffer cast (with or without --kv-capacity / --model), and each of the
 * conservative inference rules holds on its own; findings name a C++ kernel
 * by its short name.
 *
 *   meson test -C build test_match     ./build/analyzers/test_match [case...]
 *
 * The generated traces copy the engine's recorded shapes (engine/gpu_step.c):
 *   kvs::kv_append_cast      [[1,1,576],[1,1,576],[1]]      FP8 <- BF16, int
 *   kvs::cast_fp8_to_bf16    [[CAP,1,576],[CAP,1,576]]      BF16 <- FP8   (full path)
 *   kvs::gather_cast_fp8_to_bf16 [[n,1,576],[n,1,576],[n]]  BF16 <- FP8, int (active path)
 *   kvs::mla_decode          [..., [rows,1,576], [2], [n or 0]]  ([2]: sequence offsets)
 * where n, the context, grows by one token per step (4099, 4100, ...).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "kvscope/units.h"

#define CAP 495552
#define CTX 4099

enum path { FULL, ACTIVE };

/* a C++ kernel name as CUPTI records it (the engine's, with a template) */
#define CAST_KERNEL                                                                                \
    "void (anonymous namespace)::cast_generic_kernel<at::native::memory::LoadWithCast<1>, 128>"    \
    "(unsigned char const*, unsigned short*, unsigned long)"

struct gen {
    char *buf;
    size_t n, cap;
    int ext;
    double t; /* us */
};

static void put(struct gen *g, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(g->buf + g->n, g->cap - g->n, fmt, ap);
        va_end(ap);
        if (k < 0)
            KVS_TEST_SETUP_FAILED("vsnprintf");
        if ((size_t)k < g->cap - g->n) {
            g->n += (size_t)k;
            return;
        }
        g->cap = g->cap * 2 + (size_t)k;
        g->buf = realloc(g->buf, g->cap);
        if (!g->buf)
            KVS_TEST_SETUP_FAILED("out of memory");
    }
}

/* one op with one kernel */
static void op(struct gen *g, const char *name, const char *dims, const char *types, const char *kernel,
               double kdur)
{
    g->ext++;
    put(g, ",\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"%s\",\"pid\":1,\"tid\":1,\"ts\":%.3f,"
           "\"dur\":10,\"args\":{\"External id\":%d,\"Input Dims\":%s,\"Input type\":%s}}",
        name, g->t, g->ext, dims, types);
    put(g, ",\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,\"tid\":7,\"ts\":%.3f,"
           "\"dur\":%.3f,\"args\":{\"External id\":%d,\"device\":0,\"stream\":7}}",
        kernel, g->t + 5, kdur, g->ext);
    g->t += 12 + kdur;
}

/* steps: 0 = no step markers; the gather lists its index tensor unless !index */
static char *engine_trace(enum path p, int steps, int layers, bool index, size_t *len)
{
    struct gen g = {malloc(1 << 16), 0, 1 << 16, 0, 1000};
    put(&g, "{\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"}],\"traceEvents\":[\n"
            "{\"ph\":\"i\",\"name\":\"start\",\"pid\":1,\"tid\":1,\"ts\":0}");
    for (int s = 0; s < (steps ? steps : 3); s++) {
        double step_start = g.t;
        int n = CTX + s;
        char dims[256], types[160];
        for (int l = 0; l < layers; l++) {
            double layer_start = g.t;
            op(&g, "kvs::kv_append_cast", "[[1,1,576],[1,1,576],[1]]",
               "[\"c10::Float8_e4m3fn\",\"c10::BFloat16\",\"int\"]", "kv_append_cast_kernel", 1.5);
            if (p == FULL) {
                op(&g, "kvs::cast_fp8_to_bf16", "[[495552,1,576],[495552,1,576]]",
                   "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]", CAST_KERNEL, 900);
                snprintf(dims, sizeof dims, "[[1,64,512],[1,64,64],[%d,1,576],[2],[%d]]", CAP, n);
            } else {
                if (index) {
                    snprintf(dims, sizeof dims, "[[%d,1,576],[%d,1,576],[%d]]", n, n, n);
                    snprintf(types, sizeof types, "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\",\"int\"]");
                } else {
                    snprintf(dims, sizeof dims, "[[%d,1,576],[%d,1,576]]", n, n);
                    snprintf(types, sizeof types, "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]");
                }
                op(&g, "kvs::gather_cast_fp8_to_bf16", dims, types, "gather_cast_kernel", 4);
                snprintf(dims, sizeof dims, "[[1,64,512],[1,64,64],[%d,1,576],[2],[0]]", n);
            }
            op(&g, "kvs::mla_decode", dims,
               "[\"c10::BFloat16\",\"c10::BFloat16\",\"c10::BFloat16\",\"int\",\"int\"]",
               "mla_decode_kernel", 12);
            put(&g, ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"layer_%d\",\"pid\":1,"
                    "\"tid\":1,\"ts\":%.3f,\"dur\":%.3f}", l, layer_start, g.t - layer_start);
        }
        g.t += 50;
        if (steps)
            put(&g, ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\","
                    "\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f}", s + 2, step_start - 1,
                g.t - step_start + 1);
        g.t += 5;
    }
    put(&g, "\n]}\n");
    *len = g.n;
    return g.buf;
}

/* a PyTorch-shaped gather-then-cast step (examples/torch_mla_decode.py as
 * torch.profiler records it): per layer the new row is written into the FP8
 * pool through a uint8 view, `aten::index_copy_` [[pool,1,576],[1],[1,1,576]]
 * (the Scalar dim dropped), then the active rows are cast, `aten::copy_`
 * [[n,1,576],[n,1,576]] BF16 <- FP8. */
static char *torch_gather_trace(int steps, int layers, size_t *len)
{
    struct gen g = {malloc(1 << 16), 0, 1 << 16, 0, 1000};
    put(&g, "{\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"}],\"traceEvents\":[\n"
            "{\"ph\":\"i\",\"name\":\"start\",\"pid\":1,\"tid\":1,\"ts\":0}");
    for (int s = 0; s < steps; s++) {
        double step_start = g.t;
        int n = CTX + s;
        char dims[128];
        for (int l = 0; l < layers; l++) {
            double layer_start = g.t;
            op(&g, "aten::index_copy_", "[[131072,1,576],[],[1],[1,1,576]]",
               "[\"unsigned char\",\"Scalar\",\"long int\",\"unsigned char\"]",
               "index_copy_kernel_impl", 2);
            snprintf(dims, sizeof dims, "[[%d,1,576],[%d,1,576]]", n, n);
            op(&g, "aten::copy_", dims, "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]",
               "unrolled_elementwise_kernel<direct_copy_kernel_cuda>", 8);
            put(&g, ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"layer_%d\",\"pid\":1,"
                    "\"tid\":1,\"ts\":%.3f,\"dur\":%.3f}", l, layer_start, g.t - layer_start);
        }
        g.t += 50;
        put(&g, ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\","
                "\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f}", s, step_start - 1,
            g.t - step_start + 1);
        g.t += 5;
    }
    put(&g, "\n]}\n");
    *len = g.n;
    return g.buf;
}

static struct kvs_log_capture cap;

/* The analysis of trace text doc (freed here) with a model and KV capacity. */
static struct kvs_analysis *analyze_doc(char *doc, size_t n, const char *model, int64_t capacity)
{
    char tmp[256];
    kvs_tmp_write(tmp, sizeof tmp, doc, n, ".json");
    free(doc);
    struct kvs_analysis_options o;
    kvs_analysis_options_init(&o);
    o.log = kvs_capture_logger(&cap);
    o.model = model;
    o.kv_capacity = capacity;
    struct kvs_analysis *a = NULL;
    enum kvs_status st = kvs_analyze_file(tmp, &o, &a);
    unlink(tmp);
    KVS_CHECK_MSG(st == KVS_STATUS_OK, "status %d (%s)", st, cap.last);
    return a;
}

static struct kvs_analysis *run(enum path p, int steps, int layers, bool index, const char *model,
                                int64_t capacity)
{
    size_t n;
    char *doc = engine_trace(p, steps, layers, index, &n);
    return analyze_doc(doc, n, model, capacity);
}

/* no group is called a buffer, and no full-buffer finding */
static void check_no_buffer(const struct kvs_analysis *a, const char *what)
{
    KVS_CHECK_MSG(kvs_test_finding(a, "kv_full_buffer_cast") == NULL, "%s: kv_full_buffer_cast: %s",
                  what, kvs_test_finding(a, "kv_full_buffer_cast")->message);
    for (size_t i = 0; i < a->ngroup; i++) {
        const struct kvs_group *g = &a->groups[i];
        char dims[256];
        KVS_CHECK_MSG(!g->has_match || g->match.capacity_tokens == 0, "%s: %s %s matched as %s", what,
                      g->op, kvs_dims_json(dims, sizeof dims, g), g->match.label);
    }
}

static void test_active_cast_is_no_full_buffer(void)
{
    static const struct {
        const char *model;
        int64_t capacity;
    } opts[] = {{NULL, 0}, {"glm5", 0}, {"glm5", CAP}, {NULL, CAP}};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        struct kvs_analysis *a = run(ACTIVE, 4, 78, true, opts[i].model, opts[i].capacity);
        KVS_REQUIRE(a);
        char what[96];
        snprintf(what, sizeof what, "active path, model %s, capacity %lld",
                 opts[i].model ? opts[i].model : "none", (long long)opts[i].capacity);
        check_no_buffer(a, what);
        /* the gathers are still matched as tokens of the MLA row with a model */
        if (opts[i].model) {
            bool seen = false;
            for (size_t k = 0; k < a->ngroup; k++)
                if (!strcmp(a->groups[k].op, "kvs::gather_cast_fp8_to_bf16")) {
                    seen = true;
                    KVS_CHECK_MSG(a->groups[k].has_match &&
                                      !strcmp(a->groups[k].match.label,
                                              "tokens x kv_lora_rank 512 + qk_rope_head_dim 64"),
                                  "%s: %s", what, a->groups[k].has_match ? a->groups[k].match.label : "-");
                }
            KVS_CHECK(seen);
        }
        kvs_analysis_free(a);
    }
}

static void check_full(const struct kvs_analysis *a, bool inferred, const char *what)
{
    const struct kvs_finding *f = kvs_test_finding(a, "kv_full_buffer_cast");
    KVS_REQUIRE(f && f->group >= 0);
    const struct kvs_group *g = &a->groups[f->group];
    KVS_CHECK_EQ_STR(g->op, "kvs::cast_fp8_to_bf16");
    KVS_CHECK_EQ_INT(g->match.capacity_tokens, CAP);
    KVS_CHECK_MSG(g->match.inferred == inferred, "%s: inferred %d", what, g->match.inferred);
    KVS_CHECK_NEAR(g->calls_per_step, 78, 1e-12);
    KVS_CHECK_EQ_INT(g->bytes_per_call, (int64_t)CAP * 576 * 3); /* 856.3 MB */
    KVS_CHECK(g->match.per_layer);
    /* the largest token list below the pool (the last step's context) */
    KVS_CHECK_NEAR(f->needed_bytes_per_step, (double)(CTX + 3) * 576 * 3 * 78, 1e-3);
    KVS_CHECK_MSG(strstr(f->message, "495552 tokens") != NULL, "%s: %s", what, f->message);
}

static void test_full_cast_found(void)
{
    struct kvs_analysis *a = run(FULL, 4, 78, true, "glm5", CAP);
    KVS_REQUIRE(a);
    check_full(a, false, "given capacity");
    KVS_CHECK(strstr(a->groups[0].match.label, "KV capacity (tokens)") == a->groups[0].match.label);
    /* 856 MB in 0.9 ms is 20% of the H200's peak: the evidence names the
     * kernel by its short name, the group keeps the full one */
    const struct kvs_finding *f = kvs_test_finding(a, "low_bandwidth_efficiency");
    KVS_REQUIRE(f && f->group >= 0);
    KVS_CHECK_EQ_STR(a->groups[f->group].kernel, CAST_KERNEL);
    KVS_CHECK_MSG(strstr(f->evidence, "kernel cast_generic_kernel<LoadWithCast<1>, 128>()") &&
                      !strstr(f->evidence, "unsigned char") && !strstr(f->evidence, "namespace"),
                  "%s", f->evidence);
    KVS_CHECK_MSG(strlen(f->evidence) < 300, "%zu characters: %s", strlen(f->evidence), f->evidence);
    kvs_analysis_free(a);
    a = run(FULL, 4, 78, true, NULL, 0);
    KVS_REQUIRE(a);
    check_full(a, true, "inferred");
    kvs_analysis_free(a);
    a = run(FULL, 4, 78, true, "glm5", 0);
    KVS_REQUIRE(a);
    check_full(a, true, "inferred with a model");
    kvs_analysis_free(a);
}

/* a given capacity is the only capacity: a pool of another size is not
 * guessed to be one */
static void test_given_capacity_overrides(void)
{
    struct kvs_analysis *a = run(FULL, 4, 78, true, NULL, 999);
    KVS_REQUIRE(a);
    check_no_buffer(a, "capacity 999");
    kvs_analysis_free(a);
    /* with a model, rows that are not the model's KV rows are no KV buffer:
     * llama-3-70b's rows are 8 x 128 (or twice that), not 576 */
    a = run(FULL, 4, 78, true, "llama-3-70b", 0);
    KVS_REQUIRE(a);
    check_no_buffer(a, "llama-3-70b");
    kvs_analysis_free(a);
}

/* the rules apart: one step, so the context never grows (no siblings, every
 * step seen) — only the gather's own index list tells; no index list and
 * several steps — each size is seen in one step only (and grows); no steps at
 * all — only the growing size tells */
static void test_rules_one_at_a_time(void)
{
    struct kvs_analysis *a = run(ACTIVE, 1, 78, true, NULL, 0);
    KVS_REQUIRE(a);
    check_no_buffer(a, "one step, gather with its index list");
    kvs_analysis_free(a);
    a = run(ACTIVE, 4, 78, false, NULL, 0);
    KVS_REQUIRE(a);
    check_no_buffer(a, "steps, gather without its index list");
    kvs_analysis_free(a);
    a = run(ACTIVE, 0, 78, false, NULL, 0);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_INT(a->steps.count, 0);
    check_no_buffer(a, "no steps, gather without its index list");
    kvs_analysis_free(a);
    /* and the full path is still found without steps */
    a = run(FULL, 0, 78, true, NULL, 0);
    KVS_REQUIRE(a);
    KVS_CHECK(kvs_test_finding(a, "kv_full_buffer_cast") != NULL);
    kvs_analysis_free(a);
}

/* Writing one row into the pool through an index is no full-buffer cast, and
 * moves the row's bytes, not the pool's (found on a real torch.profiler
 * trace of examples/torch_mla_decode.py on the H200, 2026-11-29: 75.5 MB per
 * call at "31655 GB/s", flagged kv_full_buffer_cast). */
static void test_indexed_write_is_no_full_buffer(void)
{
    static const int64_t caps[] = {0, 131072};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        size_t n;
        char *doc = torch_gather_trace(4, 8, &n);
        struct kvs_analysis *a = analyze_doc(doc, n, NULL, caps[i]);
        KVS_REQUIRE(a);
        KVS_CHECK_MSG(kvs_test_finding(a, "kv_full_buffer_cast") == NULL, "capacity %lld: %s",
                      (long long)caps[i], kvs_test_finding(a, "kv_full_buffer_cast")->message);
        bool seen = false;
        for (size_t k = 0; k < a->ngroup; k++) {
            const struct kvs_group *g = &a->groups[k];
            if (strcmp(g->op, "aten::index_copy_"))
                continue;
            seen = true;
            /* read the int64 index and the 576-byte row, write the row */
            KVS_CHECK_EQ_INT(g->bytes_per_call, 8 + 576 + 576);
            KVS_CHECK_NEAR(g->calls_per_step, 8, 1e-12);
        }
        KVS_CHECK(seen);
        kvs_analysis_free(a);
    }
}

/* MoE expert matmuls count as GEMM time: kvscope's kvs::moe_experts op
 * (its kernels are named experts_up/down_kernel) and vLLM's fused_moe kernel
 * (seen as "other" on the engine's H200 captures before). */
static void test_moe_experts_are_gemm(void)
{
    struct gen g = {malloc(1 << 12), 0, 1 << 12, 0, 1000};
    put(&g, "{\"traceEvents\":[\n{\"ph\":\"i\",\"name\":\"start\",\"pid\":1,\"tid\":1,\"ts\":0}");
    op(&g, "kvs::moe_experts", "[[1,6144]]", "[\"c10::BFloat16\"]",
       "(anonymous namespace)::experts_up_kernel(unsigned short const*)", 100);
    op(&g, "aten::empty", "[[1]]", "[\"float\"]", "fused_moe_kernel", 50);
    op(&g, "aten::add", "[[1]]", "[\"float\"]", "vectorized_elementwise_kernel", 10);
    put(&g, "\n]}\n");
    char tmp[256];
    kvs_tmp_write(tmp, sizeof tmp, g.buf, g.n, ".json");
    free(g.buf);
    struct kvs_analysis_options o;
    kvs_analysis_options_init(&o);
    o.log = kvs_capture_logger(&cap);
    struct kvs_analysis *a = NULL;
    enum kvs_status st = kvs_analyze_file(tmp, &o, &a);
    unlink(tmp);
    KVS_REQUIRE(st == KVS_STATUS_OK && a);
    KVS_CHECK_NEAR(a->category_ms[KVS_CAT_GEMM], 0.150, 1e-9);
    KVS_CHECK_NEAR(a->category_ms[KVS_CAT_OTHER], 0.010, 1e-9);
    kvs_analysis_free(a);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"active_cast_is_no_full_buffer", test_active_cast_is_no_full_buffer},
        {"full_cast_found", test_full_cast_found},
        {"given_capacity_overrides", test_given_capacity_overrides},
        {"rules_one_at_a_time", test_rules_one_at_a_time},
        {"indexed_write_is_no_full_buffer", test_indexed_write_is_no_full_buffer},
        {"moe_experts_are_gemm", test_moe_experts_are_gemm},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
