/* cli/engine_cli.h — what kvscope-engine's two run paths share: the parsed
 * command line, the run's preparation (params, plan, copy rate: cmd_engine.c)
 * and the median. One GPU: cmd_engine.c; --tp N: engine_tp_run.c.
 *
 * defines: struct kvs_engine_opts, kvs_engine_cli_median, struct kvs_engine_cli_figures,
 *          kvs_engine_cli_figures, kvs_engine_cli_print_bytes, kvs_engine_cli_run_tp,
 *          kvs_engine_cli_write_trace, kvs_engine_cli_trace_facts
 */
#ifndef KVSCOPE_CLI_ENGINE_CLI_H
#define KVSCOPE_CLI_ENGINE_CLI_H

#include "kvscope/engine.h"
#include "kvscope/engine_gpu.h"

struct kvs_engine_opts {
    const char *config, *trace;
    enum kvs_kv_path path;
    long long batch, context, steps, warmup, capacity, resident, seed, tp;
    double copy_gbps;
    int graph, scatter, quiet;
    int stdout_fd; /* --trace -: the real stdout, kept for the trace alone; else -1 */
};

/* The run's facts (kvs_engine_run_facts: config, path, shape, the byte
 * model's bytes per step in f, the copy rate, the median step) set as the
 * trace's "kvscope.engine" object, for every file written after. */
struct kvs_engine_cli_figures;
struct kvs_trace;
enum kvs_status kvs_engine_cli_trace_facts(const struct kvs_engine_opts *o,
                                           const struct kvs_engine_params *p,
                                           const struct kvs_engine_cli_figures *f, int steps,
                                           double copy_gbps, struct kvs_trace *tr);

/* Writes the trace (part NULL: all of it) to path; "-" goes to the real
 * stdout (o->stdout_fd) while the engine's own lines go to stderr. */
struct kvs_trace_part;
enum kvs_status kvs_engine_cli_write_trace(const struct kvs_engine_opts *o, struct kvs_trace *tr,
                                           const char *path, const struct kvs_trace_part *part);

/* Sorts v. */
double kvs_engine_cli_median(double *v, int n);

/* A run's summary figures: medians of the n timed steps (step and kv are
 * sorted), tokens/s, bytes moved per step by `model` (the whole model, or a
 * rank's share with --tp) and the roofline at `copy_gbps`. */
struct kvs_engine_cli_figures {
    double step_ms, kv_ms, tokens_per_s, roof_ms;
    struct kvs_step_bytes sb;
};
void kvs_engine_cli_figures(const struct kvs_engine_opts *o, const struct kvs_engine_params *p,
                            const struct kvs_model_config *model, double *step, double *kv, int n,
                            double active_sum, int resident, double copy_gbps,
                            struct kvs_engine_cli_figures *out);
/* The summary's line "  <label> 12.34 GB  (weights ..., KV attention ...)". */
void kvs_engine_cli_print_bytes(const char *label, const struct kvs_step_bytes *sb);

/* The --tp run after the plan was printed and the copy rate measured;
 * returns the exit code. */
int kvs_engine_cli_run_tp(const struct kvs_engine_opts *o, const struct kvs_engine_params *p,
                          double copy_gbps);

#endif /* KVSCOPE_CLI_ENGINE_CLI_H */
