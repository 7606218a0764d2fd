/* kernels/tests/gpu/test_kernels_ops.c — the decode-step ops on the GPU
 * against their CPU references on fresh random inputs with odd sizes and
 * poisoned outputs: RMSNorm, RoPE, SwiGLU, add, embedding, argmax, the MoE
 * router and experts, and the cuBLAS projections. Tolerances:
 * docs/kernels.md.
 *
 *   meson test -C build --suite gpu test_kernels_ops
 */
#include "kvs_kernel_test.h"

#define TOL_BF16 1e-2 /* normalized error, BF16 outputs of float math */

static uint64_t g_seed;

static kvs_bf16 *rand_bf16(uint64_t *st, size_t n, float lo, float hi)
{
    kvs_bf16 *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++)
        h[i] = kvs_float_to_bf16(kt_unif(st, lo, hi));
    return h;
}

static kvs_bf16 *to_dev_bf16(const kvs_bf16 *h, size_t n)
{
    kvs_bf16 *d = kt_dev(n * 2);
    kt_up(d, h, n * 2);
    return d;
}

static kvs_bf16 *poisoned(size_t n)
{
    kvs_bf16 *d = kt_dev(n * 2);
    KVS_TEST_CUDA(cudaMemset(d, 0xFF, n * 2));
    return d;
}

static void check_bf16(const char *what, const kvs_bf16 *d_out, const kvs_bf16 *ref, size_t n,
                       double tol)
{
    kvs_bf16 *got = malloc(n * 2);
    kt_down(got, d_out, n * 2);
    double e = kt_norm_err_bf16(got, ref, n);
    KVS_CHECK_MSG(e <= tol, "%s: normalized error %.3g > %.3g", what, e, tol);
    free(got);
}

static void test_rmsnorm(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    const int shapes[][2] = {{1, 6144}, {33, 6144}, {5, 7}, {2, 512}};
    for (int s = 0; s < 4; s++) {
        int T = shapes[s][0], D = shapes[s][1];
        kvs_bf16 *x = rand_bf16(&st, (size_t)T * D, -3, 3), *w = rand_bf16(&st, D, 0.5f, 1.5f);
        kvs_bf16 *ref = malloc((size_t)T * D * 2);
        kvs_cpu_rmsnorm(x, w, ref, T, D, 1e-5f);
        kvs_bf16 *dx = to_dev_bf16(x, (size_t)T * D), *dw = to_dev_bf16(w, D), *dy = poisoned((size_t)T * D);
        KVS_CHECK_EQ_INT(kvs_cuda_rmsnorm(dx, dw, dy, T, D, 1e-5f, NULL), KVS_STATUS_OK);
        check_bf16("rmsnorm", dy, ref, (size_t)T * D, TOL_BF16);
        free(x), free(w), free(ref), cudaFree(dx), cudaFree(dw), cudaFree(dy);
    }
}

static void test_rope(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    /* q: [T, 64 heads, 256] with rope on 192..255; k_pe: [T, 1, 64] */
    const int cfg[][4] = {{33, 64, 256, 192}, {1, 1, 64, 0}, {7, 3, 576, 512}};
    for (int c = 0; c < 3; c++) {
        int T = cfg[c][0], H = cfg[c][1], S = cfg[c][2], off = cfg[c][3];
        size_t n = (size_t)T * H * S;
        kvs_bf16 *x = rand_bf16(&st, n, -2, 2), *ref = malloc(n * 2);
        int32_t *pos = malloc(T * sizeof *pos);
        for (int t = 0; t < T; t++)
            pos[t] = (int32_t)(kvs_test_rand(&st) % 131072);
        memcpy(ref, x, n * 2);
        kvs_cpu_rope_interleaved(ref, pos, T, H, S, off, 64, 1e6f);
        kvs_bf16 *dx = to_dev_bf16(x, n);
        int32_t *dp = kt_dev(T * sizeof *pos);
        kt_up(dp, pos, T * sizeof *pos);
        KVS_CHECK_EQ_INT(kvs_cuda_rope_interleaved(dx, dp, T, H, S, off, 64, 1e6f, NULL),
                         KVS_STATUS_OK);
        check_bf16("rope", dx, ref, n, TOL_BF16);
        free(x), free(ref), free(pos), cudaFree(dx), cudaFree(dp);
    }
}

