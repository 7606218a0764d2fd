/* kernels/tests/test_kernels_fp8w.c — the FP8-weight references on the CPU:
 * the 128 x 128 block quantiser (dequantise(quantise(W)) within e4m3's bound,
 * codes as kvs_float_to_fp8 gives them, odd n and k, zero blocks), and the
 * FP8-weight GEMV and experts against the BF16 references on weights whose
 * dequantised values are BF16 values (power-of-two scales), so that a wrong
 * scale index or layout shows as a large error.
 *
 *   meson test -C build test_kernels_fp8w
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_kernel_err.h" /* defines: kt_norm_err_bf16 */
#include "kvs_test.h"
#include "kvscope/kernels.h"

#define BLK KVS_FP8_BLOCK

static double rnd(uint64_t *st) /* uniform in [-1, 1) */
{
    return (double)(kvs_test_rand(st) >> 11) * 0x1p-52 - 1.0;
}

static int nb(int n) { return (n + BLK - 1) / BLK; }

// ----------------------------------------------------------------------------
// quantiser

static void check_quantize(uint64_t *st, int n, int k)
{
    float *w = malloc((size_t)n * k * sizeof *w);
    kvs_fp8 *q = malloc((size_t)n * k);
    float *sc = malloc((size_t)nb(n) * nb(k) * sizeof *sc);
    /* each block its own magnitude (1e-4 .. 1e2), block (0, 1) all zero,
     * and a few exact zeros and tiny values elsewhere (subnormal codes) */
    for (int r = 0; r < n; r++)
        for (int c = 0; c < k; c++) {
            int b = (r / BLK) * 7 + (c / BLK) * 3;
            double mag = pow(10.0, (b % 7) - 4);
            double v = rnd(st) * mag;
            if ((kvs_test_rand(st) & 63) == 0)
                v *= 1e-3;
            if ((kvs_test_rand(st) & 127) == 0)
                v = 0.0;
            if (r < BLK && c >= BLK && c < 2 * BLK)
                v = 0.0;
            w[(size_t)r * k + c] = (float)v;
        }
    kvs_cpu_quantize_fp8_blocks(w, n, k, q, sc);
    int bad_bound = 0, bad_code = 0, bad_amax = 0;
    double worst_rel = 0.0;
    for (int br = 0; br < nb(n); br++)
        for (int bc = 0; bc < nb(k); bc++) {
            float s = sc[(size_t)br * nb(k) + bc];
            float amax = 0.0f;
            int has448 = 0;
            for (int r = br * BLK; r < n && r < br * BLK + BLK; r++)
                for (int c = bc * BLK; c < k && c < bc * BLK + BLK; c++) {
                    float v = w[(size_t)r * k + c];
                    kvs_fp8 code = q[(size_t)r * k + c];
                    amax = fmaxf(amax, fabsf(v));
                    has448 |= (code & 0x7f) == 0x7e;
                    bad_code += code != kvs_float_to_fp8(v / s);
                    double d = (double)kvs_fp8_to_float(code) * s;
                    double bound = fmax(fabs(v) * 0x1p-4, s * 0x1p-10) * (1 + 1e-6) + 1e-30;
                    bad_bound += !(fabs(d - v) <= bound);
                    if (fabs(v) > s * 0x1p-6)
                        worst_rel = fmax(worst_rel, fabs(d - v) / fabs(v));
                }
            if (amax > 0.0f)
                bad_amax += !(has448 && fabsf(s - amax / 448.0f) <= 1e-6f * s);
            else
                bad_amax += !(s == 1.0f);
        }
    KVS_CHECK_MSG(bad_bound == 0, "quantise %dx%d: %d values outside the e4m3 bound", n, k,
                  bad_bound);
    KVS_CHECK_MSG(bad_code == 0, "quantise %dx%d: %d codes differ from kvs_float_to_fp8", n, k,
                  bad_code);
    KVS_CHECK_MSG(bad_amax == 0, "quantise %dx%d: %d blocks without amax -> 448 (or scale 1 when zero)",
                  n, k, bad_amax);
    /* e4m3 is coarse: some value must be off by more than 1% (a lossless
     * "quantiser" would pass the bound) */
    KVS_CHECK_MSG(worst_rel > 0.01 && worst_rel <= 0x1p-4 * (1 + 1e-6),
                  "quantise %dx%d: worst relative error %.3g", n, k, worst_rel);
    free(w), free(q), free(sc);
}

static void test_quantize(void)
{
    uint64_t st = 0x5eed0001;
    check_quantize(&st, 300, 200); /* 3 x 2 blocks, partial last ones */
    check_quantize(&st, 128, 256); /* whole blocks */
    check_quantize(&st, 7, 13);    /* one partial block */
}

// ----------------------------------------------------------------------------
// references against the BF16 ones on exactly representable weights

/* random codes (no NaN) and power-of-two scales 2^-9 .. 2^-2; deq gets the
 * dequantised values as BF16 (exact: e4m3 values times powers of two) */
static void rand_fp8w(uint64_t *st, int n, int k, kvs_fp8 *q, float *sc, kvs_bf16 *deq)
{
    for (int b = 0; b < nb(n) * nb(k); b++)
        sc[b] = ldexpf(1.0f, -2 - (int)(kvs_test_rand(st) % 8));
    for (int r = 0; r < n; r++)
        for (int c = 0; c < k; c++) {
            kvs_fp8 code = (kvs_fp8)(kvs_test_rand(st) & 0xff);
            if ((code & 0x7f) == 0x7f)
                code ^= 1;
            q[(size_t)r * k + c] = code;
            float v = kvs_fp8_to_float(code) * sc[(size_t)(r / BLK) * nb(k) + c / BLK];
            deq[(size_t)r * k + c] = kvs_float_to_bf16(v);
            KVS_REQUIRE(kvs_bf16_to_float(deq[(size_t)r * k + c]) == v);
        }
}

