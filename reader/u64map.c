/* u64map.c — see kvscope/reader.h. Private to reader/. */
#include "kvscope/reader.h"


#include <stdlib.h>
#include <string.h>

static inline size_t mhash(const struct kvs_u64map *m, uint64_t k)
{
    return (size_t)kvs_hash_u64(k, m->seed);
}

static int grow(struct kvs_u64map *m)
{
    size_t nc = m->cap ? m->cap * 2 : 256;
    if (!m->cap)
        m->seed = kvs_hash_seed();
    uint64_t *keys = malloc(nc * sizeof *keys);
    uint32_t *vals = calloc(nc, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->vals[i])
            continue;
        size_t j = mhash(m, m->keys[i]) & (nc - 1);
        while (vals[j])
            j = (j + 1) & (nc - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = nc;
    return 0;
}

static size_t slot(const struct kvs_u64map *m, uint64_t key)
{
    size_t j = mhash(m, key) & (m->cap - 1);
    while (m->vals[j] && m->keys[j] != key)
        j = (j + 1) & (m->cap - 1);
    return j;
}

uint32_t *kvs_u64map_get(const struct kvs_u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t j = slot(m, key);
    return m->vals[j] ? &m->vals[j] : NULL;
}

uint32_t *kvs_u64map_put(struct kvs_u64map *m, uint64_t key, bool *added)
{
    *added = false;
    if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
        return NULL;
    size_t j = slot(m, key);
    if (!m->vals[j]) {
        m->keys[j] = key;
        m->vals[j] = 1;
        m->n++;
        *added = true;
    }
    return &m->vals[j];
}

void kvs_u64map_free(struct kvs_u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
