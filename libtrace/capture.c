/* capture.c — the CUPTI side of kvscope/trace.h: subscribe, enable activity
 * kinds, hand CUPTI buffers from the bounded pool, flush, and at write time
 * walk the ready buffers into plain records for the writer.
 *
 * Global state, by necessity and only here: CUPTI's buffer callbacks carry
 * no user pointer and CUPTI takes one subscriber, so the one live capture
 * is g_active. Every callback counts itself in (g_cb_inflight) before it
 * looks at g_active, and kvs_trace_free clears g_active then waits for the
 * count to drain before freeing, so no callback touches freed memory.
 * No kvscope lock is held while CUPTI flushes: the flush calls
 * buffer_completed on this thread, which takes the pool's lock.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "capture_internal.h"
#include "cupti_records.h"
#include "kvscope/check.h"

#define KVS_POOL_STOCK 2 /* zeroed CUPTI buffers kept ready (within the cap) */

static _Atomic(struct kvs_trace *) g_active;
static atomic_uint g_cb_inflight;
static atomic_ullong g_generation;
static pthread_mutex_t g_ctl = PTHREAD_MUTEX_INITIALIZER; /* start/stop/free */

// ----------------------------------------------------------------------------
// clocks and threads

int64_t kvs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CUPTI's timestamps on our clock: CUPTI maps GPU times onto this too. */
static uint64_t CUPTIAPI cupti_clock(void)
{
    return (uint64_t)kvs_now_ns();
}

uint32_t kvs_gettid(void)
{
    static _Thread_local uint32_t tid;
    if (!tid)
        tid = (uint32_t)syscall(SYS_gettid);
    return tid;
}

static struct kvs_trace *cb_enter(void)
{
    atomic_fetch_add(&g_cb_inflight, 1);
    struct kvs_trace *t = atomic_load(&g_active);
    if (!t)
        atomic_fetch_sub(&g_cb_inflight, 1);
    return t;
}

static void cb_leave(void)
{
    atomic_fetch_sub(&g_cb_inflight, 1);
}

// ----------------------------------------------------------------------------
// CUPTI callbacks (CUPTI's thread, or the thread that flushes)

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    int64_t t0 = kvs_now_ns();
    *buffer = NULL;
    *size = 0;
    *max_records = 0;
    struct kvs_trace *t = cb_enter();
    if (!t)
        return;
    *buffer = kvs_pool_acquire(&t->pool, size);
    /* CUDA is up (records are coming): a moment to learn the devices, for an
     * injected capture whose context-created callback may not come */
    if (t->on_context && !t->ndevices)
        t->on_context(t->on_context_user);
    atomic_fetch_add(&t->callback_ns, (unsigned long long)(kvs_now_ns() - t0));
    cb_leave();
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)size;
    int64_t t0 = kvs_now_ns();
    struct kvs_trace *t = cb_enter();
    if (!t)
        return; /* the capture is gone: the buffer is leaked, never freed under CUPTI */
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        atomic_fetch_add(&t->cupti_dropped, dropped);
    kvs_pool_complete(&t->pool, buffer, valid);
    atomic_fetch_add(&t->callback_ns, (unsigned long long)(kvs_now_ns() - t0));
    cb_leave();
}

static enum kvs_status enable_kinds(struct kvs_trace *t);
static void disable_kinds(struct kvs_trace *t);
static void ask_detach(struct kvs_trace *t);

/* A profiler call while CUPTI is being detached: a start opens its window
 * once CUPTI is attached again; a stop after it means that window came and
 * went meanwhile (not recorded, counted). */
static void missed_while_detaching(struct kvs_trace *t, int start, const CUpti_CallbackData *cd)
{
    if (start && atomic_exchange(&t->fin_req, 0)) { /* not finalized yet: it never will be */
        atomic_store(&t->fin_canceled, 1);
        pthread_mutex_lock(&t->det_mu);
        pthread_cond_broadcast(&t->det_cv);
        pthread_mutex_unlock(&t->det_mu);
    }
    if (start && cd->callbackSite == CUPTI_API_EXIT)
        atomic_store(&t->start_missed, 1);
    else if (!start && cd->callbackSite == CUPTI_API_ENTER && atomic_exchange(&t->start_missed, 0))
        atomic_fetch_add(&t->windows_missed, 1);
}

static void on_profiler_api(struct kvs_trace *t, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                            const CUpti_CallbackData *cd)
{
    (void)dom; /* the driver's calls: cudaProfilerStart/Stop make them */
    if (!atomic_load(&t->watch_profiler))
        return;
    int start = cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
    int closed = 0;
    /* g_ctl: the detacher changes det_state and reads start_missed under it
     * (it holds it for a few instructions, never across a CUPTI call that
     * waits for a callback) */
    pthread_mutex_lock(&g_ctl);
    if (atomic_load(&t->det_state)) { /* being detached: the detacher opens it once attached */
        missed_while_detaching(t, start, cd);
    } else if (start && cd->callbackSite == CUPTI_API_EXIT && !atomic_load(&t->running)) {
        enable_kinds(t);
    } else if (!start && cd->callbackSite == CUPTI_API_ENTER && atomic_load(&t->running)) {
        disable_kinds(t); /* no flush here: the records stay in CUPTI's buffers until stop */
        closed = t->detach;
    } else if (!start && cd->callbackSite == CUPTI_API_ENTER && t->detaches) {
        /* a stop without its start: the start came while CUPTI was away */
        atomic_fetch_add(&t->windows_missed, 1);
    }
    pthread_mutex_unlock(&g_ctl);
    if (closed)
        ask_detach(t);
}

