/* tests/test_report_fmt.c — the human-unit and short-name helpers the
 * text/markdown/html renderers share (reports/fmt.c), and the JSON writer's
 * number and string rules.
 *
 *   meson test -C build test_report_fmt
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_test.h"
#include "report_impl.h"

static void test_units(void)
{
    char b[KVS_FMT_BUF];
    KVS_CHECK_EQ_STR(kvs_fmt_bytes(b, 856.3e6), "856.3 MB");
    KVS_CHECK_EQ_STR(kvs_fmt_bytes(b, 66.8e9), "66.8 GB");
    KVS_CHECK_EQ_STR(kvs_fmt_bytes(b, 512), "512 B");
    KVS_CHECK_EQ_STR(kvs_fmt_bytes2(b, 856.31e6), "856.31 MB"); /* the summary's two decimals */
    KVS_CHECK_EQ_STR(kvs_fmt_bytes2(b, 1.47367e11), "147.37 GB");
    KVS_CHECK_EQ_STR(kvs_fmt_bytes2(b, 4096), "4.10 kB");
    KVS_CHECK_EQ_STR(kvs_fmt_bytes2(b, 512), "512 B");
    KVS_CHECK_EQ_STR(kvs_fmt_bytes2(b, NAN), "-");
    KVS_CHECK_EQ_STR(kvs_fmt_bytes(b, 999.96e6), "1.0 GB"); /* no "1000.0 MB" */
    KVS_CHECK_EQ_STR(kvs_fmt_bytes(b, -2.5e6), "-2.5 MB");
    KVS_CHECK_EQ_STR(kvs_fmt_bytes(b, NAN), "-");
    KVS_CHECK_EQ_STR(kvs_fmt_gbps(b, 985.2), "985 GB/s");
    KVS_CHECK_EQ_STR(kvs_fmt_gbps(b, 12.44), "12.4 GB/s");
    KVS_CHECK_EQ_STR(kvs_fmt_gbps(b, 0.5), "0.50 GB/s");
    KVS_CHECK_EQ_STR(kvs_fmt_pct(b, 0.205), "20.5%");
    KVS_CHECK_EQ_STR(kvs_fmt_pct(b, -0.00001), "0.0%");
    KVS_CHECK_EQ_STR(kvs_fmt_pct(b, INFINITY), "-");
    KVS_CHECK_EQ_STR(kvs_fmt_signed_pct(b, -0.64), "-64.0%");
    KVS_CHECK_EQ_STR(kvs_fmt_signed_pct(b, 0.291), "+29.1%");
    KVS_CHECK_EQ_STR(kvs_fmt_ms(b, 52.4), "52.40");
    KVS_CHECK_EQ_STR(kvs_fmt_ms(b, 0.8612), "0.861");
    KVS_CHECK_EQ_STR(kvs_fmt_ms(b, 120.34), "120.3");
    KVS_CHECK_EQ_STR(kvs_fmt_ms(b, -0.0001), "0.000");
    KVS_CHECK_EQ_STR(kvs_fmt_count(b, 1234567), "1,234,567");
    KVS_CHECK_EQ_STR(kvs_fmt_count(b, 61), "61");
    KVS_CHECK_EQ_STR(kvs_fmt_count(b, 999), "999");
    KVS_CHECK_EQ_STR(kvs_fmt_count(b, 1000), "1,000");
    KVS_CHECK_EQ_STR(kvs_fmt_count(b, -1000), "-1,000");
    KVS_CHECK_EQ_STR(kvs_fmt_count(b, 60.75), "60.8");
}

static void test_dtype_names(void)
{
    KVS_CHECK_EQ_STR(kvs_short_dtype("c10::BFloat16"), "bf16");
    KVS_CHECK_EQ_STR(kvs_short_dtype("c10::Float8_e4m3fn"), "fp8_e4m3fn");
    KVS_CHECK_EQ_STR(kvs_short_dtype("float"), "f32");
    KVS_CHECK_EQ_STR(kvs_short_dtype("c10::Float4_e2m1fn_x2"), "fp4_e2m1fn_x2");
    KVS_CHECK_EQ_STR(kvs_short_dtype("c10::SomethingNew"), "SomethingNew");
    KVS_CHECK_EQ_STR(kvs_short_dtype("Scalar"), "Scalar");
    KVS_CHECK_EQ_STR(kvs_short_dtype(NULL), "");
}

