/* bench/cupti_idle.cu — what a process pays a launch while CUPTI is attached
 * but records nothing: the state of a `kvscope capture --window
 * cudaProfilerStart` process outside its window, piece by piece. Such a
 * state lasts as long as the process, so it cannot be paired with plain
 * launches inside one process (bench/cupti_cost.cu's method): each STATE
 * runs in a process of its own, and bench/capture_idle.sh runs them in
 * turn with bare processes between them, many times.
 *
 *   cupti_idle --state STATE [--label L] [--rounds R] [--launches N] [--window-once]
 *
 * States (cumulative where said):
 *   bare          no CUPTI call at all
 *   sub           cuptiSubscribe, no callback enabled
 *   sub+act       sub + activity buffer callbacks, timestamp callback,
 *                 zeroed-buffer attribute (what kvscope sets at creation;
 *                 no activity kind enabled)
 *   drvstart      sub+act + a callback on the driver's cuProfilerStart: what
 *                 starts kvscope's window now (closed-new adds only rare
 *                 calls to it)
 *   rtstart       sub+act + a callback on the runtime's cudaProfilerStart
 *   rec-rt        sub+act + callbacks on every runtime call kvscope's
 *                 default records (kvs_trace_api_recorded), no kind: what a
 *                 runtime callback costs the calls it is not on
 *   rec-drv       the same, driver calls
 *   closed-old    kvscope's closed window before: sub+act, the NVTX
 *                 domain, the resource callbacks (context created, graph
 *                 node created / cloned), the stream-capture begin/end calls
 *                 of both APIs, the four profiler start/stop calls
 *   closed-new    kvscope's closed window now: sub+act, the NVTX domain,
 *                 the same resource callbacks, the driver's stream-capture
 *                 begin/end calls and cuProfilerStart (no runtime callback)
 *   after-K       sub+act; CONCURRENT_KERNEL records on for a warm loop of
 *                 each kind, then off and flushed
 *   after-def     closed-old; kvscope's default window on for a warm loop of
 *                 each kind (kinds kernel, memcpy, memset, sync, extcorr,
 *                 overhead; callbacks on every call kvs_trace_api_recorded
 *                 names, less the runtime's kernel launches), then off and
 *                 flushed, as kvscope left it between windows before
 *   detached      after-def, then CUPTI detached: cuptiFinalize at the exit
 *                 of a driver call, after a forced flush, as cupti.h says
 *   re-attached   detached, then drvstart's subscription again
 *   reattach-cb   after-def, then detached and drvstart's subscription made
 *                 again inside the same callback, after cuptiFinalize
 *   reattach-thread  the same, made by another thread while the callback
 *                 waits for it (up to 2 s)
 *   reattach-sync after-def, the context's GPU work waited for inside the
 *                 callback (cuCtxSynchronize), detached there, drvstart's
 *                 subscription made again after the call returned
 *   reattach-own  after-def, then what kvscope does between windows: the
 *                 program's thread out of every CUDA call (waiting), a thread
 *                 of its own waits for the GPU (every active primary
 *                 context), flushes, finalizes CUPTI and subscribes again at
 *                 once to kvscope's closed set (closed-new + cuProfilerStop)
 *   reattach-own-busy  the same while the program's thread keeps launching
 *                 (the pytorch loop) until the other thread is done
 *   reattach-cs   kvscope's default: CUPTI finalized at the exit of the
 *                 program's next driver call (inside its callback, after the
 *                 GPU and a flush), a thread of its own attaching the closed
 *                 set again 1 ms after that callback has returned, while the
 *                 program's thread keeps launching
 * After a reattach-* state's measurement, kernel records are switched on for
 * 100 launches: RECORDS proc=L kernels=K want=100 says whether the CUPTI
 * attached again records, and CORR proc=L before_max=A after_min=B whether
 * it numbers correlation ids from 1 again (B <= A); DETACH proc=L
 * finalize_ms=F attach_ms=T how long the own thread's steps took.
 *   with:LIST     sub+act with the pieces of LIST on while measuring (what a
 *                 window costs, piece by piece)
 *   after:LIST    sub+act, the pieces of LIST on for a warm loop of each
 *                 kind, then off and flushed (what each leaves behind)
 * LIST: '+'-separated pieces of kvscope's default window: kernel, memcpy,
 * memset, sync, overhead, extcorr (CUPTI activity kinds), rtcb, drvcb
 * (callbacks, returning at once, on every runtime / driver call
 * kvs_trace_api_recorded names; rtcb less the runtime's kernel launches,
 * as kvscope's default), default (all of them).
 * --window-once: cudaProfilerStart, a warm loop of each kind,
 * cudaProfilerStop and 200 ms of sleep before measuring — run under
 * `kvscope capture --window cudaProfilerStart` with state bare, the process
 * is in kvscope's state between two windows (detached 20 ms after the close
 * with KVS_CAPTURE_DETACH=1); without --window-once, in its state before
 * the first.
 *
 * Loops, each measured once a round (the order turning each round; one
 * warm-up round first), host wall clock from the first launch to the
 * stream's completion:
 *   bare     N x one-element kernel launch
 *   pytorch  N x (5 cudaGetDevice, launch, cudaGetLastError): the runtime
 *            calls PyTorch makes around a launch
 *   driver   N x (3 cuCtxGetCurrent, launch): driver calls that launch nothing
 * Prints RESULT proc=L state=S loop=X round=R ns_per_launch=V per
 * measurement, then STATE proc=L state=S bare=.. pytorch=.. driver=..
 * (medians, ns a launch) and CHECK proc=L kernels=K want=W. Exit 77
 * without a GPU, 2 on bad arguments, 1 if a loop lost launches.
 */
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <pthread.h>

