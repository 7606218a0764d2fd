/* cli/analysis_options.h — the options `kvscope report` and `kvscope compare`
 * share (analysis_options.c): one table, read by kvs_cli_next (cli.h), and
 * what each sets. Not for kvscope-engine, which links no analyzers.
 *
 * defines: KVS_CLI_OPT_*, kvs_cli_analysis_opts, struct kvs_cli_analysis_args,
 *          kvs_cli_analysis_args_init, kvs_cli_analysis_apply, kvs_cli_analysis_check,
 *          kvs_cli_analysis_model
 */
#ifndef KVSCOPE_CLI_ANALYSIS_OPTIONS_H
#define KVSCOPE_CLI_ANALYSIS_OPTIONS_H

#include <stdbool.h>

#include "cli.h"
#include "kvscope/analysis.h"

enum {
    KVS_CLI_OPT_HELP = 1, KVS_CLI_OPT_QUIET, KVS_CLI_OPT_MODEL, KVS_CLI_OPT_KV_CAPACITY,
    KVS_CLI_OPT_CONTEXT, KVS_CLI_OPT_KV_DTYPE, KVS_CLI_OPT_DEVICE, KVS_CLI_OPT_PEAK_GBPS,
    KVS_CLI_OPT_STEP_REGEX, KVS_CLI_OPT_BATCH, KVS_CLI_OPT_FORMAT, KVS_CLI_OPT_OUTPUT,
    KVS_CLI_OPT_TOP, KVS_CLI_OPT_JOBS,
    KVS_CLI_OPT_SHARED_END_ /* a command's own ids start here */
};
extern const struct kvs_cli_opt kvs_cli_analysis_opts[];
/* What the shared options set. */
struct kvs_cli_analysis_args {
    struct kvs_analysis_options opt; /* for every trace of the command */
    const char *format, *output;     /* as given; NULL when not */
    long long jobs;                  /* default: the CPUs */
    int top;                         /* 0: the renderer's default */
    bool quiet, help;
};
void kvs_cli_analysis_args_init(struct kvs_cli_analysis_args *c);
/* Sets what arg (one of kvs_cli_analysis_opts) says; false when it is none
 * of them. */
bool kvs_cli_analysis_apply(struct kvs_cli_analysis_args *c, const struct kvs_cli_arg *arg);
/* Once all are read: the checks between them (--device or --peak-gbps),
 * and --quiet's log level. KVS_EXIT_OK or a usage error. */
int kvs_cli_analysis_check(const char *cmd, struct kvs_cli_analysis_args *c);
/* --model read once for every trace (a pipe cannot be read twice):
 * kvs_cli_read_model into *model (free it with kvs_hf_config_free), set as
 * c->opt.model_config. KVS_EXIT_OK or the exit code of a config that cannot
 * be read. */
struct kvs_hf_config;
int kvs_cli_analysis_model(struct kvs_cli_analysis_args *c, struct kvs_hf_config **model);

#endif /* KVSCOPE_CLI_ANALYSIS_OPTIONS_H */
