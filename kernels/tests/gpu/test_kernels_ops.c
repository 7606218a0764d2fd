/* kernels/tests/gpu/test_kernels_ops.c — the decode-step ops on the GPU
 * against their CPU references on fresh random inputs with odd sizes and
 * poisoned outputs: RMSNorm (alone and after the residual add), RoPE, SwiGLU,
 * add, embedding, argmax, the MoE router and experts, the projections
 * (kvs_gemm in each mode) and the GEMV. Tolerances:
 * docs/kernels.md.
 *
 *   meson test -C build --suite gpu test_kernels_ops
 */
#include "kvs_kernel_test.h"

#define TOL_BF16 1e-2 /* normalized error, BF16 outputs of float math */

static uint64_t g_seed;

static kvs_bf16 *to_dev_bf16(const kvs_bf16 *h, size_t n)
{
    return kt_to_dev(h, n * 2);
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
    /* vector path: dims multiple of 8 up to 8192 (136: 17 chunks, a partial
     * warp); strided path: 7, 8200 */
    const int shapes[][2] = {{1, 6144}, {33, 6144}, {5, 7},    {2, 512},
                             {3, 136},  {2, 8192},  {2, 8200}};
    for (int s = 0; s < 7; s++) {
        int T = shapes[s][0], D = shapes[s][1];
        kvs_bf16 *x = kt_rand_bf16(&st, (size_t)T * D, -3, 3),
                 *w = kt_rand_bf16(&st, D, 0.5f, 1.5f);
        kvs_bf16 *ref = malloc((size_t)T * D * 2);
        kvs_cpu_rmsnorm(x, w, ref, T, D, 1e-5f);
        kvs_bf16 *dx = to_dev_bf16(x, (size_t)T * D), *dw = to_dev_bf16(w, D), *dy = poisoned((size_t)T * D);
        KVS_CHECK_EQ_INT(kvs_cuda_rmsnorm(dx, dw, dy, T, D, 1e-5f, kvs_test_opts(), NULL),
                         KVS_STATUS_OK);
        check_bf16("rmsnorm", dy, ref, (size_t)T * D, TOL_BF16);
        free(x), free(w), free(ref), cudaFree(dx), cudaFree(dw), cudaFree(dy);
    }
}

/* x += r then norm: x must equal kvs_cpu_add's (bit-exact: one rounding of an
 * exact sum), y the reference within the BF16 bound; both paths, and the
 * fallback for a misaligned residual. */
static void test_add_rmsnorm(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    const int shapes[][3] = {{1, 6144, 0}, {33, 6144, 0}, {4, 256, 0}, {5, 7, 0}, {3, 6144, 1}};
    for (int s = 0; s < 5; s++) {
        int T = shapes[s][0], D = shapes[s][1], mis = shapes[s][2];
        size_t n = (size_t)T * D;
        kvs_bf16 *x = kt_rand_bf16(&st, n, -3, 3), *r = kt_rand_bf16(&st, n, -3, 3);
        kvs_bf16 *w = kt_rand_bf16(&st, D, 0.5f, 1.5f), *ref = malloc(n * 2), *got = malloc(n * 2);
        kvs_bf16 *dx = to_dev_bf16(x, n), *dw = to_dev_bf16(w, D), *dy = poisoned(n);
        kvs_bf16 *dr_base = kt_dev(n * 2 + 2), *dr = dr_base + mis;
        kt_up(dr, r, n * 2);
        kvs_cpu_add_rmsnorm(x, r, w, ref, T, D, 1e-5f);
        KVS_CHECK_EQ_INT(kvs_cuda_add_rmsnorm(dx, dr, dw, dy, T, D, 1e-5f, kvs_test_opts(), NULL),
                         KVS_STATUS_OK);
        check_bf16("add_rmsnorm y", dy, ref, n, TOL_BF16);
        kt_down(got, dx, n * 2);
        KVS_CHECK_MSG(memcmp(got, x, n * 2) == 0, "add_rmsnorm x differs (T=%d D=%d)", T, D);
        free(x), free(r), free(w), free(ref), free(got);
        cudaFree(dx), cudaFree(dw), cudaFree(dy), cudaFree(dr_base);
    }
}

