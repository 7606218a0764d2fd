/* tests/test_kvscope_trace.c — kvscope's own traces read like PyTorch's: a
 * trace written by libtrace's writer (the capture's output path, no GPU
 * needed) goes through kvs_analyze_file; the annotated op's shapes, the
 * kernel's External id, the NVTX step range and the capture's metadata
 * (dropped records, rank) come back.
 *
 *   meson test -C build test_kvscope_trace
 */
#include <string.h>
#include <unistd.h>

#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "kvscope/units.h"
#include "kvscope/trace_writer.h"

#define T0 5000000000LL /* ns on the CPU clock */
#define TOKENS 65536
#define ACTIVE 2048

static struct kvs_tensor_desc cast_in[2] = {
    {3, {TOKENS, 1, 576}, "c10::BFloat16"},
    {3, {TOKENS, 1, 576}, "c10::Float8_e4m3fn"},
};
static struct kvs_tensor_desc gather_in[2] = {
    {3, {ACTIVE, 1, 576}, "c10::Float8_e4m3fn"},
    {1, {ACTIVE}, "long int"},
};

static struct kvs_trace_rec host(enum kvs_trace_rec_kind k, const char *name, int64_t s, int64_t e,
                                 uint64_t ext)
{
    struct kvs_trace_rec r = {.kind = k, .start_ns = s, .end_ns = e, .name = name};
    r.u.host.pid = 42;
    r.u.host.tid = 42;
    r.u.host.external_id = ext;
    return r;
}

static void test_capture_trace_reads(void)
{
    struct kvs_trace_rec r[64];
    size_t n = 0;
    /* three decode steps of 1 ms, each: a gather op (no kernel of its own
     * here) and a cast op whose kernel takes 100 us */
    for (int s = 0; s < 3; s++) {
        int64_t t = T0 + s * 1000000LL;
        static const char *names[] = {"decode_step 0", "decode_step 1", "decode_step 2"};
        r[n++] = host(KVS_TREC_RANGE, names[s], t, t + 1000000, 0);
        struct kvs_trace_rec g = host(KVS_TREC_OP, "kvs::gather_tokens", t + 1000, t + 2000, 100 + s);
        g.u.host.ntensors = 2;
        g.u.host.tensors = gather_in;
        r[n++] = g;
        struct kvs_trace_rec op = host(KVS_TREC_OP, "kvs::kv_cast", t + 10000, t + 20000, 200 + s);
        op.u.host.ntensors = 2;
        op.u.host.tensors = cast_in;
        r[n++] = op;
        struct kvs_trace_rec api = {.kind = KVS_TREC_RUNTIME, .correlation = (uint32_t)(10 + s),
                                    .start_ns = t + 11000, .end_ns = t + 12000, .name = "cudaLaunchKernel"};
        api.u.api.pid = 42;
        api.u.api.tid = 42;
        api.u.api.cbid = 211;
        r[n++] = api;
        struct kvs_trace_rec link = {.kind = KVS_TREC_EXTERNAL_ID, .correlation = (uint32_t)(10 + s)};
        link.u.external_id = 200 + s;
        r[n++] = link;
        struct kvs_trace_rec k = {.kind = KVS_TREC_KERNEL, .correlation = (uint32_t)(10 + s),
                                  .start_ns = t + 50000, .end_ns = t + 150000,
                                  .name = "kvs_cast_fp8_to_bf16_kernel"};
        k.u.gpu.device = 0;
        k.u.gpu.context = 1;
        k.u.gpu.stream = 7;
        r[n++] = k;
    }
    struct kvs_trace_device dev;
    memset(&dev, 0, sizeof dev);
    snprintf(dev.name, sizeof dev.name, "NVIDIA H200");
    struct kvs_trace_meta meta;
    kvs_trace_meta_init(&meta);
    meta.pid = 42;
    meta.devices = &dev;
    meta.ndevices = 1;
    meta.rank = 0;
    meta.world_size = 1;
    meta.stats.dropped_records = 3;
    meta.stats.host_dropped = 2;
    char path[256];
    kvs_tmp_path(path, sizeof path, ".json.gz");
    if (kvs_trace_write_json(&meta, r, n, path, NULL) != KVS_STATUS_OK)
        KVS_TEST_SETUP_FAILED("the trace writer failed");

    struct kvs_log_capture cap;
    struct kvs_analysis_options o;
    kvs_analysis_options_init(&o);
    o.log = kvs_capture_logger(&cap);
    struct kvs_analysis *a = NULL;
    KVS_CHECK_EQ_INT(kvs_analyze_file(path, &o, &a), KVS_STATUS_OK);
    unlink(path);
    KVS_REQUIRE(a);
    KVS_CHECK_EQ_STR(a->trace.producer, "kvscope");
    KVS_CHECK_EQ_INT(a->trace.dropped_records, 5);
    KVS_CHECK_EQ_INT(a->trace.rank, 0);
    KVS_CHECK_EQ_INT(a->trace.world_size, 1);
    KVS_CHECK_EQ_STR(a->trace.device, "NVIDIA H200");
    KVS_CHECK_EQ_INT(a->trace.ops, 6);
    KVS_CHECK_EQ_INT(a->trace.kernels, 3);
    KVS_CHECK_EQ_INT(a->trace.gpu_unlinked, 0);
    KVS_CHECK_EQ_INT(a->steps.count, 3);
    KVS_CHECK_NEAR(a->steps.mean_ms, 1.0, 1e-9);
    KVS_CHECK_NEAR(a->steps.gpu_ms_per_step, 0.1, 1e-9);
    KVS_REQUIRE(a->ngroup == 1);
    const struct kvs_group *g = &a->groups[0];
    KVS_CHECK_EQ_STR(g->op, "kvs::kv_cast");
    char dims[128];
    KVS_CHECK_EQ_STR(kvs_dims_json(dims, sizeof dims, g), "[[65536,1,576],[65536,1,576]]");
    KVS_CHECK_EQ_INT(g->bytes_per_call, (int64_t)TOKENS * 576 * 3);
    KVS_CHECK_NEAR(g->calls_per_step, 1, 1e-9);
    KVS_CHECK_NEAR(g->achieved_gbps, (double)TOKENS * 576 * 3 / 100000.0, 1e-9);
    /* 65536 >= 8 x the 2048 tokens of the gather op's [2048,1,576] */
    KVS_REQUIRE(g->has_match);
    KVS_CHECK_EQ_INT(g->match.capacity_tokens, TOKENS);
    bool found = false;
    for (size_t i = 0; i < a->nfinding; i++)
        if (!strcmp(a->findings[i].id, "kv_full_buffer_cast")) {
            found = true;
            KVS_CHECK_NEAR(a->findings[i].needed_bytes_per_step, (double)ACTIVE * 576 * 3, 1e-6);
        }
    KVS_CHECK(found);
    kvs_analysis_free(a);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"capture_trace_reads", test_capture_trace_reads},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
