/* tests/test_capture_detach.c — the capture's detach between
 * cudaProfilerStart windows (libtrace/capture.c), on a CPU: the whole
 * capture (capture.c, capture_api.c, capture_host.c, capture_write.c)
 * linked against a stand-in CUPTI defined here, which keeps the subscriber's
 * callback and what is enabled, forgets both at cuptiFinalize, and numbers
 * nothing itself: the test plays the program's calls through the callback
 * with the correlation ids a CUPTI attached again might give (from 1 again).
 * Checked: no detach while a window is open or before it has stayed closed;
 * the finalize happens inside an API call's exit callback, the attach after
 * it on the capture's thread, with the closed window's callbacks only; the
 * second window is recorded; the written trace gives every call its own
 * correlation id although both windows' ids were 1, 2, 3; a
 * cudaProfilerStart before the finalize calls the detach off and its window
 * opens; KVS_CAPTURE_DETACH=thread finalizes on the capture's thread;
 * KVS_CAPTURE_DETACH=0, and no KVS_CAPTURE_DETACH (the default for now),
 * keep CUPTI attached.
 *   meson test -C build test_capture_detach
 */
#define _GNU_SOURCE /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture_internal.h"
#include "kvs_test.h"

// ----------------------------------------------------------------------------
// a stand-in CUPTI

#define NDOM CUPTI_CB_DOMAIN_SIZE
#define NCB 1024

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static CUpti_CallbackFunc g_cb;  /* the subscriber's, NULL when none */
static int g_on[NDOM][NCB];      /* callbacks enabled */
static int g_subscribes, g_finalizes;
static int g_finalize_in_callback; /* cuptiFinalize called from inside g_cb */
static _Thread_local int t_in_cb;

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&g_mu);
    CUptiResult r = CUPTI_SUCCESS;
    if (g_cb)
        r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    else {
        g_cb = cb;
        g_subscribes++;
        *sub = (CUpti_SubscriberHandle)(uintptr_t)g_subscribes;
    }
    pthread_mutex_unlock(&g_mu);
    return r;
}
CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
    (void)sub;
    pthread_mutex_lock(&g_mu);
    g_cb = NULL;
    memset(g_on, 0, sizeof g_on);
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiFinalize(void)
{
    pthread_mutex_lock(&g_mu);
    g_cb = NULL;
    memset(g_on, 0, sizeof g_on);
    g_finalizes++;
    g_finalize_in_callback += t_in_cb;
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle sub,
                                         CUpti_CallbackDomain dom, CUpti_CallbackId cbid)
{
    (void)sub;
    if ((unsigned)dom >= NDOM || cbid >= NCB)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_mu);
    CUptiResult r = g_cb ? CUPTI_SUCCESS : CUPTI_ERROR_NOT_INITIALIZED;
    if (g_cb)
        g_on[dom][cbid] = (int)on;
    pthread_mutex_unlock(&g_mu);
    return r;
}
CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t on, CUpti_SubscriberHandle sub, CUpti_CallbackDomain dom)
{
    (void)on, (void)sub, (void)dom;
    return CUPTI_SUCCESS;
}
static const char *drv_name(uint32_t cbid)
{
    return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel     ? "cuLaunchKernel"
           : cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart  ? "cuProfilerStart"
           : cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop   ? "cuProfilerStop"
           : cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize ? "cuCtxSynchronize"
                                                              : NULL;
}
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain dom, uint32_t cbid, const char **name)
{
    *name = dom == CUPTI_CB_DOMAIN_DRIVER_API ? drv_name(cbid)
            : dom == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
                ? "cudaLaunchKernel_v7000"
                : NULL;
    return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind k) { (void)k; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind k) { (void)k; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) { (void)flag; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *b, size_t valid, CUpti_Activity **rec)
{
    (void)b, (void)valid, (void)rec;
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
}
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n)
{
    (void)c, (void)s;
    *n = 0;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind k, uint64_t id)
{
    (void)k, (void)id;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind k, uint64_t *id)
{
    (void)k, (void)id;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc a,
                                                    CUpti_BuffersCallbackCompleteFunc b)
{
    (void)a, (void)b;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
    (void)f;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute a, size_t *n, void *v)
{
    (void)a, (void)n, (void)v;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType t) { (void)t; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode n, uint64_t *id)
{
    (void)n, (void)id;
    return CUPTI_ERROR_NOT_SUPPORTED;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s)
{
    (void)r;
    *s = "stub";
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *ts)
{
    *ts = 0;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *v)
{
    *v = 0;
    return CUPTI_ERROR_NOT_SUPPORTED;
}

