/* bench/cupti_cost.cu — where a kernel launch's cost goes under CUPTI,
 * measured inside ONE process. Each configuration below is
 * switched on, a loop of N one-element kernel launches is timed on the host
 * (first launch to the stream's completion), and the configuration is
 * switched off again; every round visits every configuration in a turned
 * order, so drift in the machine hits all alike. Two loops:
 *   bare      N x cudaLaunchKernel
 *   pytorch   N x (5 cudaGetDevice, cudaLaunchKernel, cudaGetLastError):
 *             the calls PyTorch makes around each launch (a decode trace
 *             recorded 264,375 cudaGetDevice and 54,913 cudaGetLastError for
 *             50,940 launches)
 * Configurations (CUPTI activity kinds, callbacks):
 *   plain       subscribed, nothing enabled
 *   K           CONCURRENT_KERNEL records (what GPU-only capture costs)
 *   K+R         + RUNTIME records of every runtime call
 *   K+Rsel      + RUNTIME records of the launch call alone
 *               (cuptiActivityEnableRuntimeApi(cbid, 1), kind off)
 *   K+Roff      + RUNTIME kind on, then every call but the launch turned
 *               off (kvscope's default filter until this bench)
 *   K+D         + DRIVER records of every driver call
 *   K+cb0       + a CUPTI callback on the launch calls, empty
 *   K+cb        + a callback on the launch calls that keeps (correlation id,
 *               enter and exit times) in a per-thread array
 *   K+cbRD      + the same callback on the runtime's and the driver's
 *               launch calls (cuLaunchKernel*), as a capture of both APIs
 *   K+cbR       + the same callback on every runtime call kvscope's default
 *               records (kvs_trace_api_recorded: ~100s of ids), as
 *               capture_api.c enables them
 *   K+cbD       the same, driver calls
 *   K+cbAll     the same, both APIs (what the default enabled until the
 *               runtime's kernel launches were recorded by their driver call)
 *   K+cbDef     K+cbAll less the runtime's kernel launches
 *               (kvs_trace_api_kernel_launch): what the default enables
 *   K+X         + EXTERNAL_CORRELATION with an id pushed around the loop
 *   K+cb+X      K+cb and K+X
 *   kvs         kvscope's own capture, linked (kvs_trace_create/start
 *               before, stop/free after; cupti_cost's subscriber steps
 *               aside: CUPTI takes one), default activities
 *   kvs-rt      the same without the driver activity
 *   kvs-drv     the same without the runtime activity
 *   kvs-gpu     kernel,memcpy,memset,extcorr,nvtx (kvscope's GPU-only)
 * kvs against K+cbDef (with --ts-callback --like-capture: CUPTI set up as
 * kvscope sets it up) is what kvscope's own handler costs.
 * For K+cb and K+cbRD the kernels' correlation ids are matched against the
 * callbacks' (runtime and driver apart): the counts say whether a callback
 * can stand in for the runtime record, and which call's id a kernel carries.
 *
 *   cupti_cost [--launches N] [--rounds R] [--ts-callback] [--like-capture]
 *              [--configs A,B,..]
 * --configs measures the named rows only (and plain, which every row is
 * compared with). --ts-callback registers a CUPTI timestamp callback (CLOCK_MONOTONIC), as
 * kvscope's capture does; --like-capture keeps on, in every configuration,
 * what kvscope's capture keeps on besides its recording (the NVTX domain,
 * the context and graph-node resource callbacks, the MEMCPY, MEMSET,
 * SYNCHRONIZATION and OVERHEAD kinds): run with both, and the K+cbAll row
 * against the capture's own cost says what is kvscope's. Defaults: 1000
 * launches a loop, 60 rounds — short loops, many rounds: on the H200 machine a plain launch takes ~4.5 us or
 * ~6.3 us, the state switching every few tens of ms, so a configuration is
 * compared with the plain loop of its own round and the median of those
 * differences is the figure (a round straddling a switch is an outlier the
 * median ignores); the fastest round of each, against plain's fastest, is
 * printed beside it. Prints a table of extra nanoseconds per launch over
 * plain, plus RESULT lines.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <unordered_set>
#include <vector>

#include <cuda_runtime.h>
#include <cupti.h>

#include "kvscope/trace.h" /* kvs_trace_api_recorded */

