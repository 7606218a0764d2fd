/* cli/cmd_capture.c — `kvscope capture -o TRACE [options] -- PROGRAM [ARGS]`:
 * run an unmodified CUDA program (PyTorch included) with kvscope's
 * injection library and get a Kineto-compatible trace of what its GPUs did.
 *
 *   kvscope capture -o decode.json.gz -- python3 decode.py --steps 4
 *
 * The launcher itself does no CUDA: it sets CUDA_INJECTION64_PATH and
 * NVTX_INJECTION64_PATH to libkvscope-inject.so (libtrace/inject.c), which
 * captures inside the program and writes the trace when it exits. A report
 * pipe tells the launcher what each captured process wrote. A Python
 * program (--torch-ops auto, the default: python by name or by its #!
 * line) gets kvscope's PyTorch hook first on PYTHONPATH (libtrace/torch/
 * sitecustomize.py), which records torch's ops with their shapes once the
 * program imports torch. SIGINT/SIGTERM/
 * SIGHUP to the launcher are passed on (SIGINT after a grace period, since
 * a terminal's Ctrl-C already reached the program); the program writes its
 * trace and ends; after 30 s more it is killed.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kvscope/trace.h"

#ifndef KVS_INJECT_INSTALL_PATH
#define KVS_INJECT_INSTALL_PATH "/usr/local/lib/kvscope/libkvscope-inject.so"
#endif
#ifndef KVS_TORCH_INSTALL_DIR
#define KVS_TORCH_INSTALL_DIR "/usr/local/share/kvscope/torch"
#endif

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kvscope capture -o TRACE [options] -- PROGRAM [ARGS...]\n"
            "\n"
            "Run PROGRAM (any CUDA program, PyTorch included, unmodified) and write a\n"
            "Kineto-compatible Chrome trace of its kernels, copies, memsets, CUDA API\n"
            "calls, synchronizations, NVTX ranges and kvscope ops. The trace is complete\n"
            "when PROGRAM returns from main, calls exit(), or is stopped with Ctrl-C or\n"
            "SIGTERM. Processes it starts that use CUDA write TRACE's name with .pidN.\n"
            "\n"
            "options:\n"
            "  -o, --output TRACE     where to write (.gz: compressed; %%p: pid, %%r: rank)\n"
            "  --window all|cudaProfilerStart\n"
            "                         record everything (default), or only between\n"
            "                         cudaProfilerStart() and cudaProfilerStop(); before\n"
            "                         the first window CUPTI waits only for cuProfilerStart\n"
            "  --activities LIST      what to record, comma-separated: kernel memcpy memset\n"
            "                         runtime driver sync extcorr overhead nvtx, default\n"
            "                         (all of these but sync: CUPTI's synchronization records\n"
            "                         cost every runtime call; the synchronize calls are\n"
            "                         recorded), runtime-all driver-all, all. runtime and\n"
            "                         driver record the calls the analysis reads (launches,\n"
            "                         copies, memsets, synchronizations, event waits, graph\n"
            "                         capture); with both, a runtime kernel launch is\n"
            "                         recorded as the driver launch it makes (cuLaunchKernel;\n"
            "                         runtime without driver: cudaLaunchKernel);\n"
            "                         runtime-all/driver-all every call, at a cost per call\n"
            "                         (default: default)\n"
            "  --buffer-mb N          size of one CUPTI buffer in MiB, 1..1024 (default 4)\n"
            "  --max-buffers N        CUPTI buffers at most, 1..65536 (default 32); beyond\n"
            "                         them records are dropped and counted in the trace\n"
            "  --torch-ops auto|on|off\n"
            "                         PyTorch's ops with their input dims and dtypes as\n"
            "                         cpu_op events, linked to their kernels (a hook built\n"
            "                         once against the program's torch, cached in\n"
            "                         ~/.cache/kvscope/torch-ops). auto (default): when\n"
            "                         PROGRAM is Python (python*, or a #! line naming\n"
            "                         python) and imports torch; on: in any Python\n"
            "                         process PROGRAM starts (a shell script, ...); off:\n"
            "                         the program runs as without the option\n"
            "  -h, --help             this help\n"
            "\n"
            "CUPTI admits one client per process: turn the PyTorch profiler or Nsight off.\n"
            "exit code: PROGRAM's (128+N if a signal N ended it); 1 if no trace was written;\n"
            "2 for a bad command line (TRACE's folder is checked before PROGRAM runs).\n"
            "environment: KVS_INJECT_LIB names libkvscope-inject.so (default: beside kvscope,\n"
            "then the install); KVS_CAPTURE_LOG=debug logs the capture's steps;\n"
            "KVS_CAPTURE_DETACH=1 detaches CUPTI between --window cudaProfilerStart windows\n"
            "(once it has recorded, an attached CUPTI slows every launch; not yet run on a\n"
            "GPU, so off by default); RANK and WORLD_SIZE fill %%r and the trace's rank;\n"
            "PYTHONPATH is kept after the hook's folder; CXX names the compiler the hook is\n"
            "built with (default c++), XDG_CACHE_HOME where it is kept.\n");
}

// ----------------------------------------------------------------------------
// finding the injection library

static int readable(const char *p) { return access(p, R_OK) == 0; }

/* The first readable file of rel (paths from this kvscope's folder, each
 * starting with "/"), resolved into out (PATH_MAX bytes): 0, or -1 when none
 * is there or /proc/self/exe cannot say where kvscope lies. */
