/* records.c — the records a reader fills (struct kvs_trace_data): made,
 * grown, freed. Both readers (reader.c, nsys.c) start from
 * kvs_trace_data_init. See kvscope/reader.h. */
#include "kvscope/reader.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool kvs_trace_data_init(struct kvs_trace_data *t)
{
    memset(t, 0, sizeof *t);
    t->rank = -1;
    t->ops_ext_sorted = true;
    t->ops_ts_sorted = true;
    return kvs_intern_init(&t->strings) == 0 && kvs_intern_init(&t->threads) == 0;
}

int kvs_vec_grow(void **arr, size_t *cap, size_t elem, size_t need)
{
    size_t nc = *cap ? *cap + *cap / 2 : 1024;
    if (nc < need)
        nc = need;
    if (nc > SIZE_MAX / elem)
        return -1;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

int kvs_op_set_captured(struct kvs_trace_data *t, size_t i)
{
    if (i / 8 >= t->op_captured_len) {
        size_t n = t->ops.n / 8 + 1;
        if (n <= i / 8)
            n = i / 8 + 1;
        n += n / 2;
        uint8_t *p = realloc(t->op_captured, n);
        if (!p)
            return -1;
        memset(p + t->op_captured_len, 0, n - t->op_captured_len);
        t->op_captured = p;
        t->op_captured_len = n;
    }
    t->op_captured[i / 8] |= (uint8_t)(1u << (i % 8));
    return 0;
}

int kvs_op_push(struct kvs_trace_data *t, const struct kvs_op_rec *o)
{
    const int64_t v[KVS_OPF_N_] = {o->ts, o->dur, o->ext, o->key, o->thread};
    size_t i = t->ops.n;
    if (o->captured && kvs_op_set_captured(t, i) < 0)
        return -1;
    if (kvs_packed_add(&t->ops, KVS_OPF_N_, 1u << KVS_OPF_TS | 1u << KVS_OPF_EXT, v) < 0) {
        if (o->captured) /* not kept: the next op's bit is clear */
            t->op_captured[i / 8] &= (uint8_t) ~(1u << (i % 8));
        return -1;
    }
    if (i && o->ts < t->ops_last_ts)
        t->ops_ts_sorted = false;
    t->ops_last_ts = o->ts;
    return 0;
}

int kvs_rt_push(struct kvs_trace_data *t, const struct kvs_rt_rec *r)
{
    const int64_t v[KVS_RTF_N_] = {r->ts, r->dur, r->corr, r->ext, r->name,
                                   (int64_t)((uint64_t)r->thread << 2 | (uint64_t)r->graph_launch << 1 |
                                             (uint64_t)r->kernel_launch)};
    return kvs_packed_add(&t->rts, KVS_RTF_N_, 1u << KVS_RTF_TS | 1u << KVS_RTF_CORR | 1u << KVS_RTF_EXT, v);
}

int kvs_gpu_push(struct kvs_trace_data *t, const struct kvs_gpu_rec *g)
{
    const int64_t v[KVS_GPF_N_] = {g->ts, g->dur, g->ext, g->corr, g->bytes, g->grid_blocks,
                                   (int64_t)((uint64_t)g->name << 3 | (uint64_t)(g->kind & 3) << 1 | g->graph_node),
                                   g->device, g->stream, g->block_threads};
    return kvs_packed_add(&t->gpus, KVS_GPF_N_, 1u << KVS_GPF_TS | 1u << KVS_GPF_EXT | 1u << KVS_GPF_CORR, v);
}

void kvs_trace_data_free(struct kvs_trace_data *t)
{
    kvs_intern_free(&t->strings);
    kvs_intern_free(&t->threads);
    kvs_packed_free(&t->ops);
    free(t->op_captured);
    free(t->opkeys);
    kvs_u64map_free(&t->opkey_map);
    kvs_packed_free(&t->rts);
    kvs_packed_free(&t->gpus);
    free(t->ranges);
    for (int i = 0; i < KVS_MAX_DEVICES; i++)
        free(t->device_names[i]);
    memset(t, 0, sizeof *t);
}