#include "cupti_bench.h" /* defines: CK, CU, one, now_ns, ts_cb */

// ---------------------------------------------------------------------------
// activity buffers: kernel correlation ids are kept, other records counted

static std::vector<uint32_t> g_kernel_corr;
static size_t g_records;
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
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            g_kernel_corr.push_back(((CUpti_ActivityKernel10 *)r)->correlationId);
    }
    free(b);
}

// ---------------------------------------------------------------------------
// the callback

struct rec {
    uint32_t corr, cbid;
    int64_t t0, t1;
};
static int g_cb_keep; /* 0: return at once; 1: keep a record */
static thread_local std::vector<rec> *t_recs;
static thread_local int64_t t_enter;
static std::vector<rec> g_recs;

static void CUPTIAPI on_cb(void *, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *d)
{
    if (!g_cb_keep)
        return;
    const CUpti_CallbackData *cd = (const CUpti_CallbackData *)d;
    if (cd->callbackSite == CUPTI_API_ENTER) {
        t_enter = now_ns();
        return;
    }
    if (!t_recs)
        t_recs = &g_recs; /* one thread here */
    t_recs->push_back(rec{cd->correlationId,
                          cbid | (dom == CUPTI_CB_DOMAIN_DRIVER_API ? 0x80000000u : 0u), t_enter,
                          now_ns()});
}

static const CUpti_CallbackId k_launch[] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000};

static const CUpti_CallbackId k_dlaunch[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};

static CUpti_SubscriberHandle g_sub;
static int g_tscb, g_like_capture;

/* which calls get the callback */
enum cbset { CB_NONE, CB_LAUNCH, CB_LAUNCH_RD, CB_REC_RT, CB_REC_DRV, CB_REC_ALL, CB_REC_DEFAULT };

static void set_callbacks(int set, int on)
{
    if (set == CB_LAUNCH || set == CB_LAUNCH_RD)
        for (CUpti_CallbackId c : k_launch)
            CU(cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API, c));
    if (set == CB_LAUNCH_RD)
        for (CUpti_CallbackId c : k_dlaunch)
            CU(cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, c));
    if (set < CB_REC_RT)
        return;
    /* every call kvscope's default records (kvs_trace_api_recorded), of
     * one API or both, as capture_api.c enables them */
    static const CUpti_CallbackDomain dom[2] = {CUPTI_CB_DOMAIN_RUNTIME_API,
                                                CUPTI_CB_DOMAIN_DRIVER_API};
    static const uint32_t lim[2] = {CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_DRIVER_TRACE_CBID_SIZE};
    for (int d = 0; d < 2; d++) {
        if ((d == 0 && set == CB_REC_DRV) || (d == 1 && set == CB_REC_RT))
            continue;
        for (uint32_t cbid = 1; cbid < lim[d]; cbid++) {
            const char *nm = nullptr;
            if (cuptiGetCallbackName(dom[d], cbid, &nm) == CUPTI_SUCCESS && nm &&
                kvs_trace_api_recorded(nm) &&
                !(set == CB_REC_DEFAULT && d == 0 && kvs_trace_api_kernel_launch(nm)))
                cuptiEnableCallback(on, g_sub, dom[d], cbid);
        }
    }
}

/* RUNTIME kind with every call but the launch turned off (kvscope's
 * default filter before the callbacks) */
static void runtime_launch_only(void)
{
    for (CUpti_CallbackId cb = 1; cb < CUPTI_RUNTIME_TRACE_CBID_SIZE; cb++) {
        int keep = 0;
        for (CUpti_CallbackId l : k_launch)
            keep |= cb == l;
        if (!keep)
            cuptiActivityEnableRuntimeApi(cb, 0); /* some ids are holes */
    }
}

enum rt_mode { R_NONE, R_ALL, R_SEL, R_OFF };

struct cfgdef {
    const char *name;
    int kernel;      /* CONCURRENT_KERNEL records */
    int runtime;     /* enum rt_mode: RUNTIME records */
    int driver;      /* DRIVER records of every call */
    int cb;          /* enum cbset */
    int keep;        /* the callback keeps a record (else returns at once) */
    int extcorr;     /* EXTERNAL_CORRELATION, an id pushed around the loop */
    const char *kvs; /* != NULL: kvscope's own capture, linked, recording these activities */
};

