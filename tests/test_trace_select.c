/* tests/test_trace_select.c — one rank's records out of a capture of a
 * process that drove two GPUs from two threads (kvs_trace_select), the
 * rank's file: Kineto's "distributedInfo" with backend, rank and world size,
 * checked by Python's json module (tests/check_trace.py), and the rank's
 * file name (kvs_trace_rank_path). No GPU.
 *   meson test -C build test_trace_select
 */
#include <stdint.h>
#include <unistd.h>

#include "kvs_test.h"
#include "kvscope/trace_writer.h"
#include "trace_check.h"

#define PID 77u
#define MAIN_TID 100u  /* the controlling thread: waits, launches nothing */
#define RANK_TID(r) (200u + (r))
#define HELPER_TID 300u /* a library's helper thread (NCCL's proxy) */
#define CTX(dev) (10u + (dev))

static struct kvs_trace_rec host(enum kvs_trace_rec_kind k, const char *name, uint32_t tid,
                                 uint64_t ext)
{
    struct kvs_trace_rec r = {.kind = k, .start_ns = 1000, .end_ns = 2000, .name = name};
    r.u.host.pid = PID;
    r.u.host.tid = tid;
    r.u.host.external_id = ext;
    return r;
}

static struct kvs_trace_rec api(const char *name, uint32_t tid, uint32_t corr)
{
    struct kvs_trace_rec r = {.kind = KVS_TREC_RUNTIME, .correlation = corr, .start_ns = 1100,
                              .end_ns = 1200, .name = name};
    r.u.api.pid = PID;
    r.u.api.tid = tid;
    return r;
}

static struct kvs_trace_rec kernel(const char *name, uint32_t dev, uint32_t corr)
{
    struct kvs_trace_rec r = {.kind = KVS_TREC_KERNEL, .correlation = corr, .start_ns = 1300,
                              .end_ns = 1400, .name = name};
    r.u.gpu.device = dev;
    r.u.gpu.context = CTX(dev);
    r.u.gpu.stream = 7;
    return r;
}

static struct kvs_trace_rec link_ext(uint32_t corr, uint64_t ext)
{
    struct kvs_trace_rec r = {.kind = KVS_TREC_EXTERNAL_ID, .correlation = corr};
    r.u.external_id = ext;
    return r;
}

static struct kvs_trace_rec sync_on(uint32_t ctx, uint32_t corr)
{
    struct kvs_trace_rec r = {.kind = KVS_TREC_SYNC, .correlation = corr, .start_ns = 1500,
                              .end_ns = 1600, .name = "Event Sync"};
    r.u.sync.context = ctx;
    r.u.sync.stream = 7;
    r.u.sync.event_id = -1;
    return r;
}

/* Per rank r on device r, thread RANK_TID(r): a step range, an op (ext
 * 10+r) launching a GEMM (corr 20+r) and an all-reduce (corr 30+r), an
 * event sync (corr 40+r). The helper thread launches a kernel on device 1
 * (corr 50) and makes a call that launches nothing (corr 51); the main
 * thread makes one call (corr 60); a sync on a context without recorded
 * work (corr 61, made by rank 0's thread); CUPTI overhead. */
static size_t make(struct kvs_trace_rec *r)
{
    size_t n = 0;
    for (uint32_t k = 0; k < 2; k++) {
        r[n++] = host(KVS_TREC_RANGE, k ? "ProfilerStep#0 r1" : "ProfilerStep#0 r0", RANK_TID(k),
                      0);
        r[n++] = host(KVS_TREC_OP, "kvs::all_reduce", RANK_TID(k), 10 + k);
        r[n++] = api("cudaLaunchKernel", RANK_TID(k), 20 + k);
        r[n++] = link_ext(20 + k, 10 + k);
        r[n++] = kernel("gemm", k, 20 + k);
        r[n++] = api("cuLaunchKernelEx", RANK_TID(k), 30 + k);
        r[n++] = link_ext(30 + k, 10 + k);
        r[n++] = kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", k, 30 + k);
        r[n++] = api("cudaEventSynchronize", RANK_TID(k), 40 + k);
        r[n++] = sync_on(CTX(k), 40 + k);
    }
    r[n++] = api("cudaLaunchKernel", HELPER_TID, 50);
    r[n++] = kernel("helper_kernel", 1, 50);
    r[n++] = api("cudaEventQuery", HELPER_TID, 51);
    r[n++] = api("cudaSetDevice", MAIN_TID, 60);
    r[n++] = api("cudaStreamSynchronize", RANK_TID(0), 61);
    r[n++] = sync_on(99, 61);
    r[n++] = (struct kvs_trace_rec){.kind = KVS_TREC_OVERHEAD, .start_ns = 900, .end_ns = 950,
                                    .name = "Activity Buffer Request"};
    return n;
}

