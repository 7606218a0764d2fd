/* tests/test_capture_api.c — libtrace/capture_api.c, the default capture's
 * API calls recorded by CUPTI callbacks, driven with fake callback data
 * (CUPTI headers only: the few CUPTI functions it calls are stubbed here,
 * no libcupti, no GPU): which calls get a callback, enter/exit pairing,
 * the runtime's inner driver call, calls open across a window, the nesting
 * depth and the memory budget (dropped and counted), the op's External id
 * as a link record, and what collect hands the writer.
 *   meson test -C build test_capture_api
 */
#include "capture_internal.h"
#include "kvs_test.h"

// ----------------------------------------------------------------------------
// stubs: the clock, the thread, the op open on it, and CUPTI

static int64_t g_now = 1000;
int64_t kvs_now_ns(void) { return g_now += 10; }
uint32_t kvs_gettid(void) { return 4242; }
static uint64_t g_op;
uint64_t kvs_capture_current_op(const struct kvs_trace *t)
{
    (void)t;
    return g_op;
}
int kvs_capture_stream_capture_cbid(int driver, CUpti_CallbackId cbid)
{
    return (!driver && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000) ||
                   (driver && cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2)
               ? 1
               : -1;
}

static const char *fake_name(int driver, CUpti_CallbackId cbid)
{
    if (driver)
        return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ? "cuLaunchKernel"
               : cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent ? "cuCtxGetCurrent"
               : cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2 ? "cuStreamBeginCapture_v2"
                                                                 : NULL;
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: return "cudaLaunchKernel_v7000";
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020: return "cudaGetDevice_v3020";
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: return "cudaMemcpyAsync_v3020";
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
        return "cudaStreamBeginCapture_v10000";
    default: return NULL;
    }
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain dom, uint32_t cbid, const char **name)
{
    *name = fake_name(dom == CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

static int g_enabled[2][1024]; /* callbacks on, by the stub's account */
static int g_refuse;
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle sub,
                                         CUpti_CallbackDomain dom, CUpti_CallbackId cbid)
{
    (void)sub;
    if (g_refuse)
        return CUPTI_ERROR_NOT_SUPPORTED;
    if (cbid < 1024)
        g_enabled[dom == CUPTI_CB_DOMAIN_DRIVER_API][cbid] = (int)on;
    return CUPTI_SUCCESS;
}

// ----------------------------------------------------------------------------

static struct kvs_trace *make(size_t buffer_bytes, unsigned max_buffers)
{
    struct kvs_trace *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    static uint64_t gen;
    t->gen = ++gen;
    t->pid = 77;
    t->cfg.buffer_bytes = buffer_bytes;
    t->cfg.max_buffers = max_buffers;
    atomic_store(&t->api_ext, 1);
    kvs_capture_api_init(t);
    return t;
}

static void drop(struct kvs_trace *t)
{
    kvs_capture_api_free(t);
    free(t);
}

static void call(struct kvs_trace *t, int driver, CUpti_CallbackId cbid, uint32_t corr, int site)
{
    CUpti_CallbackData cd;
    memset(&cd, 0, sizeof cd);
    cd.callbackSite = site ? CUPTI_API_EXIT : CUPTI_API_ENTER;
    cd.correlationId = corr;
    if (kvs_capture_api_wanted(t, driver, cbid))
        kvs_capture_api_callback(t, driver, cbid, &cd);
}

/* a runtime call (enter, exit) with a driver launch inside it (cbid dl) */
static void nested(struct kvs_trace *t, CUpti_CallbackId rt, uint32_t corr, uint32_t inner_corr)
{
    call(t, 0, rt, corr, 0);
    call(t, 1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, inner_corr, 0);
    call(t, 1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, inner_corr, 1);
    call(t, 0, rt, corr, 1);
}

static const char *name_of(void *user, int driver, uint32_t cbid)
{
    (void)user;
    return fake_name(driver, cbid);
}

static size_t collect(struct kvs_trace *t, struct kvs_trace_rec *out, size_t cap,
                      struct kvs_map *alias)
{
    int failed = 0;
    size_t n = kvs_capture_api_collect(t, out, cap, name_of, alias, &failed, NULL, 0);
    KVS_CHECK_EQ_INT(failed, 0);
    return n;
}

static void test_wanted_calls(void)
{
    struct kvs_trace *t = make(4u << 20, 4);
    KVS_REQUIRE(t);
    KVS_CHECK_EQ_INT(kvs_capture_api_enable(t, 0, 1), 0);
    KVS_CHECK_EQ_INT(kvs_capture_api_enable(t, 1, 1), 0);
    /* launches, copies, captures get a callback; cudaGetDevice and
     * cuCtxGetCurrent none (they cost nothing then) */
    KVS_CHECK(g_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000]);
    KVS_CHECK(g_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020]);
    KVS_CHECK(!g_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020]);
    KVS_CHECK(g_enabled[1][CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel]);
    KVS_CHECK(!g_enabled[1][CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent]);
    /* what the activity-record fallback turns off: the calls left out, not
     * the ids CUPTI has no call for */
    const uint8_t *calls = kvs_capture_api_calls(t, 0);
    KVS_REQUIRE(calls);
    KVS_CHECK_EQ_INT(calls[CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000], KVS_API_BY_DRIVER);
    KVS_CHECK_EQ_INT(calls[CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020], KVS_API_RECORDED);
    KVS_CHECK_EQ_INT(calls[CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020], KVS_API_LEFT_OUT);
    KVS_CHECK_EQ_INT(calls[CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020], 0);
    /* off: every runtime call (outside a window no runtime call
     * has a callback), every driver call but the stream-capture one, which
     * graphs need outside windows (the runtime's capture makes it) */
    KVS_CHECK(g_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000]);
    KVS_CHECK(g_enabled[1][CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2]);
    kvs_capture_api_enable(t, 0, 0);
    kvs_capture_api_enable(t, 1, 0);
    KVS_CHECK(!g_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000]);
    KVS_CHECK(!g_enabled[0][CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000]);
    KVS_CHECK(!g_enabled[1][CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel]);
    KVS_CHECK(g_enabled[1][CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2]);
    call(t, 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5, 0);
    call(t, 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5, 1);
    KVS_CHECK_EQ_INT(kvs_capture_api_count(t), 0); /* recording off: nothing kept */
    /* a CUPTI that refuses a callback: -1, and nothing recorded that way */
    g_refuse = 1;
    KVS_CHECK_EQ_INT(kvs_capture_api_enable(t, 0, 1), -1);
    g_refuse = 0;
    call(t, 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 6, 0);
    call(t, 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 6, 1);
    KVS_CHECK_EQ_INT(kvs_capture_api_count(t), 0);
    drop(t);
}

