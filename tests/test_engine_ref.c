/* tests/test_engine_ref.c — the CPU reference decode of the tiny config and
 * the engine's own CPU ops: deterministic, each sequence independent of the
 * rest of the batch and of where its slots lie, sensitive to its context.
 *   meson test -C build test_engine_ref */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_test.h"
#include "kvscope/engine.h"
#include "ops.h"
#include "reference.h"
#include "synth.h"

#define STEPS 3

static struct kvs_model_config tiny(void)
{
    struct kvs_model_config c;
    if (kvs_model_config_load("tiny", &c, NULL) != KVS_STATUS_OK)
        KVS_TEST_SETUP_FAILED("the tiny config does not load");
    return c;
}

/* Decode STEPS steps; logits [STEPS][batch][vocab], tokens [STEPS][batch]. */
static int run(const struct kvs_model_config *c, int batch, const int64_t *ctx, uint64_t seed,
               int scatter, float *logits, int32_t *tokens, struct kvs_ref_margins *mg)
{
    struct kvs_ref_params p = {batch, ctx, STEPS, 4096, seed, 0, scatter};
    struct kvs_ref *r = NULL;
    if (kvs_ref_create(c, &p, &r, NULL) != KVS_STATUS_OK)
        return 0;
    for (int s = 0; s < STEPS; s++) {
        enum kvs_status st = kvs_ref_step(r, logits + (size_t)s * batch * c->vocab,
                                          tokens + (size_t)s * batch, mg ? &mg[s] : NULL);
        if (st != KVS_STATUS_OK) {
            kvs_ref_free(r);
            return 0;
        }
    }
    /* room was made for STEPS steps only */
    float spare[64 * 512];
    int32_t t[64];
    int full = batch <= 64 && (size_t)c->vocab <= 512 &&
               kvs_ref_step(r, spare, t, NULL) == KVS_STATUS_LIMIT;
    kvs_ref_free(r);
    return full ? 1 : -1;
}

static void test_deterministic_and_bounded(void)
{
    struct kvs_model_config c = tiny();
    enum { B = 3 };
    int64_t ctx[B] = {5, 37, 0};
    size_t n = (size_t)STEPS * B * c.vocab;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    int32_t ta[STEPS * B], tb[STEPS * B];
    struct kvs_ref_margins m[STEPS];
    KVS_REQUIRE(run(&c, B, ctx, 11, 0, a, ta, m) == 1);
    KVS_REQUIRE(run(&c, B, ctx, 11, 0, b, tb, NULL) == 1);
    KVS_CHECK(memcmp(a, b, n * sizeof *a) == 0);
    KVS_CHECK(memcmp(ta, tb, sizeof ta) == 0);
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        KVS_REQUIRE(isfinite(a[i]));
        KVS_CHECK(fabsf(a[i]) < 1e3f);
        ss += (double)a[i] * a[i];
    }
    KVS_CHECK(ss / (double)n > 1e-4); /* not all (near) zero */
    for (int i = 0; i < STEPS * B; i++)
        KVS_CHECK(ta[i] >= 0 && ta[i] < c.vocab);
    for (int s = 0; s < STEPS; s++) {
        KVS_CHECK(m[s].route >= 0.0f && isfinite(m[s].route));
        KVS_CHECK(m[s].argmax >= 0.0f && isfinite(m[s].argmax));
    }
    /* another seed is another model */
    KVS_REQUIRE(run(&c, B, ctx, 12, 0, b, tb, NULL) == 1);
    KVS_CHECK(memcmp(a, b, n * sizeof *a) != 0);
    free(a);
    free(b);
}

static void test_sequences_independent(void)
{
    struct kvs_model_config c = tiny();
    enum { B = 3 };
    int64_t ctx[B] = {9, 21, 3};
    size_t V = (size_t)c.vocab;
    float *all = malloc((size_t)STEPS * B * V * sizeof *all);
    float *one = malloc((size_t)STEPS * V * sizeof *one);
    float *sc = malloc((size_t)STEPS * B * V * sizeof *sc);
    int32_t ta[STEPS * B], t1[STEPS], ts[STEPS * B];
    KVS_REQUIRE(run(&c, B, ctx, 5, 0, all, ta, NULL) == 1);
    /* sequence 0 alone decodes exactly as inside the batch */
    KVS_REQUIRE(run(&c, 1, ctx, 5, 0, one, t1, NULL) == 1);
    for (int s = 0; s < STEPS; s++) {
        KVS_CHECK_MSG(memcmp(all + (size_t)s * B * V, one + (size_t)s * V, V * sizeof *one) == 0,
                      "step %d: sequence 0 differs alone", s);
        KVS_CHECK_EQ_INT(ta[s * B], t1[s]);
    }
    /* slots scattered over the pool: the same numbers */
    KVS_REQUIRE(run(&c, B, ctx, 5, 1, sc, ts, NULL) == 1);
    KVS_CHECK(memcmp(all, sc, (size_t)STEPS * B * V * sizeof *sc) == 0);
    KVS_CHECK(memcmp(ta, ts, sizeof ta) == 0);
    free(all);
    free(one);
    free(sc);
}

