/* cli/analysis_options.c — the options `kvscope report` and `kvscope compare`
 * share, in one table with their bounds, and what each sets: the analysis
 * options every trace is read with, the output, its format, the jobs. Each
 * command adds a table of its own (report: --graph-capture; compare: the
 * captures, the gate, --summary) and checks what only it knows (which
 * formats it writes, how many traces). */
#include <string.h>

#include "analysis_options.h"
#include "kvscope/analyze_many.h"

/* the bounds: at most 2^40 tokens, 2^24 sequences a step */
#define TOKENS_MAX 1099511627776.0
#define BATCH_MAX 16777216.0

const struct kvs_cli_opt kvs_cli_analysis_opts[] = {
    {"--help", "-h", KVS_CLI_SWITCH, 0, 0, KVS_CLI_OPT_HELP},
    {"--quiet", NULL, KVS_CLI_SWITCH, 0, 0, KVS_CLI_OPT_QUIET},
    {"--model", NULL, KVS_CLI_TEXT, 0, 0, KVS_CLI_OPT_MODEL},
    {"--kv-capacity", NULL, KVS_CLI_INT, 1, TOKENS_MAX, KVS_CLI_OPT_KV_CAPACITY},
    {"--context", NULL, KVS_CLI_INT, 1, TOKENS_MAX, KVS_CLI_OPT_CONTEXT},
    {"--kv-dtype", NULL, KVS_CLI_TEXT, 0, 0, KVS_CLI_OPT_KV_DTYPE},
    {"--device", NULL, KVS_CLI_TEXT, 0, 0, KVS_CLI_OPT_DEVICE},
    {"--peak-gbps", NULL, KVS_CLI_NUMBER, KVS_CLI_PEAK_GBPS_MIN, KVS_CLI_PEAK_GBPS_MAX,
     KVS_CLI_OPT_PEAK_GBPS},
    {"--step-regex", NULL, KVS_CLI_TEXT, 0, 0, KVS_CLI_OPT_STEP_REGEX},
    {"--batch", NULL, KVS_CLI_INT, 1, BATCH_MAX, KVS_CLI_OPT_BATCH},
    {"--format", NULL, KVS_CLI_TEXT, 0, 0, KVS_CLI_OPT_FORMAT},
    {"--output", "-o", KVS_CLI_TEXT, 0, 0, KVS_CLI_OPT_OUTPUT},
    {"--top", NULL, KVS_CLI_INT, 1, 100000, KVS_CLI_OPT_TOP},
    {"--jobs", "-j", KVS_CLI_INT, 1, 1024, KVS_CLI_OPT_JOBS},
    {NULL, NULL, KVS_CLI_SWITCH, 0, 0, 0},
};

void kvs_cli_analysis_args_init(struct kvs_cli_analysis_args *c)
{
    memset(c, 0, sizeof *c);
    kvs_analysis_options_init(&c->opt);
    c->jobs = kvs_cpu_count();
}

bool kvs_cli_analysis_apply(struct kvs_cli_analysis_args *c, const struct kvs_cli_arg *arg)
{
    if (!arg->opt)
        return false;
    switch (arg->opt->id) {
    case KVS_CLI_OPT_HELP: c->help = true; break;
    case KVS_CLI_OPT_QUIET: c->quiet = true; break;
    case KVS_CLI_OPT_MODEL: c->opt.model = arg->text; break;
    case KVS_CLI_OPT_KV_CAPACITY: c->opt.kv_capacity = arg->n; break;
    case KVS_CLI_OPT_CONTEXT: c->opt.context = arg->n; break;
    case KVS_CLI_OPT_KV_DTYPE: c->opt.kv_dtype = arg->text; break;
    case KVS_CLI_OPT_DEVICE: c->opt.device = arg->text; break;
    case KVS_CLI_OPT_PEAK_GBPS: c->opt.peak_gbps = arg->x; break;
    case KVS_CLI_OPT_STEP_REGEX: c->opt.step_regex = arg->text; break;
    case KVS_CLI_OPT_BATCH: c->opt.batch = (int)arg->n; break;
    case KVS_CLI_OPT_FORMAT: c->format = arg->text; break;
    case KVS_CLI_OPT_OUTPUT: c->output = arg->text; break;
    case KVS_CLI_OPT_TOP: c->top = (int)arg->n; break;
    case KVS_CLI_OPT_JOBS: c->jobs = arg->n; break;
    default: return false;
    }
    return true;
}

int kvs_cli_analysis_check(const char *cmd, struct kvs_cli_analysis_args *c)
{
    if (c->opt.device && c->opt.peak_gbps > 0)
        return kvs_cli_usage_error(cmd, "give --device or --peak-gbps, not both");
    if (c->quiet)
        c->opt.log.min_level = KVS_LOG_WARN;
    return KVS_EXIT_OK;
}

int kvs_cli_analysis_model(struct kvs_cli_analysis_args *c, struct kvs_hf_config **model)
{
    int rc = kvs_cli_read_model(c->opt.model, &c->opt.log, model);
    c->opt.model_config = *model;
    return rc;
}
