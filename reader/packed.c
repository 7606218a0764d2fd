/* packed.c — struct kvs_packed: a table of records of nf int64 fields,
 * kept in sealed blocks of KVS_PK_BLOCK records. Each field of a block is
 * stored as base + slope x j + u_j, with u_j in the fewest bits that hold
 * the block's largest (0 when every record fits the line; past 57 bits, 64:
 * a u_j is read as the 8 bytes at its first bit's byte, shifted); the
 * slope is the one from the block's first to its last value when that gives
 * fewer bits than none (tried for the fields the caller says may rise).
 * Exact for any int64 (the sums wrap both ways). The
 * last, unsealed block is kept as plain values. See kvscope/reader.h. */
#include "kvscope/reader.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* sealed blocks come out of chunks of this many bytes (a block is at most
 * nf x (16 + 8 x KVS_PK_BLOCK) + 8 bytes) */
#define PK_CHUNK ((size_t)256 << 10)

/* bits a u_j of the block takes: 0-57, or 64 (57 bits at a bit offset up
 * to 7 are the most one 8-byte read holds) */
static unsigned bits_of(uint64_t range)
{
    unsigned w = 0;
    while (range) {
        w++;
        range >>= 1;
    }
    return w > 57 ? 64 : w;
}

/* base and range of v[j] - slope x j over the block */
static void fit(const int64_t *v, int64_t slope, int64_t *base, uint64_t *range)
{
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    for (unsigned j = 0; j < KVS_PK_BLOCK; j++) {
        int64_t r = (int64_t)((uint64_t)v[j] - (uint64_t)slope * j);
        if (r < mn)
            mn = r;
        if (r > mx)
            mx = r;
    }
    *base = mn;
    *range = (uint64_t)mx - (uint64_t)mn;
}

static uint8_t *block_alloc(struct kvs_packed *p, size_t size)
{
    size = (size + 7) & ~(size_t)7;
    if (size > p->chunk_avail) {
        size_t cs = size > PK_CHUNK ? size : PK_CHUNK;
        if (p->nchunks == p->chunks_cap &&
            kvs_vec_grow((void **)&p->chunks, &p->chunks_cap, sizeof *p->chunks, p->nchunks + 1) < 0)
            return NULL;
        uint8_t *c = malloc(cs);
        if (!c)
            return NULL;
        p->chunks[p->nchunks++] = c;
        p->chunk_at = c;
        p->chunk_avail = cs;
    }
    uint8_t *b = p->chunk_at;
    p->chunk_at += size;
    p->chunk_avail -= size;
    return b;
}

static int seal(struct kvs_packed *p)
{
    const unsigned nf = p->nf;
    struct kvs_pk_field h[KVS_PK_MAX_FIELDS];
    size_t off = nf * sizeof *h;
    for (unsigned f = 0; f < nf; f++) {
        const int64_t *v = p->open + (size_t)f * KVS_PK_BLOCK;
        int64_t base, base1, slope = 0;
        uint64_t range, range1;
        fit(v, 0, &base, &range);
        if (range && (p->sloped >> f & 1)) {
            int64_t d = (int64_t)((uint64_t)v[KVS_PK_BLOCK - 1] - (uint64_t)v[0]);
            int64_t s = d / (KVS_PK_BLOCK - 1);
            if (s != 0 && s >= INT32_MIN && s <= INT32_MAX) {
                fit(v, s, &base1, &range1);
                if (range1 < range) {
                    base = base1;
                    range = range1;
                    slope = s;
                }
            }
        }
        unsigned w = bits_of(range);
        h[f] = (struct kvs_pk_field){.base = base, .slope = (int32_t)slope, .off = (uint16_t)off, .w = (uint8_t)w,
                                     .sh = (uint8_t)(w == 0 ? 0 : 64 - w)};
        off += (size_t)w * KVS_PK_BLOCK / 8;
    }
    for (unsigned f = 0; f < nf; f++) /* a field of 0 bits reads the 8 zero bytes at the end */
        if (!h[f].w)
            h[f].off = (uint16_t)off;
    uint8_t *b = block_alloc(p, off + 8); /* 8: the decoder reads 8 bytes at the last value */
    if (!b)
        return -1;
    memset(b, 0, off + 8);
    memcpy(b, h, nf * sizeof *h);
    for (unsigned f = 0; f < nf; f++) {
        const int64_t *v = p->open + (size_t)f * KVS_PK_BLOCK;
        uint8_t *d = b + h[f].off;
        unsigned w = h[f].w;
        if (!w)
            continue;
        const uint64_t slope = (uint64_t)(int64_t)h[f].slope, base = (uint64_t)h[f].base;
        for (unsigned j = 0; j < KVS_PK_BLOCK; j++) {
            uint64_t u = (uint64_t)v[j] - slope * j - base; /* below 2^w */
            size_t at = (size_t)j * w;
            unsigned bo = (unsigned)(at & 7);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            uint64_t x;
            memcpy(&x, d + (at >> 3), 8);
            x |= u << bo;
            memcpy(d + (at >> 3), &x, 8);
#else
            for (unsigned k = 0; bo + w > 8 * k; k++) /* little-endian, as kvs_packed_get reads */
                d[(at >> 3) + k] |= (uint8_t)((u << bo) >> (8 * k));
#endif
        }
    }
    if (p->nblocks == p->blocks_cap &&
        kvs_vec_grow((void **)&p->blocks, &p->blocks_cap, sizeof *p->blocks, p->nblocks + 1) < 0)
        return -1;
    p->blocks[p->nblocks++] = b;
    return 0;
}

int kvs_packed_push(struct kvs_packed *p, unsigned nf, unsigned sloped, const int64_t *v)
{
    if (!p->open) {
        if (nf == 0 || nf > KVS_PK_MAX_FIELDS)
            return -1;
        p->open = malloc((size_t)nf * KVS_PK_BLOCK * sizeof *p->open);
        if (!p->open)
            return -1;
        p->nf = (uint8_t)nf;
        p->sloped = (uint16_t)sloped;
    }
    size_t j = p->n % KVS_PK_BLOCK;
    for (unsigned f = 0; f < nf; f++)
        p->open[(size_t)f * KVS_PK_BLOCK + j] = v[f];
    if (j == KVS_PK_BLOCK - 1 && seal(p) < 0)
        return -1;
    p->n++;
    return 0;
}

void kvs_packed_free(struct kvs_packed *p)
{
    for (size_t i = 0; i < p->nchunks; i++)
        free(p->chunks[i]);
    free(p->chunks);
    free(p->blocks);
    free(p->open);
    memset(p, 0, sizeof *p);
}

size_t kvs_packed_bytes(const struct kvs_packed *p)
{
    return p->nchunks * PK_CHUNK + p->blocks_cap * sizeof *p->blocks +
           (p->open ? (size_t)p->nf * KVS_PK_BLOCK * sizeof *p->open : 0);
}
