/* kvscope/die.h — fatal checks for programs only (cli, tests, examples,
 * benches): log the failing call with file:line and exit(1). Never include
 * this from library code (libtrace, analyzers, reports, kernels, engine).
 *
 * defines: KVS_DIE_IF, KVS_CUDA_DIE, KVS_CUDA_LAUNCH_DIE, KVS_CUBLAS_DIE,
 *          KVS_CUPTI_DIE, KVS_NCCL_DIE, KVS_STATUS_DIE
 */
#ifndef KVSCOPE_DIE_H
#define KVSCOPE_DIE_H

#include <stdlib.h>

#include "kvscope/check.h"

#define KVS_STATUS_DIE(expr)                                                                      \
    do {                                                                                          \
        enum kvs_status kvs_die_st_ = (expr);                                                     \
        if (kvs_die_st_ != KVS_STATUS_OK) {                                                       \
            kvs_log(NULL, KVS_LOG_ERROR, "%s failed: %s (%s:%d)", #expr,                          \
                    kvs_status_str(kvs_die_st_), __FILE__, __LINE__);                             \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

#define KVS_DIE_IF(cond, ...)                                                                     \
    do {                                                                                          \
        if (cond) {                                                                               \
            kvs_log(NULL, KVS_LOG_ERROR, __VA_ARGS__);                                            \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

#define KVS_DIE_ON_STATUS_(st)                                                                    \
    do {                                                                                          \
        if ((st) != KVS_STATUS_OK)                                                                \
            exit(1);                                                                              \
    } while (0)

#define KVS_CUDA_DIE(call) KVS_DIE_ON_STATUS_(KVS_CUDA_STATUS(NULL, call))
#define KVS_CUDA_LAUNCH_DIE() KVS_DIE_ON_STATUS_(KVS_CUDA_STATUS(NULL, cudaGetLastError()))
#define KVS_CUBLAS_DIE(call) KVS_DIE_ON_STATUS_(KVS_CUBLAS_STATUS(NULL, call))
#define KVS_CUPTI_DIE(call) KVS_DIE_ON_STATUS_(KVS_CUPTI_STATUS(NULL, call))
#define KVS_NCCL_DIE(call) KVS_DIE_ON_STATUS_(KVS_NCCL_STATUS(NULL, call))

#endif /* KVSCOPE_DIE_H */
