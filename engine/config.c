/* engine/config.c — read a GLM-5 / DeepSeek-V3 style config.json (cJSON: a
 * small document) into struct kvs_model_config, by bundled name or path.
 * Tested by tests/test_engine_config.c (meson test -C build test_engine_config). */
#include "kvscope/engine.h"
#include "kvscope/check.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs_bundled.h"

/* Larger than any config.json published; a bigger file is not a config. */
#define KVS_CONFIG_MAX_BYTES (1u << 20)
/* Every dimension must stay well inside int arithmetic of the kernels. */
#define KVS_CONFIG_MAX_DIM (1 << 24)

// ----------------------------------------------------------------------------
// fields

/* Integer field: 0 ok, -1 absent, -2 malformed (logged). */
static int get_int(const cJSON *root, const char *key, const char *name, int lo, int *out,
                   const struct kvs_logger *lg)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v))
        return -1;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > KVS_CONFIG_MAX_DIM) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: \"%s\" must be an integer in [%d, %d]", name, key, lo,
                KVS_CONFIG_MAX_DIM);
        return -2;
    }
    *out = (int)v->valuedouble;
    return 0;
}

static enum kvs_status need_int(const cJSON *root, const char *key, const char *name, int lo,
                                int *out, const struct kvs_logger *lg)
{
    int r = get_int(root, key, name, lo, out, lg);
    if (r == -1)
        kvs_log(lg, KVS_LOG_ERROR, "%s: required field \"%s\" is missing", name, key);
    return r == 0 ? KVS_STATUS_OK : KVS_STATUS_PARSE;
}

static enum kvs_status opt_int(const cJSON *root, const char *key, const char *name, int lo,
                               int dflt, int *out, const struct kvs_logger *lg)
{
    int r = get_int(root, key, name, lo, out, lg);
    if (r == -1)
        *out = dflt;
    return r == -2 ? KVS_STATUS_PARSE : KVS_STATUS_OK;
}

static enum kvs_status opt_float(const cJSON *root, const char *key, const char *name, double lo,
                                 double hi, float dflt, float *out, const struct kvs_logger *lg)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) {
        *out = dflt;
        return KVS_STATUS_OK;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: \"%s\" must be a number in [%g, %g]", name, key, lo, hi);
        return KVS_STATUS_PARSE;
    }
    *out = (float)v->valuedouble;
    return KVS_STATUS_OK;
}

/* Boolean field: 0/1, dflt when absent, -1 malformed. */
static int opt_bool(const cJSON *root, const char *key, const char *name, int dflt,
                    const struct kvs_logger *lg)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v))
        return dflt;
    if (!cJSON_IsBool(v)) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: \"%s\" must be true or false", name, key);
        return -1;
    }
    return cJSON_IsTrue(v) ? 1 : 0;
}

static enum kvs_status unsupported(const struct kvs_logger *lg, const char *name, const char *what)
{
    kvs_log(lg, KVS_LOG_ERROR, "%s: %s", name, what);
    return KVS_STATUS_UNSUPPORTED;
}

// ----------------------------------------------------------------------------
// parse

static enum kvs_status parse_root(const cJSON *root, const char *name,
                                  struct kvs_model_config *c, const struct kvs_logger *lg)
{
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
        KVS_TRY(need_int(root, req[i].key, name, req[i].lo, req[i].dst, lg));
    KVS_TRY(opt_int(root, "first_k_dense_replace", name, 0, 0, &c->dense_layers, lg));
    KVS_TRY(opt_int(root, "n_shared_experts", name, 0, 0, &c->n_shared_experts, lg));
    KVS_TRY(opt_int(root, "index_topk", name, 0, 0, &c->index_topk, lg));
    KVS_TRY(opt_float(root, "rms_norm_eps", name, 0.0, 1.0, 1e-6f, &c->rms_eps, lg));
    KVS_TRY(opt_float(root, "rope_theta", name, 1.0, 1e12, 10000.0f, &c->rope_theta, lg));
    KVS_TRY(opt_float(root, "routed_scaling_factor", name, 0.0, 1e6, 1.0f, &c->routed_scale, lg));
    int norm = opt_bool(root, "norm_topk_prob", name, 0, lg);
    int inter = opt_bool(root, "rope_interleave", name, 1, lg);
    if (norm < 0 || inter < 0)
        return KVS_STATUS_PARSE;
    c->norm_topk = norm;

