/* tests/test_devices.c — the device table (analyzers/data/devices.json) and
 * the bundled model configs: lookups by trace names and --device spellings,
 * the longest match winning, per-device peaks of multi-die packages; every
 * bundled model loads with its published layer count and KV dimensions; a
 * config file from disk, a multimodal wrapper, and broken configs; hostile
 * configs: negative counts, duplicate keys, trailing data, a
 * checkpoint folder, a pipe, and a 14 MB config under a memory bound.
 *
 *   meson test -C build test_devices
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analyzer_test_util.h"
#include "devices.h"
#include "fifo_test_util.h"
#include "kvs_test.h"
#include "models.h"

static double peak(const char *name)
{
    struct kvs_device_info d;
    bool found = false;
    if (kvs_device_lookup(name, NULL, &d, &found) != KVS_STATUS_OK || !found)
        return 0;
    return d.peak_gbps;
}

/* dense tensor peaks, TFLOP/s: the datasheets' figures without sparsity
 * (analyzers/data/devices.json cites each); 0 where none */
static void test_tensor_peaks(void)
{
    static const struct {
        const char *name;
        double bf16, fp8;
    } want[] = {
        {"NVIDIA H200", 989, 1979},          {"NVIDIA H100 80GB HBM3", 989, 1979},
        {"NVIDIA H100 PCIe", 756, 1513},     {"NVIDIA A100-SXM4-80GB", 312, 0},
        {"NVIDIA A100-SXM4-40GB", 312, 0},   {"NVIDIA B200", 2250, 4500},
        {"NVIDIA GB200", 2500, 5000},        {"NVIDIA L40S", 362.05, 733},
        {"NVIDIA GeForce RTX 4090", 165.2, 330.3}, {"AMD Instinct MI300X", 1307.4, 2614.9},
        {"Tesla T4", 0, 0}, /* no BF16 tensor cores: no roof, not a made-up one */
        {"NVIDIA B300 SXM6 AC", 0, 0}, /* no datasheet figure found yet */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct kvs_device_info d;
        bool found = false;
        KVS_REQUIRE(kvs_device_lookup(want[i].name, NULL, &d, &found) == KVS_STATUS_OK && found);
        KVS_CHECK_MSG(d.bf16_tflops == want[i].bf16 && d.fp8_tflops == want[i].fp8,
                      "%s: bf16 %g fp8 %g, want %g %g", want[i].name, d.bf16_tflops, d.fp8_tflops,
                      want[i].bf16, want[i].fp8);
    }
}

