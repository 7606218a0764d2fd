/* tests/test_cli_options.c — the one option reader of every command
 * (cli/options.c: kvs_cli_next) and the options report and compare share
 * (cli/analysis_options.c): "--name value" and "--name=value", aliases,
 * switches, integer and number bounds, unknown options and missing values,
 * each refused with exit 2 and the message a user sees on stderr.
 *
 *   meson test -C build test_cli_options
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cli/analysis_options.h"
#include "kvs_test.h"

static const struct kvs_cli_opt *const tables[] = {kvs_cli_analysis_opts, NULL};

/* what kvs_cli_next said on stderr, for one call */
static char said[1024];

/* kvs_cli_next over argv[*i] of the NULL-ended argv, stderr kept in said */
static int next(char **argv, int *i, struct kvs_cli_arg *arg)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    FILE *tmp = tmpfile();
    if (saved < 0 || !tmp)
        KVS_TEST_SETUP_FAILED("no temporary file for stderr");
    dup2(fileno(tmp), STDERR_FILENO);
    int rc = kvs_cli_next("report", argc, argv, i, tables, arg);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(said, 1, sizeof said - 1, tmp);
    said[n] = 0;
    fclose(tmp);
    return rc;
}

static void test_positional(void)
{
    char *argv[] = {"report", "t.json", "-", NULL};
    struct kvs_cli_arg arg;
    int i = 1;
    KVS_CHECK_EQ_INT(next(argv, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK(arg.opt == NULL);
    KVS_CHECK_EQ_STR(arg.text, "t.json");
    KVS_CHECK_EQ_INT(i, 1);
    i = 2; /* "-" is stdin, a trace, not an option */
    KVS_CHECK_EQ_INT(next(argv, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK(arg.opt == NULL);
    KVS_CHECK_EQ_STR(arg.text, "-");
}

static void test_value_forms(void)
{
    char *spaced[] = {"report", "--batch", "4", NULL};
    char *joined[] = {"report", "--batch=4", NULL};
    struct kvs_cli_arg arg;
    int i = 1;
    KVS_CHECK_EQ_INT(next(spaced, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK(arg.opt && arg.opt->id == KVS_CLI_OPT_BATCH);
    KVS_CHECK_EQ_INT(arg.n, 4);
    KVS_CHECK_EQ_INT(i, 2); /* left at the value */
    i = 1;
    KVS_CHECK_EQ_INT(next(joined, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK(arg.opt && arg.opt->id == KVS_CLI_OPT_BATCH);
    KVS_CHECK_EQ_INT(arg.n, 4);
    KVS_CHECK_EQ_INT(i, 1);
    KVS_CHECK_EQ_STR(said, "");
}

static void test_aliases_and_switches(void)
{
    char *argv[] = {"report", "-j", "3", "-o", "out.html", "--quiet", "-h", NULL};
    struct kvs_cli_arg arg;
    int i = 1;
    KVS_CHECK_EQ_INT(next(argv, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK(arg.opt && arg.opt->id == KVS_CLI_OPT_JOBS);
    KVS_CHECK_EQ_INT(arg.n, 3);
    i = 3;
    KVS_CHECK_EQ_INT(next(argv, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK(arg.opt && arg.opt->id == KVS_CLI_OPT_OUTPUT);
    KVS_CHECK_EQ_STR(arg.text, "out.html");
    i = 5;
    KVS_CHECK_EQ_INT(next(argv, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK(arg.opt && arg.opt->id == KVS_CLI_OPT_QUIET);
    KVS_CHECK_EQ_INT(i, 5); /* a switch takes no value */
    i = 6;
    KVS_CHECK_EQ_INT(next(argv, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK(arg.opt && arg.opt->id == KVS_CLI_OPT_HELP);
}

static void test_refused(void)
{
    struct {
        char *argv[4];
        const char *message;
    } cases[] = {
        {{"report", "--batch", "0", NULL}, "--batch wants an integer in [1, 16777216], not '0'"},
        {{"report", "--batch=16777217", NULL, NULL}, "--batch wants an integer in [1, 16777216]"},
        {{"report", "--kv-capacity", "3x", NULL}, "--kv-capacity wants an integer in [1, 1099511627776], not '3x'"},
        {{"report", "--peak-gbps", "0", NULL}, "--peak-gbps wants a number in [0.001, 1e+06], not '0'"},
        {{"report", "--jobs", "", NULL}, "--jobs wants an integer in [1, 1024], not ''"},
        {{"report", "-j", NULL, NULL}, "--jobs needs a value"},
        {{"report", "--model", NULL, NULL}, "--model needs a value"},
        {{"report", "--frob", NULL, NULL}, "unknown option '--frob'"},
        {{"report", "-q", NULL, NULL}, "unknown option '-q'"},
        {{"report", "--quiet=1", NULL, NULL}, "unknown option '--quiet=1'"},
        {{"report", "-j=3", NULL, NULL}, "unknown option '-j=3'"}, /* '=' goes with --name */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct kvs_cli_arg arg;
        int i = 1;
        KVS_CHECK_EQ_INT(next(cases[k].argv, &i, &arg), KVS_EXIT_USAGE);
        KVS_CHECK_MSG(strstr(said, cases[k].message) != NULL, "case %zu said '%s', wanted '%s'", k, said,
                      cases[k].message);
        KVS_CHECK_MSG(strstr(said, "Try 'kvscope report --help'") != NULL, "case %zu: no pointer to --help", k);
    }
}

static void test_numbers(void)
{
    char *argv[] = {"report", "--peak-gbps=4800", "--peak-gbps", "1e-3", NULL};
    struct kvs_cli_arg arg;
    int i = 1;
    KVS_CHECK_EQ_INT(next(argv, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK_NEAR(arg.x, 4800.0, 0.0);
    i = 2;
    KVS_CHECK_EQ_INT(next(argv, &i, &arg), KVS_EXIT_OK);
    KVS_CHECK_NEAR(arg.x, 1e-3, 0.0); /* the bound itself is in */
}

/* every option of the shared table read and applied: the analysis options
 * and the output's as given */
static void test_apply_shared(void)
{
    char *argv[] = {"report", "--model", "glm5", "--kv-capacity", "495552", "--context=4096",
                    "--kv-dtype", "fp8", "--device", "H200", "--step-regex", "step",
                    "--batch", "2", "--format", "json", "-o", "r.json", "--top", "5",
                    "--jobs", "7", "--quiet", NULL};
    struct kvs_cli_analysis_args c;
    kvs_cli_analysis_args_init(&c);
    int argc = sizeof argv / sizeof argv[0] - 1;
    for (int i = 1; i < argc; i++) {
        struct kvs_cli_arg arg;
        KVS_REQUIRE(next(argv, &i, &arg) == KVS_EXIT_OK);
        KVS_CHECK(kvs_cli_analysis_apply(&c, &arg));
    }
    KVS_CHECK_EQ_STR(c.opt.model, "glm5");
    KVS_CHECK_EQ_INT(c.opt.kv_capacity, 495552);
    KVS_CHECK_EQ_INT(c.opt.context, 4096);
    KVS_CHECK_EQ_STR(c.opt.kv_dtype, "fp8");
    KVS_CHECK_EQ_STR(c.opt.device, "H200");
    KVS_CHECK_EQ_STR(c.opt.step_regex, "step");
    KVS_CHECK_EQ_INT(c.opt.batch, 2);
    KVS_CHECK_EQ_STR(c.format, "json");
    KVS_CHECK_EQ_STR(c.output, "r.json");
    KVS_CHECK_EQ_INT(c.top, 5);
    KVS_CHECK_EQ_INT(c.jobs, 7);
    KVS_CHECK(c.quiet && !c.help);
    KVS_CHECK_EQ_INT(kvs_cli_analysis_check("report", &c), KVS_EXIT_OK);
    KVS_CHECK_EQ_INT(c.opt.log.min_level, KVS_LOG_WARN); /* --quiet */
    c.opt.peak_gbps = 4800; /* with --device: one or the other */
    KVS_CHECK_EQ_INT(kvs_cli_analysis_check("report", &c), KVS_EXIT_USAGE);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"positional", test_positional},
        {"value_forms", test_value_forms},
        {"aliases_and_switches", test_aliases_and_switches},
        {"refused", test_refused},
        {"numbers", test_numbers},
        {"apply_shared", test_apply_shared},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
