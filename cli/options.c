/* cli/options.c — the one reader of command-line options, for every command
 * of both programs (`kvscope` and `kvscope-engine`): a command lists its
 * options in tables (struct kvs_cli_opt) and reads argv one argument at a
 * time with kvs_cli_next, which takes "--name value" and "--name=value",
 * checks integers and numbers against the option's bounds with one message,
 * and says what is unknown or lacks its value.
 *
 *   for (int i = 1; i < argc; i++) {
 *       struct kvs_cli_arg arg;
 *       int rc = kvs_cli_next(CMD, argc, argv, &i, tables, &arg);
 *       if (rc != KVS_EXIT_OK) return rc;
 *       ... arg.opt ? arg.opt->id : a positional arg.text ...
 *   }
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int kvs_cli_parse_int(const char *cmd, const char *flag, const char *v, long long lo, long long hi,
                      long long *out)
{
    char *end = NULL;
    errno = 0;
    long long d = strtoll(v, &end, 10);
    if (errno || !end || *end || end == v || d < lo || d > hi)
        return kvs_cli_usage_error(cmd, "%s wants an integer in [%lld, %lld], not '%s'", flag, lo, hi,
                                   v);
    *out = d;
    return KVS_EXIT_OK;
}

int kvs_cli_parse_number(const char *cmd, const char *flag, const char *v, double lo, double hi,
                         double *out)
{
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || !end || *end || end == v || !(d >= lo && d <= hi))
        return kvs_cli_usage_error(cmd, "%s wants a number in [%g, %g], not '%s'", flag, lo, hi, v);
    *out = d;
    return KVS_EXIT_OK;
}

/* The option named name (n bytes of it) in tables, or NULL. */
static const struct kvs_cli_opt *find(const struct kvs_cli_opt *const *tables, const char *name,
                                      size_t n)
{
    for (; *tables; tables++)
        for (const struct kvs_cli_opt *o = *tables; o->name; o++)
            if ((strlen(o->name) == n && !strncmp(o->name, name, n)) ||
                (o->alias && strlen(o->alias) == n && !strncmp(o->alias, name, n)))
                return o;
    return NULL;
}

int kvs_cli_next(const char *cmd, int argc, char **argv, int *i,
                 const struct kvs_cli_opt *const *tables, struct kvs_cli_arg *arg)
{
    const char *a = argv[*i];
    memset(arg, 0, sizeof *arg);
    if (a[0] != '-' || !strcmp(a, "-")) { /* a positional argument ("-": stdin) */
        arg->text = a;
        return KVS_EXIT_OK;
    }
    /* "--name=value" for long names; a switch takes no value */
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    size_t n = eq ? (size_t)(eq - a) : strlen(a);
    const struct kvs_cli_opt *o = find(tables, a, n);
    if (!o || (eq && o->kind == KVS_CLI_SWITCH))
        return kvs_cli_usage_error(cmd, "unknown option '%s'", a);
    arg->opt = o;
    if (o->kind == KVS_CLI_SWITCH)
        return KVS_EXIT_OK;
    if (!eq && *i + 1 >= argc)
        return kvs_cli_usage_error(cmd, "%s needs a value", o->name);
    const char *v = eq ? eq + 1 : argv[++*i];
    arg->text = v;
    if (o->kind == KVS_CLI_INT)
        return kvs_cli_parse_int(cmd, o->name, v, (long long)o->lo, (long long)o->hi, &arg->n);
    if (o->kind == KVS_CLI_NUMBER)
        return kvs_cli_parse_number(cmd, o->name, v, o->lo, o->hi, &arg->x);
    return KVS_EXIT_OK;
}
