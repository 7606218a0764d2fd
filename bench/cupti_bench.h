/* bench/cupti_bench.h — what bench/cupti_cost.cu and bench/cupti_idle.cu
 * share: error checks that stop the bench (CK: CUDA runtime, CU: CUPTI),
 * the one-element kernel they launch, the clock (CLOCK_MONOTONIC, as
 * kvscope's capture uses) and a CUPTI timestamp callback on it.
 * defines: CK, CU, one, now_ns, ts_cb
 */
#ifndef KVSCOPE_BENCH_CUPTI_BENCH_H
#define KVSCOPE_BENCH_CUPTI_BENCH_H

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <cuda_runtime.h>
#include <cupti.h>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)
#define CU(x)                                                                                  \
    do {                                                                                       \
        CUptiResult r_ = (x);                                                                  \
        if (r_ != CUPTI_SUCCESS) {                                                             \
            const char *s_ = nullptr;                                                          \
            cuptiGetResultString(r_, &s_);                                                     \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?");          \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

__global__ void one(int *p) { p[0] += 1; }

static inline int64_t now_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline uint64_t CUPTIAPI ts_cb() { return (uint64_t)now_ns(); }

#endif /* KVSCOPE_BENCH_CUPTI_BENCH_H */
