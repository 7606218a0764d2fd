/* cli/cli.h — the kvscope command table and helpers shared by subcommands.
 *
 * defines: struct kvs_cli_cmd, kvs_cli_commands, KVS_EXIT_*, kvs_cli_usage_error,
 *          struct kvs_cli_opt, struct kvs_cli_arg, kvs_cli_next, kvs_cli_parse_int,
 *          kvs_cli_parse_number, kvs_cli_output_check, struct kvs_cli_output, kvs_cli_output_open,
 *          kvs_cli_output_close, kvs_cli_output_dir_check,
 *          kvs_cli_read_model, struct kvs_rank_spool, kvs_rank_spool_open,
 *          kvs_rank_spool_done, kvs_rank_spool_section, kvs_rank_spool_close
 *
 * Each subcommand lives in cli/cmd_<name>.c as `int kvs_cmd_<name>(int argc,
 * char **argv)` (argv[0] is the subcommand's name) and is listed once in
 * cli/commands.c. Exit codes are the same for every subcommand.
 */
#ifndef KVSCOPE_CLI_H
#define KVSCOPE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kvscope/base.h"

#define KVS_EXIT_OK 0
#define KVS_EXIT_FAILURE 1 /* the work itself failed (I/O, CUDA, ...) */
#define KVS_EXIT_USAGE 2   /* bad command line or unreadable input */
#define KVS_EXIT_REGRESSION 3 /* compare --fail-on regression: an AFTER is worse than BEFORE */

struct kvs_cli_cmd {
    const char *name;
    const char *summary; /* one line for `kvscope --help` */
    int (*run)(int argc, char **argv);
    bool needs_cuda; /* listed but refused when built without CUDA */
};

/* NULL-name terminated. */
extern const struct kvs_cli_cmd kvs_cli_commands[];

/* Print "kvscope <cmd>: <message>" and a pointer to --help on stderr, and
 * return KVS_EXIT_USAGE, so callers can `return kvs_cli_usage_error(...)`. */
int kvs_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Checked before any input is read: a usage error when the output (-o;
 * NULL or "-" = stdout) is one of the n inputs ("-" = stdin) or the --model
 * file (NULL, or a bundled name, when none), compared by identity (device
 * and inode, so /dev/stdin, /proc/self/fd/0 and hard links count), which
 * `what` ("report", "comparison") would overwrite; then
 * kvs_cli_output_dir_check on -o. KVS_EXIT_OK when none applies. */
int kvs_cli_output_check(const char *cmd, const char *output, const char *const *inputs, int n,
                         const char *model, const char *what);

/* A report being written: to stdout, to a device or pipe in place, or (a
 * regular file) to a temporary file beside it that kvs_cli_output_close
 * renames into place, so a failed write (a full disk) leaves the old file. */
struct kvs_cli_output {
    FILE *f;
    const char *cmd, *path;
    char tmp[4096], final[4096]; /* tmp[0] == 0: written in place */
};
/* Open path (NULL or "-": stdout). On failure says why on stderr and
 * returns KVS_EXIT_FAILURE. */
int kvs_cli_output_open(const char *cmd, const char *path, struct kvs_cli_output *o);
/* Finish: with ok, flush, sync and rename into place, saying which file
 * failed on stderr; without ok (the render failed), remove the temporary
 * file and leave any old one. KVS_EXIT_OK or KVS_EXIT_FAILURE. */
int kvs_cli_output_close(struct kvs_cli_output *o, bool ok);

/* KVS_EXIT_OK when the folder `path` would be written into exists and is
 * writable (also for "-", stdout, and a folder with a %p/%r still in it);
 * otherwise (or when path is empty or itself a folder) a usage error naming
 * `flag`, the folder and why. Checked before
 * the work that fills the file runs, not after it. */
int kvs_cli_output_dir_check(const char *cmd, const char *flag, const char *path);

/* ---- options (options.c): one reader for every command of both programs */

