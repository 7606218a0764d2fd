/* inject.c — libkvscope-inject.so: the capture inside a program that was not
 * built for it. `kvscope capture` starts the program with
 *   CUDA_INJECTION64_PATH=libkvscope-inject.so  (the driver calls
 *                            InitializeInjection during cuInit)
 *   NVTX_INJECTION64_PATH=libkvscope-inject.so  (NVTX calls
 *                            InitializeInjectionNvtx2 at its first use; we
 *                            hand NVTX on to CUPTI, whose callbacks we get)
 *   KVS_CAPTURE_OUTPUT, KVS_CAPTURE_WINDOW, KVS_CAPTURE_ACTIVITIES,
 *   KVS_CAPTURE_BUFFER_MB, KVS_CAPTURE_MAX_BUFFERS, KVS_CAPTURE_REPORT_FD,
 *   KVS_CAPTURE_ROOT_PID, KVS_CAPTURE_LOG=debug
 * Whichever entry point comes first sets the capture up (once). A third,
 * kvs_torch_ops_v1, hands kvscope's PyTorch hook (libtrace/torch/) the
 * table its ops are recorded through; it sets nothing up.
 *
 * The trace is written when the program returns from main or calls exit()
 * (atexit, plus a destructor for the paths that skip it) and when it gets
 * SIGINT/SIGTERM/SIGHUP with the default action: the handler only wakes a
 * thread that stops, flushes and writes, then lets the signal kill the
 * process as it would have. The same thread reads the devices' properties
 * when a context appears (at exit the driver may already be gone). Processes forked from the program without exec
 * never write (they would overwrite the parent's trace with a copy).
 *
 * Process-wide state here is inherent: one injected capture per process.
 */
#define _GNU_SOURCE /* dladdr, pipe2 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture_internal.h"

typedef const void *(*kvs_nvtx_export_table_fn)(uint32_t id);

KVS_API int InitializeInjection(void);
KVS_API int InitializeInjectionNvtx2(kvs_nvtx_export_table_fn get_export_table);
KVS_API const struct kvs_torch_ops *kvs_torch_ops_v1(void);

