/* groups.c — build the copy/cast groups (see groups.h). Private to analyzers/. */
#include "groups.h"

#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "steps.h"

#define BARE_SHAPE UINT32_MAX /* shape of a group keyed by an activity name */

/* open addressing map: 64-bit key -> 32-bit value */
struct map {
    uint64_t *keys;
    uint32_t *vals; /* value + 1, 0 = empty */
    size_t cap, n;
};

static inline size_t mhash(uint64_t k)
{
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ull;
    k ^= k >> 29;
    return (size_t)k;
}

static int map_grow(struct map *m)
{
    size_t nc = m->cap ? m->cap * 2 : 256;
    uint64_t *keys = calloc(nc, sizeof *keys);
    uint32_t *vals = calloc(nc, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->vals[i])
            continue;
        size_t j = mhash(m->keys[i]) & (nc - 1);
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

/* the slot of key: found (vals[slot] != 0) or where it goes */
static size_t map_slot(const struct map *m, uint64_t key)
{
    size_t j = mhash(key) & (m->cap - 1);
    while (m->vals[j] && m->keys[j] != key)
        j = (j + 1) & (m->cap - 1);
    return j;
}

static uint32_t *map_get(const struct map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t j = map_slot(m, key);
    return m->vals[j] ? &m->vals[j] : NULL;
}

/* the value slot for key, inserting 0 (stored as 1) when new */
static uint32_t *map_put(struct map *m, uint64_t key, bool *added)
{
    *added = false;
    if ((m->n + 1) * 2 > m->cap && map_grow(m) < 0)
        return NULL;
    size_t j = map_slot(m, key);
    if (!m->vals[j]) {
        m->keys[j] = key;
        m->vals[j] = 1;
        m->n++;
        *added = true;
    }
    return &m->vals[j];
}

static void map_free(struct map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static inline uint64_t group_key(uint32_t name, uint32_t shape)
{
    return ((uint64_t)name << 32) | shape;
}

/* bytes an activity moves through device memory: a device-to-device copy
 * reads and writes its `bytes`; host<->device copies and memsets touch
 * device memory once */
static int64_t activity_bytes(const struct kvs_trace_data *t, const struct kvs_gpu_rec *g)
{
    if (g->kind == KVS_GPU_KERNEL || g->bytes <= 0)
        return 0;
    if (g->kind == KVS_GPU_MEMCPY) {
        const char *n = kvs_intern_str(&t->strings, g->name);
        if (strstr(n, "DtoD") || strstr(n, "Device -> Device") || strstr(n, "PtoP"))
            return 2 * g->bytes;
    }
    return g->bytes;
}

static int cmp_group(const void *a, const void *b)
{
    const struct kvs_group_acc *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns > y->gpu_ns ? -1 : 1;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    if (x->op_name != y->op_name)
        return x->op_name < y->op_name ? -1 : 1;
    return x->shape < y->shape ? -1 : x->shape > y->shape;
}

static void bytes_per_call(const struct kvs_trace_data *t, struct kvs_group_acc *g)
{
    g->bytes_per_call = -1;
    if (!g->bare && g->shape) {
        const char *key = kvs_intern_str(&t->strings, g->shape);
        kvs_shape_parse(key, kvs_intern_len(&t->strings, g->shape), &g->shape_info);
    }
    if (g->activity_bytes > 0 && g->gpu_calls > 0) {
        g->bytes_per_call = g->activity_bytes / g->gpu_calls;
        return;
    }
    const struct kvs_shape *s = &g->shape_info;
    if (s->n == 0 || s->more)
        return;
    bool copy = kvs_op_is_copy(kvs_intern_str(&t->strings, g->op_name));
    if (!copy)
        return; /* a copy kernel inside another op: the op's shapes do not describe it */
    int64_t sum = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->bytes[i] < 0)
            return;
        sum += s->bytes[i];
    }
    /* copy_(dst, src) and kvscope's casts list every tensor they touch once;
     * a one-tensor copy (clone, contiguous, to) writes as much as it reads */
    g->bytes_per_call = s->n >= 2 ? sum : 2 * sum;
}