static int beside_exe(const char *const *rel, size_t nrel, char *out)
{
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0)
        return -1;
    exe[k] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    for (size_t i = 0; i < nrel; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s%s", exe, rel[i]);
        if (readable(cand) && realpath(cand, out))
            return 0;
    }
    return -1;
}

static int find_inject_lib(char *out, size_t n)
{
    const char *env = getenv("KVS_INJECT_LIB");
    if (env && *env) {
        if (!realpath(env, out) || !readable(out))
            return -1;
        return 0;
    }
    /* the build tree (build/cli/kvscope next to build/libtrace/), then an install */
    static const char *const rel[] = {"/../libtrace/libkvscope-inject.so",
                                      "/../lib/kvscope/libkvscope-inject.so",
                                      "/../lib64/kvscope/libkvscope-inject.so",
                                      "/../lib/x86_64-linux-gnu/kvscope/libkvscope-inject.so"};
    if (beside_exe(rel, sizeof rel / sizeof rel[0], out) == 0)
        return 0;
    if (readable(KVS_INJECT_INSTALL_PATH)) {
        snprintf(out, n, "%s", KVS_INJECT_INSTALL_PATH);
        return 0;
    }
    return -1;
}

// ----------------------------------------------------------------------------
// PyTorch programs (--torch-ops)

/* The folder of kvscope's PyTorch hook (sitecustomize.py and the source it
 * builds): build/libtrace/torch/ beside build/cli/kvscope, then an install's
 * share/kvscope/torch/. */
static int find_torch_dir(char *out, size_t n)
{
    static const char *const rel[] = {"/../libtrace/torch/sitecustomize.py",
                                      "/../share/kvscope/torch/sitecustomize.py"};
    if (beside_exe(rel, sizeof rel / sizeof rel[0], out) == 0) {
        *strrchr(out, '/') = '\0';
        return 0;
    }
    char cand[PATH_MAX];
    snprintf(cand, sizeof cand, "%s/sitecustomize.py", KVS_TORCH_INSTALL_DIR);
    if (readable(cand)) {
        snprintf(out, n, "%s", KVS_TORCH_INSTALL_DIR);
        return 0;
    }
    return -1;
}

/* "python", "python3", "python3.11" */
static int python_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "python", 6) != 0)
        return 0;
    for (const char *p = base + 6; *p; p++)
        if (!(*p >= '0' && *p <= '9') && *p != '.')
            return 0;
    return 1;
}

/* Whether `prog` runs Python: a python by name (as given, or what a link
 * to it names), or a script whose #! line names python (torchrun, a
 * console script, the user's own). Looked up on PATH as execvp would. */
