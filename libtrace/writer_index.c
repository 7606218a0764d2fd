/* writer_index.c — the writer's indices: a uint64 hash map (correlation ->
 * API record, correlation -> external id, ...) and the projection of ranges
 * onto the GPU streams that ran the work launched inside them
 * (gpu_user_annotation). Tested in tests/test_trace_writer.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "writer_internal.h"

// ----------------------------------------------------------------------------
// map

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    return k ^ (k >> 33);
}

static int map_alloc(struct kvs_map *m, size_t cap)
{
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = calloc(cap, sizeof *m->vals);
    m->used = calloc(cap, 1);
    m->cap = cap;
    m->n = 0;
    if (!m->keys || !m->vals || !m->used) {
        kvs_map_free(m);
        return -1;
    }
    return 0;
}

int kvs_map_init(struct kvs_map *m, size_t expected)
{
    size_t cap = 16;
    while (cap < expected * 2)
        cap *= 2;
    return map_alloc(m, cap);
}

static void put_nogrow(struct kvs_map *m, uint64_t key, uint64_t val)
{
    size_t mask = m->cap - 1;
    for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
        if (!m->used[i]) {
            m->used[i] = 1;
            m->keys[i] = key;
            m->vals[i] = val;
            m->n++;
            return;
        }
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return;
        }
    }
}

int kvs_map_put(struct kvs_map *m, uint64_t key, uint64_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct kvs_map big;
        if (map_alloc(&big, m->cap * 2) != 0)
            return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->used[i])
                put_nogrow(&big, m->keys[i], m->vals[i]);
        kvs_map_free(m);
        *m = big;
    }
    put_nogrow(m, key, val);
    return 0;
}

int kvs_map_get(const struct kvs_map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    for (size_t i = mix(key) & mask; m->used[i]; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            if (val)
                *val = m->vals[i];
            return 1;
        }
    }
    return 0;
}

void kvs_map_free(struct kvs_map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}

// ----------------------------------------------------------------------------
// projection

struct launch {
    uint32_t tid;
    int64_t at;     /* API call start: when the work was launched */
    size_t gpu;     /* index of the GPU record */
    uint64_t replay;/* a graph node's context: 1 + the graph launch's correlation; else 0 */
};

struct rng {
    uint32_t tid;
    int64_t start, end;
    size_t rec;
};

