/* tests/gpu/test_engine_ops.c — the engine's own CUDA ops against their CPU
 * references (engine/ops.h): synthetic fills (whole tensors and the slices
 * tensor-parallel ranks hold, engine/shard.h) and the KV append bit for bit,
 * the fused KV finish (norm + RoPE + append) code for code within a step,
 * expert mapping and the device sequence step exactly, the float-output
 * linear by normalized error. Outputs are poisoned before each launch.
 *   meson test -C build --suite gpu test_engine_ops */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_test_gpu.h"
#include "kvscope/engine.h"
#include "kvscope/engine_tp.h"
#include "model.h"
#include "ops.h"
#include "shard.h"
#include "synth.h"

static void *dev(size_t bytes)
{
    void *p = NULL;
    KVS_TEST_CUDA(cudaMalloc(&p, bytes));
    KVS_TEST_CUDA(cudaMemset(p, 0xA5, bytes)); /* poison */
    return p;
}

static void *up(const void *host, size_t bytes)
{
    void *p = dev(bytes);
    KVS_TEST_CUDA(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice));
    return p;
}

static void down(void *host, const void *d, size_t bytes)
{
    KVS_TEST_CUDA(cudaDeviceSynchronize());
    KVS_TEST_CUDA(cudaMemcpy(host, d, bytes, cudaMemcpyDeviceToHost));
}

static void test_fills(void)
{
    /* odd sizes; amplitudes as the weight table uses them */
    const uint64_t n = 1000003, rows = 37;
    const uint64_t key = kvs_synth_key(42, 7);
    kvs_bf16 *want = malloc(n * 2), *got = malloc(n * 2);
    float *wf = malloc(n * 4), *gf = malloc(n * 4);
    kvs_fp8 *wk = malloc(rows * 576), *gk = malloc(rows * 576);
    kvs_bf16 *d = dev(n * 2);
    float *df = dev(n * 4);
    kvs_fp8 *dk = dev(rows * 576);
    kvs_eng_cpu_fill_bf16(want, n, key, 0.0221f, 1.0f);
    KVS_REQUIRE(kvs_eng_cuda_fill_bf16(d, n, key, 0.0221f, 1.0f, NULL) == KVS_STATUS_OK);
    down(got, d, n * 2);
    KVS_CHECK(memcmp(want, got, n * 2) == 0);
    kvs_eng_cpu_fill_f32(wf, n, key, 1.0f / 32, 0.0f);
    KVS_REQUIRE(kvs_eng_cuda_fill_f32(df, n, key, 1.0f / 32, 0.0f, NULL) == KVS_STATUS_OK);
    down(gf, df, n * 4);
    KVS_CHECK(memcmp(wf, gf, n * 4) == 0);
    kvs_eng_cpu_fill_kv(wk, rows, key);
    KVS_REQUIRE(kvs_eng_cuda_fill_kv(dk, rows, key, NULL) == KVS_STATUS_OK);
    down(gk, dk, rows * 576);
    KVS_CHECK(memcmp(wk, gk, rows * 576) == 0);
    cudaFree(d);
    cudaFree(df);
    cudaFree(dk);
    free(want);
    free(got);
    free(wf);
    free(gf);
    free(wk);
    free(gk);
}

/* Every split tensor of the tiny model, for 2 and 4 ranks, every rank. */
static void test_shard_fills(void)
{
    struct kvs_model_config c;
    KVS_REQUIRE(kvs_model_config_load("tiny", &c, NULL) == KVS_STATUS_OK);
    int64_t n = kvs_model_weights(&c, 3, NULL, 0);
    struct kvs_wdesc *d = malloc((size_t)n * sizeof *d);
    KVS_REQUIRE(d);
    kvs_model_weights(&c, 3, d, n);
    int checked = 0;
    for (int world = 2; world <= 4; world *= 2) {
        struct kvs_tp_plan p;
        KVS_REQUIRE(kvs_tp_plan_init(&c, world, &p, NULL) == KVS_STATUS_OK);
        for (int64_t t = 0; t < n; t++)
            for (int r = 0; r < world; r++) {
                struct kvs_wdesc m;
                struct kvs_shard s;
                kvs_tp_shard(&p, r, &d[t], &m, &s);
                if (kvs_shard_is_whole(&m, &s))
                    continue;
                size_t bytes = kvs_wdesc_bytes(&m);
                kvs_bf16 *want = malloc(bytes), *got = malloc(bytes), *dd = dev(bytes);
                uint64_t key = kvs_synth_key(11, m.id);
                kvs_eng_cpu_fill_bf16_shard(want, &m, &s, key);
                KVS_REQUIRE(kvs_eng_cuda_fill_bf16_shard(dd, &m, &s, key, NULL) == KVS_STATUS_OK);
                down(got, dd, bytes);
                KVS_CHECK_MSG(memcmp(want, got, bytes) == 0, "tp %d rank %d: %s of layer %d",
                              world, r, kvs_wkind_name(m.kind), m.layer);
                checked++;
                cudaFree(dd);
                free(want);
                free(got);
            }
    }
    KVS_CHECK_EQ_INT(checked, (2 + 4) * 7 * c.layers);
    free(d);
}

