/* kernels/tests/gpu/kvs_kernel_test.h — helpers for the kernels' gpu tests:
 * a seed drawn from the clock (printed, and settable with KVS_TEST_SEED so a
 * failure reproduces), device buffers, poisoning, and (through
 * ../kvs_kernel_err.h) the normalized error that never lets a NaN pass.
 *
 * defines: kt_seed, kt_unif, kt_dev, kt_up, kt_down
 */
#ifndef KVSCOPE_KERNEL_TEST_H
#define KVSCOPE_KERNEL_TEST_H

#include <math.h>
#include <stdint.h>
#include <time.h>

#include "../kvs_kernel_err.h" /* defines: kt_norm_err_bf16, kt_norm_err_f */
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

#endif /* KVSCOPE_KERNEL_TEST_H */
