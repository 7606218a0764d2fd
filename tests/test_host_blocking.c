/* tests/test_host_blocking.c — idle time that names its cause
 * (analyzers/host_blocking.c) on traces written here: a step that waits
 * 5 ms in cudaStreamSynchronize with the GPU idle gets host_blocking with
 * the call and its time, and no gpu_idle for that wait; the same
 * synchronize while the GPU is busy is no finding; a .item()-style
 * cudaMemcpyAsync that blocks is named an async copy; a graph-launched
 * launch-bound step gets gpu_idle without CUDA-graph advice.
 *
 *   meson test -C build test_host_blocking
 */
#include <stdio.h>
#include <string.h>

#include "kvs_test.h"
#include "kvscope/analysis.h"

static struct kvs_analysis *analyze_text(const char *json, size_t n)
{
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    struct kvs_analysis *a = NULL;
    KVS_CHECK_EQ_INT(kvs_analyze_memory(json, n, "host.json", &opt, &a), KVS_STATUS_OK);
    return a;
}

static const struct kvs_finding *find(const struct kvs_analysis *a, const char *id)
{
    for (size_t i = 0; i < a->nfinding; i++)
        if (!strcmp(a->findings[i].id, id))
            return &a->findings[i];
    return NULL;
}

/* ProfilerStep#1 of 10 ms: kernels 0-2 ms launched at 0.1 ms intervals...
 * then the CPU sits in `call` from 2 ms for `wait` ms, then a kernel runs
 * `busy_after` ms. With gpu_during, a kernel runs all through the wait. */
static size_t trace(char *buf, size_t cap, const char *call, double wait_us, bool gpu_during,
                    bool graph)
{
    size_t n = (size_t)snprintf(buf, cap,
                                "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"user_annotation\","
                                "\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":10000}");
    int corr = 1;
    /* 2 ms of GPU work launched in the first 0.2 ms */
    for (int i = 0; i < 20; i++, corr++)
        n += (size_t)snprintf(
            buf + n, cap - n,
            ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"%s\",\"pid\":1,\"tid\":1,"
            "\"ts\":%d,\"dur\":5,\"args\":{\"correlation\":%d}}"
            ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"nvjet_tst\",\"pid\":0,\"tid\":7,"
            "\"ts\":%d,\"dur\":100,\"args\":{\"correlation\":%d,\"device\":0,\"stream\":7}}",
            graph ? "cudaGraphLaunch" : "cudaLaunchKernel", 10 * i, corr, 10 + 100 * i, corr);
    n += (size_t)snprintf(buf + n, cap - n,
                          ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"%s\",\"pid\":1,\"tid\":1,"
                          "\"ts\":2010,\"dur\":%.0f,\"args\":{\"correlation\":%d}}",
                          call, wait_us, corr++);
    if (gpu_during)
        n += (size_t)snprintf(buf + n, cap - n,
                              ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
                              "\"pid\":1,\"tid\":1,\"ts\":200,\"dur\":5,\"args\":{\"correlation\":%d}}"
                              ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"nvjet_long\",\"pid\":0,"
                              "\"tid\":7,\"ts\":2010,\"dur\":%.0f,\"args\":{\"correlation\":%d,"
                              "\"device\":0,\"stream\":7}}",
                              corr, wait_us, corr);
    corr++;
    n += (size_t)snprintf(buf + n, cap - n, "]}");
    return n;
}