/* the default (driver calls recorded by callback): a runtime kernel launch
 * gets no callback, its driver launch is the record; asked for the runtime
 * alone (api_launch_by_driver 0) it is recorded as itself */
static void test_launch_by_driver(void)
{
    struct kvs_trace *t = make(4u << 20, 4);
    KVS_REQUIRE(t);
    const CUpti_CallbackId rl = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                           rc = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                           dl = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    const uint8_t *rt = kvs_capture_api_calls(t, 0), *drv = kvs_capture_api_calls(t, 1);
    KVS_REQUIRE(rt && drv);
    KVS_CHECK_EQ_INT(drv[dl], KVS_API_RECORDED); /* driver launches are never "by driver" */
    atomic_store(&t->api_launch_by_driver, 1);
    KVS_CHECK_EQ_INT(kvs_capture_api_enable(t, 1, 1), 0);
    KVS_CHECK_EQ_INT(kvs_capture_api_enable(t, 0, 1), 0);
    KVS_CHECK(!g_enabled[0][rl]);
    KVS_CHECK(!kvs_capture_api_wanted(t, 0, rl));
    KVS_CHECK(g_enabled[0][rc] && kvs_capture_api_wanted(t, 0, rc));
    KVS_CHECK(g_enabled[1][dl] && kvs_capture_api_wanted(t, 1, dl));
    /* cudaLaunchKernel -> cuLaunchKernel (same id): one driver record */
    nested(t, rl, 9, 9);
    /* cudaMemcpyAsync -> its inner driver call: one runtime record */
    nested(t, rc, 10, 10);
    struct kvs_trace_rec out[8];
    size_t n = collect(t, out, 8, NULL);
    KVS_CHECK_EQ_INT(n, 2);
    int saw_launch = 0, saw_copy = 0;
    for (size_t i = 0; i < n; i++) {
        saw_launch += out[i].kind == KVS_TREC_DRIVER && out[i].correlation == 9 &&
                      !strcmp(out[i].name, "cuLaunchKernel");
        saw_copy += out[i].kind == KVS_TREC_RUNTIME && out[i].correlation == 10;
    }
    KVS_CHECK_EQ_INT(saw_launch, 1);
    KVS_CHECK_EQ_INT(saw_copy, 1);
    /* off turns the launch's callback off too (on or not) */
    kvs_capture_api_enable(t, 0, 0);
    KVS_CHECK(!g_enabled[0][rl] && !g_enabled[0][rc]);
    /* the runtime asked for without the driver: the launch is its own record */
    atomic_store(&t->api_launch_by_driver, 0);
    KVS_CHECK_EQ_INT(kvs_capture_api_enable(t, 0, 1), 0);
    KVS_CHECK(g_enabled[0][rl] && kvs_capture_api_wanted(t, 0, rl));
    kvs_capture_api_enable(t, 0, 0);
    kvs_capture_api_enable(t, 1, 0);
    drop(t);
}

