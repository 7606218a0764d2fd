/* tests/test_trace_report.c KVSCOPE — the writer's output is what the reader
 * expects: a trace made on the CPU from records shaped like a capture of
 * the full-buffer KV cast (4 steps x 3 layers of "aten::copy_" with
 * [[131072,1,576],[131072,1,576]] BF16 <- FP8, each launching one copy
 * kernel, plus NVTX step ranges and an H200's deviceProperties) goes through
 * `kvscope report --format json`, which must find the group with its dims,
 * dtypes, calls per step, bytes per call and the device; and two ranks'
 * files of one run read together (kvscope.multirank/1).
 *   meson test -C build test_trace_report
 */
#include <unistd.h>

#include "kvs_test.h"
#include "kvscope/trace_writer.h"
#include "trace_check.h"

static const char *g_kvscope;

#define STEPS 4
#define LAYERS 3
#define T0 5000000000LL

static struct kvs_tensor_desc g_in[2] = {
    {3, {131072, 1, 576}, "c10::BFloat16"},
    {3, {131072, 1, 576}, "c10::Float8_e4m3fn"},
};

static size_t make(struct kvs_trace_rec *r)
{
    size_t n = 0;
    uint32_t corr = 100;
    uint64_t ext = 1;
    static char names[STEPS][16];
    for (int s = 0; s < STEPS; s++) {
        int64_t t = T0 + (int64_t)s * 10000000; /* a step every 10 ms */
        snprintf(names[s], sizeof names[s], "step_%d", s);
        struct kvs_trace_rec st = {.kind = KVS_TREC_RANGE, .start_ns = t, .end_ns = t + 9000000,
                                   .name = names[s]};
        st.u.host.pid = 7, st.u.host.tid = 7, st.u.host.external_id = ext++;
        r[n++] = st;
        for (int l = 0; l < LAYERS; l++) {
            int64_t lt = t + 100000 + (int64_t)l * 1000000;
            struct kvs_trace_rec op = {.kind = KVS_TREC_OP, .start_ns = lt, .end_ns = lt + 20000,
                                       .name = "aten::copy_"};
            op.u.host.pid = 7, op.u.host.tid = 7, op.u.host.external_id = ext;
            op.u.host.ntensors = 2, op.u.host.tensors = g_in;
            r[n++] = op;
            struct kvs_trace_rec api = {.kind = KVS_TREC_RUNTIME, .correlation = corr,
                                        .start_ns = lt + 5000, .end_ns = lt + 9000,
                                        .name = "cudaLaunchKernel"};
            api.u.api.pid = 7, api.u.api.tid = 7, api.u.api.cbid = 211;
            r[n++] = api;
            struct kvs_trace_rec link = {.kind = KVS_TREC_EXTERNAL_ID, .correlation = corr};
            link.u.external_id = ext;
            r[n++] = link;
            struct kvs_trace_rec k = {.kind = KVS_TREC_KERNEL, .correlation = corr,
                                      .start_ns = lt + 10000, .end_ns = lt + 10000 + 860000,
                                      .name = "void at::native::unrolled_elementwise_kernel<"
                                              "at::native::direct_copy_kernel_cuda>()"};
            k.u.gpu.device = 0, k.u.gpu.context = 1, k.u.gpu.stream = 7;
            k.u.gpu.grid[0] = 1024, k.u.gpu.grid[1] = k.u.gpu.grid[2] = 1;
            k.u.gpu.block[0] = 128, k.u.gpu.block[1] = k.u.gpu.block[2] = 1;
            r[n++] = k;
            corr++;
            ext++;
        }
    }
    return n;
}

