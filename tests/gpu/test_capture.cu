/* tests/gpu/test_capture.cu — the capture linked into a program (kvscope/trace.h)
 * on a real GPU: N kernels of known durations on 2 streams, a memcpy and a
 * memset, inside NVTX ranges (kvs_range_* and raw nvtxRangePushA/StartA) and
 * annotated ops (kvs_op_begin). The written trace (checked by Python's json,
 * tests/check_trace.py) must hold all of them; kernel durations must agree
 * with CUDA-event timings within 5%; every kernel inside an op carries the
 * op's External id; a tiny pool drops and counts; a second CUPTI subscriber
 * makes kvs_trace_create fail clearly; a CUDA graph captured before the
 * window and replayed inside it gives its kernels the ops and ranges they
 * were captured under. Exits 77 without a GPU.
 *   meson test -C build --suite gpu test_capture
 */
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>
#include <zlib.h>

#include <vector>

#include "kvs_test_gpu.h"
#include "kvscope/annotate.h"
#include "kvscope/trace.h"
#include "trace_check.h"

// ----------------------------------------------------------------------------
// kernels

/* Busy for `ns` nanoseconds of the GPU's global timer; writes so it is not dead code. */
__global__ void spin(long long ns, int *out)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while ((long long)(t - t0) < ns);
    if (threadIdx.x == 0)
        out[blockIdx.x] = (int)(t - t0 > 0);
}

__global__ void tiny(int *p) { p[0] += 1; }

static const char *tmp_trace(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "/tmp/kvs_gpu_%s_%d.json.gz", tag, (int)getpid());
    return buf;
}

static const cJSON *find_named(const cJSON *arr, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name))
            return e;
    }
    return NULL;
}

static int count_named(const cJSON *arr, const char *name)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        n += cJSON_IsString(nm) && !strcmp(nm->valuestring, name);
    }
    return n;
}

// ----------------------------------------------------------------------------
// a second CUPTI client must make kvs_trace_create fail, with a message

#define NK 12 /* spin kernels in the workload; every third inside an op */

static void CUPTIAPI other_cb(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {}

static void test_second_subscriber_refused(void)
{
    CUpti_SubscriberHandle other;
    KVS_REQUIRE(cuptiSubscribe(&other, other_cb, NULL) == CUPTI_SUCCESS);
    struct kvs_trace_config cfg;
    kvs_trace_config_init(&cfg);
    struct kvs_trace *t = NULL;
    enum kvs_status st = kvs_trace_create(&cfg, &t);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_CUPTI);
    KVS_CHECK(t == NULL);
    cuptiUnsubscribe(other);
}

// ----------------------------------------------------------------------------
// `kvscope report` on the capture finds each annotated op's shapes

/* `kvscope report --format json` of a trace (KVS_KVSCOPE), parsed; NULL
 * (with a note) when the binary is not given. */
static cJSON *report_doc(const char *trace)
{
    const char *kvs = getenv("KVS_KVSCOPE");
    if (!kvs || access(kvs, X_OK) != 0) {
        fprintf(stderr, "note: KVS_KVSCOPE not set: kvscope report not run\n");
        return NULL;
    }
    char out[160], cmd[1024];
    snprintf(out, sizeof out, "%s.report.json", trace);
    snprintf(cmd, sizeof cmd, "'%s' report --quiet --format json -o '%s' '%s'", kvs, out, trace);
    int rc = system(cmd);
    KVS_CHECK_MSG(rc == 0, "%s: exit %d", cmd, rc);
    FILE *f = fopen(out, "rb");
    if (!f)
        return NULL;
    std::vector<char> text(1 << 22);
    size_t n = fread(text.data(), 1, text.size() - 1, f);
    fclose(f);
    unlink(out);
    text[n] = '\0';
    cJSON *doc = cJSON_Parse(text.data());
    KVS_CHECK_MSG(doc != NULL, "the report of %s is not JSON", trace);
    return doc;
}

