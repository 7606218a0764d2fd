/* kernels/cpu/convert.c — reference scalar conversions (FP8 e4m3fn, BF16,
 * float), the whole-buffer cast and the gather-then-cast. These are the
 * specification the CUDA casts are checked against bit for bit.
 *
 *   meson test -C build test_kernels_convert
 */
#include <math.h>

#include "convert_impl.h"
#include "kvscope/kernels.h"

// ----------------------------------------------------------------------------
// scalars

float kvs_fp8_to_float(kvs_fp8 x) { return kvs_conv_fp8_to_float(x); }
float kvs_bf16_to_float(kvs_bf16 x) { return kvs_conv_bf16_to_float(x); }
kvs_bf16 kvs_float_to_bf16(float x) { return kvs_conv_float_to_bf16(x); }
kvs_bf16 kvs_fp8_to_bf16(kvs_fp8 x) { return kvs_conv_fp8_to_bf16(x); }

/* Round to nearest even (rintf in the default rounding mode), saturating
 * to +-448: e4m3fn has no infinity, and saturation is what KV-cache
 * quantisers do. Every scaling below is by a power of two, so exact. */
kvs_fp8 kvs_float_to_fp8(float x)
{
    if (isnan(x))
        return 0x7f;
    uint8_t sign = signbit(x) ? 0x80 : 0x00;
    float a = fabsf(x);
    if (a > 448.0f)
        return sign | 0x7e;
    if (a < 0x1p-6f) {
        /* subnormal range: code = round(a / 2^-9); 8 lands on 0x08 = 2^-6 */
        return sign | (uint8_t)rintf(a * 512.0f);
    }
    int e;
    float f = frexpf(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    e -= 1;                  /* a = (2f) * 2^e, 2f in [1, 2) */
    int m = (int)rintf((2.0f * f - 1.0f) * 8.0f);
    if (m == 8) {
        m = 0;
        e += 1;
    }
    int code = ((e + 7) << 3) | m;
    if (code > 0x7e)
        code = 0x7e;
    return sign | (uint8_t)code;
}

// ----------------------------------------------------------------------------
// buffers

void kvs_cpu_cast_fp8_to_bf16(const kvs_fp8 *src, kvs_bf16 *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = kvs_conv_fp8_to_bf16(src[i]);
}

void kvs_cpu_gather_cast_fp8_to_bf16(const kvs_fp8 *pool, size_t row, const int32_t *tokens,
                                     size_t ntokens, kvs_bf16 *dst)
{
    for (size_t i = 0; i < ntokens; i++)
        kvs_cpu_cast_fp8_to_bf16(pool + (size_t)tokens[i] * row, dst + i * row, row);
}

const char *kvs_cast_variant_name(enum kvs_cast_variant v)
{
    switch (v) {
    case KVS_CAST_GENERIC: return "generic";
    case KVS_CAST_VECTOR: return "vector";
    }
    return "unknown";
}
