/* key_acc.h — what the copy/cast groups (groups.c) and the roofline's op
 * groups (roofline.c) share when they sum GPU activities by key: the
 * accumulator an activity joins, the first activity of an op call, GPU time
 * per (key, kernel name) and the kernel with the most of it in each key.
 *
 * defines: kvs_key_slot, kvs_op_first_seen, struct kvs_kernel_time,
 *          struct kvs_top_kernel, kvs_kernel_time_add, kvs_kernel_time_top,
 *          kvs_kernel_time_free
 *
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_KEY_ACC_H
#define KVS_ANALYZERS_KEY_ACC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/reader.h"

/* The slot of the accumulator GPU activity g joins, op being the op that
 * launched it (KVS_NO_OP: none): its op's key's entry in of_key
 * (t->nopkeys of them), else bare's entry for the activity's name. A slot
 * holds its accumulator's index + 1; *added says it has none yet, and
 * *name / *shape name the accumulator to make (the op's name and shape key;
 * the activity's name and 0). NULL when memory ran out. */
uint32_t *kvs_key_slot(const struct kvs_trace_data *t, uint32_t op, const struct kvs_gpu_rec *g,
                       uint32_t *of_key, struct kvs_u64map *bare, bool *added, uint32_t *name,
                       uint32_t *shape);

/* true for the first activity of op call `op` seen (seen: a bit per op,
 * t->ops.n / 8 + 1 bytes, zeroed by the caller): a call counts once however
 * many kernels it launched */
static inline bool kvs_op_first_seen(uint8_t *seen, uint32_t op)
{
    uint8_t bit = (uint8_t)(1u << (op % 8));
    if (seen[op / 8] & bit)
        return false;
    seen[op / 8] |= bit;
    return true;
}

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
