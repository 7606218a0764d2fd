/* kernels/cuda/gemm.c — BF16 projections through cuBLAS: the linear layer
 * y = x . w^T (PyTorch layout) and its strided-batched form for the per-head
 * projections of absorbed MLA. Float accumulation, one BF16 rounding of each
 * output, like kvs_cpu_linear (kernels/cpu/decode_ops.c), against which
 * kernels/tests/gpu/test_kernels_ops.c checks it.
 *
 * Row-major y[M,N] is column-major y^T[N,M] = w[N,K] . x^T: so cuBLAS sees
 * op(A) = w^T of a column-major [K,N] (lda = K) and B = x^T, a column-major
 * [K,M] with ldb = the row pitch of x.
 *
 * The handle owns a fixed 32 MiB workspace (cublasSetWorkspace), so cuBLAS
 * allocates nothing while a CUDA graph is being captured.
 *
 * One row (m <= KVS_GEMV_AUTO_MAX_M) over weights up to
 * KVS_GEMV_AUTO_MAX_BYTES goes to the GEMV kernel (gemv.cu) instead: there
 * cuBLAS runs split-K plus a reduction kernel and the GEMV measured 1.4-2.7x
 * faster on the H200 (kvs_gemm_set_mode overrides).
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdlib.h>

#include "kvscope/check.h"
#include "kvscope/kernels.h"

#define KVS_GEMM_WORKSPACE (32u << 20)

struct kvs_gemm {
    cublasHandle_t handle;
    void *workspace;
    void *stream;
    enum kvs_gemm_mode mode;
    struct kvs_kernel_opts opts; /* the GEMV kernel's launch */
    struct kvs_logger lg;
    const struct kvs_logger *lgp;
};

void kvs_gemm_set_mode(struct kvs_gemm *g, enum kvs_gemm_mode mode)
{
    if (g)
        g->mode = mode;
}

void kvs_gemm_set_opts(struct kvs_gemm *g, const struct kvs_kernel_opts *opts)
{
    static const struct kvs_kernel_opts defaults;
    if (g)
        g->opts = opts ? *opts : defaults;
}

/* The GEMV kernel for this call? (Only where it is supported.) */
static int use_gemv(const struct kvs_gemm *g, const kvs_bf16 *x, int64_t ldx, int m, int k,
                    const struct kvs_gemv_out *o, int batch, int64_t stride_x, int64_t stride_w)
{
    if (g->mode == KVS_GEMM_CUBLAS ||
        !kvs_cuda_gemv_supported(x, ldx, m, k, o, 1, batch, stride_x, stride_w))
        return 0;
    uint64_t bytes = (uint64_t)o->n * (uint64_t)k * 2u * (uint64_t)batch;
    return g->mode == KVS_GEMM_GEMV ||
           (m <= KVS_GEMV_AUTO_MAX_M && bytes <= KVS_GEMV_AUTO_MAX_BYTES);
}

enum kvs_status kvs_gemm_init(struct kvs_gemm **out, void *stream, const struct kvs_logger *lg)
{
    if (!out)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    struct kvs_gemm *g = calloc(1, sizeof *g);
    if (!g)
        return KVS_STATUS_NO_MEMORY;
    g->stream = stream;
    g->mode = KVS_GEMM_AUTO;
    if (lg) {
        g->lg = *lg;
        g->lgp = &g->lg;
    }
    enum kvs_status st = KVS_CUBLAS_STATUS(g->lgp, cublasCreate(&g->handle));
    if (st == KVS_STATUS_OK)
        st = KVS_CUBLAS_STATUS(g->lgp, cublasSetStream(g->handle, (cudaStream_t)stream));
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(g->lgp, cudaMalloc(&g->workspace, KVS_GEMM_WORKSPACE));
    if (st == KVS_STATUS_OK)
        st = KVS_CUBLAS_STATUS(g->lgp,
                               cublasSetWorkspace(g->handle, g->workspace, KVS_GEMM_WORKSPACE));
    if (st != KVS_STATUS_OK) {
        kvs_gemm_free(g);
        return st;
    }
    *out = g;
    return KVS_STATUS_OK;
}

void kvs_gemm_free(struct kvs_gemm *g)
{
    if (!g)
        return;
    if (g->handle)
        cublasDestroy(g->handle);
    if (g->workspace)
        cudaFree(g->workspace);
    free(g);
}

enum kvs_status kvs_gemm_linear_bf16(struct kvs_gemm *g, const kvs_bf16 *x, const kvs_bf16 *w,
                                     kvs_bf16 *y, int m, int n, int k)
{
    if (!g || m < 0 || n < 0 || k <= 0 || (m > 0 && n > 0 && (!x || !w || !y)))
        return KVS_STATUS_INVALID_ARGUMENT;
    if (m == 0 || n == 0)
        return KVS_STATUS_OK;
    struct kvs_gemv_out o = {w, y, n, n};
    if (use_gemv(g, x, k, m, k, &o, 1, 0, 0))
        return kvs_cuda_gemv_bf16(x, k, m, k, &o, 1, 0, 1, 0, 0, 0, &g->opts, g->stream);
    const float one = 1.0f, zero = 0.0f;
    KVS_CUBLAS_TRY(g->lgp, cublasGemmEx(g->handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w,
                                        CUDA_R_16BF, k, x, CUDA_R_16BF, k, &zero, y, CUDA_R_16BF,
                                        n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return KVS_STATUS_OK;
}

enum kvs_status kvs_gemm_linear_batched_bf16(struct kvs_gemm *g, const kvs_bf16 *x, int64_t ldx,
                                             int64_t stride_x, const kvs_bf16 *w,
                                             int64_t stride_w, kvs_bf16 *y, int64_t ldy,
                                             int64_t stride_y, int m, int n, int k, int batch)
{
    if (!g || m < 0 || n < 0 || k <= 0 || batch < 0 || ldx < k || ldy < n)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (m == 0 || n == 0 || batch == 0)
        return KVS_STATUS_OK;
    if (!x || !w || !y)
        return KVS_STATUS_INVALID_ARGUMENT;
    struct kvs_gemv_out o = {w, y, n, ldy};
    if (use_gemv(g, x, ldx, m, k, &o, batch, stride_x, stride_w))
        return kvs_cuda_gemv_bf16(x, ldx, m, k, &o, 1, 0, batch, stride_x, stride_w, stride_y,
                                  &g->opts, g->stream);
    const float one = 1.0f, zero = 0.0f;
    KVS_CUBLAS_TRY(g->lgp,
                   cublasGemmStridedBatchedEx(g->handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one,
                                              w, CUDA_R_16BF, k, stride_w, x, CUDA_R_16BF,
                                              (int)ldx, stride_x, &zero, y, CUDA_R_16BF, (int)ldy,
                                              stride_y, batch, CUBLAS_COMPUTE_32F,
                                              CUBLAS_GEMM_DEFAULT));
    return KVS_STATUS_OK;
}
