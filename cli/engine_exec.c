/* cli/engine_exec.c — `kvscope engine ...` runs the separate program
 * `kvscope-engine` that lies beside the running kvscope.
 *
 *   kvscope engine --kv-path fp8-direct      = <dir of kvscope>/kvscope-engine --kv-path ...
 *
 * Why a second program: the engine links cuBLAS, cuBLASLt, CUPTI and NCCL;
 * linked into `kvscope` they were loaded by every subcommand at start-up
 * (+0.07 s and +216 MB RSS before `kvscope report` read a byte). So `kvscope`
 * links no CUDA library and hands the engine's command line over with
 * execv(2). Both programs are built into the same folder and installed into
 * the same bindir (cli/meson.build).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define KVS_ENGINE_PROGRAM "kvscope-engine"

/* `dir/kvscope-engine` where dir holds the running kvscope; -1 if unknown. */
static int engine_program_path(char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0)
        return -1;
    exe[k] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    slash[1] = '\0';
    int w = snprintf(out, n, "%s%s", exe, KVS_ENGINE_PROGRAM);
    return w > 0 && (size_t)w < n ? 0 : -1;
}

int kvs_cmd_engine_exec(int argc, char **argv)
{
    (void)argc;
    char path[PATH_MAX + 32];
    if (engine_program_path(path, sizeof path) != 0) {
        fprintf(stderr, "kvscope engine: cannot tell where this kvscope lies (/proc/self/exe), so "
                        "cannot find %s beside it\n", KVS_ENGINE_PROGRAM);
        return KVS_EXIT_FAILURE;
    }
    if (access(path, X_OK) != 0) {
        fprintf(stderr, "kvscope engine: the engine is a separate program, %s, and it is %s (%s);\n"
                        "install or build it beside kvscope (ninja builds cli/%s, `meson install` "
                        "installs both)\n",
                path, errno == ENOENT ? "missing" : "not executable", strerror(errno),
                KVS_ENGINE_PROGRAM);
        return KVS_EXIT_FAILURE;
    }
    fflush(NULL);
    argv[0] = path; /* argv is main's tail: NULL-terminated */
    execv(path, argv);
    fprintf(stderr, "kvscope engine: cannot run %s: %s\n", path, strerror(errno));
    return KVS_EXIT_FAILURE;
}
