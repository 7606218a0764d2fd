/* kernels/tests/gpu/kvs_kernel_test.h — helpers for the kernels' gpu tests:
 * a seed drawn from the clock (printed, and settable with KVS_TEST_SEED so a
 * failure reproduces), device buffers, poisoning, and the normalized error
 * ||out - ref|| / ||ref|| that never lets a NaN pass.
 *
 * defines: kt_seed, kt_unif, kt_dev, kt_up, kt_down, kt_norm_err_bf16,
 *          kt_norm_err_f
 */
#ifndef KVSCOPE_KERNEL_TEST_H
#define KVSCOPE_KERNEL_TEST_H

#include <math.h>
#include <stdint.h>
#include <time.h>

#include "kvs_test_gpu.h"
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

/* Synchronises first, so errors inside kernels surface here. */
static inline void kt_down(void *dst, const void *src, size_t bytes)
{
    KVS_TEST_CUDA(cudaDeviceSynchronize());
    KVS_TEST_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

/* ||out - ref|| / ||ref|| over n BF16 values; INFINITY if any is not
 * finite on one side only or NaN on either (a NaN never passes). */
static inline double kt_norm_err_bf16(const kvs_bf16 *out, const kvs_bf16 *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double o = kvs_bf16_to_float(out[i]), r = kvs_bf16_to_float(ref[i]);
        if (isnan(o) || isnan(r) || isinf(o) != isinf(r))
            return INFINITY;
        num += (o - r) * (o - r);
        den += r * r;
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static inline double kt_norm_err_f(const float *out, const float *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double o = out[i], r = ref[i];
        if (isnan(o) || isnan(r))
            return INFINITY;
        if (isinf(o) || isinf(r)) {
            if (o != r)
                return INFINITY;
            continue;
        }
        num += (o - r) * (o - r);
        den += r * r;
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

#endif /* KVSCOPE_KERNEL_TEST_H */