static void check_report(const char *trace)
{
    cJSON *doc = report_doc(trace);
    if (!doc)
        return;
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "trace"), "device");
    KVS_CHECK_MSG(cJSON_IsString(dev), "the report names no device");
    int groups = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(doc, "groups"))
    {
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(g, "op");
        if (!cJSON_IsString(op) || strcmp(op->valuestring, "kvs::kv_cast"))
            continue;
        const cJSON *dims = cJSON_GetObjectItemCaseSensitive(g, "dims");
        int d0 = cJSON_GetArrayItem(cJSON_GetArrayItem(dims, 0), 0)->valueint;
        char want[96];
        snprintf(want, sizeof want, "[[%d,1024],[%d,1024]]", d0, d0);
        char *got = cJSON_PrintUnformatted(dims);
        KVS_CHECK_EQ_STR(got, want);
        free(got);
        KVS_CHECK_EQ_INT((d0 - 1) % 3, 0);
        KVS_CHECK_EQ_INT(kvs_summary_int(g, "calls", -1), 1);
        KVS_CHECK_EQ_INT(kvs_summary_int(g, "bytes_per_call", -1), (long long)d0 * 1024 * 3);
        groups++;
    }
    KVS_CHECK_EQ_INT(groups, (NK + 2) / 3);
    cJSON_Delete(doc);
}

// ----------------------------------------------------------------------------
// the main workload

