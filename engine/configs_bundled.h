/* engine/configs_bundled.h — the model configs bundled into the binary at
 * build time (the top-level embed.py writes the table). Private to the engine.
 *
 * defines: struct kvs_bundled_config, kvs_bundled_configs */
#ifndef KVSCOPE_ENGINE_CONFIGS_BUNDLED_H
#define KVSCOPE_ENGINE_CONFIGS_BUNDLED_H

#include <stddef.h>

struct kvs_bundled_config {
    const char *name;
    const char *json;
    size_t len; /* strlen(json) */
};

/* NULL-name terminated. */
extern const struct kvs_bundled_config kvs_bundled_configs[];

#endif
