/* cli/commands.c — the one table of kvscope subcommands. */
#include "cli.h"

#include <stddef.h>

#ifndef KVS_HAVE_CUDA
#define KVS_CUDA_ONLY(fn) NULL
#else
#define KVS_CUDA_ONLY(fn) fn
#endif

/* The engine needs the kernels' CUDA library as well (cli/meson.build); it is
 * the separate program kvscope-engine, which kvs_cmd_engine_exec runs. */
#ifdef KVS_HAVE_ENGINE
#define KVS_ENGINE_ONLY(fn) fn
#else
#define KVS_ENGINE_ONLY(fn) NULL
#endif

const struct kvs_cli_cmd kvs_cli_commands[] = {
    {"version", "print the kvscope version and what this build can do", kvs_cmd_version, false},
    {"report", "read a trace and name the bottleneck (copy/cast groups, per-op roofline, steps)",
     kvs_cmd_report, false},
    {"compare", "compare two traces (before/after a fix): what changed, and why wall time moved",
     kvs_cmd_compare, false},
    {"engine", "run the reference GLM-5 decode engine with a chosen KV path and measure it",
     KVS_ENGINE_ONLY(kvs_cmd_engine_exec), true},
    {"capture", "run a CUDA program and write a Kineto-compatible trace of its GPU work",
     KVS_CUDA_ONLY(kvs_cmd_capture), true},
    {NULL, NULL, NULL, false},
};