#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include "kvscope/trace.h" /* kvs_trace_api_recorded, kvs_trace_api_kernel_launch */

#include "cupti_bench.h" /* defines: CK, CU, one, now_ns, ts_cb */

// ---------------------------------------------------------------------------
// CUPTI set-up: buffers counted and dropped, a callback that does nothing
// unless a detach is asked for

static size_t g_records, g_kernel_records;
static uint32_t g_corr_max, g_corr_min = UINT32_MAX; /* of kernel records */
static void CUPTIAPI buf_req(uint8_t **b, size_t *size, size_t *maxr)
{
    *size = 8u << 20;
    *b = (uint8_t *)aligned_alloc(8, *size);
    *maxr = 0;
}
static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid)
{
    CUpti_Activity *r = nullptr;
    while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
        g_records++;
        if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            continue;
        g_kernel_records++;
        uint32_t c = ((const CUpti_ActivityKernel4 *)r)->correlationId;
        g_corr_max = c > g_corr_max ? c : g_corr_max;
        g_corr_min = c < g_corr_min ? c : g_corr_min;
    }
    free(b);
}

/* the next driver call's exit detaches CUPTI: 1 finalize; 2 and attach
 * again there; 3 and have the attach thread attach while waiting for it;
 * 4 wait for the GPU first (kvscope's way) */
static volatile int g_detach;
static int g_detached;
static std::atomic<int> g_cs_returned; /* reattach-cs: the finalizing callback is over */

/* the GPU work of the calling thread's context waited for, inside the
 * callback (the detach kvscope tried at 8d10f31 also waited for every active
 * primary context's) */
static void sync_contexts(void)
{
    typedef CUresult (*sync_fn)(void);
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuCtxSynchronize", &fn, 12000, cudaEnableDefault, &q) ==
            cudaSuccess && fn)
        ((sync_fn)fn)();
}
static void reattach(void);

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_attach_asked, g_attach_done;

static void *attach_thread(void *)
{
    pthread_mutex_lock(&g_mu);
    while (!g_attach_asked)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    reattach();
    pthread_mutex_lock(&g_mu);
    g_attach_done = 1;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    return nullptr;
}

static void CUPTIAPI on_cb(void *, CUpti_CallbackDomain dom, CUpti_CallbackId, const void *d)
{
    const CUpti_CallbackData *cd = (const CUpti_CallbackData *)d;
    if (g_detach && dom == CUPTI_CB_DOMAIN_DRIVER_API && cd->callbackSite == CUPTI_API_EXIT) {
        int mode = g_detach;
        g_detach = 0;
        if (mode == 4 || mode == 5)
            sync_contexts();
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        g_detached = cuptiFinalize() == CUPTI_SUCCESS;
        if (mode == 5) {
            g_cs_returned.store(1); /* (the callback's last step) */
            return;
        }
        if (mode == 2)
            reattach();
        if (mode == 3) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 2;
            pthread_mutex_lock(&g_mu);
            g_attach_asked = 1;
            pthread_cond_broadcast(&g_cv);
            while (!g_attach_done && pthread_cond_timedwait(&g_cv, &g_mu, &until) == 0)
                ;
            if (!g_attach_done)
                fprintf(stderr, "cupti_idle: the attach thread did not finish within 2 s\n");
            pthread_mutex_unlock(&g_mu);
        }
    }
}

