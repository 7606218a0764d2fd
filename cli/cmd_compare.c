/* cli/cmd_compare.c — `kvscope compare BEFORE AFTER [AFTER...]`: analyse a
 * baseline and one or more fixes of it and say what changed and why, in text,
 * markdown, JSON (kvscope.compare/1) or HTML; with several fixes (or
 * --summary) text and markdown close with the summary of them all ("IN
 * SHORT": the bottleneck, what each fix saved, each trace's whole step
 * against the roofline) and JSON is one kvscope.summary/1 document.
 *
 *   kvscope compare unfixed.json.gz fixed.json.gz --batch 1
 *   kvscope compare full-cast.json.gz fp8-direct.json.gz active-cast.json.gz
 *   kvscope compare A B --format html -o compare.html
 *   kvscope compare base.json.gz new.json.gz --fail-on regression --format junit -o gate.xml
 *
 * Exit codes: 0 compared (with --fail-on regression: and no AFTER is worse),
 * 1 the work failed (out of memory, cannot write), 2 bad usage or a trace
 * that cannot be read, 3 with --fail-on regression: an AFTER is worse than
 * BEFORE (kvscope/gate.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "analysis_options.h"
#include "cli.h"
#include "kvscope/analysis.h"
#include "kvscope/analyze_many.h"
#include "kvscope/compare.h"
#include "kvscope/gate.h"
#include "kvscope/hf_config.h"
#include "kvscope/report.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: kvscope compare BEFORE AFTER [AFTER...] [options]\n"
          "\n"
          "Analyse Chrome-trace JSON files (plain, .gz, or - for stdin; at most one -)\n"
          "or Nsight Systems SQLite exports (nsys export --type sqlite)\n"
          "and compare each AFTER with BEFORE: step wall time, GPU time and busy fraction,\n"
          "tokens/s, copy/cast groups paired by role, findings resolved and new, and a\n"
          "verdict in plain words. With several AFTERs (or --summary), text and md close\n"
          "with IN SHORT: the bottleneck of BEFORE, what each AFTER saved, and each trace's\n"
          "whole step against the HBM roofline (traces made by kvscope engine --trace\n"
          "carry the bytes per step); json is then one kvscope.summary/1 document (the\n"
          "comparisons and IN SHORT). html takes one AFTER.\n"
          "\n"
          "As a CI gate (--fail-on regression) it exits 3 when an AFTER is worse than\n"
          "BEFORE: GPU or wall time per step up, or tokens/s down, by more than the\n"
          "threshold and beyond the step-to-step noise (each trace's steps are the\n"
          "samples: a 95%% interval of the change, Hodges-Lehmann / Mann-Whitney; with\n"
          "too few steps the threshold alone decides, and it says so); a new finding of\n"
          "severity high; a copy/cast role (at least 1%% of the GPU time) moving more\n"
          "bytes per step by more than the threshold, or new. Every check and its\n"
          "figures come first in text, md and html, as \"gate\" in json, as testcases in\n"
          "junit:\n"
          "  kvscope compare base.json.gz new.json.gz --fail-on regression --format junit \\\n"
          "      -o gate.xml\n"
          "\n"
          "options (applied to every trace; --name value, or --name=value):\n"
          "  --model CFG         Hugging Face config.json (a file, a pipe, or a checkpoint\n"
          "                      folder holding one), or a bundled name (glm5, deepseek-v3,\n"
          "                      kimi-k2, glm-4.7-flash, llama-3-70b, qwen3-235b-a22b)\n"
          "  --kv-capacity N     preallocated KV capacity in tokens\n"
          "  --context N         tokens in use per sequence (prompt + generated), for both\n"
          "  --kv-dtype T        the KV cache's dtype (fp8, e5m2, bf16, fp16, fp32), for cast\n"
          "                      kernels sized from their launch (CUDA-graph replays)\n"
          "  --before-capture F  a profile of BEFORE's CUDA-graph capture: its replayed\n"
          "                      kernels get the ops they were captured under\n"
          "  --after-capture F   the same for AFTER (with one AFTER only)\n"
          "  --device NAME       device for the HBM peak (default: from the trace)\n"
          "  --peak-gbps X       HBM peak in GB/s (overrides the device table)\n"
          "  --step-regex RE     step ranges (default: vLLM/SGLang step ranges, then\n"
          "                      ProfilerStep#N, then 'step' ranges; matched on a name's\n"
          "                      first 256 bytes, no \\1 back-references)\n"
          "  --batch B           sequences per step, for tokens/s\n"
          "  --format F          text, md, json, html or junit (default: from -o's\n"
          "                      extension, .html/.htm .json .md .txt, with --fail-on\n"
          "                      .xml for junit; else text; junit: one testcase per check)\n"
          "  -o, --output FILE   write there instead of stdout (replaced once complete;\n"
          "                      never an input)\n"
          "  --top N             accepted for symmetry with report (compare shows no kernel table)\n"
          "  --summary           close with IN SHORT for one AFTER too (text, md, json)\n"
          "  -j, --jobs N        read up to N traces at once, one thread each (default: the\n"
          "                      CPUs, %d here); the comparison is the same for any N\n"
          "  --fail-on regression  gate: exit 3 when an AFTER is worse than BEFORE\n"
          "  --threshold PCT     the gate's threshold in percent (default 5; 0: any change\n"
          "                      beyond the noise)\n"
          "  --quiet             no progress or info messages on stderr\n"
          "  -h, --help          this help\n"
          "\n"
          "exit codes: 0 compared (and with --fail-on, no AFTER is worse), 1 the work\n"
          "failed, 2 bad usage or an unreadable trace (every trace is read, and each\n"
          "that cannot be is named), 3 an AFTER is worse (--fail-on)\n",
          kvs_cpu_count());
}

struct progress {
    char label[32];
    int last_pct;
};

static void show_progress(void *user, uint64_t done, uint64_t total)
{
    struct progress *p = user;
    if (total == 0)
        return;
    int pct = (int)(done * 100 / total);
    if (pct == p->last_pct)
        return;
    p->last_pct = pct;
    fprintf(stderr, "\rkvscope compare: reading %s: %3d%%", p->label, pct);
    if (pct >= 100)
        fputs("\r\033[K", stderr);
}

/* Exit code for an analysis that failed (the logger already said why); the
 * same rule as `kvscope report`: our own failures 1, unreadable input 2. */
