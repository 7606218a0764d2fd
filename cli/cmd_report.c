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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis_options.h"
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

enum { OPT_GRAPH_CAPTURE = KVS_CLI_OPT_SHARED_END_ };
static const struct kvs_cli_opt report_opts[] = {
    {"--graph-capture", NULL, KVS_CLI_TEXT, 0, 0, OPT_GRAPH_CAPTURE},
    {NULL, NULL, KVS_CLI_SWITCH, 0, 0, 0},
};

/* The command line: the traces, the options for each, the render options. */
struct report_args {
    struct kvs_cli_analysis_args c;
    struct kvs_render_options ropt;
    const char *traces[MAX_TRACES];
    int ntrace;
};

/* Reads and checks the command line into *r: KVS_EXIT_OK, a usage error,
 * or -1 once --help is printed. */
static int parse_args(int argc, char **argv, struct report_args *r)
{
    static const struct kvs_cli_opt *const tables[] = {kvs_cli_analysis_opts, report_opts, NULL};
    struct kvs_cli_analysis_args *c = &r->c;
    kvs_cli_analysis_args_init(c);
    memset(&r->ropt, 0, sizeof r->ropt);
    r->ropt.format = KVS_FORMAT_TEXT;
    r->ntrace = 0;
    bool stdin_used = false;
    for (int i = 1; i < argc; i++) {
        struct kvs_cli_arg arg;
        int rc = kvs_cli_next(CMD, argc, argv, &i, tables, &arg);
        if (rc != KVS_EXIT_OK)
            return rc;
        if (!arg.opt) {
            bool is_stdin = !strcmp(arg.text, "-");
            if (is_stdin && stdin_used)
                return kvs_cli_usage_error(CMD, "stdin ('-') can be read once only");
            stdin_used = stdin_used || is_stdin;
            if (r->ntrace == MAX_TRACES)
                return kvs_cli_usage_error(CMD, "at most %d traces at once", MAX_TRACES);
            r->traces[r->ntrace++] = arg.text;
        } else if (arg.opt->id == OPT_GRAPH_CAPTURE) {
            c->opt.graph_capture = arg.text;
        } else {
            kvs_cli_analysis_apply(c, &arg);
            if (c->help) {
                usage(stdout);
                return -1;
            }
        }
        if (arg.opt && arg.opt->id == KVS_CLI_OPT_FORMAT) {
            if (kvs_format_parse(arg.text, &r->ropt.format) != KVS_STATUS_OK)
                return kvs_cli_usage_error(CMD, "--format is text, md, json or html, not '%s'",
                                           arg.text);
            if (r->ropt.format == KVS_FORMAT_JUNIT) /* the gate's checks: nothing to gate here */
                return kvs_cli_usage_error(CMD, "--format junit is compare's (with --fail-on "
                                                "regression); report writes text, md, json or html");
        }
    }
    if (!r->ntrace)
        return kvs_cli_usage_error(CMD, "which trace? give a file, a .gz file, or - for stdin");
    /* -o report.html means HTML: a text report in a .html file opens as one
     * unbroken paragraph in a browser */
    if (!c->format && c->output)
        kvs_format_from_path(c->output, &r->ropt.format);
    r->ropt.top_kernels = c->top;
    int rc = kvs_cli_analysis_check(CMD, c);
    r->ropt.log = c->opt.log;
    if (rc == KVS_EXIT_OK)
        rc = kvs_cli_output_check(CMD, c->output, r->traces, r->ntrace, c->opt.model, "report");
    if (rc == KVS_EXIT_OK && c->opt.graph_capture) /* the capture is an input too */
        rc = kvs_cli_output_check(CMD, c->output, &c->opt.graph_capture, 1, NULL, "report");
    return rc;
}

/* Every trace read (up to --jobs at once), each with its own options: with
 * several traces, every message names its trace. an[] gets the analyses;
 * KVS_EXIT_OK when every one was read. */
