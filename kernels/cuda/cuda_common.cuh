/* kernels/cuda/cuda_common.cuh — what every kernels/cuda/ source file shares:
 * the stream cast, the multiprocessor count, launch checks and the packed
 * FP8 -> BF16 conversion used by the vector cast and the FP8-direct
 * attention. Private to kernels/.
 *
 * defines: kvs_stream, kvs_sm_count, kvs_cvt4_fp8_bf16, KVS_LAUNCH_CHECK
 */
#ifndef KVSCOPE_CUDA_COMMON_CUH
#define KVSCOPE_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "convert_impl.h"
#include "kvscope/check.h"
#include "kvscope/kernels.h"

static inline cudaStream_t kvs_stream(void *s) { return (cudaStream_t)s; }

/* Multiprocessors of the current device; 132 (an H100/H200) if the query
 * fails, which only sizes grids and never affects results. */
static inline int kvs_sm_count(void)
{
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0)
        return 132;
    return n;
}

/* Launch-configuration errors after a kernel launch, logged to stderr (the
 * launchers have no logger of their own). */
#define KVS_LAUNCH_CHECK() KVS_CUDA_LAUNCH_TRY(NULL)

/* Four e4m3 codes (one 32-bit word, code i in byte i) to four BF16 values:
 * lo = codes 0,1 and hi = codes 2,3 as bf16x2 words. Exact, and equal bit for
 * bit to kvs_conv_fp8_to_bf16:
 *  - (int)(code << 24) >> 4, masked to sign | 7 bits of magnitude at bit 20,
 *    is a float of value code * 2^-120 (e4m3 subnormals land on float
 *    subnormals, which the GPU multiplies exactly without -ftz); times 2^120
 *    gives the value, whose top 16 bits are its BF16 (3 mantissa bits).
 *  - The NaN codes come out as +-480 (0x43f0); OR-ing 0x7f80 into those lanes
 *    gives 0x7ff0 / 0xfff0, the reference's payload-keeping NaN. */
/* prmt with its byte-sign-replicate mode (selector nibble bit 3), which the
 * __byte_perm intrinsic does not promise. */
static __device__ __forceinline__ uint32_t kvs_prmt(uint32_t a, uint32_t b, uint32_t sel)
{
    uint32_t d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}

static __device__ __forceinline__ void kvs_cvt4_fp8_bf16(uint32_t w, uint32_t &lo, uint32_t &hi)
{
    float f[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        uint32_t top = __byte_perm(w, 0, 0x0444u | ((uint32_t)k << 12)); /* code k in byte 3 */
        f[k] = __uint_as_float(((uint32_t)((int32_t)top >> 4)) & 0x87f00000u) * 0x1p120f;
    }
    lo = __byte_perm(__float_as_uint(f[0]), __float_as_uint(f[1]), 0x7632u);
    hi = __byte_perm(__float_as_uint(f[2]), __float_as_uint(f[3]), 0x7632u);
    /* byte i is 0x80 iff code i has magnitude 0x7f */
    uint32_t nan = ((w & 0x7f7f7f7fu) + 0x01010101u) & 0x80808080u;
    lo |= kvs_prmt(nan, 0, 0x9988u) & 0x7f807f80u;
    hi |= kvs_prmt(nan, 0, 0xbbaau) & 0x7f807f80u;
}

#endif /* KVSCOPE_CUDA_COMMON_CUH */