static int exit_for(enum kvs_status st)
{
    return st == KVS_STATUS_NO_MEMORY || st == KVS_STATUS_INTERNAL ? KVS_EXIT_FAILURE
                                                                   : KVS_EXIT_USAGE;
}

enum { MAX_TRACES = 17 }; /* BEFORE and up to 16 fixes */
enum {
    OPT_SUMMARY = KVS_CLI_OPT_SHARED_END_, OPT_FAIL_ON, OPT_THRESHOLD, OPT_BEFORE_CAPTURE,
    OPT_AFTER_CAPTURE
};
static const struct kvs_cli_opt compare_opts[] = {
    {"--summary", NULL, KVS_CLI_SWITCH, 0, 0, OPT_SUMMARY},
    {"--fail-on", NULL, KVS_CLI_TEXT, 0, 0, OPT_FAIL_ON},
    {"--threshold", NULL, KVS_CLI_NUMBER, 0, 1e6, OPT_THRESHOLD},
    {"--before-capture", NULL, KVS_CLI_TEXT, 0, 0, OPT_BEFORE_CAPTURE},
    {"--after-capture", NULL, KVS_CLI_TEXT, 0, 0, OPT_AFTER_CAPTURE},
    {NULL, NULL, KVS_CLI_SWITCH, 0, 0, 0},
};

/* The command line: the traces, the options for each, what to write. */
struct compare_args {
    struct kvs_cli_analysis_args c;
    struct kvs_render_options ropt;
    const char *paths[MAX_TRACES], *capture[2];
    int npath;
    bool want_summary, gate, threshold_given;
    bool summary, json_summary; /* IN SHORT closes; json: one document with it */
    double threshold;
};

