/* kernels/cuda/cast.cu — FP8 e4m3 -> BF16 cast of a whole buffer, and the
 * gather-then-cast of active tokens. Checked bit for bit against
 * kernels/cpu/convert.c by kernels/tests/gpu/test_kernels_cast.c; timed by
 * kernels/bench/bench_kernels.cu.
 *
 * variants:
 *   generic  one element per thread, through float (kvs_conv_fp8_to_float,
 *            kvs_conv_float_to_bf16): the shape of a framework's generic
 *            elementwise casting copy. No artificial slow-down.
 *   vector   packed exact conversion (kvs_cvt4_fp8_bf16); its load/store
 *            shapes and grids are the configurations of cast_cfg.h, and
 *            KVS_CAST_CFG_VECTOR (vec8x4g: 8 codes a lane, 4 in flight, a
 *            grid covering the buffer) is the one it uses.
 *   gather   8 codes per thread and step from each gathered row, 16-byte
 *            stores contiguous across the warp.
 * Pointers not aligned for the vector shapes (or rows not a multiple of 8
 * elements) take the one-element-per-thread path: same results.
 */
#include "cast_cfg.h"
#include "cuda_common.cuh"

namespace {

constexpr int kThreads = 256;

__global__ void cast_generic_kernel(const uint8_t *__restrict__ src, uint16_t *__restrict__ dst,
                                    size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = kvs_conv_float_to_bf16(kvs_conv_fp8_to_float(src[i]));
}

__device__ __forceinline__ void cast_tail(const uint8_t *src, uint16_t *dst, int tail)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int i = 0; i < tail; i++)
            dst[i] = kvs_conv_fp8_to_bf16(src[i]);
}

/* cfg 0: 16 codes per lane; the lane's 32 output bytes as two stores */
__global__ void __launch_bounds__(kThreads)
cast_vec16_kernel(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t chunks,
                  const uint8_t *__restrict__ tail_src, uint16_t *__restrict__ tail_dst, int tail)
{
    const size_t stride = (size_t)gridDim.x * kThreads * 2;
    for (size_t base = (size_t)blockIdx.x * kThreads * 2 + threadIdx.x; base < chunks;
         base += stride) {
        uint4 v[2];
#pragma unroll
        for (int u = 0; u < 2; u++)
            if (base + u * kThreads < chunks)
                v[u] = __ldcs(src + base + u * kThreads);
#pragma unroll
        for (int u = 0; u < 2; u++) {
            size_t c = base + u * kThreads;
            if (c < chunks) {
                uint4 o0, o1;
                kvs_cvt4_fp8_bf16(v[u].x, o0.x, o0.y);
                kvs_cvt4_fp8_bf16(v[u].y, o0.z, o0.w);
                kvs_cvt4_fp8_bf16(v[u].z, o1.x, o1.y);
                kvs_cvt4_fp8_bf16(v[u].w, o1.z, o1.w);
                __stcs(dst + 2 * c, o0);
                __stcs(dst + 2 * c + 1, o1);
            }
        }
    }
    cast_tail(tail_src, tail_dst, tail);
}

/* cfgs 1-3: 8 codes per lane and step, U steps in flight; a warp's loads
 * cover 256 contiguous bytes and its stores 512 */
template <int U, bool STREAM>
__global__ void __launch_bounds__(kThreads)
cast_vec8_kernel(const uint2 *__restrict__ src, uint4 *__restrict__ dst, size_t chunks,
                 const uint8_t *__restrict__ tail_src, uint16_t *__restrict__ tail_dst, int tail)
{
    const size_t stride = (size_t)gridDim.x * kThreads * U;
    for (size_t base = (size_t)blockIdx.x * kThreads * U + threadIdx.x; base < chunks;
         base += stride) {
        uint2 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            size_t c = base + (size_t)u * kThreads;
            if (c < chunks)
                v[u] = STREAM ? __ldcs(src + c) : __ldg(src + c);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            size_t c = base + (size_t)u * kThreads;
            if (c < chunks) {
                uint4 o;
                kvs_cvt4_fp8_bf16(v[u].x, o.x, o.y);
                kvs_cvt4_fp8_bf16(v[u].y, o.z, o.w);
                if (STREAM)
                    __stcs(dst + c, o);
                else
                    dst[c] = o;
            }
        }
    }
    cast_tail(tail_src, tail_dst, tail);
}

/* cfg 5: warp step s covers codes 512 s .. 512 s + 511; lane l loads codes
 * 16 l .. 16 l + 15 of it, and its k-th store (k = 0, 1) writes codes
 * 256 k + 8 l .. + 7, which lane 16 k + l / 2 holds (its words 0-1 when l is
 * even, 2-3 when odd). U steps in flight; whole warps only (the shuffles),
 * the last n % 512 codes by block 0. */
