/* tests/test_engine_config.c — the engine's model configs: the bundled GLM-5
 * and tiny configs, files, checkpoint folders, pipes, and every way a
 * config.json can be refused (duplicate keys take the last value,
 * data after the object and oversized files are refused).
 *   meson test -C build test_engine_config */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fifo_test_util.h"
#include "kvs_test.h"
#include "kvscope/engine.h"

struct captured {
    int calls;
    char text[4096];
};

static void capture(void *user, enum kvs_log_level level, const char *message)
{
    struct captured *c = user;
    (void)level;
    c->calls++;
    snprintf(c->text, sizeof c->text, "%s", message);
}

// ----------------------------------------------------------------------------
// config

static void test_config_glm5(void)
{
    struct kvs_model_config c;
    KVS_REQUIRE(kvs_model_config_load("glm5", &c, NULL) == KVS_STATUS_OK);
    /* the published GLM-5 dimensions (../shared/DESIGN.md) */
    KVS_CHECK_EQ_STR(c.name, "glm5");
    KVS_CHECK_EQ_INT(c.hidden, 6144);
    KVS_CHECK_EQ_INT(c.layers, 78);
    KVS_CHECK_EQ_INT(c.dense_layers, 3);
    KVS_CHECK_EQ_INT(kvs_model_moe_layers(&c), 75);
    KVS_CHECK_EQ_INT(c.heads, 64);
    KVS_CHECK_EQ_INT(c.q_lora_rank, 2048);
    KVS_CHECK_EQ_INT(c.kv_lora_rank, 512);
    KVS_CHECK_EQ_INT(c.qk_nope_head_dim, 192);
    KVS_CHECK_EQ_INT(c.qk_rope_head_dim, 64);
    KVS_CHECK_EQ_INT(c.v_head_dim, 256);
    KVS_CHECK_EQ_INT(c.n_routed_experts, 256);
    KVS_CHECK_EQ_INT(c.topk, 8);
    KVS_CHECK_EQ_INT(c.n_shared_experts, 1);
    KVS_CHECK_EQ_INT(c.moe_inter, 2048);
    KVS_CHECK_EQ_INT(c.inter, 12288);
    KVS_CHECK_EQ_INT(c.vocab, 154880);
    KVS_CHECK_EQ_INT(c.norm_topk, 1);
    KVS_CHECK_EQ_INT(c.index_topk, 2048);
    KVS_CHECK_NEAR(c.rms_eps, 1e-5, 1e-12);
    KVS_CHECK_NEAR(c.rope_theta, 1e6, 0.5);
    KVS_CHECK_NEAR(c.routed_scale, 2.5, 1e-7);
    KVS_CHECK_NEAR(kvs_model_softmax_scale(&c), 1.0 / 16.0, 1e-9);
}