static void test_report_reads_capture(void)
{
    if (!g_kvscope)
        KVS_TEST_SKIP("no kvscope binary given");
    struct kvs_trace_rec recs[STEPS * (1 + 4 * LAYERS)];
    size_t n = make(recs);
    struct kvs_trace_device dev = {0};
    dev.id = 0;
    snprintf(dev.name, sizeof dev.name, "NVIDIA H200");
    dev.num_sms = 132, dev.warp_size = 32, dev.compute_major = 9;
    struct kvs_trace_meta m;
    kvs_trace_meta_init(&m);
    m.pid = 7;
    m.process_name = "decode";
    m.devices = &dev, m.ndevices = 1;
    m.window_start_ns = T0, m.window_end_ns = T0 + STEPS * 10000000LL;
    char trace[] = "/tmp/kvs_report_inXXXXXX";
    int fd = mkstemp(trace);
    KVS_REQUIRE(fd >= 0);
    close(fd);
    char gz[64], out[64], cmd[512];
    snprintf(gz, sizeof gz, "%s.json.gz", trace);
    snprintf(out, sizeof out, "%s.report.json", trace);
    KVS_REQUIRE(kvs_trace_write_json(&m, recs, n, gz, NULL) == KVS_STATUS_OK);
    snprintf(cmd, sizeof cmd, "'%s' report --quiet --format json -o '%s' '%s'", g_kvscope, out,
             gz);
    int rc = system(cmd);
    KVS_CHECK_MSG(rc == 0, "%s: exit %d", cmd, rc);
    FILE *f = fopen(out, "rb");
    char *text = NULL;
    size_t len = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        len = (size_t)ftell(f);
        rewind(f);
        text = calloc(1, len + 1);
        if (text && fread(text, 1, len, f) != len)
            len = 0;
        fclose(f);
    }
    unlink(trace);
    unlink(gz);
    unlink(out);
    KVS_REQUIRE(text && len > 0);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    KVS_REQUIRE(doc);
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(doc, "trace");
    const cJSON *devname = cJSON_GetObjectItemCaseSensitive(tr, "device");
    KVS_CHECK(cJSON_IsString(devname) && strstr(devname->valuestring, "H200"));
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(doc, "steps");
    KVS_CHECK_EQ_INT(kvs_summary_int(steps, "count", -1), STEPS);
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "groups"), 0);
    KVS_REQUIRE(g);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(g, "op")->valuestring, "aten::copy_");
    char *dims = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(g, "dims"));
    char *types = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(g, "dtypes"));
    KVS_CHECK_EQ_STR(dims, "[[131072,1,576],[131072,1,576]]");
    KVS_CHECK_EQ_STR(types, "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]");
    free(dims);
    free(types);
    KVS_CHECK_EQ_INT(kvs_summary_int(g, "calls", -1), STEPS * LAYERS);
    KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(g, "calls_per_step")->valuedouble, LAYERS,
                   1e-9);
    /* 131072 x 576 elements: 1 byte read (FP8) + 2 written (BF16) */
    KVS_CHECK_EQ_INT(kvs_summary_int(g, "bytes_per_call", -1), 131072LL * 576 * 3);
    KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(g, "gpu_ms")->valuedouble,
                   STEPS * LAYERS * 0.86, 1e-6);
    cJSON_Delete(doc);
}

/* Two ranks' files as kvscope capture writes them for a tensor-parallel run
 * (distributedInfo rank/world_size/backend): per 10 ms step, a 4 ms GEMM on
 * stream 7 and a 3 ms NCCL all-reduce on stream 9 that starts 1 ms before the
 * GEMM ends (rank 1: the GEMM takes 6 ms, its steps 12 ms). `kvscope report`
 * on both gives kvscope.multirank/1 with the ranks from the files: comm
 * 3 ms, overlap 1 ms per step, rank 1 the longest step (the all-reduces do
 * not end together, so no rank is named the straggler). */
static size_t make_rank(struct kvs_trace_rec *r, int rank)
{
    size_t n = 0;
    static char names[2][STEPS][16];
    int64_t step = rank ? 12000000 : 10000000, gemm = rank ? 6000000 : 4000000;
    for (int s = 0; s < STEPS; s++) {
        int64_t t = T0 + (int64_t)s * step;
        snprintf(names[rank][s], sizeof names[rank][s], "step_%d", s);
        struct kvs_trace_rec st = {.kind = KVS_TREC_RANGE, .start_ns = t, .end_ns = t + step,
                                   .name = names[rank][s]};
        st.u.host.pid = 7, st.u.host.tid = 7;
        r[n++] = st;
        for (int k = 0; k < 2; k++) {
            uint32_t corr = (uint32_t)(1000 + 2 * s + k);
            struct kvs_trace_rec api = {.kind = KVS_TREC_RUNTIME, .correlation = corr,
                                        .start_ns = t + 1000 + k * 1000, .end_ns = t + 1500 + k * 1000,
                                        .name = "cudaLaunchKernel"};
            api.u.api.pid = 7, api.u.api.tid = 7, api.u.api.cbid = 211;
            r[n++] = api;
            int64_t ks = k ? t + 100000 + gemm - 1000000 : t + 100000;
            struct kvs_trace_rec kr = {.kind = KVS_TREC_KERNEL, .correlation = corr, .start_ns = ks,
                                       .end_ns = ks + (k ? 3000000 : gemm),
                                       .name = k ? "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
                                                 : "nvjet_tst_128x8_64x12_2x1_v_bz_TNT"};
            kr.u.gpu.device = 0, kr.u.gpu.context = 1, kr.u.gpu.stream = k ? 9 : 7;
            kr.u.gpu.grid[0] = kr.u.gpu.grid[1] = kr.u.gpu.grid[2] = 1;
            kr.u.gpu.block[0] = 128, kr.u.gpu.block[1] = kr.u.gpu.block[2] = 1;
            r[n++] = kr;
        }
    }
    return n;
}

