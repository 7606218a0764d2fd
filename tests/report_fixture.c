/* tests/report_fixture.c — see report_fixture.h. The numbers are made up but
 * consistent with each other (bytes/call x calls / time = GB/s, and so on),
 * so a renderer that recomputed something would show a different number. */
#include "report_fixture.h"

#include <string.h>

static const char *const kv_role = "aten::copy_|c10::BFloat16<-c10::Float8_e4m3fn|kv_cache";

#include <math.h>

/* the roofline table: a decode GEMV [1,6144] x [6144,2048] bf16 at 10 us a call
 * (25,182,208 bytes, 25,165,824 FLOPs: 2518.2 GB/s, 2.517 TFLOP/s, intensity
 * 0.9993: memory-bound, 52.5% of the roof 4800 x 0.9993 GB/s); a mul (bytes
 * only); an op with no formula (everything unknown) */
static void op_rows(struct kvs_fixture *fx)
{
    struct kvs_analysis *a = &fx->a;
    a->trace.peak_bf16_tflops = 989;
    a->trace.peak_fp8_tflops = 1979;
    struct kvs_op_roofline *o = fx->ops;
    fx->op_dims[0][0] = (struct kvs_dims){2, {1, 6144}};
    fx->op_dims[0][1] = (struct kvs_dims){2, {6144, 2048}};
    fx->op_dtypes[0][0] = fx->op_dtypes[0][1] = "c10::BFloat16";
    o[0] = (struct kvs_op_roofline){
        .op = "aten::mm", .family = "matmul", .kernel = "gemv2T_kernel_val<int, int, bf16>",
        .ntensors = 2, .tensor_dims = fx->op_dims[0], .tensor_dtypes = fx->op_dtypes[0],
        .calls = 244, .calls_per_step = 61, .gpu_ms = 2.44, .gpu_ms_per_step = 0.61,
        .gpu_fraction = 0.05, .us_per_call = 10, .bytes_per_call = 25182208,
        .flops_per_call = 25165824, .sized_from = "dims", .precision = "bf16",
        .achieved_gbps = 2518.2208, .achieved_tflops = 2.5165824,
        .intensity = 25165824.0 / 25182208.0, .peak_tflops = 989, .bound = "memory",
        .roof_fraction = 2.5165824 / (25165824.0 / 25182208.0 * 4.8)};
    fx->op_dims[1][0] = (struct kvs_dims){2, {1, 6144}};
    fx->op_dtypes[1][0] = "c10::BFloat16";
    o[1] = (struct kvs_op_roofline){
        .op = "aten::mul", .family = "elementwise", .kernel = "vectorized_elementwise_kernel",
        .ntensors = 1, .tensor_dims = fx->op_dims[1], .tensor_dtypes = fx->op_dtypes[1],
        .calls = 488, .calls_per_step = 122, .gpu_ms = 0.976, .gpu_ms_per_step = 0.244,
        .gpu_fraction = 0.02, .us_per_call = 2, .bytes_per_call = 24576, .flops_per_call = -1,
        .sized_from = "dims", .achieved_gbps = 12.288, .achieved_tflops = NAN, .intensity = NAN,
        .bound = "memory", .roof_fraction = 12.288 / 4800};
    o[2] = (struct kvs_op_roofline){
        .op = "aten::cat", .kernel = "CatArrayBatchedCopy", .calls = 244, .calls_per_step = 61,
        .gpu_ms = 0.488, .gpu_ms_per_step = 0.122, .gpu_fraction = 0.01, .us_per_call = 2,
        .bytes_per_call = -1, .flops_per_call = -1, .achieved_gbps = NAN,
        .achieved_tflops = NAN, .intensity = NAN, .roof_fraction = NAN};
    a->ops = o;
    a->nop = 3;
}

static void fill_common(struct kvs_fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    struct kvs_analysis *a = &fx->a;
    a->trace.device = "NVIDIA H200";
    a->trace.peak_gbps = 4800;
    a->trace.peak_source = "device table";
    a->trace.copy_gbps = 4257;
    a->trace.producer = "pytorch-kineto";
    a->trace.rank = -1;
    a->model = NULL;
    a->num_layers = 0;
    for (int i = 0; i < 4; i++) {
        fx->step[i].index = 10 + i;
        fx->step[i].name = i == 0 ? "ProfilerStep#10" : i == 1 ? "ProfilerStep#11"
                         : i == 2 ? "ProfilerStep#12" : "ProfilerStep#13";
        fx->step[i].start_us = 1000.0 + 200000.0 * i;
    }
    a->step = fx->step;
    a->nstep = 4;
    a->groups = fx->groups;
    a->kernels = fx->kernels;
    a->findings = fx->findings;
    op_rows(fx);
}