static void test_capture_workload(void)
{
    struct kvs_trace_config cfg;
    kvs_trace_config_init(&cfg);
    cfg.rank = 0, cfg.world_size = 1;
    struct kvs_trace *t = NULL;
    KVS_REQUIRE(kvs_trace_create(&cfg, &t) == KVS_STATUS_OK);
    struct kvs_trace *t2 = NULL;
    struct kvs_logger quiet = {NULL, NULL, KVS_LOG_ERROR};
    struct kvs_trace_config cfg2 = cfg;
    cfg2.logger = quiet;
    KVS_CHECK(kvs_trace_create(&cfg2, &t2) != KVS_STATUS_OK); /* one capture per process */
    KVS_CHECK(t2 == NULL);

    cudaStream_t s[2];
    KVS_TEST_CUDA(cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking));
    KVS_TEST_CUDA(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
    int *out = nullptr;
    KVS_TEST_CUDA(cudaMalloc(&out, 1024 * sizeof(int)));
    const size_t copy_bytes = 64u << 20, set_bytes = 32u << 20;
    char *a = nullptr, *b = nullptr;
    KVS_TEST_CUDA(cudaMalloc(&a, copy_bytes));
    KVS_TEST_CUDA(cudaMalloc(&b, copy_bytes));
    cudaEvent_t e0[NK], e1[NK];
    for (int i = 0; i < NK; i++) {
        KVS_TEST_CUDA(cudaEventCreate(&e0[i]));
        KVS_TEST_CUDA(cudaEventCreate(&e1[i]));
    }
    spin<<<1, 32, 0, s[0]>>>(10000, out); /* warm-up: module load, first launch */
    KVS_TEST_CUDA(cudaDeviceSynchronize());

    KVS_REQUIRE(kvs_trace_start(t) == KVS_STATUS_OK);
    /* a gate on each stream holds the work below until all of it is queued,
     * so the events time the kernels, not the host's launch gaps */
    spin<<<1, 32, 0, s[0]>>>(3000000, out + 512);
    spin<<<1, 32, 0, s[1]>>>(3000000, out + 576);
    kvs_range_begin("step_0");
    nvtxRangePushA("nvtx_outer");
    for (int i = 0; i < NK; i++) {
        cudaStream_t st = s[i % 2];
        int is_op = i % 3 == 0;
        struct kvs_tensor_desc d[2] = {{2, {i + 1, 1024}, "c10::BFloat16"},
                                       {2, {i + 1, 1024}, "c10::Float8_e4m3fn"}};
        if (is_op)
            kvs_op_begin("kvs::kv_cast", 2, d);
        KVS_TEST_CUDA(cudaEventRecord(e0[i], st));
        spin<<<i + 1, 64, 0, st>>>(200000 + 50000LL * i, out + 64 * (i % 2));
        KVS_TEST_CUDA(cudaEventRecord(e1[i], st));
        if (is_op)
            kvs_op_end();
    }
    nvtxRangePop();
    KVS_TEST_CUDA(cudaMemcpyAsync(b, a, copy_bytes, cudaMemcpyDeviceToDevice, s[0]));
    KVS_TEST_CUDA(cudaMemsetAsync(a, 0, set_bytes, s[1]));
    kvs_range_end();
    nvtxRangeId_t id = nvtxRangeStartA("startend");
    tiny<<<1, 1, 0, s[0]>>>(out);
    nvtxRangeEnd(id);
    KVS_TEST_CUDA(cudaDeviceSynchronize());
    KVS_REQUIRE(kvs_trace_stop(t) == KVS_STATUS_OK);

    char path[128];
    tmp_trace(path, sizeof path, "linked");
    /* a caller's top-level object (the engine's "kvscope.engine"): checked
     * when set (the two refusals log), replaced by key, written into the file */
    KVS_CHECK(kvs_trace_set_extra(t, "test.extra", "{\"v\": 1") == KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(kvs_trace_set_extra(t, "kvscope", "{}") == KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(kvs_trace_set_extra(t, "test.extra", "{\"v\": 1}") == KVS_STATUS_OK);
    KVS_CHECK(kvs_trace_set_extra(t, "test.extra", "{\"v\": 2}") == KVS_STATUS_OK);
    KVS_CHECK(kvs_trace_set_extra(t, "test.gone", "{}") == KVS_STATUS_OK);
    KVS_CHECK(kvs_trace_set_extra(t, "test.gone", NULL) == KVS_STATUS_OK);
    KVS_REQUIRE(kvs_trace_write(t, path) == KVS_STATUS_OK);
    {
        gzFile z = gzopen(path, "rb");
        KVS_REQUIRE(z);
        std::vector<char> text(1 << 16); /* the top-level keys come before the events */
        int n = gzread(z, text.data(), (unsigned)text.size() - 1);
        gzclose(z);
        KVS_REQUIRE(n > 0);
        text[(size_t)n] = '\0';
        KVS_CHECK(strstr(text.data(), "\"test.extra\": {\"v\": 2},") != NULL);
        KVS_CHECK(strstr(text.data(), "test.gone") == NULL);
    }
    struct kvs_trace_stats stats;
    kvs_trace_get_stats(t, &stats);
    kvs_trace_free(t);

    float ev_ms[NK];
    for (int i = 0; i < NK; i++)
        KVS_TEST_CUDA(cudaEventElapsedTime(&ev_ms[i], e0[i], e1[i]));

    check_report(path);
    cJSON *sum;
    kvs_check_trace_valid(path, &sum);
    if (getenv("KVS_KEEP_TRACE"))
        fprintf(stderr, "trace kept: %s\n", path);
    else
        unlink(path);
    if (!sum)
        return;
    KVS_CHECK_EQ_INT(stats.dropped_records, 0);
    KVS_CHECK_EQ_INT(stats.buffer_requests_denied, 0);

    /* every spin kernel, identified by its grid, timed like the events say */
    const cJSON *kernels = kvs_summary_array(sum, "kernels");
    KVS_REQUIRE(kernels);
    std::vector<long long> ext_of(NK, -1);
    int found = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, kernels)
    {
        const cJSON *grid = cJSON_GetObjectItemCaseSensitive(k, "grid");
        const cJSON *block = cJSON_GetObjectItemCaseSensitive(k, "block");
        const char *name = cJSON_GetObjectItemCaseSensitive(k, "name")->valuestring;
        if (!strstr(name, "spin") || !cJSON_IsArray(block) ||
            cJSON_GetArrayItem(block, 0)->valueint != 64)
            continue;
        int i = cJSON_GetArrayItem(grid, 0)->valueint - 1;
        KVS_REQUIRE(i >= 0 && i < NK);
        found++;
        double dur_ms = kvs_summary_int(k, "dur_ns", 0) / 1e6;
        KVS_CHECK_MSG(fabs(dur_ms - ev_ms[i]) <= 0.05 * ev_ms[i],
                      "kernel %d: trace %.4f ms, CUDA events %.4f ms", i, dur_ms, ev_ms[i]);
        KVS_CHECK_MSG(dur_ms >= (200000 + 50000.0 * i) / 1e6 * 0.999,
                      "kernel %d shorter (%.4f ms) than it spins", i, dur_ms);
        KVS_CHECK_EQ_INT(kvs_summary_int(k, "stream", -1), kvs_summary_int(k, "tid", -2));
        ext_of[i] = kvs_summary_int(k, "ext", -1);
    }
    KVS_CHECK_EQ_INT(found, NK);
    KVS_CHECK(find_named(kernels, "spin(long long, int *)") != NULL ||
              find_named(kernels, "spin(long long, int*)") != NULL); /* demangled */

    /* ops: one per third kernel, each kernel inside carries its External id */
    const cJSON *ops = kvs_summary_array(sum, "ops");
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(ops), (NK + 2) / 3);
    const cJSON *op;
    int matched = 0;
    cJSON_ArrayForEach(op, ops)
    {
        long long ext = kvs_summary_int(op, "ext", -2);
        const cJSON *dims = cJSON_GetObjectItemCaseSensitive(op, "dims");
        int d0 = cJSON_GetArrayItem(cJSON_GetArrayItem(dims, 0), 0)->valueint;
        int i = d0 - 1; /* dims [[i+1, 1024]] name the kernel */
        KVS_CHECK_EQ_INT(i % 3, 0);
        if (i >= 0 && i < NK) {
            KVS_CHECK_MSG(ext_of[i] == ext, "kernel %d: External id %lld, its op's %lld", i,
                          ext_of[i], ext);
            matched += ext_of[i] == ext;
        }
        char *types = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(op, "types"));
        KVS_CHECK_EQ_STR(types, "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]");
        free(types);
    }
    KVS_CHECK_EQ_INT(matched, (NK + 2) / 3);
    for (int i = 0; i < NK; i++)
        if (i % 3)
            KVS_CHECK_MSG(ext_of[i] < 0, "kernel %d outside any op has External id %lld", i,
                          ext_of[i]);

    /* the copy and the memset, with their sizes */
    const cJSON *mc = cJSON_GetArrayItem(kvs_summary_array(sum, "memcpys"), 0);
    const cJSON *ms = cJSON_GetArrayItem(kvs_summary_array(sum, "memsets"), 0);
    KVS_REQUIRE(mc && ms);
    KVS_CHECK_EQ_INT(kvs_summary_int(mc, "bytes", 0), (long long)copy_bytes);
    KVS_CHECK_EQ_INT(kvs_summary_int(ms, "bytes", 0), (long long)set_bytes);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(mc, "name")->valuestring,
                     "Memcpy DtoD (Device -> Device)");

    /* ranges on the CPU, and projected onto both streams' GPU work */
    const cJSON *ua = kvs_summary_array(sum, "user_annotations");
    KVS_CHECK(find_named(ua, "step_0") != NULL);
    KVS_CHECK(find_named(ua, "nvtx_outer") != NULL);
    KVS_CHECK(find_named(ua, "startend") != NULL);
    const cJSON *ga = kvs_summary_array(sum, "gpu_user_annotations");
    KVS_CHECK_EQ_INT(count_named(ga, "step_0"), 2);
    KVS_CHECK_EQ_INT(count_named(ga, "nvtx_outer"), 2);
    KVS_CHECK_EQ_INT(count_named(ga, "startend"), 1);
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(sum, "kvscope");
    KVS_CHECK_EQ_INT(kvs_summary_int(kv, "dropped_records", -1), 0);
    const cJSON *dp = cJSON_GetArrayItem(kvs_summary_array(sum, "deviceProperties"), 0);
    KVS_REQUIRE(dp);
    KVS_CHECK(kvs_summary_int(dp, "numSms", 0) > 0);
    KVS_CHECK(strlen(cJSON_GetObjectItemCaseSensitive(dp, "name")->valuestring) > 0);
    for (int i = 0; i < NK; i++) {
        cudaEventDestroy(e0[i]);
        cudaEventDestroy(e1[i]);
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(out);
    cudaStreamDestroy(s[0]);
    cudaStreamDestroy(s[1]);
    cJSON_Delete(sum);
}

