/* kernels/cuda/decode_ops.cu — the small ops of a GLM-5 decode step on the
 * GPU: RMSNorm (alone and fused with the residual add before it),
 * interleaved RoPE, SwiGLU, residual add, embedding lookup, argmax. Each
 * follows its reference in kernels/cpu/decode_ops.c (same formulas, float
 * arithmetic, one BF16 rounding per output) and is checked against it by
 * kernels/tests/gpu/test_kernels_ops.c.
 *
 * At decode sizes these are latency-bound: a 6144-wide row is 12 KB, so what
 * costs is the number of dependent trips to memory, not bytes.
 * variants (by shape and alignment; both give the reference's results):
 *   rmsnorm  vec: one block per token, one 16-byte chunk per thread, the row
 *            kept in registers (one trip for x and w together); else a
 *            strided loop
 *   rope     vec: every 4-pair chunk of the token loaded at once, angles
 *            reduced mod 2 pi in double then sincos; else a strided loop
 *   argmax   vec: 16-byte loads, 8 in flight per thread; else a strided loop
 *   add      16-byte when aligned; swiglu, embedding: one each
 * The vector RMSNorms, the vector RoPE, SwiGLU and the vector argmax are
 * launched with programmatic dependent launch (kernels/src/pdl_impl.cuh):
 * each waits for the kernel before it first thing.
 */
#include <math.h>

#include "cuda_common.cuh"
#include "pdl_impl.cuh"
#include "rope_impl.cuh"

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

/* the same for a kernel that sums once: the warp totals are summed by a
 * second shuffle tree in every warp, with no second barrier */
__device__ float block_sum_once(float v, float *red)
{
    const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0)
        red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
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

__device__ __forceinline__ void unpack8(const uint4 &v, float (&f)[8])
{
    const uint32_t *p = &v.x;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        f[2 * k] = bf(p[k] & 0xffffu);
        f[2 * k + 1] = bf(p[k] >> 16);
    }
}

__device__ __forceinline__ uint4 pack8(const float (&f)[8])
{
    uint4 v;
    uint32_t *p = &v.x;
#pragma unroll
    for (int k = 0; k < 4; k++)
        p[k] = (uint32_t)tobf(f[2 * k]) | (uint32_t)tobf(f[2 * k + 1]) << 16;
    return v;
}

constexpr int kNormMaxChunks = 1024; /* 8 values each: rows up to 8192 */

/* dim % 8 == 0, dim / 8 <= kNormMaxChunks, 16-byte aligned rows; blockDim =
 * dim / 8 rounded up to a warp. The weight load is issued with x's (it
 * comes from DRAM, x from L2). ADD: x += r, stored, and the norm is of the
 * stored (rounded) values, as kvs_cpu_add_rmsnorm. x is not const only for
 * ADD. */
template <bool ADD>
__global__ void __launch_bounds__(kNormMaxChunks)
rmsnorm_vec_kernel(uint16_t *x, const uint16_t *__restrict__ r, const uint16_t *__restrict__ w,
                   uint16_t *__restrict__ y, int dim, float eps)
{
    __shared__ float red[32];
    const int c = threadIdx.x, n8 = dim >> 3;
    const size_t row = (size_t)blockIdx.x * dim;
    uint4 xv = make_uint4(0u, 0u, 0u, 0u), wv = xv;
    float f[8], g[8];
    if (c < n8)
        kvs_prefetch_l2((const uint4 *)w + c);
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    if (c < n8) {
        wv = __ldg((const uint4 *)w + c);
        xv = *((const uint4 *)(x + row) + c);
        if (ADD) {
            const uint4 rv = *((const uint4 *)(r + row) + c);
            unpack8(xv, f);
            unpack8(rv, g);
#pragma unroll
            for (int k = 0; k < 8; k++)
                f[k] = f[k] + g[k];
            xv = pack8(f);
            *((uint4 *)(x + row) + c) = xv;
        }
    }
    unpack8(xv, f);
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++)
        ss += f[k] * f[k];
    ss = block_sum_once(ss, red);
    const float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    if (c < n8) {
        unpack8(wv, g);
#pragma unroll
        for (int k = 0; k < 8; k++)
            f[k] = f[k] * inv * g[k];
        *((uint4 *)(y + row) + c) = pack8(f);
    }
}

bool norm_vec_ok(int dim, const void *x, const void *r, const void *w, const void *y)
{
    return dim % 8 == 0 && dim / 8 <= kNormMaxChunks && aligned16(x) && aligned16(r) &&
           aligned16(w) && aligned16(y);
}

unsigned norm_threads(int dim) { return (unsigned)((dim / 8 + 31) & ~31); }

// ----------------------------------------------------------------------------
// RoPE: one block per token; the angles in double, as the reference does

