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

void kvs_trace_data_free(struct kvs_trace_data *t)
{
    kvs_intern_free(&t->strings);
    kvs_intern_free(&t->threads);
    free(t->ops);
    free(t->opkeys);
    kvs_u64map_free(&t->opkey_map);
    free(t->rts);
    free(t->gpus);
    free(t->ranges);
    for (int i = 0; i < KVS_MAX_DEVICES; i++)
        free(t->device_names[i]);
    memset(t, 0, sizeof *t);
}