static void test_prefill_and_append(void)
{
    enum { B = 3, CAP = 300 };
    struct kvs_slots *s = NULL;
    KVS_REQUIRE(kvs_slots_init(&s, CAP) == KVS_STATUS_OK);
    kvs_slots_scatter(s, 3);
    struct kvs_seqs q;
    int64_t ctx[B] = {0, 97, 41};
    KVS_REQUIRE(kvs_seqs_init(&q, s, B, ctx, 2) == KVS_STATUS_OK);
    kvs_fp8 *want = malloc(CAP * 576), *got = malloc(CAP * 576);
    kvs_eng_cpu_fill_kv(want, CAP, 5);
    kvs_fp8 *pool = up(want, CAP * 576);
    int32_t *table = up(q.slot, sizeof(int32_t) * B * q.max_len);
    int32_t *len = up(q.len, sizeof(int32_t) * B);
    kvs_eng_cpu_prefill_kv(want, q.slot, q.max_len, q.len, B, 9, 4);
    KVS_REQUIRE(kvs_eng_cuda_prefill_kv(pool, table, q.max_len, len, B, 97, 9, 4, NULL) ==
                KVS_STATUS_OK);
    down(got, pool, CAP * 576);
    KVS_CHECK(memcmp(want, got, CAP * 576) == 0);

    /* append: values across the FP8 range, saturation and ties included */
    kvs_bf16 lat[B * 512], rope[B * 64];
    uint64_t rng = 1;
    for (int i = 0; i < B * 512; i++) { /* subnormal, normal and saturating FP8 magnitudes */
        uint64_t r = kvs_test_rand(&rng);
        float u = (float)(r % 2001) / 1000.0f - 1.0f;
        lat[i] = kvs_float_to_bf16(ldexpf(u, (int)((r >> 32) % 22) - 12));
    }
    for (int i = 0; i < B * 64; i++)
        rope[i] = kvs_float_to_bf16((float)(i - 96) * 9.75f); /* up to +-930: saturates */
    int32_t slot[B];
    int32_t pos[B];
    KVS_REQUIRE(kvs_seqs_append(&q, s, slot, pos) == KVS_STATUS_OK);
    kvs_bf16 *dl = up(lat, sizeof lat), *dr = up(rope, sizeof rope);
    int32_t *ds = up(slot, sizeof slot);
    kvs_eng_cpu_kv_append(want, slot, lat, rope, B);
    KVS_REQUIRE(kvs_eng_cuda_kv_append(pool, ds, dl, dr, B, NULL) == KVS_STATUS_OK);
    down(got, pool, CAP * 576);
    KVS_CHECK(memcmp(want, got, CAP * 576) == 0);
    cudaFree(pool);
    cudaFree(table);
    cudaFree(len);
    cudaFree(dl);
    cudaFree(dr);
    cudaFree(ds);
    free(want);
    free(got);
    kvs_seqs_free(&q, s);
    kvs_slots_free_all(s);
}

/* The fused norm + RoPE + append against the three reference ops. The GPU
 * sums squares and forms angles in another order, so a BF16 value can land
 * one step away and its FP8 code then one step away too: allowed for a few
 * codes, each off by one magnitude step with its sign kept; rows other than
 * the new ones must be untouched. */
