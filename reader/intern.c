/* intern.c — the string intern table (see kvscope/reader.h). Private to reader/. */
#include "kvscope/reader.h"


#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (256u * 1024u)

int kvs_intern_init(struct kvs_intern *in)
{
    memset(in, 0, sizeof *in);
    in->seed = kvs_hash_seed();
    in->nslots = 1024;
    in->slots = calloc(in->nslots, sizeof *in->slots);
    in->cap = 256;
    in->ents = malloc(in->cap * sizeof *in->ents);
    if (!in->slots || !in->ents) {
        kvs_intern_free(in);
        return -1;
    }
    return kvs_intern_id(in, "", 0) == 0 ? 0 : -1;
}

void kvs_intern_free(struct kvs_intern *in)
{
    for (size_t i = 0; i < in->nchunks; i++)
        free(in->chunks[i]);
    free(in->chunks);
    free(in->slots);
    free(in->ents);
    memset(in, 0, sizeof *in);
}

static char *store(struct kvs_intern *in, const char *s, size_t len)
{
    size_t need = len + 1;
    if (need > in->avail) {
        size_t sz = need > CHUNK_BYTES / 4 ? need : CHUNK_BYTES;
        if (in->nchunks == in->chunks_cap) {
            size_t nc = in->chunks_cap ? in->chunks_cap * 2 : 16;
            char **c = realloc(in->chunks, nc * sizeof *c);
            if (!c)
                return NULL;
            in->chunks = c;
            in->chunks_cap = nc;
        }
        char *chunk = malloc(sz);
        if (!chunk)
            return NULL;
        if (sz == need && in->nchunks > 0) {
            /* an oversized string gets its own chunk; keep filling the current one */
            in->chunks[in->nchunks] = in->chunks[in->nchunks - 1];
            in->chunks[in->nchunks - 1] = chunk;
            in->nchunks++;
            memcpy(chunk, s, len);
            chunk[len] = 0;
            in->bytes += need;
            return chunk;
        }
        in->chunks[in->nchunks++] = chunk;
        in->used = 0;
        in->avail = sz;
    }
    char *dst = in->chunks[in->nchunks - 1] + in->used;
    memcpy(dst, s, len);
    dst[len] = 0;
    in->used += need;
    in->avail -= need;
    in->bytes += need;
    return dst;
}

static int grow_slots(struct kvs_intern *in)
{
    uint32_t ns = in->nslots * 2;
    uint32_t *slots = calloc(ns, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t id = 0; id < in->n; id++) {
        uint32_t i = in->ents[id].hash & (ns - 1);
        while (slots[i])
            i = (i + 1) & (ns - 1);
        slots[i] = id + 1;
    }
    free(in->slots);
    in->slots = slots;
    in->nslots = ns;
    return 0;
}

uint32_t kvs_intern_id(struct kvs_intern *in, const char *s, size_t len)
{
    if (len > UINT32_MAX - 1)
        return KVS_INTERN_NONE;
    uint32_t h = (uint32_t)kvs_hash_bytes(s, len, in->seed);
    uint32_t mask = in->nslots - 1;
    uint32_t i = h & mask;
    for (;;) {
        uint32_t v = in->slots[i];
        if (!v)
            break;
        const struct kvs_intern_ent *e = &in->ents[v - 1];
        if (e->hash == h && e->len == len && !memcmp(e->s, s, len))
            return v - 1;
        i = (i + 1) & mask;
    }
    if (in->n == KVS_INTERN_NONE - 1)
        return KVS_INTERN_NONE;
    if (in->n == in->cap) {
        uint32_t nc = in->cap * 2;
        struct kvs_intern_ent *e = realloc(in->ents, (size_t)nc * sizeof *e);
        if (!e)
            return KVS_INTERN_NONE;
        in->ents = e;
        in->cap = nc;
    }
    char *copy = store(in, s, len);
    if (!copy)
        return KVS_INTERN_NONE;
    uint32_t id = in->n++;
    in->ents[id] = (struct kvs_intern_ent){copy, (uint32_t)len, h};
    in->slots[i] = id + 1;
    if ((uint64_t)in->n * 2 > (uint64_t)in->nslots && grow_slots(in) < 0) {
        in->n--; /* keep the table consistent; the copy stays in the arena */
        in->slots[i] = 0;
        return KVS_INTERN_NONE;
    }
    return id;
}