static const cfgdef k_cfgs[] = {
    {"plain", 0, R_NONE, 0, CB_NONE, 0, 0, nullptr},
    {"K", 1, R_NONE, 0, CB_NONE, 0, 0, nullptr},
    {"K+R", 1, R_ALL, 0, CB_NONE, 0, 0, nullptr},
    {"K+Rsel", 1, R_SEL, 0, CB_NONE, 0, 0, nullptr},
    {"K+Roff", 1, R_OFF, 0, CB_NONE, 0, 0, nullptr},
    {"K+D", 1, R_NONE, 1, CB_NONE, 0, 0, nullptr},
    {"K+cb0", 1, R_NONE, 0, CB_LAUNCH, 0, 0, nullptr},
    {"K+cb", 1, R_NONE, 0, CB_LAUNCH, 1, 0, nullptr},
    {"K+cbRD", 1, R_NONE, 0, CB_LAUNCH_RD, 1, 0, nullptr},
    {"K+cbR", 1, R_NONE, 0, CB_REC_RT, 1, 0, nullptr},
    {"K+cbD", 1, R_NONE, 0, CB_REC_DRV, 1, 0, nullptr},
    {"K+cbAll", 1, R_NONE, 0, CB_REC_ALL, 1, 0, nullptr},
    {"K+cbDef", 1, R_NONE, 0, CB_REC_DEFAULT, 1, 0, nullptr},
    {"K+X", 1, R_NONE, 0, CB_NONE, 0, 1, nullptr},
    {"K+cb+X", 1, R_NONE, 0, CB_LAUNCH, 1, 1, nullptr},
    {"kvs", 0, R_NONE, 0, CB_NONE, 0, 0, "default"},
    {"kvs-rt", 0, R_NONE, 0, CB_NONE, 0, 0, "kernel,memcpy,memset,runtime,sync,extcorr,overhead,nvtx"},
    {"kvs-drv", 0, R_NONE, 0, CB_NONE, 0, 0, "kernel,memcpy,memset,driver,sync,extcorr,overhead,nvtx"},
    {"kvs-gpu", 0, R_NONE, 0, CB_NONE, 0, 0, "kernel,memcpy,memset,extcorr,nvtx"},
};
enum { NCFG = sizeof k_cfgs / sizeof k_cfgs[0], PLAIN = 0, K_CB = 7, K_CBRD = 8 };

/* cupti_cost's own subscriber and what it keeps on all the time (again
 * after a kvscope capture had CUPTI to itself) */
static void subscribe(void)
{
    CU(cuptiSubscribe(&g_sub, on_cb, nullptr));
    if (g_tscb)
        CU(cuptiActivityRegisterTimestampCallback(ts_cb));
    CU(cuptiActivityRegisterCallbacks(buf_req, buf_done));
    if (!g_like_capture)
        return;
    /* what kvscope's capture keeps on all the time besides its recording:
     * the NVTX domain, the resource callbacks it follows (context, graph
     * nodes), the activity kinds that cost no launch */
    CU(cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_NVTX));
    CU(cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
    CU(cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED));
    CU(cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
    CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
    CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
    CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_OVERHEAD));
}

static struct kvs_trace *g_kvs;
static unsigned long long g_kvs_dropped;

static void kvs_ok(enum kvs_status st, const char *what)
{
    if (st != KVS_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", what, kvs_status_str(st));
        exit(1);
    }
}

