/* cli/cmd_report.c — `kvscope report`: read a trace (PyTorch/Kineto or
 * kvscope's own), name the bottleneck, print the report; several traces
 * (one per rank of a run) give the summary across ranks and each rank's
 * report.
 *
 *   kvscope report trace.json.gz --model glm5 --kv-capacity 495552
 *   kvscope report - --format json < trace.json
 *   kvscope report trace.rank0.json.gz trace.rank1.json.gz --format html -o ranks.html
 *   kvscope report --help
 *
 * Exit codes: 0 report written (also for a truncated trace, with a warning),
 * 1 the work failed (out of memory, writing the output), 2 bad usage or
 * unreadable input (missing file, malformed JSON, empty trace).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kvscope/analysis.h"
#include "kvscope/analyze_many.h"
#include "kvscope/hf_config.h"
#include "kvscope/multirank.h"
#include "kvscope/report.h"

#define CMD "report"
#define MAX_TRACES 1024 /* ranks at once; each analysis is kept until the end */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kvscope report TRACE [TRACE...] [options]\n"
            "\n"
            "Read a Chrome-trace JSON file (PyTorch profiler / Kineto, or kvscope capture;\n"
            "plain, .gz, or - for stdin) or an Nsight Systems SQLite export (nsys export\n"
            "--type sqlite --output FILE.sqlite FILE.nsys-rep; a .nsys-rep is not read\n"
            "itself), link GPU work to the ops that launched it, group\n"
            "copy/cast work by op, input dims and dtypes, match shapes to the model's KV\n"
            "dimensions, compute HBM-roofline efficiency and per-step GPU busy time, hold\n"
            "every op group (matmul, attention, norms, ...: bytes and FLOPs from its\n"
            "shapes) against the device's bandwidth and tensor-core roofs, and rank the\n"
            "findings by the GPU time per step they would recover.\n"
            "\n"
            "Several traces are the ranks of one run (one trace per rank; the rank from\n"
            "each trace's distributedInfo, else the order given): the report says each\n"
            "rank's step time, the straggler (the rank that arrives last at the steps'\n"
            "collectives, which the others wait for), computation against communication (NCCL)\n"
            "time and their overlap, which findings each rank has, then gives every\n"
            "rank's own report (json: a kvscope.multirank/1 document).\n"
            "\n"
            "A kvscope JSON report (kvscope report RANK_TRACE --format json, made anywhere)\n"
            "stands for its rank: its kvscope.rank/1 summary gives the same view across\n"
            "ranks as the trace (reports and traces may be mixed; a report is known by its\n"
            "content, not its name; its own report is not repeated). docs/fleet.md: a\n"
            "Dask driver and a Slurm job array that do this for many ranks.\n"
            "\n"
            "options (--name value, or --name=value):\n"
            "  --model CFG          a Hugging Face config.json (a file, a pipe, or a\n"
            "                       checkpoint folder holding one), or a bundled model:\n"
            "                       glm5, deepseek-v3, kimi-k2, glm-4.7-flash, llama-3-70b,\n"
            "                       qwen3-235b-a22b (default: infer from the trace)\n"
            "  --kv-capacity N      KV cache capacity in tokens (names the full-buffer dim;\n"
            "                       given, no other dim is guessed to be a buffer)\n"
            "  --context N          tokens in use per sequence while the trace ran (prompt +\n"
            "                       generated): sizes what a full-buffer read needs\n"
            "  --kv-dtype T         the KV cache's dtype (fp8, e5m2, bf16, fp16, fp32): the\n"
            "                       source of a cast kernel sized from its launch (graph\n"
            "                       replays, no shapes) whose name does not say it\n"
            "  --graph-capture F    a profile of the CUDA graph's capture (ops, shapes and\n"
            "                       the launches recorded while capturing): the replayed\n"
            "                       kernels get the ops they were captured under\n"
            "  --device NAME        device for the peak bandwidth (default: the trace's),\n"
            "                       e.g. H200, \"H100 SXM\", B200, \"RTX PRO 6000\", MI300X\n"
            "  --peak-gbps X        peak memory bandwidth in GB/s (overrides the table)\n"
            "  --step-regex RE      step ranges by name (POSIX extended regex; default:\n"
            "                       vLLM/SGLang step ranges, then ProfilerStep#N, then\n"
            "                       ranges named like \"step 3\"); matched on a name's\n"
            "                       first 256 bytes, no \\1 back-references\n"
            "  --batch B            sequences per step, for tokens/s (when the step\n"
            "                       names do not give their tokens)\n"
            "  --format F           text, md, json, html (default: from -o's extension,\n"
            "                       .html/.htm .json .md .txt, else text)\n"
            "  -o, --output FILE    write the report to FILE (default: stdout); FILE is\n"
            "                       replaced once the report is complete, never an input\n"
            "  --top N              rows in the top-kernels table (default 10)\n"
            "  -j, --jobs N         read up to N traces at once, one thread each (default:\n"
            "                       the CPUs, %d here); the report is the same for any N\n"
            "  --quiet              no progress or info messages on stderr\n"
            "  -h, --help           this help\n"
            "\n"
            "exit codes: 0 report written (a truncated trace is reported with a warning),\n"
            "1 the work failed, 2 bad usage or unreadable input (malformed, empty); with\n"
            "several traces every one is read, and each that cannot be is named.\n",
            kvs_cpu_count());
}