// ----------------------------------------------------------------------------
// CUDA graphs: a graph captured before the window (ops and ranges recorded
// because a stream capture is open), replayed inside it. Every replayed
// kernel says its graph node and carries the External id of the op it was
// captured under; each replay projects the capture's layer ranges onto its
// kernels; `kvscope report` counts one call per op per replay.

#define NREPLAY 3

static void test_graph_replay(void)
{
    struct kvs_trace_config cfg;
    kvs_trace_config_init(&cfg);
    struct kvs_trace *t = NULL;
    KVS_REQUIRE(kvs_trace_create(&cfg, &t) == KVS_STATUS_OK);
    cudaStream_t s;
    KVS_TEST_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *out = nullptr;
    KVS_TEST_CUDA(cudaMalloc(&out, 1024 * sizeof(int)));
    spin<<<1, 32, 0, s>>>(10000, out); /* module load outside the capture */
    KVS_TEST_CUDA(cudaStreamSynchronize(s));

    /* capture: layer_0 > kv_cast [[1,1024] x2] > spin<<<7>>>; layer_1 >
     * kv_cast [[2,1024] x2] > spin<<<8>>>; then tiny<<<1,1>>> under no op */
    KVS_TEST_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int l = 0; l < 2; l++) {
        char name[32];
        snprintf(name, sizeof name, "layer_%d", l);
        kvs_range_begin(name);
        struct kvs_tensor_desc d[2] = {{2, {l + 1, 1024}, "c10::BFloat16"},
                                       {2, {l + 1, 1024}, "c10::Float8_e4m3fn"}};
        kvs_op_begin("kvs::kv_cast", 2, d);
        spin<<<7 + l, 96, 0, s>>>(100000, out);
        kvs_op_end();
        kvs_range_end();
    }
    tiny<<<1, 1, 0, s>>>(out);
    cudaGraph_t g = nullptr;
    KVS_TEST_CUDA(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t ge = nullptr;
    KVS_TEST_CUDA(cudaGraphInstantiate(&ge, g, 0));

    KVS_REQUIRE(kvs_trace_start(t) == KVS_STATUS_OK);
    for (int r = 0; r < NREPLAY; r++) {
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", r);
        kvs_range_begin(name);
        KVS_TEST_CUDA(cudaGraphLaunch(ge, s));
        KVS_TEST_CUDA(cudaStreamSynchronize(s));
        kvs_range_end();
    }
    KVS_REQUIRE(kvs_trace_stop(t) == KVS_STATUS_OK);
    char path[128];
    tmp_trace(path, sizeof path, "graph");
    KVS_REQUIRE(kvs_trace_write(t, path) == KVS_STATUS_OK);
    kvs_trace_free(t);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);

    cJSON *sum;
    kvs_check_trace_valid(path, &sum);
    if (sum) {
        /* the two captured ops, with their dims: ext -> layer */
        long long op_ext[2] = {-1, -1};
        const cJSON *op;
        cJSON_ArrayForEach(op, kvs_summary_array(sum, "ops"))
        {
            int d0 = cJSON_GetArrayItem(cJSON_GetArrayItem(
                         cJSON_GetObjectItemCaseSensitive(op, "dims"), 0), 0)->valueint;
            KVS_REQUIRE(d0 == 1 || d0 == 2);
            op_ext[d0 - 1] = kvs_summary_int(op, "ext", -1);
        }
        KVS_CHECK_EQ_INT(cJSON_GetArraySize(kvs_summary_array(sum, "ops")), 2);
        int spins[2] = {0, 0}, tinies = 0;
        const cJSON *k;
        cJSON_ArrayForEach(k, kvs_summary_array(sum, "kernels"))
        {
            const char *name = cJSON_GetObjectItemCaseSensitive(k, "name")->valuestring;
            long long node = kvs_summary_int(k, "graph_node", 0);
            KVS_CHECK_MSG(node > 0, "%s: replayed without a graph node id", name);
            if (strstr(name, "spin")) {
                int l = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(k, "grid"), 0)->valueint - 7;
                KVS_REQUIRE(l == 0 || l == 1);
                KVS_CHECK_MSG(kvs_summary_int(k, "ext", -1) == op_ext[l],
                              "layer %d's kernel: External id %lld, its op's %lld", l,
                              kvs_summary_int(k, "ext", -1), op_ext[l]);
                spins[l]++;
            } else {
                KVS_CHECK_MSG(cJSON_GetObjectItemCaseSensitive(k, "ext") == NULL,
                              "the kernel captured under no op has External id %lld",
                              kvs_summary_int(k, "ext", -1));
                tinies++;
            }
        }
        KVS_CHECK_EQ_INT(spins[0], NREPLAY);
        KVS_CHECK_EQ_INT(spins[1], NREPLAY);
        KVS_CHECK_EQ_INT(tinies, NREPLAY);
        const cJSON *ga = kvs_summary_array(sum, "gpu_user_annotations");
        KVS_CHECK_EQ_INT(count_named(ga, "layer_0"), NREPLAY);
        KVS_CHECK_EQ_INT(count_named(ga, "layer_1"), NREPLAY);
        KVS_CHECK_EQ_INT(count_named(ga, "ProfilerStep#1"), 1);
        cJSON_Delete(sum);
    }

    /* the report: one call per op per replay */
    if (cJSON *doc = report_doc(path)) {
        int groups = 0;
        const cJSON *gr;
        cJSON_ArrayForEach(gr, cJSON_GetObjectItemCaseSensitive(doc, "groups"))
        {
            const cJSON *op = cJSON_GetObjectItemCaseSensitive(gr, "op");
            if (!cJSON_IsString(op) || strcmp(op->valuestring, "kvs::kv_cast"))
                continue;
            KVS_CHECK_EQ_INT(kvs_summary_int(gr, "calls", -1), NREPLAY);
            groups++;
        }
        KVS_CHECK_EQ_INT(groups, 2);
        cJSON_Delete(doc);
    }
    if (getenv("KVS_KEEP_TRACE"))
        fprintf(stderr, "trace kept: %s\n", path);
    else
        unlink(path);
    cudaFree(out);
    cudaStreamDestroy(s);
}

