/* tests/test_hf_config.c — the one config.json reader (kvscope/hf_config.h):
 * counts and their refusals, duplicate keys, trailing data, text_config,
 * files, folders, pipes, the size cap and the memory a hostile config takes.
 *   meson test -C build test_hf_config */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fifo_test_util.h"
#include "kvs_test.h"
#include "kvscope/hf_config.h"

#if defined(__SANITIZE_ADDRESS__)
#define KVS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVS_TEST_ASAN 1
#endif
#endif
#ifndef KVS_TEST_ASAN
#define KVS_TEST_ASAN 0
#endif

struct captured {
    char last[1024]; /* the last message at WARN or above */
    char all[4096];  /* every message */
};

static void capture(void *user, enum kvs_log_level level, const char *message)
{
    struct captured *c = user;
    if (level >= KVS_LOG_WARN)
        snprintf(c->last, sizeof c->last, "%s", message);
    size_t n = strlen(c->all);
    snprintf(c->all + n, sizeof c->all - n, "%s\n", message);
}

static struct kvs_hf_config *parse_ok(const char *text, struct captured *cap)
{
    struct kvs_logger lg = {capture, cap, KVS_LOG_DEBUG};
    struct kvs_hf_config *c = NULL;
    enum kvs_status st = kvs_hf_config_parse(text, strlen(text), "cfg", &lg, &c);
    KVS_CHECK_MSG(st == KVS_STATUS_OK && c, "%s: %s (%s)", text, kvs_status_str(st), cap->last);
    return c;
}

static enum kvs_status parse_status(const char *text, size_t len, struct captured *cap)
{
    struct kvs_logger lg = {capture, cap, KVS_LOG_DEBUG};
    struct kvs_hf_config *c = NULL;
    enum kvs_status st = kvs_hf_config_parse(text, len, "cfg", &lg, &c);
    KVS_CHECK((st == KVS_STATUS_OK) == (c != NULL));
    kvs_hf_config_free(c);
    return st;
}

// ----------------------------------------------------------------------------
// values

static void test_counts(void)
{
    struct captured cap = {0};
    struct kvs_hf_config *c =
        parse_ok("{\"a\": 78, \"zero\": 0, \"max\": 16777216, \"float_whole\": 61.0, \"nul\": null,"
                 " \"neg\": -4, \"frac\": 2.5, \"huge\": 1e300, \"over\": 16777217,"
                 " \"str\": \"512\", \"flag\": true}",
                 &cap);
    KVS_REQUIRE(c != NULL);
    int64_t v = -1;
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "a", &v), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(v, 78);
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "zero", &v), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(v, 0);
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "max", &v), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(v, 16777216);
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "float_whole", &v), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(v, 61);
    v = 7;
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "absent", &v), KVS_STATUS_NOT_FOUND);
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "nul", &v), KVS_STATUS_NOT_FOUND);
    KVS_CHECK_EQ_INT(v, 7); /* untouched */
    /* every refusal names the key and the value */
    static const struct {
        const char *key, *says;
    } bad[] = {
        {"neg", "\"neg\" is -4, not a whole number from 0 to 16777216"},
        {"frac", "\"frac\" is 2.5"},
        {"huge", "\"huge\" is 1e+300"},
        {"over", "\"over\" is 16777217,"},
        {"str", "\"str\" is a string"},
        {"flag", "\"flag\" is a boolean"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cap.last[0] = 0;
        KVS_CHECK_EQ_INT(kvs_hf_config_count(c, bad[i].key, &v), KVS_STATUS_INVALID_ARGUMENT);
        KVS_CHECK_MSG(strstr(cap.last, bad[i].says) && strstr(cap.last, "cfg: "),
                      "%s: \"%s\" lacks \"%s\"", bad[i].key, cap.last, bad[i].says);
    }
    KVS_CHECK_EQ_INT(v, 7);
    kvs_hf_config_free(c);
}