struct progress {
    bool on;
    bool shown;
    double last;
    int ntrace;          /* several: one line for them all */
    uint64_t *done;      /* per trace: bytes read of ... */
    uint64_t *total;     /* ... its size (0 unknown) */
};

/* what each trace's callbacks get: kvs_analyze_many calls them one at a
 * time, so the shared progress needs no lock */
struct trace_ctx {
    struct progress *prog;
    const char *path;
    int index;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_progress(void *user, uint64_t done, uint64_t total)
{
    struct trace_ctx *tc = user;
    struct progress *p = tc->prog;
    if (p->ntrace > 1) {
        p->done[tc->index] = done;
        p->total[tc->index] = total;
    }
    double t = now_s();
    if (!p->on || t - p->last < 0.2)
        return;
    p->last = t;
    p->shown = true;
    if (p->ntrace > 1) {
        uint64_t d = 0, n = 0;
        int started = 0;
        for (int i = 0; i < p->ntrace; i++) {
            d += p->done[i], n += p->total[i];
            started += p->done[i] > 0;
        }
        fprintf(stderr, "\rkvscope: reading %d traces: %d begun, %.0f of %.0f MB", p->ntrace,
                started, (double)d / 1e6, (double)n / 1e6);
    } else if (total)
        fprintf(stderr, "\rkvscope: reading %.0f%% (%.0f of %.0f MB)", 100.0 * (double)done / (double)total,
                (double)done / 1e6, (double)total / 1e6);
    else
        fprintf(stderr, "\rkvscope: reading %.0f MB", (double)done / 1e6);
    fflush(stderr);
}

static int parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long d = strtoll(v, &end, 10);
    if (errno || !end || *end || end == v || d < lo || d > hi)
        return kvs_cli_usage_error(CMD, "%s wants an integer in [%lld, %lld], not '%s'", flag, lo, hi,
                                   v);
    *out = d;
    return KVS_EXIT_OK;
}

static void log_naming_trace(void *user, enum kvs_log_level level, const char *message)
{
    struct trace_ctx *tc = user;
    if (tc->prog->shown) { /* the message on a line of its own */
        fputs("\r\033[K", stderr);
        tc->prog->shown = false;
    }
    const char *tag = level >= KVS_LOG_ERROR ? "error: "
                    : level == KVS_LOG_WARN  ? "warning: "
                    : level <= KVS_LOG_DEBUG ? "debug: "
                                             : "";
    fprintf(stderr, "kvscope: %s: %s%s\n", tc->path, tag, message);
}

static void free_all(struct kvs_analysis **a, int n)
{
    for (int i = 0; i < n; i++) {
        kvs_analysis_free(a[i]);
        a[i] = NULL;
    }
}