static int has(const struct kvs_trace_rec *r, size_t n, enum kvs_trace_rec_kind k,
               const char *name, uint32_t corr)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].kind == k && (!name || (r[i].name && !strcmp(r[i].name, name))) &&
            (!corr || r[i].correlation == corr))
            return 1;
    return 0;
}

static void test_rank_share(void)
{
    struct kvs_trace_rec all[64], r[64];
    size_t n = make(all);
    for (int rank = 0; rank < 2; rank++) {
        memcpy(r, all, n * sizeof *r);
        uint32_t tid = RANK_TID(rank);
        struct kvs_trace_part p = {.device = rank, .tids = &tid, .ntids = 1,
                                   .process_records = rank == 0, .rank = rank, .world_size = 2};
        size_t k = kvs_trace_select(r, n, &p);
        KVS_REQUIRE(k != (size_t)-1 && k <= n);
        /* own work and calls, none of the other rank's */
        KVS_CHECK(has(r, k, KVS_TREC_KERNEL, "gemm", 20 + rank));
        KVS_CHECK(has(r, k, KVS_TREC_KERNEL, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 30 + rank));
        KVS_CHECK(!has(r, k, KVS_TREC_KERNEL, NULL, 20 + (1 - rank)));
        KVS_CHECK(!has(r, k, KVS_TREC_KERNEL, NULL, 30 + (1 - rank)));
        KVS_CHECK(has(r, k, KVS_TREC_RUNTIME, "cuLaunchKernelEx", 30 + rank));
        KVS_CHECK(!has(r, k, KVS_TREC_RUNTIME, NULL, 30 + (1 - rank)));
        KVS_CHECK(has(r, k, KVS_TREC_EXTERNAL_ID, NULL, 20 + rank));
        KVS_CHECK(!has(r, k, KVS_TREC_EXTERNAL_ID, NULL, 20 + (1 - rank)));
        KVS_CHECK(has(r, k, KVS_TREC_OP, "kvs::all_reduce", 0));
        KVS_CHECK(has(r, k, KVS_TREC_RANGE, rank ? "ProfilerStep#0 r1" : "ProfilerStep#0 r0", 0));
        KVS_CHECK(!has(r, k, KVS_TREC_RANGE, rank ? "ProfilerStep#0 r0" : "ProfilerStep#0 r1", 0));
        /* a sync by the context of its device */
        KVS_CHECK(has(r, k, KVS_TREC_SYNC, NULL, 40 + rank));
        KVS_CHECK(!has(r, k, KVS_TREC_SYNC, NULL, 40 + (1 - rank)));
        /* the helper's launch on device 1 belongs to rank 1, its idle call to nobody */
        KVS_CHECK_EQ_INT(has(r, k, KVS_TREC_KERNEL, "helper_kernel", 50), rank == 1);
        KVS_CHECK_EQ_INT(has(r, k, KVS_TREC_RUNTIME, NULL, 50), rank == 1);
        KVS_CHECK(!has(r, k, KVS_TREC_RUNTIME, NULL, 51));
        KVS_CHECK(!has(r, k, KVS_TREC_RUNTIME, NULL, 60));
        /* a sync on an unknown context follows its call's thread */
        KVS_CHECK_EQ_INT(has(r, k, KVS_TREC_SYNC, NULL, 61), rank == 0);
        KVS_CHECK_EQ_INT(has(r, k, KVS_TREC_OVERHEAD, NULL, 0), rank == 0);
        /* 10 of its own; rank 0: + the call and sync of corr 61, the overhead;
         * rank 1: + the helper's call and kernel */
        size_t want = rank == 0 ? 13 : 12;
        KVS_CHECK_MSG(k == want, "rank %d kept %zu, want %zu", rank, k, want);
    }
    memcpy(r, all, n * sizeof *r);
    struct kvs_trace_part everything = {.device = -1, .process_records = 1, .rank = -1};
    KVS_CHECK_EQ_INT(kvs_trace_select(r, n, &everything), n);
    KVS_CHECK_EQ_INT(kvs_trace_select(r, n, NULL), n);
}