static void test_other_types(void)
{
    struct captured cap = {0};
    struct kvs_hf_config *c =
        parse_ok("{\"eps\": 1e-5, \"t\": true, \"f\": false, \"s\": \"sigmoid\", \"n\": 3}", &cap);
    KVS_REQUIRE(c != NULL);
    double d = 0;
    bool b = false;
    const char *s = NULL;
    KVS_CHECK_EQ_INT(kvs_hf_config_number(c, "eps", &d), KVS_STATUS_OK);
    KVS_CHECK_NEAR(d, 1e-5, 1e-15);
    KVS_CHECK_EQ_INT(kvs_hf_config_number(c, "s", &d), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(strstr(cap.last, "\"s\" is a string, not a number") != NULL);
    KVS_CHECK_EQ_INT(kvs_hf_config_bool(c, "t", &b), KVS_STATUS_OK);
    KVS_CHECK(b);
    KVS_CHECK_EQ_INT(kvs_hf_config_bool(c, "f", &b), KVS_STATUS_OK);
    KVS_CHECK(!b);
    KVS_CHECK_EQ_INT(kvs_hf_config_bool(c, "n", &b), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(strstr(cap.last, "\"n\" is a number, not true or false") != NULL);
    KVS_CHECK_EQ_INT(kvs_hf_config_string(c, "s", &s), KVS_STATUS_OK);
    KVS_CHECK_EQ_STR(s, "sigmoid");
    KVS_CHECK_EQ_INT(kvs_hf_config_string(c, "t", &s), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_hf_config_string(c, "nope", &s), KVS_STATUS_NOT_FOUND);
    KVS_CHECK(kvs_hf_config_name(c) == NULL);
    KVS_CHECK_EQ_STR(kvs_hf_config_what(c), "cfg");
    kvs_hf_config_free(c);
}

/* Python's json (so Hugging Face) keeps the LAST of duplicate keys */
static void test_duplicate_keys(void)
{
    struct captured cap = {0};
    struct kvs_hf_config *c = parse_ok(
        "{\"num_hidden_layers\": 3, \"kv_lora_rank\": 256, \"num_hidden_layers\": 61,"
        " \"model_type\": \"first\", \"kv_lora_rank\": 512, \"model_type\": \"last\"}",
        &cap);
    KVS_REQUIRE(c != NULL);
    int64_t v = 0;
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "num_hidden_layers", &v), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(v, 61);
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "kv_lora_rank", &v), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(v, 512);
    KVS_CHECK_EQ_STR(kvs_hf_config_name(c), "last");
    kvs_hf_config_free(c);
    /* a later valid value does not hide... nothing: the last one is the value */
    c = parse_ok("{\"n\": 5, \"n\": -1}", &cap);
    KVS_REQUIRE(c != NULL);
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "n", &v), KVS_STATUS_INVALID_ARGUMENT);
    kvs_hf_config_free(c);
}

static void test_text_config(void)
{
    struct captured cap = {0};
    struct kvs_hf_config *c = parse_ok(
        "{\"_name_or_path\": \"moonshotai/Kimi-K2.5\", \"model_type\": \"kimi_k25\","
        " \"text_config\": {\"num_hidden_layers\": 61, \"kv_lora_rank\": 512}}",
        &cap);
    KVS_REQUIRE(c != NULL);
    int64_t v = 0;
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "num_hidden_layers", &v), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(v, 61);
    KVS_CHECK_EQ_STR(kvs_hf_config_name(c), "moonshotai/Kimi-K2.5");
    kvs_hf_config_free(c);
    /* layers at the top level: text_config is not used */
    c = parse_ok("{\"num_hidden_layers\": 2, \"text_config\": {\"num_hidden_layers\": 61}}", &cap);
    KVS_REQUIRE(c != NULL);
    KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "num_hidden_layers", &v), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(v, 2);
    kvs_hf_config_free(c);
}

// ----------------------------------------------------------------------------
// documents

