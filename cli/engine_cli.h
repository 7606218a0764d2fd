/* cli/engine_cli.h — what kvscope-engine's files share: the parsed command
 * line, the trace writing and the printed figures. The run itself, one GPU
 * or --tp N, is kvs_engine_run (kvscope/engine_run.h); engine_summary.c prints
 * its summary, one GPU's or --tp's.
 *
 * defines: struct kvs_engine_opts, kvs_engine_cli_trace_facts, kvs_engine_cli_write_trace,
 *          kvs_engine_cli_print_bytes, kvs_engine_cli_print_summary
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
 * model's bytes per step, the copy rate, the median step) set as the
 * trace's "kvscope.engine" object, for every file written after. */
struct kvs_engine_run_summary;
struct kvs_trace;
enum kvs_status kvs_engine_cli_trace_facts(const struct kvs_engine_opts *o,
                                           const struct kvs_engine_params *p,
                                           const struct kvs_engine_run_summary *f,
                                           struct kvs_trace *tr);

/* Writes the trace (part NULL: all of it) to path; "-" goes to the real
 * stdout (o->stdout_fd) while the engine's own lines go to stderr. */
struct kvs_trace_part;
enum kvs_status kvs_engine_cli_write_trace(const struct kvs_engine_opts *o, struct kvs_trace *tr,
                                           const char *path, const struct kvs_trace_part *part);

/* The summary's line "  <label> 12.34 GB  (weights ..., KV attention ...)". */
void kvs_engine_cli_print_bytes(const char *label, const struct kvs_step_bytes *sb);

/* The summary of the run (one GPU's, or --tp N's) and the result: line
 * (engine_summary.c). */
void kvs_engine_cli_print_summary(const struct kvs_engine_opts *o,
                                  const struct kvs_engine_params *p,
                                  const struct kvs_engine_run_summary *f);

#endif /* KVSCOPE_CLI_ENGINE_CLI_H */