static void test_kernel_names(void)
{
    char b[256];
    const char *copy = "void at::native::elementwise_kernel<128, 4, "
                       "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}"
                       ">(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3})";
    kvs_short_kernel(b, sizeof b, copy, 200);
    KVS_CHECK_EQ_STR(b, "elementwise_kernel<128, 4, direct_copy_kernel_cuda()::{lambda()#3}>()");
    kvs_short_kernel(b, sizeof b, copy, 30);
    KVS_CHECK_EQ_INT(strlen(b), 30);
    KVS_CHECK(!strncmp(b, "elementwise_kernel<128, 4, ", 27));
    KVS_CHECK(!strcmp(b + 27, "..."));
    kvs_short_kernel(b, sizeof b, "nvjet_tst_64x8_64x16_4x1_v_bz_TNT", 60);
    KVS_CHECK_EQ_STR(b, "nvjet_tst_64x8_64x16_4x1_v_bz_TNT");
    kvs_short_kernel(b, sizeof b, "Memcpy DtoD (Device -> Device)", 60);
    KVS_CHECK_EQ_STR(b, "Memcpy DtoD (Device -> Device)");
    kvs_short_kernel(b, sizeof b, "(anonymous namespace)::experts_up_kernel(int const*, float)", 60);
    KVS_CHECK_EQ_STR(b, "experts_up_kernel()");
    kvs_short_kernel(b, sizeof b, "void f<(anonymous namespace)::Tag, 4>(int)", 60);
    KVS_CHECK_EQ_STR(b, "f<Tag, 4>()");
    kvs_short_kernel(b, sizeof b, "f(int (*)(float), (x))", 60); /* nested parentheses */
    KVS_CHECK_EQ_STR(b, "f()");
    kvs_truncate(b, sizeof b, "Memcpy HtoD (Pageable -> Device)", 16);
    KVS_CHECK_EQ_STR(b, "Memcpy HtoD (...");
    kvs_short_kernel(b, 8, "a_very_long_kernel_name_indeed", 60); /* buffer smaller than width */
    KVS_CHECK_EQ_INT(strlen(b), 7);
    kvs_short_kernel(b, sizeof b, NULL, 60);
    KVS_CHECK_EQ_STR(b, "-");

    /* the namespace that identifies a kernel stays, a library's goes; a
     * launcher template shows the kernel it launches; a return type goes */
    kvs_short_kernel(b, sizeof b,
                     "void dpsk::ep::internode::dispatch<true, 8, 4>(dpsk::ep::Params, int)", 80);
    KVS_CHECK_EQ_STR(b, "dpsk::ep::internode::dispatch<true, 8, 4>()");
    kvs_short_kernel(b, sizeof b,
                     "void cutlass::device_kernel<dpsk::ep::internode::dispatch<true, 8> >("
                     "dpsk::ep::internode::dispatch<true, 8>::Params)", 80);
    KVS_CHECK_EQ_STR(b, "dpsk::ep::internode::dispatch<true, 8>()");
    kvs_short_kernel(b, sizeof b,
                     "void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::CollectiveMainloop"
                     "<cutlass::bfloat16_t>, 128> >(flash::FlashAttnFwdSm90<flash::CollectiveMainloop"
                     "<cutlass::bfloat16_t>, 128>::Params)", 80);
    KVS_CHECK_EQ_STR(b, "flash::FlashAttnFwdSm90<CollectiveMainloop<bfloat16_t>, 128>()");
    /* names from the serving traces (b200, h100, sglang) */
    kvs_short_kernel(b, sizeof b,
                     "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>("
                     "cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)", 80);
    KVS_CHECK_EQ_STR(b, "cutlass_80_simt_sgemm_128x32_8x5_nn_align1()");
    kvs_short_kernel(b, sizeof b,
                     "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, "
                     "void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, "
                     "long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", 80);
    KVS_CHECK_EQ_STR(b, "vllm::fused_add_rms_norm_kernel<BFloat16, 8>()");
    kvs_short_kernel(b, sizeof b,
                     "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, "
                     "(vllm::Fp8KVCacheDataType)1>(__nv_bfloat16 const*, long, int)", 100);
    KVS_CHECK_EQ_STR(b, "vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, "
                        "(Fp8KVCacheDataType)1>()");
    kvs_short_kernel(b, sizeof b,
                     "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::"
                     "(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(int)", 80);
    KVS_CHECK_EQ_STR(b, "CatArrayBatchedCopy<OpaqueType<2u>, unsigned int, 4, 64, 64>()");
    kvs_short_kernel(b, sizeof b, "void vllm::native::f(int)", 80); /* 'native' inside a chain */
    KVS_CHECK_EQ_STR(b, "vllm::native::f()");
    kvs_short_op(b, sizeof b, "void dpsk::ep::internode::combine<4>(int)", 60); /* a bare group */
    KVS_CHECK_EQ_STR(b, "dpsk::ep::internode::combine<4>()");
}