static void test_report_reads_rank_captures(void)
{
    if (!g_kvscope)
        KVS_TEST_SKIP("no kvscope binary given");
    char path[2][64], out[64], cmd[600];
    for (int rank = 0; rank < 2; rank++) {
        struct kvs_trace_rec recs[STEPS * 5];
        size_t n = make_rank(recs, rank);
        struct kvs_trace_meta m;
        kvs_trace_meta_init(&m);
        m.pid = 7;
        m.rank = rank, m.world_size = 2, m.backend = "nccl";
        m.window_start_ns = T0, m.window_end_ns = T0 + STEPS * 12000000LL;
        snprintf(path[rank], sizeof path[rank], "/tmp/kvs_ranks_%d_%d.json.gz", (int)getpid(), rank);
        KVS_REQUIRE(kvs_trace_write_json(&m, recs, n, path[rank], NULL) == KVS_STATUS_OK);
    }
    snprintf(out, sizeof out, "/tmp/kvs_ranks_%d.report.json", (int)getpid());
    /* rank 1's file first: the ranks come from the files */
    snprintf(cmd, sizeof cmd, "'%s' report --quiet --format json -o '%s' '%s' '%s'", g_kvscope, out,
             path[1], path[0]);
    int rc = system(cmd);
    KVS_CHECK_MSG(rc == 0, "%s: exit %d", cmd, rc);
    cJSON *doc = NULL;
    FILE *f = fopen(out, "rb");
    if (f) {
        char *text = calloc(1, 1 << 20);
        if (text && fread(text, 1, (1 << 20) - 1, f) > 0)
            doc = cJSON_Parse(text);
        free(text);
        fclose(f);
    }
    unlink(path[0]);
    unlink(path[1]);
    unlink(out);
    KVS_REQUIRE(doc);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(doc, "schema")->valuestring, "kvscope.multirank/1");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(doc, "ranks");
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(r, "rank_source")->valuestring, "trace");
    KVS_CHECK_EQ_INT(kvs_summary_int(r, "world_size", -1), 2);
    /* both all-reduces take 3 ms, so they do not end together: no rank is
     * seen waiting for another (no straggler); rank 1's step is the longest */
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r, "straggler")));
    KVS_CHECK_EQ_INT(kvs_summary_int(cJSON_GetObjectItemCaseSensitive(r, "longest_step"), "rank", -1), 1);
    const cJSON *per = cJSON_GetObjectItemCaseSensitive(r, "per_rank");
    KVS_REQUIRE(cJSON_GetArraySize(per) == 2);
    for (int rank = 0; rank < 2; rank++) {
        const cJSON *x = cJSON_GetArrayItem(per, rank);
        KVS_CHECK_EQ_INT(kvs_summary_int(x, "rank", -1), rank);
        KVS_CHECK_EQ_INT(kvs_summary_int(x, "steps", -1), STEPS);
        KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(x, "comm_ms")->valuedouble, 3.0, 1e-9);
        KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(x, "overlap_ms")->valuedouble, 1.0, 1e-9);
        KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(x, "compute_ms")->valuedouble, rank ? 6.0 : 4.0, 1e-9);
        KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(x, "gpu_ms")->valuedouble, rank ? 8.0 : 6.0, 1e-9);
    }
    cJSON_Delete(doc);
}

int main(int argc, char **argv)
{
    /* argv[1]: the kvscope binary (meson passes it); further args pick cases */
    if (argc > 1 && strchr(argv[1], '/')) {
        g_kvscope = argv[1];
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    static const struct kvs_test tests[] = {
        {"report_reads_capture", test_report_reads_capture},
        {"report_reads_rank_captures", test_report_reads_rank_captures},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
