/* cli/usage.c — the usage-error helper every kvscope program shares (the
 * `kvscope` binary and `kvscope-engine`, which `kvscope engine` runs), the
 * identity check that keeps -o from overwriting an input, the check that an
 * output's folder exists before the work that fills it runs, and the
 * atomic report writer (a temporary file in the same folder, renamed into
 * place once complete), and --model read once for all of a command's
 * traces. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "kvscope/hf_config.h"

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

/* The file a name (or "-", stdin) refers to now: the identity two names
 * share when they are one file, whatever the path (/dev/stdin, a hard link,
 * /proc/self/fd/0). */
static bool identity(const char *path, struct stat *st)
{
    return path && (!strcmp(path, "-") ? fstat(STDIN_FILENO, st) == 0 : stat(path, st) == 0);
}

static bool same(const struct stat *x, const struct stat *y)
{
    return x->st_dev == y->st_dev && x->st_ino == y->st_ino;
}

int kvs_cli_output_check(const char *cmd, const char *output, const char *const *inputs, int n,
                         const char *model, const char *what)
{
    struct stat o, in;
    bool to_stdout = !output || !strcmp(output, "-");
    /* stdout itself may be an input (`report - < t.json >> t.json`) */
    bool have = (to_stdout ? fstat(STDOUT_FILENO, &o) : stat(output, &o)) == 0 &&
                S_ISREG(o.st_mode); /* /dev/null or a pipe replaces nothing */
    const char *shown = to_stdout ? "stdout" : output;
    for (int i = 0; have && i < n; i++)
        if (identity(inputs[i], &in) && same(&o, &in))
            return kvs_cli_usage_error(cmd, "%s%s is the trace %s: the %s would overwrite it",
                                       to_stdout ? "" : "-o ", shown,
                                       strcmp(inputs[i], "-") ? inputs[i] : "- (stdin)", what);
    /* a checkpoint folder's file is its config.json (kvscope/hf_config.h) */
    char inner[PATH_MAX];
    if (have && model && stat(model, &in) == 0 && S_ISDIR(in.st_mode) &&
        snprintf(inner, sizeof inner, "%s/config.json", model) < (int)sizeof inner)
        model = inner;
    if (have && model && stat(model, &in) == 0 && same(&o, &in))
        return kvs_cli_usage_error(cmd, "%s%s is the --model file %s: the %s would overwrite it",
                                   to_stdout ? "" : "-o ", shown, model, what);
    return kvs_cli_output_dir_check(cmd, "-o", to_stdout ? NULL : output);
}

int kvs_cli_output_open(const char *cmd, const char *path, struct kvs_cli_output *o)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->path = path;
    if (!path || !strcmp(path, "-")) {
        o->f = stdout;
        return KVS_EXIT_OK;
    }
    /* a device, FIFO or other non-regular file (/dev/null, a pipe) is
     * written where it is: renaming over it would replace the device */
    struct stat st;
    const char *target = path;
    char real[PATH_MAX];
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && realpath(path, real))
        target = real; /* keep the link: replace the file it names */
    if (stat(target, &st) == 0 && !S_ISREG(st.st_mode)) {
        o->f = fopen(path, "w");
        if (!o->f) {
            fprintf(stderr, "kvscope %s: cannot write %s: %s\n", cmd, path, strerror(errno));
            return KVS_EXIT_FAILURE;
        }
        return KVS_EXIT_OK;
    }
    const char *slash = strrchr(target, '/');
    int dirlen = slash ? (int)(slash - target + 1) : 0;
    int w = snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.XXXXXX", dirlen, target,
                     slash ? slash + 1 : target);
    if (w < 0 || (size_t)w >= sizeof o->tmp ||
        (size_t)snprintf(o->final, sizeof o->final, "%s", target) >= sizeof o->final) {
        fprintf(stderr, "kvscope %s: cannot write %s: the name is too long\n", cmd, path);
        return KVS_EXIT_FAILURE;
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        fprintf(stderr, "kvscope %s: cannot write %s: creating %s: %s\n", cmd, path, o->tmp,
                strerror(errno));
        o->tmp[0] = 0;
        return KVS_EXIT_FAILURE;
    }
    /* mkstemp makes it 0600; a report gets the mode a new file would (or the
     * old report's, which it replaces) */
    mode_t mask = umask(0);
    umask(mask);
    struct stat old;
    fchmod(fd, stat(target, &old) == 0 ? old.st_mode & 07777 : 0666 & ~mask);
    o->f = fdopen(fd, "w");
    if (!o->f) {
        fprintf(stderr, "kvscope %s: cannot write %s: %s\n", cmd, path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = 0;
        return KVS_EXIT_FAILURE;
    }
    return KVS_EXIT_OK;
}

int kvs_cli_output_close(struct kvs_cli_output *o, bool ok)
{
    if (!o->f)
        return ok ? KVS_EXIT_OK : KVS_EXIT_FAILURE;
    const char *name = o->f == stdout ? "stdout" : o->path;
    int err = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        err = errno ? errno : EIO;
    if (o->tmp[0] && !err && fsync(fileno(o->f)) != 0)
        err = errno;
    if (o->f != stdout && fclose(o->f) != 0 && !err)
        err = errno ? errno : EIO;
    o->f = NULL;
    if (ok && !err && o->tmp[0] && rename(o->tmp, o->final) != 0)
        err = errno;
    if (ok && err)
        fprintf(stderr, "kvscope %s: writing %s failed: %s%s\n", o->cmd, name, strerror(err),
                o->tmp[0] ? " (any earlier file there is left as it was)" : "");
    if (o->tmp[0] && (!ok || err))
        unlink(o->tmp);
    o->tmp[0] = 0;
    return ok && !err ? KVS_EXIT_OK : KVS_EXIT_FAILURE;
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

int kvs_cli_read_model(const char *spec, const struct kvs_logger *lg, struct kvs_hf_config **out)
{
    *out = NULL;
    struct stat st;
    if (!spec || stat(spec, &st) != 0)
        return KVS_EXIT_OK; /* a bundled name (or none): the analysis says */
    enum kvs_status s = kvs_hf_config_read(spec, lg, out);
    if (s == KVS_STATUS_OK)
        return KVS_EXIT_OK;
    return s == KVS_STATUS_NO_MEMORY ? KVS_EXIT_FAILURE : KVS_EXIT_USAGE;
}