static void test_rope(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    /* q: [T, 64 heads, 256] with rope on 192..255; k_pe: [T, 1, 64]; the
     * engine's [T, 64, 64]; 160 heads (more chunks than one round of the
     * vector path); stride 70 / offset 6 take the strided path */
    const int cfg[][4] = {{33, 64, 256, 192}, {1, 1, 64, 0}, {7, 3, 576, 512},
                          {3, 64, 64, 0},     {2, 160, 64, 0}, {5, 2, 70, 6}};
    for (int c = 0; c < 6; c++) {
        int T = cfg[c][0], H = cfg[c][1], S = cfg[c][2], off = cfg[c][3];
        size_t n = (size_t)T * H * S;
        kvs_bf16 *x = kt_rand_bf16(&st, n, -2, 2), *ref = malloc(n * 2);
        int32_t *pos = malloc(T * sizeof *pos);
        for (int t = 0; t < T; t++)
            pos[t] = (int32_t)(kvs_test_rand(&st) % 131072);
        memcpy(ref, x, n * 2);
        kvs_cpu_rope_interleaved(ref, pos, T, H, S, off, 64, 1e6f);
        kvs_bf16 *dx = to_dev_bf16(x, n);
        int32_t *dp = kt_dev(T * sizeof *pos);
        kt_up(dp, pos, T * sizeof *pos);
        KVS_CHECK_EQ_INT(
            kvs_cuda_rope_interleaved(dx, dp, T, H, S, off, 64, 1e6f, kvs_test_opts(), NULL),
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
        kvs_bf16 *gu = kt_rand_bf16(&st, (size_t)T * 2 * I, -4, 4),
                 *ref = malloc((size_t)T * I * 2);
        kvs_cpu_swiglu(gu, ref, T, I);
        kvs_bf16 *dg = to_dev_bf16(gu, (size_t)T * 2 * I), *dy = poisoned((size_t)T * I);
        KVS_CHECK_EQ_INT(kvs_cuda_swiglu(dg, dy, T, I, kvs_test_opts(), NULL), KVS_STATUS_OK);
        check_bf16("swiglu", dy, ref, (size_t)T * I, TOL_BF16);
        free(gu), free(ref), cudaFree(dg), cudaFree(dy);
    }
    /* add: one rounding of an exact sum, so bit-exact; 16-byte and odd paths */
    const size_t sizes[] = {33 * 6144, 6144 + 5};
    for (int s = 0; s < 2; s++) {
        size_t n = sizes[s];
        kvs_bf16 *x = kt_rand_bf16(&st, n, -8, 8), *y = kt_rand_bf16(&st, n, -8, 8);
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
        kvs_bf16 *table = kt_rand_bf16(&st, (size_t)V * D, -1, 1), *ref = malloc((size_t)T * D * 2);
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
    KVS_CHECK_EQ_INT(kvs_cuda_argmax(dl, T, V, di, kvs_test_opts(), NULL), KVS_STATUS_OK);
    kt_down(got, di, sizeof got);
    KVS_CHECK_EQ_INT(ref[1], 777);
    KVS_CHECK_EQ_INT(ref[2], 12345);
    for (int t = 0; t < T; t++)
        KVS_CHECK_MSG(got[t] == ref[t], "argmax row %d: %d, reference %d", t, got[t], ref[t]);
    free(l), cudaFree(dl), cudaFree(di);

    /* the strided path: a vocab that is not a multiple of 4 */
    const int V2 = 1001;
    float *l2 = malloc((size_t)3 * V2 * sizeof *l2);
    for (size_t i = 0; i < (size_t)3 * V2; i++)
        l2[i] = kt_unif(&st, -10, 10);
    l2[1 * V2 + 3] = 20.f, l2[1 * V2 + 1000] = 20.f;
    kvs_cpu_argmax(l2, 3, V2, ref);
    dl = kt_dev((size_t)3 * V2 * sizeof *l2);
    di = kt_dev(3 * sizeof *got);
    kt_up(dl, l2, (size_t)3 * V2 * sizeof *l2);
    KVS_TEST_CUDA(cudaMemset(di, 0xFF, 3 * sizeof *got));
    KVS_CHECK_EQ_INT(kvs_cuda_argmax(dl, 3, V2, di, kvs_test_opts(), NULL), KVS_STATUS_OK);
    kt_down(got, di, 3 * sizeof *got);
    KVS_CHECK_EQ_INT(ref[1], 3);
    for (int t = 0; t < 3; t++)
        KVS_CHECK_MSG(got[t] == ref[t], "argmax (V=%d) row %d: %d, reference %d", V2, t, got[t],
                      ref[t]);
    free(l2), cudaFree(dl), cudaFree(di);
}

/* {tokens, experts, topk, bias, norm, ties}: ties > 0 gives that many
 * experts of each token the same logit (keys equal: the lower index wins) */
static void check_router(uint64_t *st, int T, int E, int K, int use_bias, int norm, int ties)
{
    float *logits = malloc((size_t)T * E * sizeof(float)), *bias = malloc((size_t)E * sizeof(float));
    for (int i = 0; i < T * E; i++)
        logits[i] = kt_unif(st, -4, 4);
    for (int e = 0; e < E; e++)
        bias[e] = use_bias ? kt_unif(st, -0.1f, 0.1f) : 0.f;
    if (ties)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < ties; j++) {
                logits[(size_t)t * E + (j * 37 + t) % E] = 3.5f;
                if (use_bias)
                    bias[(j * 37 + t) % E] = 0.f;
            }
    const size_t nk = (size_t)T * K;
    int32_t *ids = malloc(nk * sizeof *ids), *rid = malloc(nk * sizeof *rid);
    float *w = malloc(nk * sizeof *w), *rw = malloc(nk * sizeof *rw);
    kvs_cpu_moe_route(logits, use_bias ? bias : NULL, T, E, K, norm, 2.5f, rid, rw);
    float *dl = kt_dev(sizeof(float) * T * E), *db = kt_dev(sizeof(float) * E);
    float *dw = kt_dev(nk * sizeof *w);
    int32_t *di = kt_dev(nk * sizeof *ids);
    kt_up(dl, logits, sizeof(float) * T * E);
    kt_up(db, bias, sizeof(float) * E);
    KVS_TEST_CUDA(cudaMemset(di, 0xFF, nk * sizeof *ids));
    KVS_TEST_CUDA(cudaMemset(dw, 0xFF, nk * sizeof *w));
    KVS_CHECK_EQ_INT(kvs_cuda_moe_route(dl, use_bias ? db : NULL, T, E, K, norm, 2.5f, di, dw,
                                        kvs_test_opts(), NULL),
                     KVS_STATUS_OK);
    kt_down(ids, di, nk * sizeof *ids);
    kt_down(w, dw, nk * sizeof *w);
    int bad = 0;
    for (size_t i = 0; i < nk; i++)
        bad += ids[i] != rid[i] || !(fabsf(w[i] - rw[i]) <= 1e-5f * fabsf(rw[i]) + 1e-7f);
    KVS_CHECK_MSG(bad == 0, "router T=%d E=%d K=%d bias=%d norm=%d ties=%d: %d of %zu differ", T,
                  E, K, use_bias, norm, ties, bad, nk);
    free(logits), free(bias), free(ids), free(rid), free(w), free(rw);
    cudaFree(dl), cudaFree(db), cudaFree(dw), cudaFree(di);
}

static void test_router(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    check_router(&st, 33, 256, 8, 1, 1, 0);  /* GLM-5 */
    check_router(&st, 5, 256, 8, 1, 1, 12);  /* ties across the top-8 boundary */
    check_router(&st, 4, 8, 2, 1, 1, 0);     /* the tiny config */
    check_router(&st, 3, 64, 6, 0, 0, 3);    /* no bias, no normalisation */
    check_router(&st, 2, 200, 32, 1, 1, 0);  /* top-k = a warp */
    check_router(&st, 3, 300, 8, 1, 1, 0);   /* > 256 experts: the shared-memory kernel */
}

static void test_experts(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    /* {tokens, dim, inter, n_resident}; dim 36 / inter 20 take the element path */
    const int cfg[][4] = {{1, 256, 64, 16}, {5, 512, 128, 12}, {3, 36, 20, 9}};
    for (int c = 0; c < 3; c++)
        for (int acc = 0; acc < 2; acc++) {
            int T = cfg[c][0], D = cfg[c][1], I = cfg[c][2], R = cfg[c][3], K = 8;
            kvs_bf16 *x = kt_rand_bf16(&st, (size_t)T * D, -1, 1);
            kvs_bf16 *gu = kt_rand_bf16(&st, (size_t)R * 2 * I * D, -0.2f, 0.2f);
            kvs_bf16 *dn = kt_rand_bf16(&st, (size_t)R * D * I, -0.2f, 0.2f);
            kvs_bf16 *y0 = kt_rand_bf16(&st, (size_t)T * D, -1, 1),
                     *ref = malloc((size_t)T * D * 2);
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
            KVS_CHECK_EQ_INT(kvs_cuda_moe_experts(&d, ws, wsb, kvs_test_opts(), NULL),
                             KVS_STATUS_OK);
            check_bf16(acc ? "moe_experts accumulate" : "moe_experts", d.y, ref, (size_t)T * D,
                       TOL_BF16);
            cudaFree((void *)d.x), cudaFree((void *)d.gate_up), cudaFree((void *)d.down);
            cudaFree(dids), cudaFree(dw), cudaFree(d.y), cudaFree(ws);
            free(x), free(gu), free(dn), free(y0), free(ref), free(ids), free(wts);
        }
}

/* kvs_gemm in one mode: every shape through whatever the mode picks */
static void test_gemm_mode(struct kvs_gemm *g, uint64_t *stp, enum kvs_gemm_mode mode)
{
    static const char *const mode_name[] = {"gemm auto", "gemm cublas", "gemm gemv"};
    uint64_t st = kvs_test_rand(stp);
    kvs_gemm_set_mode(g, mode);
    const int shapes[][3] = {{1, 2048, 6144}, {33, 576, 512}, {7, 13, 9}, {4, 576, 6144}};
    for (int s = 0; s < 4; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        kvs_bf16 *x = kt_rand_bf16(&st, (size_t)M * K, -1, 1),
                 *w = kt_rand_bf16(&st, (size_t)N * K, -1, 1);
        kvs_bf16 *ref = malloc((size_t)M * N * 2);
        kvs_cpu_linear(x, w, ref, M, N, K);
        kvs_bf16 *dx = to_dev_bf16(x, (size_t)M * K), *dw = to_dev_bf16(w, (size_t)N * K);
        kvs_bf16 *dy = poisoned((size_t)M * N);
        KVS_CHECK_EQ_INT(kvs_gemm_linear_bf16(g, dx, dw, dy, M, N, K), KVS_STATUS_OK);
        check_bf16(mode_name[mode], dy, ref, (size_t)M * N, TOL_BF16);
        free(x), free(w), free(ref), cudaFree(dx), cudaFree(dw), cudaFree(dy);
    }
    /* batched per-head: x rows are heads*K apart (x is [M, heads, K]), y [M, heads, N] */
    const int M = 3, Hh = 4, K = 192, N = 512;
    kvs_bf16 *x = kt_rand_bf16(&st, (size_t)M * Hh * K, -1, 1),
             *w = kt_rand_bf16(&st, (size_t)Hh * N * K, -1, 1);
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
    check_bf16(mode_name[mode], dy, ref, (size_t)M * Hh * N, TOL_BF16);
    free(x), free(w), free(ref), free(xi), free(yi), cudaFree(dx), cudaFree(dw), cudaFree(dy);
}

static void test_gemm(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    struct kvs_gemm *g = NULL;
    KVS_REQUIRE(kvs_gemm_init(&g, NULL, NULL) == KVS_STATUS_OK);
    for (int mode = KVS_GEMM_AUTO; mode <= KVS_GEMM_GEMV; mode++)
        test_gemm_mode(g, &st, (enum kvs_gemm_mode)mode);
    kvs_gemm_free(g);
}

/* GEMV (kvs_cuda_gemv_bf16) against the CPU: several outputs of one x, float
 * and BF16 outputs, the batched per-head form, row counts 1..8, short rows
 * (fewer lanes per row) and few rows (k split across warps); kvs_gemm in each
 * mode. */
static void ref_linear_f(const kvs_bf16 *x, int64_t ldx, const kvs_bf16 *w, float *y, int64_t ldy,
                         int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int l = 0; l < k; l++)
                acc += (double)kvs_bf16_to_float(x[(size_t)i * ldx + l]) *
                       kvs_bf16_to_float(w[(size_t)j * k + l]);
            y[(size_t)i * ldy + j] = (float)acc;
        }
}