static int is_python(const char *prog)
{
    if (python_name(prog))
        return 1;
    char path[PATH_MAX] = "";
    if (strchr(prog, '/')) {
        snprintf(path, sizeof path, "%s", prog);
    } else {
        const char *env = getenv("PATH");
        for (const char *d = env ? env : "/usr/local/bin:/usr/bin:/bin"; *d && !path[0];) {
            size_t len = strcspn(d, ":");
            char cand[PATH_MAX];
            snprintf(cand, sizeof cand, "%.*s/%s", (int)len, len ? d : ".", prog);
            if (access(cand, X_OK) == 0)
                snprintf(path, sizeof path, "%s", cand);
            d += len + (d[len] == ':');
        }
    }
    if (!path[0])
        return 0;
    char real[PATH_MAX];
    if (realpath(path, real) && python_name(real))
        return 1;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char line[256];
    int py = fgets(line, sizeof line, f) && line[0] == '#' && line[1] == '!' &&
             strstr(line, "python") != NULL;
    fclose(f);
    return py;
}

/* Into dir: the hook's folder when `mode` (--torch-ops) gives `prog` torch
 * ops, else "" (also when the folder is not found: said, the capture goes
 * on without). */
static void torch_ops_dir(const char *mode, const char *prog, char *dir, size_t n)
{
    dir[0] = '\0';
    if (strcmp(mode, "on") && !(!strcmp(mode, "auto") && is_python(prog)))
        return;
    if (find_torch_dir(dir, n) != 0) {
        dir[0] = '\0';
        fprintf(stderr, "kvscope capture: torch ops: cannot find kvscope's PyTorch hook "
                        "(torch/sitecustomize.py beside the build's libtrace or in %s); "
                        "the capture goes on without torch ops\n", KVS_TORCH_INSTALL_DIR);
    }
}

/* In the child: the hook's folder first on PYTHONPATH (the user's after it). */
static void torch_ops_env(const char *dir, const char *mode)
{
    if (!dir[0])
        return;
    const char *pp = getenv("PYTHONPATH");
    size_t len = strlen(dir) + (pp ? strlen(pp) : 0) + 2;
    char *v = malloc(len);
    if (!v)
        return;
    snprintf(v, len, "%s%s%s", dir, pp && *pp ? ":" : "", pp && *pp ? pp : "");
    setenv("PYTHONPATH", v, 1);
    setenv("KVS_CAPTURE_TORCH_OPS", mode, 1);
    free(v);
}

/* An absolute path for `path` (the program may change directory). */
static int absolute(const char *path, char *out, size_t n)
{
    if (path[0] == '/') {
        snprintf(out, n, "%s", path);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -1;
    int k = snprintf(out, n, "%s/%s", cwd, path);
    return k > 0 && (size_t)k < n ? 0 : -1;
}

// ----------------------------------------------------------------------------
// signals

static volatile sig_atomic_t g_signal;

static void on_signal(int sig) { g_signal = sig; }

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: waitpid returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait for the child, passing signals on. Returns its wait status. */
static int wait_child(pid_t child)
{
    int st = 0, forwarded = 0;
    double seen_at = 0;
    for (;;) {
        pid_t r = waitpid(child, &st, g_signal ? WNOHANG : 0);
        if (r == child)
            return st;
        if (r < 0 && errno != EINTR)
            return 0;
        if (!g_signal)
            continue;
        double t = now_s();
        if (!seen_at) {
            seen_at = t;
            fprintf(stderr, "kvscope capture: signal %d: stopping the program, its trace is being "
                            "written\n", (int)g_signal);
        }
        /* Ctrl-C reached the whole process group already: give the program a
         * moment before sending SIGINT again; other signals go on at once */
        if (!forwarded && (g_signal != SIGINT || t - seen_at > 2.0)) {
            kill(child, g_signal);
            forwarded = 1;
        }
        if (t - seen_at > 32.0) {
            fprintf(stderr, "kvscope capture: the program did not stop; killing it\n");
            kill(child, SIGKILL);
        }
        struct timespec d = {0, 20 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
}

// ----------------------------------------------------------------------------
// the command

static void read_reports(int fd, int *ok, int *failed)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    char buf[8192];
    size_t len = 0;
    ssize_t k;
    while ((k = read(fd, buf + len, sizeof buf - 1 - len)) > 0 && len < sizeof buf - 1)
        len += (size_t)k;
    buf[len] = '\0';
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "kvscope-capture ", 16) != 0)
            continue;
        const char *path = strstr(line, " path=");
        if (strstr(line, "status=ok")) {
            (*ok)++;
            const char *dropped = strstr(line, "dropped=");
            long long nd = dropped ? atoll(dropped + 8) : 0;
            fprintf(stderr, "kvscope capture: wrote %s%s\n", path ? path + 6 : "?",
                    nd ? " (some records were dropped: see its \"kvscope\" object)" : "");
        } else {
            (*failed)++;
            /* "pid=N status=error what=WORDS path=P" in a sentence */
            const char *pid = strstr(line, "pid="), *what = strstr(line, " what=");
            int wlen = what ? (int)(path && path > what ? path - what - 6 : (int)strlen(what + 6))
                            : 0;
            fprintf(stderr, "kvscope capture: process %d could not capture (%.*s; the reason "
                            "is above)\n",
                    pid ? atoi(pid + 4) : 0, wlen, what ? what + 6 : "");
        }
    }
}

