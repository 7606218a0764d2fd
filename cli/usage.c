/* cli/usage.c — the usage-error helper every kvscope program shares (the
 * `kvscope` binary and `kvscope-engine`, which `kvscope engine` runs). */
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

int kvs_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kvscope%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'kvscope %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return KVS_EXIT_USAGE;
}
