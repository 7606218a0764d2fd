/* kernels/src/convert_impl.h — the scalar FP8 e4m3 / BF16 / float conversions,
 * written once and compiled both as C (kernels/cpu/convert.c wraps them as
 * the public kvs_fp8_to_float & co.) and as CUDA device code (the casts and
 * the FP8-direct attention use them), so the GPU is bit-exact with the CPU
 * reference by construction. Private to kernels/.
 *
 * defines: kvs_conv_fp8_to_float, kvs_conv_float_to_bf16, kvs_conv_fp8_to_bf16,
 *          kvs_conv_bf16_to_float, kvs_conv_float_bits, kvs_conv_bits_float
 *
 * NaN rule: e4m3fn has two NaN codes (0x7f, 0xff). A widening conversion keeps
 * the sign and the payload (mantissa 111 lands in the top mantissa bits), so
 * 0x7f -> float 0x7ff00000 -> bf16 0x7ff0, and 0xff -> 0xfff0. Float -> bf16
 * keeps sign and top payload bits and sets the quiet bit.
 */
#ifndef KVSCOPE_CONVERT_IMPL_H
#define KVSCOPE_CONVERT_IMPL_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define KVS_CONV_FN static __host__ __device__ __forceinline__
#else
#define KVS_CONV_FN static inline
#endif

KVS_CONV_FN uint32_t kvs_conv_float_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
#endif
}

KVS_CONV_FN float kvs_conv_bits_float(uint32_t b)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(b);
#else
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
#endif
}

/* e4m3fn: s eeee mmm, bias 7; e == 0 is subnormal (m * 2^-9); 0x7f/0xff NaN. */
KVS_CONV_FN float kvs_conv_fp8_to_float(uint8_t x)
{
    uint32_t sign = (uint32_t)(x & 0x80u) << 24;
    uint32_t e = (x >> 3) & 0xfu, m = x & 0x7u;
    if (e == 15 && m == 7)
        return kvs_conv_bits_float(sign | 0x7ff00000u);
    if (e == 0) {
        /* m * 2^-9 is a float normal: exact */
        float v = (float)m * (1.0f / 512.0f);
        return sign ? -v : v;
    }
    return kvs_conv_bits_float(sign | ((e + 120u) << 23) | (m << 20));
}

/* Round to nearest even on the 16 dropped bits; NaN keeps sign and top
 * payload, gains the quiet bit; overflow rounds to infinity, as RNE does. */
KVS_CONV_FN uint16_t kvs_conv_float_to_bf16(float f)
{
    uint32_t b = kvs_conv_float_bits(f);
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((b >> 16) | 0x40u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}

KVS_CONV_FN float kvs_conv_bf16_to_float(uint16_t x)
{
    return kvs_conv_bits_float((uint32_t)x << 16);
}

/* Every e4m3 value is a bf16 value, so going through float is exact. */
KVS_CONV_FN uint16_t kvs_conv_fp8_to_bf16(uint8_t x)
{
    return kvs_conv_float_to_bf16(kvs_conv_fp8_to_float(x));
}

#endif /* KVSCOPE_CONVERT_IMPL_H */
