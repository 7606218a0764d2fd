/* tests/fuzz/fuzz_cli.c — libFuzzer harness for the CLI's own paths: option
 * parsing and output writing of `kvscope report` and `kvscope compare`
 * (cli/cmd_report.c, cli/cmd_compare.c, cli/options.c, cli/usage.c), called through their
 * entry points with an argv built from the input.
 *
 *   tests/fuzz/run.sh cli 60
 *   build-fuzz/tests/fuzz/fuzz_cli -dict=tests/fuzz/cli.dict CORPUS_DIR
 *
 * Input: byte 0 picks the command (even: report, odd: compare); the bytes up
 * to the first "\n\n" are the arguments, one per line; what follows is the
 * file f.json. Every run happens in a private temporary folder (made once,
 * removed at exit) holding t.json (a small trace of two steps with a KV
 * cast), m.json (a model config), f.json and c.json (a --graph-capture
 * file); stdin is t.json, stdout /dev/null. Nothing can be written outside
 * that folder: every '/' in an argument becomes '_', and "." or ".." as an
 * argument or an "--opt=" value becomes "_", so every name the CLI is given
 * is a plain name in the folder.
 *
 * Checks: the exit code is 0, 1 or 2; no temporary file of the atomic write
 * (".NAME.XXXXXX") is left behind; when stdin is read as a trace ("-" not
 * the value of an option), t.json is unchanged afterwards (no output may
 * replace an input). The folder is emptied after every run.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

#include "../../cli/cli.h"
#include "fuzz_common.h"

// ----------------------------------------------------------------------------
// the folder's fixed files

static const char t_json[] =
    "{\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"}],\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,"
    "\"ts\":0,\"dur\":1000},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":1,\"tid\":1,\"ts\":10,"
    "\"dur\":50,\"args\":{\"External id\":1,\"Input Dims\":[[4096,1,576],[4096,1,576],[]],"
    "\"Input type\":[\"c10::BFloat16\",\"c10::Float8_e4m3fn\",\"Scalar\"]}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
    "\"ts\":20,\"dur\":5,\"args\":{\"correlation\":11,\"External id\":1}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"copy_kernel\",\"pid\":0,\"tid\":7,\"ts\":30,"
    "\"dur\":400,\"args\":{\"External id\":1,\"correlation\":11,\"device\":0,\"stream\":7}},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"pid\":1,\"tid\":1,"
    "\"ts\":1500,\"dur\":1000},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
    "\"ts\":1520,\"dur\":5,\"args\":{\"correlation\":12}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"sm90_gemm\",\"pid\":0,\"tid\":7,\"ts\":1530,"
    "\"dur\":700,\"args\":{\"correlation\":12,\"device\":0,\"stream\":7}}]}";

static const char m_json[] =
    "{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":4096,"
    "\"num_attention_heads\":32,\"num_key_value_heads\":8,\"head_dim\":128,"
    "\"torch_dtype\":\"bfloat16\"}";

static const char c_json[] = "{\"traceEvents\":[]}";

static char dir[64];
static int dir_fd = -1, home_fd = -1;

static bool put(const char *name, const void *data, size_t n)
{
    int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return false;
    bool ok = n == 0 || write(fd, data, n) == (ssize_t)n;
    return close(fd) == 0 && ok;
}

static bool same_as(const char *name, const char *want, size_t n)
{
    char buf[sizeof t_json + 1];
    int fd = openat(dir_fd, name, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t got = read(fd, buf, sizeof buf);
    close(fd);
    return got == (ssize_t)n && !memcmp(buf, want, n);
}

/* Empties the folder; returns how many temporary files (dot files the command
 * line did not name: an output may be called '..json') were left in it. */
static int empty_dir_named(char *const *named, int nnamed)
{
    int dots = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        bool was_named = false;
        for (int i = 0; i < nnamed && !was_named; i++) {
            /* an argument, or the value of an "--opt=VALUE" one (the output
             * "--output=..x" names the dot file "..x": not a leftover) */
            const char *v = named[i][0] == '-' && strchr(named[i], '=') ? strchr(named[i], '=') + 1
                                                                      : named[i];
            was_named = !strcmp(named[i], e->d_name) || !strcmp(v, e->d_name);
        }
        dots += e->d_name[0] == '.' && !was_named;
        unlinkat(dir_fd, e->d_name, 0);
    }
    closedir(d);
    return dots;
}

static int empty_dir(void)
{
    return empty_dir_named(NULL, 0);
}