static CUpti_SubscriberHandle g_sub;

static void subscribe_act(int act)
{
    CU(cuptiSubscribe(&g_sub, on_cb, nullptr));
    if (!act)
        return;
    CU(cuptiActivityRegisterTimestampCallback(ts_cb));
    uint8_t zeroed = 1;
    size_t zsize = sizeof zeroed;
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zsize, &zeroed);
    CU(cuptiActivityRegisterCallbacks(buf_req, buf_done));
}

static void cb(CUpti_CallbackDomain dom, CUpti_CallbackId id, int on)
{
    CU(cuptiEnableCallback((uint32_t)on, g_sub, dom, id));
}

/* drvstart's subscription, after a detach */
static void reattach(void)
{
    subscribe_act(1);
    cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, 1);
}

/* every call kvscope's default records, of one API (0 runtime, 1 driver),
 * less the runtime's kernel launches when skip_rt_launch */
static void recorded_calls(int d, int on, int skip_rt_launch)
{
    CUpti_CallbackDomain dom = d ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    uint32_t lim = d ? (uint32_t)CUPTI_DRIVER_TRACE_CBID_SIZE : (uint32_t)CUPTI_RUNTIME_TRACE_CBID_SIZE;
    for (uint32_t id = 1; id < lim; id++) {
        const char *nm = nullptr;
        if (cuptiGetCallbackName(dom, id, &nm) == CUPTI_SUCCESS && nm && kvs_trace_api_recorded(nm) &&
            !(skip_rt_launch && d == 0 && kvs_trace_api_kernel_launch(nm)))
            cuptiEnableCallback((uint32_t)on, g_sub, dom, id); /* some ids are holes */
    }
}

static const CUpti_CallbackId k_sc_drv[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,     CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,          CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz};
static const CUpti_CallbackId k_sc_rt[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000};

/* the NVTX domain and the resource callbacks kvscope keeps on */
static void nvtx_and_resources(void)
{
    CU(cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_NVTX));
    cb(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, 1);
    cb(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 1);
    cb(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, 1);
}

static void closed_old(void)
{
    subscribe_act(1);
    nvtx_and_resources();
    for (CUpti_CallbackId id : k_sc_drv)
        cb(CUPTI_CB_DOMAIN_DRIVER_API, id, 1);
    for (CUpti_CallbackId id : k_sc_rt)
        cb(CUPTI_CB_DOMAIN_RUNTIME_API, id, 1);
    cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, 1);
    cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 1);
    cb(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, 1);
    cb(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, 1);
}

/* kvscope's closed window after a detach: closed-new and cuProfilerStop */
static void reattach_closed(void)
{
    subscribe_act(1);
    nvtx_and_resources();
    for (CUpti_CallbackId id : k_sc_drv)
        cb(CUPTI_CB_DOMAIN_DRIVER_API, id, 1);
    cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 1);
    cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, 1);
}

/* reattach-own*: the own thread's work, and whether the program's thread
 * launches meanwhile */
static double g_finalize_ms, g_attach_ms;
static std::atomic<int> g_own_done;
/* reattach-cs: the own thread attaches once the finalizing callback is over */
static void *cs_thread(void *)
{
    while (!g_cs_returned.load())
        sched_yield();
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, nullptr);
    int64_t t1 = now_ns();
    reattach_closed();
    g_attach_ms = (double)(now_ns() - t1) / 1e6;
    g_own_done.store(1);
    return nullptr;
}

static void *own_thread(void *)
{
    int64_t t0 = now_ns();
    CK(cudaDeviceSynchronize()); /* kvscope: every active primary context */
    CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    g_detached = cuptiFinalize() == CUPTI_SUCCESS;
    int64_t t1 = now_ns();
    if (g_detached)
        reattach_closed();
    g_finalize_ms = (double)(t1 - t0) / 1e6;
    g_attach_ms = (double)(now_ns() - t1) / 1e6;
    g_own_done.store(1);
    return nullptr;
}

static const CUpti_ActivityKind k_default_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_OVERHEAD};

// ---------------------------------------------------------------------------
// the loops

