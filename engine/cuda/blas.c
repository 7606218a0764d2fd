/* engine/cuda/blas.c — the float-output linear (BF16 x BF16 -> float through
 * cuBLAS) the engine uses for the router logits and the LM head, where BF16
 * outputs would make near-ties in top-k and argmax more likely than the model
 * makes them. kernels.h's kvs_gemm has BF16 outputs only; if it grows a float
 * output this file goes. Checked against kvs_eng_cpu_linear_f32 by
 * kernels/tests/gpu/test_kernels_engine_ops.c. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdlib.h>

#include "kvscope/check.h"
#include "ops.h"

/* cuBLAS needs a workspace of its own to be captured in a CUDA graph. */
#define KVS_ENG_BLAS_WORKSPACE (8u << 20)

struct kvs_eng_blas {
    cublasHandle_t handle;
    void *workspace;
    struct kvs_logger lg;
};

uint64_t kvs_eng_blas_workspace_bytes(void)
{
    return KVS_ENG_BLAS_WORKSPACE;
}

enum kvs_status kvs_eng_blas_init(struct kvs_eng_blas **out, void *stream,
                                  const struct kvs_logger *lg)
{
    struct kvs_eng_blas *b = calloc(1, sizeof *b);
    if (!b)
        return KVS_STATUS_NO_MEMORY;
    b->lg = lg ? *lg : kvs_logger_stderr();
    enum kvs_status st = KVS_CUBLAS_STATUS(&b->lg, cublasCreate(&b->handle));
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(&b->lg, cudaMalloc(&b->workspace, KVS_ENG_BLAS_WORKSPACE));
    if (st == KVS_STATUS_OK)
        st = KVS_CUBLAS_STATUS(&b->lg, cublasSetStream(b->handle, (cudaStream_t)stream));
    if (st == KVS_STATUS_OK)
        st = KVS_CUBLAS_STATUS(&b->lg, cublasSetWorkspace(b->handle, b->workspace,
                                                          KVS_ENG_BLAS_WORKSPACE));
    if (st != KVS_STATUS_OK) {
        kvs_eng_blas_free(b);
        return st;
    }
    *out = b;
    return KVS_STATUS_OK;
}

void kvs_eng_blas_free(struct kvs_eng_blas *b)
{
    if (!b)
        return;
    if (b->handle)
        cublasDestroy(b->handle);
    cudaFree(b->workspace);
    free(b);
}

/* Row-major y[M,N] = x[M,K] w[N,K]^T is column-major y^T = w^T' x^T: A = w
 * (K x N column-major, transposed), B = x (K x M), C = y^T (N x M). */
enum kvs_status kvs_eng_cuda_linear_f32(struct kvs_eng_blas *b, const kvs_bf16 *x,
                                        const kvs_bf16 *w, float *y, int m, int n, int k)
{
    const float one = 1.0f, zero = 0.0f;
    KVS_CUBLAS_TRY(&b->lg, cublasGemmEx(b->handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w,
                                        CUDA_R_16BF, k, x, CUDA_R_16BF, k, &zero, y, CUDA_R_32F, n,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return KVS_STATUS_OK;
}
