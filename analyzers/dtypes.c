/* dtypes.c — dtype name -> element bits (see dtypes.h). Private to analyzers/. */
#include "dtypes.h"

#include <ctype.h>
#include <string.h>

struct dtype_ent {
    const char *name; /* canonical lower-case form after prefix stripping */
    int bits;
};

/* c10 names lower-cased, torch names, and C spellings PyTorch's profiler uses
 * for the scalar types (c10::ScalarType -> caffe2::TypeMeta names). */
static const struct dtype_ent dtypes[] = {
    {"float", 32}, {"float32", 32}, {"double", 64}, {"float64", 64},
    {"half", 16}, {"float16", 16}, {"bfloat16", 16},
    {"complex<float>", 64}, {"complex64", 64}, {"cfloat", 64},
    {"complex<double>", 128}, {"complex128", 128}, {"cdouble", 128},
    {"complex<c10::half>", 32}, {"complex<half>", 32}, {"complex32", 32}, {"chalf", 32},
    {"bool", 8},
    {"signed char", 8}, {"int8", 8}, {"char", 8},
    {"unsigned char", 8}, {"uint8", 8}, {"byte", 8},
    {"short", 16}, {"short int", 16}, {"int16", 16},
    {"unsigned short", 16}, {"unsigned short int", 16}, {"uint16", 16},
    {"int", 32}, {"int32", 32},
    {"unsigned int", 32}, {"uint32", 32},
    {"long", 64}, {"long int", 64}, {"long long", 64}, {"long long int", 64}, {"int64", 64},
    {"unsigned long", 64}, {"unsigned long int", 64}, {"unsigned long long", 64}, {"uint64", 64},
    {"float8_e4m3fn", 8}, {"float8_e5m2", 8}, {"float8_e4m3fnuz", 8}, {"float8_e5m2fnuz", 8},
    {"float8_e8m0fnu", 8},
    {"float4_e2m1fn_x2", 8},
    {"qint8", 8}, {"quint8", 8}, {"qint32", 32}, {"quint4x2", 8}, {"quint2x4", 8},
    {"bits1x8", 8}, {"bits2x4", 8}, {"bits4x2", 8}, {"bits8", 8}, {"bits16", 16},
    {"uint1", 1}, {"uint2", 2}, {"uint3", 3}, {"uint4", 4}, {"uint5", 5}, {"uint6", 6}, {"uint7", 7},
    {"int1", 1}, {"int2", 2}, {"int3", 3}, {"int4", 4}, {"int5", 5}, {"int6", 6}, {"int7", 7},
};

static size_t strip_prefix(const char *name, size_t len)
{
    if (len > 5 && !memcmp(name, "c10::", 5))
        return 5;
    if (len > 6 && !memcmp(name, "torch.", 6))
        return 6;
    if (len > 7 && !memcmp(name, "at::", 4))
        return 4;
    return 0;
}

int kvs_dtype_bits(const char *name, size_t len)
{
    size_t off = strip_prefix(name, len);
    name += off;
    len -= off;
    if (len == 0 || len >= 40)
        return 0;
    char low[40];
    for (size_t i = 0; i < len; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[len] = 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(low, dtypes[i].name))
            return dtypes[i].bits;
    return 0;
}

const char *kvs_dtype_short(const char *name, size_t len, size_t *out_len)
{
    if (len == 0) { /* not recorded (shapes.h: an untyped tensor) */
        *out_len = 1;
        return "?";
    }
    size_t off = strip_prefix(name, len);
    *out_len = len - off;
    return name + off;
}

int64_t kvs_tensor_bytes(const int64_t *dims, int rank, int bits)
{
    if (bits <= 0)
        return 0;
    __int128 n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return -1;
        n *= dims[i];
        if (n > ((__int128)1 << 62))
            return -1;
    }
    __int128 b = (n * bits + 7) / 8;
    return b > INT64_MAX ? -1 : (int64_t)b;
}