/* The program's call cbid of the driver (enter or exit), as CUPTI would
 * call back for it: only while subscribed and the callback is on. */
static void fire(CUpti_CallbackId cbid, int exit_site, uint32_t corr)
{
    pthread_mutex_lock(&g_mu);
    CUpti_CallbackFunc cb = g_on[CUPTI_CB_DOMAIN_DRIVER_API][cbid] ? g_cb : NULL;
    pthread_mutex_unlock(&g_mu);
    if (!cb)
        return;
    CUpti_CallbackData cd;
    memset(&cd, 0, sizeof cd);
    cd.callbackSite = exit_site ? CUPTI_API_EXIT : CUPTI_API_ENTER;
    cd.correlationId = corr;
    int ret = 0;
    cd.functionReturnValue = &ret;
    t_in_cb = 1;
    cb(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cd);
    t_in_cb = 0;
}

static void call(CUpti_CallbackId cbid, uint32_t corr)
{
    fire(cbid, 0, corr);
    fire(cbid, 1, corr);
}

static int on(CUpti_CallbackId cbid)
{
    pthread_mutex_lock(&g_mu);
    int v = g_on[CUPTI_CB_DOMAIN_DRIVER_API][cbid];
    pthread_mutex_unlock(&g_mu);
    return v;
}

static int counter(const int *c)
{
    pthread_mutex_lock(&g_mu);
    int v = *c;
    pthread_mutex_unlock(&g_mu);
    return v;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* launches (corr ids from first) until cond holds or 2 s pass: the calls
 * whose exit callback the detacher waits for */
static int launch_until(int (*cond)(void), uint32_t first)
{
    for (int i = 0; i < 2000; i++) {
        if (cond())
            return 1;
        call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, first + (uint32_t)i);
        sleep_ms(1);
    }
    return cond();
}
static int g_want_subscribes;
static int attached_again(void) { return counter(&g_subscribes) >= g_want_subscribes && on(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart); }

// ----------------------------------------------------------------------------

static struct kvs_trace *make(const char *detach)
{
    if (detach)
        setenv("KVS_CAPTURE_DETACH", detach, 1);
    else
        unsetenv("KVS_CAPTURE_DETACH");
    struct kvs_trace_config cfg;
    kvs_trace_config_init(&cfg);
    cfg.activities = KVS_TRACE_DEFAULT;
    cfg.set_nvtx_env = 0;
    cfg.logger.min_level = KVS_LOG_WARN;
    struct kvs_trace *t = NULL;
    if (kvs_trace_create(&cfg, &t) != KVS_STATUS_OK)
        return NULL;
    if (kvs_capture_follow_profiler_api(t, "cudaProfilerStart") != KVS_STATUS_OK) {
        kvs_trace_free(t);
        return NULL;
    }
    return t;
}

/* one window: start, n launches with ids first.., stop */
static void window(uint32_t first, int n)
{
    call(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, first - 1);
    for (int i = 0; i < n; i++)
        call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, first + (uint32_t)i);
    call(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, first + (uint32_t)n);
}