static void kv_group(struct kvs_fixture *fx, int64_t tokens, double ms_per_call, bool full)
{
    struct kvs_group *g = &fx->groups[0];
    for (int t = 0; t < 2; t++) {
        fx->dims[0][t].rank = 3;
        fx->dims[0][t].d[0] = tokens;
        fx->dims[0][t].d[1] = 1;
        fx->dims[0][t].d[2] = 576;
    }
    fx->dtypes[0][0] = "c10::BFloat16";
    fx->dtypes[0][1] = "c10::Float8_e4m3fn";
    g->op = "aten::copy_";
    g->kernel = "void at::native::elementwise_kernel<128, 4, "
                "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>(int, "
                "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3})";
    g->ntensors = 2;
    g->tensor_dims = fx->dims[0];
    g->tensor_dtypes = fx->dtypes[0];
    g->role = kv_role;
    g->calls = 244;
    g->calls_per_step = 61;
    g->gpu_ms = 244 * ms_per_call;
    g->gpu_ms_per_step = 61 * ms_per_call;
    g->bytes_per_call = tokens * 576 * 3; /* 1 byte read + 2 bytes written */
    g->achieved_gbps = (double)g->bytes_per_call / (ms_per_call * 1e6);
    g->efficiency = g->achieved_gbps / 4800;
    g->has_match = true;
    g->match.label = full ? "KV capacity (tokens) x kv_lora_rank 512 + qk_rope_head_dim 64"
                          : "active tokens x kv_lora_rank 512 + qk_rope_head_dim 64";
    g->match.capacity_tokens = full ? tokens : 0;
    g->match.row_dim = 576;
    g->match.per_layer = true;
    g->match.inferred = true;
}

static void other_groups(struct kvs_fixture *fx)
{
    struct kvs_group *g = &fx->groups[1];
    g->op = "Memcpy HtoD (Pageable -> Device)";
    g->kernel = "Memcpy HtoD (Pageable -> Device)";
    g->role = "Memcpy HtoD";
    g->calls = 8;
    g->calls_per_step = 2;
    g->gpu_ms = 0.08;
    g->gpu_ms_per_step = 0.02;
    g->bytes_per_call = 4096;
    g->achieved_gbps = 4096.0 * 8 / (0.08 * 1e6);
    g->efficiency = g->achieved_gbps / 4800;

    g = &fx->groups[2];
    /* aten::_to_copy's seven inputs as PyTorch records them: the tensor,
     * then scalars and empty slots */
    static const char *const to_copy_types[7] = {"float", "Scalar", "", "", "", "Scalar", ""};
    for (int t = 0; t < 7; t++) {
        fx->dims[2][t].rank = 0;
        fx->dtypes[2][t] = to_copy_types[t];
    }
    fx->dims[2][0].rank = 2;
    fx->dims[2][0].d[0] = 1;
    fx->dims[2][0].d[1] = 6144;
    g->op = "aten::_to_copy";
    g->kernel = "void at::native::unrolled_elementwise_kernel<float, c10::BFloat16>(int)";
    g->ntensors = 7;
    g->tensor_dims = fx->dims[2];
    g->tensor_dtypes = fx->dtypes[2];
    g->role = "aten::_to_copy|float->bf16";
    g->calls = 244;
    g->calls_per_step = 61;
    g->gpu_ms = 244 * 0.002;
    g->gpu_ms_per_step = 61 * 0.002;
    g->bytes_per_call = 6144 * 6;
    g->achieved_gbps = 6144.0 * 6 / (0.002 * 1e6);
    g->efficiency = g->achieved_gbps / 4800;
}