static long g_busy_launches; /* launched by reattach-own-busy while detaching */
typedef CUresult (*ctx_get_fn)(CUcontext *);
static ctx_get_fn g_ctx_get;

enum { L_BARE, L_PYTORCH, L_DRIVER, NLOOP };
static const char *const k_loop[NLOOP] = {"bare", "pytorch", "driver"};

/* ns a launch of one loop */
static double run_loop(int loop, int n, int *d, cudaStream_t s)
{
    CK(cudaStreamSynchronize(s));
    int64_t t0 = now_ns();
    int dev = 0;
    CUcontext ctx;
    for (int i = 0; i < n; i++) {
        if (loop == L_PYTORCH)
            for (int j = 0; j < 5; j++)
                cudaGetDevice(&dev);
        else if (loop == L_DRIVER)
            for (int j = 0; j < 3; j++)
                g_ctx_get(&ctx);
        one<<<1, 1, 0, s>>>(d);
        if (loop == L_PYTORCH)
            (void)cudaGetLastError();
    }
    CK(cudaStreamSynchronize(s));
    return (double)(now_ns() - t0) / n;
}

static void warm_loops(int n, int *d, cudaStream_t s)
{
    for (int l = 0; l < NLOOP; l++)
        run_loop(l, n, d, s);
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* the pieces of with:/after: lists */
enum { P_KERNEL = 1, P_MEMCPY = 2, P_MEMSET = 4, P_SYNC = 8, P_OVERHEAD = 16, P_EXTCORR = 32,
       P_RTCB = 64, P_DRVCB = 128, P_DEFAULT = 255 };
static const struct {
    const char *name;
    unsigned bit;
    CUpti_ActivityKind kind; /* CUPTI_ACTIVITY_KIND_INVALID: callbacks */
} k_pieces[] = {
    {"kernel", P_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
    {"memcpy", P_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY},
    {"memset", P_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET},
    {"sync", P_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
    {"overhead", P_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD},
    {"extcorr", P_EXTCORR, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION},
    {"rtcb", P_RTCB, CUPTI_ACTIVITY_KIND_INVALID},
    {"drvcb", P_DRVCB, CUPTI_ACTIVITY_KIND_INVALID},
    {"default", P_DEFAULT, CUPTI_ACTIVITY_KIND_INVALID},
};

/* "kernel+sync" -> bits; 0 if a piece is unknown */
static unsigned parse_pieces(const std::string &list)
{
    unsigned bits = 0;
    for (size_t p = 0; p <= list.size();) {
        size_t q = list.find('+', p);
        if (q == std::string::npos)
            q = list.size();
        std::string nm = list.substr(p, q - p);
        unsigned b = 0;
        for (const auto &x : k_pieces)
            if (nm == x.name)
                b = x.bit;
        if (!b)
            return 0;
        bits |= b;
        p = q + 1;
    }
    return bits;
}

static void set_pieces(unsigned bits, int on)
{
    for (const auto &x : k_pieces) {
        if (!(bits & x.bit) || x.kind == CUPTI_ACTIVITY_KIND_INVALID)
            continue;
        if (on)
            CU(cuptiActivityEnable(x.kind));
        else
            CU(cuptiActivityDisable(x.kind));
    }
    if (bits & P_RTCB)
        recorded_calls(0, on, 1);
    if (bits & P_DRVCB)
        recorded_calls(1, on, 0);
}

static const char *const k_states[] = {"bare",       "sub",        "sub+act", "drvstart",
                                       "rtstart",    "rec-rt",     "rec-drv", "closed-old",
                                       "closed-new", "after-K",    "after-def", "detached",
                                       "re-attached", "reattach-cb", "reattach-thread",
                                       "reattach-sync", "reattach-own", "reattach-own-busy",
                                       "reattach-cs"};

static int usage(const char *argv0)
{
    fprintf(stderr, "usage: %s --state STATE [--label L] [--rounds R] [--launches N] "
                    "[--window-once]\nstates:", argv0);
    for (const char *s : k_states)
        fprintf(stderr, " %s", s);
    fprintf(stderr, " with:LIST after:LIST\nLIST: '+'-separated of:");
    for (const auto &x : k_pieces)
        fprintf(stderr, " %s", x.name);
    fprintf(stderr, "\n");
    return 2;
}

/* Puts the process in state st (after CUDA is up: d, s are live). */
/* the detach states' end: the own thread joined, the detach checked, its DETACH line */
static void detach_done(pthread_t own, const std::string &st, long busy)
{
    pthread_join(own, nullptr);
    g_busy_launches = busy;
    if (!g_detached) {
        fprintf(stderr, "cupti_idle: cuptiFinalize did not succeed\n");
        exit(1);
    }
    printf("DETACH state=%s finalize_ms=%.3f attach_ms=%.3f launches_meanwhile=%ld\n", st.c_str(), g_finalize_ms,
           g_attach_ms, busy);
}

static void enter_state(const std::string &st, int n, int *d, cudaStream_t s)
{
    if (st == "bare")
        return;
    if (st == "sub") {
        subscribe_act(0);
        return;
    }
    int reatt = !st.compare(0, 9, "reattach-");
    if (st == "closed-old" || st == "after-def" || st == "detached" || st == "re-attached" || reatt) {
        closed_old();
        if (st == "closed-old")
            return;
        /* kvscope's default window, then off (the old closed state stays) */
        recorded_calls(1, 1, 0);
        recorded_calls(0, 1, 1);
        for (CUpti_ActivityKind k : k_default_kinds)
            CU(cuptiActivityEnable(k));
        warm_loops(n, d, s);
        for (CUpti_ActivityKind k : k_default_kinds)
            CU(cuptiActivityDisable(k));
        recorded_calls(0, 0, 1);
        recorded_calls(1, 0, 0);
        for (CUpti_CallbackId id : k_sc_drv) /* capture_api.c left these on */
            cb(CUPTI_CB_DOMAIN_DRIVER_API, id, 1);
        for (CUpti_CallbackId id : k_sc_rt)
            cb(CUPTI_CB_DOMAIN_RUNTIME_API, id, 1);
        CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        if (st == "after-def")
            return;
        if (st == "reattach-cs") {
            pthread_t own;
            if (pthread_create(&own, nullptr, cs_thread, nullptr) != 0) {
                fprintf(stderr, "cupti_idle: no own thread\n");
                exit(1);
            }
            g_detach = 5; /* at the exit of the next driver call, which has a callback */
            cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 1);
            int64_t t0 = now_ns();
            CUcontext ctx;
            g_ctx_get(&ctx);
            g_finalize_ms = (double)(now_ns() - t0) / 1e6;
            long busy = 0;
            while (!g_own_done.load()) {
                run_loop(L_PYTORCH, 100, d, s);
                busy += 100;
            }
            detach_done(own, st, busy);
            return;
        }
        if (st == "reattach-own" || st == "reattach-own-busy") {
            CK(cudaStreamSynchronize(s));
            pthread_t own;
            if (pthread_create(&own, nullptr, own_thread, nullptr) != 0) {
                fprintf(stderr, "cupti_idle: no own thread\n");
                exit(1);
            }
            long busy = 0;
            while (st == "reattach-own-busy" && !g_own_done.load()) {
                run_loop(L_PYTORCH, 100, d, s);
                busy += 100;
            }
            detach_done(own, st, busy);
            return;
        }
        pthread_t th;
        if (st == "reattach-thread" && pthread_create(&th, nullptr, attach_thread, nullptr) != 0) {
            fprintf(stderr, "cupti_idle: no attach thread\n");
            exit(1);
        }
        /* at the exit of the next driver call, which has a callback */
        g_detach = st == "reattach-cb" ? 2 : st == "reattach-thread" ? 3 : st == "reattach-sync" ? 4 : 1;
        CUcontext ctx;
        cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 1);
        g_ctx_get(&ctx);
        if (!g_detached) {
            fprintf(stderr, "cupti_idle: cuptiFinalize did not succeed\n");
            exit(1);
        }
        if (st == "detached" || st == "reattach-cb" || st == "reattach-thread")
            return;
        reattach();
        return;
    }
    subscribe_act(1);
    if (!st.compare(0, 5, "with:")) {
        set_pieces(parse_pieces(st.substr(5)), 1);
        return;
    }
    if (!st.compare(0, 6, "after:")) {
        unsigned bits = parse_pieces(st.substr(6));
        set_pieces(bits, 1);
        warm_loops(n, d, s);
        set_pieces(bits, 0);
        CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        return;
    }
    if (st == "drvstart")
        cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, 1);
    else if (st == "rtstart")
        cb(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, 1);
    else if (st == "rec-rt")
        recorded_calls(0, 1, 0);
    else if (st == "rec-drv")
        recorded_calls(1, 1, 0);
    else if (st == "closed-new") {
        nvtx_and_resources();
        for (CUpti_CallbackId id : k_sc_drv)
            cb(CUPTI_CB_DOMAIN_DRIVER_API, id, 1);
        cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, 1);
    } else if (st == "after-K") {
        CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        warm_loops(n, d, s);
        CU(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    }
}