static void test_documents(void)
{
    struct captured cap = {0};
    static const struct {
        const char *text;
        enum kvs_status want;
        const char *says;
    } cases[] = {
        {"{\"a\": 1}\n\n  \t", KVS_STATUS_OK, NULL},
        {"{\"a\": 1} {\"a\": 2}", KVS_STATUS_PARSE, "more after the object, at byte 9"},
        {"{\"a\": 1}garbage", KVS_STATUS_PARSE, "more after the object, at byte 8"},
        {"{\"a\": 1},", KVS_STATUS_PARSE, "at byte 8"},
        {"{\"a\": 1,", KVS_STATUS_PARSE, "malformed JSON near byte"},
        {"[1, 2]", KVS_STATUS_PARSE, "a config.json is a JSON object, not an array"},
        {"\"x\"", KVS_STATUS_PARSE, "not a string"},
        {"", KVS_STATUS_PARSE, "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cap.last[0] = 0;
        enum kvs_status st = parse_status(cases[i].text, strlen(cases[i].text), &cap);
        KVS_CHECK_MSG(st == cases[i].want, "case %zu: %s", i, kvs_status_str(st));
        if (cases[i].says)
            KVS_CHECK_MSG(strstr(cap.last, cases[i].says), "case %zu: \"%s\" lacks \"%s\"", i,
                          cap.last, cases[i].says);
    }
    /* a NUL after the object is data after it too */
    static const char nul[] = "{\"a\": 1}\0{}";
    KVS_CHECK_EQ_INT(parse_status(nul, sizeof nul - 1, &cap), KVS_STATUS_PARSE);
    /* the cap, in memory */
    size_t big = (size_t)KVS_HF_CONFIG_MAX_BYTES + 1;
    char *text = malloc(big);
    KVS_REQUIRE(text != NULL);
    memset(text, ' ', big);
    memcpy(text, "{}", 2);
    KVS_CHECK_EQ_INT(parse_status(text, big, &cap), KVS_STATUS_LIMIT);
    KVS_CHECK(strstr(cap.last, "more than the 1048576") != NULL);
    KVS_CHECK_EQ_INT(parse_status(text, big - 1, &cap), KVS_STATUS_OK); /* the cap itself is fine */
    free(text);
}

static void test_label(void)
{
    static const char *const cases[][2] = {
        {"ckpt/GLM-5/", "GLM-5"}, {"/x/tiny.json", "tiny"}, {"config.json", "config"},
        {"a/b", "b"},           {".json", ".json"},     {"/", "/"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        kvs_hf_config_label(cases[i][0], buf, sizeof buf);
        KVS_CHECK_EQ_STR(buf, cases[i][1]);
    }
}

// ----------------------------------------------------------------------------
// files, folders, pipes

static const char small_cfg[] = "{\"model_type\": \"glm_moe_dsa\", \"num_hidden_layers\": 78}";

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
        KVS_TEST_SETUP_FAILED("writing %s failed", path);
}

static enum kvs_status read_status(const char *path, struct captured *cap, int64_t *layers)
{
    memset(cap, 0, sizeof *cap);
    struct kvs_logger lg = {capture, cap, KVS_LOG_DEBUG};
    struct kvs_hf_config *c = NULL;
    enum kvs_status st = kvs_hf_config_read(path, &lg, &c);
    KVS_CHECK((st == KVS_STATUS_OK) == (c != NULL));
    if (c && layers)
        KVS_CHECK_EQ_INT(kvs_hf_config_count(c, "num_hidden_layers", layers), KVS_STATUS_OK);
    kvs_hf_config_free(c);
    return st;
}

static void test_files(void)
{
    char dir[] = "/tmp/kvs_hf_cfgXXXXXX";
    KVS_REQUIRE(mkdtemp(dir) != NULL);
    char path[256], inner[256];
    struct captured cap;
    int64_t layers = 0;

    snprintf(path, sizeof path, "%s/glm5.json", dir);
    write_file(path, small_cfg, strlen(small_cfg));
    KVS_CHECK_EQ_INT(read_status(path, &cap, &layers), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(layers, 78);
    unlink(path);

    /* a folder without config.json: named, not "no such file" */
    KVS_CHECK_EQ_INT(read_status(dir, &cap, NULL), KVS_STATUS_NOT_FOUND);
    KVS_CHECK_MSG(strstr(cap.last, "a folder without a config.json"), "%s", cap.last);
    /* a checkpoint folder: its config.json, and the log says so */
    snprintf(inner, sizeof inner, "%s/config.json", dir);
    write_file(inner, small_cfg, strlen(small_cfg));
    layers = 0;
    KVS_CHECK_EQ_INT(read_status(dir, &cap, &layers), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(layers, 78);
    KVS_CHECK_MSG(strstr(cap.all, "is a folder: reading ") && strstr(cap.all, inner), "%s",
                  cap.all);
    snprintf(path, sizeof path, "%s/", dir); /* a trailing '/' reads the same file */
    KVS_CHECK_EQ_INT(read_status(path, &cap, &layers), KVS_STATUS_OK);
    KVS_CHECK_MSG(strstr(cap.all, inner) != NULL, "%s", cap.all);
    unlink(inner);

    /* a pipe: read to its end (a FIFO has no size to stat) */
    snprintf(path, sizeof path, "%s/fifo", dir);
    pid_t pid = kvs_test_fifo_start(path, small_cfg);
    layers = 0;
    KVS_CHECK_EQ_INT(read_status(path, &cap, &layers), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(layers, 78);
    KVS_CHECK(kvs_test_fifo_done(pid, path));

    /* no such path */
    snprintf(path, sizeof path, "%s/none.json", dir);
    KVS_CHECK_EQ_INT(read_status(path, &cap, NULL), KVS_STATUS_NOT_FOUND);
    KVS_CHECK(strstr(cap.last, "none.json") != NULL);

    /* over the cap: refused before parsing, naming the size */
    snprintf(path, sizeof path, "%s/big.json", dir);
    size_t big = (size_t)KVS_HF_CONFIG_MAX_BYTES + 10;
    char *text = malloc(big);
    KVS_REQUIRE(text != NULL);
    memset(text, ' ', big);
    memcpy(text, "{}", 2);
    write_file(path, text, big);
    free(text);
    KVS_CHECK_EQ_INT(read_status(path, &cap, NULL), KVS_STATUS_LIMIT);
    KVS_CHECK_MSG(strstr(cap.last, "1048586 bytes, more than the 1048576"), "%s", cap.last);
    unlink(path);
    rmdir(dir);
}

/* Peak memory of a child that reads path (ru_maxrss, KiB); -1 on failure. */
static long child_peak_kib(const char *path, enum kvs_status want)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        struct kvs_logger quiet = {NULL, NULL, KVS_LOG_ERROR + 1};
        struct kvs_hf_config *c = NULL;
        enum kvs_status st = kvs_hf_config_read(path, &quiet, &c);
        kvs_hf_config_free(c);
        _exit(st == want ? 0 : 1);
    }
    int ws = 0;
    struct rusage ru;
    if (wait4(pid, &ws, 0, &ru) != pid || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        return -1;
    return ru.ru_maxrss;
}

/* {"x":[ITEM,ITEM,...]} of about n bytes into path */
static void write_list(const char *path, size_t n, const char *item)
{
    char *text = malloc(n + 64);
    KVS_REQUIRE(text != NULL);
    size_t at = (size_t)snprintf(text, 64, "{\"x\":[");
    size_t il = strlen(item);
    while (at + il + 3 < n) {
        memcpy(text + at, item, il);
        at += il;
        text[at++] = ',';
    }
    text[at - 1] = ']';
    text[at++] = '}';
    write_file(path, text, at);
    free(text); /* before the child forks: its peak is its own */
}

/* A 14 MB config of tiny values took 1.1 GB through cJSON. Now the bytes
 * and the values are capped before parsing: each case, read by a child of
 * this small process, peaks under 16 MiB. */
static void test_memory_bound(void)
{
    char dir[] = "/tmp/kvs_hf_memXXXXXX";
    KVS_REQUIRE(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/bomb.json", dir);
    static const struct {
        size_t bytes;
        const char *item;
        enum kvs_status want;
    } cases[] = {
        {14u << 20, "0", KVS_STATUS_LIMIT},                     /* over the byte cap */
        {KVS_HF_CONFIG_MAX_BYTES, "0", KVS_STATUS_LIMIT},       /* 524k values */
        {2 * 65000, "0", KVS_STATUS_OK},                        /* just under the value cap */
        {KVS_HF_CONFIG_MAX_BYTES, "\"model.layers.1.mlp.gate\"", KVS_STATUS_OK}, /* 38k strings */
    };
    /* The child's peak starts from what the process already holds (under ASan
     * that alone is ~20 MiB of shadow and runtime): measure it on a tiny config
     * and bound what reading each document adds on top. */
    write_list(path, 64, "0");
    /* ASan's redzones and quarantine hold several times what a document needs
     * (65,000 cJSON values: 7 MiB plain, 28 MiB under ASan): the cap scales,
     * as tests/test_hostile_cli.py's do; the old reader took 575 MiB. */
    long cap_kib = 16 * 1024 * (KVS_TEST_ASAN ? 4 : 1);
    long base = child_peak_kib(path, KVS_STATUS_OK);
    KVS_CHECK_MSG(base > 0, "baseline child: peak %ld KiB", base);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_list(path, cases[i].bytes, cases[i].item);
        long kib = child_peak_kib(path, cases[i].want);
        KVS_CHECK_MSG(kib > 0 && kib - base < cap_kib,
                      "case %zu (%zu bytes of %s): peak %ld KiB, %ld KiB over the baseline", i,
                      cases[i].bytes, cases[i].item, kib, kib - base);
        printf("peak RSS, %zu bytes of %s (%s): %ld KiB (%ld over a tiny config's)\n",
               cases[i].bytes, cases[i].item, kvs_status_str(cases[i].want), kib, kib - base);
    }
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"counts", test_counts},
        {"other_types", test_other_types},
        {"duplicate_keys", test_duplicate_keys},
        {"text_config", test_text_config},
        {"documents", test_documents},
        {"label", test_label},
        {"files", test_files},
        {"memory_bound", test_memory_bound},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
