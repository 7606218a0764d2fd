/* kernel_time.h — GPU time per (key, kernel name), and the kernel with the
 * most of it in each key: the top kernel of a copy/cast group (groups.c)
 * and of a roofline op group (roofline.c) are found the same way.
 *
 * defines: struct kvs_kernel_time, struct kvs_top_kernel, kvs_kernel_time_add,
 *          kvs_kernel_time_top, kvs_kernel_time_free
 *
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_KERNEL_TIME_H
#define KVS_ANALYZERS_KERNEL_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "u64map.h"

struct kvs_kernel_time {
    struct kvs_u64map slot; /* (key, kernel name) -> index + 1 into ns */
    int64_t *ns;
    size_t n, cap;
};

struct kvs_top_kernel {
    uint32_t name; /* interned kernel name, 0 when the key had no activity */
    int64_t ns;
};

/* adds dur ns of kernel (an interned name) to key's; -1 when memory ran out */
int kvs_kernel_time_add(struct kvs_kernel_time *kt, uint32_t key, uint32_t kernel, int64_t dur);

/* top[key] (nkeys entries, zeroed by the caller) = the kernel with the most
 * time in key; a tie goes to the smaller interned name, so the choice does
 * not depend on the map's order. Keys >= nkeys are passed over. */
void kvs_kernel_time_top(const struct kvs_kernel_time *kt, struct kvs_top_kernel *top, size_t nkeys);

void kvs_kernel_time_free(struct kvs_kernel_time *kt);

#endif
