/* kernels/tests/gpu/test_kernels_engine_ops.c — the engine's own CUDA ops against their CPU
 * references (engine/ops.h): synthetic fills (whole tensors and the slices
 * tensor-parallel ranks hold, engine/shard.h) and the KV append bit for bit,
 * the fused KV finish (norm + RoPE + append) code for code within a step,
 * alone and with q_a's norm in the same launch, expert mapping (alone and
 * fused with the router) and the device sequence step exactly, the
 * float-output linear by normalized error. Outputs are poisoned before each
 * launch; the fused ops' inputs are fresh random draws each run (seed
 * printed).
 *   meson test -C build --suite gpu test_kernels_engine_ops */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvs_test_gpu.h"
#include "kvs_test_opts.h"
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
    KVS_REQUIRE(kvs_eng_cuda_kv_finish(pool, ds, dr, dw, dp, dpos, B, 1e-5f, 1e6f, kvs_test_opts(),
                                       NULL) == KVS_STATUS_OK);
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

/* A fresh seed per run (KVS_TEST_SEED=N repeats one), printed. */
static uint64_t fresh_seed(const char *what)
{
    const char *env = getenv("KVS_TEST_SEED");
    uint64_t s = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    fprintf(stderr, "%s: seed %llu (rerun with KVS_TEST_SEED=%llu)\n", what,
            (unsigned long long)s, (unsigned long long)s);
    return s;
}

static float unif(uint64_t *st, float lo, float hi)
{
    return lo + (hi - lo) * (float)((kvs_test_rand(st) >> 40) * 0x1p-24);
}

/* kv_finish with q_a's norm in the same launch: the KV rows as test_kv_finish
 * checks them, q_out against kvs_cpu_rmsnorm (float math in another order:
 * a value may land one BF16 step away), on fresh random inputs with an odd
 * batch, GLM-5's q_a width and the tiny model's, outputs poisoned; the
 * fusion's limits refused. */
static void test_kv_finish_qnorm(void)
{
    enum { B = 3, CAP = 40 };
    uint64_t st = fresh_seed("kv_finish_qnorm");
    const int dims[] = {2048, 128, 4096, 8 * 37};
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++) {
        const int QD = dims[di];
        kvs_bf16 raw[B * 512], rope[B * 64], w[512];
        int32_t slot[B] = {5, 39, 0}, pos[B];
        for (int b = 0; b < B; b++)
            pos[b] = (int32_t)(kvs_test_rand(&st) % 200000);
        for (int i = 0; i < B * 512; i++)
            raw[i] = kvs_float_to_bf16(unif(&st, -3.f, 3.f));
        for (int i = 0; i < B * 64; i++)
            rope[i] = kvs_float_to_bf16(unif(&st, -100.f, 100.f));
        for (int i = 0; i < 512; i++)
            w[i] = kvs_float_to_bf16(unif(&st, 0.9f, 1.1f));
        kvs_bf16 *q = malloc((size_t)B * QD * 2), *qw = malloc((size_t)QD * 2);
        kvs_bf16 *qwant = malloc((size_t)B * QD * 2), *qgot = malloc((size_t)B * QD * 2);
        for (int i = 0; i < B * QD; i++) /* rows of different scales */
            q[i] = kvs_float_to_bf16(unif(&st, -1.f, 1.f) * (float)(1 + 10 * (i / QD)));
        for (int i = 0; i < QD; i++)
            qw[i] = kvs_float_to_bf16(unif(&st, 0.5f, 1.5f));
        kvs_fp8 *want = malloc(CAP * 576), *got = malloc(CAP * 576);
        kvs_eng_cpu_fill_kv(want, CAP, kvs_test_rand(&st));
        kvs_fp8 *pool = up(want, CAP * 576);
        kvs_bf16 *dr = up(raw, sizeof raw), *dp = up(rope, sizeof rope), *dw = up(w, sizeof w);
        kvs_bf16 *dq = up(q, (size_t)B * QD * 2), *dqw = up(qw, (size_t)QD * 2);
        kvs_bf16 *dqo = dev((size_t)B * QD * 2); /* poisoned */
        int32_t *ds = up(slot, sizeof slot), *dpos = up(pos, sizeof pos);
        kvs_eng_cpu_kv_finish(want, slot, raw, w, rope, pos, B, 1e-5f, 1e6f);
        kvs_cpu_rmsnorm(q, qw, qwant, B, QD, 1e-5f);
        KVS_REQUIRE(kvs_eng_cuda_kv_finish_qnorm_supported(dq, dqw, dqo, QD));
        KVS_REQUIRE(kvs_eng_cuda_kv_finish_qnorm(pool, ds, dr, dw, dp, dpos, B, 1e-5f, 1e6f, dq,
                                                 dqw, dqo, QD, kvs_test_opts(),
                                                 NULL) == KVS_STATUS_OK);
        down(got, pool, CAP * 576);
        down(qgot, dqo, (size_t)B * QD * 2);
        int off = 0, far = 0;
        for (int i = 0; i < CAP * 576; i++) {
            if (want[i] == got[i])
                continue;
            off++;
            int mw = want[i] & 0x7f, mg = got[i] & 0x7f;
            far += (want[i] & 0x80) != (got[i] & 0x80) || (mw - mg != 1 && mg - mw != 1);
        }
        KVS_CHECK_MSG(far == 0 && off <= B * 576 / 100, "q_dim %d: %d KV codes differ, %d by "
                      "more than one step", QD, off, far);
        int qdiff = 0;
        double num = 0.0, den = 0.0;
        for (int i = 0; i < B * QD; i++) {
            double g = kvs_bf16_to_float(qgot[i]), r = kvs_bf16_to_float(qwant[i]);
            KVS_REQUIRE(isfinite(g));
            qdiff += qgot[i] != qwant[i];
            num += (g - r) * (g - r);
            den += r * r;
        }
        KVS_CHECK_MSG(sqrt(num / den) < 1e-3 && qdiff <= B * QD / 50,
                      "q_dim %d: q norm normalized error %.3g, %d of %d values differ", QD,
                      sqrt(num / den), qdiff, B * QD);
        cudaFree(pool);
        cudaFree(dr);
        cudaFree(dp);
        cudaFree(dw);
        cudaFree(dq);
        cudaFree(dqw);
        cudaFree(dqo);
        cudaFree(ds);
        cudaFree(dpos);
        free(q);
        free(qw);
        free(qwant);
        free(qgot);
        free(want);
        free(got);
    }
    /* outside the fusion's limits: refused, nothing launched */
    kvs_bf16 *d16 = dev(4096 * 2 * 2);
    KVS_CHECK(!kvs_eng_cuda_kv_finish_qnorm_supported(d16, d16, d16, 4104));
    KVS_CHECK(!kvs_eng_cuda_kv_finish_qnorm_supported(d16, d16, d16, 100));
    KVS_CHECK(!kvs_eng_cuda_kv_finish_qnorm_supported(d16 + 1, d16, d16, 128));
    cudaFree(d16);
}

