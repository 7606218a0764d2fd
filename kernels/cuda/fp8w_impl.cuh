/* kernels/cuda/fp8w_impl.cuh — the inner step of the FP8-weight GEMV
 * (gemv_fp8w.cu) and experts (moe_fp8w.cu): 16 e4m3 weight codes (one
 * 16-byte load) times 16 BF16 activations (two 16-byte loads), summed in
 * float. The codes go through the cvt unit (cvt.rn.f16x2.e4m3x2, exact,
 * NaN codes stay NaN: kvs_e4m3x4_to_f16_cvt in mma.cuh), or through integer
 * bit moves (kvs_e4m3x4_to_f16_alu: value * 2^-8), and widen to float
 * exactly; the block scale is applied by the caller to the 16-element sum
 * (16 elements never straddle a 128-column block when k is a multiple of
 * 16 and chunks start at multiples of 16). Private to kernels/.
 *
 * defines: kvs_fp8w_codes16, kvs_fp8w_dot16
 */
#ifndef KVSCOPE_FP8W_IMPL_CUH
#define KVSCOPE_FP8W_IMPL_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include "mma.cuh"

/* the 16 codes of w as floats (code j of the 16 bytes in f[j]): exact
 * through the cvt unit (ALU false), or times 2^-8 on the integer ALU (ALU
 * true: kvs_e4m3x4_to_f16_alu; NaN codes come out as +-480 * 2^-8) */
template <bool ALU>
static __device__ __forceinline__ void kvs_fp8w_codes16(const uint4 &w, float (&f)[16])
{
    const uint32_t *pw = &w.x;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        uint32_t lo, hi; /* codes 4q, 4q+1 and 4q+2, 4q+3 */
        if constexpr (ALU)
            kvs_e4m3x4_to_f16_alu(pw[q], lo, hi);
        else
            kvs_e4m3x4_to_f16_cvt(pw[q], lo, hi);
        const float2 fl = __half22float2(*reinterpret_cast<const __half2 *>(&lo));
        const float2 fh = __half22float2(*reinterpret_cast<const __half2 *>(&hi));
        f[4 * q] = fl.x;
        f[4 * q + 1] = fl.y;
        f[4 * q + 2] = fh.x;
        f[4 * q + 3] = fh.y;
    }
}

/* sum_j f[j] * x_j over the 16 BF16 values of (xa, xb), in order */
static __device__ __forceinline__ float kvs_fp8w_dot16(const float (&f)[16], const uint4 &xa,
                                                       const uint4 &xb)
{
    const uint32_t *pa = &xa.x, *pb = &xb.x;
    float p = 0.f;
#pragma unroll
    for (int q = 0; q < 8; q++) {
        const uint32_t xw = q < 4 ? pa[q] : pb[q - 4];
        p = fmaf(f[2 * q], __uint_as_float(xw << 16), p);
        p = fmaf(f[2 * q + 1], __uint_as_float(xw & 0xffff0000u), p);
    }
    return p;
}

#endif /* KVSCOPE_FP8W_IMPL_CUH */
