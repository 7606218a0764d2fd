/* kvscope/hf_config.h — the one reader of Hugging Face config.json files,
 * for the analyzer's model facts (analyzers/models.c) and the engine's
 * config (engine/config.c).
 *
 * defines: struct kvs_hf_config, kvs_hf_config_read, kvs_hf_config_parse,
 *          kvs_hf_config_free, kvs_hf_config_what, kvs_hf_config_name,
 *          kvs_hf_config_count, kvs_hf_config_number, kvs_hf_config_bool,
 *          kvs_hf_config_string, kvs_hf_config_label,
 *          KVS_HF_CONFIG_MAX_BYTES, KVS_HF_CONFIG_MAX_VALUES, KVS_HF_CONFIG_MAX_COUNT
 *
 * A config.json is a small JSON object (published ones are a few KB). The
 * reader reads it as Hugging Face (Python's json) does, with limits:
 *  - at most KVS_HF_CONFIG_MAX_BYTES and KVS_HF_CONFIG_MAX_VALUES; a larger
 *    input is refused before it is parsed (KVS_STATUS_LIMIT), so peak
 *    memory stays a few MB;
 *  - one JSON object and nothing after it but white space (KVS_STATUS_PARSE);
 *  - a key given twice takes its LAST value, as Python's json does;
 *  - the keys are the top level's, or "text_config"'s when a multimodal
 *    config wraps the language model (no num_hidden_layers at the top);
 *  - a path may name a file, a pipe/FIFO (read to its end), or a folder (a
 *    checkpoint directory: FOLDER/config.json is read, and the log says so).
 * Each caller then asks for the keys it uses; a count is a whole number from
 * 0 to KVS_HF_CONFIG_MAX_COUNT (negative, fractional, huge or non-numeric
 * values are refused, the message naming the key).
 *
 * Errors are logged through the logger given to read/parse, which the
 * getters use too. A struct kvs_hf_config is read-only once made: several
 * threads may call the getters on one at the same time.
 */
#ifndef KVSCOPE_HF_CONFIG_H
#define KVSCOPE_HF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Larger than any config.json published (those are a few KB). */
#define KVS_HF_CONFIG_MAX_BYTES (1u << 20)
/* ... and at most this many JSON values (published ones have a few
 * hundred): with the byte cap, this bounds the parsed tree to a few MB. */
#define KVS_HF_CONFIG_MAX_VALUES 65536u
/* The largest count (a dimension, a layer count, the vocabulary): 2^24, so
 * that products of two stay far inside int64 and every one fits an int. */
#define KVS_HF_CONFIG_MAX_COUNT 16777216

struct kvs_hf_config;

/* Read the config at path (a file, a pipe, or a folder holding config.json).
 * Statuses, each logged: KVS_STATUS_NOT_FOUND (no such path, or a folder
 * without a config.json), IO, LIMIT, PARSE, NO_MEMORY. Callers that also
 * know names of their own look those up before or after, as they choose. */
KVS_API enum kvs_status kvs_hf_config_read(const char *path, const struct kvs_logger *lg,
                                           struct kvs_hf_config **out);

/* The same from text[0..len) in memory; what names it in messages. */
KVS_API enum kvs_status kvs_hf_config_parse(const char *text, size_t len, const char *what,
                                            const struct kvs_logger *lg,
                                            struct kvs_hf_config **out);

KVS_API void kvs_hf_config_free(struct kvs_hf_config *c);

/* The name messages use: the path read (FOLDER/config.json for a folder),
 * or parse's `what`. */
KVS_API const char *kvs_hf_config_what(const struct kvs_hf_config *c);

/* The model's own name: the top level's "_name_or_path", else its
 * "model_type"; NULL when neither is a non-empty string. */
KVS_API const char *kvs_hf_config_name(const struct kvs_hf_config *c);

/* A count. KVS_STATUS_OK: *out is a whole number in [0, MAX_COUNT].
 * KVS_STATUS_NOT_FOUND: the key is absent or null (*out untouched, nothing
 * logged). KVS_STATUS_INVALID_ARGUMENT: anything else (negative, a
 * fraction, too large, not a number), logged naming the key and value. */
KVS_API enum kvs_status kvs_hf_config_count(const struct kvs_hf_config *c, const char *key,
                                            int64_t *out);

/* A finite number, a boolean, a string: OK, NOT_FOUND (absent or null), or
 * INVALID_ARGUMENT (another type, logged naming the key). The string lives
 * as long as c. */
KVS_API enum kvs_status kvs_hf_config_number(const struct kvs_hf_config *c, const char *key,
                                             double *out);
KVS_API enum kvs_status kvs_hf_config_bool(const struct kvs_hf_config *c, const char *key,
                                           bool *out);
KVS_API enum kvs_status kvs_hf_config_string(const struct kvs_hf_config *c, const char *key,
                                             const char **out);

/* A short label for a config read from path: its base name with trailing
 * '/' and a ".json" suffix removed ("ckpt/GLM-5/" -> "GLM-5",
 * "/x/tiny.json" -> "tiny"). */
KVS_API void kvs_hf_config_label(const char *path, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