static void test_config_tiny_and_file(void)
{
    struct kvs_model_config t, f;
    KVS_REQUIRE(kvs_model_config_load("tiny", &t, NULL) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(t.kv_lora_rank, 512);
    KVS_CHECK_EQ_INT(t.qk_rope_head_dim, 64);
    KVS_CHECK(t.dense_layers >= 1 && kvs_model_moe_layers(&t) >= 2);
    KVS_CHECK(t.topk >= 2 && t.n_shared_experts >= 1);

    /* the same text through a file gives the same config, named after the file */
    const char *text = kvs_model_config_bundled("tiny");
    KVS_REQUIRE(text != NULL);
    char path[] = "/tmp/kvs_test_cfgXXXXXX";
    int fd = mkstemp(path);
    KVS_REQUIRE(fd >= 0);
    KVS_REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    KVS_CHECK(kvs_model_config_load(path, &f, NULL) == KVS_STATUS_OK);
    unlink(path);
    KVS_CHECK_EQ_STR(f.name, strrchr(path, '/') + 1);
    memset(f.name, 0, sizeof f.name);
    strcpy(f.name, t.name);
    KVS_CHECK(memcmp(&f, &t, sizeof f) == 0);

    struct captured cap = {0};
    struct kvs_logger lg = {capture, &cap, KVS_LOG_DEBUG};
    KVS_CHECK_EQ_INT(kvs_model_config_load("no-such-model", &f, &lg), KVS_STATUS_NOT_FOUND);
    KVS_CHECK(strstr(cap.text, "no-such-model") != NULL);
}

/* tiny's text with `from` replaced by `to` */
static enum kvs_status parse_edited(const char *from, const char *to, struct captured *cap)
{
    const char *text = kvs_model_config_bundled("tiny");
    const char *at = strstr(text, from);
    if (!at)
        return KVS_STATUS_INTERNAL;
    size_t n = strlen(text) + strlen(to) + 1;
    char *buf = malloc(n);
    snprintf(buf, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    struct kvs_logger lg = {capture, cap, KVS_LOG_DEBUG};
    struct kvs_model_config c;
    enum kvs_status st = kvs_model_config_parse(buf, strlen(buf), "edited", &c, &lg);
    free(buf);
    return st;
}

static void test_config_errors(void)
{
    static const struct {
        const char *from, *to;
        enum kvs_status want;
        const char *says;
    } cases[] = {
        {"\"hidden_size\"", "\"hidden_sizeX\"", KVS_STATUS_PARSE, "hidden_size"},
        {"\"vocab_size\": 512", "\"vocab_size\": \"512\"", KVS_STATUS_PARSE, "vocab_size"},
        {"\"num_hidden_layers\": 3", "\"num_hidden_layers\": 2.5", KVS_STATUS_PARSE,
         "num_hidden_layers"},
        {"\"num_attention_heads\": 4", "\"num_attention_heads\": -4", KVS_STATUS_PARSE,
         "num_attention_heads"},
        {"\"first_k_dense_replace\": 1", "\"first_k_dense_replace\": 9", KVS_STATUS_PARSE,
         "first_k_dense_replace"},
        {"\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 9", KVS_STATUS_PARSE,
         "num_experts_per_tok"},
        {"\"norm_topk_prob\": true", "\"norm_topk_prob\": 1", KVS_STATUS_PARSE, "norm_topk_prob"},
        {"\"kv_lora_rank\": 512", "\"kv_lora_rank\": 256", KVS_STATUS_UNSUPPORTED, "kv_lora_rank"},
        {"\"qk_rope_head_dim\": 64", "\"qk_rope_head_dim\": 32", KVS_STATUS_UNSUPPORTED,
         "qk_rope_head_dim"},
        {"\"sigmoid\"", "\"softmax\"", KVS_STATUS_UNSUPPORTED, "sigmoid"},
        {"\"n_group\": 1", "\"n_group\": 8", KVS_STATUS_UNSUPPORTED, "topk_group"},
        {"\"rope_interleave\": true", "\"rope_interleave\": false", KVS_STATUS_UNSUPPORTED,
         "rope_interleave"},
        {"\"torch_dtype\": \"bfloat16\"\n}", "\"torch_dtype\": \"bfloat16\",\n", KVS_STATUS_PARSE,
         "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct captured cap = {0};
        enum kvs_status st = parse_edited(cases[i].from, cases[i].to, &cap);
        KVS_CHECK_MSG(st == cases[i].want, "case %zu (%s): status %s", i, cases[i].to,
                      kvs_status_str(st));
        KVS_CHECK_MSG(strstr(cap.text, cases[i].says) != NULL, "case %zu: message '%s' lacks '%s'",
                      i, cap.text, cases[i].says);
    }
    struct kvs_model_config c;
    struct captured cap = {0};
    struct kvs_logger lg = {capture, &cap, KVS_LOG_DEBUG};
    KVS_CHECK_EQ_INT(kvs_model_config_parse("[1,2]", 5, "arr", &c, &lg), KVS_STATUS_PARSE);
    KVS_CHECK_EQ_INT(kvs_model_config_parse("", 0, "empty", &c, &lg), KVS_STATUS_PARSE);
    KVS_CHECK_EQ_INT(kvs_model_config_parse("{\"a\":", 5, "cut", &c, &lg), KVS_STATUS_PARSE);
}

/* Hostile model configs, through kvs_model_config_load as
 * `kvscope engine --config` uses it. */
static void test_config_hostile(void)
{
    const char *tiny = kvs_model_config_bundled("tiny");
    KVS_REQUIRE(tiny != NULL);
    struct kvs_model_config t, c;
    KVS_REQUIRE(kvs_model_config_load("tiny", &t, NULL) == KVS_STATUS_OK);
    struct captured cap = {0};
    struct kvs_logger lg = {capture, &cap, KVS_LOG_DEBUG};

    /* duplicate keys: the LAST value counts (Hugging Face reads it so);
     * the first one did, so 256-then-512 was refused and 512-then-256 ran */
    size_t n = strlen(tiny) + 64;
    char *buf = malloc(n);
    KVS_REQUIRE(buf != NULL);
    snprintf(buf, n, "{\"kv_lora_rank\": 256, %s", strchr(tiny, '{') + 1);
    KVS_CHECK_MSG(kvs_model_config_parse(buf, strlen(buf), "dup", &c, &lg) == KVS_STATUS_OK, "%s",
                  cap.text);
    KVS_CHECK_EQ_INT(c.kv_lora_rank, 512);
    snprintf(buf, n, "%.*s, \"kv_lora_rank\": 256}", (int)(strrchr(tiny, '}') - tiny), tiny);
    KVS_CHECK_EQ_INT(kvs_model_config_parse(buf, strlen(buf), "dup", &c, &lg),
                     KVS_STATUS_UNSUPPORTED);
    KVS_CHECK(strstr(cap.text, "kv_lora_rank") != NULL);
    /* data after the object */
    snprintf(buf, n, "%s {}", tiny);
    KVS_CHECK_EQ_INT(kvs_model_config_parse(buf, strlen(buf), "trail", &c, &lg), KVS_STATUS_PARSE);
    KVS_CHECK_MSG(strstr(cap.text, "trail: malformed JSON: more after the object"), "%s",
                  cap.text);
    snprintf(buf, n, "%s\n\n", tiny); /* white space is fine */
    KVS_CHECK_EQ_INT(kvs_model_config_parse(buf, strlen(buf), "ws", &c, &lg), KVS_STATUS_OK);
    free(buf);

    /* a checkpoint folder: its config.json, named after the folder */
    char dir[] = "/tmp/kvs_engine_ckptXXXXXX";
    KVS_REQUIRE(mkdtemp(dir) != NULL);
    KVS_CHECK_EQ_INT(kvs_model_config_load(dir, &c, &lg), KVS_STATUS_NOT_FOUND);
    KVS_CHECK_MSG(strstr(cap.text, "a folder without a config.json"), "%s", cap.text);
    char inner[128];
    snprintf(inner, sizeof inner, "%s/config.json", dir);
    FILE *f = fopen(inner, "w");
    KVS_REQUIRE(f && fputs(tiny, f) >= 0 && fclose(f) == 0);
    KVS_CHECK_MSG(kvs_model_config_load(dir, &c, &lg) == KVS_STATUS_OK, "%s", cap.text);
    KVS_CHECK_EQ_STR(c.name, strrchr(dir, '/') + 1);
    KVS_CHECK_EQ_INT(c.layers, t.layers);
    KVS_CHECK_EQ_INT(c.vocab, t.vocab);
    unlink(inner);

    /* a pipe: read to its end */
    snprintf(inner, sizeof inner, "%s/fifo", dir);
    pid_t pid = kvs_test_fifo_start(inner, tiny);
    KVS_CHECK_MSG(kvs_model_config_load(inner, &c, &lg) == KVS_STATUS_OK, "%s", cap.text);
    KVS_CHECK_EQ_INT(c.layers, t.layers);
    KVS_CHECK(kvs_test_fifo_done(pid, inner));

    /* over the 1 MiB cap: refused, naming the size */
    snprintf(inner, sizeof inner, "%s/big.json", dir);
    f = fopen(inner, "w");
    KVS_REQUIRE(f != NULL);
    fputs(tiny, f);
    for (int i = 0; i < (1 << 20) / 64 + 1; i++)
        fputs("                                                               \n", f);
    KVS_REQUIRE(fclose(f) == 0);
    KVS_CHECK_EQ_INT(kvs_model_config_load(inner, &c, &lg), KVS_STATUS_LIMIT);
    KVS_CHECK_MSG(strstr(cap.text, "more than the 1048576"), "%s", cap.text);
    unlink(inner);
    rmdir(dir);
}

static void test_kv_path_names(void)
{
    for (int p = 0; p < KVS_KV_PATH_COUNT_; p++) {
        enum kvs_kv_path back;
        KVS_CHECK(kvs_kv_path_parse(kvs_kv_path_name((enum kvs_kv_path)p), &back) ==
                  KVS_STATUS_OK);
        KVS_CHECK_EQ_INT(back, p);
    }
    enum kvs_kv_path x;
    KVS_CHECK_EQ_INT(kvs_kv_path_parse("fullcast", &x), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_kv_path_parse(NULL, &x), KVS_STATUS_INVALID_ARGUMENT);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"config_glm5", test_config_glm5},
        {"config_tiny_and_file", test_config_tiny_and_file},
        {"config_errors", test_config_errors},
        {"config_hostile", test_config_hostile},
        {"kv_path_names", test_kv_path_names},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