static void remove_dir(void)
{
    empty_dir();
    rmdir(dir);
}

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kvs-fuzz-cli.XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    FUZZ_CHECK(mkdtemp(dir), "cannot make a temporary folder %s", dir);
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
    home_fd = open(".", O_RDONLY | O_DIRECTORY);
    FUZZ_CHECK(dir_fd >= 0 && home_fd >= 0, "cannot open %s or the current folder", dir);
    atexit(remove_dir);
    int null = open("/dev/null", O_WRONLY);
    FUZZ_CHECK(null >= 0 && dup2(null, STDOUT_FILENO) >= 0, "cannot send stdout to /dev/null");
    close(null);
}

// ----------------------------------------------------------------------------
// arguments

#define MAX_ARGS 64

/* Options whose next argument is their value (report's and compare's). */
static bool takes_value(const char *a)
{
    static const char *const v[] = {"--model", "--kv-capacity", "--kv-dtype", "--graph-capture",
                                    "--device", "--peak-gbps", "--step-regex", "--batch",
                                    "--format", "-o", "--output", "--top", "--before-capture",
                                    "--after-capture", "--fail-on", "--threshold", NULL};
    for (int i = 0; v[i]; i++)
        if (!strcmp(a, v[i]))
            return true;
    return false;
}

/* A name in the folder, never a path: '/' becomes '_', and so does a "." or
 * ".." that is the whole argument or an "--opt=" value. */
static void confine(char *a)
{
    for (char *p = a; *p; p++)
        if (*p == '/')
            *p = '_';
    char *v = a[0] == '-' && strchr(a, '=') ? strchr(a, '=') + 1 : a;
    if (!strcmp(v, ".") || !strcmp(v, ".."))
        strcpy(v, "_");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (dir_fd < 0)
        setup();
    bool compare = data[0] & 1;
    const uint8_t *end = data + size, *split = NULL;
    for (const uint8_t *p = data + 1; p + 1 < end; p++)
        if (p[0] == '\n' && p[1] == '\n') {
            split = p;
            break;
        }
    const uint8_t *args_end = split ? split : end;
    size_t alen = (size_t)(args_end - (data + 1));
    char *text = malloc(alen + 1);
    FUZZ_CHECK(text, "out of memory");
    memcpy(text, data + 1, alen);
    text[alen] = 0;

    char *argv[MAX_ARGS + 2];
    int argc = 0;
    static char report_name[] = "report", compare_name[] = "compare";
    argv[argc++] = compare ? compare_name : report_name;
    bool reads_stdin = false;
    for (char *p = text; argc < MAX_ARGS + 1;) {
        char *nl = memchr(p, '\n', (size_t)(text + alen - p));
        if (nl)
            *nl = 0;
        /* an argument with a NUL byte ends there, as a C string would */
        confine(p);
        if (!strcmp(p, "-") && !takes_value(argv[argc - 1]))
            reads_stdin = true;
        argv[argc++] = p;
        if (!nl)
            break;
        p = nl + 1;
    }
    argv[argc] = NULL;

    const uint8_t *file = split ? split + 2 : end;
    FUZZ_CHECK(put("t.json", t_json, sizeof t_json - 1) && put("m.json", m_json, sizeof m_json - 1) &&
                   put("c.json", c_json, sizeof c_json - 1) &&
                   put("f.json", file, (size_t)(end - file)),
               "cannot write the folder's files in %s", dir);
    int in = openat(dir_fd, "t.json", O_RDONLY);
    FUZZ_CHECK(in >= 0 && dup2(in, STDIN_FILENO) >= 0, "cannot make t.json stdin");
    close(in);
    FUZZ_CHECK(fchdir(dir_fd) == 0, "cannot enter %s", dir);

    int rc = compare ? kvs_cmd_compare(argc, argv) : kvs_cmd_report(argc, argv);

    FUZZ_CHECK(fchdir(home_fd) == 0, "cannot go back to the first folder");
    fflush(stdout);
    FUZZ_CHECK(rc == KVS_EXIT_OK || rc == KVS_EXIT_FAILURE || rc == KVS_EXIT_USAGE ||
                   (compare && rc == KVS_EXIT_REGRESSION), /* --fail-on regression */
               "exit code %d", rc);
    FUZZ_CHECK(!reads_stdin || same_as("t.json", t_json, sizeof t_json - 1),
               "stdin (t.json) was read as a trace and then changed (exit %d)", rc);
    int dots = empty_dir_named(argv, argc);
    FUZZ_CHECK(dots == 0, "%d temporary file(s) left in %s after exit %d", dots, dir, rc);
    free(text);
    return 0;
}