__global__ void rope_kernel(uint16_t *__restrict__ x, const int32_t *__restrict__ pos, int heads,
                            int stride, int offset, int dim, double log_theta)
{
    extern __shared__ float cs[]; /* [dim/2] cos, then [dim/2] sin */
    const int half = dim / 2, t = blockIdx.x;
    for (int i = threadIdx.x; i < half; i += blockDim.x)
        kvs_rope_cos_sin((double)pos[t], i, dim, log_theta, &cs[i], &cs[half + i]);
    __syncthreads();
    for (int k = threadIdx.x; k < heads * half; k += blockDim.x) {
        int h = k / half, i = k - h * half;
        uint16_t *p = x + ((size_t)t * heads + h) * stride + offset + 2 * i;
        float x0, x1;
        kvs_rope_rotate(bf(p[0]), bf(p[1]), cs[i], cs[half + i], &x0, &x1);
        p[0] = tobf(x0);
        p[1] = tobf(x1);
    }
}

constexpr int kRopeThreads = 256;
constexpr int kRopeInFlight = 4; /* chunks per thread and round */

/* dim, stride and offset multiples of 8, x 16-byte aligned: chunk j of head h
 * holds pairs 4j .. 4j+3. A thread loads its first chunks, then computes the
 * angle table (which the loads do not need; kvs_rope_cos_sin), then
 * rotates. */
__global__ void __launch_bounds__(kRopeThreads)
rope_vec_kernel(uint16_t *__restrict__ x, const int32_t *__restrict__ pos, int heads, int stride,
                int offset, int dim, double log_theta)
{
    extern __shared__ float cs[]; /* [dim/2] cos, then [dim/2] sin */
    const int half = dim / 2, t = blockIdx.x, cpr = dim / 8, chunks = heads * cpr;
    uint16_t *xt = x + (size_t)t * heads * stride + offset;
    auto chunk = [&](int c) {
        int h = c / cpr;
        return (uint4 *)(xt + (size_t)h * stride) + (c - h * cpr);
    };
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    int base = threadIdx.x;
    uint4 v[kRopeInFlight];
#pragma unroll
    for (int u = 0; u < kRopeInFlight; u++)
        if (base + u * kRopeThreads < chunks)
            v[u] = *chunk(base + u * kRopeThreads);
    const double p = (double)pos[t];
    for (int i = threadIdx.x; i < half; i += kRopeThreads)
        kvs_rope_cos_sin(p, i, dim, log_theta, &cs[i], &cs[half + i]);
    __syncthreads();
    for (;;) {
#pragma unroll
        for (int u = 0; u < kRopeInFlight; u++) {
            const int c = base + u * kRopeThreads;
            if (c >= chunks)
                continue;
            const int i0 = 4 * (c % cpr);
            uint32_t *w = &v[u].x;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                float x0, x1;
                kvs_rope_rotate(bf(w[q] & 0xffffu), bf(w[q] >> 16), cs[i0 + q], cs[half + i0 + q],
                                &x0, &x1);
                w[q] = (uint32_t)tobf(x0) | (uint32_t)tobf(x1) << 16;
            }
            *chunk(c) = v[u];
        }
        base += kRopeInFlight * kRopeThreads;
        if (base >= chunks)
            break;
#pragma unroll
        for (int u = 0; u < kRopeInFlight; u++)
            if (base + u * kRopeThreads < chunks)
                v[u] = *chunk(base + u * kRopeThreads);
    }
}

// ----------------------------------------------------------------------------
// elementwise

