/* intern.h — string interning: each distinct string stored once, named by
 * a 32-bit id. Kernel names (hundreds of bytes, thousands of launches) and op
 * shapes cost 4 bytes per retained record this way.
 *
 * defines: struct kvs_intern, kvs_intern_init, kvs_intern_free, kvs_intern_id,
 *          kvs_intern_str, kvs_intern_len, kvs_intern_count,
 *          KVS_INTERN_NONE
 *
 * Id 0 is the empty string. Strings are NUL-terminated copies that live
 * until kvs_intern_free(). Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_INTERN_H
#define KVS_ANALYZERS_INTERN_H

#include <stddef.h>
#include <stdint.h>

#define KVS_INTERN_NONE UINT32_MAX /* returned when memory ran out */

struct kvs_intern_ent {
    const char *s;
    uint32_t len;
    uint32_t hash;
};

struct kvs_intern {
    struct kvs_intern_ent *ents;
    uint32_t n, cap;
    uint32_t *slots;       /* id + 1, 0 = empty; open addressing */
    uint32_t nslots;       /* power of two */
    char **chunks;         /* string storage */
    size_t nchunks, chunks_cap;
    size_t used, avail;    /* in the last chunk */
    size_t bytes;          /* total string bytes, for memory accounting */
    uint64_t seed;         /* of the hash of every byte (hash.h) */
};

int kvs_intern_init(struct kvs_intern *in); /* 0 or -1 (no memory) */
void kvs_intern_free(struct kvs_intern *in);

/* The id of s[0..len), adding it if new; KVS_INTERN_NONE on no memory. */
uint32_t kvs_intern_id(struct kvs_intern *in, const char *s, size_t len);

static inline const char *kvs_intern_str(const struct kvs_intern *in, uint32_t id)
{
    return in->ents[id].s;
}
static inline uint32_t kvs_intern_len(const struct kvs_intern *in, uint32_t id)
{
    return in->ents[id].len;
}
static inline uint32_t kvs_intern_count(const struct kvs_intern *in) { return in->n; }

#endif