static void test_context_matters(void)
{
    struct kvs_model_config c = tiny();
    size_t V = (size_t)c.vocab;
    float *a = malloc((size_t)STEPS * V * sizeof *a), *b = malloc((size_t)STEPS * V * sizeof *b);
    int32_t ta[STEPS], tb[STEPS];
    int64_t short_ctx[1] = {0}, long_ctx[1] = {200};
    KVS_REQUIRE(run(&c, 1, short_ctx, 3, 0, a, ta, NULL) == 1);
    KVS_REQUIRE(run(&c, 1, long_ctx, 3, 0, b, tb, NULL) == 1);
    /* same first token and weights: only the attended history differs */
    double diff = 0.0;
    for (size_t i = 0; i < V; i++)
        diff += fabs((double)a[i] - b[i]);
    KVS_CHECK_MSG(diff / (double)V > 1e-3, "mean |logit difference| %.3g", diff / (double)V);
    free(a);
    free(b);
}

static void test_refuses_glm5(void)
{
    struct kvs_model_config c;
    KVS_REQUIRE(kvs_model_config_load("glm5", &c, NULL) == KVS_STATUS_OK);
    int64_t ctx[1] = {4};
    struct kvs_ref_params p = {1, ctx, 1, 1024, 1, 0, 0};
    struct kvs_ref *r = NULL;
    struct kvs_logger quiet = {0};
    quiet.min_level = KVS_LOG_ERROR + 1;
    KVS_CHECK_EQ_INT(kvs_ref_create(&c, &p, &r, &quiet), KVS_STATUS_LIMIT);
    KVS_CHECK(r == NULL);
}

static void test_cpu_ops(void)
{
    struct kvs_model_config c = tiny();
    /* map: routed choices distinct in [0, resident), shared appended with weight 1 */
    struct kvs_expert_map m;
    KVS_REQUIRE(kvs_expert_map_init(&c, 0, &m) == KVS_STATUS_OK);
    int32_t ids[4] = {3, 5, 7, 1}, out[6];
    float w[4] = {0.5f, 0.25f, 2.0f, 1.5f}, ow[6];
    KVS_REQUIRE(kvs_eng_cpu_map_experts(&m, ids, w, 2, out, ow) == KVS_STATUS_OK);
    int ke = m.topk + m.shared;
    KVS_REQUIRE(ke == 3);
    for (int t = 0; t < 2; t++) {
        KVS_CHECK(out[t * ke] != out[t * ke + 1]);
        KVS_CHECK(out[t * ke] < m.resident && out[t * ke + 1] < m.resident);
        KVS_CHECK_EQ_INT(out[t * ke + 2], m.resident);
        KVS_CHECK(ow[t * ke] == w[t * 2] && ow[t * ke + 1] == w[t * 2 + 1]);
        KVS_CHECK(ow[t * ke + 2] == 1.0f);
    }
    /* append: the row holds the FP8 rounding of the BF16 inputs */
    kvs_fp8 pool[4 * KVS_MLA_ROW];
    memset(pool, 0, sizeof pool);
    kvs_bf16 lat[KVS_MLA_LATENT], rope[KVS_MLA_ROPE];
    for (int j = 0; j < KVS_MLA_LATENT; j++)
        lat[j] = kvs_float_to_bf16((float)(j - 256) / 32.0f);
    for (int j = 0; j < KVS_MLA_ROPE; j++)
        rope[j] = kvs_float_to_bf16(1000.0f * (j % 2 ? 1 : -1)); /* saturates to +-448 */
    int32_t slot[1] = {2};
    kvs_eng_cpu_kv_append(pool, slot, lat, rope, 1);
    for (int j = 0; j < KVS_MLA_ROW; j++) {
        KVS_CHECK_EQ_INT(pool[j], 0);
        KVS_CHECK_EQ_INT(pool[3 * KVS_MLA_ROW + j], 0);
    }
    for (int j = 0; j < KVS_MLA_LATENT; j++)
        KVS_CHECK_NEAR(kvs_fp8_to_float(pool[2 * KVS_MLA_ROW + j]), (j - 256) / 32.0,
                       fabs((j - 256) / 32.0) / 8.0);
    KVS_CHECK_NEAR(kvs_fp8_to_float(pool[2 * KVS_MLA_ROW + KVS_MLA_LATENT + 1]), 448.0, 0.0);
    /* fills follow the synthetic streams; KV codes are never NaN */
    kvs_bf16 wb[1000];
    kvs_eng_cpu_fill_bf16(wb, 1000, kvs_synth_key(9, 77), 0.5f, 1.0f);
    for (int i = 0; i < 1000; i++) {
        float v = kvs_bf16_to_float(wb[i]);
        KVS_CHECK(v >= 0.5f && v <= 1.5f);
    }
    kvs_fp8 kv[KVS_MLA_ROW * 8];
    kvs_eng_cpu_fill_kv(kv, 8, kvs_synth_key(9, 78));
    for (int i = 0; i < KVS_MLA_ROW * 8; i++) {
        float v = kvs_fp8_to_float(kv[i]);
        KVS_CHECK(isfinite(v) && fabsf(v) >= 1.0f / 16 && fabsf(v) <= 3.75f);
    }
    /* linear_f32 keeps what BF16 output would round away */
    kvs_bf16 x[2] = {kvs_float_to_bf16(1.0f), kvs_float_to_bf16(1.0f)};
    kvs_bf16 ww[2] = {kvs_float_to_bf16(1.0f), kvs_float_to_bf16(1.0f / 512)};
    float y;
    kvs_eng_cpu_linear_f32(x, ww, &y, 1, 1, 2);
    KVS_CHECK(y == 1.0f + 1.0f / 512);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"deterministic_and_bounded", test_deterministic_and_bounded},
        {"sequences_independent", test_sequences_independent},
        {"context_matters", test_context_matters},
        {"refuses_glm5", test_refuses_glm5},
        {"cpu_ops", test_cpu_ops},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