static void kernels(struct kvs_fixture *fx, double cast_ms, double total)
{
    struct kvs_kernel_stat *k = fx->kernels;
    k[0] = (struct kvs_kernel_stat){fx->groups[0].kernel, 244, cast_ms, cast_ms / total,
                                    KVS_CAT_COPY_CAST, "copy_cast"};
    k[1] = (struct kvs_kernel_stat){"nvjet_tst_64x8_64x16_4x1_v_bz_TNT", 2440, 30.0, 30.0 / total,
                                    KVS_CAT_GEMM, "cublas"};
    /* a hostile name: markup, quotes, a control character and a lone 0xFF byte */
    k[2] = (struct kvs_kernel_stat){"evil<script>alert(\"x\")</script>&\x01|`k`\xff", 244, 4.0,
                                    4.0 / total, KVS_CAT_ATTENTION, "attention"};
    k[3] = (struct kvs_kernel_stat){"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                                    8, 1.0, 1.0 / total, KVS_CAT_COMM, "nccl"};
    fx->a.nkernel = 4;
}

/* Kernels, GPU fractions, steps and categories around the groups (the KV
 * cast first): four steps of mean_ms wall time each, `spread` ms apart. */
static void timing(struct kvs_fixture *fx, double mean_ms, double spread)
{
    struct kvs_analysis *a = &fx->a;
    double cast = fx->groups[0].gpu_ms;
    double total = cast + 30.0 + 4.0 + 1.0 + 0.08 + 0.488; /* all busy time */
    kernels(fx, cast, total);
    for (int i = 0; i < 3; i++)
        fx->groups[i].gpu_fraction = fx->groups[i].gpu_ms / total;
    a->steps.count = 4;
    a->steps.mean_ms = mean_ms;
    a->steps.mean_time_ms = mean_ms; /* the GPU work ends inside each step */
    a->steps.source = "ProfilerStep#N";
    a->steps.gpu_ms_per_step = total / 4;
    a->steps.gpu_busy_fraction = a->steps.gpu_ms_per_step / a->steps.mean_ms;
    a->steps.total_gpu_ms = total;
    for (int i = 0; i < 4; i++) {
        struct kvs_step *s = &fx->step[i];
        s->wall_ms = mean_ms + (i - 1.5) * spread;
        s->time_ms = s->wall_ms;
        s->end_us = s->start_us + s->time_ms * 1e3;
        s->gpu_span_ms = s->wall_ms * 0.9;
        s->gpu_busy_ms = total / 4;
        s->busy_fraction = s->gpu_busy_ms / s->wall_ms;
        s->idle_ms = s->time_ms > s->gpu_busy_ms ? s->time_ms - s->gpu_busy_ms : 0;
        s->category_ms[KVS_CAT_COPY_CAST] = (cast + 0.08 + 0.488) / 4;
        s->category_ms[KVS_CAT_GEMM] = 7.5;
        s->category_ms[KVS_CAT_ATTENTION] = 1.0;
        s->category_ms[KVS_CAT_COMM] = 0.25;
    }
    double sum = 0;
    for (int c = 0; c < KVS_CAT_COUNT_; c++)
        sum += a->category_ms[c] = 4 * fx->step[0].category_ms[c];
    for (int c = 0; c < KVS_CAT_COUNT_; c++)
        a->category_share[c] = a->category_ms[c] / sum;
}

void kvs_fixture_unfixed(struct kvs_fixture *fx)
{
    fill_common(fx);
    struct kvs_analysis *a = &fx->a;
    a->trace.path = "traces/mla \"unfixed\".json.gz";
    a->trace.bytes = 106123456;
    a->trace.events = 612345;
    a->trace.ops = 80000;
    a->trace.kernels = 40000;
    kv_group(fx, 131072, 0.2249, true);
    other_groups(fx);
    a->ngroup = 3;
    timing(fx, 52.0, 0.4); /* the cast: 54.8756 ms */

    struct kvs_finding *f = fx->findings;
    f[0] = (struct kvs_finding){
        "kv_full_buffer_cast", KVS_SEV_HIGH,
        "aten::copy_ casts the whole KV buffer (131072 tokens x 576) from FP8 to BF16 on every "
        "layer: 61 calls/step, 13.7 ms/step, 13.8 GB/step.",
        "dims [[131072,1,576],[131072,1,576]] match the KV capacity; 61 calls per step",
        "gather the active tokens first, then cast them; or use an attention kernel that reads FP8",
        13.6, 61.0 * 131072 * 576 * 3, 61.0 * 1024 * 576 * 3, 0, 131072, 1024, 0, NULL, 1, {0, NULL}};
    f[1] = (struct kvs_finding){"gpu_idle", KVS_SEV_WARN,
                                "The GPU is busy 43.8% of the step: the step is launch-bound.",
                                "union of GPU activity per step vs step wall time",
                                "capture the step in a CUDA graph; fuse small kernels",
                                0, 0, 0, -1, 0, 0, 0, NULL, 1, {0, NULL}};
    a->nfinding = 2;
}

void kvs_fixture_fixed(struct kvs_fixture *fx)
{
    fill_common(fx);
    struct kvs_analysis *a = &fx->a;
    a->trace.path = "traces/mla_fixed.json.gz";
    a->trace.bytes = 107000000;
    a->trace.events = 640000;
    kv_group(fx, 1024, 0.004, false);
    other_groups(fx);
    a->ngroup = 3;
    timing(fx, 41.6, 0.0); /* the cast: 0.976 ms */
    struct kvs_finding *f = fx->findings;
    f[0] = (struct kvs_finding){"gpu_idle", KVS_SEV_WARN,
                                "The GPU is busy 21.9% of the step: the step is launch-bound.",
                                "union of GPU activity per step vs step wall time",
                                "capture the step in a CUDA graph; fuse small kernels",
                                0, 0, 0, -1, 0, 0, 0, NULL, 1, {0, NULL}};
    f[1] = (struct kvs_finding){"low_bandwidth_efficiency", KVS_SEV_INFO,
                                "aten::copy_ [1024,1,576] reaches 9.2% of peak.",
                                "442 GB/s vs 4800 GB/s", "larger batches of work per launch",
                                0.1, 61.0 * 1024 * 576 * 3, 0, 0, 0, 0, 0, NULL, 1, {0, NULL}};
    a->nfinding = 2;
}
