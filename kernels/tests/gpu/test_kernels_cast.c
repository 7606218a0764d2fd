/* kernels/tests/gpu/test_kernels_cast.c — the CUDA FP8 -> BF16 casts and the
 * gather-cast against the CPU reference, bit for bit: all 256 codes (NaN
 * included), odd sizes, unaligned pointers (the fallback path), outputs
 * poisoned first; the public variants and every internal configuration of
 * the vector cast (cast_cfg.h). gpu suite: exits 77 without a GPU.
 *
 *   meson test -C build --suite gpu test_kernels_cast
 */
#include "../../cuda/cast_cfg.h"
#include "kvs_kernel_test.h"

#define POISON 0xFFFFu /* a NaN no e4m3 code converts to */

static size_t mismatches(const kvs_bf16 *got, const kvs_bf16 *want, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += got[i] != want[i];
    return bad;
}

/* Cast src[off .. off+n) to dst[doff ..] with variant v (0, 1) or, for
 * v >= 2, internal configuration v - 2; compare. */
static void check_cast(int v, const kvs_fp8 *h_src, size_t n, size_t off, size_t doff)
{
    kvs_fp8 *d_src = kt_dev(n + off);
    kvs_bf16 *d_dst = kt_dev((n + doff) * 2);
    kt_up(d_src + off, h_src, n);
    KVS_TEST_CUDA(cudaMemset(d_dst, 0xFF, (n + doff) * 2));
    enum kvs_status st =
        v < 2 ? kvs_cuda_cast_fp8_to_bf16((enum kvs_cast_variant)v, d_src + off, d_dst + doff, n,
                                          NULL)
              : kvs_cuda_cast_fp8_to_bf16_cfg(v - 2, d_src + off, d_dst + doff, n, NULL);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
    kvs_bf16 *got = malloc(n * 2), *want = malloc(n * 2);
    kt_down(got, d_dst + doff, n * 2);
    kvs_cpu_cast_fp8_to_bf16(h_src, want, n);
    size_t bad = mismatches(got, want, n);
    KVS_CHECK_MSG(bad == 0, "%s n=%zu src+%zu dst+%zu: %zu mismatches",
                  v < 2 ? kvs_cast_variant_name((enum kvs_cast_variant)v) : kvs_cast_cfg_name(v - 2),
                  n, off, doff, bad);
    free(got);
    free(want);
    cudaFree(d_src);
    cudaFree(d_dst);
}

static void test_all_codes(void)
{
    size_t n = 256 * 4099 + 13;
    kvs_fp8 *h = malloc(n);
    for (size_t i = 0; i < n; i++)
        h[i] = (kvs_fp8)(i * 131 + i / 256);
    for (int v = 0; v < 2 + KVS_CAST_CFGS; v++)
        check_cast(v, h, n, 0, 0);
    free(h);
}

static void test_odd_sizes_and_alignment(void)
{
    uint64_t st = kt_seed("cast");
    const size_t sizes[] = {1, 7, 15, 16, 17, 33, 4097, (1u << 20) + 3};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        kvs_fp8 *h = malloc(n);
        for (size_t i = 0; i < n; i++)
            h[i] = (kvs_fp8)kvs_test_rand(&st);
        for (int v = 0; v < 2 + KVS_CAST_CFGS; v++) {
            check_cast(v, h, n, 0, 0);
            check_cast(v, h, n, 1, 0);  /* unaligned source */
            check_cast(v, h, n, 8, 0);  /* 8- but not 16-aligned source */
            check_cast(v, h, n, 16, 3); /* unaligned destination */
        }
        free(h);
    }
    /* n = 0 is a no-op; a bad variant is refused */
    KVS_CHECK_EQ_INT(kvs_cuda_cast_fp8_to_bf16(KVS_CAST_VECTOR, NULL, NULL, 0, NULL), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(kvs_cuda_cast_fp8_to_bf16((enum kvs_cast_variant)7, (kvs_fp8 *)16,
                                               (kvs_bf16 *)16, 4, NULL),
                     KVS_STATUS_INVALID_ARGUMENT);
}

static void check_gather(uint64_t *st, size_t rows, size_t row, size_t ntok)
{
    kvs_fp8 *pool = malloc(rows * row);
    for (size_t i = 0; i < rows * row; i++)
        pool[i] = (kvs_fp8)kvs_test_rand(st);
    int32_t *tok = malloc(ntok * sizeof *tok);
    for (size_t i = 0; i < ntok; i++)
        tok[i] = (int32_t)(kvs_test_rand(st) % rows);
    kvs_fp8 *d_pool = kt_dev(rows * row);
    int32_t *d_tok = kt_dev(ntok * sizeof *tok);
    kvs_bf16 *d_dst = kt_dev(ntok * row * 2);
    kt_up(d_pool, pool, rows * row);
    kt_up(d_tok, tok, ntok * sizeof *tok);
    KVS_TEST_CUDA(cudaMemset(d_dst, 0xFF, ntok * row * 2));
    KVS_CHECK_EQ_INT(kvs_cuda_gather_cast_fp8_to_bf16(d_pool, row, d_tok, ntok, d_dst, NULL),
                     KVS_STATUS_OK);
    kvs_bf16 *got = malloc(ntok * row * 2), *want = malloc(ntok * row * 2);
    kt_down(got, d_dst, ntok * row * 2);
    kvs_cpu_gather_cast_fp8_to_bf16(pool, row, tok, ntok, want);
    size_t bad = mismatches(got, want, ntok * row);
    KVS_CHECK_MSG(bad == 0, "gather row=%zu ntok=%zu: %zu mismatches", row, ntok, bad);
    free(pool);
    free(tok);
    free(got);
    free(want);
    cudaFree(d_pool);
    cudaFree(d_tok);
    cudaFree(d_dst);
}

static void test_gather(void)
{
    uint64_t st = kt_seed("gather");
    const size_t ntoks[] = {1, 7, 4097};
    for (size_t k = 0; k < 3; k++) {
        check_gather(&st, 5000, KVS_MLA_ROW, ntoks[k]); /* vector path */
        check_gather(&st, 3000, 40, ntoks[k]);          /* rows of 8-byte multiples */
        check_gather(&st, 300, 7, ntoks[k]);            /* odd rows: element path */
    }
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    static const struct kvs_test tests[] = {
        {"all_codes", test_all_codes},
        {"odd_sizes_and_alignment", test_odd_sizes_and_alignment},
        {"gather", test_gather},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