static void test_gemv_ref(void)
{
    uint64_t st = 0x5eed0002;
    const int cfg[][3] = {{1, 300, 208}, {3, 129, 384}, {8, 40, 50}}; /* m, n, k */
    for (int c = 0; c < 3; c++) {
        int m = cfg[c][0], n = cfg[c][1], k = cfg[c][2], ldx = k + 3;
        kvs_fp8 *q = malloc((size_t)n * k);
        float *sc = malloc((size_t)nb(n) * nb(k) * sizeof *sc);
        kvs_bf16 *deq = malloc((size_t)n * k * 2), *x = malloc((size_t)m * ldx * 2);
        kvs_bf16 *xc = malloc((size_t)m * k * 2), *ref = malloc((size_t)m * n * 2);
        kvs_bf16 *y = malloc((size_t)m * n * 2);
        float *yf = malloc((size_t)m * n * 4);
        rand_fp8w(&st, n, k, q, sc, deq);
        for (int i = 0; i < m * ldx; i++)
            x[i] = kvs_float_to_bf16((float)rnd(&st));
        for (int i = 0; i < m; i++)
            memcpy(xc + (size_t)i * k, x + (size_t)i * ldx, (size_t)k * 2);
        kvs_cpu_linear(xc, deq, ref, m, n, k);
        struct kvs_gemv_fp8w_out o = {q, sc, y, n, n};
        kvs_cpu_gemv_fp8w(x, ldx, m, k, &o, 1, 0);
        double e = kt_norm_err_bf16(y, ref, (size_t)m * n);
        KVS_CHECK_MSG(e <= 1e-2, "gemv_fp8w ref %d (m=%d n=%d k=%d): %.3g vs kvs_cpu_linear", c, m,
                      n, k, e);
        o.y = yf;
        kvs_cpu_gemv_fp8w(x, ldx, m, k, &o, 1, 1);
        int close = 1;
        for (int i = 0; i < m * n; i++)
            close &= fabsf(kvs_bf16_to_float(kvs_float_to_bf16(yf[i])) - kvs_bf16_to_float(y[i])) <=
                     0.0f;
        KVS_CHECK_MSG(close, "gemv_fp8w ref %d: float outputs do not round to the BF16 ones", c);
        free(q), free(sc), free(deq), free(x), free(xc), free(ref), free(y), free(yf);
    }
}

static void test_moe_ref(void)
{
    uint64_t st = 0x5eed0003;
    const int T = 3, D = 144, I = 136, R = 5, K = 4; /* D, I not multiples of 128 */
    kvs_fp8 *gu = malloc((size_t)R * 2 * I * D), *dn = malloc((size_t)R * D * I);
    float *gus = malloc((size_t)R * nb(2 * I) * nb(D) * 4), *dns = malloc((size_t)R * nb(D) * nb(I) * 4);
    kvs_bf16 *gud = malloc((size_t)R * 2 * I * D * 2), *dnd = malloc((size_t)R * D * I * 2);
    for (int e = 0; e < R; e++) {
        rand_fp8w(&st, 2 * I, D, gu + (size_t)e * 2 * I * D, gus + (size_t)e * nb(2 * I) * nb(D),
                  gud + (size_t)e * 2 * I * D);
        rand_fp8w(&st, D, I, dn + (size_t)e * D * I, dns + (size_t)e * nb(D) * nb(I),
                  dnd + (size_t)e * D * I);
    }
    kvs_bf16 *x = malloc((size_t)T * D * 2), *y0 = malloc((size_t)T * D * 2);
    kvs_bf16 *y = malloc((size_t)T * D * 2), *ref = malloc((size_t)T * D * 2);
    for (int i = 0; i < T * D; i++) {
        x[i] = kvs_float_to_bf16((float)rnd(&st));
        y0[i] = kvs_float_to_bf16((float)rnd(&st));
    }
    int32_t ids[T * K];
    float wts[T * K];
    for (int t = 0; t < T; t++)
        for (int k = 0; k < K; k++) {
            ids[t * K + k] = (t + k) % R;
            wts[t * K + k] = (float)(0.3 + 0.2 * rnd(&st));
        }
    for (int acc = 0; acc < 2; acc++) {
        memcpy(ref, y0, (size_t)T * D * 2);
        memcpy(y, y0, (size_t)T * D * 2);
        struct kvs_moe_args b = {T, D, I, K, R, x, ids, wts, gud, dnd, ref, acc};
        kvs_cpu_moe_experts(&b);
        struct kvs_moe_fp8w_args a = {T, D, I, K, R, x, ids, wts, gu, gus, dn, dns, y, acc};
        kvs_cpu_moe_experts_fp8w(&a);
        double e = kt_norm_err_bf16(y, ref, (size_t)T * D);
        KVS_CHECK_MSG(e <= 1e-2, "moe_fp8w ref (accumulate %d): %.3g vs kvs_cpu_moe_experts", acc,
                      e);
    }
    free(gu), free(dn), free(gus), free(dns), free(gud), free(dnd);
    free(x), free(y0), free(y), free(ref);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"quantize", test_quantize},
        {"gemv_ref", test_gemv_ref},
        {"moe_ref", test_moe_ref},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
