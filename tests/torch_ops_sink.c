/* tests/torch_ops_sink.c — libkvs-torch-sink.so, a stand-in for
 * libkvscope-inject.so on a machine without a GPU, for the tests of
 * kvscope's PyTorch hook (tests/test_torch_ops.py).
 *
 * Without a driver the injection library never starts (CUDA never loads
 * it, CUPTI cannot subscribe), so `kvscope capture` of a PyTorch program
 * records nothing here. This library exports what the hook looks for
 * (kvs_torch_ops_v1, as inject.c does) and records through the capture's
 * own op code (libtrace/capture_host.c, compiled in) into the capture's
 * store, then writes the trace with libtrace's writer when the program
 * exits and reports to `kvscope capture` through KVS_CAPTURE_REPORT_FD in
 * inject.c's words. Only CUPTI is missing: no GPU records, and the few
 * CUPTI functions capture_host.c calls are stubs (never reached: ops push
 * no CUPTI external id unless CUPTI records API calls itself).
 *
 * It "starts" when loaded (as if CUDA had started the capture). With
 * KVS_SINK_RUNNING=0 it is loaded but not recording (a closed window);
 * kvs_sink_set_running opens and closes that window while it runs.
 * Used with KVS_INJECT_LIB=.../libkvs-torch-sink.so.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capture_internal.h"

KVS_API const struct kvs_torch_ops *kvs_torch_ops_v1(void);

// ----------------------------------------------------------------------------
// what capture.c gives capture_host.c, and CUPTI

int64_t kvs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint32_t kvs_gettid(void)
{
    static _Thread_local uint32_t tid;
    if (!tid)
        tid = (uint32_t)syscall(SYS_gettid);
    return tid;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                                            uint64_t id)
{
    (void)k, (void)id;
    abort(); /* ext_by_cupti is 0 here */
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                                           uint64_t *id)
{
    (void)k, (void)id;
    abort();
}

CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t *id)
{
    (void)node, (void)id;
    abort(); /* no CUDA graphs without CUDA */
}

// ----------------------------------------------------------------------------
// the stand-in capture

static struct kvs_trace *g_t;
static pid_t g_pid;

static void finish(void)
{
    if (!g_t || getpid() != g_pid)
        return;
    atomic_store(&g_t->running, 0);
    int64_t end = kvs_now_ns();
    size_t n = kvs_host_store_count(&g_t->host);
    struct kvs_trace_rec *recs = calloc(n ? n : 1, sizeof *recs);
    if (!recs)
        return;
    n = kvs_host_store_collect(&g_t->host, recs, n, end);
    struct kvs_trace_meta m;
    kvs_trace_meta_init(&m);
    m.base_time_ns = g_t->base_time_ns;
    m.pid = g_t->pid;
    m.process_name = "torch_ops_sink";
    m.window = "all";
    m.activities = KVS_TRACE_NVTX;
    m.window_start_ns = g_t->window_start_ns;
    m.window_end_ns = end;
    m.stats.records = n;
    m.stats.host_records = n;
    m.stats.host_dropped = g_t->host.dropped + atomic_load(&g_t->host_overflow);
    m.stats.callback_ns = atomic_load(&g_t->callback_ns);
    const char *out = getenv("KVS_CAPTURE_OUTPUT");
    const char *fd_s = getenv("KVS_CAPTURE_REPORT_FD");
    int fd = fd_s ? atoi(fd_s) : -1;
    enum kvs_status st = out ? kvs_trace_write_json(&m, recs, n, out, NULL) : KVS_STATUS_IO;
    char line[4200];
    int k = st == KVS_STATUS_OK
                ? snprintf(line, sizeof line,
                           "kvscope-capture pid=%d status=ok dropped=0 denied=0 host_dropped=%llu "
                           "buffers=0 path=%s\n",
                           (int)g_pid, (unsigned long long)m.stats.host_dropped, out)
                : snprintf(line, sizeof line,
                           "kvscope-capture pid=%d status=error what=%s path=%s\n", (int)g_pid,
                           kvs_status_str(st), out ? out : "?");
    if (fd >= 0 && k > 0)
        (void)!write(fd, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
    free(recs);
}

__attribute__((constructor)) static void start(void)
{
    struct kvs_trace *t = calloc(1, sizeof *t);
    if (!t)
        return;
    t->pid = (uint32_t)getpid();
    t->gen = 1;
    atomic_store(&t->next_external_id, 1);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    t->base_time_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - kvs_now_ns();
    if (kvs_host_store_init(&t->host, 64u << 20) != 0 || kvs_capture_host_init(t) != 0)
        return;
    t->kinds_on = KVS_TRACE_NVTX;
    t->window_start_ns = kvs_now_ns();
    const char *run = getenv("KVS_SINK_RUNNING");
    atomic_store(&t->running, !(run && !strcmp(run, "0")));
    g_pid = getpid();
    g_t = t;
    kvs_capture_torch_attach(t);
    atexit(finish);
}

const struct kvs_torch_ops *kvs_torch_ops_v1(void)
{
    return kvs_capture_torch_ops();
}

/* For a test program (ctypes): open (1) or close (0) the stand-in's window,
 * as cudaProfilerStart/Stop do the injected capture's. */
KVS_API void kvs_sink_set_running(int on);
void kvs_sink_set_running(int on)
{
    if (!g_t)
        return;
    atomic_store(&g_t->running, on != 0);
    kvs_capture_torch_update();
}
