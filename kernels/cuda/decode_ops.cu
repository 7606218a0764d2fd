/* kernels/cuda/decode_ops.cu — the small ops of a GLM-5 decode step on the
 * GPU: RMSNorm, interleaved RoPE, SwiGLU, residual add, embedding lookup,
 * argmax. Each follows its reference in kernels/cpu/decode_ops.c (same
 * formulas, float arithmetic, one BF16 rounding per output) and is checked
 * against it by kernels/tests/gpu/test_kernels_ops.c.
 *
 * variants: one each. At decode sizes these are latency-bound, so they aim
 * for few launches and coalesced access rather than peak bandwidth; the
 * elementwise ones take 16-byte accesses when sizes and pointers allow.
 */
#include <math.h>

#include "cuda_common.cuh"

namespace {

__device__ __forceinline__ float bf(uint16_t x) { return kvs_conv_bf16_to_float(x); }
__device__ __forceinline__ uint16_t tobf(float x) { return kvs_conv_float_to_bf16(x); }

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* block-wide sum (blockDim.x a multiple of 32, at most 1024) */
__device__ float block_sum(float v, float *red)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0)
        red[w] = v;
    __syncthreads();
    float s = 0.f;
    for (int i = 0; i < nw; i++)
        s += red[i];
    __syncthreads();
    return s;
}

// ----------------------------------------------------------------------------
// RMSNorm: one block per token

__global__ void rmsnorm_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
                               uint16_t *__restrict__ y, int dim, float eps)
{
    __shared__ float red[32];
    const uint16_t *xr = x + (size_t)blockIdx.x * dim;
    uint16_t *yr = y + (size_t)blockIdx.x * dim;
    float ss = 0.f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x)
        ss += bf(xr[i]) * bf(xr[i]);
    ss = block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x)
        yr[i] = tobf(bf(xr[i]) * inv * bf(w[i]));
}

// ----------------------------------------------------------------------------
// RoPE: one block per token; the angles in double, as the reference does

__global__ void rope_kernel(uint16_t *__restrict__ x, const int32_t *__restrict__ pos, int heads,
                            int stride, int offset, int dim, double log_theta)
{
    extern __shared__ float cs[]; /* [dim/2] cos, then [dim/2] sin */
    const int half = dim / 2, t = blockIdx.x;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        double ang = (double)pos[t] * exp(-2.0 * i / dim * log_theta);
        cs[i] = (float)cos(ang);
        cs[half + i] = (float)sin(ang);
    }
    __syncthreads();
    for (int k = threadIdx.x; k < heads * half; k += blockDim.x) {
        int h = k / half, i = k - h * half;
        uint16_t *p = x + ((size_t)t * heads + h) * stride + offset + 2 * i;
        float a = bf(p[0]), b = bf(p[1]), c = cs[i], s = cs[half + i];
        p[0] = tobf(a * c - b * s);
        p[1] = tobf(a * s + b * c);
    }
}

// ----------------------------------------------------------------------------
// elementwise

__global__ void swiglu_kernel(const uint16_t *__restrict__ gu, uint16_t *__restrict__ out,
                              int tokens, int inter)
{
    size_t n = (size_t)tokens * inter;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t t = i / inter, j = i - t * inter;
        float g = bf(gu[t * 2 * inter + j]);
        out[i] = tobf(g / (1.0f + expf(-g)) * bf(gu[t * 2 * inter + inter + j]));
    }
}

__global__ void add_vec_kernel(uint4 *__restrict__ x, const uint4 *__restrict__ y, size_t n8)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 a = x[i], b = y[i];
        uint32_t *pa = &a.x;
        const uint32_t *pb = &b.x;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            uint32_t lo = tobf(bf(pa[k] & 0xffffu) + bf(pb[k] & 0xffffu));
            uint32_t hi = tobf(bf(pa[k] >> 16) + bf(pb[k] >> 16));
            pa[k] = lo | hi << 16;
        }
        x[i] = a;
    }
}

__global__ void add_kernel(uint16_t *__restrict__ x, const uint16_t *__restrict__ y, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = tobf(bf(x[i]) + bf(y[i]));
}

__global__ void embedding_kernel(const uint16_t *__restrict__ table, const int32_t *__restrict__ ids,
                                 uint16_t *__restrict__ out, int dim, int vec)
{
    const size_t row = (size_t)ids[blockIdx.x];
    if (vec) {
        const uint4 *src = (const uint4 *)(table + row * dim);
        uint4 *dst = (uint4 *)(out + (size_t)blockIdx.x * dim);
        for (int i = threadIdx.x; i < dim / 8; i += blockDim.x)
            dst[i] = src[i];
    } else {
        for (int i = threadIdx.x; i < dim; i += blockDim.x)
            out[(size_t)blockIdx.x * dim + i] = table[row * dim + i];
    }
}