int kvs_cmd_report(int argc, char **argv)
{
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    struct kvs_render_options ropt;
    memset(&ropt, 0, sizeof ropt);
    ropt.format = KVS_FORMAT_TEXT;
    ropt.log = opt.log;
    const char *output = NULL;
    const char *traces[MAX_TRACES];
    int ntrace = 0;
    long long jobs = kvs_cpu_count();
    bool quiet = false, stdin_used = false, format_given = false;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return KVS_EXIT_OK;
        }
        if (!strcmp(a, "--quiet")) {
            quiet = true;
            continue;
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (!strcmp(a, "-") && stdin_used)
                return kvs_cli_usage_error(CMD, "stdin ('-') can be read once only");
            stdin_used = stdin_used || !strcmp(a, "-");
            if (ntrace == MAX_TRACES)
                return kvs_cli_usage_error(CMD, "at most %d traces at once", MAX_TRACES);
            traces[ntrace++] = a;
            continue;
        }
        /* "--name value" or "--name=value", as `kvscope compare` takes them */
        char name[32];
        const char *v = NULL, *eq = strchr(a, '=');
        if (eq && a[1] == '-' && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            v = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", eq ? "" : a);
        }
        a = name;
        bool known = !strcmp(a, "--model") || !strcmp(a, "--kv-capacity") || !strcmp(a, "--kv-dtype") ||
                     !strcmp(a, "--context") ||
                     !strcmp(a, "--graph-capture") ||
                     !strcmp(a, "--device") || !strcmp(a, "--peak-gbps") ||
                     !strcmp(a, "--step-regex") || !strcmp(a, "--batch") || !strcmp(a, "--format") ||
                     !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--top") ||
                     !strcmp(a, "-j") || !strcmp(a, "--jobs");
        if (!known)
            return kvs_cli_usage_error(CMD, "unknown option '%s'", argv[i]);
        if (!v && i + 1 >= argc)
            return kvs_cli_usage_error(CMD, "%s needs a value", a);
        if (!v)
            v = argv[++i];
        int rc = KVS_EXIT_OK;
        long long n;
        if (!strcmp(a, "--model")) {
            opt.model = v;
        } else if (!strcmp(a, "--kv-capacity")) {
            rc = parse_int(a, v, 1, (long long)1 << 40, &n);
            opt.kv_capacity = n;
        } else if (!strcmp(a, "--context")) {
            rc = parse_int(a, v, 1, (long long)1 << 40, &n);
            opt.context = n;
        } else if (!strcmp(a, "--graph-capture")) {
            opt.graph_capture = v;
        } else if (!strcmp(a, "--kv-dtype")) {
            opt.kv_dtype = v;
        } else if (!strcmp(a, "--device")) {
            opt.device = v;
        } else if (!strcmp(a, "--peak-gbps")) {
            rc = kvs_cli_parse_number(CMD, a, v, KVS_CLI_PEAK_GBPS_MIN, KVS_CLI_PEAK_GBPS_MAX,
                                      &opt.peak_gbps);
        } else if (!strcmp(a, "--step-regex")) {
            opt.step_regex = v;
        } else if (!strcmp(a, "--batch")) {
            rc = parse_int(a, v, 1, 1 << 24, &n);
            opt.batch = (int)n;
        } else if (!strcmp(a, "--jobs") || !strcmp(a, "-j")) {
            rc = parse_int("--jobs", v, 1, 1024, &jobs);
        } else if (!strcmp(a, "--top")) {
            rc = parse_int(a, v, 1, 100000, &n);
            ropt.top_kernels = (int)n;
        } else if (!strcmp(a, "--format")) {
            if (kvs_format_parse(v, &ropt.format) != KVS_STATUS_OK)
                return kvs_cli_usage_error(CMD, "--format is text, md, json or html, not '%s'", v);
            if (ropt.format == KVS_FORMAT_JUNIT) /* the gate's checks: nothing to gate here */
                return kvs_cli_usage_error(CMD, "--format junit is compare's (with --fail-on "
                                                "regression); report writes text, md, json or html");
            format_given = true;
        } else {
            output = v;
        }
        if (rc != KVS_EXIT_OK)
            return rc;
    }
    if (!ntrace)
        return kvs_cli_usage_error(CMD, "which trace? give a file, a .gz file, or - for stdin");
    /* -o report.html means HTML: a text report in a .html file opens as one
     * unbroken paragraph in a browser */
    if (!format_given && output)
        kvs_format_from_path(output, &ropt.format);
    if (opt.device && opt.peak_gbps > 0)
        return kvs_cli_usage_error(CMD, "give --device or --peak-gbps, not both");
    int rc = kvs_cli_output_check(CMD, output, traces, ntrace, opt.model, "report");
    if (rc == KVS_EXIT_OK && opt.graph_capture) /* the capture is an input too */
        rc = kvs_cli_output_check(CMD, output, &opt.graph_capture, 1, NULL, "report");
    if (rc != KVS_EXIT_OK)
        return rc;

    if (quiet)
        opt.log.min_level = KVS_LOG_WARN;
    struct progress prog = {!quiet && isatty(STDERR_FILENO), false, now_s(), ntrace, NULL, NULL};

    /* read once: a pipe cannot be read again for the next trace */
    struct kvs_hf_config *model = NULL;
    rc = kvs_cli_read_model(opt.model, &opt.log, &model);
    if (rc != KVS_EXIT_OK)
        return rc;
    opt.model_config = model;

    /* every trace read (up to --jobs at once), each with its own options:
     * with several traces, every message names its trace */
    struct kvs_analysis *an[MAX_TRACES] = {0};
    struct kvs_rank_spool *spool = NULL;
    struct kvs_analyze_job *job = calloc((size_t)ntrace, sizeof *job);
    struct kvs_analysis_options *jopt = calloc((size_t)ntrace, sizeof *jopt);
    struct trace_ctx *tc = calloc((size_t)ntrace, sizeof *tc);
    prog.done = calloc((size_t)ntrace, sizeof *prog.done);
    prog.total = calloc((size_t)ntrace, sizeof *prog.total);
    if (!job || !jopt || !tc || !prog.done || !prog.total) {
        fprintf(stderr, "kvscope report: out of memory\n");
        rc = KVS_EXIT_FAILURE;
        goto analysed;
    }
    /* decided before reading: each rank's own report is written as its trace
     * is read (rank_spool.c), in the output's format and colours */
    const char *no_color = getenv("NO_COLOR");
    ropt.color = ropt.format == KVS_FORMAT_TEXT && (!output || !strcmp(output, "-")) &&
                 isatty(STDOUT_FILENO) && !(no_color && *no_color);
    spool = ntrace > 1 ? kvs_rank_spool_open(job, (size_t)ntrace, &ropt) : NULL;
    for (int i = 0; i < ntrace; i++) {
        tc[i] = (struct trace_ctx){&prog, traces[i], i};
        jopt[i] = opt;
        jopt[i].progress = on_progress;
        jopt[i].progress_user = &tc[i];
        if (ntrace > 1) {
            jopt[i].log.fn = log_naming_trace;
            jopt[i].log.user = &tc[i];
        }
        job[i] = (struct kvs_analyze_job){.path = traces[i], .opt = &jopt[i], .reports_ok = true,
                                          .done = spool ? kvs_rank_spool_done : NULL, .done_user = spool};
    }
    kvs_analyze_many(job, (size_t)ntrace, (int)jobs);
    if (prog.shown)
        fprintf(stderr, "\r\033[K");
    int failed = 0, first_failed = -1;
    bool bad_options = false; /* said once already, by the check of the options */
    for (int i = 0; i < ntrace; i++) {
        an[i] = job[i].analysis;
        enum kvs_status st = job[i].status;
        if (st == KVS_STATUS_OK || st == KVS_STATUS_TRUNCATED)
            continue;
        /* the analysis logged why the input is unreadable; our own
         * failures (no memory) may have found no words of their own */
        if (st == KVS_STATUS_NO_MEMORY || st == KVS_STATUS_INTERNAL) {
            fprintf(stderr, "kvscope report: %s: %s\n", traces[i], kvs_status_str(st));
            rc = KVS_EXIT_FAILURE;
        }
        failed++;
        first_failed = first_failed < 0 ? i : first_failed;
        bad_options = bad_options || job[i].bad_options;
    }
    if (failed && rc == KVS_EXIT_OK)
        rc = KVS_EXIT_USAGE;
    if (failed && ntrace > 1 && !bad_options)
        fprintf(stderr, "kvscope report: %d of %d traces could not be read (the first: %s): no report written\n",
                failed, ntrace, traces[first_failed]);
