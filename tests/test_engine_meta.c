/* tests/test_engine_meta.c — the kvscope.engine contract end to end on the
 * CPU: the object the engine writes (kvs_engine_run_facts_json, engine/),
 * put into a trace by libtrace's writer as the capture does
 * (kvs_trace_meta.extra), read back by the analyzer into kvs_analysis.engine
 * and the whole-step roofline. A GLM-5 full-cast step of 147.37 GB in the
 * trace's 100 ms steps is 1474 GB/s, 30.7% of the H200's 4800 GB/s.
 *
 *   meson test -C build test_engine_meta
 */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "kvscope/engine.h"
#include "kvscope/trace_writer.h"

#define T0 5000000000LL /* ns on the CPU clock */
#define STEP_NS 100000000LL

static void test_engine_object_round_trip(void)
{
    struct kvs_engine_run_facts f = {0};
    f.config = "glm5", f.path = KVS_KV_PATH_FULL_CAST, f.batch = 1, f.context = 4096;
    f.kv_capacity = 495552, f.layers = 78, f.tp = 1, f.graph = 0, f.steps = 2;
    f.bytes.weights = 80.2e9, f.bytes.kv_cast = 66.79e9, f.bytes.kv_attention = 0.37e9;
    f.bytes.total = f.bytes.weights + f.bytes.kv_cast + f.bytes.kv_attention;
    f.copy_gbps = 4227.1, f.step_ms = 96.67;
    char json[1024];
    KVS_REQUIRE(kvs_engine_run_facts_json(&f, json, sizeof json) < sizeof json);

    /* two 100 ms steps, one kernel each */
    struct kvs_trace_rec r[8];
    size_t n = 0;
    for (int s = 0; s < 2; s++) {
        int64_t t = T0 + s * STEP_NS;
        static const char *names[] = {"ProfilerStep#1", "ProfilerStep#2"};
        struct kvs_trace_rec st = {.kind = KVS_TREC_RANGE, .start_ns = t, .end_ns = t + STEP_NS,
                                   .name = names[s]};
        st.u.host.pid = st.u.host.tid = 42;
        r[n++] = st;
        struct kvs_trace_rec k = {.kind = KVS_TREC_KERNEL, .correlation = (uint32_t)(10 + s),
                                  .start_ns = t + 1000, .end_ns = t + STEP_NS - 1000, .name = "k"};
        k.u.gpu.context = 1;
        k.u.gpu.stream = 7;
        r[n++] = k;
    }
    struct kvs_trace_device dev;
    memset(&dev, 0, sizeof dev);
    snprintf(dev.name, sizeof dev.name, "NVIDIA H200");
    struct kvs_trace_extra extra = {"kvscope.engine", json};
    struct kvs_trace_meta meta;
    kvs_trace_meta_init(&meta);
    meta.pid = 42;
    meta.devices = &dev;
    meta.ndevices = 1;
    meta.extra = &extra;
    meta.nextra = 1;
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
    const struct kvs_engine_info *e = &a->engine;
    KVS_REQUIRE(e->present);
    KVS_CHECK_EQ_STR(e->config, "glm5");
    KVS_CHECK_EQ_STR(e->kv_path, "full-cast");
    KVS_CHECK(e->batch == 1 && e->context == 4096 && e->kv_capacity == 495552 && e->layers == 78 &&
              e->tp == 1 && e->steps == 2 && e->graph == 0);
    KVS_CHECK_NEAR(e->bytes_per_step, round(f.bytes.total), 0.5);
    KVS_CHECK_NEAR(e->weight_bytes_per_step + e->kv_bytes_per_step, e->bytes_per_step, 2.0);
    KVS_CHECK_NEAR(e->copy_gbps, 4227.1, 1e-9);
    KVS_CHECK_NEAR(e->step_ms, 96.67, 1e-9);
    const struct kvs_step_roofline *rf = &a->roofline;
    KVS_REQUIRE(rf->known);
    KVS_CHECK_EQ_STR(rf->step_source, "trace");
    KVS_CHECK_NEAR(rf->step_ms, 100.0, 1e-6);
    KVS_CHECK_NEAR(rf->achieved_gbps, f.bytes.total / 1e8, 1e-3); /* 1473.6 GB/s */
    KVS_CHECK_NEAR(rf->peak_fraction, f.bytes.total / 1e8 / 4800, 1e-6);
    KVS_CHECK_NEAR(rf->copy_fraction, f.bytes.total / 1e8 / 4227.1, 1e-6);
    kvs_analysis_free(a);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"engine_object_round_trip", test_engine_object_round_trip},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
