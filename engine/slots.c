/* engine/slots.c — the KV slot allocator (a free list of token slots) and
 * the sequences that hold slots (kvscope/engine.h). Host only; the GPU engine
 * mirrors the sequence table on the device and appends there.
 * Tested by tests/test_engine_plan.c. */
#include "kvscope/engine.h"
#include "kvscope/check.h"

#include <stdlib.h>
#include <string.h>

struct kvs_slots {
    int64_t capacity;
    int64_t nfree;
    int32_t *free;    /* stack: free[nfree-1] is handed out next */
    uint64_t *taken;  /* one bit per slot, to refuse double frees */
};

/* Slots are int32 in the kernels' token lists. */
#define KVS_SLOTS_MAX ((int64_t)INT32_MAX)

enum kvs_status kvs_slots_init(struct kvs_slots **out, int64_t capacity)
{
    if (!out || capacity < 1 || capacity > KVS_SLOTS_MAX)
        return KVS_STATUS_INVALID_ARGUMENT;
    struct kvs_slots *s = calloc(1, sizeof *s);
    if (!s)
        return KVS_STATUS_NO_MEMORY;
    s->free = malloc((size_t)capacity * sizeof *s->free);
    s->taken = calloc((size_t)(capacity + 63) / 64, sizeof *s->taken);
    if (!s->free || !s->taken) {
        kvs_slots_free_all(s);
        return KVS_STATUS_NO_MEMORY;
    }
    s->capacity = s->nfree = capacity;
    for (int64_t i = 0; i < capacity; i++)
        s->free[i] = (int32_t)(capacity - 1 - i);
    *out = s;
    return KVS_STATUS_OK;
}

void kvs_slots_free_all(struct kvs_slots *s)
{
    if (!s)
        return;
    free(s->free);
    free(s->taken);
    free(s);
}

int64_t kvs_slots_available(const struct kvs_slots *s)
{
    return s->nfree;
}

int64_t kvs_slots_capacity(const struct kvs_slots *s)
{
    return s->capacity;
}

void kvs_slots_scatter(struct kvs_slots *s, uint64_t seed)
{
    uint64_t z = seed ^ 0x5CA77E5ull;
    for (int64_t i = s->nfree - 1; i > 0; i--) {
        /* splitmix64 */
        uint64_t r = (z += 0x9E3779B97F4A7C15ull);
        r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ull;
        r = (r ^ (r >> 27)) * 0x94D049BB133111EBull;
        r ^= r >> 31;
        int64_t j = (int64_t)(r % (uint64_t)(i + 1));
        int32_t t = s->free[i];
        s->free[i] = s->free[j];
        s->free[j] = t;
    }
}

enum kvs_status kvs_slots_alloc(struct kvs_slots *s, int64_t n, int32_t *out)
{
    if (n < 0 || (n > 0 && !out))
        return KVS_STATUS_INVALID_ARGUMENT;
    if (n > s->nfree)
        return KVS_STATUS_LIMIT;
    for (int64_t i = 0; i < n; i++) {
        int32_t slot = s->free[--s->nfree];
        s->taken[slot >> 6] |= 1ull << (slot & 63);
        out[i] = slot;
    }
    return KVS_STATUS_OK;
}