template <int U>
__global__ void __launch_bounds__(kThreads)
cast_vec16sh_kernel(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t steps,
                    const uint8_t *__restrict__ tail_src, uint16_t *__restrict__ tail_dst, int tail)
{
    const int lane = threadIdx.x & 31;
    const size_t warps = (size_t)gridDim.x * (kThreads / 32);
    const size_t warp = (size_t)blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5);
    for (size_t s0 = warp; s0 < steps; s0 += warps * U) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (s0 + u * warps < steps)
                v[u] = __ldg(src + (s0 + u * warps) * 32 + lane);
#pragma unroll
        for (int u = 0; u < U; u++) {
            const size_t s = s0 + u * warps;
            if (s >= steps) /* uniform across the warp */
                continue;
#pragma unroll
            for (int k = 0; k < 2; k++) {
                const int from = 16 * k + (lane >> 1);
                uint32_t a0 = __shfl_sync(0xffffffffu, v[u].x, from);
                uint32_t a1 = __shfl_sync(0xffffffffu, v[u].y, from);
                uint32_t a2 = __shfl_sync(0xffffffffu, v[u].z, from);
                uint32_t a3 = __shfl_sync(0xffffffffu, v[u].w, from);
                uint32_t w0 = lane & 1 ? a2 : a0, w1 = lane & 1 ? a3 : a1;
                uint4 o;
                kvs_cvt4_fp8_bf16(w0, o.x, o.y);
                kvs_cvt4_fp8_bf16(w1, o.z, o.w);
                dst[s * 64 + 32 * k + lane] = o;
            }
        }
    }
    if (blockIdx.x == 0)
        for (int i = threadIdx.x; i < tail; i += kThreads)
            tail_dst[i] = kvs_conv_fp8_to_bf16(tail_src[i]);
}

/* chunk c (8 codes) is part j of token slot c / cpr (cpr = row / 8) */
__global__ void __launch_bounds__(kThreads)
gather_cast_kernel(const uint8_t *__restrict__ pool, uint32_t cpr,
                   const int32_t *__restrict__ tokens, uint32_t chunks, uint4 *__restrict__ dst)
{
    const uint32_t stride = gridDim.x * kThreads * 2;
    for (uint32_t base = blockIdx.x * kThreads * 2 + threadIdx.x; base < chunks; base += stride) {
        uint2 v[2];
#pragma unroll
        for (int u = 0; u < 2; u++) {
            uint32_t c = base + u * kThreads;
            if (c < chunks) {
                uint32_t slot = c / cpr, j = c - slot * cpr;
                v[u] = __ldg((const uint2 *)(pool + (size_t)tokens[slot] * cpr * 8) + j);
            }
        }
#pragma unroll
        for (int u = 0; u < 2; u++) {
            uint32_t c = base + u * kThreads;
            if (c < chunks) {
                uint4 o;
                kvs_cvt4_fp8_bf16(v[u].x, o.x, o.y);
                kvs_cvt4_fp8_bf16(v[u].y, o.z, o.w);
                dst[c] = o;
            }
        }
    }
}

__global__ void gather_cast_scalar_kernel(const uint8_t *__restrict__ pool, size_t row,
                                          const int32_t *__restrict__ tokens, size_t n,
                                          uint16_t *__restrict__ dst)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = kvs_conv_fp8_to_bf16(pool[(size_t)tokens[i / row] * row + i % row]);
}

bool aligned(const void *p, unsigned a) { return ((uintptr_t)p & (a - 1)) == 0; }

/* One full wave of `kernel`'s blocks (as many as are resident at once),
 * fewer if `blocks_needed` is smaller: a grid-stride loop then gives every
 * block the same share. */
template <class K> unsigned wave(K kernel, size_t blocks_needed)
{
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0) != cudaSuccess ||
        per_sm <= 0)
        per_sm = 2048 / kThreads;
    size_t cap = (size_t)kvs_sm_count() * per_sm;
    return (unsigned)(blocks_needed < cap ? (blocks_needed ? blocks_needed : 1) : cap);
}

enum kvs_status launch_generic(const kvs_fp8 *src, kvs_bf16 *dst, size_t n, cudaStream_t s)
{
    size_t blocks = (n + 255) / 256;
    if (blocks > 0x7fffffffu)
        return KVS_STATUS_INVALID_ARGUMENT;
    cast_generic_kernel<<<(unsigned)blocks, 256, 0, s>>>(src, dst, n);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

template <int U, bool STREAM>
void launch_vec8(const kvs_fp8 *src, kvs_bf16 *dst, size_t n, cudaStream_t s, bool full = false)
{
    size_t chunks = n / 8;
    size_t need = (chunks + kThreads * U - 1) / (kThreads * U);
    unsigned blocks = full && need <= 0x7fffffffu ? (unsigned)(need ? need : 1)
                                                  : wave(cast_vec8_kernel<U, STREAM>, need);
    cast_vec8_kernel<U, STREAM><<<blocks, kThreads, 0, s>>>(
        (const uint2 *)src, (uint4 *)dst, chunks, src + chunks * 8, dst + chunks * 8,
        (int)(n % 8));
}

} // namespace

