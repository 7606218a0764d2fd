/* key_acc.c — see key_acc.h. Private to analyzers/. */
#include "key_acc.h"

#include <stdlib.h>

#include "tables.h"

uint32_t *kvs_key_slot(const struct kvs_trace_data *t, uint32_t op, const struct kvs_gpu_rec *g,
                       uint32_t *of_key, struct kvs_u64map *bare, bool *added, uint32_t *name,
                       uint32_t *shape)
{
    if (op == KVS_NO_OP) {
        *name = g->name;
        *shape = 0;
        return kvs_u64map_put(bare, g->name, added);
    }
    const struct kvs_opkey *k = &t->opkeys[kvs_op_key(t, op)];
    *name = k->name;
    *shape = k->shape;
    uint32_t *slot = &of_key[kvs_op_key(t, op)];
    *added = !*slot;
    return slot;
}

int kvs_kernel_time_add(struct kvs_kernel_time *kt, uint32_t key, uint32_t kernel, int64_t dur)
{
    bool added;
    uint32_t *v = kvs_u64map_put(&kt->slot, kvs_pair_key(key, kernel), &added);
    if (!v)
        return -1;
    if (added) {
        if (KVS_VEC_PUSH(kt->ns, kt->n, kt->cap, 0) < 0)
            return -1;
        *v = (uint32_t)kt->n;
    }
    kt->ns[*v - 1] += dur;
    return 0;
}

void kvs_kernel_time_top(const struct kvs_kernel_time *kt, struct kvs_top_kernel *top, size_t nkeys)
{
    for (size_t j = 0; j < kt->slot.cap; j++) {
        if (!kt->slot.vals[j])
            continue;
        uint32_t k = (uint32_t)(kt->slot.keys[j] >> 32), kname = (uint32_t)kt->slot.keys[j];
        if (k >= nkeys)
            continue;
        int64_t ns = kt->ns[kt->slot.vals[j] - 1];
        if (ns > top[k].ns || (ns == top[k].ns && kname < top[k].name)) {
            top[k].ns = ns;
            top[k].name = kname;
        }
    }
}

void kvs_kernel_time_free(struct kvs_kernel_time *kt)
{
    kvs_u64map_free(&kt->slot);
    free(kt->ns);
    kt->ns = NULL;
    kt->n = kt->cap = 0;
}
