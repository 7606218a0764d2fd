/* cli/usage.c — the usage-error helper every kvscope program shares (the
 * `kvscope` binary and `kvscope-engine`, which `kvscope engine` runs), and
 * the same-file check that keeps -o from overwriting an input. */
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

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

bool kvs_cli_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}
