/* models.h — the model facts shape matching needs, from a Hugging Face
 * config.json (a file, a pipe, a checkpoint folder, or one bundled in
 * analyzers/data/models/), read by the one reader, kvscope/hf_config.h.
 *
 * defines: struct kvs_model, kvs_model_load, kvs_model_parse, kvs_model_from_config,
 *          kvs_model_names
 *
 * Reads the published keys (num_hidden_layers, kv_lora_rank,
 * qk_rope_head_dim, num_attention_heads, num_key_value_heads, head_dim,
 * hidden_size, index_head_dim, ...), from "text_config" when the file wraps
 * a language model in a multimodal config. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_MODELS_H
#define KVS_ANALYZERS_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/base.h"

struct kvs_model {
    char name[96];
    int layers;                 /* num_hidden_layers */
    bool mla;                   /* has kv_lora_rank */
    int64_t kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim;
    int64_t heads, kv_heads, head_dim;
    int64_t hidden, vocab, intermediate, moe_intermediate;
    int64_t index_head_dim;     /* DSA indexer, 0 when none */
};

/* spec: a path (a config.json, a pipe, a folder holding config.json), or a
 * bundled name (glm5, deepseek-v3, kimi-k2, glm-4.7-flash, llama-3-70b,
 * qwen3-235b-a22b). Errors are logged: KVS_STATUS_NOT_FOUND (no such file
 * or name), KVS_STATUS_PARSE (malformed, or more after the object),
 * KVS_STATUS_LIMIT (over the reader's caps), KVS_STATUS_INVALID_ARGUMENT (a
 * count that is negative, fractional or too large, the key named; or not a
 * model config: no num_hidden_layers). */
enum kvs_status kvs_model_load(const char *spec, const struct kvs_logger *lg, struct kvs_model *out);

/* The same from config text[0..len) in memory (what: its name in messages);
 * out->name is left empty. */
enum kvs_status kvs_model_parse(const char *text, size_t len, const char *what,
                                const struct kvs_logger *lg, struct kvs_model *out);

/* The same from a config already read (kvscope/hf_config.h); path, when
 * not NULL, labels a config that names no model. */
struct kvs_hf_config;
enum kvs_status kvs_model_from_config(const struct kvs_hf_config *cfg, const char *path,
                                      const struct kvs_logger *lg, struct kvs_model *out);

void kvs_model_names(char *buf, size_t size);

#endif
