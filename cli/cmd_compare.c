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
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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

/* "--name=value" or "--name value"; NULL when argv[*i] is not --name. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n))
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != 0)
        return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

static bool parse_int(const char *s, long long min, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min)
        return false;
    *out = v;
    return true;
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

int kvs_cmd_compare(int argc, char **argv)
{
    struct kvs_analysis_options aopt;
    kvs_analysis_options_init(&aopt);
    enum { MAX_TRACES = 17 }; /* BEFORE and up to 16 fixes */
    const char *paths[MAX_TRACES] = {NULL}, *format = NULL, *output = NULL, *capture[2] = {NULL, NULL};
    long long batch = 0, top = 0, jobs = kvs_cpu_count();
    int npath = 0;
    bool quiet = false, want_summary = false, gate = false, threshold_given = false;
    double threshold = KVS_GATE_THRESHOLD_PCT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        bool missing = false;
        long long n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return KVS_EXIT_OK;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (!strcmp(a, "--summary")) {
            want_summary = true;
        } else if ((v = opt_value(argc, argv, &i, "--top", &missing))) {
            if (!parse_int(v, 1, &top) || top > 100000)
                return kvs_cli_usage_error("compare", "--top wants a positive integer, not '%s'", v);
        } else if ((v = opt_value(argc, argv, &i, "--fail-on", &missing))) {
            if (strcmp(v, "regression"))
                return kvs_cli_usage_error("compare", "--fail-on takes 'regression', not '%s'", v);
            gate = true;
        } else if ((v = opt_value(argc, argv, &i, "--threshold", &missing))) {
            int prc = kvs_cli_parse_number("compare", "--threshold", v, 0, 1e6, &threshold);
            if (prc != KVS_EXIT_OK)
                return prc;
            threshold_given = true;
        } else if ((v = opt_value(argc, argv, &i, "--jobs", &missing)) ||
                   (v = opt_value(argc, argv, &i, "-j", &missing))) {
            if (!parse_int(v, 1, &jobs) || jobs > 1024)
                return kvs_cli_usage_error("compare", "--jobs wants an integer in [1, 1024], not '%s'", v);
        } else if ((v = opt_value(argc, argv, &i, "--model", &missing))) {
            aopt.model = v;
        } else if ((v = opt_value(argc, argv, &i, "--kv-capacity", &missing))) {
            if (!parse_int(v, 1, &n) || n > (long long)1 << 40) /* report's bound */
                return kvs_cli_usage_error("compare", "--kv-capacity wants an integer in [1, 2^40], not '%s'", v);
            aopt.kv_capacity = n;
        } else if ((v = opt_value(argc, argv, &i, "--context", &missing))) {
            if (!parse_int(v, 1, &n) || n > (long long)1 << 40)
                return kvs_cli_usage_error("compare", "--context wants an integer in [1, 2^40], not '%s'", v);
            aopt.context = n;
        } else if ((v = opt_value(argc, argv, &i, "--kv-dtype", &missing))) {
            aopt.kv_dtype = v;
        } else if ((v = opt_value(argc, argv, &i, "--before-capture", &missing))) {
            capture[0] = v;
        } else if ((v = opt_value(argc, argv, &i, "--after-capture", &missing))) {
            capture[1] = v;
        } else if ((v = opt_value(argc, argv, &i, "--device", &missing))) {
            aopt.device = v;
        } else if ((v = opt_value(argc, argv, &i, "--peak-gbps", &missing))) {
            int prc = kvs_cli_parse_number("compare", "--peak-gbps", v, KVS_CLI_PEAK_GBPS_MIN,
                                           KVS_CLI_PEAK_GBPS_MAX, &aopt.peak_gbps);
            if (prc != KVS_EXIT_OK)
                return prc;
        } else if ((v = opt_value(argc, argv, &i, "--step-regex", &missing))) {
            aopt.step_regex = v;
        } else if ((v = opt_value(argc, argv, &i, "--batch", &missing))) {
            if (!parse_int(v, 1, &batch) || batch > 1 << 24)
                return kvs_cli_usage_error("compare", "--batch wants a positive integer, not '%s'", v);
        } else if ((v = opt_value(argc, argv, &i, "--format", &missing))) {
            format = v;
        } else if ((v = opt_value(argc, argv, &i, "--output", &missing)) ||
                   (v = opt_value(argc, argv, &i, "-o", &missing))) {
            output = v;
        } else if (missing) {
            return kvs_cli_usage_error("compare", "%s needs a value", a);
        } else if (a[0] == '-' && a[1] != 0) {
            return kvs_cli_usage_error("compare", "unknown option '%s'", a);
        } else if (npath < MAX_TRACES) {
            paths[npath++] = a;
        } else {
            return kvs_cli_usage_error("compare", "unexpected argument '%s' (at most %d AFTER traces)",
                                       a, MAX_TRACES - 1);
        }
    }
    if (npath < 2)
        return kvs_cli_usage_error("compare", "needs two traces: BEFORE AFTER");
    if (aopt.device && aopt.peak_gbps > 0)
        return kvs_cli_usage_error("compare", "give --device or --peak-gbps, not both");
    int nstdin = 0;
    for (int k = 0; k < npath; k++)
        nstdin += !strcmp(paths[k], "-");
    if (nstdin > 1)
        return kvs_cli_usage_error("compare", "only one of the traces can be '-' (stdin)");
    int rc = kvs_cli_output_check("compare", output, paths, npath, aopt.model, "comparison");
    if (npath > 2 && capture[1])
        return kvs_cli_usage_error("compare", "--after-capture names one AFTER's capture: give one AFTER");
    for (int k = 0; k < 2 && rc == KVS_EXIT_OK; k++) /* the captures are inputs too */
        if (capture[k])
            rc = kvs_cli_output_check("compare", output, &capture[k], 1, NULL, "comparison");
    if (rc != KVS_EXIT_OK)
        return rc;
    struct kvs_render_options ropt = {.format = KVS_FORMAT_TEXT};
    if (format && kvs_format_parse(format, &ropt.format) != KVS_STATUS_OK)
        return kvs_cli_usage_error("compare", "unknown format '%s' (text, md, json, html or junit)",
                                   format);
    if (!format && output && kvs_format_from_path(output, &ropt.format) != KVS_STATUS_OK) {
        /* -o compare.html means HTML, as for report; and the gate's -o gate.xml JUnit */
        size_t n = strlen(output);
        if (gate && n > 4 && !strcasecmp(output + n - 4, ".xml"))
            ropt.format = KVS_FORMAT_JUNIT;
    }
    if (npath > 2 && ropt.format == KVS_FORMAT_HTML)
        return kvs_cli_usage_error("compare", "several AFTER traces are compared in text, md or "
                                              "json; html takes one AFTER");
    if (want_summary && (ropt.format == KVS_FORMAT_HTML || ropt.format == KVS_FORMAT_JUNIT))
        return kvs_cli_usage_error("compare", "--summary is for text, md and json");
    if (ropt.format == KVS_FORMAT_JUNIT && !gate)
        return kvs_cli_usage_error("compare", "--format junit writes the gate's checks: add --fail-on "
                                              "regression");
    if (threshold_given && !gate)
        return kvs_cli_usage_error("compare", "--threshold is the gate's: add --fail-on regression");
    bool summary = (npath > 2 || want_summary) && ropt.format != KVS_FORMAT_JUNIT;
    /* json: one document, the comparisons and IN SHORT together */
    bool json_summary = summary && ropt.format == KVS_FORMAT_JSON;
    aopt.batch = (int)batch;
    if (quiet)
        aopt.log.min_level = KVS_LOG_WARN;
    ropt.log = aopt.log;
    ropt.top_kernels = (int)top;

    /* read once for every trace: a pipe cannot be read twice */
    struct kvs_hf_config *model = NULL;
    rc = kvs_cli_read_model(aopt.model, &aopt.log, &model);
    if (rc != KVS_EXIT_OK)
        return rc;
    aopt.model_config = model;

    /* every trace read (up to --jobs at once), each with its own options */
    struct kvs_analysis *an[MAX_TRACES] = {NULL};
    struct kvs_analysis_options jopt[MAX_TRACES];
    struct kvs_analyze_job job[MAX_TRACES];
    struct progress prog[MAX_TRACES];
    bool tty_err = !quiet && isatty(STDERR_FILENO);
    for (int k = 0; k < npath; k++) {
        prog[k].last_pct = -1;
        snprintf(prog[k].label, sizeof prog[k].label, k == 0 ? "BEFORE" : npath > 2 ? "AFTER %d" : "AFTER", k);
        jopt[k] = aopt;
        jopt[k].progress = tty_err ? show_progress : NULL;
        jopt[k].progress_user = &prog[k];
        jopt[k].graph_capture = capture[k ? 1 : 0];
        job[k] = (struct kvs_analyze_job){.path = paths[k], .opt = &jopt[k]};
    }
    kvs_analyze_many(job, (size_t)npath, (int)jobs);
    for (int k = 0; k < npath; k++) {
        an[k] = job[k].analysis;
        enum kvs_status st = job[k].status;
        if (st != KVS_STATUS_OK && st != KVS_STATUS_TRUNCATED) {
            /* the analysis logged why, naming the culprit (the trace, or a
             * bad --model or --step-regex); a line of ours would blame the
             * trace for an option's fault. Only our own failures add one. */
            if (exit_for(st) == KVS_EXIT_FAILURE) {
                fprintf(stderr, "kvscope compare: %s: %s\n", paths[k], kvs_status_str(st));
                rc = KVS_EXIT_FAILURE;
            } else if (rc == KVS_EXIT_OK) {
                rc = KVS_EXIT_USAGE;
            }
        }
    }
    kvs_hf_config_free(model);

    struct kvs_comparison *cmp[MAX_TRACES] = {NULL};
    struct kvs_summary *sum = NULL;
    for (int k = 1; k < npath && rc == KVS_EXIT_OK; k++) {
        enum kvs_status st = kvs_compare(an[0], an[k], (int)batch, &cmp[k]);
        if (st == KVS_STATUS_OK && gate)
            st = kvs_gate_compare(cmp[k], an[0], an[k], threshold);
        if (st != KVS_STATUS_OK) {
            fprintf(stderr, "kvscope compare: %s\n", kvs_status_str(st));
            rc = KVS_EXIT_FAILURE;
        }
    }
    if (rc == KVS_EXIT_OK && summary) {
        enum kvs_status st = kvs_summarize(an[0], (const struct kvs_analysis *const *)an + 1,
                                           (const struct kvs_comparison *const *)cmp + 1,
                                           (size_t)npath - 1, &sum);
        if (st != KVS_STATUS_OK) {
            fprintf(stderr, "kvscope compare: %s\n", kvs_status_str(st));
            rc = KVS_EXIT_FAILURE;
        }
    }
    if (rc == KVS_EXIT_OK) {
        struct kvs_cli_output out;
        rc = kvs_cli_output_open("compare", output, &out);
        if (rc == KVS_EXIT_OK) {
            const char *nc = getenv("NO_COLOR");
            ropt.color = out.f == stdout && ropt.format == KVS_FORMAT_TEXT &&
                         isatty(STDOUT_FILENO) && !(nc && *nc);
            enum kvs_status st = KVS_STATUS_OK;
            bool one_doc = json_summary || ropt.format == KVS_FORMAT_JUNIT;
            if (json_summary)
                st = kvs_render_compare_summary(out.f, (const struct kvs_comparison *const *)cmp + 1,
                                                (size_t)npath - 1, sum, &ropt);
            else if (ropt.format == KVS_FORMAT_JUNIT)
                st = kvs_render_compare_junit(out.f, (const struct kvs_comparison *const *)cmp + 1,
                                              (size_t)npath - 1, &ropt);
            for (int k = 1; !one_doc && k < npath && st == KVS_STATUS_OK; k++) {
                if (k > 1)
                    fputs("\n", out.f);
                st = kvs_render_compare(out.f, cmp[k], &ropt);
            }
            if (st == KVS_STATUS_OK && sum && !json_summary) {
                fputs("\n", out.f);
                st = kvs_render_summary(out.f, sum, &ropt);
            }
            /* a failed write is said by kvs_cli_output_close, naming the file */
            if (st != KVS_STATUS_OK && st != KVS_STATUS_IO)
                fprintf(stderr, "kvscope compare: writing the comparison failed: %s\n",
                        kvs_status_str(st));
            rc = kvs_cli_output_close(&out, st == KVS_STATUS_OK || st == KVS_STATUS_IO);
        }
    }
    /* the gate's verdict once the output is written: 3 when an AFTER regresses */
    bool regressed = false;
    for (int k = 1; gate && rc == KVS_EXIT_OK && k < npath; k++) {
        if (cmp[k]->gate && !cmp[k]->gate->passed) {
            if (!quiet)
                fprintf(stderr, "kvscope compare: regression: %s is worse than %s (%zu reason%s)\n",
                        paths[k], paths[0], cmp[k]->gate->nreason,
                        cmp[k]->gate->nreason == 1 ? "" : "s");
            regressed = true;
        }
    }
    if (regressed)
        rc = KVS_EXIT_REGRESSION;
    kvs_summary_free(sum);
    for (int k = 0; k < npath; k++) {
        kvs_comparison_free(cmp[k]);
        kvs_analysis_free(an[k]);
    }
    return rc;
}