static struct kvs_trace *g_trace;
static void on_attach(void *user);
static struct kvs_logger g_lg;
static pid_t g_pid;
static char g_out[PATH_MAX];
static int g_report_fd = -1;
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_finish_once = PTHREAD_ONCE_INIT;
static int g_sigpipe[2] = {-1, -1};
static const int k_signals[] = {SIGINT, SIGTERM, SIGHUP};
static int g_sig_ours[3];

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    if (g_report_fd < 0)
        return;
    char line[PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!write(g_report_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

// ----------------------------------------------------------------------------
// finishing

static void finish(void)
{
    if (!g_trace || getpid() != g_pid)
        return;
    enum kvs_status st = kvs_trace_stop(g_trace);
    if (st == KVS_STATUS_OK)
        st = kvs_trace_write(g_trace, g_out);
    struct kvs_trace_stats s;
    kvs_trace_get_stats(g_trace, &s);
    if (st == KVS_STATUS_OK)
        report("kvscope-capture pid=%d status=ok dropped=%llu denied=%llu host_dropped=%llu "
               "buffers=%u path=%s\n",
               (int)g_pid, (unsigned long long)s.dropped_records,
               (unsigned long long)s.buffer_requests_denied, (unsigned long long)s.host_dropped,
               s.buffers_used, g_out);
    else
        report("kvscope-capture pid=%d status=error what=%s path=%s\n", (int)g_pid,
               kvs_status_str(st), g_out);
    /* the capture is not freed: the program's threads may still be running */
}

static void finish_once(void) { pthread_once(&g_finish_once, finish); }

__attribute__((destructor)) static void at_unload(void) { finish_once(); }

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char c = (unsigned char)sig;
    (void)!write(g_sigpipe[1], &c, 1);
    errno = saved;
}

#define QUERY_DEVICES 255 /* not a signal number */

/* CUPTI's context-created callback: the driver is busy there, so the
 * device query happens on the helper thread, right after. */
static void on_context(void *user)
{
    (void)user;
    unsigned char c = QUERY_DEVICES;
    (void)!write(g_sigpipe[1], &c, 1);
}

static int query_devices(void)
{
    if (!g_trace || getpid() != g_pid || kvs_capture_query_devices(g_trace, 0) <= 0)
        return 0;
    /* CUDA is initialised now, its own exit handlers registered: one more
     * registration makes the trace be written before they tear the driver
     * down (finish runs once; the first registration stays as a fallback) */
    atexit(finish_once);
    return 1;
}

/* The helper thread: device queries, and the signals' finishing work.
 * The devices are read once CUDA is up: woken by CUPTI (context created,
 * first buffers), it retries every 2 ms for 2 s, since cuInit may still be
 * under way; otherwise it looks every 100 ms. (The context-created callback
 * was seen not to arrive when the capture started before cuInit.) */
static void *finisher(void *arg)
{
    (void)arg;
    int devices_known = 0, fast_tries = 0;
    for (;;) {
        struct pollfd pf = {g_sigpipe[0], POLLIN, 0};
        int wait_ms = devices_known ? -1 : fast_tries > 0 ? 2 : 100;
        int r = poll(&pf, 1, wait_ms);
        if (r < 0 && errno != EINTR)
            return NULL;
        if (r <= 0 || !(pf.revents & POLLIN)) {
            if (r == 0) {
                devices_known = query_devices();
                fast_tries -= fast_tries > 0;
            }
            continue;
        }
        unsigned char c;
        ssize_t n = read(g_sigpipe[0], &c, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != 1)
            return NULL;
        if (c == QUERY_DEVICES) {
            if (!devices_known && !(devices_known = query_devices()))
                fast_tries = 1000;
            continue;
        }
        finish_once();
        signal(c, SIG_DFL);
        kill(getpid(), c); /* what the signal would have done */
        return NULL;
    }
}

/* A child forked without exec has no finisher thread: give it back the
 * default actions, or SIGTERM would no longer end it. */
static void after_fork_child(void)
{
    for (size_t i = 0; i < sizeof k_signals / sizeof k_signals[0]; i++)
        if (g_sig_ours[i])
            signal(k_signals[i], SIG_DFL);
}

static void watch_signals(void)
{
    if (pipe2(g_sigpipe, O_CLOEXEC) != 0)
        return;
    /* writers (a signal handler, CUPTI's callbacks) must never block */
    fcntl(g_sigpipe[1], F_SETFL, fcntl(g_sigpipe[1], F_GETFL) | O_NONBLOCK);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the finisher never runs the handler */
    pthread_t th;
    int ok = pthread_create(&th, NULL, finisher, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!ok)
        return;
    pthread_detach(th);
    kvs_capture_on_context(g_trace, on_context, NULL);
    for (size_t i = 0; i < sizeof k_signals / sizeof k_signals[0]; i++) {
        struct sigaction cur;
        if (sigaction(k_signals[i], NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
            continue; /* the program handles it (Python: KeyboardInterrupt, then exit) */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        g_sig_ours[i] = sigaction(k_signals[i], &sa, NULL) == 0;
    }
    pthread_atfork(NULL, NULL, after_fork_child);
}

// ----------------------------------------------------------------------------
// set-up

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    char *end;
    long x = v ? strtol(v, &end, 10) : dflt;
    return v && *v && *end == '\0' ? x : dflt;
}

/* %p -> pid, %r -> rank; a process other than the one the launcher started
 * (no %p given) writes next to it as NAME.pidN.json[.gz]. */
static void output_path(const char *tmpl, int rank, char *out, size_t n)
{
    size_t o = 0;
    int has_pid = 0;
    for (const char *p = tmpl; *p && o + 24 < n; p++) {
        if (p[0] == '%' && (p[1] == 'p' || p[1] == 'r')) {
            o += (size_t)snprintf(out + o, n - o, "%d", p[1] == 'p' ? (int)g_pid : rank);
            has_pid |= p[1] == 'p';
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    long root = env_long("KVS_CAPTURE_ROOT_PID", -1);
    if (has_pid || root < 0 || root == (long)g_pid)
        return;
    char *ext = strstr(out, ".json");
    char tail[64] = "";
    if (ext) {
        snprintf(tail, sizeof tail, "%s", ext);
        *ext = '\0';
    }
    size_t len = strlen(out);
    snprintf(out + len, n - len, ".pid%d%s", (int)g_pid, ext ? tail : ".json");
}

static void init(void)
{
    g_pid = getpid();
    g_report_fd = (int)env_long("KVS_CAPTURE_REPORT_FD", -1);
    if (g_report_fd >= 0 && fcntl(g_report_fd, F_GETFD) == -1)
        g_report_fd = -1;
    struct kvs_trace_config cfg;
    kvs_trace_config_init(&cfg);
    const char *lvl = getenv("KVS_CAPTURE_LOG");
    if (lvl && !strcmp(lvl, "debug"))
        cfg.logger.min_level = KVS_LOG_DEBUG;
    g_lg = cfg.logger;
    /* out of bounds (set by hand: the launcher refuses them): the default,
     * not a shift that overflows or a count that wraps */
    long mb = env_long("KVS_CAPTURE_BUFFER_MB", 4), nb = env_long("KVS_CAPTURE_MAX_BUFFERS", 32);
    if (mb < 1 || mb > KVS_CAPTURE_BUFFER_MB_MAX) {
        kvs_log(&g_lg, KVS_LOG_WARN, "KVS_CAPTURE_BUFFER_MB outside [1, %d]: 4",
                KVS_CAPTURE_BUFFER_MB_MAX);
        mb = 4;
    }
    if (nb < 1 || nb > KVS_CAPTURE_MAX_BUFFERS_MAX) {
        kvs_log(&g_lg, KVS_LOG_WARN, "KVS_CAPTURE_MAX_BUFFERS outside [1, %d]: 32",
                KVS_CAPTURE_MAX_BUFFERS_MAX);
        nb = 32;
    }
    cfg.buffer_bytes = (size_t)mb << 20;
    cfg.max_buffers = (unsigned)nb;
    const char *acts = getenv("KVS_CAPTURE_ACTIVITIES");
    if (acts && *acts && kvs_trace_parse_activities(acts, &cfg.activities) != KVS_STATUS_OK)
        kvs_log(&g_lg, KVS_LOG_WARN,
                "KVS_CAPTURE_ACTIVITIES=%s not understood: recording the default", acts);
    cfg.rank = (int)env_long("RANK", -1);
    cfg.world_size = (int)env_long("WORLD_SIZE", cfg.rank >= 0 ? 1 : 0);
    cfg.set_nvtx_env = 0; /* the launcher pointed NVTX at this library */
    const char *tmpl = getenv("KVS_CAPTURE_OUTPUT");
    output_path(tmpl && *tmpl ? tmpl : "kvscope-trace.%p.json", cfg.rank, g_out, sizeof g_out);
    const char *window = getenv("KVS_CAPTURE_WINDOW");
    int follow = window && !strcmp(window, "cudaProfilerStart");

    enum kvs_status st = kvs_trace_create(&cfg, &g_trace);
    if (st == KVS_STATUS_OK)
        st = follow ? kvs_capture_follow_profiler_api(g_trace, "cudaProfilerStart")
                    : kvs_capture_start_quiet(g_trace, "all");
    if (st != KVS_STATUS_OK) {
        report("kvscope-capture pid=%d status=error what=%s path=%s\n", (int)g_pid,
               kvs_status_str(st), g_out);
        if (g_trace) {
            kvs_trace_free(g_trace);
            g_trace = NULL;
        }
        return;
    }
    atexit(finish_once);
    watch_signals();
    kvs_capture_on_attach(g_trace, on_attach, NULL);
    kvs_capture_torch_attach(g_trace); /* PyTorch's ops, when the hook is loaded */
}

int InitializeInjection(void)
{
    pthread_once(&g_init_once, init);
    return 1; /* even without a capture: never stop the program from running */
}

/* For kvscope's PyTorch hook (libtrace/torch/), which loads this library
 * when the program imports torch, before CUDA may have started it: its ops
 * are recorded once the capture runs (CUDA or NVTX set it up). */
const struct kvs_torch_ops *kvs_torch_ops_v1(void)
{
    return kvs_capture_torch_ops();
}

/* NVTX as handed to CUPTI (InitializeInjectionNvtx2 below), to hand it
 * again after a detach: KVS_CAPTURE_NVTX_REINIT=1 (whether a CUPTI attached
 * again still gets NVTX's calls without it is what the GPU test shows) */
static int (*g_cupti_nvtx_init)(kvs_nvtx_export_table_fn);
static kvs_nvtx_export_table_fn g_nvtx_table;

static void on_attach(void *user)
{
    (void)user;
    const char *v = getenv("KVS_CAPTURE_NVTX_REINIT");
    if (!g_cupti_nvtx_init || !v || strcmp(v, "1"))
        return;
    int ok = g_cupti_nvtx_init(g_nvtx_table);
    kvs_log(&g_lg, ok ? KVS_LOG_DEBUG : KVS_LOG_WARN, "NVTX handed to CUPTI again after a detach: %s",
            ok ? "ok" : "refused");
}

int InitializeInjectionNvtx2(kvs_nvtx_export_table_fn get_export_table)
{
    pthread_once(&g_init_once, init);
    if (!g_trace)
        return 0; /* NVTX stays a no-op */
    /* CUPTI's own NVTX entry point, next to cuptiSubscribe in libcupti */
    Dl_info info;
    if (!dladdr((void *)cuptiSubscribe, &info) || !info.dli_fname)
        return 0;
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    int (*cupti_init)(kvs_nvtx_export_table_fn) =
        (int (*)(kvs_nvtx_export_table_fn))dlsym(h, "InitializeInjectionNvtx2");
    dlclose(h); /* NOLOAD: only drops the reference we just took */
    if (!cupti_init || cupti_init == InitializeInjectionNvtx2)
        return 0;
    int ok = cupti_init(get_export_table);
    kvs_log(&g_lg, ok ? KVS_LOG_DEBUG : KVS_LOG_WARN, "NVTX handed to CUPTI (%s): %s",
            info.dli_fname, ok ? "ok" : "refused; NVTX ranges will be missing");
    if (ok) {
        g_nvtx_table = get_export_table;
        g_cupti_nvtx_init = cupti_init;
    }
    return ok;
}