static void test_lookup(void)
{
    /* datasheet HBM bandwidth, GB/s */
    KVS_CHECK_NEAR(peak("NVIDIA H200"), 4800, 0);
    KVS_CHECK_NEAR(peak("NVIDIA H100 80GB HBM3"), 3350, 0);
    KVS_CHECK_NEAR(peak("NVIDIA H100 PCIe"), 2000, 0);
    KVS_CHECK_NEAR(peak("h100 sxm"), 3350, 0);
    KVS_CHECK_NEAR(peak("NVIDIA H800"), 3350, 0);
    KVS_CHECK_NEAR(peak("NVIDIA H20"), 4000, 0);
    KVS_CHECK_NEAR(peak("NVIDIA A100-SXM4-80GB"), 2039, 0);
    KVS_CHECK_NEAR(peak("NVIDIA A100-SXM4-40GB"), 1555, 0);
    KVS_CHECK_NEAR(peak("NVIDIA B200"), 8000, 0);
    KVS_CHECK_NEAR(peak("NVIDIA B300 SXM6 AC"), 8000, 0);
    KVS_CHECK_NEAR(peak("NVIDIA GB200"), 8000, 0);
    KVS_CHECK_NEAR(peak("NVIDIA RTX PRO 6000 Blackwell Server Edition"), 1792, 0);
    KVS_CHECK_NEAR(peak("NVIDIA GeForce RTX 5090"), 1792, 0);
    KVS_CHECK_NEAR(peak("NVIDIA GeForce RTX 4090"), 1008, 0);
    KVS_CHECK_NEAR(peak("NVIDIA L40S"), 864, 0);
    KVS_CHECK_NEAR(peak("AMD Instinct MI300X"), 5300, 0);
    KVS_CHECK_NEAR(peak("AMD Instinct MI250X"), 3276.8 / 2, 1e-9); /* per GCD */
    KVS_CHECK_NEAR(peak("Tesla T4"), 320, 0);
    KVS_CHECK_NEAR(peak("Tesla V100-SXM2-32GB"), 900, 0);
    KVS_CHECK_NEAR(peak("NVIDIA L40"), 864, 0);
    KVS_CHECK_NEAR(peak("NVIDIA L4"), 300, 0);
    KVS_CHECK_NEAR(peak("NVIDIA A10"), 600, 0);
    /* short keys never match inside a longer number */
    KVS_CHECK_NEAR(peak("NVIDIA GeForce RTX 4080"), 0, 0);
    KVS_CHECK_NEAR(peak("NVIDIA RTX A4000"), 0, 0);
    KVS_CHECK_NEAR(peak("Intel Arc B580"), 0, 0);
    /* the longest match: H200 is not H20, GB200 not B200 */
    struct kvs_device_info d;
    bool found;
    KVS_CHECK(kvs_device_lookup("NVIDIA H200", NULL, &d, &found) == KVS_STATUS_OK && found);
    KVS_CHECK_EQ_STR(d.name, "NVIDIA H200");
    KVS_CHECK_NEAR(d.copy_gbps, 4257, 0);
    KVS_CHECK(kvs_device_lookup("NVIDIA GB200", NULL, &d, &found) == KVS_STATUS_OK && found);
    KVS_CHECK_EQ_STR(d.name, "NVIDIA GB200");
    char names[1024];
    kvs_device_names(names, sizeof names);
    KVS_CHECK(strstr(names, "H200") && strstr(names, "MI300X"));
}

static void test_bundled_models(void)
{
    struct {
        const char *name;
        int layers;
        int64_t kv_lora_rank, rope, kv_heads, head_dim;
    } cases[] = {
        {"glm5", 78, 512, 64, 64, 96},
        {"deepseek-v3", 61, 512, 64, 128, 56},
        {"kimi-k2", 61, 512, 64, 64, 112},
        {"glm-4.7-flash", 47, 512, 64, 20, 0}, /* 2048 / 20 heads is no integer */
        {"llama-3-70b", 80, 0, 0, 8, 128},
        {"qwen3-235b-a22b", 94, 0, 0, 4, 128},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct kvs_model m;
        KVS_CHECK_MSG(kvs_model_load(cases[i].name, NULL, &m) == KVS_STATUS_OK, "%s", cases[i].name);
        KVS_CHECK_EQ_STR(m.name, cases[i].name);
        KVS_CHECK_EQ_INT(m.layers, cases[i].layers);
        KVS_CHECK_EQ_INT(m.kv_lora_rank, cases[i].kv_lora_rank);
        KVS_CHECK_EQ_INT(m.qk_rope_head_dim, cases[i].rope);
        KVS_CHECK_EQ_INT(m.kv_heads, cases[i].kv_heads);
        /* head_dim: the config's, else hidden_size / num_attention_heads */
        KVS_CHECK_EQ_INT(m.head_dim, cases[i].head_dim);
        KVS_CHECK_EQ_INT(m.mla, cases[i].kv_lora_rank > 0);
    }
    struct kvs_model m;
    KVS_CHECK(kvs_model_load("GLM-5", NULL, &m) == KVS_STATUS_OK && m.layers == 78); /* alias */
    struct kvs_log_capture cap;
    struct kvs_logger lg = kvs_capture_logger(&cap);
    KVS_CHECK_EQ_INT(kvs_model_load("gpt-5", &lg, &m), KVS_STATUS_NOT_FOUND);
    KVS_CHECK(strstr(cap.last, "qwen3-235b-a22b") != NULL); /* the message lists the bundled names */
}