/* compare's own options, and the traces; KVS_EXIT_OK or a usage error. */
static int take(struct compare_args *r, const struct kvs_cli_arg *arg)
{
    if (!arg->opt) {
        if (r->npath == MAX_TRACES)
            return kvs_cli_usage_error("compare", "unexpected argument '%s' (at most %d AFTER traces)",
                                       arg->text, MAX_TRACES - 1);
        r->paths[r->npath++] = arg->text;
        return KVS_EXIT_OK;
    }
    switch (arg->opt->id) {
    case OPT_SUMMARY: r->want_summary = true; break;
    case OPT_FAIL_ON:
        if (strcmp(arg->text, "regression"))
            return kvs_cli_usage_error("compare", "--fail-on takes 'regression', not '%s'", arg->text);
        r->gate = true;
        break;
    case OPT_THRESHOLD:
        r->threshold = arg->x;
        r->threshold_given = true;
        break;
    case OPT_BEFORE_CAPTURE: r->capture[0] = arg->text; break;
    case OPT_AFTER_CAPTURE: r->capture[1] = arg->text; break;
    default: kvs_cli_analysis_apply(&r->c, arg);
    }
    return KVS_EXIT_OK;
}

/* The traces and inputs against each other and the output: KVS_EXIT_OK or
 * a usage error. */
static int check_inputs(const struct compare_args *r)
{
    int nstdin = 0;
    for (int k = 0; k < r->npath; k++)
        nstdin += !strcmp(r->paths[k], "-");
    if (nstdin > 1)
        return kvs_cli_usage_error("compare", "only one of the traces can be '-' (stdin)");
    int rc = kvs_cli_output_check("compare", r->c.output, r->paths, r->npath, r->c.opt.model,
                                  "comparison");
    if (r->npath > 2 && r->capture[1])
        return kvs_cli_usage_error("compare", "--after-capture names one AFTER's capture: give one AFTER");
    for (int k = 0; k < 2 && rc == KVS_EXIT_OK; k++) /* the captures are inputs too */
        if (r->capture[k])
            rc = kvs_cli_output_check("compare", r->c.output, &r->capture[k], 1, NULL, "comparison");
    return rc;
}

/* The format (given, or from -o's name) and what goes with it. */
static int check_format(struct compare_args *r)
{
    const char *format = r->c.format, *output = r->c.output;
    r->ropt = (struct kvs_render_options){.format = KVS_FORMAT_TEXT};
    if (format && kvs_format_parse(format, &r->ropt.format) != KVS_STATUS_OK)
        return kvs_cli_usage_error("compare", "unknown format '%s' (text, md, json, html or junit)",
                                   format);
    if (!format && output && kvs_format_from_path(output, &r->ropt.format) != KVS_STATUS_OK) {
        /* -o compare.html means HTML, as for report; and the gate's -o gate.xml JUnit */
        size_t n = strlen(output);
        if (r->gate && n > 4 && !strcasecmp(output + n - 4, ".xml"))
            r->ropt.format = KVS_FORMAT_JUNIT;
    }
    enum kvs_format f = r->ropt.format;
    if (r->npath > 2 && f == KVS_FORMAT_HTML)
        return kvs_cli_usage_error("compare", "several AFTER traces are compared in text, md or "
                                              "json; html takes one AFTER");
    if (r->want_summary && (f == KVS_FORMAT_HTML || f == KVS_FORMAT_JUNIT))
        return kvs_cli_usage_error("compare", "--summary is for text, md and json");
    if (f == KVS_FORMAT_JUNIT && !r->gate)
        return kvs_cli_usage_error("compare", "--format junit writes the gate's checks: add --fail-on "
                                              "regression");
    if (r->threshold_given && !r->gate)
        return kvs_cli_usage_error("compare", "--threshold is the gate's: add --fail-on regression");
    r->summary = (r->npath > 2 || r->want_summary) && f != KVS_FORMAT_JUNIT;
    r->json_summary = r->summary && f == KVS_FORMAT_JSON;
    return KVS_EXIT_OK;
}

/* Reads and checks the command line into *r: KVS_EXIT_OK, a usage error,
 * or -1 once --help is printed. */