static void test_swiglu_add_embedding(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    const int shapes[][2] = {{33, 2048}, {3, 7}};
    for (int s = 0; s < 2; s++) {
        int T = shapes[s][0], I = shapes[s][1];
        kvs_bf16 *gu = rand_bf16(&st, (size_t)T * 2 * I, -4, 4), *ref = malloc((size_t)T * I * 2);
        kvs_cpu_swiglu(gu, ref, T, I);
        kvs_bf16 *dg = to_dev_bf16(gu, (size_t)T * 2 * I), *dy = poisoned((size_t)T * I);
        KVS_CHECK_EQ_INT(kvs_cuda_swiglu(dg, dy, T, I, NULL), KVS_STATUS_OK);
        check_bf16("swiglu", dy, ref, (size_t)T * I, TOL_BF16);
        free(gu), free(ref), cudaFree(dg), cudaFree(dy);
    }
    /* add: one rounding of an exact sum, so bit-exact; 16-byte and odd paths */
    const size_t sizes[] = {33 * 6144, 6144 + 5};
    for (int s = 0; s < 2; s++) {
        size_t n = sizes[s];
        kvs_bf16 *x = rand_bf16(&st, n, -8, 8), *y = rand_bf16(&st, n, -8, 8);
        kvs_bf16 *dx = to_dev_bf16(x, n), *dy = to_dev_bf16(y, n), *got = malloc(n * 2);
        KVS_CHECK_EQ_INT(kvs_cuda_add(dx, dy, n, NULL), KVS_STATUS_OK);
        kvs_cpu_add(x, y, n);
        kt_down(got, dx, n * 2);
        KVS_CHECK_MSG(memcmp(got, x, n * 2) == 0, "add n=%zu differs", n);
        free(x), free(y), free(got), cudaFree(dx), cudaFree(dy);
    }
    /* embedding: copies */
    const int dims[] = {6144, 7};
    for (int s = 0; s < 2; s++) {
        int V = 1000, D = dims[s], T = 33;
        kvs_bf16 *table = rand_bf16(&st, (size_t)V * D, -1, 1), *ref = malloc((size_t)T * D * 2);
        int32_t ids[33];
        for (int t = 0; t < T; t++)
            ids[t] = (int32_t)(kvs_test_rand(&st) % V);
        kvs_cpu_embedding(table, ids, ref, T, D);
        kvs_bf16 *dt = to_dev_bf16(table, (size_t)V * D), *dy = poisoned((size_t)T * D);
        int32_t *di = kt_dev(sizeof ids);
        kt_up(di, ids, sizeof ids);
        KVS_CHECK_EQ_INT(kvs_cuda_embedding(dt, di, dy, T, D, NULL), KVS_STATUS_OK);
        kvs_bf16 *got = malloc((size_t)T * D * 2);
        kt_down(got, dy, (size_t)T * D * 2);
        KVS_CHECK_MSG(memcmp(got, ref, (size_t)T * D * 2) == 0, "embedding dim=%d differs", D);
        free(table), free(ref), free(got), cudaFree(dt), cudaFree(dy), cudaFree(di);
    }
}

static void test_argmax(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    const int T = 33, V = 154880;
    float *l = malloc((size_t)T * V * sizeof *l);
    for (size_t i = 0; i < (size_t)T * V; i++)
        l[i] = kt_unif(&st, -10, 10);
    /* row 1: a tie between two maxima; row 2: NaN wins; row 3: the last index */
    l[(size_t)1 * V + 777] = 50.f, l[(size_t)1 * V + 90000] = 50.f;
    l[(size_t)2 * V + 12345] = NAN, l[(size_t)2 * V + 5] = 99.f;
    l[(size_t)3 * V + V - 1] = 60.f;
    int32_t ref[33], got[33];
    kvs_cpu_argmax(l, T, V, ref);
    float *dl = kt_dev((size_t)T * V * sizeof *l);
    int32_t *di = kt_dev(sizeof got);
    kt_up(dl, l, (size_t)T * V * sizeof *l);
    KVS_TEST_CUDA(cudaMemset(di, 0xFF, sizeof got));
    KVS_CHECK_EQ_INT(kvs_cuda_argmax(dl, T, V, di, NULL), KVS_STATUS_OK);
    kt_down(got, di, sizeof got);
    KVS_CHECK_EQ_INT(ref[1], 777);
    KVS_CHECK_EQ_INT(ref[2], 12345);
    for (int t = 0; t < T; t++)
        KVS_CHECK_MSG(got[t] == ref[t], "argmax row %d: %d, reference %d", t, got[t], ref[t]);
    free(l), cudaFree(dl), cudaFree(di);
}