static void set_cfg(int c, int on)
{
    const cfgdef &f = k_cfgs[c];
    if (f.kvs) { /* kvscope's capture: CUPTI allows one subscriber */
        if (on) {
            CU(cuptiUnsubscribe(g_sub));
            struct kvs_trace_config kc;
            kvs_trace_config_init(&kc);
            kvs_ok(kvs_trace_parse_activities(f.kvs, &kc.activities), "activities");
            kc.logger.min_level = KVS_LOG_WARN;
            kvs_ok(kvs_trace_create(&kc, &g_kvs), "kvs_trace_create");
            kvs_ok(kvs_trace_start(g_kvs), "kvs_trace_start");
        } else {
            kvs_ok(kvs_trace_stop(g_kvs), "kvs_trace_stop");
            struct kvs_trace_stats st;
            kvs_trace_get_stats(g_kvs, &st);
            g_kvs_dropped += st.dropped_records;
            kvs_trace_free(g_kvs); /* unsubscribes */
            g_kvs = nullptr;
            subscribe();
        }
        return;
    }
    if (f.kernel && on)
        CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    if (f.runtime == R_ALL || f.runtime == R_OFF) {
        if (on) {
            CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
            if (f.runtime == R_OFF)
                runtime_launch_only();
        } else {
            CU(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME));
        }
    } else if (f.runtime == R_SEL) {
        for (CUpti_CallbackId cb : k_launch)
            CU(cuptiActivityEnableRuntimeApi(cb, (uint8_t)on));
    }
    if (f.driver) {
        if (on)
            CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
        else
            CU(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER));
    }
    if (f.cb != CB_NONE) {
        g_cb_keep = f.keep;
        set_callbacks(f.cb, on);
    }
    if (f.extcorr) {
        if (on) {
            CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
            CU(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 7));
        } else {
            uint64_t last = 0;
            CU(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                     &last));
            CU(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
        }
    }
    if (f.kernel && !on)
        CU(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

/* ns per iteration of one loop */
static double run_loop(int pytorch, int n, int *d, cudaStream_t s)
{
    CK(cudaStreamSynchronize(s));
    int64_t t0 = now_ns();
    int dev = 0;
    for (int i = 0; i < n; i++) {
        if (pytorch)
            for (int j = 0; j < 5; j++)
                cudaGetDevice(&dev);
        one<<<1, 1, 0, s>>>(d);
        if (pytorch)
            (void)cudaGetLastError();
    }
    CK(cudaStreamSynchronize(s));
    return (double)(now_ns() - t0) / n;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    int n = 1000, rounds = 60, tscb = 0, like_capture = 0;
    std::vector<int> cfgs; /* the rows measured: plain and --configs, else all */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--configs") && i + 1 < argc) {
            std::string list = argv[++i];
            cfgs.push_back(PLAIN);
            for (size_t p = 0; p <= list.size();) {
                size_t q = list.find(',', p);
                if (q == std::string::npos)
                    q = list.size();
                std::string nm = list.substr(p, q - p);
                int found = -1;
                for (int c = 0; c < NCFG; c++)
                    if (nm == k_cfgs[c].name)
                        found = c;
                if (found < 0) {
                    fprintf(stderr, "--configs: no configuration '%s'; there are:", nm.c_str());
                    for (int c = 0; c < NCFG; c++)
                        fprintf(stderr, " %s", k_cfgs[c].name);
                    fprintf(stderr, "\n");
                    return 2;
                }
                if (found != PLAIN)
                    cfgs.push_back(found);
                p = q + 1;
            }
            continue;
        }
        if (!strcmp(argv[i], "--launches") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ts-callback"))
            tscb = 1;
        else if (!strcmp(argv[i], "--like-capture"))
            like_capture = 1;
        else {
            fprintf(stderr, "usage: %s [--launches N] [--rounds R] [--ts-callback] [--like-capture] "
                            "[--configs A,B,..]\n",
                    argv[0]);
            return 2;
        }
    }
    if (cfgs.empty())
        for (int c = 0; c < NCFG; c++)
            cfgs.push_back(c);
    const int ncfg = (int)cfgs.size();
    if (n < 100 || rounds < 1) {
        fprintf(stderr, "--launches must be >= 100, --rounds >= 1\n");
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "no GPU\n");
        return 77;
    }
    g_tscb = tscb;
    g_like_capture = like_capture;
    subscribe();
    int *d = nullptr;
    cudaStream_t s;
    CK(cudaMalloc(&d, sizeof(int)));
    CK(cudaMemset(d, 0, sizeof(int)));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    g_recs.reserve((size_t)n * 2 * (size_t)(rounds + 1) * 2 + 1024);

    /* per loop, per config: ns per iteration of each round */
    std::vector<double> ns[2][NCFG];
    size_t matched[2][2] = {{0, 0}, {0, 0}}, kernels_cb[2] = {0, 0}, driver_cb = 0; /* [K+cb, K+cbRD][rt, drv] */
    for (int r = -1; r < rounds; r++) { /* round -1: warm-up, not kept */
        for (int k = 0; k < ncfg; k++) {
            int c = cfgs[(k + (r < 0 ? 0 : r)) % ncfg];
            for (int pt = 0; pt < 2; pt++) {
                set_cfg(c, 1);
                run_loop(pt, 100, d, s); /* the configuration's first launches */
                g_recs.clear();
                g_kernel_corr.clear();
                double v = run_loop(pt, n, d, s);
                set_cfg(c, 0);
                CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
                if (r >= 0)
                    ns[pt][c].push_back(v);
                if ((c == K_CB || c == K_CBRD) && r >= 0) {
                    int w = c == K_CBRD;
                    std::unordered_set<uint32_t> ids[2];
                    for (const rec &x : g_recs) {
                        ids[x.cbid >> 31].insert(x.corr);
                        driver_cb += w && (x.cbid >> 31);
                    }
                    for (uint32_t id : g_kernel_corr)
                        for (int dd = 0; dd < 2; dd++)
                            matched[w][dd] += ids[dd].count(id) != 0;
                    kernels_cb[w] += g_kernel_corr.size();
                }
            }
        }
    }
    int check = 0;
    CK(cudaMemcpy(&check, d, sizeof check, cudaMemcpyDeviceToHost));
    long want = (long)ncfg * 2 * (rounds + 1) * (n + 100);
    printf("cupti_cost: %d launches a loop, %d rounds (+1 warm-up), timestamp callback %s, "
           "like the capture %s; kernel ran %d times (want %ld)\n",
           n, rounds, tscb ? "on" : "off", like_capture ? "on" : "off", check, want);
    printf("kvscope's captures (the kvs rows): %llu records dropped\n\n", g_kvs_dropped);
    if (kernels_cb[0])
        printf("K+cb: %zu of %zu kernel records carry a correlation id the runtime launch "
               "callback saw\n",
               matched[0][0], kernels_cb[0]);
    if (kernels_cb[1])
        printf("K+cbRD: %zu driver launch callbacks for %zu kernels; kernels matching a runtime "
               "callback's id %zu, a driver callback's %zu\n",
               driver_cb, kernels_cb[1], matched[1][0], matched[1][1]);
    if (kernels_cb[0] || kernels_cb[1])
        printf("\n");
    printf("| configuration | bare: ns/launch (median) | extra ns: median of rounds (p25..p75) | "
           "fastest vs fastest | pytorch-like: ns/launch | extra ns: median (p25..p75) | fastest "
           "vs fastest |\n|---|---|---|---|---|---|---|\n");
    for (int c : cfgs) {
        printf("| %s |", k_cfgs[c].name);
        for (int pt = 0; pt < 2; pt++) {
            std::vector<double> extra;
            for (int r = 0; r < rounds; r++)
                extra.push_back(ns[pt][c][r] - ns[pt][PLAIN][r]);
            std::vector<double> sorted = extra;
            std::sort(sorted.begin(), sorted.end());
            double fast = *std::min_element(ns[pt][c].begin(), ns[pt][c].end()) -
                          *std::min_element(ns[pt][PLAIN].begin(), ns[pt][PLAIN].end());
            printf(" %.0f | %+.0f (%+.0f..%+.0f) | %+.0f |", median(ns[pt][c]), median(extra),
                   sorted[sorted.size() / 4], sorted[sorted.size() * 3 / 4], fast);
        }
        printf("\n");
    }
    for (int c : cfgs)
        for (int pt = 0; pt < 2; pt++)
            for (int r = 0; r < rounds; r++)
                printf("RESULT cfg=%s loop=%s round=%d ns_per_launch=%.1f tscb=%d\n", k_cfgs[c].name,
                       pt ? "pytorch" : "bare", r, ns[pt][c][r], tscb);
    cuptiUnsubscribe(g_sub);
    return check == want ? 0 : 1;
}