enum kvs_status kvs_slots_release(struct kvs_slots *s, int64_t n, const int32_t *slots)
{
    if (n < 0 || (n > 0 && !slots))
        return KVS_STATUS_INVALID_ARGUMENT;
    /* Validate everything first so that a bad list changes nothing; a slot
     * listed twice is caught by clearing as we check and restoring after. */
    int64_t ok = 0;
    enum kvs_status st = KVS_STATUS_OK;
    for (; ok < n; ok++) {
        int32_t v = slots[ok];
        if (v < 0 || v >= s->capacity || !((s->taken[v >> 6] >> (v & 63)) & 1u)) {
            st = KVS_STATUS_INVALID_ARGUMENT;
            break;
        }
        s->taken[v >> 6] &= ~(1ull << (v & 63));
    }
    if (st != KVS_STATUS_OK) {
        for (int64_t i = 0; i < ok; i++)
            s->taken[slots[i] >> 6] |= 1ull << (slots[i] & 63);
        return st;
    }
    for (int64_t i = 0; i < n; i++)
        s->free[s->nfree++] = slots[i];
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// sequences

enum kvs_status kvs_seqs_init(struct kvs_seqs *q, struct kvs_slots *slots, int batch,
                              const int64_t *context, int steps)
{
    if (!q || !slots || !context || batch < 1 || steps < 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    memset(q, 0, sizeof *q);
    int64_t longest = 0, total = 0;
    for (int b = 0; b < batch; b++) {
        if (context[b] < 0)
            return KVS_STATUS_INVALID_ARGUMENT;
        longest = context[b] > longest ? context[b] : longest;
        total += context[b];
    }
    if (longest + steps > KVS_SLOTS_MAX || (longest + steps) * batch > KVS_SLOTS_MAX)
        return KVS_STATUS_LIMIT;
    if (total + (int64_t)batch * steps > kvs_slots_available(slots))
        return KVS_STATUS_LIMIT;
    q->batch = batch;
    q->max_len = (int)(longest + steps);
    q->len = calloc((size_t)batch, sizeof *q->len);
    q->slot = malloc((size_t)batch * (size_t)(q->max_len > 0 ? q->max_len : 1) * sizeof *q->slot);
    if (!q->len || !q->slot) {
        free(q->len);
        free(q->slot);
        memset(q, 0, sizeof *q);
        return KVS_STATUS_NO_MEMORY;
    }
    for (int b = 0; b < batch; b++) {
        enum kvs_status st =
            kvs_slots_alloc(slots, context[b], q->slot + (size_t)b * (size_t)q->max_len);
        if (st != KVS_STATUS_OK) {
            kvs_seqs_free(q, slots);
            return st;
        }
        q->len[b] = (int32_t)context[b];
    }
    return KVS_STATUS_OK;
}

enum kvs_status kvs_seqs_append(struct kvs_seqs *q, struct kvs_slots *slots, int32_t *new_slot,
                                int32_t *pos)
{
    for (int b = 0; b < q->batch; b++)
        if (q->len[b] >= q->max_len)
            return KVS_STATUS_LIMIT;
    if (kvs_slots_available(slots) < q->batch)
        return KVS_STATUS_LIMIT;
    for (int b = 0; b < q->batch; b++) {
        int32_t s;
        KVS_TRY(kvs_slots_alloc(slots, 1, &s));
        q->slot[(size_t)b * (size_t)q->max_len + (size_t)q->len[b]] = s;
        new_slot[b] = s;
        pos[b] = q->len[b];
        q->len[b]++;
    }
    return KVS_STATUS_OK;
}

int64_t kvs_seqs_tokens(const struct kvs_seqs *q)
{
    int64_t n = 0;
    for (int b = 0; b < q->batch; b++)
        n += q->len[b];
    return n;
}

void kvs_seqs_csr(const struct kvs_seqs *q, int32_t *seq_start, int32_t *tokens)
{
    int32_t at = 0;
    for (int b = 0; b < q->batch; b++) {
        seq_start[b] = at;
        memcpy(tokens + at, q->slot + (size_t)b * (size_t)q->max_len,
               (size_t)q->len[b] * sizeof *tokens);
        at += q->len[b];
    }
    seq_start[q->batch] = at;
}

void kvs_seqs_free(struct kvs_seqs *q, struct kvs_slots *slots)
{
    if (!q)
        return;
    for (int b = 0; q->len && b < q->batch; b++)
        if (slots && q->len[b] > 0)
            (void)kvs_slots_release(slots, q->len[b], q->slot + (size_t)b * (size_t)q->max_len);
    free(q->len);
    free(q->slot);
    memset(q, 0, sizeof *q);
}