static int cmp_launch(const void *a, const void *b)
{
    const struct launch *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

static int cmp_rng(const void *a, const void *b)
{
    const struct rng *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static int cmp_span(const void *a, const void *b)
{
    const struct kvs_gpu_span *x = a, *y = b;
    if (x->range != y->range)
        return x->range < y->range ? -1 : 1;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int is_gpu(enum kvs_trace_rec_kind k)
{
    return k == KVS_TREC_KERNEL || k == KVS_TREC_MEMCPY || k == KVS_TREC_MEMSET;
}

/* Ranges open on one thread at one time are few (nesting depth, or a few
 * overlapping start/end ranges); more than this many are not projected. */
#define MAX_ACTIVE 256

/* Spans per range: few (the streams its work ran on), kept as a list per
 * range reached through a map range -> first span. */
struct span_set {
    struct kvs_gpu_span *v;
    size_t *next;         /* next span of the same range, SIZE_MAX at the end */
    size_t n, cap;
    struct kvs_map head;  /* range -> index of its first span */
};

static int span_add(struct span_set *s, size_t range, const struct kvs_trace_rec *g,
                    uint64_t replay)
{
    uint64_t first;
    int has = kvs_map_get(&s->head, range, &first);
    for (size_t i = has ? (size_t)first : SIZE_MAX; i != SIZE_MAX; i = s->next[i]) {
        struct kvs_gpu_span *sp = &s->v[i];
        if (sp->device == g->u.gpu.device && sp->stream == g->u.gpu.stream &&
            sp->replay == replay) {
            if (g->start_ns < sp->start_ns)
                sp->start_ns = g->start_ns;
            if (g->end_ns > sp->end_ns)
                sp->end_ns = g->end_ns;
            return 0;
        }
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct kvs_gpu_span *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        size_t *nx = realloc(s->next, cap * sizeof *nx);
        if (!nx)
            return -1;
        s->next = nx;
        s->cap = cap;
    }
    struct kvs_gpu_span *sp = &s->v[s->n];
    sp->range = range;
    sp->device = g->u.gpu.device;
    sp->stream = g->u.gpu.stream;
    sp->replay = replay;
    sp->start_ns = g->start_ns;
    sp->end_ns = g->end_ns > g->start_ns ? g->end_ns : g->start_ns;
    s->next[s->n] = has ? (size_t)first : SIZE_MAX;
    if (kvs_map_put(&s->head, range, s->n) != 0)
        return -1;
    s->n++;
    return 0;
}

/* The graph node record of a GPU record, or NULL. */
static const struct kvs_trace_rec *node_of(const struct kvs_trace_rec *recs,
                                           const struct kvs_map *nodes,
                                           const struct kvs_trace_rec *r)
{
    uint64_t at;
    if (!nodes || !r->u.gpu.graph_node_id || !kvs_map_get(nodes, r->u.gpu.graph_node_id, &at))
        return NULL;
    return &recs[at];
}

int kvs_project_ranges(const struct kvs_trace_rec *recs, size_t nrecs,
                       const struct kvs_map *api_of, const struct kvs_map *nodes,
                       struct kvs_gpu_span **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    size_t nl = 0, nr = 0;
    for (size_t i = 0; i < nrecs; i++) {
        nl += is_gpu(recs[i].kind) && recs[i].correlation;
        nl += is_gpu(recs[i].kind) && node_of(recs, nodes, &recs[i]);
        nr += recs[i].kind == KVS_TREC_RANGE;
    }
    if (nl == 0 || nr == 0)
        return 0;
    struct launch *L = malloc(nl * sizeof *L);
    struct rng *R = malloc(nr * sizeof *R);
    struct span_set S = {0};
    size_t active[MAX_ACTIVE];
    int rc = -1;
    if (!L || !R || kvs_map_init(&S.head, 64) != 0)
        goto done;
    nl = nr = 0;
    for (size_t i = 0; i < nrecs; i++) {
        const struct kvs_trace_rec *r = &recs[i];
        uint64_t api;
        if (is_gpu(r->kind)) {
            if (r->correlation && kvs_map_get(api_of, r->correlation, &api))
                L[nl++] = (struct launch){recs[api].u.api.tid, recs[api].start_ns, i, 0};
            /* replayed work: also inside what was open when its node was
             * made, once per graph launch */
            const struct kvs_trace_rec *nd = node_of(recs, nodes, r);
            if (nd)
                L[nl++] = (struct launch){nd->u.node.tid, nd->start_ns, i,
                                          1 + (uint64_t)r->correlation};
        } else if (r->kind == KVS_TREC_RANGE) {
            R[nr++] = (struct rng){r->u.host.tid, r->start_ns, r->end_ns, i};
        }
    }
    qsort(L, nl, sizeof *L, cmp_launch);
    qsort(R, nr, sizeof *R, cmp_rng);
    /* Sweep each thread's launches in time order, keeping the ranges that
     * have started; drop those that ended before the launch. */
    size_t ri = 0, nactive = 0;
    uint32_t tid = 0;
    for (size_t li = 0; li < nl; li++) {
        const struct launch *l = &L[li];
        if (li == 0 || l->tid != tid) {
            tid = l->tid;
            nactive = 0;
            while (ri < nr && R[ri].tid < tid)
                ri++;
        }
        while (ri < nr && R[ri].tid == tid && R[ri].start <= l->at) {
            if (nactive < MAX_ACTIVE)
                active[nactive++] = ri;
            ri++;
        }
        size_t keep = 0;
        for (size_t a = 0; a < nactive; a++) {
            const struct rng *g = &R[active[a]];
            if (g->end < l->at)
                continue;
            active[keep++] = active[a];
            if (span_add(&S, g->rec, &recs[l->gpu], l->replay) != 0)
                goto done;
        }
        nactive = keep;
    }
    if (S.n > 1) /* qsort(NULL, 0, ...) is undefined: a trace with no ranges has no spans */
        qsort(S.v, S.n, sizeof *S.v, cmp_span);
    *out = S.v;
    *nout = S.n;
    S.v = NULL;
    rc = 0;
done:
    free(L);
    free(R);
    free(S.v);
    free(S.next);
    kvs_map_free(&S.head);
    return rc;
}
