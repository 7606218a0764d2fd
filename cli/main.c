/* cli/main.c — `kvscope`: one binary, one subcommand per job.
 *
 *   kvscope --help            list the subcommands
 *   kvscope <cmd> --help      help for one subcommand (or: kvscope help <cmd>)
 *
 * Exit codes: 0 success, 1 the work failed, 2 bad usage or unreadable input.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kvscope/base.h"

static void print_help(FILE *out)
{
    fprintf(out,
            "kvscope %s — find and prove the bottleneck of LLM decode on NVIDIA GPUs\n"
            "\n"
            "usage: kvscope <command> [options]\n"
            "       kvscope <command> --help   (or: kvscope help <command>)\n"
            "\n"
            "commands:\n",
            KVS_VERSION);
    for (const struct kvs_cli_cmd *c = kvs_cli_commands; c->name; c++)
        fprintf(out, "  %-10s %s%s\n", c->name, c->summary,
                c->run ? "" : " (needs a CUDA build; this one has none)");
    fprintf(out, "\nexit codes: 0 success, 1 the work failed, 2 bad usage or unreadable input\n");
}

int kvs_cmd_version(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: kvscope version\n\nPrint the version and whether CUDA parts were built.\n");
            return KVS_EXIT_OK;
        }
        return kvs_cli_usage_error("version", "unexpected argument '%s'", argv[i]);
    }
#ifdef KVS_HAVE_CUDA
    const char *cuda = "yes";
#else
    const char *cuda = "no";
#endif
    printf("kvscope %s (CUDA parts: %s)\n", KVS_VERSION, cuda);
    return KVS_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stderr);
        return KVS_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "help") && argc == 3) {
        /* `kvscope help report` is `kvscope report --help`, as git does it */
        for (const struct kvs_cli_cmd *c = kvs_cli_commands; c->name; c++) {
            if (strcmp(c->name, argv[2]))
                continue;
            if (!c->run)
                break; /* the list below says what this build lacks */
            static char help_flag[] = "--help";
            char *sub[] = {argv[2], help_flag, NULL};
            return c->run(2, sub);
        }
        bool known = false;
        for (const struct kvs_cli_cmd *c = kvs_cli_commands; c->name; c++)
            known = known || !strcmp(c->name, argv[2]);
        if (!known)
            return kvs_cli_usage_error(NULL, "unknown command '%s'", argv[2]);
    }
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        print_help(stdout);
        return KVS_EXIT_OK;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "-V"))
        return kvs_cmd_version(1, argv + 1);
    if (name[0] == '-')
        return kvs_cli_usage_error(NULL, "unknown option '%s'", name);
    for (const struct kvs_cli_cmd *c = kvs_cli_commands; c->name; c++) {
        if (strcmp(c->name, name))
            continue;
        if (!c->run) {
            fprintf(stderr,
                    "kvscope %s: this kvscope was built without CUDA; rebuild on a machine with "
                    "the CUDA toolkit (nvcc, CUPTI, NCCL) to use it\n",
                    name);
            return KVS_EXIT_USAGE;
        }
        return c->run(argc - 1, argv + 1);
    }
    return kvs_cli_usage_error(NULL, "unknown command '%s'", name);
}