enum kvs_status kvs_groups_build(struct kvs_ctx *c)
{
    const struct kvs_trace_data *t = &c->t;
    enum kvs_status st = KVS_STATUS_NO_MEMORY;
    struct map groups = {0}, ktime = {0};
    struct kvs_group_acc *acc = NULL;
    size_t nacc = 0, acc_cap = 0;
    int64_t *kns = NULL; /* per (group, kernel) time, indexed by ktime's values */
    size_t nkns = 0, kns_cap = 0;
    uint8_t *seen = calloc(t->nops / 8 + 1, 1);
    uint32_t nstr = kvs_intern_count(&t->strings);
    uint8_t *is_copy = calloc(nstr ? nstr : 1, 1); /* 1 + verdict, per op name */
    if (!seen || !is_copy)
        goto out;

    for (size_t i = 0; i < t->ngpus; i++) {
        const struct kvs_gpu_rec *g = &t->gpus[i];
        uint32_t op = c->gpu_op[i];
        uint64_t key;
        bool bare = op == KVS_NO_OP;
        if (!bare) {
            uint32_t name = t->ops[op].name;
            if (!is_copy[name])
                is_copy[name] = (uint8_t)(1 + kvs_op_is_copy(kvs_intern_str(&t->strings, name)));
            if (is_copy[name] != 2 && c->gpu_cat[i] != KVS_CAT_COPY_CAST)
                continue;
            key = group_key(name, t->ops[op].shape);
        } else {
            if (c->gpu_cat[i] != KVS_CAT_COPY_CAST)
                continue;
            key = group_key(g->name, BARE_SHAPE);
        }
        bool added;
        uint32_t *v = map_put(&groups, key, &added);
        if (!v)
            goto out;
        if (added) {
            struct kvs_group_acc a;
            memset(&a, 0, sizeof a);
            a.op_name = (uint32_t)(key >> 32);
            a.shape = bare ? 0 : (uint32_t)key;
            a.bare = bare;
            if (KVS_VEC_PUSH(acc, nacc, acc_cap, a) < 0)
                goto out;
            *v = (uint32_t)nacc; /* index + 1 */
        }
        uint32_t gi = *v - 1;
        struct kvs_group_acc *a = &acc[gi];
        a->gpu_ns += g->dur;
        a->activities++;
        a->activity_bytes += activity_bytes(t, g);
        if (c->gpu_step[i] >= 0)
            a->gpu_ns_in_steps += g->dur;
        if (bare) {
            a->gpu_calls++;
            a->calls++;
            if (c->gpu_step[i] >= 0)
                a->calls_in_steps++;
        } else if (!(seen[op / 8] & (1u << (op % 8)))) {
            seen[op / 8] |= (uint8_t)(1u << (op % 8));
            a->gpu_calls++;
        }
        uint32_t *kv = map_put(&ktime, group_key(gi, g->name), &added);
        if (!kv)
            goto out;
        if (added) {
            if (KVS_VEC_PUSH(kns, nkns, kns_cap, 0) < 0)
                goto out;
            *kv = (uint32_t)nkns;
        }
        kns[*kv - 1] += g->dur;
    }
    /* the kernel with the most time in each group */
    for (size_t j = 0; j < ktime.cap; j++) {
        if (!ktime.vals[j])
            continue;
        uint32_t gi = (uint32_t)(ktime.keys[j] >> 32), kname = (uint32_t)ktime.keys[j];
        int64_t ns = kns[ktime.vals[j] - 1];
        if (ns > acc[gi].top_kernel_ns || (ns == acc[gi].top_kernel_ns && kname < acc[gi].top_kernel)) {
            acc[gi].top_kernel_ns = ns;
            acc[gi].top_kernel = kname;
        }
    }
    /* calls: every op call with a group's key */
    for (size_t k = 0; k < t->nops && groups.n; k++) {
        const struct kvs_op_rec *o = &t->ops[k];
        uint32_t *v = map_get(&groups, group_key(o->name, o->shape));
        if (!v)
            continue;
        struct kvs_group_acc *a = &acc[*v - 1];
        a->calls++;
        if (c->nsteps && kvs_step_at(c, o->ts) >= 0)
            a->calls_in_steps++;
    }
    for (size_t gi = 0; gi < nacc; gi++)
        bytes_per_call(t, &acc[gi]);
    if (nacc) /* acc is NULL when no group formed: qsort's pointer must not be */
        qsort(acc, nacc, sizeof *acc, cmp_group);
    c->groups = acc;
    c->ngroups = nacc;
    acc = NULL;
    st = KVS_STATUS_OK;
out:
    free(acc);
    free(kns);
    free(seen);
    free(is_copy);
    map_free(&groups);
    map_free(&ktime);
    return st;
}
