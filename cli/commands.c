/* cli/commands.c — the one table of kvscope subcommands. */
#include "cli.h"

#include <stddef.h>

#ifndef KVS_HAVE_CUDA
#define KVS_CUDA_ONLY(fn) NULL
#else
#define KVS_CUDA_ONLY(fn) fn
#endif

const struct kvs_cli_cmd kvs_cli_commands[] = {
    {"version", "print the kvscope version and what this build can do", kvs_cmd_version, false},
    {NULL, NULL, NULL, false},
};