static void test_kv_finish(void)
{
    enum { B = 5, CAP = 64 };
    kvs_bf16 raw[B * 512], rope[B * 64], w[512];
    int32_t slot[B] = {7, 0, 63, 12, 30}, pos[B] = {0, 1, 4095, 131071, 77777};
    uint64_t rng = 21;
    for (int i = 0; i < B * 512; i++) /* rows of different scales */
        raw[i] = kvs_float_to_bf16(((float)(kvs_test_rand(&rng) % 2001) / 1000.0f - 1.0f) *
                                   (float)(1 + i / 512 * 7));
    for (int i = 0; i < B * 64; i++)
        rope[i] = kvs_float_to_bf16(((float)(kvs_test_rand(&rng) % 2001) / 1000.0f - 1.0f) * 300.f);
    for (int i = 0; i < 512; i++)
        w[i] = kvs_float_to_bf16(1.0f + ((float)(kvs_test_rand(&rng) % 129) - 64.0f) / 1024.0f);
    kvs_fp8 *want = malloc(CAP * 576), *got = malloc(CAP * 576);
    kvs_eng_cpu_fill_kv(want, CAP, 17);
    kvs_fp8 *pool = up(want, CAP * 576);
    kvs_bf16 *dr = up(raw, sizeof raw), *dp = up(rope, sizeof rope), *dw = up(w, sizeof w);
    int32_t *ds = up(slot, sizeof slot), *dpos = up(pos, sizeof pos);
    kvs_eng_cpu_kv_finish(want, slot, raw, w, rope, pos, B, 1e-5f, 1e6f);
    KVS_REQUIRE(kvs_eng_cuda_kv_finish(pool, ds, dr, dw, dp, dpos, B, 1e-5f, 1e6f, NULL) ==
                KVS_STATUS_OK);
    down(got, pool, CAP * 576);
    int off = 0, far = 0;
    for (int i = 0; i < CAP * 576; i++) {
        if (want[i] == got[i])
            continue;
        off++;
        int sw = want[i] & 0x80, sg = got[i] & 0x80;
        int mw = want[i] & 0x7f, mg = got[i] & 0x7f;
        far += sw != sg || (mw - mg != 1 && mg - mw != 1);
    }
    KVS_CHECK_MSG(far == 0 && off <= B * 576 / 100, "kv_finish: %d codes differ, %d by more "
                                                    "than one step", off, far);
    /* the inputs are left alone */
    kvs_bf16 back[B * 64];
    down(back, dp, sizeof back);
    KVS_CHECK(memcmp(back, rope, sizeof back) == 0);
    cudaFree(pool);
    cudaFree(dr);
    cudaFree(dp);
    cudaFree(dw);
    cudaFree(ds);
    cudaFree(dpos);
    free(want);
    free(got);
}

static void test_map_experts(void)
{
    struct kvs_model_config c;
    KVS_REQUIRE(kvs_model_config_load("glm5", &c, NULL) == KVS_STATUS_OK);
    enum { T = 67 };
    int32_t ids[T * 8];
    float w[T * 8];
    uint64_t rng = 9;
    for (int t = 0; t < T; t++)
        for (int k = 0; k < 8; k++) {
            int32_t e;
            int dup;
            do { /* distinct; many collide mod 8 */
                e = (int32_t)(kvs_test_rand(&rng) % (t % 2 ? 256 : 24));
                dup = 0;
                for (int j = 0; j < k; j++)
                    dup |= ids[t * 8 + j] == e;
            } while (dup);
            ids[t * 8 + k] = e;
            w[t * 8 + k] = (float)(kvs_test_rand(&rng) % 1000) / 997.0f;
        }
    for (int resident = 8; resident <= 256; resident *= 4) {
        struct kvs_expert_map m;
        KVS_REQUIRE(kvs_expert_map_init(&c, resident, &m) == KVS_STATUS_OK);
        int32_t want[T * 9], got[T * 9];
        float ww[T * 9], gw[T * 9];
        KVS_REQUIRE(kvs_eng_cpu_map_experts(&m, ids, w, T, want, ww) == KVS_STATUS_OK);
        int32_t *di = up(ids, sizeof ids), *doi = dev(sizeof got);
        float *dw = up(w, sizeof w), *dow = dev(sizeof gw);
        KVS_REQUIRE(kvs_eng_cuda_map_experts(&m, di, dw, T, doi, dow, NULL) == KVS_STATUS_OK);
        down(got, doi, sizeof got);
        down(gw, dow, sizeof gw);
        KVS_CHECK(memcmp(want, got, sizeof got) == 0);
        KVS_CHECK(memcmp(ww, gw, sizeof gw) == 0);
        cudaFree(di);
        cudaFree(doi);
        cudaFree(dw);
        cudaFree(dow);
    }
}