static int parse_args(int argc, char **argv, struct compare_args *r)
{
    static const struct kvs_cli_opt *const tables[] = {kvs_cli_analysis_opts, compare_opts, NULL};
    memset(r, 0, sizeof *r);
    kvs_cli_analysis_args_init(&r->c);
    r->threshold = KVS_GATE_THRESHOLD_PCT;
    for (int i = 1; i < argc; i++) {
        struct kvs_cli_arg arg;
        int rc = kvs_cli_next("compare", argc, argv, &i, tables, &arg);
        if (rc == KVS_EXIT_OK)
            rc = take(r, &arg);
        if (rc != KVS_EXIT_OK)
            return rc;
        if (r->c.help) {
            usage(stdout);
            return -1;
        }
    }
    if (r->npath < 2)
        return kvs_cli_usage_error("compare", "needs two traces: BEFORE AFTER");
    int rc = kvs_cli_analysis_check("compare", &r->c);
    if (rc == KVS_EXIT_OK)
        rc = check_inputs(r);
    if (rc == KVS_EXIT_OK)
        rc = check_format(r);
    r->ropt.log = r->c.opt.log;
    r->ropt.top_kernels = r->c.top;
    return rc;
}

/* Every trace read (up to --jobs at once), each with its own options;
 * an[] gets the analyses. KVS_EXIT_OK when every one was read. */
static int analyse(const struct compare_args *r, struct kvs_analysis **an)
{
    struct kvs_analysis_options jopt[MAX_TRACES];
    struct kvs_analyze_job job[MAX_TRACES];
    struct progress prog[MAX_TRACES];
    const int npath = r->npath;
    bool tty_err = !r->c.quiet && isatty(STDERR_FILENO);
    for (int k = 0; k < npath; k++) {
        prog[k].last_pct = -1;
        snprintf(prog[k].label, sizeof prog[k].label, k == 0 ? "BEFORE" : npath > 2 ? "AFTER %d" : "AFTER", k);
        jopt[k] = r->c.opt;
        jopt[k].progress = tty_err ? show_progress : NULL;
        jopt[k].progress_user = &prog[k];
        jopt[k].graph_capture = r->capture[k ? 1 : 0];
        job[k] = (struct kvs_analyze_job){.path = r->paths[k], .opt = &jopt[k]};
    }
    kvs_analyze_many(job, (size_t)npath, (int)r->c.jobs);
    int rc = KVS_EXIT_OK;
    for (int k = 0; k < npath; k++) {
        an[k] = job[k].analysis;
        enum kvs_status st = job[k].status;
        if (st != KVS_STATUS_OK && st != KVS_STATUS_TRUNCATED) {
            /* the analysis logged why, naming the culprit (the trace, or a
             * bad --model or --step-regex); a line of ours would blame the
             * trace for an option's fault. Only our own failures add one. */
            if (exit_for(st) == KVS_EXIT_FAILURE) {
                fprintf(stderr, "kvscope compare: %s: %s\n", r->paths[k], kvs_status_str(st));
                rc = KVS_EXIT_FAILURE;
            } else if (rc == KVS_EXIT_OK) {
                rc = KVS_EXIT_USAGE;
            }
        }
    }
    return rc;
}

/* Each AFTER compared with BEFORE (and gated), then IN SHORT. */
static int judge(const struct compare_args *r, struct kvs_analysis **an,
                 struct kvs_comparison **cmp, struct kvs_summary **sum)
{
    for (int k = 1; k < r->npath; k++) {
        enum kvs_status st = kvs_compare(an[0], an[k], r->c.opt.batch, &cmp[k]);
        if (st == KVS_STATUS_OK && r->gate)
            st = kvs_gate_compare(cmp[k], an[0], an[k], r->threshold);
        if (st != KVS_STATUS_OK) {
            fprintf(stderr, "kvscope compare: %s\n", kvs_status_str(st));
            return KVS_EXIT_FAILURE;
        }
    }
    if (!r->summary)
        return KVS_EXIT_OK;
    enum kvs_status st = kvs_summarize(an[0], (const struct kvs_analysis *const *)an + 1,
                                       (const struct kvs_comparison *const *)cmp + 1,
                                       (size_t)r->npath - 1, sum);
    if (st != KVS_STATUS_OK) {
        fprintf(stderr, "kvscope compare: %s\n", kvs_status_str(st));
        return KVS_EXIT_FAILURE;
    }
    return KVS_EXIT_OK;
}

