/* tests/test_analysis.c — the analysis on hand-written fixtures with known
 * answers (tests/fixtures/README.md derives each one): linking by External
 * id, by a runtime call's id and by correlation + enclosing op (B/E ops
 * included); copy/cast groups, bytes per call, GB/s, efficiency; steps, GPU
 * busy as the union of intervals clipped to the step, category time; shape
 * matching with and without a model; findings; the options.
 *
 *   meson test -C build test_analysis     ./build/analyzers/test_analysis [case...]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "kvscope/units.h"

static struct kvs_log_capture cap;

/* the analysis of the trace at path (default options when opt is null),
 * its log captured in cap; checks the status against want */
static struct kvs_analysis *analyze_at(const char *path, struct kvs_analysis_options *opt,
                                       enum kvs_status want)
{
    struct kvs_analysis_options def;
    if (!opt) {
        kvs_analysis_options_init(&def);
        opt = &def;
    }
    opt->log = kvs_capture_logger(&cap);
    struct kvs_analysis *a = NULL;
    enum kvs_status st = kvs_analyze_file(path, opt, &a);
    KVS_CHECK_MSG(st == want, "%s: status %d, want %d (%s)", path, st, want, cap.last);
    return a;
}

static struct kvs_analysis *analyze(const char *fixture, struct kvs_analysis_options *opt,
                                    enum kvs_status want)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, fixture);
    return analyze_at(path, opt, want);
}

/* the same for a trace given as text (written to a temporary file) */
static struct kvs_analysis *analyze_json(const char *json, size_t n,
                                         struct kvs_analysis_options *opt)
{
    char path[256];
    kvs_tmp_write(path, sizeof path, json, n, ".json");
    struct kvs_analysis *a = analyze_at(path, opt, KVS_STATUS_OK);
    unlink(path);
    return a;
}

/* a group's dims as JSON text (kvs_dims_json), in one of four buffers so a
 * check can hold two at once */
static const char *dims_of(const struct kvs_group *g)
{
    static char buf[4][512];
    static int next;
    next = (next + 1) % 4;
    return kvs_dims_json(buf[next], sizeof buf[next], g);
}

