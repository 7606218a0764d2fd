/* u64map.h — an open-addressing map from 64-bit keys to 32-bit values, for
 * the few places that key by an id pair (op name + shape, group + kernel).
 *
 * defines: struct kvs_u64map, kvs_u64map_get, kvs_u64map_put, kvs_u64map_free
 *
 * Values are stored + 1 so that 0 marks an empty slot. Keys are hashed with
 * a seed of the map's own (hash.h): crafted keys cannot choose to collide.
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_U64MAP_H
#define KVS_ANALYZERS_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kvs_u64map {
    uint64_t *keys;
    uint32_t *vals; /* value + 1, 0 = empty */
    size_t cap, n;  /* cap: a power of two */
    uint64_t seed;  /* drawn when the first slots are made (hash.h) */
};

/* The value slot of key (holding value + 1), or NULL when absent. */
uint32_t *kvs_u64map_get(const struct kvs_u64map *m, uint64_t key);

/* The value slot of key, inserted (holding 0 + 1) when new: *added says so.
 * NULL when memory ran out. */
uint32_t *kvs_u64map_put(struct kvs_u64map *m, uint64_t key, bool *added);

void kvs_u64map_free(struct kvs_u64map *m);

static inline uint64_t kvs_pair_key(uint32_t hi, uint32_t lo)
{
    return ((uint64_t)hi << 32) | lo;
}

#endif
