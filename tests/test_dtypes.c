/* tests/test_dtypes.c — element sizes of every PyTorch dtype name profilers
 * write (c10 names, C spellings, torch names), float8 and float4 variants,
 * sub-byte types; tensor bytes; and parsing recorded Input Dims / Input type
 * into tensors.
 *
 *   meson test -C build test_dtypes
 */
#include <string.h>

#include "dtypes.h"
#include "kvs_test.h"
#include "shapes.h"

static int bits(const char *name)
{
    return kvs_dtype_bits(name, strlen(name));
}

static void test_names(void)
{
    struct {
        const char *name;
        int bits;
    } cases[] = {
        {"float", 32}, {"double", 64}, {"c10::Half", 16}, {"c10::BFloat16", 16},
        {"int", 32}, {"long int", 64}, {"short int", 16}, {"signed char", 8},
        {"unsigned char", 8}, {"bool", 8}, {"unsigned short", 16}, {"unsigned int", 32},
        {"unsigned long", 64},
        {"c10::complex<float>", 64}, {"c10::complex<double>", 128}, {"c10::complex<c10::Half>", 32},
        {"c10::Float8_e4m3fn", 8}, {"c10::Float8_e5m2", 8}, {"c10::Float8_e4m3fnuz", 8},
        {"c10::Float8_e5m2fnuz", 8}, {"c10::Float8_e8m0fnu", 8},
        {"c10::Float4_e2m1fn_x2", 8}, /* one element packs two fp4 values */
        {"c10::qint8", 8}, {"c10::quint8", 8}, {"c10::qint32", 32}, {"c10::quint4x2", 8},
        {"c10::quint2x4", 8}, {"c10::bits1x8", 8}, {"c10::bits2x4", 8}, {"c10::bits4x2", 8},
        {"c10::bits8", 8}, {"c10::bits16", 16},
        {"c10::UInt1", 1}, {"c10::UInt2", 2}, {"c10::UInt3", 3}, {"c10::UInt4", 4},
        {"c10::UInt5", 5}, {"c10::UInt6", 6}, {"c10::UInt7", 7},
        {"c10::Int1", 1}, {"c10::Int4", 4}, {"c10::Int7", 7},
        {"torch.bfloat16", 16}, {"torch.float8_e4m3fn", 8}, {"float16", 16}, {"int64", 64},
        {"uint16", 16}, {"uint32", 32}, {"uint64", 64},
        /* not tensors */
        {"Scalar", 0}, {"ScalarList", 0}, {"TensorList", 0}, {"GenericList", 0}, {"", 0},
        {"c10::NotAType", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        KVS_CHECK_MSG(bits(cases[i].name) == cases[i].bits, "%s: %d bits, want %d", cases[i].name,
                      bits(cases[i].name), cases[i].bits);
    size_t n;
    const char *s = kvs_dtype_short("c10::Float8_e4m3fn", 18, &n);
    KVS_CHECK(n == 13 && !memcmp(s, "Float8_e4m3fn", 13));
    s = kvs_dtype_short("float", 5, &n);
    KVS_CHECK(n == 5 && !memcmp(s, "float", 5));
}

static void test_tensor_bytes(void)
{
    int64_t d[3] = {131072, 1, 576};
    KVS_CHECK_EQ_INT(kvs_tensor_bytes(d, 3, 8), 131072LL * 576);
    KVS_CHECK_EQ_INT(kvs_tensor_bytes(d, 3, 16), 131072LL * 576 * 2);
    int64_t odd[1] = {7};
    KVS_CHECK_EQ_INT(kvs_tensor_bytes(odd, 1, 4), 4); /* 28 bits round up to 4 bytes */
    KVS_CHECK_EQ_INT(kvs_tensor_bytes(odd, 1, 1), 1);
    KVS_CHECK_EQ_INT(kvs_tensor_bytes(NULL, 0, 32), 4); /* a 0-dim tensor is one element */
    int64_t huge[3] = {1LL << 40, 1LL << 30, 4};
    KVS_CHECK_EQ_INT(kvs_tensor_bytes(huge, 3, 8), -1);
    int64_t neg[1] = {-1};
    KVS_CHECK_EQ_INT(kvs_tensor_bytes(neg, 1, 8), -1);
}

static void parse(const char *dims, const char *types, struct kvs_shape *s)
{
    char key[1024];
    int n = snprintf(key, sizeof key, "%s\x1f%s", dims, types);
    kvs_shape_parse(key, (size_t)n, s);
}

static void test_shapes(void)
{
    struct kvs_shape s;
    /* PyTorch's copy_: destination, source, then the non_blocking Scalar */
    parse("[[131072, 1, 576], [131072, 1, 576], []]", "[\"c10::BFloat16\", \"c10::Float8_e4m3fn\", \"Scalar\"]", &s);
    KVS_REQUIRE(s.n == 2);
    KVS_CHECK_EQ_INT(s.rank[0], 3);
    KVS_CHECK_EQ_INT(s.dims[0][0], 131072);
    KVS_CHECK_EQ_INT(s.dims[1][2], 576);
    KVS_CHECK_EQ_INT(s.bits[0], 16);
    KVS_CHECK_EQ_INT(s.bits[1], 8);
    KVS_CHECK_EQ_INT(s.bytes[0] + s.bytes[1], 131072LL * 576 * 3);
    KVS_CHECK(s.dtype_len[1] == 18 && !memcmp(s.dtype[1], "c10::Float8_e4m3fn", 18));
    /* a TensorList entry and an empty type are left out; a 0-dim tensor stays */
    parse("[[], [[64, 192], [64, 192, 512]], [2, 3]]", "[\"float\", \"TensorList\", \"\"]", &s);
    KVS_CHECK_EQ_INT(s.n, 1);
    KVS_CHECK_EQ_INT(s.rank[0], 0);
    KVS_CHECK_EQ_INT(s.numel[0], 1);
    /* fp4 packed: 4096 elements of two values = 4096 bytes */
    parse("[[64, 64]]", "[\"c10::Float4_e2m1fn_x2\"]", &s);
    KVS_CHECK_EQ_INT(s.bytes[0], 4096);
    /* malformed text: what parsed before the fault */
    parse("[[4, 4], [2, oops]", "[\"float\", \"float\"]", &s);
    KVS_CHECK_EQ_INT(s.n, 1);
    parse("", "", &s);
    KVS_CHECK_EQ_INT(s.n, 0);
    /* rank above 8: bytes still from every dim */
    parse("[[1,1,1,1,1,1,1,1,2,3]]", "[\"float\"]", &s);
    KVS_CHECK_EQ_INT(s.rank[0], 10);
    KVS_CHECK_EQ_INT(s.bytes[0], 24);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"names", test_names},
        {"tensor_bytes", test_tensor_bytes},
        {"shapes", test_shapes},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