analysed:
    free(job);
    free(jopt);
    free(tc);
    free(prog.done);
    free(prog.total);
    if (rc != KVS_EXIT_OK) {
        free_all(an, ntrace);
        kvs_hf_config_free(model);
        kvs_rank_spool_close(spool);
        return rc;
    }
    kvs_hf_config_free(model);
    /* a rank read from its report has only its summary: the view across ranks */
    bool from_report = false;
    for (int i = 0; i < ntrace; i++)
        from_report = from_report || an[i]->trace.report_path;
    struct kvs_multirank *mr = NULL;
    if ((ntrace > 1 || from_report) && kvs_multirank((const struct kvs_analysis *const *)an, (size_t)ntrace, &mr) !=
                          KVS_STATUS_OK) {
        fprintf(stderr, "kvscope report: out of memory summarising the ranks\n");
        free_all(an, ntrace);
        kvs_rank_spool_close(spool);
        return KVS_EXIT_FAILURE;
    }

    struct kvs_cli_output out;
    if (kvs_cli_output_open(CMD, output, &out) != KVS_EXIT_OK) {
        kvs_multirank_free(mr);
        free_all(an, ntrace);
        kvs_rank_spool_close(spool);
        return KVS_EXIT_FAILURE;
    }
    if (spool) {
        ropt.rank_section = kvs_rank_spool_section;
        ropt.rank_section_user = spool;
    }
    enum kvs_status rs = mr ? kvs_render_multirank(out.f, mr, &ropt)
                            : kvs_render_report(out.f, an[0], &ropt);
    /* a failed write is said by kvs_cli_output_close, naming the file */
    if (rs != KVS_STATUS_OK && rs != KVS_STATUS_IO)
        fprintf(stderr, "kvscope report: writing the report failed: %s\n", kvs_status_str(rs));
    rc = kvs_cli_output_close(&out, rs == KVS_STATUS_OK || rs == KVS_STATUS_IO);
    kvs_multirank_free(mr);
    free_all(an, ntrace);
    kvs_rank_spool_close(spool);
    return rc;
}