extern "C" const char *kvs_cast_cfg_name(int cfg)
{
    static const char *const names[KVS_CAST_CFGS] = {"vec16x2", "vec8x4",  "vec8x4cs",
                                                     "vec8x8",  "vec8x4g", "vec16sh"};
    return cfg >= 0 && cfg < KVS_CAST_CFGS ? names[cfg] : "unknown";
}

extern "C" enum kvs_status kvs_cuda_cast_fp8_to_bf16_cfg(int cfg, const kvs_fp8 *src,
                                                         kvs_bf16 *dst, size_t n, void *stream)
{
    if (n == 0)
        return KVS_STATUS_OK;
    if (!src || !dst || cfg < 0 || cfg >= KVS_CAST_CFGS)
        return KVS_STATUS_INVALID_ARGUMENT;
    cudaStream_t s = kvs_stream(stream);
    unsigned need = cfg == 0 || cfg == 5 ? 16u : 8u;
    if (!aligned(src, need) || !aligned(dst, 16))
        return launch_generic(src, dst, n, s);
    switch (cfg) {
    case 0: {
        size_t chunks = n / 16;
        unsigned blocks = wave(cast_vec16_kernel, (chunks + 2 * kThreads - 1) / (2 * kThreads));
        cast_vec16_kernel<<<blocks, kThreads, 0, s>>>(
            (const uint4 *)src, (uint4 *)dst, chunks, src + chunks * 16, dst + chunks * 16,
            (int)(n % 16));
        break;
    }
    case 1: launch_vec8<4, false>(src, dst, n, s); break;
    case 2: launch_vec8<4, true>(src, dst, n, s); break;
    case 3: launch_vec8<8, false>(src, dst, n, s); break;
    case 4: launch_vec8<4, false>(src, dst, n, s, true); break;
    default: {
        size_t steps = n / 512;
        unsigned blocks = wave(cast_vec16sh_kernel<2>,
                               (steps + 2 * (kThreads / 32) - 1) / (2 * (kThreads / 32)));
        cast_vec16sh_kernel<2><<<blocks, kThreads, 0, s>>>(
            (const uint4 *)src, (uint4 *)dst, steps, src + steps * 512, dst + steps * 512,
            (int)(n % 512));
        break;
    }
    }
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_cast_fp8_to_bf16(enum kvs_cast_variant v, const kvs_fp8 *src,
                                                     kvs_bf16 *dst, size_t n, void *stream)
{
    if (n == 0)
        return KVS_STATUS_OK;
    if (!src || !dst)
        return KVS_STATUS_INVALID_ARGUMENT;
    switch (v) {
    case KVS_CAST_GENERIC: return launch_generic(src, dst, n, kvs_stream(stream));
    case KVS_CAST_VECTOR:
        return kvs_cuda_cast_fp8_to_bf16_cfg(KVS_CAST_CFG_VECTOR, src, dst, n, stream);
    }
    return KVS_STATUS_INVALID_ARGUMENT;
}

extern "C" enum kvs_status kvs_cuda_gather_cast_fp8_to_bf16(const kvs_fp8 *pool, size_t row,
                                                            const int32_t *tokens, size_t ntokens,
                                                            kvs_bf16 *dst, void *stream)
{
    if (ntokens == 0 || row == 0)
        return KVS_STATUS_OK;
    if (!pool || !tokens || !dst)
        return KVS_STATUS_INVALID_ARGUMENT;
    cudaStream_t s = kvs_stream(stream);
    size_t n = ntokens * row;
    if (row % 8 == 0 && aligned(pool, 8) && aligned(dst, 16) && n / 8 <= 0xffffffffu / 2) {
        uint32_t chunks = (uint32_t)(n / 8);
        unsigned blocks = wave(gather_cast_kernel, (chunks + 2 * kThreads - 1) / (2 * kThreads));
        gather_cast_kernel<<<blocks, kThreads, 0, s>>>(pool, (uint32_t)(row / 8), tokens, chunks,
                                                       (uint4 *)dst);
    } else {
        size_t blocks = (n + 255) / 256;
        if (blocks > 0x7fffffffu)
            return KVS_STATUS_INVALID_ARGUMENT;
        gather_cast_scalar_kernel<<<(unsigned)blocks, 256, 0, s>>>(pool, row, tokens, n, dst);
    }
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}