/* a group's dtypes joined with "," */
static const char *dtypes_of(const struct kvs_group *g)
{
    static char buf[512];
    size_t n = 0;
    buf[0] = 0;
    for (int k = 0; k < g->ntensors && n < sizeof buf; k++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", k ? "," : "", g->tensor_dtypes[k]);
    return buf;
}

static const struct kvs_group *find_group(const struct kvs_analysis *a, const char *op, const char *dims)
{
    for (size_t i = 0; i < a->ngroup; i++)
        if (!strcmp(a->groups[i].op, op) && (!dims || !strcmp(dims_of(&a->groups[i]), dims)))
            return &a->groups[i];
    return NULL;
}

#define MS(us) ((us) / 1000.0)
#define TOL 1e-9

static void test_kineto_trace_info(void)
{
    struct kvs_analysis *a = analyze("kineto_small.json", NULL, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_INT(a->trace.ops, 20);
    KVS_CHECK_EQ_INT(a->trace.kernels, 13);
    KVS_CHECK_EQ_INT(a->trace.memcpys, 2);
    KVS_CHECK_EQ_INT(a->trace.memsets, 1);
    /* orphan kernel, orphan memset, the zero-length kernel */
    KVS_CHECK_EQ_INT(a->trace.gpu_unlinked, 3);
    KVS_CHECK_EQ_STR(a->trace.device, "NVIDIA H200");
    KVS_CHECK_NEAR(a->trace.peak_gbps, 4800, TOL);
    KVS_CHECK_EQ_STR(a->trace.peak_source, "device table");
    KVS_CHECK_EQ_STR(a->trace.producer, "pytorch-kineto");
    KVS_CHECK_EQ_INT(a->trace.rank, 0);
    KVS_CHECK(!a->trace.truncated);
    kvs_analysis_free(a);
}

static void test_kineto_steps(void)
{
    struct kvs_analysis *a = analyze("kineto_small.json", NULL, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_REQUIRE(a->nstep == 2);
    KVS_CHECK_EQ_INT(a->steps.count, 2);
    KVS_CHECK_EQ_INT(a->step[0].index, 1);
    KVS_CHECK_EQ_INT(a->step[1].index, 2);
    KVS_CHECK_EQ_STR(a->step[1].name, "ProfilerStep#2");
    KVS_CHECK_NEAR(a->step[0].wall_ms, 1.0, TOL);
    KVS_CHECK_NEAR(a->step[0].start_us, 1000000.0, TOL);
    /* step 1: copy 20 + GEMM 30 + copy 20 + add 10 + attention 10 with the
     * 2 us memcpy inside the attention kernel's interval: 90 us */
    KVS_CHECK_NEAR(a->step[0].gpu_busy_ms, MS(90), TOL);
    /* step 2: the same 90 + all 20 us of aten::mul's kernel: launched in the
     * step, it belongs to it, though it ends 10 us after the step's CPU range */
    KVS_CHECK_NEAR(a->step[1].gpu_busy_ms, MS(110), TOL);
    KVS_CHECK_NEAR(a->step[0].busy_fraction, 0.09, TOL);
    KVS_CHECK_NEAR(a->step[0].category_ms[KVS_CAT_COPY_CAST], MS(42), TOL);
    KVS_CHECK_NEAR(a->step[0].category_ms[KVS_CAT_GEMM], MS(30), TOL);
    KVS_CHECK_NEAR(a->step[0].category_ms[KVS_CAT_ATTENTION], MS(10), TOL);
    KVS_CHECK_NEAR(a->step[0].category_ms[KVS_CAT_OTHER], MS(10), TOL);
    KVS_CHECK_NEAR(a->step[1].category_ms[KVS_CAT_OTHER], MS(30), TOL);
    /* the GPU work stays inside each step's 1 ms: the step's time is its CPU range */
    KVS_CHECK(a->step[1].gpu_span_ms <= a->step[1].wall_ms);
    KVS_CHECK_NEAR(a->step[1].time_ms, 1.0, TOL);
    KVS_CHECK_EQ_INT(a->step[1].kind, KVS_STEP_UNKNOWN);
    KVS_CHECK_EQ_STR(a->steps.source, "ProfilerStep#N");
    KVS_CHECK_NEAR(a->steps.mean_ms, 1.0, TOL);
    KVS_CHECK_NEAR(a->steps.gpu_ms_per_step, MS(100), TOL);
    KVS_CHECK_NEAR(a->steps.gpu_busy_fraction, 0.1, TOL);
    KVS_CHECK_NEAR(a->steps.total_gpu_ms, MS(200), TOL);
    KVS_CHECK_NEAR(a->category_ms[KVS_CAT_COPY_CAST], MS(84), TOL);
    KVS_CHECK_NEAR(a->category_ms[KVS_CAT_OTHER], MS(40), TOL);
    KVS_CHECK(a->steps.tokens_per_s == 0); /* no batch given */
    kvs_analysis_free(a);
}

static void test_kineto_groups(void)
{
    struct kvs_analysis *a = analyze("kineto_small.json", NULL, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    /* aten::to / aten::_to_copy wrap copy_ but launch nothing: no groups;
     * the memcpy's copy_ and the bare memset are the other two */
    KVS_CHECK_EQ_INT(a->ngroup, 3);
    const struct kvs_group *g = &a->groups[0];
    KVS_CHECK_EQ_STR(g->op, "aten::copy_");
    KVS_CHECK_EQ_STR(dims_of(g), "[[16384,1,576],[16384,1,576]]");
    KVS_CHECK_EQ_STR(dtypes_of(g), "c10::BFloat16,c10::Float8_e4m3fn");
    KVS_CHECK_EQ_INT(g->ntensors, 2);
    KVS_CHECK_EQ_INT(g->tensor_dims[1].rank, 3);
    KVS_CHECK_EQ_INT(g->tensor_dims[1].d[0], 16384);
    KVS_CHECK_EQ_STR(g->tensor_dtypes[1], "c10::Float8_e4m3fn");
    KVS_CHECK_EQ_INT(g->calls, 4);
    KVS_CHECK_NEAR(g->calls_per_step, 2.0, TOL);
    KVS_CHECK_NEAR(g->gpu_ms, MS(80), TOL);
    KVS_CHECK_NEAR(g->gpu_ms_per_step, MS(40), TOL);
    /* trace busy: 90 + 90 + 20 (mul) + 5 (orphan) + 1 (memset) = 206 us */
    KVS_CHECK_NEAR(g->gpu_fraction, 80.0 / 206.0, 1e-12);
    KVS_CHECK_EQ_INT(g->bytes_per_call, 16384LL * 576 * (2 + 1));
    KVS_CHECK_NEAR(g->achieved_gbps, 16384.0 * 576 * 3 * 4 / 80000.0, 1e-9);
    KVS_CHECK_NEAR(g->efficiency, 16384.0 * 576 * 3 * 4 / 80000.0 / 4800.0, 1e-12);
    KVS_CHECK(g->kernel && strstr(g->kernel, "direct_copy_kernel_cuda"));
    KVS_CHECK_EQ_STR(g->role, "cast BFloat16<-Float8_e4m3fn [*,1,576]");
    /* a device-to-device memcpy reads and writes its 1152 bytes */
    const struct kvs_group *m = find_group(a, "aten::copy_", "[[576],[576]]");
    KVS_REQUIRE(m);
    KVS_CHECK_EQ_INT(m->calls, 2);
    KVS_CHECK_EQ_INT(m->bytes_per_call, 2304);
    KVS_CHECK_NEAR(m->gpu_ms, MS(4), TOL);
    KVS_CHECK_NEAR(m->achieved_gbps, 2304.0 * 2 / 4000.0, 1e-12);
    /* a memset with no op is its own group, named after the activity */
    const struct kvs_group *z = find_group(a, "Memset (Device)", NULL);
    KVS_REQUIRE(z);
    KVS_CHECK_EQ_INT(z->calls, 1);
    KVS_CHECK_EQ_INT(z->bytes_per_call, 4096);
    KVS_CHECK_EQ_STR(dims_of(z), "[]");
    KVS_CHECK_EQ_INT(z->ntensors, 0);
    KVS_CHECK(!z->has_match);
    kvs_analysis_free(a);
}

static void test_kineto_kernels(void)
{
    struct kvs_analysis *a = analyze("kineto_small.json", NULL, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_REQUIRE(a->nkernel >= 5);
    /* 4 x 20 us of the copy kernel lead; then the GEMM's 2 x 30 us */
    KVS_CHECK(strstr(a->kernels[0].name, "direct_copy_kernel_cuda") != NULL);
    KVS_CHECK_EQ_INT(a->kernels[0].calls, 4);
    KVS_CHECK_NEAR(a->kernels[0].gpu_ms, MS(80), TOL);
    KVS_CHECK_EQ_INT(a->kernels[0].category, KVS_CAT_COPY_CAST);
    KVS_CHECK_EQ_STR(a->kernels[1].name, "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT");
    KVS_CHECK_EQ_INT(a->kernels[1].category, KVS_CAT_GEMM);
    for (size_t i = 0; i < a->nkernel; i++) {
        if (strstr(a->kernels[i].name, "flash_fwd"))
            KVS_CHECK_EQ_INT(a->kernels[i].category, KVS_CAT_ATTENTION);
        if (strstr(a->kernels[i].name, "CUDAFunctor_add")) /* linked by correlation only */
            KVS_CHECK_EQ_INT(a->kernels[i].category, KVS_CAT_OTHER);
        if (i)
            KVS_CHECK(a->kernels[i - 1].gpu_ms >= a->kernels[i].gpu_ms);
    }
    kvs_analysis_free(a);
}

/* No config: the layer count comes from layer_0/layer_1 ranges, and the
 * 16384-token buffer next to [1024,1,576] views is a preallocated buffer. */
static void test_kineto_inferred_match_and_findings(void)
{
    struct kvs_analysis *a = analyze("kineto_small.json", NULL, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    const struct kvs_group *g = &a->groups[0];
    KVS_REQUIRE(g->has_match);
    KVS_CHECK(g->match.inferred);
    KVS_CHECK(g->match.per_layer);
    KVS_CHECK_EQ_INT(g->match.capacity_tokens, 16384);
    KVS_CHECK_EQ_INT(g->match.row_dim, 576);
    KVS_CHECK(strstr(g->match.label, "preallocated") != NULL);
    KVS_CHECK(a->model == NULL);
    const struct kvs_finding *f = kvs_test_finding(a, "kv_full_buffer_cast");
    KVS_REQUIRE(f);
    KVS_CHECK_NEAR(f->bytes_per_step, 16384.0 * 576 * 3 * 2, 1e-3);
    KVS_CHECK_NEAR(f->needed_bytes_per_step, 1024.0 * 576 * 3 * 2, 1e-3);
    KVS_CHECK_NEAR(f->gpu_ms_per_step, MS(40) * (1.0 - 1024.0 / 16384.0), 1e-12);
    KVS_CHECK(f->group == 0);
    KVS_CHECK(f->fix && strstr(f->fix, "Gather") && strstr(f->fix, "reads the Float8_e4m3fn"));
    const struct kvs_finding *idle = kvs_test_finding(a, "gpu_idle");
    KVS_REQUIRE(idle);
    KVS_CHECK_NEAR(idle->gpu_ms_per_step, 1.0 - MS(100), 1e-12); /* busy: kvs_test kineto_steps */
    KVS_CHECK_EQ_INT(idle->severity, KVS_SEV_HIGH);
    /* 13 activities launched in the steps: 2,2,10,10,10,10,20,20,20,20,20,30,30 us */
    KVS_CHECK_MSG(strstr(idle->evidence, "median 20.0 us") != NULL, "%s", idle->evidence);
    /* 28 MB per call is under the streaming threshold: no bandwidth finding */
    KVS_CHECK(kvs_test_finding(a, "low_bandwidth_efficiency") == NULL);
    for (size_t i = 1; i < a->nfinding; i++)
        KVS_CHECK(a->findings[i - 1].gpu_ms_per_step >= a->findings[i].gpu_ms_per_step);
    kvs_analysis_free(a);
}

static void test_model_and_capacity(void)
{
    struct kvs_analysis_options o;
    kvs_analysis_options_init(&o);
    o.model = "glm5";
    o.kv_capacity = 16384;
    o.batch = 4;
    struct kvs_analysis *a = analyze("kineto_small.json", &o, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_STR(a->model, "glm5");
    KVS_CHECK_EQ_INT(a->num_layers, 78);
    const struct kvs_group *g = &a->groups[0];
    KVS_REQUIRE(g->has_match);
    KVS_CHECK_EQ_STR(g->match.label, "KV capacity (tokens) x kv_lora_rank 512 + qk_rope_head_dim 64");
    KVS_CHECK(!g->match.inferred);
    KVS_CHECK(!g->match.per_layer); /* 2 calls per step, GLM-5 has 78 layers */
    KVS_CHECK_NEAR(a->steps.tokens_per_s, 4 * 1000.0 / 1.0, 1e-9);
    KVS_CHECK(kvs_test_finding(a, "kv_full_buffer_cast") != NULL);
    kvs_analysis_free(a);

    /* a capacity that is not the buffer's: a given capacity is the only one,
     * nothing is inferred; the rows still carry the model's meaning */
    o.kv_capacity = 999;
    a = analyze("kineto_small.json", &o, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK(a->groups[0].has_match && !strstr(a->groups[0].match.label, "preallocated") &&
              a->groups[0].match.capacity_tokens == 0);
    KVS_CHECK(kvs_test_finding(a, "kv_full_buffer_cast") == NULL);
    kvs_analysis_free(a);

    o.model = "no-such-model";
    a = analyze("kineto_small.json", &o, KVS_STATUS_NOT_FOUND);
    KVS_CHECK(a == NULL);
    KVS_CHECK(strstr(cap.last, "glm5") != NULL); /* the message lists the bundled names */
}

static void test_device_options(void)
{
    struct kvs_analysis_options o;
    kvs_analysis_options_init(&o);
    o.device = "b200";
    struct kvs_analysis *a = analyze("kineto_small.json", &o, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK_NEAR(a->trace.peak_gbps, 8000, TOL);
    KVS_CHECK_EQ_STR(a->trace.device, "NVIDIA B200");
    KVS_CHECK_NEAR(a->groups[0].efficiency, a->groups[0].achieved_gbps / 8000.0, 1e-12);
    kvs_analysis_free(a);
    kvs_analysis_options_init(&o);
    o.peak_gbps = 1000;
    a = analyze("kineto_small.json", &o, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK_NEAR(a->trace.peak_gbps, 1000, TOL);
    KVS_CHECK_EQ_STR(a->trace.peak_source, "--peak-gbps");
    kvs_analysis_free(a);
    kvs_analysis_options_init(&o);
    o.device = "Imaginary GPU 9000";
    a = analyze("kineto_small.json", &o, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK(a->trace.peak_gbps == 0 && a->groups[0].efficiency == 0);
    KVS_CHECK(strstr(cap.last, "not in the device table") != NULL);
    kvs_analysis_free(a);
}

static void test_step_regex(void)
{
    struct kvs_analysis_options o;
    kvs_analysis_options_init(&o);
    o.step_regex = "^layer_[0-9]+$";
    struct kvs_analysis *a = analyze("kineto_small.json", &o, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_INT(a->steps.count, 4);
    KVS_CHECK_NEAR(a->steps.mean_ms, 0.4, TOL);
    kvs_analysis_free(a);
    o.step_regex = "nothing matches this";
    a = analyze("kineto_small.json", &o, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_INT(a->steps.count, 0);
    KVS_CHECK(strstr(cap.all, "no step markers") != NULL);
    /* without steps the figures are totals */
    KVS_CHECK_NEAR(a->steps.total_gpu_ms, MS(206), TOL);
    KVS_CHECK_NEAR(a->groups[0].calls_per_step, 4, TOL);
    kvs_analysis_free(a);
    o.step_regex = "([unclosed";
    a = analyze("kineto_small.json", &o, KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(a == NULL);
}

/* Old schema: integer us, Operator/Kernel/Runtime, lower-case "external id"
 * 0 on kernels. The copy kernel links through its runtime call's id, the
 * GEMM through correlation -> runtime call -> enclosing aten::mm. */
static void test_old_schema_linking(void)
{
    struct kvs_analysis *a = analyze("old_schema.json", NULL, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_INT(a->trace.gpu_unlinked, 0);
    KVS_CHECK_EQ_INT(a->steps.count, 0);
    KVS_CHECK(a->trace.peak_gbps == 0); /* no device named */
    KVS_CHECK_EQ_INT(a->trace.rank, 3);
    KVS_CHECK_EQ_INT(a->trace.world_size, 8);
    KVS_REQUIRE(a->ngroup == 1);
    const struct kvs_group *g = &a->groups[0];
    KVS_CHECK_EQ_STR(dims_of(g), "[[8,128],[8,128]]");
    KVS_CHECK_EQ_STR(dtypes_of(g), "c10::Half,float");
    KVS_CHECK_EQ_INT(g->bytes_per_call, 8 * 128 * (2 + 4));
    KVS_CHECK_NEAR(g->achieved_gbps, 6144.0 / 4000.0, 1e-12);
    KVS_CHECK_NEAR(g->gpu_fraction, 4.0 / 14.0, 1e-12);
    KVS_CHECK_NEAR(a->category_ms[KVS_CAT_GEMM], MS(10), TOL); /* via the enclosing aten::mm */
    KVS_CHECK_NEAR(a->category_ms[KVS_CAT_COPY_CAST], MS(4), TOL);
    kvs_analysis_free(a);
}

/* JSON Array Format, B/E pairs: the "decode_step 7" range is a step; the
 * kernel links by correlation to a launch inside the B/E aten::copy_. */
static void test_array_begin_end(void)
{
    struct kvs_analysis *a = analyze("array_be.json", NULL, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_REQUIRE(a->nstep == 1);
    KVS_CHECK_EQ_INT(a->step[0].index, 7);
    KVS_CHECK_NEAR(a->step[0].wall_ms, 0.1, TOL);
    KVS_CHECK_NEAR(a->step[0].gpu_busy_ms, MS(8), TOL);
    KVS_CHECK_EQ_INT(a->trace.gpu_unlinked, 0);
    KVS_REQUIRE(a->ngroup == 1);
    KVS_CHECK_EQ_STR(dims_of(&a->groups[0]), "[[100,64],[100,64]]");
    KVS_CHECK_EQ_INT(a->groups[0].bytes_per_call, 100 * 64 * 2 * 2);
    KVS_CHECK_NEAR(a->groups[0].calls_per_step, 1, TOL);
    KVS_CHECK_EQ_STR(a->trace.producer, "pytorch-kineto");
    kvs_analysis_free(a);
}

/* Ops not in time order in the file (some writers group them by thread):
 * the correlation-only kernels still find their innermost enclosing op. */
static void test_link_ops_out_of_order(void)
{
    const char *doc =
        "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::copy_\", \"pid\": 1, \"tid\": 2, \"ts\": 50, \"dur\": 10,"
        " \"args\": {\"Input Dims\": [[4,4],[4,4]], \"Input type\": [\"float\", \"c10::Half\"]}},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::outer\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 100},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::copy_\", \"pid\": 1, \"tid\": 1, \"ts\": 20, \"dur\": 10,"
        " \"args\": {\"Input Dims\": [[8,8],[8,8]], \"Input type\": [\"float\", \"c10::Half\"]}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 25, \"dur\": 1, \"args\": {\"correlation\": 7}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 2, \"ts\": 55, \"dur\": 1, \"args\": {\"correlation\": 8}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 60, \"dur\": 1, \"args\": {\"correlation\": 9}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"copy_kernel_a\", \"pid\": 0, \"tid\": 7, \"ts\": 100, \"dur\": 2, \"args\": {\"correlation\": 7}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"copy_kernel_b\", \"pid\": 0, \"tid\": 7, \"ts\": 110, \"dur\": 4, \"args\": {\"correlation\": 8}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_kernel\", \"pid\": 0, \"tid\": 7, \"ts\": 120, \"dur\": 8, \"args\": {\"correlation\": 9}}\n"
        "]}\n";
    struct kvs_analysis *a = analyze_json(doc, strlen(doc), NULL);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_INT(a->trace.gpu_unlinked, 0);
    /* correlation 7 -> the call at 25 us on thread 1 -> aten::copy_ [8,8]
     * (inside aten::outer); 8 -> thread 2's copy_ [4,4]; 9 -> aten::outer */
    const struct kvs_group *g8 = find_group(a, "aten::copy_", "[[8,8],[8,8]]");
    const struct kvs_group *g4 = find_group(a, "aten::copy_", "[[4,4],[4,4]]");
    KVS_REQUIRE(g8 && g4);
    KVS_CHECK_NEAR(g8->gpu_ms, MS(2), TOL);
    KVS_CHECK_NEAR(g4->gpu_ms, MS(4), TOL);
    KVS_CHECK_EQ_INT(a->ngroup, 2); /* the GEMM under aten::outer is no copy */
    kvs_analysis_free(a);
}

/* GQA rows with a model: a Llama-3-70B-shaped full cast, 80 calls in one
 * step (once per layer), plain [tokens, 8, 128] and paged [blocks, 16, 8, 128]. */
static void test_gqa_match(void)
{
    static const char *shapes[2] = {"[[32768, 8, 128], [32768, 8, 128], []]",
                                    "[[2048, 16, 8, 128], [2048, 16, 8, 128], []]"};
    for (int v = 0; v < 2; v++) {
        size_t cap_bytes = 1 << 20, n = 0;
        char *doc = malloc(cap_bytes);
        n += (size_t)snprintf(doc + n, cap_bytes - n,
                              "{\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\"}],"
                              " \"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                              "\"ProfilerStep#1\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 10000}");
        for (int l = 0; l < 80; l++) {
            n += (size_t)snprintf(doc + n, cap_bytes - n,
                                  ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::copy_\", \"pid\": 1, "
                                  "\"tid\": 1, \"ts\": %d, \"dur\": 50, \"args\": {\"External id\": %d, \"Input Dims\": "
                                  "%s, \"Input type\": [\"c10::BFloat16\", \"c10::Float8_e4m3fn\", \"Scalar\"]}}"
                                  ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"direct_copy_kernel_cuda\", "
                                  "\"pid\": 0, \"tid\": 7, \"ts\": %d, \"dur\": 40, \"args\": {\"External id\": %d, "
                                  "\"device\": 0, \"stream\": 7}}",
                                  100 + l * 100, l + 1, shapes[v], 120 + l * 100, l + 1);
        }
        n += (size_t)snprintf(doc + n, cap_bytes - n, "\n]}\n");
        struct kvs_analysis_options o;
        kvs_analysis_options_init(&o);
        o.model = "llama-3-70b";
        o.kv_capacity = 32768;
        struct kvs_analysis *a = analyze_json(doc, n, &o);
        free(doc);
        KVS_REQUIRE(a && a->ngroup == 1);
        const struct kvs_group *g = &a->groups[0];
        KVS_CHECK_EQ_INT(g->calls, 80);
        KVS_CHECK_NEAR(a->trace.peak_gbps, 3350, 0);
        KVS_REQUIRE(g->has_match);
        KVS_CHECK_EQ_STR(g->match.label, "KV capacity (tokens) x num_key_value_heads 8 x head_dim 128");
        KVS_CHECK_EQ_INT(g->match.capacity_tokens, 32768);
        KVS_CHECK_EQ_INT(g->match.row_dim, 1024);
        KVS_CHECK(g->match.per_layer);
        KVS_CHECK(!g->match.inferred);
        KVS_CHECK_EQ_INT(g->bytes_per_call, 32768LL * 1024 * 3);
        /* the model names the rows, so the flat and the paged pool share a role */
        KVS_CHECK_EQ_STR(g->role, "cast BFloat16<-Float8_e4m3fn rows of num_key_value_heads 8 x head_dim 128");
        /* the active token count is unknown here: the finding says so and
         * counts the whole cast as recoverable */
        const struct kvs_finding *f = kvs_test_finding(a, "kv_full_buffer_cast");
        KVS_REQUIRE(f);
        KVS_CHECK(f->needed_bytes_per_step == 0);
        KVS_CHECK_NEAR(f->gpu_ms_per_step, 80 * MS(40), 1e-12);
        KVS_CHECK(strstr(f->message, "unknown") != NULL);
        kvs_analysis_free(a);
    }
}

/* One copy op whose two kernels run at once on two streams, then a GEMM:
 * the group's GPU time is the sum (200 us), its share of the GPU's busy time
 * (150 us) counts the overlap once (100 / 150), never above 1; the same for
 * the copy kernel's line in the kernel table. */
static void test_two_streams_fraction(void)
{
    static const char doc[] =
        "{\"traceEvents\": [\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":1,\"tid\":1,\"ts\":0,"
        "\"dur\":5,\"args\":{\"External id\":1,\"Input Dims\":[[1024,576],[1024,576]],"
        "\"Input type\":[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]}},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":6,"
        "\"dur\":5,\"args\":{\"External id\":2}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"direct_copy_kernel_cuda\",\"pid\":0,\"tid\":7,"
        "\"ts\":10,\"dur\":100,\"args\":{\"External id\":1,\"device\":0,\"stream\":7}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"direct_copy_kernel_cuda\",\"pid\":0,\"tid\":8,"
        "\"ts\":10,\"dur\":100,\"args\":{\"External id\":1,\"device\":0,\"stream\":8}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"nvjet_gemm\",\"pid\":0,\"tid\":7,"
        "\"ts\":110,\"dur\":50,\"args\":{\"External id\":2,\"device\":0,\"stream\":7}}\n"
        "]}\n";
    struct kvs_analysis *a = analyze_json(doc, sizeof doc - 1, NULL);
    KVS_REQUIRE(a && a->ngroup == 1 && a->nkernel == 2);
    KVS_CHECK_NEAR(a->steps.total_gpu_ms, MS(150), 1e-12);
    KVS_CHECK_NEAR(a->groups[0].gpu_ms, MS(200), 1e-12);
    KVS_CHECK_NEAR(a->groups[0].gpu_fraction, 100.0 / 150.0, 1e-12);
    KVS_CHECK_EQ_STR(a->kernels[0].name, "direct_copy_kernel_cuda");
    KVS_CHECK_NEAR(a->kernels[0].gpu_ms, MS(200), 1e-12);
    KVS_CHECK_NEAR(a->kernels[0].gpu_fraction, 100.0 / 150.0, 1e-12);
    KVS_CHECK_NEAR(a->kernels[1].gpu_fraction, 50.0 / 150.0, 1e-12);
    kvs_analysis_free(a);
}

/* HTA's trace_diff "test" trace (a V100, 900 GB/s HBM) pages int32 tables in
 * with one pinned HtoD copy a step at ~6 GB/s: the PCIe link bounds those,
 * not HBM, so they must get no efficiency against the HBM peak and no
 * low_bandwidth_efficiency finding (whose fix is a faster copy kernel),
 * while the device-side copies of the same trace keep theirs. */
static bool names_host_copy(const char *kernel)
{
    return kernel && (strstr(kernel, "HtoD") || strstr(kernel, "DtoH"));
}

static void test_host_copies_not_judged_by_hbm(void)
{
    char path[1024];
    if (!kvs_test_shared_path(path, sizeof path, "traces/hta/trace_diff__test__test.json.gz"))
        KVS_TEST_SKIP("no ../shared/traces/hta");
    struct kvs_analysis *a = analyze_at(path, NULL, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    KVS_CHECK(a->trace.peak_gbps > 0);
    int host = 0, device = 0;
    for (size_t i = 0; i < a->ngroup; i++) {
        const struct kvs_group *g = &a->groups[i];
        if (names_host_copy(g->kernel)) {
            host++;
            KVS_CHECK_MSG(g->host_link && g->efficiency == 0, "%s %s (%s): efficiency %g against HBM",
                          g->op, dims_of(g), g->kernel, g->efficiency);
            KVS_CHECK(g->achieved_gbps > 0); /* the rate itself is still reported */
        } else if (g->kernel && strstr(g->kernel, "DtoD") && g->bytes_per_call > 0) {
            device++;
            KVS_CHECK_MSG(!g->host_link && g->efficiency > 0, "%s (%s)", g->op, g->kernel);
        }
    }
    KVS_CHECK_MSG(host >= 5, "%d groups led by a host copy", host);
    KVS_CHECK_MSG(device >= 1, "%d groups led by a device copy", device);
    for (size_t i = 0; i < a->nfinding; i++) {
        const struct kvs_finding *f = &a->findings[i];
        if (strcmp(f->id, "low_bandwidth_efficiency") || f->group < 0)
            continue;
        KVS_CHECK_MSG(!names_host_copy(a->groups[f->group].kernel), "%s on %s", f->id,
                      a->groups[f->group].kernel);
    }
    kvs_analysis_free(a);
}

/* gpu_idle names launch overhead only where launches are dense: the MLA
 * decode (7,260 activities in a 215 ms step, 30 us each) gets CUDA graphs;
 * HTA's triton_example (one 1.8 us kernel in a 13.3 s step) gets the CPU
 * work between launches, not a graph that would save nothing */
static const struct kvs_finding *finding(const struct kvs_analysis *a, const char *id)
{
    for (size_t i = 0; i < a->nfinding; i++)
        if (!strcmp(a->findings[i].id, id))
            return &a->findings[i];
    return NULL;
}

static void test_gpu_idle_sparse_launches(void)
{
    static const struct {
        const char *trace;
        bool dense;
    } cases[] = {
        {"traces/mla61_cap131072_unfixed.pt.trace.json.gz", true},
        {"traces/hta/triton_example__triton_example.json.gz", false},
        {"traces/hta/critical_path__cuda_event_sync__event_sync_trace.json.gz", false},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[1024];
        if (!kvs_test_shared_path(path, sizeof path, cases[k].trace))
            KVS_TEST_SKIP("no ../shared/%s", cases[k].trace);
        struct kvs_analysis *a = analyze_at(path, NULL, KVS_STATUS_OK);
        KVS_REQUIRE(a);
        const struct kvs_finding *f = finding(a, "gpu_idle");
        KVS_CHECK_MSG(f != NULL, "%s: no gpu_idle", cases[k].trace);
        if (f) {
            bool graph_first = !strncmp(f->fix, "Cut launch overhead", 19);
            KVS_CHECK_MSG(graph_first == cases[k].dense, "%s: %s / %s", cases[k].trace, f->message,
                          f->fix);
            KVS_CHECK_MSG(!strstr(f->message, "not on kernel launches") == cases[k].dense, "%s: %s",
                          cases[k].trace, f->message);
        }
        kvs_analysis_free(a);
    }
}

/* A trace with CUDA launches and no GPU side (HTA's cupti_profiler trace:
 * 1,862 runtime calls, no kernel records) is a profiler set-up slip: a
 * warning that says how to record the GPU side, not "a CPU-only trace" at
 * INFO that --quiet hides; a real CPU-only trace keeps its quiet note. */
static void test_launches_without_gpu_side(void)
{
    static const struct {
        const char *trace;
        bool launches;
    } cases[] = {
        {"traces/hta/cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz", true},
        {"traces/hta/rank_non_gpu__rank_non_gpu.json.gz", false},
        /* MTIA device events (mtia_ccp_events), no CUDA launches: not called CPU-only alone */
        {"traces/hta/mtia_trace_single_rank__mtia_rank_0.json.gz", false},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[1024];
        if (!kvs_test_shared_path(path, sizeof path, cases[k].trace))
            KVS_TEST_SKIP("no ../shared/%s", cases[k].trace);
        struct kvs_analysis *a = analyze_at(path, NULL, KVS_STATUS_OK);
        KVS_REQUIRE(a);
        KVS_CHECK_EQ_INT(a->trace.kernels + a->trace.memcpys + a->trace.memsets, 0);
        bool said = strstr(cap.all, "ProfilerActivity.CUDA") != NULL;
        KVS_CHECK_MSG(said == cases[k].launches, "%s: %s", cases[k].trace, cap.all);
        if (cases[k].launches)
            KVS_CHECK_MSG(strstr(cap.last, "1862 CUDA/HIP runtime calls"), "%s", cap.last);
        else
            KVS_CHECK_MSG(strstr(cap.all, "a CPU-only trace, or another accelerator's (MTIA)") &&
                              cap.warnings == 0,
                          "%s", cap.all);
        kvs_analysis_free(a);
    }
}

/* A training trace (HTA's negative_queue_length: autograd's backward pass,
 * float batches [4096, 2798] copied every step) has no KV cache: no buffer
 * is inferred from shapes and no kv_full_buffer_cast or _read named; a
 * capacity the user gives is still taken at its word (the float copy keeps
 * its dtype: kv_full_buffer_read). */
static void test_training_has_no_kv_buffer(void)
{
    char path[1024];
    if (!kvs_test_shared_path(path, sizeof path,
                              "traces/hta/negative_queue_length_values_check__rank0.json.gz"))
        KVS_TEST_SKIP("no ../shared/traces/hta");
    for (int given = 0; given < 2; given++) {
        struct kvs_analysis_options opt;
        kvs_analysis_options_init(&opt);
        opt.kv_capacity = given ? 4096 : 0;
        struct kvs_analysis *a = analyze_at(path, &opt, KVS_STATUS_OK);
        KVS_REQUIRE(a);
        int buffers = 0, batch_copies = 0;
        for (size_t i = 0; i < a->ngroup; i++) {
            const struct kvs_group *g = &a->groups[i];
            if (g->ntensors > 0 && g->tensor_dims[0].rank == 2 && g->tensor_dims[0].d[0] == 4096 &&
                g->tensor_dims[0].d[1] == 2798)
                batch_copies++;
            buffers += g->has_match && g->match.capacity_tokens > 0;
        }
        KVS_CHECK_MSG(batch_copies >= 1, "no [4096,2798] group");
        if (given) {
            /* the batch keeps its dtype: a full-buffer read, not a cast */
            KVS_CHECK(buffers > 0 && finding(a, "kv_full_buffer_read") != NULL);
            KVS_CHECK(finding(a, "kv_full_buffer_cast") == NULL);
        } else {
            KVS_CHECK_MSG(buffers == 0, "%d groups inferred to be a KV buffer", buffers);
            KVS_CHECK(finding(a, "kv_full_buffer_cast") == NULL);
            KVS_CHECK(finding(a, "kv_full_buffer_read") == NULL);
        }
        kvs_analysis_free(a);
    }
}

/* An aten::copy_ group whose calls ran a DtoD memcpy (18 of them, with
 * `bytes`) or a copy kernel (6, without): every call moves its dims' bytes,
 * 1024 x 58272 floats read and written; the memcpy bytes spread over all 24
 * calls said 358.0 MB a call and 581 GB/s. */
static void test_mixed_memcpy_and_kernel_calls(void)
{
    char path[1024];
    if (!kvs_test_shared_path(path, sizeof path, "traces/hta/trace_diff__test__test.json.gz"))
        KVS_TEST_SKIP("no ../shared/traces/hta");
    struct kvs_analysis *a = analyze_at(path, NULL, KVS_STATUS_OK);
    KVS_REQUIRE(a);
    const struct kvs_group *g = find_group(a, "aten::copy_", "[[1024,58272],[1024,58272]]");
    KVS_REQUIRE(g != NULL);
    KVS_CHECK_EQ_INT(g->calls, 24);
    KVS_CHECK_EQ_INT(g->bytes_per_call, 1024LL * 58272 * (4 + 4));
    KVS_CHECK_NEAR(g->achieved_gbps, (double)g->bytes_per_call * 24 / (g->gpu_ms * 1e6), 1e-6);
    /* the torch.compile region (CompiledFunction, 16 inputs) whose copy
     * kernels take most of its copy time beside a few memsets: the memset
     * bytes do not describe it (they said 12.0 kB a call, 0.01 GB/s), and
     * neither do the region's dims: unknown */
    int regions = 0;
    for (size_t i = 0; i < a->ngroup; i++) {
        const struct kvs_group *r = &a->groups[i];
        if (strcmp(r->op, "CompiledFunction") || r->ntensors != 16)
            continue;
        regions++;
        KVS_CHECK_MSG(r->bytes_per_call == 0 && r->achieved_gbps == 0, "%lld bytes, %g GB/s",
                      (long long)r->bytes_per_call, r->achieved_gbps);
    }
    KVS_CHECK_EQ_INT(regions, 1);
    kvs_analysis_free(a);
}

/* One process driving two GPUs (a model split with device_map="auto"): busy
 * time is summed over the devices, so the busy fraction is of 2 x the step
 * (it read "180% of the step"), and gpu_idle counts both devices' idle time
 * (at 30% each it said nothing: 60% "of the step"). */
static struct kvs_analysis *two_devices(int kernel_us)
{
    char json[2048];
    int n = snprintf(json, sizeof json,
                     "{\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"},"
                     "{\"id\":1,\"name\":\"NVIDIA H200\"}],\"traceEvents\":[");
    for (int s = 0; s < 2; s++) {
        n += snprintf(json + n, sizeof json - (size_t)n,
                      "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\","
                      "\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":1000}",
                      s ? "," : "", s + 1, s * 1000);
        for (int d = 0; d < 2; d++)
            n += snprintf(json + n, sizeof json - (size_t)n,
                          ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k%d\",\"pid\":%d,"
                          "\"tid\":7,\"ts\":%d,\"dur\":%d,\"args\":{\"device\":%d,\"stream\":7}}",
                          d, d, s * 1000 + 10, kernel_us, d);
    }
    n += snprintf(json + n, sizeof json - (size_t)n, "]}");
    return analyze_json(json, (size_t)n, NULL);
}

static void test_busy_over_several_devices(void)
{
    struct kvs_analysis *a = two_devices(900);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_INT(a->trace.gpu_devices, 2);
    KVS_CHECK_NEAR(a->steps.gpu_ms_per_step, 1.8, 1e-9); /* device-ms: both GPUs' busy time */
    KVS_CHECK_NEAR(a->steps.gpu_busy_fraction, 0.9, 1e-9);
    KVS_REQUIRE(a->nstep == 2);
    KVS_CHECK_NEAR(a->step[0].busy_fraction, 0.9, 1e-9);
    KVS_CHECK(finding(a, "gpu_idle") == NULL);
    kvs_analysis_free(a);

    a = two_devices(300);
    KVS_REQUIRE(a);
    KVS_CHECK_NEAR(a->steps.gpu_busy_fraction, 0.3, 1e-9);
    const struct kvs_finding *f = finding(a, "gpu_idle");
    KVS_CHECK(f != NULL);
    if (f) {
        /* per GPU: both devices' idle time over the two of them, never over the step */
        KVS_CHECK_NEAR(f->gpu_ms_per_step, (2 * 1.0 - 0.6) / 2, 1e-9);
        KVS_CHECK_EQ_INT(f->gpus, 2);
        KVS_CHECK_MSG(strstr(f->message, "The 2 GPUs are busy 30%") &&
                          strstr(f->message, "per GPU: 0.70 ms a step (2 GPUs share it)"),
                      "%s", f->message);
    }
    kvs_analysis_free(a);
}

/* Kernels a cudaGraphLaunch replays (vLLM, SGLang, torch.compile's
 * reduce-overhead decode) carry the launch's correlation id; their ops ran
 * at capture, so no shapes describe them: counted, and said, rather than a
 * report that silently finds no KV cast in a graphed decode. */
static void test_graph_launched_kernels(void)
{
    static const char json[] =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"CUDAGraph::replay\",\"pid\":1,\"tid\":1,"
        "\"ts\":100,\"dur\":50,\"args\":{\"External id\":9}},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaGraphLaunch\",\"pid\":1,\"tid\":1,"
        "\"ts\":110,\"dur\":10,\"args\":{\"correlation\":5,\"External id\":9}},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
        "\"ts\":130,\"dur\":5,\"args\":{\"correlation\":6}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"direct_copy_kernel\",\"pid\":0,\"tid\":7,"
        "\"ts\":200,\"dur\":10,\"args\":{\"correlation\":5,\"device\":0,\"stream\":7}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemv\",\"pid\":0,\"tid\":7,"
        "\"ts\":210,\"dur\":10,\"args\":{\"correlation\":5,\"device\":0,\"stream\":7}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"softmax\",\"pid\":0,\"tid\":7,"
        "\"ts\":220,\"dur\":10,\"args\":{\"correlation\":5,\"device\":0,\"stream\":7}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"eager\",\"pid\":0,\"tid\":7,"
        "\"ts\":240,\"dur\":10,\"args\":{\"correlation\":6,\"device\":0,\"stream\":7}}]}";
    struct kvs_analysis *a = analyze_json(json, sizeof json - 1, NULL);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_INT(a->trace.kernels, 4);
    KVS_CHECK_EQ_INT(a->trace.graph_launched, 3);
    KVS_CHECK_MSG(strstr(cap.all, "3 of 4 GPU activities were launched from CUDA graphs"), "%s",
                  cap.all);
    kvs_analysis_free(a);
}

/* GPU work in the trace, none inside the steps: gpu_idle says so, not "it
 * idles 0 us per launch, far more than a launch costs" */
static void test_gpu_idle_no_work_in_steps(void)
{
    static const char json[] =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,"
        "\"tid\":1,\"ts\":0,\"dur\":1000},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":5000,"
        "\"dur\":100,\"args\":{\"device\":0,\"stream\":7}}]}";
    struct kvs_analysis *a = analyze_json(json, sizeof json - 1, NULL);
    KVS_REQUIRE(a);
    const struct kvs_finding *f = finding(a, "gpu_idle");
    KVS_REQUIRE(f != NULL);
    KVS_CHECK_MSG(strstr(f->message, "no GPU activity falls inside the steps") &&
                      !strstr(f->message, "us per launch"),
                  "%s", f->message);
    KVS_CHECK_MSG(!strstr(f->evidence, "one launch per 0.0"), "%s", f->evidence);
    kvs_analysis_free(a);
}

// ----------------------------------------------------------------------------
// kvscope.engine: the engine's facts and the whole-step roofline

/* a two-step trace (1000 us steps on an H200) with `engine` as its
 * top-level "kvscope.engine" member (none when NULL) */
static struct kvs_analysis *engine_trace(const char *engine)
{
    static char json[16384];
    int n = snprintf(json, sizeof json, "{%s%s%s\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"}],"
                     "\"traceEvents\":[", engine ? "\"kvscope.engine\":" : "", engine ? engine : "",
                     engine ? "," : "");
    for (int s = 0; s < 2; s++)
        n += snprintf(json + n, sizeof json - (size_t)n,
                      "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\","
                      "\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":1000},"
                      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,"
                      "\"tid\":7,\"ts\":%d,\"dur\":500,\"args\":{\"device\":0,\"stream\":7}}",
                      s ? "," : "", s + 1, s * 1000, s * 1000 + 10);
    n += snprintf(json + n, sizeof json - (size_t)n, "]}");
    return analyze_json(json, (size_t)n, NULL);
}

static void test_engine_meta_and_roofline(void)
{
    /* 2.4 GB per 1 ms step = 2400 GB/s: half the H200's 4800, 60% of a 4000 GB/s copy */
    struct kvs_analysis *a = engine_trace(
        "{\"schema\":\"kvscope.engine/1\",\"config\":\"glm5\",\"kv_path\":\"full-cast\",\"batch\":1,"
        "\"context\":4096,\"kv_capacity\":495552,\"layers\":78,\"tp\":1,\"graph\":false,\"steps\":2,"
        "\"bytes_per_step\":2400000000,\"weight_bytes_per_step\":2000000000,"
        "\"kv_bytes_per_step\":400000000,\"copy_gbps\":4000.0,\"step_ms\":0.98,"
        "\"future_key\":{\"ignored\":[1,2]}}");
    KVS_REQUIRE(a);
    const struct kvs_engine_info *e = &a->engine;
    KVS_CHECK(e->present);
    KVS_CHECK_EQ_STR(e->config, "glm5");
    KVS_CHECK_EQ_STR(e->kv_path, "full-cast");
    KVS_CHECK_EQ_INT(e->batch, 1);
    KVS_CHECK_EQ_INT(e->context, 4096);
    KVS_CHECK_EQ_INT(e->kv_capacity, 495552);
    KVS_CHECK_EQ_INT(e->layers, 78);
    KVS_CHECK_EQ_INT(e->tp, 1);
    KVS_CHECK_EQ_INT(e->graph, 0);
    KVS_CHECK_EQ_INT(e->steps, 2);
    KVS_CHECK(e->bytes_per_step == 2.4e9 && e->weight_bytes_per_step == 2e9 && e->kv_bytes_per_step == 4e8);
    KVS_CHECK(e->copy_gbps == 4000 && e->step_ms == 0.98);
    const struct kvs_step_roofline *r = &a->roofline;
    KVS_REQUIRE(r->known);
    KVS_CHECK_EQ_STR(r->step_source, "trace");
    KVS_CHECK_NEAR(r->step_ms, 1.0, 1e-9);
    KVS_CHECK_NEAR(r->achieved_gbps, 2400, 1e-6);
    KVS_CHECK_NEAR(r->peak_fraction, 0.5, 1e-12);
    KVS_CHECK_NEAR(r->copy_gbps, 4000, 0);
    KVS_CHECK_NEAR(r->copy_fraction, 0.6, 1e-12);
    kvs_analysis_free(a);

    /* copy_gbps null (not measured): the device table's measured rate, if any;
     * a member of the wrong type or out of range is unknown */
    a = engine_trace("{\"schema\":\"kvscope.engine/1\",\"config\":7,\"batch\":-1,\"context\":1.5,"
                     "\"graph\":\"yes\",\"bytes_per_step\":2400000000,\"copy_gbps\":null}");
    KVS_REQUIRE(a);
    KVS_CHECK(a->engine.present);
    KVS_CHECK(a->engine.config == NULL && a->engine.kv_path == NULL);
    KVS_CHECK_EQ_INT(a->engine.batch, 0);
    KVS_CHECK_EQ_INT(a->engine.context, 0);
    KVS_CHECK_EQ_INT(a->engine.graph, -1);
    KVS_CHECK(a->engine.copy_gbps == 0);
    KVS_CHECK(a->roofline.known);
    KVS_CHECK_NEAR(a->roofline.copy_gbps, a->trace.copy_gbps, 0); /* H200: the table's 4257 */
    KVS_CHECK(a->trace.copy_gbps > 0 && isfinite(a->roofline.copy_fraction));
    kvs_analysis_free(a);

    /* no bytes per step: the engine's facts, but no roofline */
    a = engine_trace("{\"schema\":\"kvscope.engine/1\",\"kv_path\":\"fp8-direct\"}");
    KVS_REQUIRE(a);
    KVS_CHECK(a->engine.present && !a->roofline.known);
    kvs_analysis_free(a);

    /* no object: nothing */
    a = engine_trace(NULL);
    KVS_REQUIRE(a);
    KVS_CHECK(!a->engine.present && !a->roofline.known);
    kvs_analysis_free(a);
}

static void test_engine_meta_refused(void)
{
    /* another schema, or not an object: ignored, with a warning */
    const char *bad[] = {"{\"schema\":\"kvscope.engine/2\",\"bytes_per_step\":1e9}",
                         "{\"bytes_per_step\":1e9}", "[1,2,3]", "\"glm5\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct kvs_analysis *a = engine_trace(bad[i]); /* cap: this analysis's log */
        KVS_REQUIRE(a);
        KVS_CHECK_MSG(!a->engine.present && !a->roofline.known, "%s read", bad[i]);
        KVS_CHECK_MSG(cap.warnings > 0 && strstr(cap.last, "kvscope.engine"), "%s: no warning", bad[i]);
        kvs_analysis_free(a);
    }
    /* far larger than the engine writes (a few hundred bytes): not parsed */
    static char big[8192];
    int n = snprintf(big, sizeof big, "{\"schema\":\"kvscope.engine/1\",\"bytes_per_step\":1e9,\"pad\":\"");
    memset(big + n, 'x', 5000);
    snprintf(big + n + 5000, sizeof big - (size_t)n - 5000, "\"}");
    struct kvs_analysis *a = engine_trace(big);
    KVS_REQUIRE(a);
    KVS_CHECK(!a->engine.present);
    KVS_CHECK(cap.warnings > 0 && strstr(cap.last, "\"kvscope.engine\" is over 4 KiB"));
    kvs_analysis_free(a);
}

static void test_category_names(void)
{
    for (int c = 0; c < KVS_CAT_COUNT_; c++) {
        const char *n = kvs_category_name((enum kvs_category)c);
        KVS_CHECK(n && *n && strcmp(n, "unknown"));
    }
    KVS_CHECK_EQ_STR(kvs_category_name(KVS_CAT_COPY_CAST), "copy/cast");
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"kineto_trace_info", test_kineto_trace_info},
        {"kineto_steps", test_kineto_steps},
        {"kineto_groups", test_kineto_groups},
        {"kineto_kernels", test_kineto_kernels},
        {"kineto_inferred_match_and_findings", test_kineto_inferred_match_and_findings},
        {"model_and_capacity", test_model_and_capacity},
        {"device_options", test_device_options},
        {"step_regex", test_step_regex},
        {"old_schema_linking", test_old_schema_linking},
        {"array_begin_end", test_array_begin_end},
        {"link_ops_out_of_order", test_link_ops_out_of_order},
        {"gqa_match", test_gqa_match},
        {"two_streams_fraction", test_two_streams_fraction},
        {"category_names", test_category_names},
        {"host_copies_not_judged_by_hbm", test_host_copies_not_judged_by_hbm},
        {"gpu_idle_sparse_launches", test_gpu_idle_sparse_launches},
        {"launches_without_gpu_side", test_launches_without_gpu_side},
        {"training_has_no_kv_buffer", test_training_has_no_kv_buffer},
        {"mixed_memcpy_and_kernel_calls", test_mixed_memcpy_and_kernel_calls},
        {"busy_over_several_devices", test_busy_over_several_devices},
        {"graph_launched_kernels", test_graph_launched_kernels},
        {"gpu_idle_no_work_in_steps", test_gpu_idle_no_work_in_steps},
        {"engine_meta_and_roofline", test_engine_meta_and_roofline},
        {"engine_meta_refused", test_engine_meta_refused},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