enum {
    OPT_HELP = 1, OPT_OUTPUT, OPT_WINDOW, OPT_BUFFER_MB, OPT_MAX_BUFFERS, OPT_ACTIVITIES,
    OPT_TORCH_OPS
};
/* the same bounds as the injection library's (inject.c), which would
 * otherwise fall back to its defaults inside the program */
static const struct kvs_cli_opt capture_opts[] = {
    {"--help", "-h", KVS_CLI_SWITCH, 0, 0, OPT_HELP},
    {"--output", "-o", KVS_CLI_TEXT, 0, 0, OPT_OUTPUT},
    {"--window", NULL, KVS_CLI_TEXT, 0, 0, OPT_WINDOW},
    {"--buffer-mb", NULL, KVS_CLI_INT, 1, KVS_CAPTURE_BUFFER_MB_MAX, OPT_BUFFER_MB},
    {"--max-buffers", NULL, KVS_CLI_INT, 1, KVS_CAPTURE_MAX_BUFFERS_MAX, OPT_MAX_BUFFERS},
    {"--activities", NULL, KVS_CLI_TEXT, 0, 0, OPT_ACTIVITIES},
    {"--torch-ops", NULL, KVS_CLI_TEXT, 0, 0, OPT_TORCH_OPS},
    {NULL, NULL, KVS_CLI_SWITCH, 0, 0, 0},
};