static int analyse(const struct report_args *r, struct kvs_rank_spool **spool,
                   struct kvs_analysis **an)
{
    const int ntrace = r->ntrace;
    const struct kvs_analysis_options *opt = &r->c.opt;
    struct progress prog = {!r->c.quiet && isatty(STDERR_FILENO), false, now_s(), ntrace, NULL, NULL};
    int rc = KVS_EXIT_OK;
    struct kvs_analyze_job *job = calloc((size_t)ntrace, sizeof *job);
    struct kvs_analysis_options *jopt = calloc((size_t)ntrace, sizeof *jopt);
    struct trace_ctx *tc = calloc((size_t)ntrace, sizeof *tc);
    prog.done = calloc((size_t)ntrace, sizeof *prog.done);
    prog.total = calloc((size_t)ntrace, sizeof *prog.total);
    if (!job || !jopt || !tc || !prog.done || !prog.total) {
        fprintf(stderr, "kvscope report: out of memory\n");
        rc = KVS_EXIT_FAILURE;
        goto done;
    }
    /* decided before reading: each rank's own report is written as its trace
     * is read (rank_spool.c), in the output's format and colours */
    *spool = ntrace > 1 ? kvs_rank_spool_open(job, (size_t)ntrace, &r->ropt) : NULL;
    for (int i = 0; i < ntrace; i++) {
        tc[i] = (struct trace_ctx){&prog, r->traces[i], i};
        jopt[i] = *opt;
        jopt[i].progress = on_progress;
        jopt[i].progress_user = &tc[i];
        if (ntrace > 1) {
            jopt[i].log.fn = log_naming_trace;
            jopt[i].log.user = &tc[i];
        }
        job[i] = (struct kvs_analyze_job){.path = r->traces[i], .opt = &jopt[i], .reports_ok = true,
                                          .done = *spool ? kvs_rank_spool_done : NULL,
                                          .done_user = *spool};
    }
    kvs_analyze_many(job, (size_t)ntrace, (int)r->c.jobs);
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
            fprintf(stderr, "kvscope report: %s: %s\n", r->traces[i], kvs_status_str(st));
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
                failed, ntrace, r->traces[first_failed]);
done:
    free(job);
    free(jopt);
    free(tc);
    free(prog.done);
    free(prog.total);
    return rc;
}

/* The report of the analyses written to -o: one trace's, or the view
 * across ranks with each rank's spooled section. */
static int render(struct report_args *r, struct kvs_rank_spool *spool, struct kvs_analysis **an)
{
    const int ntrace = r->ntrace;
    /* a rank read from its report has only its summary: the view across ranks */
    bool from_report = false;
    for (int i = 0; i < ntrace; i++)
        from_report = from_report || an[i]->trace.report_path;
    struct kvs_multirank *mr = NULL;
    if ((ntrace > 1 || from_report) &&
        kvs_multirank((const struct kvs_analysis *const *)an, (size_t)ntrace, &mr) != KVS_STATUS_OK) {
        fprintf(stderr, "kvscope report: out of memory summarising the ranks\n");
        return KVS_EXIT_FAILURE;
    }
    struct kvs_cli_output out;
    if (kvs_cli_output_open(CMD, r->c.output, &out) != KVS_EXIT_OK) {
        kvs_multirank_free(mr);
        return KVS_EXIT_FAILURE;
    }
    if (spool) {
        r->ropt.rank_section = kvs_rank_spool_section;
        r->ropt.rank_section_user = spool;
    }
    enum kvs_status rs = mr ? kvs_render_multirank(out.f, mr, &r->ropt)
                            : kvs_render_report(out.f, an[0], &r->ropt);
    /* a failed write is said by kvs_cli_output_close, naming the file */
    if (rs != KVS_STATUS_OK && rs != KVS_STATUS_IO)
        fprintf(stderr, "kvscope report: writing the report failed: %s\n", kvs_status_str(rs));
    int rc = kvs_cli_output_close(&out, rs == KVS_STATUS_OK || rs == KVS_STATUS_IO);
    kvs_multirank_free(mr);
    return rc;
}

int kvs_cmd_report(int argc, char **argv)
{
    struct report_args r;
    int rc = parse_args(argc, argv, &r);
    if (rc != KVS_EXIT_OK)
        return rc < 0 ? KVS_EXIT_OK : rc;
    struct kvs_hf_config *model = NULL;
    if ((rc = kvs_cli_analysis_model(&r.c, &model)) != KVS_EXIT_OK)
        return rc;
    const char *no_color = getenv("NO_COLOR");
    r.ropt.color = r.ropt.format == KVS_FORMAT_TEXT && (!r.c.output || !strcmp(r.c.output, "-")) &&
                   isatty(STDOUT_FILENO) && !(no_color && *no_color);
    struct kvs_analysis *an[MAX_TRACES] = {0};
    struct kvs_rank_spool *spool = NULL;
    rc = analyse(&r, &spool, an);
    kvs_hf_config_free(model);
    if (rc == KVS_EXIT_OK)
        rc = render(&r, spool, an);
    free_all(an, r.ntrace);
    kvs_rank_spool_close(spool);
    return rc;
}