static void test_gemv(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    /* 6144 = the hidden size (k split for few rows), 2048 = q_lora, 192 =
     * nope (8 lanes a row), 64 (4 lanes), 8 (1 lane) */
    static const struct kt_gemv_case cases[] = {
        {1, 6144, {2048, 512, 64}, 0}, {3, 2048, {1000, 96, 0}, 0}, {8, 6144, {256, 0, 0}, 1},
        {5, 192, {512, 0, 0}, 0},      {2, 64, {33, 7, 0}, 1},      {7, 8, {40, 0, 0}, 0},
        {4, 6144, {24, 0, 0}, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int m = cases[c].m, k = cases[c].k, f32 = cases[c].f32;
        int ldx, nout = 0;
        struct kvs_gemv_out o[3];
        kvs_bf16 *hw[3];
        kvs_bf16 *dx, *x = kt_gemv_x(&st, &cases[c], &ldx, &dx);
        for (int i = 0; i < 3 && cases[c].n[i]; i++, nout++) {
            int n = cases[c].n[i];
            hw[i] = kt_rand_bf16(&st, (size_t)n * k, -0.1f, 0.1f);
            o[i].w = to_dev_bf16(hw[i], (size_t)n * k);
            o[i].n = n;
            o[i].ldy = n + 3;
            o[i].y = kt_dev((size_t)m * o[i].ldy * 4);
            KVS_TEST_CUDA(cudaMemset(o[i].y, 0xFF, (size_t)m * o[i].ldy * 4));
        }
        KVS_CHECK(kvs_cuda_gemv_supported(dx, ldx, m, k, o, nout, 1, 0, 0));
        KVS_CHECK_EQ_INT(
            kvs_cuda_gemv_bf16(dx, ldx, m, k, o, nout, f32, 1, 0, 0, 0, kvs_test_opts(), NULL),
            KVS_STATUS_OK);
        for (int i = 0; i < nout; i++) {
            size_t ny = (size_t)m * o[i].ldy;
            float *ref = malloc(ny * 4), *got = malloc(ny * 4);
            ref_linear_f(x, ldx, hw[i], ref, o[i].ldy, m, o[i].n, k);
            kt_down(got, o[i].y, ny * 4);
            int gaps_kept;
            const double err = kt_gemv_err(got, ref, f32, m, o[i].n, o[i].ldy, &gaps_kept);
            KVS_CHECK_MSG(err <= (f32 ? 1e-5 : TOL_BF16) && gaps_kept,
                          "gemv cfg %zu out %d (m=%d k=%d n=%d f32=%d): error %.3g, gaps %d", c,
                          i, m, k, o[i].n, f32, err, gaps_kept);
            free(ref), free(got);
        }
        for (int i = 0; i < nout; i++)
            free(hw[i]), cudaFree((void *)o[i].w), cudaFree(o[i].y);
        free(x), cudaFree(dx);
    }
    /* refusals: k not a multiple of 8, m too large, misaligned x */
    struct kvs_gemv_out o1 = {(const kvs_bf16 *)256, (void *)256, 4, 4};
    KVS_CHECK(!kvs_cuda_gemv_supported((const kvs_bf16 *)256, 12, 1, 12, &o1, 1, 1, 0, 0));
    KVS_CHECK(!kvs_cuda_gemv_supported((const kvs_bf16 *)256, 16, 9, 16, &o1, 1, 1, 0, 0));
    KVS_CHECK(!kvs_cuda_gemv_supported((const kvs_bf16 *)258, 16, 1, 16, &o1, 1, 1, 0, 0));
    KVS_CHECK_EQ_INT(kvs_cuda_gemv_bf16((const kvs_bf16 *)256, 12, 1, 12, &o1, 1, 0, 1, 0, 0, 0,
                                        kvs_test_opts(), NULL),
                     KVS_STATUS_UNSUPPORTED);
}

/* GEMV with the rope epilogue (kvs_cuda_gemv_bf16_rope): bit for bit the
 * plain GEMV followed by kvs_cuda_rope_interleaved on fresh random data and
 * positions up to 10^5, for q_b's shape (k 2048, one row a warp), short rows
 * (several rows a warp: the pair in one warp), few rows (k split across
 * warps) and m up to 8; outputs poisoned; refused when the rope output starts
 * on an odd row. */
static void test_gemv_rope(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    /* {m, k, rows of output 0, heads of 64 in output 1}; 128 rows of k 2048:
     * k split over 4 warps (the most k 2048 allows), 2 rows a block */
    const int cfg[][4] = {{1, 2048, 1536, 8}, {3, 64, 40, 3}, {8, 2048, 64, 1}, {5, 192, 2, 2}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        const int m = cfg[c][0], k = cfg[c][1], n0 = cfg[c][2], heads = cfg[c][3];
        const int nr = heads * 64;
        kvs_bf16 *x = kt_rand_bf16(&st, (size_t)m * k, -1, 1), *dx = to_dev_bf16(x, (size_t)m * k);
        kvs_bf16 *w0 = n0 ? kt_rand_bf16(&st, (size_t)n0 * k, -0.1f, 0.1f) : NULL;
        kvs_bf16 *w1 = kt_rand_bf16(&st, (size_t)nr * k, -0.1f, 0.1f);
        int32_t pos[8];
        for (int i = 0; i < m; i++)
            pos[i] = (int32_t)(kvs_test_rand(&st) % 100001);
        int32_t *dpos = kt_dev(sizeof pos);
        KVS_TEST_CUDA(cudaMemcpy(dpos, pos, sizeof pos, cudaMemcpyHostToDevice));
        struct kvs_gemv_out o[2][2];
        int nout = 0;
        for (int v = 0; v < 2; v++) { /* v 0: fused; v 1: GEMV then RoPE */
            nout = 0;
            if (n0) {
                o[v][nout] = (struct kvs_gemv_out){to_dev_bf16(w0, (size_t)n0 * k),
                                                   kt_dev((size_t)m * n0 * 2), n0, n0};
                KVS_TEST_CUDA(cudaMemset(o[v][nout].y, 0xFF, (size_t)m * n0 * 2));
                nout++;
            }
            o[v][nout] = (struct kvs_gemv_out){to_dev_bf16(w1, (size_t)nr * k),
                                               kt_dev((size_t)m * nr * 2), nr, nr};
            KVS_TEST_CUDA(cudaMemset(o[v][nout].y, 0xFF, (size_t)m * nr * 2));
            nout++;
        }
        const struct kvs_gemv_rope r = {nout - 1, dpos, 64, 1e6f};
        KVS_CHECK(kvs_cuda_gemv_rope_supported(dx, k, m, k, o[0], nout, &r));
        KVS_CHECK_EQ_INT(
            kvs_cuda_gemv_bf16_rope(dx, k, m, k, o[0], nout, &r, kvs_test_opts(), NULL),
            KVS_STATUS_OK);
        KVS_CHECK_EQ_INT(
            kvs_cuda_gemv_bf16(dx, k, m, k, o[1], nout, 0, 1, 0, 0, 0, kvs_test_opts(), NULL),
            KVS_STATUS_OK);
        KVS_CHECK_EQ_INT(kvs_cuda_rope_interleaved(o[1][nout - 1].y, dpos, m, heads, 64, 0, 64,
                                                   1e6f, kvs_test_opts(), NULL),
                         KVS_STATUS_OK);
        for (int i = 0; i < nout; i++) {
            size_t ny = (size_t)m * o[0][i].n;
            kvs_bf16 *a = malloc(ny * 2), *b = malloc(ny * 2);
            kt_down(a, o[0][i].y, ny * 2);
            kt_down(b, o[1][i].y, ny * 2);
            size_t diff = 0, nan = 0;
            for (size_t j = 0; j < ny; j++) {
                diff += a[j] != b[j];
                nan += isnan(kvs_bf16_to_float(a[j]));
            }
            KVS_CHECK_MSG(diff == 0 && nan == 0,
                          "gemv_rope cfg %zu out %d (m=%d k=%d n=%d): %zu of %zu values differ "
                          "from GEMV + RoPE, %zu NaN",
                          c, i, m, k, o[0][i].n, diff, ny, nan);
            free(a), free(b);
        }
        for (int v = 0; v < 2; v++)
            for (int i = 0; i < nout; i++)
                cudaFree((void *)o[v][i].w), cudaFree(o[v][i].y);
        cudaFree(dpos), cudaFree(dx), free(x), free(w0), free(w1);
    }
    /* the rope output on an odd row: refused, the caller runs the two ops */
    kvs_bf16 *dx = kt_dev(64 * 2), *dw = kt_dev(64 * 135 * 2), *dy = kt_dev(135 * 2);
    int32_t *dpos = kt_dev(4);
    struct kvs_gemv_out o2[2] = {{dw, dy, 7, 7}, {dw + 7 * 64, dy + 7, 128, 128}};
    const struct kvs_gemv_rope r2 = {1, dpos, 64, 1e6f};
    KVS_CHECK(!kvs_cuda_gemv_rope_supported(dx, 64, 1, 64, o2, 2, &r2));
    KVS_CHECK_EQ_INT(kvs_cuda_gemv_bf16_rope(dx, 64, 1, 64, o2, 2, &r2, kvs_test_opts(), NULL),
                     KVS_STATUS_UNSUPPORTED);
    cudaFree(dx), cudaFree(dw), cudaFree(dy), cudaFree(dpos);
    /* 64 rows of k 6144: the plain GEMV splits k over all 8 warps (one row a
     * block), which a pair cannot span: refused, not computed with another
     * split (whose sums could round differently) */
    dx = kt_dev(6144 * 2), dw = kt_dev((size_t)64 * 6144 * 2), dy = kt_dev(64 * 2);
    dpos = kt_dev(4);
    struct kvs_gemv_out o3 = {dw, dy, 64, 64};
    const struct kvs_gemv_rope r3 = {0, dpos, 64, 1e6f};
    KVS_CHECK(!kvs_cuda_gemv_rope_supported(dx, 6144, 1, 6144, &o3, 1, &r3));
    KVS_CHECK_EQ_INT(kvs_cuda_gemv_bf16_rope(dx, 6144, 1, 6144, &o3, 1, &r3, kvs_test_opts(), NULL),
                     KVS_STATUS_UNSUPPORTED);
    cudaFree(dx), cudaFree(dw), cudaFree(dy), cudaFree(dpos);
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    g_seed = kt_seed("ops");
    static const struct kvs_test tests[] = {
        {"rmsnorm", test_rmsnorm},
        {"add_rmsnorm", test_add_rmsnorm},
        {"rope", test_rope},
        {"gemv_rope", test_gemv_rope},
        {"swiglu_add_embedding", test_swiglu_add_embedding},
        {"argmax", test_argmax},
        {"router", test_router},
        {"experts", test_experts},
        {"gemm", test_gemm},
        {"gemv", test_gemv},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
