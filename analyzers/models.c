/* models.c — the model facts shape matching needs (see models.h), from a
 * config.json read by the one reader in common/ (kvscope/hf_config.h), or
 * one bundled in analyzers/data/models/. Private to analyzers/. */
#include "models.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data.h"
#include "kvscope/hf_config.h"

/* The facts from a config read by the one reader (kvscope/hf_config.h):
 * every count it reads is a whole number from 0 to 2^24, or absent (0). */
static enum kvs_status model_from(const struct kvs_hf_config *cfg, struct kvs_model *m)
{
    int64_t layers = 0;
    const struct {
        const char *key;
        int64_t *dst;
    } keys[] = {
        {"num_hidden_layers", &layers},
        {"kv_lora_rank", &m->kv_lora_rank},
        {"qk_rope_head_dim", &m->qk_rope_head_dim},
        {"qk_nope_head_dim", &m->qk_nope_head_dim},
        {"v_head_dim", &m->v_head_dim},
        {"num_attention_heads", &m->heads},
        {"num_key_value_heads", &m->kv_heads},
        {"hidden_size", &m->hidden},
        {"head_dim", &m->head_dim},
        {"vocab_size", &m->vocab},
        {"intermediate_size", &m->intermediate},
        {"moe_intermediate_size", &m->moe_intermediate},
        {"index_head_dim", &m->index_head_dim},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        enum kvs_status s = kvs_hf_config_count(cfg, keys[i].key, keys[i].dst);
        if (s != KVS_STATUS_OK && s != KVS_STATUS_NOT_FOUND)
            return s;
    }
    m->layers = (int)layers;
    m->mla = m->kv_lora_rank > 0;
    if (!m->kv_heads)
        m->kv_heads = m->heads;
    if (!m->head_dim && m->heads && m->hidden % m->heads == 0)
        m->head_dim = m->hidden / m->heads;
    /* a name for the report: the checkpoint's path, else its model type */
    const char *nm = kvs_hf_config_name(cfg);
    if (nm)
        snprintf(m->name, sizeof m->name, "%s", nm);
    return KVS_STATUS_OK;
}

enum kvs_status kvs_model_from_config(const struct kvs_hf_config *cfg, const char *path,
                                      const struct kvs_logger *lg, struct kvs_model *m)
{
    memset(m, 0, sizeof *m);
    enum kvs_status s = model_from(cfg, m);
    if (s == KVS_STATUS_OK && m->layers <= 0) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: not a model config (no num_hidden_layers)",
                kvs_hf_config_what(cfg));
        s = KVS_STATUS_INVALID_ARGUMENT;
    }
    if (s != KVS_STATUS_OK)
        memset(m, 0, sizeof *m);
    else if (!m->name[0] && path)
        kvs_hf_config_label(path, m->name, sizeof m->name);
    return s;
}

enum kvs_status kvs_model_parse(const char *text, size_t len, const char *what,
                                const struct kvs_logger *lg, struct kvs_model *m)
{
    memset(m, 0, sizeof *m);
    struct kvs_hf_config *cfg;
    enum kvs_status s = kvs_hf_config_parse(text, len, what, lg, &cfg);
    if (s != KVS_STATUS_OK)
        return s;
    s = kvs_model_from_config(cfg, NULL, lg, m);
    kvs_hf_config_free(cfg);
    return s;
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
    /* a path that exists (a file, a pipe, a checkpoint folder) is read; any
     * other spec is a bundled name */
    struct stat st;
    if (stat(spec, &st) == 0) {
        struct kvs_hf_config *cfg;
        enum kvs_status s = kvs_hf_config_read(spec, lg, &cfg);
        if (s != KVS_STATUS_OK)
            return s;
        s = kvs_model_from_config(cfg, spec, lg, m);
        kvs_hf_config_free(cfg);
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
