/* tests/test_cupti_records.c — CUPTI activity records -> kvscope records,
 * with fake records built in memory (CUPTI headers only: no libcupti, no
 * GPU), then through the writer to JSON that Python's json module accepts.
 *   meson test -C build test_cupti_records
 */
#include <unistd.h>

#include "cupti_records.h"
#include "kvs_test.h"
#include "trace_check.h"

static const char *fake_api(void *user, int driver, uint32_t cbid)
{
    (void)user;
    if (!driver && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
        return "cudaLaunchKernel";
    return driver ? "cuSomething" : NULL;
}

static const char *fake_kernel(void *user, const char *mangled)
{
    (void)user;
    return strcmp(mangled, "_Z4spinPfl") == 0 ? "spin(float*, long)" : mangled;
}

static struct kvs_cupti_names names(void)
{
    struct kvs_cupti_names n = {fake_api, fake_kernel, NULL, 1000, 0};
    return n;
}

static CUpti_ActivityKernel10 kernel(void)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 5000001000ull;
    k.end = 5000201000ull;
    k.deviceId = 0, k.contextId = 1, k.streamId = 13, k.correlationId = 77;
    k.gridX = 132, k.gridY = 2, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.registersPerThread = 40, k.staticSharedMemory = 1024, k.dynamicSharedMemory = 4096;
    k.name = "_Z4spinPfl";
    return k;
}

static void test_kernel(void)
{
    struct kvs_cupti_names n = names();
    CUpti_ActivityKernel10 k = kernel();
    struct kvs_trace_rec r;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&k, &r) == 1);
    KVS_CHECK_EQ_INT(r.kind, KVS_TREC_KERNEL);
    KVS_CHECK_EQ_INT(r.start_ns, 5000000000LL); /* clock offset 1000 applied */
    KVS_CHECK_EQ_INT(r.end_ns - r.start_ns, 200000);
    KVS_CHECK_EQ_STR(r.name, "spin(float*, long)");
    KVS_CHECK_EQ_INT(r.correlation, 77);
    KVS_CHECK_EQ_INT(r.u.gpu.stream, 13);
    KVS_CHECK_EQ_INT(r.u.gpu.grid[0] * r.u.gpu.grid[1] * r.u.gpu.grid[2], 264);
    KVS_CHECK_EQ_INT(r.u.gpu.block[0], 256);
    KVS_CHECK_EQ_INT(r.u.gpu.registers, 40);
    KVS_CHECK_EQ_INT(r.u.gpu.shared_mem, 5120);
    KVS_CHECK_EQ_INT(r.u.gpu.graph_node_id, 0); /* an eager launch */
    /* a graph replay's kernel says its graph and node */
    k.graphId = 3, k.graphNodeId = 0x100000005ull;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&k, &r) == 1);
    KVS_CHECK_EQ_INT(r.u.gpu.graph_id, 3);
    KVS_CHECK_EQ_INT(r.u.gpu.graph_node_id, 0x100000005ll);
    /* a kernel that had not finished at a forced flush is left out */
    k.end = 0;
    KVS_CHECK(kvs_cupti_convert(&n, (CUpti_Activity *)&k, &r) == 0);
}

static void test_memcpy_memset(void)
{
    struct kvs_cupti_names n = names();
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 1ull << 30, m.start = 2000, m.end = 502000, m.streamId = 7, m.correlationId = 5;
    struct kvs_trace_rec r;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&m, &r) == 1);
    KVS_CHECK_EQ_INT(r.kind, KVS_TREC_MEMCPY);
    KVS_CHECK_EQ_STR(r.u.gpu.copy_kind, "DtoD");
    KVS_CHECK_EQ_STR(r.u.gpu.src_kind, "Device");
    KVS_CHECK_EQ_INT(r.u.gpu.bytes, 1ull << 30);
    m.copyKind = 200; /* unknown kinds stay printable */
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&m, &r) == 1);
    KVS_CHECK_EQ_STR(r.u.gpu.copy_kind, "Unknown");
    m.graphId = 2, m.graphNodeId = 9;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&m, &r) == 1);
    KVS_CHECK_EQ_INT(r.u.gpu.graph_id, 2);
    KVS_CHECK_EQ_INT(r.u.gpu.graph_node_id, 9);

    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.bytes = 4096, s.start = 10000, s.end = 11000, s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&s, &r) == 1);
    KVS_CHECK_EQ_INT(r.kind, KVS_TREC_MEMSET);
    KVS_CHECK_EQ_STR(r.u.gpu.dst_kind, "Device");
    s.graphId = 2, s.graphNodeId = 10;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&s, &r) == 1);
    KVS_CHECK_EQ_INT(r.u.gpu.graph_node_id, 10);
}

