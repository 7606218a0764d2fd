/* hash.h — the seeded hashes every analyzer table uses (intern, link's id
 * tables, u64map), so that a table's cost does not depend on the values a
 * trace chooses: ids and names crafted to collide under a fixed function
 * (an invertible multiply, a hash of a sample of the bytes) made linking
 * and interning quadratic. Each table draws its own seed when it is made;
 * results never depend on it (tables are only looked up, never walked in
 * slot order).
 *
 * defines: kvs_hash_seed, kvs_hash_u64, kvs_hash_bytes
 *
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_HASH_H
#define KVS_ANALYZERS_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A fresh seed from the system's entropy (getentropy), else from the clock
 * and addresses; never fails. */
uint64_t kvs_hash_seed(void);

/* murmur3's finaliser: every input bit reaches every output bit */
static inline uint64_t kvs_hash_fmix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* A 64-bit key; use any bits of the result. */
static inline uint64_t kvs_hash_u64(uint64_t k, uint64_t seed)
{
    return kvs_hash_fmix(k ^ seed);
}

/* All n bytes, each 8-byte word mixed into the state in turn: with the
 * seed unknown, no choice of bytes lines two strings up. */
static inline uint64_t kvs_hash_bytes(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = seed ^ ((uint64_t)n * 0x9E3779B97F4A7C15ull);
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = kvs_hash_fmix(h ^ w);
    }
    uint64_t tail = 0;
    memcpy(&tail, p, n);
    return kvs_hash_fmix(h ^ tail ^ ((uint64_t)n << 56));
}

#endif
