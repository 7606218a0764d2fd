/* data.h — the files of analyzers/data bundled into the binary by the
 * top-level embed.py.
 *
 * defines: struct kvs_data_file, kvs_data_files, kvs_data_find
 *
 * Names: "devices" (devices.json) and "models/<name>" (models/<name>.json).
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_DATA_H
#define KVS_ANALYZERS_DATA_H

#include <stddef.h>

struct kvs_data_file {
    const char *name;
    const char *text;
    size_t len;
};

/* NULL-name terminated */
extern const struct kvs_data_file kvs_data_files[];

const struct kvs_data_file *kvs_data_find(const char *name);

#endif
