/* engine/config.c — a GLM-5 / DeepSeek-V3 style config.json, read by the one
 * reader in common/ (kvscope/hf_config.h), validated for the subset this
 * engine runs, into struct kvs_model_config; by bundled name or path.
 * Tested by tests/test_engine_config.c (meson test -C build test_engine_config). */
#include "kvscope/engine.h"
#include "kvscope/check.h"
#include "kvscope/hf_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs_bundled.h"

/* The reader (kvscope/hf_config.h) bounds every count to [0, 2^24], so
 * each fits an int and products of two stay inside int64. */
#define KVS_CONFIG_MAX_DIM KVS_HF_CONFIG_MAX_COUNT

// ----------------------------------------------------------------------------
// fields: the reader's values, with this engine's lower bounds. A wrong
// type or an out-of-range count (the reader logs it) is KVS_STATUS_PARSE.

/* Integer field: 0 ok, -1 absent, -2 malformed (logged). */
static int get_int(const struct kvs_hf_config *cfg, const char *key, int lo, int *out,
                   const struct kvs_logger *lg)
{
    int64_t v = 0;
    enum kvs_status s = kvs_hf_config_count(cfg, key, &v);
    if (s == KVS_STATUS_NOT_FOUND)
        return -1;
    if (s != KVS_STATUS_OK)
        return -2;
    if (v < lo) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: \"%s\" must be an integer in [%d, %d]",
                kvs_hf_config_what(cfg), key, lo, KVS_CONFIG_MAX_DIM);
        return -2;
    }
    *out = (int)v;
    return 0;
}

static enum kvs_status need_int(const struct kvs_hf_config *cfg, const char *key, int lo,
                                int *out, const struct kvs_logger *lg)
{
    int r = get_int(cfg, key, lo, out, lg);
    if (r == -1)
        kvs_log(lg, KVS_LOG_ERROR, "%s: required field \"%s\" is missing",
                kvs_hf_config_what(cfg), key);
    return r == 0 ? KVS_STATUS_OK : KVS_STATUS_PARSE;
}

static enum kvs_status opt_int(const struct kvs_hf_config *cfg, const char *key, int lo,
                               int dflt, int *out, const struct kvs_logger *lg)
{
    int r = get_int(cfg, key, lo, out, lg);
    if (r == -1)
        *out = dflt;
    return r == -2 ? KVS_STATUS_PARSE : KVS_STATUS_OK;
}

static enum kvs_status opt_float(const struct kvs_hf_config *cfg, const char *key, double lo,
                                 double hi, float dflt, float *out, const struct kvs_logger *lg)
{
    double v = 0;
    enum kvs_status s = kvs_hf_config_number(cfg, key, &v);
    if (s == KVS_STATUS_NOT_FOUND) {
        *out = dflt;
        return KVS_STATUS_OK;
    }
    if (s != KVS_STATUS_OK)
        return KVS_STATUS_PARSE;
    if (!(v >= lo && v <= hi)) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: \"%s\" must be a number in [%g, %g]",
                kvs_hf_config_what(cfg), key, lo, hi);
        return KVS_STATUS_PARSE;
    }
    *out = (float)v;
    return KVS_STATUS_OK;
}

/* Boolean field: 0/1, dflt when absent, -1 malformed (logged). */
static int opt_bool(const struct kvs_hf_config *cfg, const char *key, int dflt)
{
    bool b = false;
    enum kvs_status s = kvs_hf_config_bool(cfg, key, &b);
    if (s == KVS_STATUS_NOT_FOUND)
        return dflt;
    return s == KVS_STATUS_OK ? (int)b : -1;
}

static enum kvs_status unsupported(const struct kvs_logger *lg, const char *name, const char *what)
{
    kvs_log(lg, KVS_LOG_ERROR, "%s: %s", name, what);
    return KVS_STATUS_UNSUPPORTED;
}

// ----------------------------------------------------------------------------
// parse