static void test_records(void)
{
    struct kvs_trace *t = make(4u << 20, 4);
    KVS_REQUIRE(t);
    KVS_REQUIRE(kvs_capture_api_enable(t, 0, 1) == 0 && kvs_capture_api_enable(t, 1, 1) == 0);
    const CUpti_CallbackId rl = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    const CUpti_CallbackId dl = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    /* 1: a runtime launch whose inner driver launch has the same id (the
     * H200's CUDA 13): one record */
    g_now = 1000;
    nested(t, rl, 10, 10);
    /* 2: inner driver call with its own id: a link 11 -> 12, no record */
    nested(t, rl, 12, 11);
    /* 3: a driver launch of its own (Triton, cuBLAS), inside op 9 */
    g_op = 9;
    call(t, 1, dl, 13, 0);
    call(t, 1, dl, 13, 1);
    g_op = 0;
    /* 4: an exit whose entry came before recording: no record */
    call(t, 0, rl, 14, 1);
    /* 5: a call not recorded (cudaGetDevice) makes nothing */
    call(t, 0, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 15, 0);
    call(t, 0, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 15, 1);
    KVS_CHECK_EQ_INT(kvs_capture_api_count(t), 4); /* 3 calls + 1 op link */
    struct kvs_trace_rec out[8];
    struct kvs_map alias;
    KVS_REQUIRE(kvs_map_init(&alias, 8) == 0);
    size_t n = collect(t, out, 8, &alias);
    KVS_CHECK_EQ_INT(n, 4);
    uint64_t to = 0;
    KVS_CHECK(kvs_map_get(&alias, 11, &to) && to == 12);
    KVS_CHECK_EQ_INT(alias.n, 1);
    kvs_map_free(&alias);
    int rt = 0, drv = 0, links = 0;
    for (size_t i = 0; i < n; i++) {
        const struct kvs_trace_rec *r = &out[i];
        if (r->kind == KVS_TREC_RUNTIME) {
            rt++;
            KVS_CHECK_EQ_STR(r->name, "cudaLaunchKernel_v7000");
            KVS_CHECK(r->correlation == 10 || r->correlation == 12);
            KVS_CHECK(r->end_ns > r->start_ns);
            KVS_CHECK_EQ_INT(r->u.api.tid, 4242);
            KVS_CHECK_EQ_INT(r->u.api.pid, 77);
            if (r->correlation == 10) /* enter at 1010, exit at 1020: the inner driver
                                       * call read no clock (it costs a launch nothing) */
                KVS_CHECK_EQ_INT(r->end_ns - r->start_ns, 10);
        } else if (r->kind == KVS_TREC_DRIVER) {
            drv++;
            KVS_CHECK_EQ_INT(r->correlation, 13);
            KVS_CHECK_EQ_STR(r->name, "cuLaunchKernel");
        } else if (r->kind == KVS_TREC_EXTERNAL_ID) {
            links++;
            KVS_CHECK_EQ_INT(r->correlation, 13);
            KVS_CHECK_EQ_INT(r->u.external_id, 9);
        }
    }
    KVS_CHECK_EQ_INT(rt, 2);
    KVS_CHECK_EQ_INT(drv, 1);
    KVS_CHECK_EQ_INT(links, 1);
    /* collect into less room than there is: never past cap */
    KVS_CHECK(collect(t, out, 2, NULL) <= 2);
    /* without extcorr on, no op link */
    atomic_store(&t->api_ext, 0);
    g_op = 9;
    call(t, 1, dl, 16, 0);
    call(t, 1, dl, 16, 1);
    g_op = 0;
    KVS_CHECK_EQ_INT(kvs_capture_api_count(t), 5);
    drop(t);
}

