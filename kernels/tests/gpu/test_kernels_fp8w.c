/* kernels/tests/gpu/test_kernels_fp8w.c — the FP8-weight GEMV and experts on
 * the GPU against their CPU references (kernels/cpu/fp8w.c) on fresh random
 * weights quantised with kvs_cpu_quantize_fp8_blocks: m = 1, 3, 8 (and 2, 5),
 * n and k not multiples of 128, several outputs of one x, BF16 and float
 * outputs, outputs poisoned (NaN bits) beforehand with the gaps between
 * rows checked to stay poisoned; sizes the GEMV refuses answer
 * KVS_STATUS_UNSUPPORTED. Every internal configuration of the GEMV
 * (gemv_fp8w_cfg.h) and of the experts (moe_fp8w_cfg.h) meets every case. Tolerances: docs/kernels.md "Test tolerances".
 *
 *   meson test -C build --suite gpu test_kernels_fp8w_gpu
 */
#include "../../cuda/gemv_fp8w_cfg.h"
#include "../../cuda/moe_fp8w_cfg.h"
#include "kvs_kernel_test.h"

#define TOL_BF16 1e-2 /* normalized error, BF16 outputs of float math */
#define TOL_F32 1e-5  /* float outputs vs the double reference */

static uint64_t g_seed;