static void test_router(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    const int T = 33, E = 256, K = 8;
    float *logits = malloc((size_t)T * E * sizeof(float)), bias[256];
    for (int i = 0; i < T * E; i++)
        logits[i] = kt_unif(&st, -4, 4);
    for (int e = 0; e < E; e++)
        bias[e] = kt_unif(&st, -0.1f, 0.1f);
    int32_t ids[33 * 8], rid[33 * 8];
    float w[33 * 8], rw[33 * 8];
    kvs_cpu_moe_route(logits, bias, T, E, K, 1, 2.5f, rid, rw);
    float *dl = kt_dev(sizeof(float) * T * E), *db = kt_dev(sizeof bias), *dw = kt_dev(sizeof w);
    int32_t *di = kt_dev(sizeof ids);
    kt_up(dl, logits, sizeof(float) * T * E);
    kt_up(db, bias, sizeof bias);
    KVS_TEST_CUDA(cudaMemset(di, 0xFF, sizeof ids));
    KVS_TEST_CUDA(cudaMemset(dw, 0xFF, sizeof w));
    KVS_CHECK_EQ_INT(kvs_cuda_moe_route(dl, db, T, E, K, 1, 2.5f, di, dw, NULL), KVS_STATUS_OK);
    kt_down(ids, di, sizeof ids);
    kt_down(w, dw, sizeof w);
    int bad = 0;
    for (int i = 0; i < T * K; i++)
        bad += ids[i] != rid[i] || !(fabsf(w[i] - rw[i]) <= 1e-5f * fabsf(rw[i]) + 1e-7f);
    KVS_CHECK_MSG(bad == 0, "router: %d of %d (id, weight) differ", bad, T * K);
    free(logits), cudaFree(dl), cudaFree(db), cudaFree(dw), cudaFree(di);
}

static void test_experts(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    /* {tokens, dim, inter, n_resident}; dim 36 / inter 20 take the element path */
    const int cfg[][4] = {{1, 256, 64, 16}, {5, 512, 128, 12}, {3, 36, 20, 9}};
    for (int c = 0; c < 3; c++)
        for (int acc = 0; acc < 2; acc++) {
            int T = cfg[c][0], D = cfg[c][1], I = cfg[c][2], R = cfg[c][3], K = 8;
            kvs_bf16 *x = rand_bf16(&st, (size_t)T * D, -1, 1);
            kvs_bf16 *gu = rand_bf16(&st, (size_t)R * 2 * I * D, -0.2f, 0.2f);
            kvs_bf16 *dn = rand_bf16(&st, (size_t)R * D * I, -0.2f, 0.2f);
            kvs_bf16 *y0 = rand_bf16(&st, (size_t)T * D, -1, 1), *ref = malloc((size_t)T * D * 2);
            memcpy(ref, y0, (size_t)T * D * 2);
            int32_t *ids = malloc((size_t)T * K * sizeof *ids);
            float *wts = malloc((size_t)T * K * sizeof *wts);
            for (int t = 0; t < T; t++)
                for (int k = 0; k < K; k++) { /* distinct experts per token */
                    ids[t * K + k] = (int32_t)((t * 5 + k * 1 + (int)(kvs_test_rand(&st) % 2)) % R);
                    for (int j = 0; j < k; j++)
                        if (ids[t * K + j] == ids[t * K + k])
                            ids[t * K + k] = (ids[t * K + k] + 1) % R, j = -1;
                    wts[t * K + k] = kt_unif(&st, 0.05f, 0.5f);
                }
            struct kvs_moe_args a = {
                .tokens = T, .dim = D, .inter = I, .topk = K, .n_resident = R, .x = x, .ids = ids,
                .weights = wts, .gate_up = gu, .down = dn, .y = ref, .accumulate = acc,
            };
            kvs_cpu_moe_experts(&a);
            struct kvs_moe_args d = a;
            d.x = to_dev_bf16(x, (size_t)T * D);
            d.gate_up = to_dev_bf16(gu, (size_t)R * 2 * I * D);
            d.down = to_dev_bf16(dn, (size_t)R * D * I);
            int32_t *dids = kt_dev((size_t)T * K * sizeof *ids);
            float *dw = kt_dev((size_t)T * K * sizeof *wts);
            kt_up(dids, ids, (size_t)T * K * sizeof *ids);
            kt_up(dw, wts, (size_t)T * K * sizeof *wts);
            d.ids = dids;
            d.weights = dw;
            d.y = acc ? to_dev_bf16(y0, (size_t)T * D) : poisoned((size_t)T * D);
            size_t wsb = kvs_cuda_moe_experts_workspace(T, K, I);
            void *ws = kt_dev(wsb);
            KVS_CHECK_EQ_INT(kvs_cuda_moe_experts(&d, ws, wsb, NULL), KVS_STATUS_OK);
            check_bf16(acc ? "moe_experts accumulate" : "moe_experts", d.y, ref, (size_t)T * D,
                       TOL_BF16);
            cudaFree((void *)d.x), cudaFree((void *)d.gate_up), cudaFree((void *)d.down);
            cudaFree(dids), cudaFree(dw), cudaFree(d.y), cudaFree(ws);
            free(x), free(gu), free(dn), free(y0), free(ref), free(ids), free(wts);
        }
}