static void test_sync_with_gpu_idle(void)
{
    char json[16384];
    size_t n = trace(json, sizeof json, "cudaStreamSynchronize", 5000, false, false);
    KVS_REQUIRE(n < sizeof json);
    struct kvs_analysis *a = analyze_text(json, n);
    KVS_REQUIRE(a);
    const struct kvs_finding *f = find(a, "host_blocking");
    KVS_REQUIRE(f);
    /* the GPU ran 0.01-2.01 ms; the wait 2.01-7.01 ms: all 5 ms idle */
    KVS_CHECK_NEAR(f->gpu_ms_per_step, 5.0, 1e-9);
    KVS_CHECK_EQ_INT(f->severity, KVS_SEV_HIGH); /* 50% of the 10 ms step */
    KVS_CHECK_MSG(strstr(f->message, "cudaStreamSynchronize") && strstr(f->message, "a synchronize"),
                  "%s", f->message);
    KVS_CHECK_MSG(strstr(f->evidence, "+2.010 ms") && strstr(f->evidence, "5.000 ms"), "%s", f->evidence);
    KVS_CHECK_MSG(strstr(f->fix, "synchronisation"), "%s", f->fix);
    /* gpu_idle: the rest, 10 - 5 - 2 = 3 ms, of a 5 ms step less its wait */
    const struct kvs_finding *g = find(a, "gpu_idle");
    KVS_REQUIRE(g);
    KVS_CHECK_NEAR(g->gpu_ms_per_step, 3.0, 1e-9);
    KVS_CHECK_MSG(strstr(g->evidence, "host-wait") != NULL, "%s", g->evidence);
    kvs_analysis_free(a);
}

static void test_sync_with_gpu_busy(void)
{
    char json[16384];
    size_t n = trace(json, sizeof json, "cudaDeviceSynchronize", 5000, true, false);
    struct kvs_analysis *a = analyze_text(json, n);
    KVS_REQUIRE(a);
    KVS_CHECK_MSG(find(a, "host_blocking") == NULL, "the GPU was busy all through the wait");
    kvs_analysis_free(a);
}

static void test_item_copy(void)
{
    char json[16384];
    size_t n = trace(json, sizeof json, "cudaMemcpyAsync", 3000, false, false);
    struct kvs_analysis *a = analyze_text(json, n);
    KVS_REQUIRE(a);
    const struct kvs_finding *f = find(a, "host_blocking");
    KVS_REQUIRE(f);
    KVS_CHECK_NEAR(f->gpu_ms_per_step, 3.0, 1e-9);
    KVS_CHECK_MSG(strstr(f->message, "async copy that blocked"), "%s", f->message);
    KVS_CHECK_MSG(strstr(f->fix, ".item()") && strstr(f->fix, "pin"), "%s", f->fix);
    kvs_analysis_free(a);
    /* a short async copy is a launch, not a wait */
    n = trace(json, sizeof json, "cudaMemcpyAsync", 20, false, false);
    a = analyze_text(json, n);
    KVS_REQUIRE(a);
    KVS_CHECK(find(a, "host_blocking") == NULL);
    kvs_analysis_free(a);
}

static void test_graph_step_no_graph_advice(void)
{
    char json[16384];
    size_t n = trace(json, sizeof json, "cudaEventQuery", 10, false, true);
    struct kvs_analysis *a = analyze_text(json, n);
    KVS_REQUIRE(a);
    const struct kvs_finding *g = find(a, "gpu_idle");
    KVS_REQUIRE(g);
    KVS_CHECK_MSG(strstr(g->fix, "already launched from CUDA graphs") &&
                      !strstr(g->fix, "capture the decode step"),
                  "%s", g->fix);
    KVS_CHECK(find(a, "host_blocking") == NULL);
    kvs_analysis_free(a);
    /* the same eager: the graph advice stays */
    n = trace(json, sizeof json, "cudaEventQuery", 10, false, false);
    a = analyze_text(json, n);
    KVS_REQUIRE(a);
    g = find(a, "gpu_idle");
    KVS_REQUIRE(g);
    KVS_CHECK_MSG(!strstr(g->fix, "already launched from CUDA graphs"), "%s", g->fix);
    kvs_analysis_free(a);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"sync_with_gpu_idle", test_sync_with_gpu_idle},
        {"sync_with_gpu_busy", test_sync_with_gpu_busy},
        {"item_copy", test_item_copy},
        {"graph_step_no_graph_advice", test_graph_step_no_graph_advice},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