static void test_group_dims(void)
{
    struct kvs_dims d[2] = {{3, {131072, 1, 576}}, {3, {131072, 1, 576}}};
    const char *dt[2] = {"c10::BFloat16", "c10::Float8_e4m3fn"};
    struct kvs_group g = {0};
    g.ntensors = 2;
    g.tensor_dims = d;
    g.tensor_dtypes = dt;
    char b[128];
    KVS_CHECK_EQ_STR(kvs_short_dims(b, sizeof b, &g), "[131072,1,576] x2");
    KVS_CHECK_EQ_STR(kvs_short_dtypes(b, sizeof b, &g), "bf16, fp8_e4m3fn");
    d[1].d[0] = 1024;
    KVS_CHECK_EQ_STR(kvs_short_dims(b, sizeof b, &g), "[131072,1,576] [1024,1,576]");
    struct kvs_group bare = {0};
    KVS_CHECK_EQ_STR(kvs_short_dims(b, sizeof b, &bare), "-");
    KVS_CHECK_EQ_STR(kvs_short_dtypes(b, sizeof b, &bare), "-");
    char small[10];
    kvs_short_dims(small, sizeof small, &g); /* truncates, stays terminated */
    KVS_CHECK_EQ_INT(strlen(small), 9);
}

static char *capture(void (*fn)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        KVS_TEST_SETUP_FAILED("open_memstream");
    fn(f, s);
    fclose(f);
    return buf;
}

static void test_escaping(void)
{
    char *h = capture(kvs_put_html, "<script>alert('x&y')</script>\"\x01");
    KVS_CHECK_EQ_STR(h, "&lt;script&gt;alert(&#39;x&amp;y&#39;)&lt;/script&gt;&quot; ");
    free(h);
    char *m = capture(kvs_put_md, "a|b\nc<d>_e_*f*`g`");
    KVS_CHECK_EQ_STR(m, "a\\|b c&lt;d&gt;\\_e\\_\\*f\\*\\`g\\`");
    free(m);
}

static void test_exact_numbers(void)
{
    char b[40];
    const double vals[] = {0.1, 1.0 / 3, 4800, 1e-300, 123456789.123456789, 0.2249 * 61};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        kvs_fmt_double_exact(b, sizeof b, vals[i]);
        KVS_CHECK_MSG(strtod(b, NULL) == vals[i], "%s", b);
    }
    kvs_fmt_double_exact(b, sizeof b, 0.1);
    KVS_CHECK_EQ_STR(b, "0.1"); /* the shortest form, not 0.10000000000000001 */
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"units", test_units},
        {"dtype_names", test_dtype_names},
        {"kernel_names", test_kernel_names},
        {"group_dims", test_group_dims},
        {"escaping", test_escaping},
        {"exact_numbers", test_exact_numbers},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