/* A token whose top-(k+1) keys (sigmoid + bias) hold two values closer
 * than float rounding can separate but not equal: the CPU's expf and the
 * GPU's may order them differently, so the CPU comparison skips it. */
static int near_tie(const float *l, const float *bias, int E, int K)
{
    float top[33];
    int n = 0;
    for (int e = 0; e < E; e++) {
        float k = 1.0f / (1.0f + expf(-l[e])) + bias[e];
        int i;
        if (n < K + 1)
            i = n++;
        else if (k > top[K])
            i = K;
        else
            continue;
        top[i] = k;
        for (; i > 0 && top[i] > top[i - 1]; i--) {
            float t = top[i];
            top[i] = top[i - 1];
            top[i - 1] = t;
        }
    }
    for (int i = 1; i < n; i++)
        if (top[i] != top[i - 1] && top[i - 1] - top[i] < 1e-6f * fabsf(top[i - 1]))
            return 1;
    return 0;
}

/* The router fused with the expert map: bit for bit the unfused GPU ops
 * (kvs_cuda_moe_route, then kvs_eng_cuda_map_experts), and against the CPU
 * references (kvs_cpu_moe_route, then kvs_eng_cpu_map_experts): ids exact,
 * weights within 1e-5 relative, tokens with near-ties skipped (see near_tie).
 * Fresh random logits and biases with exact ties injected (the lower index
 * must win), GLM-5's 256 experts and the tiny model's 8, several resident
 * counts, outputs poisoned. */
