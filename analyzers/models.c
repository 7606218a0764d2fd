/* models.c — load a model config (see models.h). Config files are small
 * documents: read whole, parsed with cJSON. Private to analyzers/. */
#include "models.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data.h"

#define MAX_CONFIG_BYTES (16u << 20)

/* the largest count a config may give (a dimension, a layer count, the
 * vocabulary): 2^24, so that products of two of them stay far inside int64 */
#define MAX_CONFIG_INT 16777216.0

/* A positive count from the config, 0 when absent (or not positive). A
 * number that is not a whole count up to MAX_CONFIG_INT names itself in
 * *bad and gives 0: converting an out-of-range double is undefined. */
static int64_t get_int(const cJSON *o, const char *key, const char **bad)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
        return 0;
    double d = v->valuedouble;
    if (!(d <= MAX_CONFIG_INT) || d != floor(d)) {
        if (!*bad)
            *bad = key;
        return 0;
    }
    return (int64_t)d;
}

enum kvs_status kvs_model_parse(const char *text, size_t len, const char *what,
                                const struct kvs_logger *lg, struct kvs_model *m)
{
    memset(m, 0, sizeof *m);
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        kvs_log(lg, KVS_LOG_ERROR, "%s: not valid JSON (near byte %ld)", what,
                at && at >= text && at <= text + len ? (long)(at - text) : -1L);
        return KVS_STATUS_PARSE;
    }
    const cJSON *o = root;
    const char *bad = NULL, *ignored = NULL;
    if (!get_int(o, "num_hidden_layers", &ignored)) {
        const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
        if (cJSON_IsObject(tc))
            o = tc;
    }
    m->layers = (int)get_int(o, "num_hidden_layers", &bad);
    if (m->layers <= 0 && !bad) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: not a model config (no num_hidden_layers)", what);
        cJSON_Delete(root);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    m->kv_lora_rank = get_int(o, "kv_lora_rank", &bad);
    m->mla = m->kv_lora_rank > 0;
    m->qk_rope_head_dim = get_int(o, "qk_rope_head_dim", &bad);
    m->qk_nope_head_dim = get_int(o, "qk_nope_head_dim", &bad);
    m->v_head_dim = get_int(o, "v_head_dim", &bad);
    m->heads = get_int(o, "num_attention_heads", &bad);
    m->kv_heads = get_int(o, "num_key_value_heads", &bad);
    if (!m->kv_heads)
        m->kv_heads = m->heads;
    m->hidden = get_int(o, "hidden_size", &bad);
    m->head_dim = get_int(o, "head_dim", &bad);
    if (!m->head_dim && m->heads && m->hidden % m->heads == 0)
        m->head_dim = m->hidden / m->heads;
    m->vocab = get_int(o, "vocab_size", &bad);
    m->intermediate = get_int(o, "intermediate_size", &bad);
    m->moe_intermediate = get_int(o, "moe_intermediate_size", &bad);
    m->index_head_dim = get_int(o, "index_head_dim", &bad);
    /* a name for the report: the checkpoint's path, else its model type */
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "_name_or_path");
    if (!cJSON_IsString(nm) || !*nm->valuestring)
        nm = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(nm) && *nm->valuestring)
        snprintf(m->name, sizeof m->name, "%s", nm->valuestring);
    if (bad) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, bad);
        kvs_log(lg, KVS_LOG_ERROR, "%s: \"%s\" is %g, not a whole number from 1 to %.0f", what, bad,
                v->valuedouble, MAX_CONFIG_INT);
        cJSON_Delete(root);
        memset(m, 0, sizeof *m);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    cJSON_Delete(root);
    return KVS_STATUS_OK;
}

/* "GLM-5" -> "glm5"-style lookup keys: lower case, '_' -> '-' */
static void canon(const char *in, char *out, size_t size)
{
    size_t n = 0;
    for (; *in && n + 1 < size; in++)
        out[n++] = *in == '_' ? '-' : (char)tolower((unsigned char)*in);
    out[n] = 0;
}

static const struct kvs_data_file *bundled(const char *spec)
{
    char key[96], name[120];
    canon(spec, key, sizeof key);
    static const char *const alias[][2] = {
        {"glm-5", "glm5"}, {"deepseek-v3.1", "deepseek-v3"}, {"deepseekv3", "deepseek-v3"},
        {"kimi-k2-instruct", "kimi-k2"}, {"glm4.7-flash", "glm-4.7-flash"},
        {"llama3-70b", "llama-3-70b"}, {"meta-llama-3-70b", "llama-3-70b"},
        {"qwen3-235b", "qwen3-235b-a22b"},
    };
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(key, alias[i][0]))
            snprintf(key, sizeof key, "%s", alias[i][1]);
    snprintf(name, sizeof name, "models/%s", key);
    return kvs_data_find(name);
}

void kvs_model_names(char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    for (const struct kvs_data_file *f = kvs_data_files; f->name; f++) {
        if (strncmp(f->name, "models/", 7))
            continue;
        int w = snprintf(buf + n, size - n, "%s%s", n ? ", " : "", f->name + 7);
        if (w < 0 || (size_t)w >= size - n)
            break;
        n += (size_t)w;
    }
}

enum kvs_status kvs_model_load(const char *spec, const struct kvs_logger *lg, struct kvs_model *m)
{
    memset(m, 0, sizeof *m);
    struct stat st;
    if (stat(spec, &st) == 0 && S_ISREG(st.st_mode)) {
        if (st.st_size > (off_t)MAX_CONFIG_BYTES) {
            kvs_log(lg, KVS_LOG_ERROR, "%s: %lld bytes is too large for a config.json", spec,
                    (long long)st.st_size);
            return KVS_STATUS_LIMIT;
        }
        FILE *f = fopen(spec, "rb");
        if (!f) {
            kvs_log(lg, KVS_LOG_ERROR, "%s: cannot open: %s", spec, strerror(errno));
            return KVS_STATUS_IO;
        }
        char *text = malloc((size_t)st.st_size + 1);
        size_t got = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
        fclose(f);
        if (!text)
            return KVS_STATUS_NO_MEMORY;
        enum kvs_status s = kvs_model_parse(text, got, spec, lg, m);
        free(text);
        if (s == KVS_STATUS_OK && !m->name[0]) {
            const char *base = strrchr(spec, '/');
            snprintf(m->name, sizeof m->name, "%s", base ? base + 1 : spec);
        }
        return s;
    }
    const struct kvs_data_file *f = bundled(spec);
    if (!f) {
        char names[512];
        kvs_model_names(names, sizeof names);
        kvs_log(lg, KVS_LOG_ERROR, "--model %s: no such file, and not a bundled model (%s)", spec,
                names);
        return KVS_STATUS_NOT_FOUND;
    }
    enum kvs_status s = kvs_model_parse(f->text, f->len, f->name, lg, m);
    if (s == KVS_STATUS_OK)
        snprintf(m->name, sizeof m->name, "%s", f->name + 7);
    return s;
}
