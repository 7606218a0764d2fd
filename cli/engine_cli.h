/* cli/engine_cli.h — what kvscope-engine's two run paths share: the parsed
 * command line, the run's preparation (params, plan, copy rate: cmd_engine.c)
 * and the median. One GPU: cmd_engine.c; --tp N: engine_tp_run.c.
 *
 * defines: struct kvs_engine_opts, kvs_engine_cli_median, kvs_engine_cli_run_tp
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
};

/* Sorts v. */
double kvs_engine_cli_median(double *v, int n);

/* The --tp run after the plan was printed and the copy rate measured;
 * returns the exit code. */
int kvs_engine_cli_run_tp(const struct kvs_engine_opts *o, const struct kvs_engine_params *p,
                          double copy_gbps);

#endif /* KVSCOPE_CLI_ENGINE_CLI_H */
