/* kernels/tests/gpu/kvs_kernel_test.h — helpers for the kernels' gpu tests:
 * a seed drawn from the clock (printed, and settable with KVS_TEST_SEED so a
 * failure reproduces), random BF16 inputs, device buffers, the GEMV tests'
 * cases, inputs and output check (error and poisoned gaps), and (through
 * ../kvs_kernel_err.h) the normalized error that never lets a NaN pass.
 *
 * defines: kt_seed, kt_unif, kt_rand_bf16, kt_dev, kt_up, kt_to_dev, kt_down,
 *          struct kt_gemv_case, kt_gemv_x, kt_gemv_err
 */
#ifndef KVSCOPE_KERNEL_TEST_H
#define KVSCOPE_KERNEL_TEST_H

#include <math.h>
#include <stdint.h>
#include <time.h>

#include "../kvs_kernel_err.h" /* defines: kt_norm_err_bf16, kt_norm_err_f */
#include "kvs_test_gpu.h"
#include "kvs_test_opts.h" /* defines: kvs_test_opts */
#include "kvscope/kernels.h"

static inline uint64_t kt_seed(const char *what)
{
    const char *env = getenv("KVS_TEST_SEED");
    uint64_t s;
    if (env && *env) {
        s = strtoull(env, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
    }
    fprintf(stderr, "%s: seed %llu (rerun with KVS_TEST_SEED=%llu)\n", what,
            (unsigned long long)s, (unsigned long long)s);
    return s;
}

/* uniform in [lo, hi) */
static inline float kt_unif(uint64_t *st, float lo, float hi)
{
    return lo + (hi - lo) * (float)((kvs_test_rand(st) >> 40) * 0x1p-24);
}

/* n BF16 values uniform in [lo, hi), on the host (free them) */
static inline kvs_bf16 *kt_rand_bf16(uint64_t *st, size_t n, float lo, float hi)
{
    kvs_bf16 *h = (kvs_bf16 *)malloc(n * 2);
    for (size_t i = 0; i < n; i++)
        h[i] = kvs_float_to_bf16(kt_unif(st, lo, hi));
    return h;
}

static inline void *kt_dev(size_t bytes)
{
    void *p = NULL;
    KVS_TEST_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

static inline void kt_up(void *dst, const void *src, size_t bytes)
{
    KVS_TEST_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

/* a device copy of bytes at h */
static inline void *kt_to_dev(const void *h, size_t bytes)
{
    void *d = kt_dev(bytes);
    kt_up(d, h, bytes);
    return d;
}

/* Synchronises first, so errors inside kernels surface here. */
static inline void kt_down(void *dst, const void *src, size_t bytes)
{
    KVS_TEST_CUDA(cudaDeviceSynchronize());
    KVS_TEST_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

/* A GEMV test case (test_kernels_ops, test_kernels_fp8w): m rows of x of
 * length k, up to three outputs of n[i] rows sharing x (n[i] = 0: no more
 * outputs), outputs in float (f32) or BF16. */
struct kt_gemv_case {
    int m, k, n[3], f32;
};

/* The case's x: m rows of k BF16 values in [-1, 1) on the host (returned;
 * free it), *ldx = k + 8 apart so that rows read k apart would show, and a
 * device copy in *dx. */
static inline kvs_bf16 *kt_gemv_x(uint64_t *st, const struct kt_gemv_case *cs, int *ldx,
                                  kvs_bf16 **dx)
{
    *ldx = cs->k + 8;
    kvs_bf16 *x = kt_rand_bf16(st, (size_t)cs->m * *ldx, -1.0f, 1.0f);
    *dx = (kvs_bf16 *)kt_to_dev(x, (size_t)cs->m * *ldx * 2);
    return x;
}

/* A GEMV's outputs against the reference: ||got - ref|| / ||ref|| over the
 * m rows of n outputs stored ldy apart (got: BF16, or float when f32; ref:
 * float sums, rounded to BF16 first for BF16 outputs as the kernels round
 * theirs), INFINITY when a value is not finite or ref is all zero; and in
 * *gaps_kept whether columns n .. ldy-1 of each row, poisoned with 0xFF
 * bytes before the call, stayed poisoned. */
static inline double kt_gemv_err(const void *got, const float *ref, int f32, int m, int n,
                                 int64_t ldy, int *gaps_kept)
{
    double num = 0.0, den = 0.0;
    int kept = 1;
    for (int r = 0; r < m; r++)
        for (int64_t j = 0; j < ldy; j++) {
            const size_t at = (size_t)r * ldy + j;
            if (j >= n) {
                kept &= f32 ? ((const uint32_t *)got)[at] == 0xFFFFFFFFu
                            : ((const kvs_bf16 *)got)[at] == 0xFFFF;
                continue;
            }
            const double g = f32 ? ((const float *)got)[at]
                                 : kvs_bf16_to_float(((const kvs_bf16 *)got)[at]);
            const double e = f32 ? ref[at] : kvs_bf16_to_float(kvs_float_to_bf16(ref[at]));
            if (!isfinite(g) || !isfinite(e)) {
                num = INFINITY;
                continue;
            }
            num += (g - e) * (g - e);
            den += e * e;
        }
    *gaps_kept = kept;
    return den > 0.0 ? sqrt(num / den) : INFINITY;
}

#endif /* KVSCOPE_KERNEL_TEST_H */