static void test_detach_and_renumber(void)
{
    struct kvs_trace *t = make("1");
    KVS_REQUIRE(t);
    KVS_CHECK_EQ_INT(t->detach, 1);
    int subs0 = counter(&g_subscribes), fins0 = counter(&g_finalizes);
    window(2, 3); /* ids 1 (start), 2..4 launches, 5 (stop) */
    KVS_CHECK(!atomic_load(&t->running));
    /* closed, but not 20 ms yet: attached */
    KVS_CHECK_EQ_INT(counter(&g_finalizes), fins0);
    sleep_ms(60);
    /* the detacher waits for an API call's exit: none came yet */
    KVS_CHECK_EQ_INT(counter(&g_finalizes), fins0);
    KVS_CHECK(on(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
    g_want_subscribes = subs0 + 1;
    KVS_CHECK(launch_until(attached_again, 100)); /* outside the window: not recorded */
    KVS_CHECK_EQ_INT(counter(&g_finalizes), fins0 + 1);
    KVS_CHECK_EQ_INT(counter(&g_finalize_in_callback), fins0 + 1); /* at a call's exit */
    KVS_CHECK_EQ_INT(counter(&g_subscribes), subs0 + 1);
    KVS_CHECK_EQ_INT(atomic_load(&t->attach_gen), 1);
    /* attached again with the closed window's callbacks only */
    KVS_CHECK(on(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
    KVS_CHECK(!on(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
    KVS_CHECK(!atomic_load(&t->det_state));
    /* the second window: CUPTI numbers from 1 again */
    window(2, 3);
    KVS_CHECK_EQ_INT(kvs_trace_stop(t), KVS_STATUS_OK);
    char path[64];
    snprintf(path, sizeof path, "/tmp/kvs_detach_%d.json", (int)getpid());
    KVS_CHECK_EQ_INT(kvs_trace_write(t, path), KVS_STATUS_OK);
    kvs_trace_free(t);
    /* six launches, six distinct correlation ids */
    FILE *f = fopen(path, "r");
    KVS_REQUIRE(f);
    char line[4096];
    int launches = 0;
    unsigned ids[16];
    while (fgets(line, sizeof line, f) && launches < 16) {
        const char *c = strstr(line, "\"cuLaunchKernel\"");
        const char *k = strstr(line, "\"correlation\": ");
        if (c && k)
            ids[launches++] = (unsigned)strtoul(k + 15, NULL, 10);
    }
    fclose(f);
    unlink(path);
    KVS_CHECK_EQ_INT(launches, 6);
    int distinct = 1;
    for (int i = 0; i < launches; i++)
        for (int j = 0; j < i; j++)
            distinct &= ids[i] != ids[j];
    KVS_CHECK(distinct);
    if (launches == 6)
        KVS_CHECK(ids[0] + ids[1] + ids[2] + ids[3] + ids[4] + ids[5] != 2 * (2 + 3 + 4));
}

static int g_fins_before;
static int finalized(void) { return counter(&g_finalizes) > g_fins_before; }

static void test_start_calls_it_off(void)
{
    struct kvs_trace *t = make("1");
    KVS_REQUIRE(t);
    int fins0 = counter(&g_finalizes);
    window(2, 2);
    sleep_ms(60); /* the detacher now waits for a call's exit */
    KVS_CHECK(atomic_load(&t->det_state) == 1 && atomic_load(&t->fin_req) == 1);
    /* the program opens a window first (its profiler calls do not finalize) */
    call(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, 10);
    for (int i = 0; i < 200 && !atomic_load(&t->running); i++)
        sleep_ms(1);
    KVS_CHECK(atomic_load(&t->running)); /* opened by the detacher, at once */
    KVS_CHECK(!atomic_load(&t->det_state));
    g_fins_before = fins0;
    call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 11);
    KVS_CHECK(!finalized()); /* called off: a launch finalizes nothing */
    call(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 12);
    KVS_CHECK_EQ_INT(kvs_trace_stop(t), KVS_STATUS_OK);
    kvs_trace_free(t);
}

/* a stream capture open when the window closes: no detach (its graph
 * nodes would be missed); and a stop whose start came while no subscriber
 * existed is counted */
static void test_stream_capture_and_missed(void)
{
    struct kvs_trace *t = make("1");
    KVS_REQUIRE(t);
    int fins0 = counter(&g_finalizes), subs0 = counter(&g_subscribes);
    call(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, 1); /* opened before the window */
    KVS_CHECK_EQ_INT(kvs_capture_streams_open(), 1);
    window(2, 2);
    sleep_ms(60);
    KVS_CHECK(!atomic_load(&t->det_state) && !atomic_load(&t->fin_req)); /* the detacher let it be */
    for (int i = 0; i < 20; i++)
        call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 10 + (uint32_t)i);
    KVS_CHECK_EQ_INT(counter(&g_finalizes), fins0);
    call(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, 30);
    KVS_CHECK_EQ_INT(kvs_capture_streams_open(), 0);
    /* the next window's close detaches */
    window(40, 2);
    g_want_subscribes = subs0 + 1;
    KVS_CHECK(launch_until(attached_again, 100));
    KVS_CHECK_EQ_INT(counter(&g_finalizes), fins0 + 1);
    /* a stop without its start (it came while CUPTI was away): counted, said at stop */
    call(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 200);
    KVS_CHECK_EQ_INT(atomic_load(&t->windows_missed), 1);
    KVS_CHECK_EQ_INT(kvs_trace_stop(t), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(atomic_load(&t->windows_missed), 0);
    kvs_trace_free(t);
}

/* KVS_CAPTURE_DETACH=thread: finalized on the capture's thread, no call needed */
static void test_detach_thread(void)
{
    struct kvs_trace *t = make("thread");
    KVS_REQUIRE(t);
    KVS_CHECK_EQ_INT(t->detach, 2);
    int subs0 = counter(&g_subscribes), fins0 = counter(&g_finalizes);
    int in_cb0 = counter(&g_finalize_in_callback);
    window(2, 2);
    g_want_subscribes = subs0 + 1;
    for (int i = 0; i < 500 && !attached_again(); i++)
        sleep_ms(1); /* no call of the program's meanwhile */
    KVS_CHECK(attached_again());
    KVS_CHECK_EQ_INT(counter(&g_finalizes), fins0 + 1);
    KVS_CHECK_EQ_INT(counter(&g_finalize_in_callback), in_cb0); /* not inside a callback */
    window(2, 2);
    KVS_CHECK_EQ_INT(kvs_trace_stop(t), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(kvs_capture_api_count(t), 4);
    kvs_trace_free(t);
}

static void test_detach_off(void)
{
    struct kvs_trace *t = make("0");
    KVS_REQUIRE(t);
    KVS_CHECK_EQ_INT(t->detach, 0);
    kvs_trace_free(t);
    t = make(NULL); /* the default, until a GPU has run it */
    KVS_REQUIRE(t);
    KVS_CHECK_EQ_INT(t->detach, 0);
    int fins0 = counter(&g_finalizes);
    window(2, 2);
    sleep_ms(60);
    for (int i = 0; i < 200; i++) { /* 200 ms of launches between the windows */
        call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 100 + (uint32_t)i);
        sleep_ms(1);
    }
    KVS_CHECK_EQ_INT(counter(&g_finalizes), fins0); /* never finalized */
    KVS_CHECK(!atomic_load(&t->det_state));
    KVS_CHECK_EQ_INT(kvs_trace_stop(t), KVS_STATUS_OK);
    kvs_trace_free(t);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {{"detach_and_renumber", test_detach_and_renumber},
                                            {"start_calls_it_off", test_start_calls_it_off},
                                            {"stream_capture_and_missed", test_stream_capture_and_missed},
                                            {"detach_thread", test_detach_thread},
                                            {"detach_off", test_detach_off},
                                            {0}};
    return kvs_test_main(argc, argv, tests);
}