    int n_group = 1, topk_group = 1;
    KVS_TRY(opt_int(root, "n_group", name, 1, 1, &n_group, lg));
    KVS_TRY(opt_int(root, "topk_group", name, 1, n_group, &topk_group, lg));

    const cJSON *scoring = cJSON_GetObjectItemCaseSensitive(root, "scoring_func");
    if (scoring && !cJSON_IsNull(scoring) && !cJSON_IsString(scoring)) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: \"scoring_func\" must be a string", name);
        return KVS_STATUS_PARSE;
    }

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
    if (scoring && cJSON_IsString(scoring) && strcmp(scoring->valuestring, "sigmoid"))
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

enum kvs_status kvs_model_config_parse(const char *json, size_t len, const char *name,
                                       struct kvs_model_config *out, const struct kvs_logger *lg)
{
    if (!json || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (!name)
        name = "config";
    if (len > KVS_CONFIG_MAX_BYTES) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: %zu bytes is too large for a config.json", name, len);
        return KVS_STATUS_LIMIT;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        kvs_log(lg, KVS_LOG_ERROR, "%s: malformed JSON near byte %zu", name, at);
        return KVS_STATUS_PARSE;
    }
    struct kvs_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", name);
    enum kvs_status st = KVS_STATUS_OK;
    if (!cJSON_IsObject(root)) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: a config.json is a JSON object", name);
        st = KVS_STATUS_PARSE;
    } else {
        st = parse_root(root, name, &c, lg);
    }
    cJSON_Delete(root);
    if (st == KVS_STATUS_OK)
        *out = c;
    return st;
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

static enum kvs_status read_file(const char *path, char **text, size_t *len,
                                 const struct kvs_logger *lg)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        kvs_log(lg, KVS_LOG_ERROR, "%s: %s", path, strerror(e));
        return e == ENOENT ? KVS_STATUS_NOT_FOUND : KVS_STATUS_IO;
    }
    char *buf = malloc(KVS_CONFIG_MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        return KVS_STATUS_NO_MEMORY;
    }
    size_t n = fread(buf, 1, KVS_CONFIG_MAX_BYTES + 1, f);
    int err = ferror(f), e = errno;
    fclose(f);
    if (err) {
        free(buf);
        /* fopen opens a folder; reading it fails with EISDIR */
        kvs_log(lg, KVS_LOG_ERROR, "%s: %s", path,
                e == EISDIR ? "a folder, not a config.json" : "read error");
        return KVS_STATUS_IO;
    }
    if (n > KVS_CONFIG_MAX_BYTES) {
        free(buf);
        kvs_log(lg, KVS_LOG_ERROR, "%s: larger than %u bytes: not a config.json", path,
                KVS_CONFIG_MAX_BYTES);
        return KVS_STATUS_LIMIT;
    }
    *text = buf;
    *len = n;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_model_config_load(const char *name_or_path, struct kvs_model_config *out,
                                      const struct kvs_logger *lg)
{
    if (!name_or_path || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    const char *bundled = kvs_model_config_bundled(name_or_path);
    if (bundled)
        return kvs_model_config_parse(bundled, strlen(bundled), name_or_path, out, lg);

    char *text = NULL;
    size_t len = 0;
    enum kvs_status st = read_file(name_or_path, &text, &len, lg);
    if (st == KVS_STATUS_NOT_FOUND && !strchr(name_or_path, '/'))
        kvs_log(lg, KVS_LOG_ERROR, "'%s' is neither a bundled config (glm5, tiny) nor a file",
                name_or_path);
    if (st != KVS_STATUS_OK)
        return st;
    /* name: the file's base name without ".json" */
    const char *base = strrchr(name_or_path, '/');
    base = base ? base + 1 : name_or_path;
    char name[64];
    snprintf(name, sizeof name, "%s", base);
    size_t nl = strlen(name);
    if (nl > 5 && !strcmp(name + nl - 5, ".json"))
        name[nl - 5] = '\0';
    /* errors name the file as given (a user's path), the config its base name */
    st = kvs_model_config_parse(text, len, name_or_path, out, lg);
    free(text);
    if (st == KVS_STATUS_OK)
        snprintf(out->name, sizeof out->name, "%s", name);
    return st;
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