static void test_route_map(void)
{
    uint64_t st = fresh_seed("route_map");
    const char *cfgs[] = {"glm5", "tiny"};
    for (int ci = 0; ci < 2; ci++) {
        struct kvs_model_config c;
        KVS_REQUIRE(kvs_model_config_load(cfgs[ci], &c, NULL) == KVS_STATUS_OK);
        const int E = c.n_routed_experts, K = c.topk, T = 37;
        KVS_REQUIRE(K <= 32);
        float *logits = malloc(sizeof(float) * T * E), *bias = malloc(sizeof(float) * E);
        for (int i = 0; i < T * E; i++)
            logits[i] = unif(&st, -4.f, 4.f);
        for (int e = 0; e < E; e++)
            bias[e] = e % 3 ? unif(&st, -1.f / 32, 1.f / 32) : 0.f;
        for (int t = 0; t < T; t += 5) /* exact ties among experts 0, 3, 6, ... */
            for (int e = 0; e < E; e += 3)
                logits[t * E + e] = 3.75f;
        int32_t *ids = malloc(sizeof(int32_t) * T * K);
        float *w = malloc(sizeof(float) * T * K);
        kvs_cpu_moe_route(logits, bias, T, E, K, c.norm_topk, c.routed_scale, ids, w);
        float *dl = up(logits, sizeof(float) * T * E), *db = up(bias, sizeof(float) * E);
        int32_t *dti = dev(sizeof(int32_t) * T * K);
        float *dtw = dev(sizeof(float) * T * K);
        KVS_REQUIRE(kvs_cuda_moe_route(dl, db, T, E, K, c.norm_topk, c.routed_scale, dti, dtw,
                                       kvs_test_opts(), NULL) == KVS_STATUS_OK);
        int skipped = 0;
        for (int t = 0; t < T; t++)
            skipped += near_tie(logits + (size_t)t * E, bias, E, K);
        KVS_CHECK_MSG(skipped <= T / 4, "%s: %d of %d tokens near a tie", cfgs[ci], skipped, T);
        for (int resident = K;; resident *= 4) {
            if (resident > E)
                resident = E;
            struct kvs_expert_map m;
            KVS_REQUIRE(kvs_expert_map_init(&c, resident, &m) == KVS_STATUS_OK);
            const int ke = K + m.shared;
            const size_t n = (size_t)T * ke;
            int32_t *want = malloc(sizeof(int32_t) * n), *got = malloc(sizeof(int32_t) * n);
            int32_t *unf = malloc(sizeof(int32_t) * n);
            float *ww = malloc(sizeof(float) * n), *gw = malloc(sizeof(float) * n);
            float *uw = malloc(sizeof(float) * n);
            KVS_REQUIRE(kvs_eng_cpu_map_experts(&m, ids, w, T, want, ww) == KVS_STATUS_OK);
            int32_t *doi = dev(sizeof(int32_t) * n), *dui = dev(sizeof(int32_t) * n);
            float *dow = dev(sizeof(float) * n), *duw = dev(sizeof(float) * n);
            KVS_REQUIRE(kvs_eng_cuda_route_map(&m, dl, db, T, c.norm_topk, c.routed_scale, doi, dow,
                                               kvs_test_opts(), NULL) == KVS_STATUS_OK);
            KVS_REQUIRE(kvs_eng_cuda_map_experts(&m, dti, dtw, T, dui, duw, NULL) ==
                        KVS_STATUS_OK);
            down(got, doi, sizeof(int32_t) * n);
            down(gw, dow, sizeof(float) * n);
            down(unf, dui, sizeof(int32_t) * n);
            down(uw, duw, sizeof(float) * n);
            KVS_CHECK_MSG(memcmp(got, unf, sizeof(int32_t) * n) == 0 &&
                              memcmp(gw, uw, sizeof(float) * n) == 0,
                          "%s, %d resident: fused and unfused GPU ops differ", cfgs[ci], resident);
            int bad_id = 0, bad_w = 0;
            for (int t = 0; t < T; t++) {
                if (near_tie(logits + (size_t)t * E, bias, E, K))
                    continue;
                for (int k = 0; k < ke; k++) {
                    size_t i = (size_t)t * ke + k;
                    bad_id += want[i] != got[i];
                    bad_w += !(fabsf(gw[i] - ww[i]) <= 1e-5f * fabsf(ww[i]) + 1e-7f);
                }
            }
            KVS_CHECK_MSG(bad_id == 0 && bad_w == 0,
                          "%s, %d resident: %d ids and %d weights differ from the CPU (%d "
                          "tokens skipped)", cfgs[ci], resident, bad_id, bad_w, skipped);
            cudaFree(doi);
            cudaFree(dow);
            cudaFree(dui);
            cudaFree(duw);
            free(want);
            free(got);
            free(unf);
            free(ww);
            free(gw);
            free(uw);
            if (resident == E)
                break;
        }
        cudaFree(dl);
        cudaFree(db);
        cudaFree(dti);
        cudaFree(dtw);
        free(logits);
        free(bias);
        free(ids);
        free(w);
    }
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
        {"kv_finish_qnorm", test_kv_finish_qnorm},
        {"map_experts", test_map_experts},
        {"route_map", test_route_map},
        {"seq_step", test_seq_step},
        {"linear_f32", test_linear_f32},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