static int is_profiler_cbid(int driver, CUpti_CallbackId cbid)
{
    return driver && (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart ||
                      cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
}

/* Inside an API call's exit callback (detach_now asked, CUPTI flushed):
 * finalize CUPTI, tell the detacher, leave. cb_enter's count is given back
 * before fin_done says the callback is over; CUPTI's own return path after
 * it is left a moment before anything attaches again (detach_now). */
static void finalize_here(struct kvs_trace *t)
{
    t->fin_result = (int)cuptiFinalize();
    pthread_mutex_lock(&t->det_mu);
    atomic_store(&t->fin_done, 1);
    pthread_cond_broadcast(&t->det_cv);
    pthread_mutex_unlock(&t->det_mu);
    cb_leave();
    atomic_store(&t->fin_done, 2);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *data)
{
    (void)userdata; /* g_active is authoritative: userdata may outlive the capture */
    struct kvs_trace *t = cb_enter();
    if (!t)
        return;
    if (atomic_load_explicit(&t->fin_req, memory_order_relaxed) &&
        (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API) &&
        ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_EXIT &&
        !(domain == CUPTI_CB_DOMAIN_DRIVER_API && is_profiler_cbid(1, cbid)) &&
        atomic_exchange(&t->fin_req, 0)) {
        finalize_here(t); /* CUPTI's advice: at an API call's exit; never attached again here */
        return;
    }
    if (atomic_load_explicit(&t->det_state, memory_order_relaxed) &&
        !(domain == CUPTI_CB_DOMAIN_DRIVER_API && is_profiler_cbid(1, cbid))) {
        cb_leave(); /* CUPTI is being finalized: nothing is recorded now */
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_NVTX)
        kvs_capture_nvtx(t, cbid, data);
    else if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        if (t->on_context)
            t->on_context(t->on_context_user);
    } else if (domain == CUPTI_CB_DOMAIN_RESOURCE &&
               (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
                cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)) {
        kvs_capture_graph_node(t, cbid, data);
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        const CUpti_CallbackData *cd = data;
        int driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
        if (kvs_capture_api_wanted(t, driver, cbid))
            kvs_capture_api_callback(t, driver, cbid, cd);
        /* stream captures are counted by the driver's calls alone (the
         * runtime's make them; inside a window both have a callback) */
        int sc = driver ? kvs_capture_stream_capture_cbid(driver, cbid) : -1;
        if (sc == 1 && cd->callbackSite == CUPTI_API_EXIT && cd->functionReturnValue &&
            *(const int *)cd->functionReturnValue == 0) /* cudaSuccess, CUDA_SUCCESS */
            kvs_capture_stream_capture(1);
        else if (sc == 0 && cd->callbackSite == CUPTI_API_ENTER)
            kvs_capture_stream_capture(0);
        else if (is_profiler_cbid(driver, cbid))
            on_profiler_api(t, domain, cbid, data);
    }
    cb_leave();
}

// ----------------------------------------------------------------------------
// activity kinds