int main(int argc, char **argv)
{
    std::string state, label = "idle";
    int n = 1000, rounds = 10, window_once = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--state") && i + 1 < argc)
            state = argv[++i];
        else if (!strcmp(argv[i], "--label") && i + 1 < argc)
            label = argv[++i];
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--launches") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--window-once"))
            window_once = 1;
        else
            return usage(argv[0]);
    }
    int known = 0;
    for (const char *s : k_states)
        known |= state == s;
    if (!state.compare(0, 5, "with:"))
        known = parse_pieces(state.substr(5)) != 0;
    else if (!state.compare(0, 6, "after:"))
        known = parse_pieces(state.substr(6)) != 0;
    if (!known || n < 100 || rounds < 1)
        return usage(argv[0]);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "no GPU\n");
        return 77;
    }
    int *d = nullptr;
    cudaStream_t s;
    CK(cudaMalloc(&d, sizeof(int)));
    CK(cudaMemset(d, 0, sizeof(int)));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaDriverEntryPointQueryResult q;
    void *fn = nullptr;
    CK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q));
    if (!fn || q != cudaDriverEntryPointSuccess) {
        fprintf(stderr, "cupti_idle: no cuCtxGetCurrent entry point\n");
        return 1;
    }
    g_ctx_get = (ctx_get_fn)fn;
    CK(cudaDeviceSynchronize());

    long kernels = 0; /* launches made, to check against the counter */
    enter_state(state, n, d, s);
    kernels += g_busy_launches;
    if (state == "after-K" || state == "after-def" || state == "detached" ||
        state == "re-attached" || !state.compare(0, 6, "after:") || !state.compare(0, 9, "reattach-"))
        kernels += NLOOP * (long)n;
    if (window_once) {
        CK(cudaProfilerStart());
        warm_loops(n, d, s);
        CK(cudaProfilerStop());
        kernels += NLOOP * (long)n;
        struct timespec settle = {0, 200 * 1000000L}; /* kvscope's detach: 20 ms after */
        nanosleep(&settle, nullptr);
    }
    std::vector<double> ns[NLOOP];
    for (int r = 0; r <= rounds; r++) { /* r == 0: warm-up */
        for (int k = 0; k < NLOOP; k++) {
            int l = (k + r) % NLOOP;
            double v = run_loop(l, n, d, s);
            kernels += n;
            if (r == 0)
                continue;
            ns[l].push_back(v);
            printf("RESULT proc=%s state=%s loop=%s round=%d ns_per_launch=%.1f\n", label.c_str(),
                   state.c_str(), k_loop[l], r, v);
        }
    }
    if (!state.compare(0, 9, "reattach-")) { /* does the CUPTI attached again record? */
        CK(cudaDeviceSynchronize());
        uint32_t before_max = g_corr_max;
        g_corr_min = UINT32_MAX;
        g_kernel_records = 0;
        CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        for (int i = 0; i < 100; i++)
            one<<<1, 1, 0, s>>>(d);
        kernels += 100;
        CK(cudaDeviceSynchronize());
        CU(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        printf("RECORDS proc=%s state=%s kernels=%zu want=100\n", label.c_str(), state.c_str(),
               g_kernel_records);
        printf("CORR proc=%s state=%s before_max=%u after_min=%u\n", label.c_str(), state.c_str(),
               before_max, g_corr_min);
    }
    int got = 0;
    CK(cudaMemcpy(&got, d, sizeof got, cudaMemcpyDeviceToHost));
    printf("STATE proc=%s state=%s window_once=%d bare=%.1f pytorch=%.1f driver=%.1f\n",
           label.c_str(), state.c_str(), window_once, median(ns[L_BARE]), median(ns[L_PYTORCH]),
           median(ns[L_DRIVER]));
    printf("CHECK proc=%s kernels=%d want=%ld\n", label.c_str(), got, kernels);
    return got == kernels ? 0 : 1;
}