static void test_rank_file(void)
{
    struct kvs_trace_rec r[64];
    size_t n = make(r);
    uint32_t tid = RANK_TID(1);
    struct kvs_trace_part p = {.device = 1, .tids = &tid, .ntids = 1, .rank = 1, .world_size = 2,
                               .backend = "nccl"};
    n = kvs_trace_select(r, n, &p);
    KVS_REQUIRE(n != (size_t)-1);
    struct kvs_trace_meta m;
    kvs_trace_meta_init(&m);
    m.pid = PID;
    m.rank = p.rank;
    m.world_size = p.world_size;
    m.backend = p.backend;
    m.window_start_ns = 0, m.window_end_ns = 5000;
    char path[] = "/tmp/kvs_select_rankXXXXXX";
    int fd = mkstemp(path);
    KVS_REQUIRE(fd >= 0);
    close(fd);
    KVS_REQUIRE(kvs_trace_write_json(&m, r, n, path, NULL) == KVS_STATUS_OK);
    cJSON *sum;
    kvs_check_trace_valid(path, &sum);
    unlink(path);
    if (!sum)
        return;
    const cJSON *di = cJSON_GetObjectItemCaseSensitive(sum, "distributedInfo");
    KVS_REQUIRE(cJSON_IsObject(di));
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(di, "backend");
    KVS_CHECK(cJSON_IsString(be) && !strcmp(be->valuestring, "nccl"));
    KVS_CHECK_EQ_INT(kvs_summary_int(di, "rank", -1), 1);
    KVS_CHECK_EQ_INT(kvs_summary_int(di, "world_size", -1), 2);
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(sum, "kvscope");
    KVS_CHECK_EQ_INT(kvs_summary_int(kv, "rank", -1), 1);
    KVS_CHECK_EQ_INT(kvs_summary_int(kv, "world_size", -1), 2);
    /* three kernels on device 1: gemm, all-reduce, the helper's */
    const cJSON *ks = kvs_summary_array(sum, "kernels");
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(ks), 3);
    cJSON_Delete(sum);
}

static void test_rank_path(void)
{
    static const struct {
        const char *path;
        int rank, world;
        const char *want;
    } cases[] = {
        {"full.json", 3, 8, "full.rank3.json"},
        {"out/full.json.gz", 0, 2, "out/full.rank0.json.gz"},
        {"trace.gz", 1, 2, "trace.rank1.gz"},
        {"trace", 5, 8, "trace.rank5"},
        {"a.b/trace.json", 1, 4, "a.b/trace.rank1.json"},
        {"t.%r.json", 7, 8, "t.7.json"},
        {"r%r/t%r.json", 2, 4, "r2/t2.json"},
        {"t.%r.json", 0, 1, "t.0.json"},
        {"full.json", 0, 1, "full.json"}, /* one rank: the name as given */
        {"50%.json", 1, 2, "50%.rank1.json"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        KVS_CHECK(kvs_trace_rank_path(cases[i].path, cases[i].rank, cases[i].world, out,
                                      sizeof out) == 0);
        KVS_CHECK_EQ_STR(out, cases[i].want);
    }
    KVS_CHECK(kvs_trace_rank_path("full.json", 3, 8, out, 10) == -1);
    KVS_CHECK(kvs_trace_rank_path("full.json", 3, 8, out, 16) == 0); /* exactly fits */
    KVS_CHECK_EQ_STR(out, "full.rank3.json");
    KVS_CHECK(kvs_trace_rank_path("t%r", 12345, 2, out, 4) == -1);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"rank_path", test_rank_path},
        {"rank_share", test_rank_share},
        {"rank_file", test_rank_file},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