/* The bounds of --peak-gbps (GB/s), the same for report and compare. */
#define KVS_CLI_PEAK_GBPS_MIN 1e-3
#define KVS_CLI_PEAK_GBPS_MAX 1e6
/* Parse an option's value within [lo, hi] into *out; else a usage error
 * naming flag and the range (KVS_EXIT_USAGE). */
int kvs_cli_parse_int(const char *cmd, const char *flag, const char *v, long long lo, long long hi,
                      long long *out);
int kvs_cli_parse_number(const char *cmd, const char *flag, const char *v, double lo, double hi,
                         double *out);

enum kvs_cli_opt_kind {
    KVS_CLI_SWITCH, /* no value: --quiet */
    KVS_CLI_TEXT,   /* a value kept as given: --model glm5 */
    KVS_CLI_INT,    /* an integer in [lo, hi]: --batch 4 */
    KVS_CLI_NUMBER, /* a number in [lo, hi]: --peak-gbps 4800 */
};
/* One option of a command; a table ends with a NULL name. */
struct kvs_cli_opt {
    const char *name;  /* "--jobs" */
    const char *alias; /* "-j", or NULL */
    enum kvs_cli_opt_kind kind;
    double lo, hi;     /* KVS_CLI_INT and KVS_CLI_NUMBER: the bounds */
    int id;            /* the command's own number for it */
};
/* One argument read: an option with its value, or a positional one. */
struct kvs_cli_arg {
    const struct kvs_cli_opt *opt; /* NULL: a positional argument (or "-") */
    const char *text;              /* the value as given, or the positional argument */
    long long n;                   /* KVS_CLI_INT's value */
    double x;                      /* KVS_CLI_NUMBER's value */
};
/* Reads argv[*i] (and its value: the next argument, or after '=' in
 * "--name=value") against the options of tables (a NULL-ended list of
 * tables), leaving *i at the last argument used. A usage error (exit 2)
 * for an unknown option, a missing value or a value out of bounds; else
 * KVS_EXIT_OK with *arg filled. */
int kvs_cli_next(const char *cmd, int argc, char **argv, int *i,
                 const struct kvs_cli_opt *const *tables, struct kvs_cli_arg *arg);

/* --model SPEC read once for every trace of a command: when SPEC names a
 * path (a config.json, a pipe, a checkpoint folder) *out is the config read
 * (free it with kvs_hf_config_free); for a bundled name *out is NULL and
 * the analysis looks it up. KVS_EXIT_OK, or the exit code of a config that
 * cannot be read (the reader said why). */
struct kvs_logger;
struct kvs_hf_config;
int kvs_cli_read_model(const char *spec, const struct kvs_logger *lg, struct kvs_hf_config **out);

/* The ranks' own reports spooled as their traces are read (rank_spool.c):
 * kvs_rank_spool_done is each job's kvs_analyze_job.done (jobs[0..n) the
 * array given to kvs_analyze_many; it keeps the rank's summary in place of
 * its analysis), kvs_rank_spool_section the multi-rank renderer's
 * rank_section. NULL from open: no memory (render as usual). */
struct kvs_analyze_job;
struct kvs_analysis;
struct kvs_render_options;
struct kvs_rank_spool;
struct kvs_rank_spool *kvs_rank_spool_open(const struct kvs_analyze_job *jobs, size_t n,
                                           const struct kvs_render_options *ropt);
void kvs_rank_spool_done(struct kvs_analyze_job *job, void *user);
enum kvs_status kvs_rank_spool_section(FILE *out, const struct kvs_analysis *a, void *user);
void kvs_rank_spool_close(struct kvs_rank_spool *s);

int kvs_cmd_version(int argc, char **argv);
int kvs_cmd_report(int argc, char **argv);
int kvs_cmd_compare(int argc, char **argv);
/* kvscope-engine's body (cmd_engine.c); `kvscope engine` runs it as a
 * separate program through kvs_cmd_engine_exec (engine_exec.c). */
int kvs_cmd_engine(int argc, char **argv);
int kvs_cmd_engine_exec(int argc, char **argv);
int kvs_cmd_capture(int argc, char **argv); /* CUDA builds only */

#endif /* KVSCOPE_CLI_H */
