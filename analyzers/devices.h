/* devices.h — peak memory bandwidth and dense tensor TFLOP/s by device name, from the bundled table
 * analyzers/data/devices.json.
 *
 * defines: struct kvs_device_info, kvs_device_lookup, kvs_device_lookup_in,
 *          kvs_device_names
 *
 * A name matches an entry when one of the entry's `match` strings occurs in
 * it, ignoring case, spaces, dashes and underscores, and not next to another
 * digit ("T4" is not in "RTX 4090"); the longest such string wins ("NVIDIA
 * GB200" is GB200, not B200; "NVIDIA H200" is H200, not H20).
 * The same rule serves trace names ("NVIDIA H100 80GB HBM3") and --device
 * ("h100 sxm"). Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_DEVICES_H
#define KVS_ANALYZERS_DEVICES_H

#include <stdbool.h>
#include <stddef.h>

#include "kvscope/base.h"

struct kvs_device_info {
    char name[96];          /* the table's name for it */
    double peak_gbps;       /* per visible device */
    double copy_gbps;       /* measured copy rate, 0 when none */
    double bf16_tflops;     /* dense BF16/FP16 tensor peak, TFLOP/s; 0 when unknown */
    double fp8_tflops;      /* dense FP8 tensor peak; 0 when unknown or none */
};

/* KVS_STATUS_OK and *found; KVS_STATUS_INTERNAL if the bundled table is
 * broken (logged). */
enum kvs_status kvs_device_lookup(const char *name, const struct kvs_logger *lg,
                                  struct kvs_device_info *out, bool *found);

/* The same against a table given as JSON text[0..len) in the bundled
 * table's layout ({"devices": [{"name", "match": [...], "hbm_gbps", ...}]});
 * what names it in messages. KVS_STATUS_PARSE (logged) when the text is not
 * such a table. */
enum kvs_status kvs_device_lookup_in(const char *table, size_t len, const char *what,
                                     const char *name, const struct kvs_logger *lg,
                                     struct kvs_device_info *out, bool *found);

/* "H200, H100 SXM, ..." for messages */
void kvs_device_names(char *buf, size_t size);

#endif
