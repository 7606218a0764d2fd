/* kvscope/check.h — one family of error checks for CUDA, cuBLAS, CUPTI, NCCL.
 *
 * defines: KVS_CUDA_TRY, KVS_CUDA_LAUNCH_TRY, KVS_CUBLAS_TRY, KVS_CUPTI_TRY,
 *          KVS_NCCL_TRY and their *_STATUS expression forms; KVS_TRY
 *
 * Library code: the *_TRY forms return a kvs_status from the enclosing
 * function when the call fails, after logging the call text with file:line
 * through `lg` (a const struct kvs_logger *, may be NULL). The *_STATUS forms
 * evaluate to a kvs_status instead, for cleanup paths that must continue.
 * Programs (cli, tests, examples, benches) may use kvscope/die.h, whose
 * variants exit; library code must not.
 *
 * The macros only name the vendor's functions when expanded, so this header
 * needs no CUDA headers: include cuda_runtime.h / cublas_v2.h / cupti.h /
 * nccl.h yourself before using the matching macro.
 */
#ifndef KVSCOPE_CHECK_H
#define KVSCOPE_CHECK_H

#include "kvscope/base.h"

/* Propagate a failing kvs_status. */
#define KVS_TRY(expr)                                                                             \
    do {                                                                                          \
        enum kvs_status kvs_try_st_ = (expr);                                                     \
        if (kvs_try_st_ != KVS_STATUS_OK)                                                         \
            return kvs_try_st_;                                                                   \
    } while (0)

#define KVS_CUDA_STATUS(lg, call) kvs_cuda_status_((lg), (call), #call, __FILE__, __LINE__)
#define KVS_CUBLAS_STATUS(lg, call) kvs_cublas_status_((lg), (call), #call, __FILE__, __LINE__)
#define KVS_CUPTI_STATUS(lg, call) kvs_cupti_status_((lg), (call), #call, __FILE__, __LINE__)
#define KVS_NCCL_STATUS(lg, call) kvs_nccl_status_((lg), (call), #call, __FILE__, __LINE__)

#define KVS_CUDA_TRY(lg, call) KVS_TRY(KVS_CUDA_STATUS(lg, call))
#define KVS_CUBLAS_TRY(lg, call) KVS_TRY(KVS_CUBLAS_STATUS(lg, call))
#define KVS_CUPTI_TRY(lg, call) KVS_TRY(KVS_CUPTI_STATUS(lg, call))
#define KVS_NCCL_TRY(lg, call) KVS_TRY(KVS_NCCL_STATUS(lg, call))
/* After a kernel launch: picks up launch-configuration errors. */
#define KVS_CUDA_LAUNCH_TRY(lg) KVS_TRY(KVS_CUDA_STATUS(lg, cudaGetLastError()))

#endif /* KVSCOPE_CHECK_H */

/* The helpers are static inline and defined once the vendor header has been
 * seen, so each translation unit pays only for the ones it uses. Each sits
 * outside the main guard with a guard of its own: including this header
 * again after a vendor header defines the missing helper. */
#if (defined(__CUDA_RUNTIME_H__) || defined(CUDART_VERSION)) && !defined(KVSCOPE_CHECK_CUDA_)
#define KVSCOPE_CHECK_CUDA_
static inline enum kvs_status kvs_cuda_status_(const struct kvs_logger *lg, cudaError_t e,
                                               const char *expr, const char *file, int line)
{
    if (e == cudaSuccess)
        return KVS_STATUS_OK;
    return kvs_check_fail(lg, e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver
                                  ? KVS_STATUS_NO_DEVICE
                                  : KVS_STATUS_CUDA,
                          "CUDA", (long)e, cudaGetErrorString(e), expr, file, line);
}
#endif

#if defined(CUBLAS_VER_MAJOR) && !defined(KVSCOPE_CHECK_CUBLAS_)
#define KVSCOPE_CHECK_CUBLAS_
static inline enum kvs_status kvs_cublas_status_(const struct kvs_logger *lg, cublasStatus_t s,
                                                 const char *expr, const char *file, int line)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return KVS_STATUS_OK;
    return kvs_check_fail(lg, KVS_STATUS_CUBLAS, "cuBLAS", (long)s, cublasGetStatusString(s),
                          expr, file, line);
}
#endif

#if (defined(_CUPTI_H_) || defined(CUPTI_API_VERSION)) && !defined(KVSCOPE_CHECK_CUPTI_)
#define KVSCOPE_CHECK_CUPTI_
static inline enum kvs_status kvs_cupti_status_(const struct kvs_logger *lg, CUptiResult r,
                                                const char *expr, const char *file, int line)
{
    if (r == CUPTI_SUCCESS)
        return KVS_STATUS_OK;
    const char *what = NULL;
    if (cuptiGetResultString(r, &what) != CUPTI_SUCCESS)
        what = NULL;
    return kvs_check_fail(lg, KVS_STATUS_CUPTI, "CUPTI", (long)r, what, expr, file, line);
}
#endif

#if defined(NCCL_MAJOR) && !defined(KVSCOPE_CHECK_NCCL_)
#define KVSCOPE_CHECK_NCCL_
static inline enum kvs_status kvs_nccl_status_(const struct kvs_logger *lg, ncclResult_t r,
                                               const char *expr, const char *file, int line)
{
    if (r == ncclSuccess)
        return KVS_STATUS_OK;
    return kvs_check_fail(lg, KVS_STATUS_NCCL, "NCCL", (long)r, ncclGetErrorString(r), expr, file,
                          line);
}
#endif