static void test_api_sync_ext_overhead(void)
{
    struct kvs_cupti_names n = names();
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a.start = 3000, a.end = 4000, a.processId = 10, a.threadId = 11, a.correlationId = 77;
    struct kvs_trace_rec r;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&a, &r) == 1);
    KVS_CHECK_EQ_INT(r.kind, KVS_TREC_RUNTIME);
    KVS_CHECK_EQ_STR(r.name, "cudaLaunchKernel");
    KVS_CHECK_EQ_INT(r.u.api.tid, 11);
    KVS_CHECK_EQ_INT(r.start_ns, 2000);
    a.cbid = 9999; /* no name known: a generic one, never NULL */
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&a, &r) == 1);
    KVS_CHECK_EQ_STR(r.name, "cuda runtime call");
    a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&a, &r) == 1);
    KVS_CHECK_EQ_INT(r.kind, KVS_TREC_DRIVER);

    CUpti_ActivitySynchronization2 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    s.start = 5000, s.end = 9000;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&s, &r) == 1);
    KVS_CHECK_EQ_STR(r.name, "Context Sync");
    KVS_CHECK_EQ_INT(r.u.sync.stream, -1);
    KVS_CHECK_EQ_INT(r.u.sync.event_id, -1);

    CUpti_ActivityExternalCorrelation e;
    memset(&e, 0, sizeof e);
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    e.externalId = 123456789012ull, e.correlationId = 77;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&e, &r) == 1);
    KVS_CHECK_EQ_INT(r.kind, KVS_TREC_EXTERNAL_ID);
    KVS_CHECK_EQ_INT(r.u.external_id, 123456789012LL);
    e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1; /* another tool's ids */
    KVS_CHECK(kvs_cupti_convert(&n, (CUpti_Activity *)&e, &r) == 0);

    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST;
    o.start = 100000, o.end = 102500;
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&o, &r) == 1);
    KVS_CHECK_EQ_STR(r.name, "Activity Buffer Request");
    KVS_CHECK_EQ_INT(n.overhead_ns, 2500);

    CUpti_Activity other = {CUPTI_ACTIVITY_KIND_MARKER};
    KVS_CHECK(kvs_cupti_convert(&n, &other, &r) == 0);
}

static void test_to_json(void)
{
    /* a launch inside an op: API record, external-id link, kernel -> one
     * document Python accepts, with the kernel carrying the op's id */
    struct kvs_cupti_names n = names();
    struct kvs_trace_rec r[4];
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a.start = 5000000500ull, a.end = 5000000900ull, a.processId = 10, a.threadId = 11;
    a.correlationId = 77;
    CUpti_ActivityExternalCorrelation e;
    memset(&e, 0, sizeof e);
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    e.externalId = 9, e.correlationId = 77;
    CUpti_ActivityKernel10 k = kernel();
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&a, &r[0]));
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&e, &r[1]));
    KVS_REQUIRE(kvs_cupti_convert(&n, (CUpti_Activity *)&k, &r[2]));
    struct kvs_tensor_desc t = {2, {4096, 4096}, "c10::BFloat16"};
    memset(&r[3], 0, sizeof r[3]);
    r[3].kind = KVS_TREC_OP;
    r[3].name = "kvs::gemv";
    r[3].start_ns = 4999999000LL, r[3].end_ns = 5000002000LL;
    r[3].u.host.pid = 10, r[3].u.host.tid = 11, r[3].u.host.external_id = 9;
    r[3].u.host.ntensors = 1, r[3].u.host.tensors = &t;
    struct kvs_trace_meta m;
    kvs_trace_meta_init(&m);
    m.pid = 10;
    char path[] = "/tmp/kvs_cupti_jsonXXXXXX";
    int fd = mkstemp(path);
    KVS_REQUIRE(fd >= 0);
    close(fd);
    KVS_REQUIRE(kvs_trace_write_json(&m, r, 4, path, NULL) == KVS_STATUS_OK);
    cJSON *sum;
    kvs_check_trace_valid(path, &sum);
    unlink(path);
    if (!sum)
        return;
    const cJSON *kern = cJSON_GetArrayItem(kvs_summary_array(sum, "kernels"), 0);
    KVS_REQUIRE(kern);
    KVS_CHECK_EQ_INT(kvs_summary_int(kern, "ext", -1), 9);
    KVS_CHECK_EQ_INT(kvs_summary_int(kern, "dur_ns", -1), 200000);
    KVS_CHECK_EQ_INT(kvs_summary_int(sum, "flows", -1), 1);
    cJSON_Delete(sum);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"kernel", test_kernel},
        {"memcpy_memset", test_memcpy_memset},
        {"api_sync_ext_overhead", test_api_sync_ext_overhead},
        {"to_json", test_to_json},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