static int nb(int n) { return (n + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK; }

/* W[n, k] uniform in +-a with each 128-row block band scaled differently
 * (so the scales differ), quantised; codes and scales on the host */
static void rand_fp8w(uint64_t *st, int n, int k, float a, kvs_fp8 *q, float *sc)
{
    float *w = malloc((size_t)n * k * sizeof *w);
    for (int r = 0; r < n; r++) {
        float band = 1.0f + (float)((r / KVS_FP8_BLOCK) % 3);
        for (int c = 0; c < k; c++)
            w[(size_t)r * k + c] = kt_unif(st, -a, a) * band * (c < KVS_FP8_BLOCK ? 0.25f : 1.0f);
    }
    kvs_cpu_quantize_fp8_blocks(w, n, k, q, sc);
    free(w);
}

// ----------------------------------------------------------------------------
// GEMV

static void test_gemv(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    /* 6144 = hidden (k split for few rows), 2048 = q_lora, 1040 / 208 / 48 /
     * 16 are not multiples of 128 (208: 13 chunks of 16 with 8 lanes a row;
     * 16: one lane a row) */
    static const struct kt_gemv_case cases[] = {
        {1, 6144, {2048, 576, 0}, 0}, {3, 2048, {1000, 96, 0}, 0}, {8, 6144, {300, 0, 0}, 1},
        {1, 1040, {777, 129, 5}, 1},  {3, 208, {513, 0, 0}, 0},    {8, 48, {40, 3, 0}, 0},
        {2, 16, {200, 0, 0}, 1},      {5, 6144, {24, 0, 0}, 0},    {8, 2048, {4100, 0, 0}, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int m = cases[c].m, k = cases[c].k, f32 = cases[c].f32;
        const size_t ysz = f32 ? 4 : 2;
        int ldx, nout = 0;
        struct kvs_gemv_fp8w_out o[3], h[3];
        kvs_bf16 *dx, *x = kt_gemv_x(&st, &cases[c], &ldx, &dx);
        for (int i = 0; i < 3 && cases[c].n[i]; i++, nout++) {
            const int n = cases[c].n[i];
            kvs_fp8 *q = malloc((size_t)n * k);
            float *sc = malloc((size_t)nb(n) * nb(k) * sizeof *sc);
            rand_fp8w(&st, n, k, 0.05f, q, sc);
            /* the reference in float: kt_gemv_err rounds it for BF16 outputs */
            h[i] = (struct kvs_gemv_fp8w_out){q, sc, calloc((size_t)m * (n + 3), 4), n, n + 3};
            o[i] = (struct kvs_gemv_fp8w_out){kt_to_dev(q, (size_t)n * k),
                                              kt_to_dev(sc, (size_t)nb(n) * nb(k) * sizeof *sc),
                                              kt_dev((size_t)m * (n + 3) * ysz), n, n + 3};
            KVS_TEST_CUDA(cudaMemset(o[i].y, 0xFF, (size_t)m * (n + 3) * ysz));
        }
        KVS_CHECK(kvs_cuda_gemv_fp8w_supported(dx, ldx, m, k, o, nout));
        kvs_cpu_gemv_fp8w(x, ldx, m, k, h, nout, 1);
        for (int cf = -1; cf < KVS_GEMV_FP8W_CFGS; cf++) { /* -1: the public entry */
            for (int j = 0; j < nout; j++)
                KVS_TEST_CUDA(cudaMemset(o[j].y, 0xFF, (size_t)m * o[j].ldy * ysz));
            KVS_CHECK_EQ_INT(
                cf < 0 ? kvs_cuda_gemv_fp8w(dx, ldx, m, k, o, nout, f32, kvs_test_opts(), NULL)
                       : kvs_cuda_gemv_fp8w_cfg(cf, dx, ldx, m, k, o, nout, f32, kvs_test_opts(),
                                                NULL),
                KVS_STATUS_OK);
            for (int i = 0; i < nout; i++) {
                const size_t ny = (size_t)m * o[i].ldy;
                void *got = malloc(ny * ysz);
                kt_down(got, o[i].y, ny * ysz);
                int gaps_kept;
                const double err = kt_gemv_err(got, h[i].y, f32, m, o[i].n, o[i].ldy, &gaps_kept);
                KVS_CHECK_MSG(err <= (f32 ? TOL_F32 : TOL_BF16) && gaps_kept,
                              "gemv_fp8w %s case %zu out %d (m=%d k=%d n=%d f32=%d): error %.3g, gaps %d",
                              cf < 0 ? "public" : kvs_gemv_fp8w_cfg_name(cf), c, i, m, k, o[i].n, f32,
                              err, gaps_kept);
                fprintf(stderr, "gemv_fp8w %s case %zu out %d (m=%d k=%d n=%d f32=%d): error %.3g\n",
                        cf < 0 ? "public" : kvs_gemv_fp8w_cfg_name(cf), c, i, m, k, o[i].n, f32, err);
                free(got);
            }
        }
        for (int i = 0; i < nout; i++) {
            free((void *)h[i].w), free((void *)h[i].scale), free(h[i].y);
            cudaFree((void *)o[i].w), cudaFree((void *)o[i].scale), cudaFree(o[i].y);
        }
        free(x), cudaFree(dx);
    }
    /* refusals: k not a multiple of 16, m too large, misaligned x or w */
    struct kvs_gemv_fp8w_out o1 = {(const kvs_fp8 *)256, (const float *)256, (void *)256, 4, 4};
    const kvs_bf16 *px = (const kvs_bf16 *)256;
    KVS_CHECK(!kvs_cuda_gemv_fp8w_supported(px, 200, 1, 200, &o1, 1));
    KVS_CHECK_EQ_INT(kvs_cuda_gemv_fp8w(px, 200, 1, 200, &o1, 1, 0, kvs_test_opts(), NULL),
                     KVS_STATUS_UNSUPPORTED);
    KVS_CHECK_EQ_INT(kvs_cuda_gemv_fp8w(px, 24, 1, 24, &o1, 1, 0, kvs_test_opts(), NULL),
                     KVS_STATUS_UNSUPPORTED);
    KVS_CHECK_EQ_INT(kvs_cuda_gemv_fp8w(px, 16, 9, 16, &o1, 1, 0, kvs_test_opts(), NULL),
                     KVS_STATUS_UNSUPPORTED);
    KVS_CHECK_EQ_INT(
        kvs_cuda_gemv_fp8w((const kvs_bf16 *)258, 16, 1, 16, &o1, 1, 0, kvs_test_opts(), NULL),
        KVS_STATUS_UNSUPPORTED);
    struct kvs_gemv_fp8w_out o2 = o1;
    o2.w = (const kvs_fp8 *)264;
    KVS_CHECK_EQ_INT(kvs_cuda_gemv_fp8w(px, 16, 1, 16, &o2, 1, 0, kvs_test_opts(), NULL),
                     KVS_STATUS_UNSUPPORTED);
    KVS_CHECK_EQ_INT(kvs_cuda_gemv_fp8w(NULL, 16, 1, 16, &o1, 1, 0, kvs_test_opts(), NULL),
                     KVS_STATUS_INVALID_ARGUMENT);
}

// ----------------------------------------------------------------------------
// experts

static void test_experts(void)
{
    uint64_t st = kvs_test_rand(&g_seed);
    /* {tokens, dim, inter, n_resident, topk}: GLM-5's dims at 1 token (fewer
     * experts), 8 tokens, sizes off the 128 grid (16-byte path), and dim 36 /
     * inter 20 (the element path) */
    const int cfg[][5] = {{1, 6144, 2048, 8, 8}, {8, 2048, 512, 10, 8}, {3, 400, 272, 12, 8},
                          {5, 36, 20, 9, 4}, {2, 1040, 144, 6, 3}};
    for (int c = 0; c < 5; c++)
        for (int acc = 0; acc < 2; acc++) {
            if (c < 2 && acc) /* the large ones once */
                continue;
            const int T = cfg[c][0], D = cfg[c][1], I = cfg[c][2], R = cfg[c][3], K = cfg[c][4];
            const size_t ngu = (size_t)R * 2 * I * D, ndn = (size_t)R * D * I;
            const size_t sgu = (size_t)nb(2 * I) * nb(D), sdn = (size_t)nb(D) * nb(I);
            kvs_fp8 *gu = malloc(ngu), *dn = malloc(ndn);
            float *gus = malloc(R * sgu * 4), *dns = malloc(R * sdn * 4);
            for (int e = 0; e < R; e++) {
                rand_fp8w(&st, 2 * I, D, 0.1f, gu + (size_t)e * 2 * I * D, gus + e * sgu);
                rand_fp8w(&st, D, I, 0.1f, dn + (size_t)e * D * I, dns + e * sdn);
            }
            kvs_bf16 *x = kt_rand_bf16(&st, (size_t)T * D, -1.0f, 1.0f);
            kvs_bf16 *y0 = kt_rand_bf16(&st, (size_t)T * D, -1.0f, 1.0f);
            kvs_bf16 *ref = malloc((size_t)T * D * 2);
            memcpy(ref, y0, (size_t)T * D * 2);
            int32_t *ids = malloc((size_t)T * K * sizeof *ids);
            float *wts = malloc((size_t)T * K * sizeof *wts);
            for (int t = 0; t < T; t++)
                for (int k = 0; k < K; k++) { /* distinct experts per token; one id out of range */
                    ids[t * K + k] = (int32_t)((t * 5 + k + (int)(kvs_test_rand(&st) % 2)) % R);
                    for (int j = 0; j < k; j++)
                        if (ids[t * K + j] == ids[t * K + k])
                            ids[t * K + k] = (ids[t * K + k] + 1) % R, j = -1;
                    wts[t * K + k] = kt_unif(&st, 0.05f, 0.5f);
                }
            if (c == 2)
                ids[K - 1] = R; /* adds nothing */
            struct kvs_moe_fp8w_args a = {T, D, I, K, R, x, ids, wts, gu, gus, dn, dns, ref, acc};
            kvs_cpu_moe_experts_fp8w(&a);
            struct kvs_moe_fp8w_args d = a;
            d.x = kt_to_dev(x, (size_t)T * D * 2);
            d.ids = kt_to_dev(ids, (size_t)T * K * sizeof *ids);
            d.weights = kt_to_dev(wts, (size_t)T * K * sizeof *wts);
            d.gate_up = kt_to_dev(gu, ngu);
            d.gate_up_scale = kt_to_dev(gus, R * sgu * 4);
            d.down = kt_to_dev(dn, ndn);
            d.down_scale = kt_to_dev(dns, R * sdn * 4);
            d.y = kt_dev((size_t)T * D * 2);
            const size_t wsb = kvs_cuda_moe_experts_workspace(T, K, I);
            void *ws = kt_dev(wsb);
            kvs_bf16 *got = malloc((size_t)T * D * 2);
            for (int cf = -1; cf < KVS_MOE_FP8W_CFGS; cf++) { /* -1: the public entry */
                if (acc)
                    KVS_TEST_CUDA(cudaMemcpy(d.y, y0, (size_t)T * D * 2, cudaMemcpyHostToDevice));
                else
                    KVS_TEST_CUDA(cudaMemset(d.y, 0xFF, (size_t)T * D * 2));
                KVS_CHECK_EQ_INT(
                    cf < 0 ? kvs_cuda_moe_experts_fp8w(&d, ws, wsb, kvs_test_opts(), NULL)
                           : kvs_cuda_moe_experts_fp8w_cfg(cf, &d, ws, wsb, kvs_test_opts(), NULL),
                    KVS_STATUS_OK);
                kt_down(got, d.y, (size_t)T * D * 2);
                const double e = kt_norm_err_bf16(got, ref, (size_t)T * D);
                const char *name = cf < 0 ? "public" : kvs_moe_fp8w_cfg_name(cf);
                KVS_CHECK_MSG(e <= TOL_BF16, "moe_fp8w %s case %d acc %d (T=%d D=%d I=%d K=%d): error %.3g",
                              name, c, acc, T, D, I, K, e);
                fprintf(stderr, "moe_fp8w %s case %d acc %d (T=%d D=%d I=%d K=%d): error %.3g\n", name,
                        c, acc, T, D, I, K, e);
            }
            KVS_CHECK_EQ_INT(kvs_cuda_moe_experts_fp8w_cfg(KVS_MOE_FP8W_CFGS, &d, ws, wsb,
                                                           kvs_test_opts(), NULL),
                             KVS_STATUS_INVALID_ARGUMENT);
            cudaFree((void *)d.x), cudaFree((void *)d.ids), cudaFree((void *)d.weights);
            cudaFree((void *)d.gate_up), cudaFree((void *)d.gate_up_scale);
            cudaFree((void *)d.down), cudaFree((void *)d.down_scale), cudaFree(d.y), cudaFree(ws);
            free(gu), free(dn), free(gus), free(dns), free(x), free(y0), free(ref), free(ids);
            free(wts), free(got);
        }
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    g_seed = kt_seed("fp8w");
    static const struct kvs_test tests[] = {
        {"gemv", test_gemv},
        {"experts", test_experts},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