// ----------------------------------------------------------------------------
// argmax: one block per token; NaN ranks first, ties to the lower index

__device__ __forceinline__ bool better(float a, int ia, float b, int ib)
{
    bool na = isnan(a), nb = isnan(b);
    if (na != nb)
        return na;
    if (!na && a != b)
        return a > b;
    return ia < ib;
}

__global__ void argmax_kernel(const float *__restrict__ logits, int vocab, int32_t *__restrict__ ids)
{
    __shared__ float sv[32];
    __shared__ int si[32];
    const float *l = logits + (size_t)blockIdx.x * vocab;
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int v = threadIdx.x; v < vocab; v += blockDim.x)
        if (bi == 0x7fffffff || better(l[v], v, bv, bi))
            bv = l[v], bi = v;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (oi != 0x7fffffff && (bi == 0x7fffffff || better(ov, oi, bv, bi)))
            bv = ov, bi = oi;
    }
    if (lane == 0)
        sv[w] = bv, si[w] = bi;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < (int)(blockDim.x >> 5); i++)
            if (si[i] != 0x7fffffff && (bi == 0x7fffffff || better(sv[i], si[i], bv, bi)))
                bv = sv[i], bi = si[i];
        ids[blockIdx.x] = bi;
    }
}

unsigned grid_for(size_t n, int threads)
{
    size_t b = (n + threads - 1) / threads, cap = (size_t)kvs_sm_count() * 16;
    return (unsigned)(b < cap ? (b ? b : 1) : cap);
}

} // namespace

// ----------------------------------------------------------------------------
// launchers

extern "C" enum kvs_status kvs_cuda_rmsnorm(const kvs_bf16 *x, const kvs_bf16 *w, kvs_bf16 *y,
                                            int tokens, int dim, float eps, void *stream)
{
    if (tokens == 0)
        return KVS_STATUS_OK;
    if (!x || !w || !y || tokens < 0 || dim <= 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    rmsnorm_kernel<<<tokens, 256, 0, kvs_stream(stream)>>>(x, w, y, dim, eps);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_rope_interleaved(kvs_bf16 *x, const int32_t *pos, int tokens,
                                                     int heads, int stride, int offset, int dim,
                                                     float theta, void *stream)
{
    if (tokens == 0 || heads == 0)
        return KVS_STATUS_OK;
    if (!x || !pos || tokens < 0 || heads < 0 || dim <= 0 || dim % 2 || offset < 0 ||
        offset + dim > stride || !(theta > 0.f) || dim > 8192)
        return KVS_STATUS_INVALID_ARGUMENT;
    rope_kernel<<<tokens, 256, (size_t)dim * sizeof(float), kvs_stream(stream)>>>(
        x, pos, heads, stride, offset, dim, log((double)theta));
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_swiglu(const kvs_bf16 *gate_up, kvs_bf16 *out, int tokens,
                                           int inter, void *stream)
{
    if (tokens == 0 || inter == 0)
        return KVS_STATUS_OK;
    if (!gate_up || !out || tokens < 0 || inter < 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    swiglu_kernel<<<grid_for((size_t)tokens * inter, 256), 256, 0, kvs_stream(stream)>>>(
        gate_up, out, tokens, inter);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_add(kvs_bf16 *x, const kvs_bf16 *y, size_t n, void *stream)
{
    if (n == 0)
        return KVS_STATUS_OK;
    if (!x || !y)
        return KVS_STATUS_INVALID_ARGUMENT;
    cudaStream_t s = kvs_stream(stream);
    if (n % 8 == 0 && aligned16(x) && aligned16(y))
        add_vec_kernel<<<grid_for(n / 8, 256), 256, 0, s>>>((uint4 *)x, (const uint4 *)y, n / 8);
    else
        add_kernel<<<grid_for(n, 256), 256, 0, s>>>(x, y, n);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_embedding(const kvs_bf16 *table, const int32_t *ids,
                                              kvs_bf16 *out, int tokens, int dim, void *stream)
{
    if (tokens == 0)
        return KVS_STATUS_OK;
    if (!table || !ids || !out || tokens < 0 || dim <= 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    int vec = dim % 8 == 0 && aligned16(table) && aligned16(out);
    embedding_kernel<<<tokens, 256, 0, kvs_stream(stream)>>>(table, ids, out, dim, vec);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_argmax(const float *logits, int tokens, int vocab, int32_t *ids,
                                           void *stream)
{
    if (tokens == 0)
        return KVS_STATUS_OK;
    if (!logits || !ids || tokens < 0 || vocab <= 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    argmax_kernel<<<tokens, 1024, 0, kvs_stream(stream)>>>(logits, vocab, ids);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}
