/* kernels/cuda/cast.cu — FP8 e4m3 -> BF16 cast of a whole buffer, and the
 * gather-then-cast of active tokens. Checked bit for bit against
 * kernels/cpu/convert.c by tests/gpu/test_kernels_cast.cu; timed by
 * kernels/bench/bench_kernels.cu.
 *
 * variants:
 *   generic  one element per thread, through float (kvs_conv_fp8_to_float,
 *            kvs_conv_float_to_bf16): the shape of a framework's generic
 *            elementwise casting copy. No artificial slow-down.
 *   vector   16-byte loads of 16 codes, 2 x 16-byte stores, two chunks in
 *            flight per thread, grid sized to fill the GPU (grid-stride);
 *            packed exact conversion (kvs_cvt4_fp8_bf16).
 *   gather   vector body per 16-byte chunk of each gathered row.
 * Pointers not aligned to 16 bytes (or rows not a multiple of 16 elements)
 * take the one-element-per-thread path: same results.
 */
#include "cuda_common.cuh"

// ----------------------------------------------------------------------------
// kernels

__global__ void kvs_cast_generic_kernel(const uint8_t *__restrict__ src,
                                        uint16_t *__restrict__ dst, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = kvs_conv_float_to_bf16(kvs_conv_fp8_to_float(src[i]));
}

/* 16 codes -> 16 BF16 values. */
static __device__ __forceinline__ void cvt16(uint4 in, uint4 &o0, uint4 &o1)
{
    kvs_cvt4_fp8_bf16(in.x, o0.x, o0.y);
    kvs_cvt4_fp8_bf16(in.y, o0.z, o0.w);
    kvs_cvt4_fp8_bf16(in.z, o1.x, o1.y);
    kvs_cvt4_fp8_bf16(in.w, o1.z, o1.w);
}

enum { CAST_THREADS = 256, CAST_UNROLL = 2 };

/* chunks = n / 16; the tail (n % 16 elements) goes to thread 0 of block 0. */
__global__ void __launch_bounds__(CAST_THREADS)
kvs_cast_vector_kernel(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t chunks,
                       const uint8_t *__restrict__ tail_src, uint16_t *__restrict__ tail_dst,
                       int tail)
{
    size_t stride = (size_t)gridDim.x * CAST_THREADS * CAST_UNROLL;
    for (size_t base = (size_t)blockIdx.x * CAST_THREADS * CAST_UNROLL + threadIdx.x;
         base < chunks; base += stride) {
        uint4 v[CAST_UNROLL];
#pragma unroll
        for (int u = 0; u < CAST_UNROLL; u++) {
            size_t c = base + (size_t)u * CAST_THREADS;
            if (c < chunks)
                v[u] = __ldcs(src + c);
        }
#pragma unroll
        for (int u = 0; u < CAST_UNROLL; u++) {
            size_t c = base + (size_t)u * CAST_THREADS;
            if (c < chunks) {
                uint4 o0, o1;
                cvt16(v[u], o0, o1);
                __stcs(dst + 2 * c, o0);
                __stcs(dst + 2 * c + 1, o1);
            }
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int i = 0; i < tail; i++)
            tail_dst[i] = kvs_conv_fp8_to_bf16(tail_src[i]);
}

/* One 16-byte chunk of a gathered row per thread and step: chunk c belongs to
 * token slot c / cpr (cpr = chunks per row). */
__global__ void __launch_bounds__(CAST_THREADS)
kvs_gather_cast_vector_kernel(const uint8_t *__restrict__ pool, uint32_t cpr,
                              const int32_t *__restrict__ tokens, uint32_t chunks,
                              uint4 *__restrict__ dst)
{
    for (uint32_t c = blockIdx.x * CAST_THREADS + threadIdx.x; c < chunks;
         c += gridDim.x * CAST_THREADS) {
        uint32_t slot = c / cpr, j = c - slot * cpr;
        const uint4 *row = (const uint4 *)(pool + (size_t)tokens[slot] * cpr * 16);
        uint4 o0, o1;
        cvt16(__ldcs(row + j), o0, o1);
        __stcs(dst + 2 * (size_t)c, o0);
        __stcs(dst + 2 * (size_t)c + 1, o1);
    }
}

__global__ void kvs_gather_cast_scalar_kernel(const uint8_t *__restrict__ pool, size_t row,
                                              const int32_t *__restrict__ tokens, size_t n,
                                              uint16_t *__restrict__ dst)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = kvs_conv_fp8_to_bf16(pool[(size_t)tokens[i / row] * row + i % row]);
}

// ----------------------------------------------------------------------------
// launchers

static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

extern "C" enum kvs_status kvs_cuda_cast_fp8_to_bf16(enum kvs_cast_variant v, const kvs_fp8 *src,
                                                     kvs_bf16 *dst, size_t n, void *stream)
{
    if (n == 0)
        return KVS_STATUS_OK;
    if (!src || !dst || (v != KVS_CAST_GENERIC && v != KVS_CAST_VECTOR))
        return KVS_STATUS_INVALID_ARGUMENT;
    cudaStream_t s = kvs_stream(stream);
    if (v == KVS_CAST_GENERIC || !aligned16(src) || !aligned16(dst)) {
        size_t blocks = (n + 255) / 256;
        if (blocks > 0x7fffffffu)
            return KVS_STATUS_INVALID_ARGUMENT;
        kvs_cast_generic_kernel<<<(unsigned)blocks, 256, 0, s>>>(src, dst, n);
        KVS_LAUNCH_CHECK();
        return KVS_STATUS_OK;
    }
    size_t chunks = n / 16;
    int tail = (int)(n % 16);
    size_t want = (chunks + CAST_THREADS * CAST_UNROLL - 1) / (CAST_THREADS * CAST_UNROLL);
    size_t cap = (size_t)kvs_sm_count() * (2048 / CAST_THREADS); /* one full wave */
    unsigned blocks = (unsigned)(want < cap ? (want > 0 ? want : 1) : cap);
    kvs_cast_vector_kernel<<<blocks, CAST_THREADS, 0, s>>>(
        (const uint4 *)src, (uint4 *)dst, chunks, src + chunks * 16, dst + chunks * 16, tail);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
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
    if (row % 16 == 0 && aligned16(pool) && aligned16(dst) && n / 16 <= 0xffffffffu) {
        uint32_t chunks = (uint32_t)(n / 16);
        size_t want = (chunks + CAST_THREADS - 1) / CAST_THREADS;
        size_t cap = (size_t)kvs_sm_count() * (2048 / CAST_THREADS) * 4;
        unsigned blocks = (unsigned)(want < cap ? want : cap);
        kvs_gather_cast_vector_kernel<<<blocks, CAST_THREADS, 0, s>>>(
            pool, (uint32_t)(row / 16), tokens, chunks, (uint4 *)dst);
    } else {
        size_t blocks = (n + 255) / 256;
        if (blocks > 0x7fffffffu)
            return KVS_STATUS_INVALID_ARGUMENT;
        kvs_gather_cast_scalar_kernel<<<(unsigned)blocks, 256, 0, s>>>(pool, row, tokens, n, dst);
    }
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}
