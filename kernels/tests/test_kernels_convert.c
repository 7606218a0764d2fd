/* kernels/tests/test_kernels_convert.c — the reference FP8 e4m3fn / BF16
 * conversions against values from the OCP 8-bit floating point spec and an
 * independent decoding formula; the reference cast and gather-cast.
 *
 *   meson test -C build test_kernels_convert
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "kvs_test.h"
#include "kvscope/kernels.h"

static uint32_t fbits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float bitsf(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* The OCP definition, written as arithmetic instead of bit moves. */
static double ocp_e4m3(int c)
{
    int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7)
        return NAN;
    double v = e == 0 ? ldexp(m / 8.0, -6) : ldexp(1.0 + m / 8.0, e - 7);
    return s ? -v : v;
}

static void test_fp8_known_values(void)
{
    KVS_CHECK_EQ_INT(fbits(kvs_fp8_to_float(0x00)), 0);
    KVS_CHECK_EQ_INT(fbits(kvs_fp8_to_float(0x80)), 0x80000000u); /* -0 */
    KVS_CHECK(kvs_fp8_to_float(0x01) == 0x1p-9f);               /* min subnormal */
    KVS_CHECK(kvs_fp8_to_float(0x07) == 0.875f * 0x1p-6f);      /* max subnormal */
    KVS_CHECK(kvs_fp8_to_float(0x08) == 0x1p-6f);               /* min normal */
    KVS_CHECK(kvs_fp8_to_float(0x38) == 1.0f);
    KVS_CHECK(kvs_fp8_to_float(0x3c) == 1.5f);
    KVS_CHECK(kvs_fp8_to_float(0x40) == 2.0f);
    KVS_CHECK(kvs_fp8_to_float(0x7e) == 448.0f); /* max normal */
    KVS_CHECK(kvs_fp8_to_float(0xfe) == -448.0f);
    KVS_CHECK(kvs_fp8_to_float(0x78) == 256.0f); /* e = 15 is a normal exponent in e4m3fn */
    KVS_CHECK(isnan(kvs_fp8_to_float(0x7f)));
    KVS_CHECK(isnan(kvs_fp8_to_float(0xff)));
}

static void test_fp8_all_codes(void)
{
    int bad = 0;
    for (int c = 0; c < 256; c++) {
        double want = ocp_e4m3(c);
        float got = kvs_fp8_to_float((kvs_fp8)c);
        if (isnan(want) ? !isnan(got) : (double)got != want || (signbit(got) != 0) != (c >> 7))
            bad++;
        /* bf16 holds every e4m3 value exactly */
        kvs_bf16 b = kvs_fp8_to_bf16((kvs_fp8)c);
        float back = kvs_bf16_to_float(b);
        if (isnan(want) ? !isnan(back) : (double)back != want)
            bad++;
        if (b != kvs_float_to_bf16(got))
            bad++;
    }
    KVS_CHECK_EQ_INT(bad, 0);
    /* NaN keeps sign and payload (mantissa 111 -> 1110000), quiet */
    KVS_CHECK_EQ_INT(kvs_fp8_to_bf16(0x7f), 0x7ff0);
    KVS_CHECK_EQ_INT(kvs_fp8_to_bf16(0xff), 0xfff0);
    KVS_CHECK_EQ_INT(kvs_fp8_to_bf16(0x38), 0x3f80);
    KVS_CHECK_EQ_INT(kvs_fp8_to_bf16(0x01), 0x3b00); /* 2^-9 */
}

static void test_float_to_fp8(void)
{
    int bad = 0;
    for (int c = 0; c < 256; c++) {
        if ((c & 0x7f) == 0x7f)
            continue;
        bad += kvs_float_to_fp8(kvs_fp8_to_float((kvs_fp8)c)) != c;
    }
    KVS_CHECK_EQ_INT(bad, 0);
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(1.0625f), 0x38); /* tie -> even mantissa 0 */
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(1.1875f), 0x3a); /* tie -> even mantissa 2 */
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(1.07f), 0x39);
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(0x1p-10f), 0x00); /* half the min subnormal: to even */
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(0x1.8p-10f), 0x01);
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(0.96875f * 0x1p-6f), 0x08); /* rounds up to min normal */
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(-3.0f), 0xc4);
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(460.0f), 0x7e); /* saturate */
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(1e9f), 0x7e);
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(-INFINITY), 0xfe);
    KVS_CHECK_EQ_INT(kvs_float_to_fp8(NAN), 0x7f);
}

static void test_float_to_bf16(void)
{
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(1.0f), 0x3f80);
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(-2.0f), 0xc000);
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);     /* tie -> even */
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82); /* tie -> even */
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(1.0f + 0x1.8p-8f), 0x3f81);
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(INFINITY), 0x7f80);
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(FLT_MAX), 0x7f80); /* RNE overflows to inf */
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(bitsf(0x7f800001u)), 0x7fc0); /* sNaN -> quiet */
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(bitsf(0xffc12345u)), 0xffc1);
    KVS_CHECK_EQ_INT(kvs_float_to_bf16(0x1p-130f), 0x0008); /* subnormal stays */
    KVS_CHECK(kvs_bf16_to_float(0x4049) == 3.140625f);
}

static void test_cast_buffers(void)
{
    enum { N = 256 * 3 + 5, ROW = 7 };
    kvs_fp8 src[N];
    kvs_bf16 dst[N];
    for (int i = 0; i < N; i++)
        src[i] = (kvs_fp8)(i * 37 + 11);
    memset(dst, 0xA5, sizeof dst);
    kvs_cpu_cast_fp8_to_bf16(src, dst, N);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += dst[i] != kvs_fp8_to_bf16(src[i]);
    KVS_CHECK_EQ_INT(bad, 0);

    const int32_t tokens[] = {5, 0, 99, 5};
    kvs_bf16 g[4 * ROW];
    memset(g, 0xA5, sizeof g);
    kvs_cpu_gather_cast_fp8_to_bf16(src, ROW, tokens, 4, g);
    bad = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < ROW; j++)
            bad += g[i * ROW + j] != kvs_fp8_to_bf16(src[tokens[i] * ROW + j]);
    KVS_CHECK_EQ_INT(bad, 0);
    KVS_CHECK_EQ_STR(kvs_cast_variant_name(KVS_CAST_GENERIC), "generic");
    KVS_CHECK_EQ_STR(kvs_cast_variant_name(KVS_CAST_VECTOR), "vector");
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"fp8_known_values", test_fp8_known_values},
        {"fp8_all_codes", test_fp8_all_codes},
        {"float_to_fp8", test_float_to_fp8},
        {"float_to_bf16", test_float_to_bf16},
        {"cast_buffers", test_cast_buffers},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
