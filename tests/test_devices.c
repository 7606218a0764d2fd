/* tests/test_devices.c — the device table (analyzers/data/devices.json) and
 * the bundled model configs: lookups by trace names and --device spellings,
 * the longest match winning, per-device peaks of multi-die packages; every
 * bundled model loads with its published layer count and KV dimensions; a
 * config file from disk, a multimodal wrapper, and broken configs.
 *
 *   meson test -C build test_devices
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analyzer_test_util.h"
#include "devices.h"
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
    KVS_CHECK(strstr(cap.last, "not valid JSON") != NULL);
    unlink(path);
    const char *nolayers = "{\"hidden_size\": 4096}";
    kvs_tmp_write(path, sizeof path, nolayers, strlen(nolayers), ".json");
    KVS_CHECK_EQ_INT(kvs_model_load(path, &lg, &m), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(strstr(cap.last, "num_hidden_layers") != NULL);
    unlink(path);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"lookup", test_lookup},
        {"bundled_models", test_bundled_models},
        {"config_files", test_config_files},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