int kvs_cmd_capture(int argc, char **argv)
{
    static const struct kvs_cli_opt *const tables[] = {capture_opts, NULL};
    const char *out = NULL, *window = "all", *buffer_mb = NULL, *max_buffers = NULL;
    const char *activities = NULL, *torch_ops = "auto";
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        struct kvs_cli_arg arg;
        int rc = kvs_cli_next("capture", argc, argv, &i, tables, &arg);
        if (rc != KVS_EXIT_OK)
            return rc;
        if (!arg.opt)
            break; /* the program, without a "--" before it */
        switch (arg.opt->id) {
        case OPT_HELP: usage(stdout); return KVS_EXIT_OK;
        case OPT_OUTPUT: out = arg.text; break;
        case OPT_WINDOW: window = arg.text; break;
        case OPT_BUFFER_MB: buffer_mb = arg.text; break; /* passed on as given */
        case OPT_MAX_BUFFERS: max_buffers = arg.text; break;
        case OPT_ACTIVITIES: activities = arg.text; break;
        case OPT_TORCH_OPS: torch_ops = arg.text; break;
        }
    }
    if (!out)
        return kvs_cli_usage_error("capture", "-o TRACE is required");
    if (i >= argc)
        return kvs_cli_usage_error("capture", "no program to run (put it after --)");
    if (strcmp(window, "all") && strcmp(window, "cudaProfilerStart"))
        return kvs_cli_usage_error("capture", "--window must be all or cudaProfilerStart");
    if (strcmp(torch_ops, "auto") && strcmp(torch_ops, "on") && strcmp(torch_ops, "off"))
        return kvs_cli_usage_error("capture", "--torch-ops must be auto, on or off");
    unsigned bits;
    if (activities && kvs_trace_parse_activities(activities, &bits) != KVS_STATUS_OK)
        return kvs_cli_usage_error("capture", "--activities: '%s' is not a list of kernel, "
                                   "memcpy, memset, runtime, runtime-all, driver, driver-all, "
                                   "sync, extcorr, overhead, nvtx, default, all", activities);
    /* the program's stdout is its own: "-" would be a file named "-" */
    if (!strcmp(out, "-"))
        return kvs_cli_usage_error("capture", "-o -: the trace cannot share the program's "
                                              "stdout; give a file name");
    /* before the program runs, not when it exits */
    int rc = kvs_cli_output_dir_check("capture", "-o", out);
    if (rc != KVS_EXIT_OK)
        return rc;
    char lib[PATH_MAX], outabs[PATH_MAX];
    if (find_inject_lib(lib, sizeof lib) != 0) {
        fprintf(stderr, "kvscope capture: cannot find libkvscope-inject.so (set KVS_INJECT_LIB)\n");
        return KVS_EXIT_FAILURE;
    }
    if (absolute(out, outabs, sizeof outabs) != 0)
        return kvs_cli_usage_error("capture", "cannot make '%s' an absolute path", out);
    char torch_dir[PATH_MAX];
    torch_ops_dir(torch_ops, argv[i], torch_dir, sizeof torch_dir);
    const char *prev = getenv("NVTX_INJECTION64_PATH");
    if (prev && *prev && strcmp(prev, lib))
        fprintf(stderr, "kvscope capture: replacing NVTX_INJECTION64_PATH=%s\n", prev);
    int rep[2];
    if (pipe2(rep, O_CLOEXEC) != 0) {
        perror("kvscope capture: pipe");
        return KVS_EXIT_FAILURE;
    }
    catch_signals();
    pid_t child = fork();
    if (child < 0) {
        perror("kvscope capture: fork");
        return KVS_EXIT_FAILURE;
    }
    if (child == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        close(rep[0]);
        int fd = fcntl(rep[1], F_DUPFD, 3); /* without close-on-exec, for the program */
        char num[32];
        snprintf(num, sizeof num, "%d", fd);
        setenv("KVS_CAPTURE_REPORT_FD", num, 1);
        snprintf(num, sizeof num, "%d", (int)getpid());
        setenv("KVS_CAPTURE_ROOT_PID", num, 1);
        setenv("CUDA_INJECTION64_PATH", lib, 1);
        setenv("NVTX_INJECTION64_PATH", lib, 1);
        setenv("KVS_CAPTURE_OUTPUT", outabs, 1);
        setenv("KVS_CAPTURE_WINDOW", window, 1);
        if (buffer_mb)
            setenv("KVS_CAPTURE_BUFFER_MB", buffer_mb, 1);
        if (max_buffers)
            setenv("KVS_CAPTURE_MAX_BUFFERS", max_buffers, 1);
        if (activities)
            setenv("KVS_CAPTURE_ACTIVITIES", activities, 1);
        torch_ops_env(torch_dir, torch_ops);
        execvp(argv[i], argv + i);
        fprintf(stderr, "kvscope capture: cannot run %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    close(rep[1]);
    int st = wait_child(child);
    int ok = 0, failed = 0;
    read_reports(rep[0], &ok, &failed);
    close(rep[0]);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && ok == 0)
        return 127;
    if (ok == 0) {
        struct stat sb;
        if (failed) /* the why is the line above, not whether it used CUDA */
            fprintf(stderr, "kvscope capture: no trace was written: the capture could not "
                            "start inside the program\n");
        else
            fprintf(stderr,
                    "kvscope capture: no trace was written%s (did the program use CUDA?)\n",
                    stat(outabs, &sb) == 0 ? " by this run" : "");
        return code ? code : KVS_EXIT_FAILURE;
    }
    return code;
}