static void test_seq_step(void)
{
    enum { B = 5, CAP = 5000, STEPS = 3 };
    struct kvs_slots *s = NULL;
    KVS_REQUIRE(kvs_slots_init(&s, CAP) == KVS_STATUS_OK);
    kvs_slots_scatter(s, 11);
    struct kvs_seqs q;
    int64_t ctx[B] = {1500, 0, 1, 1024, 777};
    KVS_REQUIRE(kvs_seqs_init(&q, s, B, ctx, STEPS) == KVS_STATUS_OK);
    int32_t *table = up(q.slot, sizeof(int32_t) * B * q.max_len);
    int32_t *len = up(q.len, sizeof(int32_t) * B);
    int32_t *ns = dev(sizeof(int32_t) * B), *pos = dev(sizeof(int32_t) * B);
    int32_t *start = dev(sizeof(int32_t) * (B + 1));
    const int64_t bound = 1500 + 1 + 1024 + 777 + 1 + B * STEPS;
    int32_t *tokens = dev(sizeof(int32_t) * (size_t)bound);
    int32_t hs[B], hp[B], ws[B + 1], gs[B + 1], gp[B];
    int32_t *wt = malloc(sizeof(int32_t) * (size_t)bound), *gt = malloc(sizeof(int32_t) * (size_t)bound);
    for (int step = 0; step < STEPS; step++) {
        KVS_REQUIRE(kvs_seqs_append(&q, s, hs, hp) == KVS_STATUS_OK);
        kvs_seqs_csr(&q, ws, wt);
        KVS_TEST_CUDA(cudaMemcpy(ns, hs, sizeof hs, cudaMemcpyHostToDevice));
        int64_t pad = step == 1 ? bound : 0; /* padded like a captured graph */
        KVS_REQUIRE(kvs_eng_cuda_seq_step(table, q.max_len, len, ns, pos, B, start, tokens, pad, 0,
                                          NULL) == KVS_STATUS_OK);
        down(gs, start, sizeof gs);
        down(gp, pos, sizeof gp);
        down(gt, tokens, sizeof(int32_t) * (size_t)bound);
        KVS_CHECK(memcmp(ws, gs, sizeof gs) == 0);
        KVS_CHECK(memcmp(hp, gp, sizeof gp) == 0);
        KVS_CHECK(memcmp(wt, gt, sizeof(int32_t) * (size_t)ws[B]) == 0);
        if (pad)
            for (int64_t i = ws[B]; i < bound; i++)
                KVS_CHECK(gt[i] == 0);
    }
    cudaFree(table);
    cudaFree(len);
    cudaFree(ns);
    cudaFree(pos);
    cudaFree(start);
    cudaFree(tokens);
    free(wt);
    free(gt);
    kvs_seqs_free(&q, s);
    kvs_slots_free_all(s);
}

static void test_linear_f32(void)
{
    const int shapes[][3] = {{1, 256, 6144}, {3, 154880 / 64, 512}, {64, 256, 6144}, {7, 33, 129}};
    struct kvs_eng_blas *b = NULL;
    KVS_REQUIRE(kvs_eng_blas_init(&b, NULL, NULL) == KVS_STATUS_OK);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        kvs_bf16 *x = malloc((size_t)m * k * 2), *w = malloc((size_t)n * k * 2);
        float *want = malloc((size_t)m * n * 4), *got = malloc((size_t)m * n * 4);
        kvs_eng_cpu_fill_bf16(x, (uint64_t)m * k, 100 + s, 1.0f, 0.0f);
        kvs_eng_cpu_fill_bf16(w, (uint64_t)n * k, 200 + s, sqrtf(3.0f / k), 0.0f);
        kvs_eng_cpu_linear_f32(x, w, want, m, n, k);
        kvs_bf16 *dx = up(x, (size_t)m * k * 2), *dw = up(w, (size_t)n * k * 2);
        float *dy = dev((size_t)m * n * 4);
        KVS_REQUIRE(kvs_eng_cuda_linear_f32(b, dx, dw, dy, m, n, k) == KVS_STATUS_OK);
        down(got, dy, (size_t)m * n * 4);
        double num = 0.0, den = 0.0;
        for (size_t i = 0; i < (size_t)m * n; i++) {
            KVS_REQUIRE(isfinite(got[i]));
            num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
            den += (double)want[i] * want[i];
        }
        /* float accumulation in another order: ~1e-7 relative */
        KVS_CHECK_MSG(sqrt(num / den) < 1e-5, "shape %zu: normalized error %.3g", s,
                      sqrt(num / den));
        cudaFree(dx);
        cudaFree(dw);
        cudaFree(dy);
        free(x);
        free(w);
        free(want);
        free(got);
    }
    kvs_eng_blas_free(b);
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    static const struct kvs_test tests[] = {
        {"fills", test_fills},
        {"shard_fills", test_shard_fills},
        {"prefill_and_append", test_prefill_and_append},
        {"kv_finish", test_kv_finish},
        {"map_experts", test_map_experts},
        {"seq_step", test_seq_step},
        {"linear_f32", test_linear_f32},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