/* calls recorded under two CUPTI attachments (a detach between windows):
 * each carries its own, corr_range reports each one's ids, and collect adds
 * the offset given for its attachment to the call, its op link and its
 * inner-call alias alike */
static void test_attachments(void)
{
    struct kvs_trace *t = make(4u << 20, 4);
    KVS_REQUIRE(t);
    KVS_REQUIRE(kvs_capture_api_enable(t, 0, 1) == 0 && kvs_capture_api_enable(t, 1, 1) == 0);
    const CUpti_CallbackId rl = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    const CUpti_CallbackId dl = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    nested(t, rl, 5, 5);
    nested(t, rl, 7, 6);            /* alias 6 -> 7 */
    atomic_store(&t->attach_gen, 1); /* CUPTI attached again: ids from 1 */
    KVS_CHECK_EQ_INT(kvs_capture_api_enable(t, 1, 1), 0); /* the next window */
    g_op = 3;
    call(t, 1, dl, 2, 0);
    call(t, 1, dl, 2, 1);
    g_op = 0;
    nested(t, rl, 4, 3); /* alias 3 -> 4 */
    uint32_t lo[3], hi[3];
    kvs_capture_api_corr_range(t, 3, lo, hi);
    KVS_CHECK(lo[0] == 5 && hi[0] == 7);
    KVS_CHECK(lo[1] == 2 && hi[1] == 4);
    KVS_CHECK(lo[2] == UINT32_MAX && hi[2] == 0); /* nothing under it */
    const uint32_t off[2] = {0, 6}; /* what the writer gives: 2 + 6 = 8 > 7 */
    struct kvs_trace_rec out[8];
    struct kvs_map alias;
    KVS_REQUIRE(kvs_map_init(&alias, 8) == 0);
    int failed = 0;
    size_t n = kvs_capture_api_collect(t, out, 8, name_of, &alias, &failed, off, 2);
    KVS_CHECK_EQ_INT(failed, 0);
    KVS_CHECK_EQ_INT(n, 5); /* 4 calls + 1 op link */
    uint64_t to = 0;
    KVS_CHECK(kvs_map_get(&alias, 6, &to) && to == 7);
    KVS_CHECK(kvs_map_get(&alias, 9, &to) && to == 10);
    KVS_CHECK(!kvs_map_get(&alias, 3, &to));
    int seen[16] = {0};
    for (size_t i = 0; i < n; i++) {
        KVS_CHECK(out[i].correlation < 16);
        if (out[i].correlation < 16)
            seen[out[i].correlation] += out[i].kind == KVS_TREC_EXTERNAL_ID ? 100 : 1;
    }
    KVS_CHECK(seen[5] == 1 && seen[7] == 1); /* the first attachment's, as they were */
    KVS_CHECK(seen[8] == 101 && seen[10] == 1); /* the second's, moved past them */
    KVS_CHECK(!seen[2] && !seen[4]);
    kvs_map_free(&alias);
    drop(t);
}