/* What this engine supports of a config: the subset it needs, validated. */
static enum kvs_status parse_root(const struct kvs_hf_config *root, struct kvs_model_config *c,
                                  const struct kvs_logger *lg)
{
    const char *name = kvs_hf_config_what(root);
    struct {
        const char *key;
        int *dst;
        int lo;
    } req[] = {
        {"hidden_size", &c->hidden, 1},
        {"num_hidden_layers", &c->layers, 1},
        {"num_attention_heads", &c->heads, 1},
        {"q_lora_rank", &c->q_lora_rank, 1},
        {"kv_lora_rank", &c->kv_lora_rank, 1},
        {"qk_nope_head_dim", &c->qk_nope_head_dim, 1},
        {"qk_rope_head_dim", &c->qk_rope_head_dim, 1},
        {"v_head_dim", &c->v_head_dim, 1},
        {"n_routed_experts", &c->n_routed_experts, 1},
        {"num_experts_per_tok", &c->topk, 1},
        {"moe_intermediate_size", &c->moe_inter, 1},
        {"intermediate_size", &c->inter, 1},
        {"vocab_size", &c->vocab, 2},
    };
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        KVS_TRY(need_int(root, req[i].key, req[i].lo, req[i].dst, lg));
    KVS_TRY(opt_int(root, "first_k_dense_replace", 0, 0, &c->dense_layers, lg));
    KVS_TRY(opt_int(root, "n_shared_experts", 0, 0, &c->n_shared_experts, lg));
    KVS_TRY(opt_int(root, "index_topk", 0, 0, &c->index_topk, lg));
    KVS_TRY(opt_float(root, "rms_norm_eps", 0.0, 1.0, 1e-6f, &c->rms_eps, lg));
    KVS_TRY(opt_float(root, "rope_theta", 1.0, 1e12, 10000.0f, &c->rope_theta, lg));
    KVS_TRY(opt_float(root, "routed_scaling_factor", 0.0, 1e6, 1.0f, &c->routed_scale, lg));
    int norm = opt_bool(root, "norm_topk_prob", 0);
    int inter = opt_bool(root, "rope_interleave", 1);
    if (norm < 0 || inter < 0)
        return KVS_STATUS_PARSE;
    c->norm_topk = norm;

    int n_group = 1, topk_group = 1;
    KVS_TRY(opt_int(root, "n_group", 1, 1, &n_group, lg));
    KVS_TRY(opt_int(root, "topk_group", 1, n_group, &topk_group, lg));

    const char *scoring = NULL;
    enum kvs_status ss = kvs_hf_config_string(root, "scoring_func", &scoring);
    if (ss != KVS_STATUS_OK && ss != KVS_STATUS_NOT_FOUND)
        return KVS_STATUS_PARSE;

    /* Structure the decode step relies on. */
    if (c->dense_layers > c->layers) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: first_k_dense_replace %d exceeds num_hidden_layers %d",
                name, c->dense_layers, c->layers);
        return KVS_STATUS_PARSE;
    }
    if (c->topk > c->n_routed_experts) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: num_experts_per_tok %d exceeds n_routed_experts %d", name,
                c->topk, c->n_routed_experts);
        return KVS_STATUS_PARSE;
    }
    /* What the kernels can run. */
    if (c->kv_lora_rank != 512 || c->qk_rope_head_dim != 64)
        return unsupported(lg, name, "the MLA kernels need kv_lora_rank 512 and qk_rope_head_dim "
                                     "64 (a 576-wide latent row)");
    if (scoring && strcmp(scoring, "sigmoid"))
        return unsupported(lg, name, "only sigmoid expert scoring (scoring_func \"sigmoid\") is "
                                     "implemented");
    if (topk_group < n_group)
        return unsupported(lg, name, "group-limited expert routing (topk_group < n_group) is not "
                                     "implemented");
    if (!inter)
        return unsupported(lg, name, "only interleaved RoPE (rope_interleave true) is implemented");
    if ((int64_t)c->heads * c->qk_nope_head_dim > KVS_CONFIG_MAX_DIM ||
        (int64_t)c->heads * c->v_head_dim > KVS_CONFIG_MAX_DIM)
        return unsupported(lg, name, "heads x head dims exceed the kernels' limits");
    return KVS_STATUS_OK;
}