// ----------------------------------------------------------------------------
// a pool of one small buffer: records dropped and counted, memory bounded

static void test_tiny_pool(void)
{
    struct kvs_trace_config cfg;
    kvs_trace_config_init(&cfg);
    cfg.buffer_bytes = 64u << 10;
    cfg.max_buffers = 1;
    struct kvs_trace *t = NULL;
    KVS_REQUIRE(kvs_trace_create(&cfg, &t) == KVS_STATUS_OK);
    int *p = nullptr;
    KVS_TEST_CUDA(cudaMalloc(&p, sizeof(int)));
    KVS_REQUIRE(kvs_trace_start(t) == KVS_STATUS_OK);
    for (int i = 0; i < 20000; i++)
        tiny<<<1, 1>>>(p);
    KVS_TEST_CUDA(cudaDeviceSynchronize());
    KVS_REQUIRE(kvs_trace_stop(t) == KVS_STATUS_OK);
    char path[128];
    tmp_trace(path, sizeof path, "tiny");
    KVS_CHECK(kvs_trace_write(t, path) == KVS_STATUS_OK);
    struct kvs_trace_stats s;
    kvs_trace_get_stats(t, &s);
    kvs_trace_free(t);
    cudaFree(p);
    fprintf(stderr, "tiny pool: dropped %llu, denied %llu, buffers %u\n",
            (unsigned long long)s.dropped_records, (unsigned long long)s.buffer_requests_denied,
            s.buffers_used);
    KVS_CHECK(s.dropped_records > 0);
    KVS_CHECK_EQ_INT(s.buffers_used, 1);
    cJSON *sum = NULL;
    int rc = kvs_check_trace(path, &sum);
    unlink(path);
    if (rc >= 0) {
        KVS_CHECK_EQ_INT(rc, 0);
        const cJSON *kv = cJSON_GetObjectItemCaseSensitive(sum, "kvscope");
        KVS_CHECK_EQ_INT(kvs_summary_int(kv, "dropped_records", -1), (long long)s.dropped_records);
        const cJSON *cats = cJSON_GetObjectItemCaseSensitive(sum, "categories");
        KVS_CHECK(kvs_summary_int(cats, "kernel", 0) < 20000);
    }
    cJSON_Delete(sum);
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    static const struct kvs_test tests[] = {
        {"second_subscriber_refused", test_second_subscriber_refused},
        {"capture_workload", test_capture_workload},
        {"graph_replay", test_graph_replay},
        {"tiny_pool", test_tiny_pool},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