static void test_windows_and_depth(void)
{
    struct kvs_trace *t = make(4u << 20, 4);
    KVS_REQUIRE(t);
    const CUpti_CallbackId rl = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    KVS_REQUIRE(kvs_capture_api_enable(t, 0, 1) == 0);
    /* a call entered, the window closes before its exit, and reopens */
    call(t, 0, rl, 20, 0);
    kvs_capture_api_enable(t, 0, 0);
    call(t, 0, rl, 20, 1);
    KVS_REQUIRE(kvs_capture_api_enable(t, 0, 1) == 0);
    /* the stale open call must not block later ones: 20 calls */
    for (uint32_t i = 0; i < 20; i++) {
        call(t, 0, rl, 100 + i, 0);
        call(t, 0, rl, 100 + i, 1);
    }
    KVS_CHECK_EQ_INT(kvs_capture_api_count(t), 20);
    KVS_CHECK_EQ_INT(atomic_load(&t->api_dropped), 0);
    /* recorded calls nested 10 deep (a callback launching from a copy's
     * host function...): the 2 beyond the depth kept are dropped, counted */
    for (uint32_t i = 0; i < 10; i++)
        call(t, 0, rl, 200 + i, 0);
    for (uint32_t i = 10; i-- > 0;)
        call(t, 0, rl, 200 + i, 1);
    KVS_CHECK_EQ_INT(kvs_capture_api_count(t), 28);
    KVS_CHECK_EQ_INT(atomic_load(&t->api_dropped), 2);
    /* another window fills the thread's chunk on, not a new one (a window
     * a step would spend the budget on part-filled chunks) */
    kvs_capture_api_enable(t, 0, 0);
    KVS_REQUIRE(kvs_capture_api_enable(t, 0, 1) == 0);
    call(t, 0, rl, 300, 0);
    call(t, 0, rl, 300, 1);
    KVS_CHECK_EQ_INT(kvs_capture_api_count(t), 29);
    KVS_CHECK_EQ_INT(t->api_nchunks, 1);
    drop(t);
}

static void test_budget(void)
{
    /* the smallest budget: one chunk; the calls beyond it are counted */
    struct kvs_trace *t = make(64u << 10, 1);
    KVS_REQUIRE(t);
    KVS_CHECK_EQ_INT(t->api_max_chunks, 1);
    const CUpti_CallbackId rl = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    KVS_REQUIRE(kvs_capture_api_enable(t, 0, 1) == 0);
    for (uint32_t i = 1; i <= 5000; i++) {
        call(t, 0, rl, i, 0);
        call(t, 0, rl, i, 1);
    }
    size_t kept = kvs_capture_api_count(t);
    KVS_CHECK(kept > 1000 && kept < 5000);
    KVS_CHECK_EQ_INT(kept + atomic_load(&t->api_dropped), 5000);
    /* the records kept are the first ones, in order, none torn */
    struct kvs_trace_rec *out = calloc(kept, sizeof *out);
    KVS_REQUIRE(out);
    size_t n = collect(t, out, kept, NULL);
    KVS_CHECK_EQ_INT(n, kept);
    for (size_t i = 0; i < n; i++)
        KVS_CHECK_EQ_INT(out[i].correlation, i + 1);
    free(out);
    drop(t);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {{"wanted_calls", test_wanted_calls},
                                            {"launch_by_driver", test_launch_by_driver},
                                            {"records", test_records},
                                            {"attachments", test_attachments},
                                            {"windows_and_depth", test_windows_and_depth},
                                            {"budget", test_budget},
                                            {0}};
    return kvs_test_main(argc, argv, tests);
}
