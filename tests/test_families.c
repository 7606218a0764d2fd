/* tests/test_families.c — kernel families from the bundled table
 * (analyzers/data/kernel_families.json, read by analyzers/classify.c): the
 * libraries' names (the list), names that only look like another
 * family (a GEMM whose template arguments say "Copy" or "cast", a
 * "broadcast"), a malformed table refused, and in a trace: a GEMM kernel
 * launched under a copy op stays GEMM, a pointwise kernel of aten::copy_ is
 * copy/cast.
 *
 *   meson test -C build test_families
 */
#include <stdio.h>
#include <string.h>

#include "classify.h"
#include "data.h"
#include "kvs_test.h"

static struct kvs_families fams;
static struct kvs_arena arena;

static const char *family(const char *name)
{
    uint8_t f = 0;
    KVS_CHECK_EQ_INT(kvs_family_of(&fams, name, &f), KVS_STATUS_OK);
    return fams.fam[f].name;
}

static int category(const char *name)
{
    uint8_t f = 0;
    KVS_CHECK_EQ_INT(kvs_family_of(&fams, name, &f), KVS_STATUS_OK);
    return fams.fam[f].category;
}

static void test_names(void)
{
    static const struct {
        const char *name, *family;
        int category;
    } cases[] = {
        /* GEMM */
        {"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", "cublas", KVS_CAT_GEMM},
        {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
         "cublas", KVS_CAT_GEMM},
        {"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1", "hipblaslt", KVS_CAT_GEMM},
        {"bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100a",
         "mx_bmm", KVS_CAT_GEMM},
        {"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "triton_matmul", KVS_CAT_GEMM},
        {"void deep_gemm::fp8_gemm_kernel<128u, 128u>(float*, int*)", "deep_gemm", KVS_CAT_GEMM},
        {"fused_moe_kernel", "moe_gemm", KVS_CAT_GEMM},
        /* a CUTLASS grouped GEMM (MoE experts): its template arguments say
         * Copy and cast, and it is no copy */
        {"void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm90<cutlass::gemm::kernel::"
         "GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cute::SM90_TMA_LOAD, "
         "cute::Copy_Atom<cute::SM90_U32x4_STSM_N, cutlass::bfloat16_t>, cutlass::epilogue::fusion::"
         "ScaledAcc_cast_to_bf16, at::cuda::detail::_grouped_mm_sm90> > >(void)",
         "moe_gemm", KVS_CAT_GEMM},
        {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1>(cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1::Params)",
         "cutlass", KVS_CAT_GEMM},
        /* attention */
        {"void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8>>()", "flash_mla", KVS_CAT_ATTENTION},
        {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>()",
         "flash_attention", KVS_CAT_ATTENTION},
        {"void flashinfer::BatchDecodeWithPagedKVCacheKernel<flashinfer::MLA>()", "flashinfer", KVS_CAT_ATTENTION},
        {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128", "cudnn_sdpa", KVS_CAT_ATTENTION},
        {"fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext", "fmha", KVS_CAT_ATTENTION},
        {"void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16>()", "paged_attention", KVS_CAT_ATTENTION},
        {"kernel_unified_attention_3d", "triton_attention", KVS_CAT_ATTENTION},
        /* communication */
        {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "nccl", KVS_CAT_COMM},
        {"void deep_ep::internode::dispatch<true, 8>(int4*)", "deepep", KVS_CAT_COMM},
        {"void deep_ep::intranode::combine<nv_bfloat16, 8>()", "deepep", KVS_CAT_COMM},
        {"void deep_ep::internode::notify_dispatch<8>()", "deepep", KVS_CAT_COMM},
        {"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>()", "all_reduce", KVS_CAT_COMM},
        {"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*)", "all_reduce", KVS_CAT_COMM},
        {"void nvshmemi_transfer_rma_kernel<>()", "nvshmem", KVS_CAT_COMM},
        /* MoE routing, copy/cast, norm, sampling, pointwise */
        {"void vllm::moe::topk_softmax_kernel<8>()", "moe_routing", KVS_CAT_OTHER},
        {"_finalize_matmul_scatter_bf16", "moe_routing", KVS_CAT_OTHER},
        /* vLLM's B200 trace (TensorRT-LLM MoE): CUTLASS and FlashInfer types in the
         * parameters of a MoE finalize and an FP4 quantize make no GEMM or attention
         * kernel (they were cutlass / flashinfer: 0.25 and 0.17 ms of the step) */
        {"void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, "
         "cutlass::bfloat16_t, 4, true> >(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, "
         "cutlass::bfloat16_t, 4, true>)",
         "moe_routing", KVS_CAT_OTHER},
        {"void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, "
         "__nv_bfloat16, 32, true>(int, int, int, int, __nv_bfloat16 const*, float const*, unsigned int*, "
         "unsigned int*, flashinfer::QuantizationSFLayout)",
         "other", KVS_CAT_OTHER},
        {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>("
         "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)",
         "cutlass", KVS_CAT_GEMM},
        {"void cutlass::gemm::kernel::GemmFpAIntB<cutlass::bfloat16_t>()", "cutlass", KVS_CAT_GEMM},
        {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)>()",
         "copy_cast", KVS_CAT_COPY_CAST},
        {"triton_poi_fused__to_copy_1", "copy_cast", KVS_CAT_COPY_CAST},
        {"void at::native::vectorized_elementwise_kernel<4, at::native::LoadWithCast<1>>()", "copy_cast", KVS_CAT_COPY_CAST},
        {"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>()", "norm", KVS_CAT_OTHER},
        {"void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024>()", "sampling", KVS_CAT_OTHER},
        {"void at::native::multinomial_with_replacement_kernel<float>()", "sampling", KVS_CAT_OTHER},
        /* broadcast and nocast are no casts */
        {"void at::native::vectorized_elementwise_kernel<4, at::native::BroadcastFunctor<float>>()", "elementwise", KVS_CAT_OTHER},
        {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float>>>()",
         "elementwise", KVS_CAT_OTHER},
        {"at::cuda::(anonymous namespace)::spin_kernel(long)", "other", KVS_CAT_OTHER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        KVS_CHECK_MSG(!strcmp(family(cases[i].name), cases[i].family), "%s: %s, expected %s",
                      cases[i].name, family(cases[i].name), cases[i].family);
        KVS_CHECK_MSG(category(cases[i].name) == cases[i].category, "%s: category %d, expected %d",
                      cases[i].name, category(cases[i].name), cases[i].category);
    }
}

static void test_bad_tables(void)
{
    static const char *const bad[] = {
        "",
        "{\"families\": []}",
        "{\"families\": [{\"family\": \"x\", \"category\": \"nonsense\", \"contains\": [\"x\"]}]}",
        "{\"families\": [{\"family\": \"x\", \"category\": \"GEMM\"}]}",
        "{\"families\": [{\"family\": \"x\", \"category\": \"GEMM\", \"contains\": [1]}]}",
        "{\"families\": [{\"category\": \"GEMM\", \"contains\": [\"x\"]}]}",
    };
    struct kvs_logger quiet = {NULL, NULL, (enum kvs_log_level)99}; /* the errors are expected */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct kvs_families f;
        struct kvs_arena ar = {0};
        KVS_CHECK_MSG(kvs_families_load(&f, &ar, bad[i], strlen(bad[i]), &quiet) == KVS_STATUS_PARSE,
                      "table %zu accepted: %s", i, bad[i]);
        kvs_arena_free(&ar);
    }
}

/* Kernel names decide over their ops: a GEMM under a copy op is GEMM; a
 * pointwise kernel under aten::copy_ is a copy. */
static void test_in_a_trace(void)
{
    static const char json[] =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":50,"
        "\"args\":{\"External id\":1}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"nvjet_tst_64x8_64x16_4x1_v_bz_TNT\",\"pid\":0,\"tid\":7,"
        "\"ts\":10,\"dur\":20,\"args\":{\"External id\":1,\"device\":0,\"stream\":7}},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":50,"
        "\"args\":{\"External id\":2}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"void at::native::vectorized_elementwise_kernel<4>()\","
        "\"pid\":0,\"tid\":7,\"ts\":110,\"dur\":10,\"args\":{\"External id\":2,\"device\":0,\"stream\":7}}]}";
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    struct kvs_analysis *a = NULL;
    KVS_REQUIRE(kvs_analyze_memory(json, sizeof json - 1, "fam.json", &opt, &a) == KVS_STATUS_OK);
    KVS_REQUIRE(a->nkernel == 2);
    KVS_CHECK_EQ_STR(a->kernels[0].family, "cublas");
    KVS_CHECK_EQ_INT(a->kernels[0].category, KVS_CAT_GEMM);
    KVS_CHECK_EQ_STR(a->kernels[1].family, "elementwise"); /* the name's family */
    KVS_CHECK_EQ_INT(a->kernels[1].category, KVS_CAT_COPY_CAST); /* its op's work */
    KVS_CHECK(a->category_ms[KVS_CAT_GEMM] > 0.0199 && a->category_ms[KVS_CAT_GEMM] < 0.0201);
    KVS_CHECK(a->category_ms[KVS_CAT_COPY_CAST] > 0.0099 && a->category_ms[KVS_CAT_COPY_CAST] < 0.0101);
    KVS_REQUIRE(a->nfamily == 2);
    KVS_CHECK_EQ_STR(a->families[0].family, "cublas");
    KVS_CHECK_EQ_STR(a->families[1].family, "copy_cast");
    kvs_analysis_free(a);
}

int main(int argc, char **argv)
{
    const struct kvs_data_file *f = kvs_data_find("kernel_families");
    if (!f || kvs_families_load(&fams, &arena, f->text, f->len, NULL) != KVS_STATUS_OK) {
        fprintf(stderr, "setup failed: the bundled family table does not load\n");
        return 99;
    }
    static const struct kvs_test tests[] = {
        {"names", test_names},
        {"bad_tables", test_bad_tables},
        {"in_a_trace", test_in_a_trace},
        {NULL, NULL},
    };
    int rc = kvs_test_main(argc, argv, tests);
    kvs_arena_free(&arena);
    return rc;
}