/* cfg (consumed) -> *out, labelled label */
static enum kvs_status config_take(struct kvs_hf_config *cfg, const char *label,
                                   struct kvs_model_config *out, const struct kvs_logger *lg)
{
    struct kvs_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", label);
    enum kvs_status st = parse_root(cfg, &c, lg);
    kvs_hf_config_free(cfg);
    if (st == KVS_STATUS_OK)
        *out = c;
    return st;
}

enum kvs_status kvs_model_config_parse(const char *json, size_t len, const char *name,
                                       struct kvs_model_config *out, const struct kvs_logger *lg)
{
    if (!json || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (!name)
        name = "config";
    struct kvs_hf_config *cfg;
    enum kvs_status st = kvs_hf_config_parse(json, len, name, lg, &cfg);
    return st == KVS_STATUS_OK ? config_take(cfg, name, out, lg) : st;
}

// ----------------------------------------------------------------------------
// load

const char *kvs_model_config_bundled(const char *name)
{
    if (!name)
        return NULL;
    for (const struct kvs_bundled_config *b = kvs_bundled_configs; b->name; b++)
        if (!strcmp(b->name, name))
            return b->json;
    return NULL;
}

enum kvs_status kvs_model_config_load(const char *name_or_path, struct kvs_model_config *out,
                                      const struct kvs_logger *lg)
{
    if (!name_or_path || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    const char *bundled = kvs_model_config_bundled(name_or_path);
    if (bundled)
        return kvs_model_config_parse(bundled, strlen(bundled), name_or_path, out, lg);

    /* a file, a pipe, or a checkpoint folder (its config.json) */
    struct kvs_hf_config *cfg;
    enum kvs_status st = kvs_hf_config_read(name_or_path, lg, &cfg);
    if (st == KVS_STATUS_NOT_FOUND && !strchr(name_or_path, '/'))
        kvs_log(lg, KVS_LOG_ERROR, "'%s' is neither a bundled config (glm5, tiny) nor a file",
                name_or_path);
    if (st != KVS_STATUS_OK)
        return st;
    /* errors name the file read (a user's path), the config its base name */
    char name[64];
    kvs_hf_config_label(name_or_path, name, sizeof name);
    return config_take(cfg, name, out, lg);
}

// ----------------------------------------------------------------------------
// derived

float kvs_model_softmax_scale(const struct kvs_model_config *c)
{
    return (float)(1.0 / sqrt((double)(c->qk_nope_head_dim + c->qk_rope_head_dim)));
}

int kvs_model_moe_layers(const struct kvs_model_config *c)
{
    return c->layers - c->dense_layers;
}

const char *kvs_kv_path_name(enum kvs_kv_path p)
{
    switch (p) {
    case KVS_KV_PATH_FULL_CAST: return "full-cast";
    case KVS_KV_PATH_ACTIVE_CAST: return "active-cast";
    case KVS_KV_PATH_FP8_DIRECT: return "fp8-direct";
    case KVS_KV_PATH_COUNT_: break;
    }
    return "unknown";
}

enum kvs_status kvs_kv_path_parse(const char *name, enum kvs_kv_path *out)
{
    for (int p = 0; name && p < KVS_KV_PATH_COUNT_; p++) {
        if (!strcmp(name, kvs_kv_path_name((enum kvs_kv_path)p))) {
            *out = (enum kvs_kv_path)p;
            return KVS_STATUS_OK;
        }
    }
    return KVS_STATUS_INVALID_ARGUMENT;
}