__global__ void swiglu_kernel(const uint16_t *__restrict__ gu, uint16_t *__restrict__ out,
                              int tokens, int inter)
{
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
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

constexpr int kArgmaxThreads = 1024;
constexpr int kArgmaxInFlight = 8;

/* vocab % 4 == 0 and 16-byte aligned rows: float4 loads, kArgmaxInFlight in
 * flight per thread (a 154880-entry row is ~38 loads a thread: 5 trips to
 * L2 instead of 151). `better` decides order, so the visiting order does
 * not matter. */
__global__ void __launch_bounds__(kArgmaxThreads)
argmax_vec_kernel(const float *__restrict__ logits, int vocab, int32_t *__restrict__ ids)
{
    __shared__ float sv[32];
    __shared__ int si[32];
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    const float4 *l4 = (const float4 *)(logits + (size_t)blockIdx.x * vocab);
    const int n4 = vocab / 4;
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    auto take = [&](float v, int i) {
        if (bi == 0x7fffffff || better(v, i, bv, bi))
            bv = v, bi = i;
    };
    auto take4 = [&](const float4 &a, int c) {
        take(a.x, 4 * c);
        take(a.y, 4 * c + 1);
        take(a.z, 4 * c + 2);
        take(a.w, 4 * c + 3);
    };
    int c = threadIdx.x;
    for (; c + (kArgmaxInFlight - 1) * kArgmaxThreads < n4; c += kArgmaxInFlight * kArgmaxThreads) {
        float4 a[kArgmaxInFlight];
#pragma unroll
        for (int u = 0; u < kArgmaxInFlight; u++)
            a[u] = __ldg(l4 + c + u * kArgmaxThreads);
#pragma unroll
        for (int u = 0; u < kArgmaxInFlight; u++)
            take4(a[u], c + u * kArgmaxThreads);
    }
    for (; c < n4; c += kArgmaxThreads)
        take4(__ldg(l4 + c), c);
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
        for (int i = 1; i < kArgmaxThreads / 32; i++)
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
                                            int tokens, int dim, float eps,
                                            const struct kvs_kernel_opts *opts, void *stream)
{
    if (tokens == 0)
        return KVS_STATUS_OK;
    if (!x || !w || !y || tokens < 0 || dim <= 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    cudaStream_t s = kvs_stream(stream);
    if (norm_vec_ok(dim, x, x, w, y)) {
        KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, rmsnorm_vec_kernel<false>, dim3((unsigned)tokens),
                                          dim3(norm_threads(dim)), 0, s, const_cast<kvs_bf16 *>(x),
                                          (const uint16_t *)nullptr, w, y, dim, eps));
        return KVS_STATUS_OK;
    }
    rmsnorm_kernel<<<tokens, 256, 0, s>>>(x, w, y, dim, eps);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_add_rmsnorm(kvs_bf16 *x, const kvs_bf16 *r, const kvs_bf16 *w,
                                                kvs_bf16 *y, int tokens, int dim, float eps,
                                                const struct kvs_kernel_opts *opts, void *stream)
{
    if (tokens == 0)
        return KVS_STATUS_OK;
    if (!x || !r || !w || !y || tokens < 0 || dim <= 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (!norm_vec_ok(dim, x, r, w, y)) {
        enum kvs_status st = kvs_cuda_add(x, r, (size_t)tokens * (size_t)dim, stream);
        return st != KVS_STATUS_OK ? st : kvs_cuda_rmsnorm(x, w, y, tokens, dim, eps, opts, stream);
    }
    KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, rmsnorm_vec_kernel<true>, dim3((unsigned)tokens),
                                      dim3(norm_threads(dim)), 0, kvs_stream(stream), x, r, w, y,
                                      dim, eps));
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_rope_interleaved(kvs_bf16 *x, const int32_t *pos, int tokens,
                                                     int heads, int stride, int offset, int dim,
                                                     float theta,
                                                     const struct kvs_kernel_opts *opts,
                                                     void *stream)
{
    if (tokens == 0 || heads == 0)
        return KVS_STATUS_OK;
    if (!x || !pos || tokens < 0 || heads < 0 || dim <= 0 || dim % 2 || offset < 0 ||
        offset + dim > stride || !(theta > 0.f) || dim > 8192)
        return KVS_STATUS_INVALID_ARGUMENT;
    cudaStream_t s = kvs_stream(stream);
    const size_t smem = (size_t)dim * sizeof(float);
    if (dim % 8 == 0 && stride % 8 == 0 && offset % 8 == 0 && aligned16(x)) {
        KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, rope_vec_kernel, dim3((unsigned)tokens),
                                          dim3(kRopeThreads), smem, s, x, pos, heads, stride,
                                          offset, dim, log((double)theta)));
        return KVS_STATUS_OK;
    } else
        rope_kernel<<<tokens, 256, smem, s>>>(x, pos, heads, stride, offset, dim,
                                              log((double)theta));
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_swiglu(const kvs_bf16 *gate_up, kvs_bf16 *out, int tokens,
                                           int inter, const struct kvs_kernel_opts *opts,
                                           void *stream)
{
    if (tokens == 0 || inter == 0)
        return KVS_STATUS_OK;
    if (!gate_up || !out || tokens < 0 || inter < 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    KVS_CUDA_TRY(NULL,
                 kvs_launch_pdl(opts, swiglu_kernel, dim3(grid_for((size_t)tokens * inter, 256)),
                                dim3(256), 0, kvs_stream(stream), gate_up, out, tokens, inter));
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
                                           const struct kvs_kernel_opts *opts, void *stream)
{
    if (tokens == 0)
        return KVS_STATUS_OK;
    if (!logits || !ids || tokens < 0 || vocab <= 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (vocab % 4 == 0 && aligned16(logits)) {
        KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, argmax_vec_kernel, dim3((unsigned)tokens),
                                          dim3(kArgmaxThreads), 0, kvs_stream(stream), logits,
                                          vocab, ids));
        return KVS_STATUS_OK;
    } else
        argmax_kernel<<<tokens, 1024, 0, kvs_stream(stream)>>>(logits, vocab, ids);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}