static void test_config_files(void)
{
    char path[256];
    const char *wrapped = "{\"model_type\": \"kimi_k25\", \"text_config\": {\"num_hidden_layers\": 61, "
                          "\"kv_lora_rank\": 512, \"qk_rope_head_dim\": 64, \"num_attention_heads\": 64, "
                          "\"hidden_size\": 7168}}";
    kvs_tmp_write(path, sizeof path, wrapped, strlen(wrapped), ".json");
    struct kvs_model m;
    struct kvs_log_capture cap;
    struct kvs_logger lg = kvs_capture_logger(&cap);
    KVS_CHECK_EQ_INT(kvs_model_load(path, &lg, &m), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(m.layers, 61);
    KVS_CHECK_EQ_INT(m.kv_lora_rank, 512);
    KVS_CHECK_EQ_INT(m.kv_heads, 64); /* defaults to num_attention_heads */
    KVS_CHECK_EQ_STR(m.name, "kimi_k25");  /* model_type names a config file */
    unlink(path);
    const char *broken = "{\"num_hidden_layers\": 61,";
    kvs_tmp_write(path, sizeof path, broken, strlen(broken), ".json");
    KVS_CHECK_EQ_INT(kvs_model_load(path, &lg, &m), KVS_STATUS_PARSE);
    KVS_CHECK(strstr(cap.last, "malformed JSON") != NULL);
    unlink(path);
    const char *nolayers = "{\"hidden_size\": 4096}";
    kvs_tmp_write(path, sizeof path, nolayers, strlen(nolayers), ".json");
    KVS_CHECK_EQ_INT(kvs_model_load(path, &lg, &m), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(strstr(cap.last, "num_hidden_layers") != NULL);
    unlink(path);
}

/* Hostile model configs, through kvs_model_load as --model uses it. */
static void test_config_hostile(void)
{
    char path[256];
    struct kvs_model m;
    struct kvs_log_capture cap;
    struct kvs_logger lg = kvs_capture_logger(&cap);
    static const struct {
        const char *text;
        enum kvs_status want;
        const char *says; /* in the error; NULL: loads */
        int layers;
        int64_t kv_lora_rank;
    } cases[] = {
        /* a negative count was read as "absent" (0), silently */
        {"{\"num_hidden_layers\": 61, \"kv_lora_rank\": -512}", KVS_STATUS_INVALID_ARGUMENT,
         "\"kv_lora_rank\" is -512", 0, 0},
        {"{\"num_hidden_layers\": 61, \"num_key_value_heads\": -8}", KVS_STATUS_INVALID_ARGUMENT,
         "\"num_key_value_heads\" is -8", 0, 0},
        /* duplicate keys: the last value, as Hugging Face (Python's json) reads it */
        {"{\"num_hidden_layers\": 3, \"kv_lora_rank\": 256, \"num_hidden_layers\": 61,"
         " \"kv_lora_rank\": 512}",
         KVS_STATUS_OK, NULL, 61, 512},
        /* data after the object was ignored */
        {"{\"num_hidden_layers\": 61}\n{\"num_hidden_layers\": 3}", KVS_STATUS_PARSE,
         "more after the object", 0, 0},
        {"{\"num_hidden_layers\": 61} trailing", KVS_STATUS_PARSE, "more after the object", 0, 0},
        {"{\"num_hidden_layers\": 61}\n\n", KVS_STATUS_OK, NULL, 61, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvs_tmp_write(path, sizeof path, cases[i].text, strlen(cases[i].text), ".json");
        lg = kvs_capture_logger(&cap);
        enum kvs_status st = kvs_model_load(path, &lg, &m);
        KVS_CHECK_MSG(st == cases[i].want, "case %zu: %s (%s)", i, kvs_status_str(st), cap.last);
        if (cases[i].says)
            KVS_CHECK_MSG(strstr(cap.last, cases[i].says) && strstr(cap.last, path),
                          "case %zu: \"%s\" lacks \"%s\" or the path", i, cap.last, cases[i].says);
        else if (st == KVS_STATUS_OK) {
            KVS_CHECK_EQ_INT(m.layers, cases[i].layers);
            KVS_CHECK_EQ_INT(m.kv_lora_rank, cases[i].kv_lora_rank);
        }
        unlink(path);
    }

    /* a checkpoint folder: FOLDER/config.json, and the log says so */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/kvs_ckpt_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    KVS_REQUIRE(mkdtemp(dir) != NULL);
    lg = kvs_capture_logger(&cap);
    KVS_CHECK_EQ_INT(kvs_model_load(dir, &lg, &m), KVS_STATUS_NOT_FOUND);
    KVS_CHECK_MSG(strstr(cap.last, "a folder without a config.json"), "%s", cap.last);
    char inner[300];
    snprintf(inner, sizeof inner, "%s/config.json", dir);
    const char *cfg = "{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 61, "
                      "\"kv_lora_rank\": 512, \"qk_rope_head_dim\": 64}";
    FILE *f = fopen(inner, "w");
    KVS_REQUIRE(f && fputs(cfg, f) >= 0 && fclose(f) == 0);
    lg = kvs_capture_logger(&cap);
    KVS_CHECK_EQ_INT(kvs_model_load(dir, &lg, &m), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(m.layers, 61);
    KVS_CHECK_EQ_STR(m.name, "deepseek_v3");
    KVS_CHECK_MSG(strstr(cap.all, "is a folder: reading") && strstr(cap.all, inner), "%s", cap.all);
    unlink(inner);

    /* a pipe (as --model <(...) gives): read to its end */
    snprintf(inner, sizeof inner, "%s/fifo", dir);
    pid_t pid = kvs_test_fifo_start(inner, cfg);
    lg = kvs_capture_logger(&cap);
    KVS_CHECK_MSG(kvs_model_load(inner, &lg, &m) == KVS_STATUS_OK, "%s", cap.last);
    KVS_CHECK_EQ_INT(m.layers, 61);
    KVS_CHECK(kvs_test_fifo_done(pid, inner));

    /* 14 MB of tiny values took 1.1 GB: now refused, its reader's peak
     * (a child of this small process) under 32 MiB */
    snprintf(inner, sizeof inner, "%s/bomb.json", dir);
    size_t n = 14u << 20;
    char *text = malloc(n);
    KVS_REQUIRE(text != NULL);
    size_t at = (size_t)snprintf(text, n, "{\"num_hidden_layers\": 61, \"x\": [");
    while (at + 3 < n) {
        text[at++] = '0';
        text[at++] = ',';
    }
    text[at - 1] = ']';
    text[at++] = '}';
    f = fopen(inner, "wb");
    KVS_REQUIRE(f && fwrite(text, 1, at, f) == at && fclose(f) == 0);
    free(text);
    pid = fork();
    KVS_REQUIRE(pid >= 0);
    if (pid == 0) {
        struct kvs_logger quiet = {NULL, NULL, KVS_LOG_ERROR + 1};
        struct kvs_model cm;
        _exit(kvs_model_load(inner, &quiet, &cm) == KVS_STATUS_LIMIT ? 0 : 1);
    }
    struct rusage ru;
    int ws = 0;
    KVS_REQUIRE(wait4(pid, &ws, 0, &ru) == pid);
    KVS_CHECK_MSG(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "14 MB config not refused (LIMIT)");
    KVS_CHECK_MSG(ru.ru_maxrss < 32 * 1024, "14 MB config: peak %ld KiB", ru.ru_maxrss);
    printf("14 MB config: peak RSS %ld KiB\n", ru.ru_maxrss);
    lg = kvs_capture_logger(&cap);
    KVS_CHECK_EQ_INT(kvs_model_load(inner, &lg, &m), KVS_STATUS_LIMIT);
    KVS_CHECK_MSG(strstr(cap.last, "more than the 1048576"), "%s", cap.last);
    unlink(inner);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"lookup", test_lookup},
        {"tensor_peaks", test_tensor_peaks},
        {"bundled_models", test_bundled_models},
        {"config_files", test_config_files},
        {"config_hostile", test_config_hostile},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
