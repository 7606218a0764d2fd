/* tests/gpu/kvs_test_gpu.h — helpers for the `gpu` suite (CUDA tests).
 *
 * defines: kvs_test_require_gpu, KVS_TEST_CUDA
 *
 * Every gpu test calls kvs_test_require_gpu() first: without a usable GPU it
 * exits 77, which meson reports as skipped, so CI machines without GPUs pass.
 */
#ifndef KVSCOPE_TEST_GPU_H
#define KVSCOPE_TEST_GPU_H

#include <cuda_runtime.h>

#include "kvs_test.h"

static inline void kvs_test_require_gpu(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        fprintf(stderr, "skip: no usable GPU (%s)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        exit(KVS_TEST_EXIT_SKIP);
    }
}

/* A CUDA call inside a test: a failure is the environment's or the code's
 * fault, but either way the test cannot go on. */
#define KVS_TEST_CUDA(call)                                                                       \
    do {                                                                                          \
        cudaError_t kvs_e_ = (call);                                                              \
        if (kvs_e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                         \
                    cudaGetErrorString(kvs_e_));                                                  \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

#endif /* KVSCOPE_TEST_GPU_H */