static const struct {
    unsigned bit;
    CUpti_ActivityKind kind;
    const char *name;
} k_kinds[] = {
    {KVS_TRACE_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
    {KVS_TRACE_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
    {KVS_TRACE_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
    {KVS_TRACE_RUNTIME_ALL, CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"},
    {KVS_TRACE_DRIVER_ALL, CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER"},
    {KVS_TRACE_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION"},
    {KVS_TRACE_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
     "EXTERNAL_CORRELATION"},
    {KVS_TRACE_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD"},
};

/* A function of the libcupti this capture runs with, or NULL: looked up at
 * run time so that a CUPTI without it still loads the capture. */
static void *cupti_sym(const char *name)
{
    Dl_info info;
    if (!dladdr((void *)cuptiSubscribe, &info) || !info.dli_fname)
        return NULL;
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *f = dlsym(h, name);
    dlclose(h); /* NOLOAD: only drops the reference just taken */
    return f;
}

typedef CUptiResult(CUPTIAPI *api_enable_fn)(CUpti_CallbackId, uint8_t);

static const struct {
    const char *fn, *what;
    CUpti_CallbackDomain domain;
    CUpti_ActivityKind kind;
    uint32_t ncbids;
    unsigned bit, all_bit;
} k_apis[2] = {
    {"cuptiActivityEnableRuntimeApi", "runtime", CUPTI_CB_DOMAIN_RUNTIME_API,
     CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_SIZE, KVS_TRACE_RUNTIME,
     KVS_TRACE_RUNTIME_ALL},
    {"cuptiActivityEnableDriverApi", "driver", CUPTI_CB_DOMAIN_DRIVER_API,
     CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_SIZE, KVS_TRACE_DRIVER,
     KVS_TRACE_DRIVER_ALL},
};

/* g_ctl held. Records only the API calls kvs_trace_api_recorded names (the
 * ones the analysis reads) instead of every call of the API: the whole
 * kind is enabled, then every other call turned off one by one, as CUPTI's
 * header describes (enabling only chosen calls without the kind recorded
 * nothing on the H200 once CUDA was up: CUPTI 13.0, a linked capture, or
 * --window cudaProfilerStart). Enabling the kind resets the per-call
 * settings, so this runs at every window's start. Returns 0 when this
 * CUPTI cannot (the kind refused, or no per-call function, or an id
 * refused): then the kind records every call if it could be enabled
 * (*all = 1), and *why says why. */
static int enable_api_calls(struct kvs_trace *t, int d, int *all, const char **why)
{
    *all = 0;
    CUptiResult r = cuptiActivityEnable(k_apis[d].kind);
    if (r != CUPTI_SUCCESS) {
        *why = NULL;
        cuptiGetResultString(r, why);
        if (!*why)
            *why = "refused";
        return 0;
    }
    *all = 1;
    api_enable_fn fn = (api_enable_fn)cupti_sym(k_apis[d].fn);
    if (!fn) {
        *why = "no such function in this CUPTI";
        return 0;
    }
    const uint8_t *calls = kvs_capture_api_calls(t, d); /* the calls to turn off */
    if (!calls) {
        *why = "no memory";
        return 0;
    }
    /* a runtime kernel launch whose driver launch the driver's callbacks
     * record is left out here too: one record a launch */
    int by_driver = d == 0 && atomic_load(&t->api_launch_by_driver);
    for (uint32_t cbid = 1; cbid < k_apis[d].ncbids; cbid++) {
        if (calls[cbid] != KVS_API_LEFT_OUT && !(by_driver && calls[cbid] == KVS_API_BY_DRIVER))
            continue;
        r = fn(cbid, 0);
        if (r != CUPTI_SUCCESS) {
            *why = NULL;
            cuptiGetResultString(r, why);
            if (!*why)
                *why = "refused";
            /* every call then, not a part: re-enabling the kind resets them */
            cuptiActivityDisable(k_apis[d].kind);
            *all = cuptiActivityEnable(k_apis[d].kind) == CUPTI_SUCCESS;
            return 0;
        }
    }
    return 1;
}

/* g_ctl held. A kind this CUPTI/device refuses is logged and skipped. */
static enum kvs_status enable_kinds(struct kvs_trace *t)
{
    int64_t now = kvs_now_ns();
    if (!t->window_start_ns)
        t->window_start_ns = now;
    atomic_store(&t->closed_at_ns, 0); /* no detach while a window is open */
    t->kinds_on = 0;
    unsigned want = t->cfg.activities;
    /* before any callback records: the calls keep their op's id if asked */
    atomic_store(&t->api_ext, (want & KVS_TRACE_EXTERNAL_CORRELATION) != 0);
    /* the driver first: when its calls are recorded by callback, a runtime
     * kernel launch is recorded by the driver launch it makes and gets no
     * callback of its own (capture_api.c) */
    t->api_by_callback[1] = 0;
    for (int k = 0; k < 2; k++) {
        int d = 1 - k;
        if (!(want & k_apis[d].bit) || (want & k_apis[d].all_bit))
            continue;
        if (d == 0)
            atomic_store(&t->api_launch_by_driver, t->api_by_callback[1]);
        t->api_by_callback[d] = kvs_capture_api_enable(t, d, 1) == 0;
        if (t->api_by_callback[d]) {
            t->kinds_on |= k_apis[d].bit;
            continue;
        }
        kvs_capture_api_enable(t, d, 0);
        if (!t->api_fallback_said[d])
            kvs_log(&t->lg, KVS_LOG_INFO,
                    "CUPTI refused a callback on a %s API call: recording the chosen calls "
                    "through CUPTI's activity records instead (costs more a call)",
                    k_apis[d].what);
        const char *why = "?";
        int all = 0;
        if (enable_api_calls(t, d, &all, &why)) {
            t->kinds_on |= k_apis[d].bit;
            continue;
        }
        if (!t->api_fallback_said[d]) /* once per capture, not per window */
            kvs_log(&t->lg, all ? KVS_LOG_INFO : KVS_LOG_WARN,
                    "CUPTI cannot record only some %s API calls here (%s: %s); %s",
                    k_apis[d].what, k_apis[d].fn, why,
                    all ? "recording every call instead" : "no API records");
        t->api_fallback_said[d] = 1;
        if (all)
            t->kinds_on |= k_apis[d].all_bit;
        want &= ~k_apis[d].all_bit; /* enabled already, or refused */
    }
    /* ops hand CUPTI their External id only where CUPTI records API calls:
     * known before the kinds below are enabled (runtime-all and driver-all
     * are among them) */
    t->ext_by_cupti = 0;
    for (int d = 0; d < 2; d++)
        t->ext_by_cupti |= (t->kinds_on & k_apis[d].all_bit) || (want & k_apis[d].all_bit) ||
                           ((t->kinds_on & k_apis[d].bit) && !t->api_by_callback[d]);
    for (size_t i = 0; i < sizeof k_kinds / sizeof k_kinds[0]; i++) {
        if (!(want & k_kinds[i].bit))
            continue;
        if (k_kinds[i].bit == KVS_TRACE_EXTERNAL_CORRELATION && !t->ext_by_cupti) {
            /* every recorded call carries its op's id from kvscope's own
             * callback (capture_api.c): CUPTI would make no such record,
             * and the kind would still be CUPTI work on every API call */
            t->kinds_on |= k_kinds[i].bit;
            continue;
        }
        CUptiResult r = cuptiActivityEnable(k_kinds[i].kind);
        if (r == CUPTI_SUCCESS) {
            t->kinds_on |= k_kinds[i].bit;
        } else {
            const char *what = NULL;
            cuptiGetResultString(r, &what);
            kvs_log(&t->lg, KVS_LOG_WARN, "CUPTI cannot record %s here (%s); continuing without",
                    k_kinds[i].name, what ? what : "?");
        }
    }
    /* the runtime's chosen calls recorded (by callback or its activity
     * fallback) and its kernel launches left to the driver's callbacks: the
     * trace says so (kvscope.runtime_launches) */
    t->launches_by_driver |=
        (t->kinds_on & KVS_TRACE_RUNTIME) && atomic_load(&t->api_launch_by_driver);
    if (t->kinds_on & KVS_TRACE_SYNC) {
        /* event and stream queries whose work was not done yet are polls,
         * not waits: no record for them (the analysis reads none) */
        CUptiResult(CUPTIAPI * all_sync)(uint8_t) =
            (CUptiResult(CUPTIAPI *)(uint8_t))cupti_sym("cuptiActivityEnableAllSyncRecords");
        if (all_sync)
            all_sync(0);
    }
    if (want & KVS_TRACE_NVTX) {
        t->kinds_on |= KVS_TRACE_NVTX;
        kvs_annot_set_hooks(&t->hooks);
    }
    t->kinds_recorded |= t->kinds_on;
    atomic_store(&t->running, 1);
    kvs_capture_torch_update();
    return t->kinds_on ? KVS_STATUS_OK : KVS_STATUS_CUPTI;
}

/* g_ctl held. */
static void disable_kinds(struct kvs_trace *t)
{
    atomic_store(&t->running, 0);
    kvs_capture_torch_update();
    if (t->kinds_on & KVS_TRACE_NVTX)
        kvs_annot_set_hooks(NULL); /* waits for annotating threads to leave */
    for (size_t i = 0; i < sizeof k_kinds / sizeof k_kinds[0]; i++)
        if (t->kinds_on & k_kinds[i].bit)
            cuptiActivityDisable(k_kinds[i].kind);
    for (int d = 0; d < 2; d++) { /* the chosen calls (every call is in k_kinds' bits) */
        if (!(t->kinds_on & k_apis[d].bit) || (t->kinds_on & k_apis[d].all_bit))
            continue;
        /* the calls' callbacks stay enabled, returning at once (api_on):
         * CUPTI gives a thread's calls the correlation id of a call whose
         * entry it called back and whose exit it did not, so turning a
         * callback off while its call runs (cuProfilerStop's own, here; any
         * recorded call in flight on another thread) gave every later call
         * of that thread that one id (H200, CUPTI 13.0: a second window's
         * 9 calls and 6 kernels all correlation 11, cuProfilerStop's) */
        if (t->api_by_callback[d])
            atomic_store(&t->api_on[d], 0);
        else
            cuptiActivityDisable(k_apis[d].kind);
    }
    t->window_end_ns = kvs_now_ns();
}

// ----------------------------------------------------------------------------
// lifecycle

void kvs_trace_config_init(struct kvs_trace_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->activities = KVS_TRACE_DEFAULT;
    cfg->buffer_bytes = 4u << 20;
    cfg->max_buffers = 32;
    cfg->host_bytes_max = 64u << 20;
    cfg->logger = kvs_logger_stderr();
    cfg->rank = -1;
    cfg->world_size = 0;
    cfg->set_nvtx_env = 1;
}

/* CUDA graphs: graph nodes as they are created and cloned, and the stream
 * captures that create them, so that replayed work gets the op and ranges
 * its node was captured under (capture_host.c). Part of every capture that
 * records ops: without these callbacks a graphed program's trace has no
 * shapes. A CUPTI that refuses one loses that context only. The captures
 * are followed through the driver's calls alone (cudaStreamBeginCapture
 * makes cuStreamBeginCapture_v2): outside a window no runtime call has a
 * callback, and a callback on one API costs only the calls it is on. */
static void follow_graphs(struct kvs_trace *t)
{
    static const CUpti_CallbackId res[] = {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                           CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED};
    static const CUpti_CallbackId drv[] = {
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
        CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz};
    int refused = 0;
    for (size_t i = 0; i < sizeof res / sizeof res[0]; i++)
        refused += cuptiEnableCallback(1, t->sub, CUPTI_CB_DOMAIN_RESOURCE, res[i]) != CUPTI_SUCCESS;
    for (size_t i = 0; i < sizeof drv / sizeof drv[0]; i++)
        refused += cuptiEnableCallback(1, t->sub, CUPTI_CB_DOMAIN_DRIVER_API, drv[i]) != CUPTI_SUCCESS;
    if (refused)
        kvs_log(&t->lg, KVS_LOG_WARN,
                "CUPTI refused %d of the CUDA-graph callbacks: work replayed by a graph may not "
                "get the op it was captured under",
                refused);
}

/* What a capture sets up once subscribed (t->sub), at creation and when
 * CUPTI is attached again after a detach: the clock, the buffers, and the
 * callbacks of the closed window (NVTX, context created, CUDA graphs). */
static enum kvs_status subscribed(struct kvs_trace *t)
{
    const struct kvs_logger *lg = &t->lg;
    /* Timestamps on CLOCK_MONOTONIC, like every host record: one clock in the
     * trace. Without the callback (old CUPTI) an offset is measured instead. */
    if (cuptiActivityRegisterTimestampCallback(cupti_clock) != CUPTI_SUCCESS) {
        uint64_t c = 0;
        int64_t a = kvs_now_ns();
        cuptiGetTimestamp(&c);
        int64_t b = kvs_now_ns();
        t->clock_offset_ns = (int64_t)c - (a + (b - a) / 2);
        kvs_log(lg, KVS_LOG_DEBUG, "CUPTI clock offset %lld ns", (long long)t->clock_offset_ns);
    }
    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM); /* = gettid(), our tids */
    /* the pool lends zeroed buffers: CUPTI need not zero them itself, which
     * it would do on the thread that asked (an older CUPTI that does not
     * know the attribute zeroes them again, as before) */
    uint8_t zeroed = 1;
    size_t zsize = sizeof zeroed;
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zsize, &zeroed);
    enum kvs_status st = KVS_CUPTI_STATUS(lg, cuptiActivityRegisterCallbacks(buffer_requested,
                                                                             buffer_completed));
    if (st == KVS_STATUS_OK && (t->cfg.activities & KVS_TRACE_NVTX))
        st = KVS_CUPTI_STATUS(lg, cuptiEnableDomain(1, t->sub, CUPTI_CB_DOMAIN_NVTX));
    if (st == KVS_STATUS_OK)
        st = KVS_CUPTI_STATUS(lg, cuptiEnableCallback(1, t->sub, CUPTI_CB_DOMAIN_RESOURCE,
                                                      CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
    if (st == KVS_STATUS_OK && (t->cfg.activities & KVS_TRACE_NVTX))
        follow_graphs(t);
    return st;
}

static void read_process_name(char *buf, size_t n)
{
    snprintf(buf, n, "process");
    FILE *f = fopen("/proc/self/comm", "r");
    if (!f)
        return;
    if (fgets(buf, (int)n, f))
        buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

/* NVTX in modules that have not initialised it yet will load CUPTI. */
static void point_nvtx_at_cupti(struct kvs_trace *t)
{
    if (getenv("NVTX_INJECTION64_PATH"))
        return;
    Dl_info info;
    if (dladdr((void *)cuptiSubscribe, &info) && info.dli_fname && info.dli_fname[0] == '/') {
        setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
        kvs_log(&t->lg, KVS_LOG_DEBUG, "NVTX_INJECTION64_PATH=%s", info.dli_fname);
    }
}

static void trace_release(struct kvs_trace *t)
{
    unsigned lent = kvs_pool_free(&t->pool);
    if (lent)
        kvs_log(&t->lg, KVS_LOG_DEBUG, "%u CUPTI buffers still lent at free: left alone", lent);
    kvs_capture_host_free(t);
    kvs_capture_api_free(t);
    kvs_host_store_free(&t->host);
    pthread_mutex_destroy(&t->dev_mu);
    free(t->devices);
    for (int i = 0; i < t->nextra; i++) {
        free((void *)(uintptr_t)t->extra[i].key);
        free((void *)(uintptr_t)t->extra[i].json);
    }
    for (size_t i = 0; i < t->demangled.cap; i++)
        if (t->demangled.used[i])
            free((void *)(uintptr_t)t->demangled.vals[i]);
    kvs_map_free(&t->demangled);
    for (int d = 0; d < 2; d++) {
        size_t lim = d ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
        for (size_t i = 0; t->api_names[d] && i < lim; i++)
            free(t->api_names[d][i]);
        free(t->api_names[d]);
    }
    free(t);
}

enum kvs_status kvs_trace_create(const struct kvs_trace_config *cfg, struct kvs_trace **out)
{
    if (!cfg || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    const struct kvs_logger *lg = &cfg->logger;
    if (atomic_load(&g_active)) {
        kvs_log(lg, KVS_LOG_ERROR, "a kvscope capture is already running in this process");
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    struct kvs_trace *t = calloc(1, sizeof *t);
    if (!t)
        return KVS_STATUS_NO_MEMORY;
    t->cfg = *cfg;
    t->lg = cfg->logger;
    if (t->cfg.buffer_bytes < (64u << 10))
        t->cfg.buffer_bytes = 64u << 10;
    if (t->cfg.max_buffers == 0)
        t->cfg.max_buffers = 1;
    if (cfg->process_name)
        snprintf(t->process_name, sizeof t->process_name, "%s", cfg->process_name);
    else
        read_process_name(t->process_name, sizeof t->process_name);
    t->cfg.process_name = t->process_name;
    t->pid = (uint32_t)getpid();
    t->gen = atomic_fetch_add(&g_generation, 1) + 1;
    t->window = "api";
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    t->base_time_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - kvs_now_ns();
    atomic_store(&t->next_external_id, 1);
    pthread_mutex_init(&t->dev_mu, NULL);
    kvs_capture_api_init(t); /* before any way out: trace_release frees it */
    t->devices = calloc(KVS_MAX_DEVICES, sizeof *t->devices);
    if (!t->devices || kvs_pool_init(&t->pool, t->cfg.buffer_bytes, t->cfg.max_buffers) != 0 ||
        kvs_host_store_init(&t->host, t->cfg.host_bytes_max) != 0 ||
        kvs_capture_host_init(t) != 0 || kvs_map_init(&t->demangled, 256) != 0) {
        trace_release(t);
        return KVS_STATUS_NO_MEMORY;
    }
    /* zeroed buffers ready before CUPTI asks: it asks on the program's own
     * threads when one fills, and zeroing 4 MiB there stalls a launch ~1 ms */
    if (kvs_pool_keep_stock(&t->pool, KVS_POOL_STOCK) != 0)
        kvs_log(lg, KVS_LOG_DEBUG, "no buffer-stock thread: buffers are zeroed when asked for");
    kvs_capture_hooks_init(t);
    if (cfg->set_nvtx_env && (cfg->activities & KVS_TRACE_NVTX))
        point_nvtx_at_cupti(t);

    CUptiResult r = cuptiSubscribe(&t->sub, on_callback, NULL);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        kvs_log(lg, KVS_LOG_ERROR,
                "CUPTI already has a client in this process (the PyTorch profiler, Nsight "
                "Systems/Compute, or another capture); CUPTI allows only one, so kvscope "
                "cannot capture. Turn the other profiler off.");
        trace_release(t);
        return KVS_STATUS_CUPTI;
    }
    if (r != CUPTI_SUCCESS) {
        /* without a driver CUPTI only says CUPTI_ERROR_UNKNOWN */
        void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (!drv)
            drv = dlopen("libcuda.so.1", RTLD_NOW);
        const char *what = NULL;
        cuptiGetResultString(r, &what);
        if (!drv)
            kvs_log(lg, KVS_LOG_ERROR, "no NVIDIA driver is installed (libcuda.so.1 cannot be "
                                       "loaded): nothing to capture (CUPTI: %s)",
                    what ? what : "?");
        else
            kvs_check_fail(lg, KVS_STATUS_CUPTI, "CUPTI", (long)r, what, "cuptiSubscribe",
                           __FILE__, __LINE__);
        if (drv)
            dlclose(drv);
        trace_release(t);
        return KVS_STATUS_CUPTI;
    }
    enum kvs_status st = subscribed(t);
    if (st != KVS_STATUS_OK) {
        cuptiUnsubscribe(t->sub);
        trace_release(t);
        return st;
    }
    atomic_store(&g_active, t);
    *out = t;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_capture_start_quiet(struct kvs_trace *t, const char *window_name)
{
    if (!t)
        return KVS_STATUS_INVALID_ARGUMENT;
    pthread_mutex_lock(&g_ctl);
    if (window_name)
        t->window = window_name;
    enum kvs_status st = atomic_load(&t->running) ? KVS_STATUS_OK : enable_kinds(t);
    pthread_mutex_unlock(&g_ctl);
    return st;
}

enum kvs_status kvs_trace_start(struct kvs_trace *t)
{
    /* the caller's thread, outside any CUDA call: a safe moment for the driver */
    if (t && !t->ndevices)
        kvs_capture_query_devices(t, 1);
    return kvs_capture_start_quiet(t, NULL);
}

void kvs_capture_on_attach(struct kvs_trace *t, void (*fn)(void *), void *user)
{
    t->on_attach_user = user;
    t->on_attach = fn;
}

void kvs_capture_on_context(struct kvs_trace *t, void (*fn)(void *), void *user)
{
    t->on_context_user = user;
    t->on_context = fn;
}

/* Outside the window the capture waits on the driver's cuProfilerStart
 * (cudaProfilerStart makes it); cuProfilerStop's callback is on from the
 * start too and never turned off: turning it off inside its own entry left
 * CUPTI inside that call for good (disable_kinds says how). Both are rare
 * calls: no cost a launch. */
static enum kvs_status follow_profiler_calls(struct kvs_trace *t)
{
    KVS_CUPTI_TRY(&t->lg, cuptiEnableCallback(1, t->sub, CUPTI_CB_DOMAIN_DRIVER_API,
                                              CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
    KVS_CUPTI_TRY(&t->lg, cuptiEnableCallback(1, t->sub, CUPTI_CB_DOMAIN_DRIVER_API,
                                              CUPTI_DRIVER_TRACE_CBID_cuProfilerStart));
    return KVS_STATUS_OK;
}

static void start_detacher(struct kvs_trace *t);

enum kvs_status kvs_capture_follow_profiler_api(struct kvs_trace *t, const char *window_name)
{
    t->window = window_name;
    KVS_TRY(follow_profiler_calls(t));
    atomic_store(&t->watch_profiler, 1);
    const char *d = getenv("KVS_CAPTURE_DETACH");
    /* off unless asked for, until the gpu tests have run it on a GPU
     * (docs/capture.md, "Detached between windows") */
    t->detach = d && !strcmp(d, "1") ? 1 : d && !strcmp(d, "thread") ? 2 : 0;
    if (t->detach)
        start_detacher(t);
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// detaching CUPTI between windows
//
// A CUPTI that has recorded stays dearer a launch after its kinds are off
// (+0.4..+1.1 us on the H200: docs/capture.md, "Outside the window"), until
// it is detached with cuptiFinalize. So once a cudaProfilerStart window has
// been closed KVS_DETACH_QUIET_NS, a thread of the capture's own waits for
// the GPU work of every active primary context (records of kernels still
// running would be cut off) and flushes; the next API call's exit callback
// finalizes CUPTI (finalize_here: CUPTI's advice; KVS_CAPTURE_DETACH=thread
// does it on the thread itself), and the thread subscribes again to the
// closed window's callbacks once that callback is over (attaching inside a
// callback, or while one waits, crashed the program on the H200). Calls made
// meanwhile are not recorded; a cudaProfilerStart among them opens its
// window as soon as CUPTI is back (start_missed), one that came in the
// moment without any subscriber is counted when its stop comes
// (windows_missed). CUPTI may number correlation ids from 1 again: records
// carry the attachment (attach_gen) and the writer renumbers.

#define KVS_DETACH_QUIET_NS (20 * 1000000LL)

typedef CUresult (*drv_count_fn)(int *);
typedef CUresult (*drv_get_fn)(CUdevice *, int);
typedef CUresult (*drv_state_fn)(CUdevice, unsigned *, int *);
typedef CUresult (*drv_retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*drv_release_fn)(CUdevice);
typedef CUresult (*drv_push_fn)(CUcontext);
typedef CUresult (*drv_pop_fn)(CUcontext *);
typedef CUresult (*drv_sync_fn)(void);

/* Waits for the GPU work of every active primary context (on this thread,
 * outside any CUDA call of the program's). 0 done (or no driver loaded: no
 * GPU work), -1 when the driver could not say. */
static int sync_primary_contexts(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    drv_count_fn count = (drv_count_fn)dlsym(h, "cuDeviceGetCount");
    drv_get_fn get = (drv_get_fn)dlsym(h, "cuDeviceGet");
    drv_state_fn state = (drv_state_fn)dlsym(h, "cuDevicePrimaryCtxGetState");
    drv_retain_fn retain = (drv_retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    drv_release_fn release = (drv_release_fn)dlsym(h, "cuDevicePrimaryCtxRelease_v2");
    drv_push_fn push = (drv_push_fn)dlsym(h, "cuCtxPushCurrent_v2");
    drv_pop_fn pop = (drv_pop_fn)dlsym(h, "cuCtxPopCurrent_v2");
    drv_sync_fn sync = (drv_sync_fn)dlsym(h, "cuCtxSynchronize");
    dlclose(h); /* NOLOAD: only drops the reference just taken */
    int n = 0;
    if (!count || !get || !state || !retain || !release || !push || !pop || !sync ||
        count(&n) != CUDA_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++) {
        CUdevice dev;
        unsigned flags = 0;
        int active = 0;
        CUcontext ctx = NULL, was = NULL;
        if (get(&dev, i) != CUDA_SUCCESS || state(dev, &flags, &active) != CUDA_SUCCESS || !active)
            continue;
        if (retain(&ctx, dev) != CUDA_SUCCESS)
            return -1;
        int ok = push(ctx) == CUDA_SUCCESS;
        if (ok) {
            ok = sync() == CUDA_SUCCESS;
            pop(&was);
        }
        release(dev);
        if (!ok)
            return -1;
    }
    return 0;
}

/* The detacher's side of a detach at an API call's exit (CUPTI's advice:
 * cuptiFinalize from another thread raced the program's CUPTI calls in
 * Kineto): ask the next exit callback of a runtime or driver call on any
 * thread to finalize (finalize_here), with callbacks on the launch and
 * synchronize calls so that one comes soon, and wait for it; then leave
 * CUPTI's return path from that callback a millisecond before anything
 * attaches again. *canceled: a cudaProfilerStart came first (nothing done);
 * also when the capture stops meanwhile. */
static CUptiResult finalize_at_callsite(struct kvs_trace *t, int *canceled)
{
    static const CUpti_CallbackId hot[] = {
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,     CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,     CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};
    *canceled = 0;
    atomic_store(&t->fin_done, 0);
    atomic_store(&t->fin_canceled, 0);
    /* on for good: turning one off while its call runs misnumbers that
     * thread's later calls (disable_kinds); they return at once */
    for (size_t i = 0; i < sizeof hot / sizeof hot[0]; i++)
        cuptiEnableCallback(1, t->sub, CUPTI_CB_DOMAIN_DRIVER_API, hot[i]);
    atomic_store(&t->fin_req, 1);
    pthread_mutex_lock(&t->det_mu);
    while (!atomic_load(&t->fin_done) && !atomic_load(&t->fin_canceled)) {
        if (t->det_stop && atomic_exchange(&t->fin_req, 0)) { /* the capture stops */
            atomic_store(&t->fin_canceled, 1);
            break;
        }
        int64_t due = kvs_now_ns() + 50 * 1000000LL;
        struct timespec ts = {(time_t)(due / 1000000000), (long)(due % 1000000000)};
        pthread_cond_timedwait(&t->det_cv, &t->det_mu, &ts);
    }
    pthread_mutex_unlock(&t->det_mu);
    if (atomic_load(&t->fin_canceled) && !atomic_load(&t->fin_done)) {
        *canceled = 1;
        return CUPTI_SUCCESS;
    }
    for (int i = 0; atomic_load(&t->fin_done) != 2 && i < 100000; i++)
        sched_yield(); /* the callback gives its count back */
    struct timespec ms = {0, 1000000}; /* and CUPTI's return path after it */
    nanosleep(&ms, NULL);
    return (CUptiResult)t->fin_result;
}

static void ask_detach(struct kvs_trace *t)
{
    atomic_store(&t->closed_at_ns, kvs_now_ns());
    pthread_mutex_lock(&t->det_mu);
    t->det_asked = 1;
    pthread_cond_signal(&t->det_cv);
    pthread_mutex_unlock(&t->det_mu);
}

/* The detacher, once the window has stayed closed: see above. */
static void detach_now(struct kvs_trace *t)
{
    int64_t t0 = kvs_now_ns();
    if (sync_primary_contexts() != 0)
        return; /* records of kernels still running would be lost: stay attached */
    pthread_mutex_lock(&g_ctl);
    int ok = !atomic_load(&t->running) && atomic_load(&t->watch_profiler) &&
             atomic_load(&t->closed_at_ns) && kvs_capture_streams_open() == 0;
    if (ok) {
        atomic_store(&t->det_state, 1);
        /* the recorded calls' callbacks off (they return at once between
         * windows): CUPTI, finalized next, calls back on no launch meanwhile */
        for (int d = 0; t->detach == 2 && d < 2; d++) /* (at a call's exit: they are wanted) */
            if (t->api_by_callback[d])
                kvs_capture_api_enable(t, d, 0);
    }
    pthread_mutex_unlock(&g_ctl);
    if (!ok)
        return;
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
        atomic_fetch_add(&t->cupti_dropped, dropped);
    int canceled = 0;
    if (r == CUPTI_SUCCESS && t->detach == 2)
        r = cuptiFinalize();
    else if (r == CUPTI_SUCCESS)
        r = finalize_at_callsite(t, &canceled);
    if (canceled) { /* a window opened first: CUPTI stays as it is */
        pthread_mutex_lock(&g_ctl);
        atomic_store(&t->det_state, 0);
        int late = atomic_exchange(&t->start_missed, 0) && !atomic_load(&t->running);
        if (late)
            enable_kinds(t);
        pthread_mutex_unlock(&g_ctl);
        kvs_log(&t->lg, KVS_LOG_DEBUG, "detach between windows called off: a window opened");
        return;
    }
    if (r != CUPTI_SUCCESS) {
        const char *what = NULL;
        cuptiGetResultString(r, &what);
        kvs_log(&t->lg, KVS_LOG_WARN, "CUPTI would not detach between windows (%s): it stays "
                                      "attached", what ? what : "?");
        pthread_mutex_lock(&g_ctl);
        t->detach = 0;
        atomic_store(&t->det_state, 0);
        pthread_mutex_unlock(&g_ctl);
        return;
    }
    unsigned gen = atomic_fetch_add(&t->attach_gen, 1) + 1;
    kvs_pool_set_gen(&t->pool, gen);
    int64_t t1 = kvs_now_ns();
    enum kvs_status st = KVS_CUPTI_STATUS(&t->lg, cuptiSubscribe(&t->sub, on_callback, NULL));
    if (st == KVS_STATUS_OK)
        st = subscribed(t);
    if (st == KVS_STATUS_OK && t->on_attach)
        t->on_attach(t->on_attach_user);
    if (st == KVS_STATUS_OK)
        st = follow_profiler_calls(t);
    int64_t t2 = kvs_now_ns();
    pthread_mutex_lock(&g_ctl);
    if (st != KVS_STATUS_OK) {
        kvs_log(&t->lg, KVS_LOG_ERROR, "CUPTI could not be attached again after a detach "
                                       "between windows: no later window is recorded");
        atomic_store(&t->watch_profiler, 0);
        t->detach = 0;
    }
    atomic_store(&t->det_state, 0);
    t->detaches++;
    int late = atomic_exchange(&t->start_missed, 0) && st == KVS_STATUS_OK &&
               !atomic_load(&t->running);
    if (late)
        enable_kinds(t);
    pthread_mutex_unlock(&g_ctl);
    if (late)
        kvs_log(&t->lg, KVS_LOG_INFO, "a window opened while CUPTI was being detached: it "
                                      "records from now on");
    kvs_log(&t->lg, KVS_LOG_DEBUG, "CUPTI detached between windows (%u so far): synchronize and "
                                   "finalize %.2f ms, attach %.2f ms",
            t->detaches, (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6);
}

static void *detacher(void *arg)
{
    struct kvs_trace *t = arg;
    pthread_mutex_lock(&t->det_mu);
    while (!t->det_stop) {
        if (!t->det_asked) {
            pthread_cond_wait(&t->det_cv, &t->det_mu);
            continue;
        }
        int64_t closed = atomic_load(&t->closed_at_ns), now = kvs_now_ns();
        if (!closed) { /* a window opened again */
            t->det_asked = 0;
            continue;
        }
        if (now < closed + KVS_DETACH_QUIET_NS) {
            int64_t due = closed + KVS_DETACH_QUIET_NS;
            struct timespec ts = {(time_t)(due / 1000000000), (long)(due % 1000000000)};
            pthread_cond_timedwait(&t->det_cv, &t->det_mu, &ts);
            continue;
        }
        t->det_asked = 0;
        pthread_mutex_unlock(&t->det_mu);
        detach_now(t);
        pthread_mutex_lock(&t->det_mu);
    }
    pthread_mutex_unlock(&t->det_mu);
    return NULL;
}

static void start_detacher(struct kvs_trace *t)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* kvs_now_ns's clock */
    pthread_mutex_init(&t->det_mu, NULL);
    pthread_cond_init(&t->det_cv, &ca);
    pthread_condattr_destroy(&ca);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the program's signals are not ours */
    t->det_thread = pthread_create(&t->det_tid, NULL, detacher, t) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!t->det_thread) {
        t->detach = 0;
        kvs_log(&t->lg, KVS_LOG_DEBUG, "no detacher thread: CUPTI stays attached between windows");
    }
}

/* Before the last flush: a detach under way finishes first. */
static void stop_detacher(struct kvs_trace *t)
{
    if (!t->det_thread || t->pid != (uint32_t)getpid()) /* a forked child has none */
        return;
    pthread_mutex_lock(&t->det_mu);
    t->det_stop = 1;
    pthread_cond_signal(&t->det_cv);
    pthread_mutex_unlock(&t->det_mu);
    pthread_join(t->det_tid, NULL);
    t->det_thread = 0;
}

enum kvs_status kvs_trace_stop(struct kvs_trace *t)
{
    if (!t)
        return KVS_STATUS_INVALID_ARGUMENT;
    atomic_store(&t->watch_profiler, 0);
    stop_detacher(t);
    unsigned missed = atomic_exchange(&t->windows_missed, 0);
    if (missed)
        kvs_log(&t->lg, KVS_LOG_WARN,
                "%u cudaProfilerStart windows were not recorded: each began while CUPTI was being "
                "detached between windows (without KVS_CAPTURE_DETACH=1 CUPTI stays attached)",
                missed);
    pthread_mutex_lock(&g_ctl);
    if (atomic_load(&t->running))
        disable_kinds(t);
    pthread_mutex_unlock(&g_ctl);
    /* outside every lock: the flush calls buffer_completed on this thread */
    int64_t t0 = kvs_now_ns();
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    t->flush_ns += (uint64_t)(kvs_now_ns() - t0);
    /* records dropped while no buffer was left never reach buffer_completed */
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
        atomic_fetch_add(&t->cupti_dropped, dropped);
    return KVS_CUPTI_STATUS(&t->lg, r);
}

void kvs_trace_get_stats(const struct kvs_trace *t, struct kvs_trace_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!t)
        return;
    struct kvs_trace *m = (struct kvs_trace *)t; /* the counters' locks */
    pthread_mutex_lock(&m->pool.mu);
    s->buffers_used = m->pool.allocated;
    s->buffer_requests_denied = m->pool.denied;
    pthread_mutex_unlock(&m->pool.mu);
    pthread_mutex_lock(&m->host.mu);
    s->host_records = m->host.added;
    s->host_dropped = m->host.dropped;
    pthread_mutex_unlock(&m->host.mu);
    s->host_dropped += atomic_load(&m->host_overflow);
    s->buffers_max = t->pool.max_buffers;
    s->buffer_bytes = t->pool.buf_bytes;
    s->dropped_records = atomic_load(&m->cupti_dropped) + atomic_load(&m->api_dropped);
    s->callback_ns = atomic_load(&m->callback_ns);
    s->flush_ns = t->flush_ns;
}

void kvs_trace_free(struct kvs_trace *t)
{
    if (!t)
        return;
    if (atomic_load(&t->running) || atomic_load(&t->watch_profiler))
        kvs_trace_stop(t);
    cuptiEnableDomain(0, t->sub, CUPTI_CB_DOMAIN_NVTX);
    cuptiUnsubscribe(t->sub);
    atomic_store(&g_active, NULL);
    while (atomic_load(&g_cb_inflight) != 0)
        sched_yield();
    trace_release(t);
}