static void test_gemm(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    struct kvs_gemm *g = NULL;
    KVS_REQUIRE(kvs_gemm_init(&g, NULL, NULL) == KVS_STATUS_OK);
    const int shapes[][3] = {{1, 2048, 6144}, {33, 576, 512}, {7, 13, 9}};
    for (int s = 0; s < 3; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        kvs_bf16 *x = rand_bf16(&st, (size_t)M * K, -1, 1), *w = rand_bf16(&st, (size_t)N * K, -1, 1);
        kvs_bf16 *ref = malloc((size_t)M * N * 2);
        kvs_cpu_linear(x, w, ref, M, N, K);
        kvs_bf16 *dx = to_dev_bf16(x, (size_t)M * K), *dw = to_dev_bf16(w, (size_t)N * K);
        kvs_bf16 *dy = poisoned((size_t)M * N);
        KVS_CHECK_EQ_INT(kvs_gemm_linear_bf16(g, dx, dw, dy, M, N, K), KVS_STATUS_OK);
        check_bf16("gemm", dy, ref, (size_t)M * N, TOL_BF16);
        free(x), free(w), free(ref), cudaFree(dx), cudaFree(dw), cudaFree(dy);
    }
    /* batched per-head: x rows are heads*K apart (x is [M, heads, K]), y [M, heads, N] */
    const int M = 3, Hh = 4, K = 192, N = 512;
    kvs_bf16 *x = rand_bf16(&st, (size_t)M * Hh * K, -1, 1), *w = rand_bf16(&st, (size_t)Hh * N * K, -1, 1);
    kvs_bf16 *ref = malloc((size_t)M * Hh * N * 2), *xi = malloc((size_t)M * K * 2), *yi = malloc((size_t)M * N * 2);
    for (int h = 0; h < Hh; h++) {
        for (int m = 0; m < M; m++)
            memcpy(xi + (size_t)m * K, x + ((size_t)m * Hh + h) * K, (size_t)K * 2);
        kvs_cpu_linear(xi, w + (size_t)h * N * K, yi, M, N, K);
        for (int m = 0; m < M; m++)
            memcpy(ref + ((size_t)m * Hh + h) * N, yi + (size_t)m * N, (size_t)N * 2);
    }
    kvs_bf16 *dx = to_dev_bf16(x, (size_t)M * Hh * K), *dw = to_dev_bf16(w, (size_t)Hh * N * K);
    kvs_bf16 *dy = poisoned((size_t)M * Hh * N);
    KVS_CHECK_EQ_INT(kvs_gemm_linear_batched_bf16(g, dx, (int64_t)Hh * K, K, dw, (int64_t)N * K, dy,
                                                  (int64_t)Hh * N, N, M, N, K, Hh),
                     KVS_STATUS_OK);
    check_bf16("gemm batched", dy, ref, (size_t)M * Hh * N, TOL_BF16);
    free(x), free(w), free(ref), free(xi), free(yi), cudaFree(dx), cudaFree(dw), cudaFree(dy);
    kvs_gemm_free(g);
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    g_seed = kt_seed("ops");
    static const struct kvs_test tests[] = {
        {"rmsnorm", test_rmsnorm},
        {"rope", test_rope},
        {"swiglu_add_embedding", test_swiglu_add_embedding},
        {"argmax", test_argmax},
        {"router", test_router},
        {"experts", test_experts},
        {"gemm", test_gemm},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