/* The comparisons (and IN SHORT) written to -o. */
static int render(struct compare_args *r, struct kvs_comparison **cmp, const struct kvs_summary *sum)
{
    struct kvs_cli_output out;
    int rc = kvs_cli_output_open("compare", r->c.output, &out);
    if (rc != KVS_EXIT_OK)
        return rc;
    const struct kvs_render_options *ropt = &r->ropt;
    const char *nc = getenv("NO_COLOR");
    r->ropt.color = out.f == stdout && ropt->format == KVS_FORMAT_TEXT && isatty(STDOUT_FILENO) &&
                    !(nc && *nc);
    const struct kvs_comparison *const *after = (const struct kvs_comparison *const *)cmp + 1;
    const size_t nafter = (size_t)r->npath - 1;
    enum kvs_status st = KVS_STATUS_OK;
    bool one_doc = r->json_summary || ropt->format == KVS_FORMAT_JUNIT;
    if (r->json_summary)
        st = kvs_render_compare_summary(out.f, after, nafter, sum, ropt);
    else if (ropt->format == KVS_FORMAT_JUNIT)
        st = kvs_render_compare_junit(out.f, after, nafter, ropt);
    for (int k = 1; !one_doc && k < r->npath && st == KVS_STATUS_OK; k++) {
        if (k > 1)
            fputs("\n", out.f);
        st = kvs_render_compare(out.f, cmp[k], ropt);
    }
    if (st == KVS_STATUS_OK && sum && !r->json_summary) {
        fputs("\n", out.f);
        st = kvs_render_summary(out.f, sum, ropt);
    }
    /* a failed write is said by kvs_cli_output_close, naming the file */
    if (st != KVS_STATUS_OK && st != KVS_STATUS_IO)
        fprintf(stderr, "kvscope compare: writing the comparison failed: %s\n", kvs_status_str(st));
    return kvs_cli_output_close(&out, st == KVS_STATUS_OK || st == KVS_STATUS_IO);
}

int kvs_cmd_compare(int argc, char **argv)
{
    struct compare_args r;
    int rc = parse_args(argc, argv, &r);
    if (rc != KVS_EXIT_OK)
        return rc < 0 ? KVS_EXIT_OK : rc;
    struct kvs_hf_config *model = NULL;
    if ((rc = kvs_cli_analysis_model(&r.c, &model)) != KVS_EXIT_OK)
        return rc;
    struct kvs_analysis *an[MAX_TRACES] = {NULL};
    rc = analyse(&r, an);
    kvs_hf_config_free(model);
    struct kvs_comparison *cmp[MAX_TRACES] = {NULL};
    struct kvs_summary *sum = NULL;
    if (rc == KVS_EXIT_OK)
        rc = judge(&r, an, cmp, &sum);
    if (rc == KVS_EXIT_OK)
        rc = render(&r, cmp, sum);
    /* the gate's verdict once the output is written: 3 when an AFTER regresses */
    bool regressed = false;
    for (int k = 1; r.gate && rc == KVS_EXIT_OK && k < r.npath; k++) {
        if (cmp[k]->gate && !cmp[k]->gate->passed) {
            if (!r.c.quiet)
                fprintf(stderr, "kvscope compare: regression: %s is worse than %s (%zu reason%s)\n",
                        r.paths[k], r.paths[0], cmp[k]->gate->nreason,
                        cmp[k]->gate->nreason == 1 ? "" : "s");
            regressed = true;
        }
    }
    if (regressed)
        rc = KVS_EXIT_REGRESSION;
    kvs_summary_free(sum);
    for (int k = 0; k < r.npath; k++) {
        kvs_comparison_free(cmp[k]);
        kvs_analysis_free(an[k]);
    }
    return rc;
}
