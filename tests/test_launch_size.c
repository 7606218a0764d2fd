/* tests/test_launch_size.c — sizing copy/cast kernels from their launch
 * (analyzers/launch_size.c): what a PyTorch kernel name says, the element
 * range grid x block allows, and the analysis of a CUDA-graph replay with no
 * shapes (../shared/traces/graphs/g61full_replay: 61 layers, each casting its
 * whole [131072, 1, 576] FP8 pool to BF16 inside the graph; grid 147456 x
 * block 128 x 4 per thread = 75,497,472 = 131072 x 576 elements).
 *
 *   meson test -C build test_launch_size     ./build/analyzers/test_launch_size [case...]
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "launch_size.h"

/* the replay's cast kernel, as CUPTI/Kineto recorded it */
#define FULL_CAST                                                                                  \
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("            \
    "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() "     \
    "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, "     \
    "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, " \
    "at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda("            \
    "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() "     \
    "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, "        \
    "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, " \
    "at::native::memory::StoreWithCast<1>)"

static void test_names(void)
{
    struct kvs_launch_kernel k;
    KVS_REQUIRE(kvs_launch_kernel_parse(FULL_CAST, &k));
    KVS_CHECK_EQ_INT(k.per_thread_min, 4);
    KVS_CHECK_EQ_INT(k.per_thread_max, 4);
    KVS_CHECK_EQ_STR(k.dst_dtype, "c10::BFloat16");
    KVS_CHECK(k.src_dtype == NULL); /* LoadWithCast: the source is not in the name */
    KVS_CHECK(k.load_cast);
    KVS_CHECK_EQ_INT(k.dst_bits, 16);

    /* float -> bf16: the source is the functor's argument */
    KVS_REQUIRE(kvs_launch_kernel_parse(
        "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda("
        "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
        "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, "
        "std::array<char*, 2ul>)",
        &k));
    KVS_CHECK_EQ_STR(k.src_dtype, "float");
    KVS_CHECK_EQ_STR(k.dst_dtype, "c10::BFloat16");
    KVS_CHECK_EQ_INT(k.per_thread_min, 8);  /* never below the vector width */
    KVS_CHECK_EQ_INT(k.per_thread_max, 16);
    KVS_CHECK_EQ_INT(k.src_bits + k.dst_bits, 48);

    /* bf16 -> fp8: one byte out, whichever float8 */
    KVS_REQUIRE(kvs_launch_kernel_parse(
        "void at::native::vectorized_elementwise_kernel<4, at::native::float8_copy_kernel_cuda("
        "at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, ...)",
        &k));
    KVS_CHECK_EQ_STR(k.src_dtype, "c10::BFloat16");
    KVS_CHECK_EQ_INT(k.dst_bits, 8);
    KVS_CHECK_EQ_INT(k.per_thread_min, 4);

    /* a strided same-dtype copy: elementwise_kernel<128, 4, ...> */
    KVS_REQUIRE(kvs_launch_kernel_parse(
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
        "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
        "const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, "
        "...)::{lambda(int)#1}>(int, ...)",
        &k));
    KVS_CHECK_EQ_INT(k.per_thread_min, 4);
    KVS_CHECK_EQ_STR(k.src_dtype, "c10::BFloat16");
    KVS_CHECK(!k.load_cast);

    /* declined: an indexed write, a computing elementwise kernel, no loop */
    KVS_CHECK(!kvs_launch_kernel_parse(
        "void at::native::index_elementwise_kernel<128, 4, at::native::index_copy_kernel_impl<"
        "at::native::OpaqueType<1> >(at::TensorIterator&, long, long, long)::{lambda(int)#1}>(long, ...)",
        &k));
    KVS_CHECK(!kvs_launch_kernel_parse(
        "void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous namespace)::"
        "silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}, "
        "std::array<char*, 2ul> >(int, ...)",
        &k));
    KVS_CHECK(!kvs_launch_kernel_parse("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT", &k));
    KVS_CHECK(!kvs_launch_kernel_parse("void at::native::unrolled_elementwise_kernel<garbage", &k));
}

static void test_elements(void)
{
    struct kvs_launch_kernel k;
    KVS_REQUIRE(kvs_launch_kernel_parse(FULL_CAST, &k));
    int64_t lo, hi;
    KVS_REQUIRE(kvs_launch_elements(&k, 147456, 128, &lo, &hi));
    KVS_CHECK_EQ_INT(lo, 75496961); /* (grid - 1) x 512 + 1 */
    KVS_CHECK_EQ_INT(hi, 75497472); /* grid x 512 = 131072 x 576 */
    KVS_CHECK(!kvs_launch_elements(&k, 0, 128, &lo, &hi));
    KVS_CHECK(!kvs_launch_elements(&k, INT64_MAX / 2, 1 << 20, &lo, &hi)); /* overflow */
    KVS_CHECK_EQ_STR(kvs_kv_dtype_name("fp8"), "c10::Float8_e4m3fn");
    KVS_CHECK_EQ_STR(kvs_kv_dtype_name("torch.bfloat16"), "c10::BFloat16");
    KVS_CHECK(kvs_kv_dtype_name("fp9") == NULL);
}

static struct kvs_analysis *replay(const char *model, int64_t cap, const char *kv_dtype)
{
    char path[4096];
    if (!kvs_test_shared_path(path, sizeof path, "traces/graphs/g61full_replay.pt.trace.json.gz"))
        return NULL;
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log.min_level = KVS_LOG_ERROR;
    opt.model = model;
    opt.kv_capacity = cap;
    opt.kv_dtype = kv_dtype;
    struct kvs_analysis *a = NULL;
    KVS_CHECK_EQ_INT(kvs_analyze_file(path, &opt, &a), KVS_STATUS_OK);
    return a;
}

/* the cast group and the first finding, whichever way it was told the pool */
static void check_replay_cast(const struct kvs_analysis *a, bool capacity_given, int bound)
{
    KVS_REQUIRE(a && a->ngroup > 0);
    const struct kvs_group *g = &a->groups[0];
    KVS_CHECK_EQ_STR(g->sized_from, "launch");
    KVS_CHECK_EQ_INT(g->launch_elements_min, 131072LL * 576);
    KVS_CHECK_EQ_INT(g->launch_elements_max, 131072LL * 576);
    KVS_REQUIRE(g->ntensors == 2);
    KVS_CHECK_EQ_INT(g->tensor_dims[0].d[0], 131072);
    KVS_CHECK_EQ_INT(g->tensor_dims[0].d[1], 576);
    KVS_CHECK_EQ_STR(g->tensor_dtypes[0], "c10::BFloat16");
    KVS_CHECK(fabs(g->calls_per_step - 61) < 1e-9);
    /* BF16 written + FP8 (or, unnamed, at least 1 byte) read per element */
    KVS_CHECK_EQ_INT(g->bytes_per_call, 131072LL * 576 * 3);
    KVS_CHECK_EQ_INT(g->bytes_bound, bound);
    KVS_REQUIRE(g->has_match);
    KVS_CHECK_EQ_INT(g->match.capacity_tokens, 131072);
    KVS_CHECK_EQ_INT(g->match.row_dim, 576);
    KVS_CHECK(capacity_given ? !g->match.inferred : g->match.inferred);
    KVS_REQUIRE(a->nfinding > 0);
    const struct kvs_finding *f = &a->findings[0];
    KVS_CHECK_EQ_STR(f->id, "kv_full_buffer_cast");
    KVS_CHECK_EQ_INT(f->group, 0);
    /* no active-token count in a replay: all of the cast's time is recoverable */
    KVS_CHECK(fabs(f->gpu_ms_per_step - g->gpu_ms_per_step) < 1e-9);
    KVS_CHECK(f->gpu_ms_per_step > 13.5 && f->gpu_ms_per_step < 14.5); /* 14.07 ms measured */
    KVS_CHECK(strstr(f->message, "(131072 tokens) 61.0 times per step") != NULL);
    KVS_CHECK(strstr(f->message, "void at::native") == NULL); /* the short kernel name */
}

static void test_replay_model(void)
{
    struct kvs_analysis *a = replay("glm5", 0, NULL);
    if (!a)
        KVS_TEST_SKIP("../shared/traces/graphs not present");
    check_replay_cast(a, false, -1);
    KVS_CHECK(strstr(a->findings[0].message, "at least") != NULL);
    kvs_analysis_free(a);
}

static void test_replay_capacity(void)
{
    struct kvs_analysis *a = replay(NULL, 131072, NULL);
    if (!a)
        KVS_TEST_SKIP("../shared/traces/graphs not present");
    check_replay_cast(a, true, -1);
    kvs_analysis_free(a);
    /* the KV dtype named: the bytes are exact */
    a = replay(NULL, 131072, "fp8");
    check_replay_cast(a, true, 0);
    KVS_CHECK_EQ_STR(a->groups[0].tensor_dtypes[1], "c10::Float8_e4m3fn");
    kvs_analysis_free(a);
}

/* declines: nothing to factor by (no model, no capacity), a capacity that
 * is not a factor */
static void test_replay_declines(void)
{
    struct kvs_analysis *a = replay(NULL, 0, NULL);
    if (!a)
        KVS_TEST_SKIP("../shared/traces/graphs not present");
    const struct kvs_group *g = &a->groups[0];
    KVS_CHECK_EQ_INT(g->launch_elements_min, 75496961);
    KVS_CHECK_EQ_INT(g->launch_elements_max, 75497472);
    KVS_CHECK_EQ_INT(g->ntensors, 0);
    KVS_CHECK_EQ_INT(g->bytes_per_call, 0); /* source unknown and count a range: unknown */
    KVS_CHECK(!g->has_match);
    for (size_t i = 0; i < a->nfinding; i++)
        KVS_CHECK(strcmp(a->findings[i].id, "kv_full_buffer_cast") != 0);
    kvs_analysis_free(a);

    a = replay(NULL, 100000, NULL); /* 75.5M is no multiple of 100000 within the range */
    KVS_CHECK(!a->groups[0].has_match);
    KVS_CHECK_EQ_INT(a->groups[0].ntensors, 0);
    kvs_analysis_free(a);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"names", test_names},
        {"elements", test_elements},
        {"replay_model", test_replay_model},
        {"replay_capacity", test_replay_capacity},
        {"replay_declines", test_replay_declines},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
