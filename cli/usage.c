/* cli/usage.c — the usage-error helper every kvscope program shares (the
 * `kvscope` binary and `kvscope-engine`, which `kvscope engine` runs), the
 * same-file check that keeps -o from overwriting an input, and the check
 * that an output's folder exists before the work that fills it runs. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int kvs_cli_output_not_input(const char *cmd, const char *output, const char *const *inputs, int n,
                             const char *what)
{
    for (int i = 0; output && i < n; i++)
        if (kvs_cli_same_file(output, inputs[i]))
            return kvs_cli_usage_error(cmd, "-o %s is the trace %s: the %s would overwrite it",
                                       output, inputs[i], what);
    return KVS_EXIT_OK;
}

int kvs_cli_output_dir_check(const char *cmd, const char *flag, const char *path)
{
    if (!path || !strcmp(path, "-"))
        return KVS_EXIT_OK;
    struct stat st;
    size_t n = strlen(path);
    if (n == 0 || path[n - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
        return kvs_cli_usage_error(cmd, "%s '%s': %s, not a file name", flag, path,
                                   n ? "a folder" : "empty");
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (strchr(dir, '%'))
        return KVS_EXIT_OK; /* %p / %r: the folder is only known when written */
    const char *why = NULL;
    if (stat(dir, &st) != 0)
        why = strerror(errno);
    else if (!S_ISDIR(st.st_mode))
        why = "not a directory";
    else if (access(dir, W_OK | X_OK) != 0)
        why = strerror(errno);
    if (!why)
        return KVS_EXIT_OK;
    return kvs_cli_usage_error(cmd, "%s %s: cannot write into '%s' (%s)", flag, path, dir, why);
}
