/* link.c — GPU activity -> launching op (see link.h). Hash tables hold
 * 4-byte record indices only; keys are read from the records, so memory
 * stays a few bytes per record. Private to analyzers/. */
#include "link.h"

#include <stdlib.h>
#include <string.h>

#include "kvscope/reader.h"

struct idx_table {
    uint32_t *slots; /* record index + 1, 0 = empty */
    uint32_t mask;
    uint64_t seed; /* ids are the trace's to choose: hash.h */
};

static inline uint32_t slot_of(const struct idx_table *t, int64_t k)
{
    return (uint32_t)(kvs_hash_u64((uint64_t)k, t->seed) >> 32) & t->mask;
}

static int table_init(struct idx_table *t, size_t n)
{
    size_t size = 16;
    while (size < n * 2)
        size *= 2;
    if (size > UINT32_MAX)
        return -1;
    t->slots = calloc(size, sizeof *t->slots);
    t->mask = (uint32_t)(size - 1);
    t->seed = kvs_hash_seed();
    return t->slots ? 0 : -1;
}

/* get(i): record i's id (t is the records) */
#define OP_EXT(i) kvs_op_ext(t, (i))
#define RT_CORR(i) (kvs_rt_get(t, (i)).corr)

#define TABLE_BUILD(tab, get, n, dups)                                                            \
    do {                                                                                          \
        for (size_t i_ = 0; i_ < (n); i_++) {                                                     \
            int64_t k_ = get(i_);                                                                  \
            if (!k_)                                                                              \
                continue;                                                                         \
            uint32_t s_ = slot_of(&(tab), k_);                                                    \
            bool dup_ = false;                                                                    \
            while ((tab).slots[s_]) {                                                             \
                if (get((tab).slots[s_] - 1) == k_) {                                             \
                    dup_ = true; /* the first record with an id keeps it */                       \
                    break;                                                                        \
                }                                                                                 \
                s_ = (s_ + 1) & (tab).mask;                                                       \
            }                                                                                     \
            if (!dup_)                                                                            \
                (tab).slots[s_] = (uint32_t)i_ + 1;                                               \
            else                                                                                  \
                (dups)++;                                                                         \
        }                                                                                         \
    } while (0)

#define TABLE_FIND(tab, get, key, out)                                                            \
    do {                                                                                          \
        (out) = KVS_NO_OP;                                                                        \
        if ((key) && (tab).slots) {                                                               \
            uint32_t s_ = slot_of(&(tab), key);                                                   \
            while ((tab).slots[s_]) {                                                             \
                if (get((tab).slots[s_] - 1) == (key)) {                                         \
                    (out) = (tab).slots[s_] - 1;                                                  \
                    break;                                                                        \
                }                                                                                 \
                s_ = (s_ + 1) & (tab).mask;                                                       \
            }                                                                                     \
        }                                                                                         \
    } while (0)

/* ops in file order with strictly rising External ids (Kineto's usual
 * layout) are found by binary search: no table at all. The search starts
 * from where the last one ended (*hint), widening 1, 2, 4, ... ops each way:
 * GPU work comes about in its ops' order, so it is usually a few ops on. */
static uint32_t find_sorted(const struct kvs_trace_data *t, int64_t ext, size_t *hint)
{
    size_t n = t->ops.n, lo = 0, hi = n, h = *hint;
    if (h < n && kvs_op_ext(t, h) < ext) { /* the first op with an id >= ext is after h */
        lo = h + 1;
        for (size_t step = 1;; step *= 2) {
            if (step > n - 1 - h) {
                hi = n;
                break;
            }
            if (kvs_op_ext(t, h + step) >= ext) {
                hi = h + step;
                break;
            }
            lo = h + step + 1;
        }
    } else if (h < n) { /* ... at h or before */
        hi = h;
        for (size_t step = 1;; step *= 2) {
            if (step > h) {
                lo = 0;
                break;
            }
            if (kvs_op_ext(t, h - step) < ext) {
                lo = h - step + 1;
                break;
            }
            hi = h - step;
        }
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (kvs_op_ext(t, mid) < ext)
            lo = mid + 1;
        else
            hi = mid;
    }
    *hint = lo;
    return lo < t->ops.n && kvs_op_ext(t, lo) == ext ? (uint32_t)lo : KVS_NO_OP;
}

#define FIND_OP(key, out)                                                                         \
    do {                                                                                          \
        if (t->ops_ext_sorted)                                                                    \
            (out) = (key) ? find_sorted(t, (key), &ext_hint) : KVS_NO_OP;                        \
        else                                                                                      \
            TABLE_FIND(by_ext, OP_EXT, (key), out);                                                \
    } while (0)

/* a runtime call that needs its enclosing op found */
struct pending {
    int64_t ts;
    uint32_t thread;
    uint32_t gpu;
};

/* sort key of an op for the sweep: by thread, start, and longest first so
 * that a parent precedes the children that start with it */
struct op_key {
    uint32_t thread, idx;
    int64_t ts, dur;
};

static int cmp_op(const void *a, const void *b)
{
    const struct op_key *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1;
    return 0;
}

static int cmp_pending_ts(const void *a, const void *b)
{
    const struct pending *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_pending(const void *a, const void *b)
{
    const struct pending *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return 0;
}

/* Innermost enclosing op for each pending call when the file's ops are not
 * in time order: sort (thread, start) keys of all ops, then one sweep per
 * thread with a stack of the ops still open. */
static enum kvs_status enclose_sorting(const struct kvs_trace_data *t, struct kvs_activity_table *act,
                                       struct pending *pend, size_t npend)
{
    struct op_key *perm = malloc((t->ops.n ? t->ops.n : 1) * sizeof *perm);
    uint32_t *stack = malloc((t->ops.n ? t->ops.n : 1) * sizeof *stack);
    if (!perm || !stack) {
        free(perm);
        free(stack);
        return KVS_STATUS_NO_MEMORY;
    }
    for (size_t i = 0; i < t->ops.n; i++)
        perm[i] = (struct op_key){kvs_op_thread(t, i), (uint32_t)i, kvs_op_ts(t, i), kvs_op_dur(t, i)};
    qsort(perm, t->ops.n, sizeof *perm, cmp_op);
    qsort(pend, npend, sizeof *pend, cmp_pending);

    size_t oi = 0, depth = 0;
    uint32_t cur_thread = UINT32_MAX;
    for (size_t q = 0; q < npend; q++) {
        const struct pending *p = &pend[q];
        if (p->thread != cur_thread) {
            cur_thread = p->thread;
            depth = 0;
            while (oi < t->ops.n && perm[oi].thread < cur_thread)
                oi++;
        }
        while (oi < t->ops.n && perm[oi].thread == cur_thread && perm[oi].ts <= p->ts) {
            while (depth && kvs_op_end(t, stack[depth - 1]) < perm[oi].ts)
                depth--;
            stack[depth++] = perm[oi].idx;
            oi++;
        }
        while (depth && kvs_op_end(t, stack[depth - 1]) < p->ts)
            depth--;
        if (depth)
            act->v[p->gpu].op = stack[depth - 1];
    }
    free(perm);
    free(stack);
    return KVS_STATUS_OK;
}

/* Innermost enclosing op for each pending call, when ops are in time order
 * in the file (Kineto writes them so): one pass over the ops in file order,
 * answering the calls (sorted by time) as the sweep passes them, with a
 * stack of open ops per thread. No copy of the ops. */
static enum kvs_status enclose_in_order(const struct kvs_trace_data *t, struct kvs_activity_table *act,
                                        struct pending *pend, size_t npend)
{
    size_t nthreads = kvs_intern_count(&t->threads);
    struct open_op {
        uint32_t i;
        int64_t end; /* its end, read once */
    };
    struct stack {
        struct open_op *v;
        size_t n, cap;
    } *stacks = calloc(nthreads ? nthreads : 1, sizeof *stacks);
    if (!stacks)
        return KVS_STATUS_NO_MEMORY;
    enum kvs_status st = KVS_STATUS_OK;
    qsort(pend, npend, sizeof *pend, cmp_pending_ts);
    size_t q = 0;
    for (size_t k = 0; k <= t->ops.n && q < npend; k++) {
        int64_t ts = k < t->ops.n ? kvs_op_ts(t, k) : 0;
        /* calls that start before this op are answered by what is open now */
        while (q < npend && (k == t->ops.n || pend[q].ts < ts)) {
            struct stack *sk = pend[q].thread < nthreads ? &stacks[pend[q].thread] : NULL;
            while (sk && sk->n && sk->v[sk->n - 1].end < pend[q].ts)
                sk->n--;
            if (sk && sk->n)
                act->v[pend[q].gpu].op = sk->v[sk->n - 1].i;
            q++;
        }
        if (k == t->ops.n)
            break;
        struct stack *sk = &stacks[kvs_op_thread(t, k)];
        while (sk->n && sk->v[sk->n - 1].end < ts)
            sk->n--;
        struct open_op one = {(uint32_t)k, ts + kvs_op_dur(t, k)};
        if (KVS_VEC_PUSH(sk->v, sk->n, sk->cap, one) < 0) {
            st = KVS_STATUS_NO_MEMORY;
            break;
        }
    }
    for (size_t i = 0; i < nthreads; i++)
        free(stacks[i].v);
    free(stacks);
    return st;
}

/* A kernel a graph replayed whose own External id names an op that does not
 * enclose the graph launch: the op its node was captured under (kvscope's
 * capture writes it so). rt: the graph launch's call; KVS_NO_OP when the
 * trace has no API records (a GPU-only capture), then the kernel's
 * correlation (the launch's) tells the replays apart. */
struct replayed {
    uint32_t gpu, op, rt;
};

/* Each replay gets a copy of the op at its graph launch (one per op and
 * launch, shared by the op's kernels in that replay; without the launch's
 * record, at the replay's first kernel), so steps and calls count the
 * replays like eager calls; the captured op itself is marked and counts as
 * none. */
static enum kvs_status replay_ops(struct kvs_trace_data *t, struct kvs_activity_table *act,
                                  const struct replayed *r, size_t n)
{
    struct kvs_u64map by_rt = {0}, by_corr = {0};
    enum kvs_status st = KVS_STATUS_OK;
    for (size_t i = 0; i < n && st == KVS_STATUS_OK; i++) {
        bool added;
        const struct kvs_gpu_rec g_ = kvs_gpu_get(t, r[i].gpu), *g = &g_;
        uint32_t *v = r[i].rt != KVS_NO_OP
                          ? kvs_u64map_put(&by_rt, kvs_pair_key(r[i].op, r[i].rt), &added)
                          : kvs_u64map_put(&by_corr, kvs_pair_key(r[i].op, (uint32_t)g->corr), &added);
        if (!v) {
            st = KVS_STATUS_NO_MEMORY;
            break;
        }
        if (added) {
            struct kvs_op_rec o = kvs_op_get(t, r[i].op);
            if (r[i].rt != KVS_NO_OP) {
                const struct kvs_rt_rec rt_ = kvs_rt_get(t, r[i].rt), *rt = &rt_;
                o.ts = rt->ts;
                o.dur = 0; /* an instant: the copy stands for a replay, not for CPU time */
                o.thread = rt->thread;
            } else {
                o.ts = g->ts;
                o.dur = 0;
            }
            o.captured = 0;
            if (kvs_op_set_captured(t, r[i].op) < 0 || kvs_op_push(t, &o) < 0) {
                st = KVS_STATUS_NO_MEMORY;
                break;
            }
            *v = (uint32_t)t->ops.n; /* index + 1 */
        }
        act->v[r[i].gpu].op = *v - 1;
    }
    if (n)
        t->ops_ext_sorted = false; /* the copies repeat their op's id */
    kvs_u64map_free(&by_rt);
    kvs_u64map_free(&by_corr);
    return st;
}

enum kvs_status kvs_link(struct kvs_trace_data *t, const struct kvs_logger *lg,
                         struct kvs_activity_table *act)
{
    size_t n = t->gpus.n ? t->gpus.n : 1;
    act->v = calloc(n, sizeof *act->v);
    act->launch = calloc(n, sizeof *act->launch);
    if (!act->v || !act->launch)
        return KVS_STATUS_NO_MEMORY;

    struct idx_table by_ext = {0}, by_corr = {0};
    if ((!t->ops_ext_sorted && table_init(&by_ext, t->ops.n) < 0) || table_init(&by_corr, t->rts.n) < 0) {
        free(by_ext.slots);
        free(by_corr.slots);
        return KVS_STATUS_NO_MEMORY;
    }
    size_t ext_dups = 0, corr_dups = 0, ext_hint = 0;
    if (!t->ops_ext_sorted)
        TABLE_BUILD(by_ext, OP_EXT, t->ops.n, ext_dups);
    TABLE_BUILD(by_corr, RT_CORR, t->rts.n, corr_dups);
    /* ids are meant to be unique: a second op with one would have its GPU
     * work handed to the first (a GEMM's kernel to a copy op) unsaid */
    if (ext_dups)
        kvs_log(lg, KVS_LOG_WARN,
                "%zu %s an External id with an earlier op: GPU work with that id is given to "
                "the first one, which may be the wrong op",
                ext_dups, ext_dups == 1 ? "op shares" : "ops share");
    if (corr_dups)
        kvs_log(lg, KVS_LOG_WARN,
                "%zu runtime %s a correlation id with an earlier one: GPU work with that id is "
                "given to the first",
                corr_dups, corr_dups == 1 ? "call shares" : "calls share");

    struct pending *pend = NULL;
    size_t npend = 0, pend_cap = 0;
    struct replayed *rep = NULL;
    size_t nrep = 0, rep_cap = 0;
    enum kvs_status st = KVS_STATUS_OK;
    act->graph_launched = 0;
    for (size_t i = 0; i < t->gpus.n; i++) {
        const struct kvs_gpu_rec g_ = kvs_gpu_get(t, i), *g = &g_;
        uint32_t op, rt;
        FIND_OP(g->ext, op);
        TABLE_FIND(by_corr, RT_CORR, g->corr, rt);
        /* a graph launch (cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch)
         * replays kernels whose ops ran at capture: no shapes for them */
        if ((rt != KVS_NO_OP && kvs_rt_get(t, rt).graph_launch) || g->graph_node) {
            act->graph_launched++;
            act->v[i].graph = true;
        }
        /* the op the kernel's graph node was captured under: it does not
         * enclose the graph launch (without the launch's record: it ended
         * before the kernel ran, and the kernel says its graph node) */
        bool captured_op =
            op != KVS_NO_OP && act->v[i].graph &&
            (rt != KVS_NO_OP
                 ? kvs_op_ts(t, op) > kvs_rt_get(t, rt).ts || kvs_op_end(t, op) < kvs_rt_get(t, rt).ts
                 : g->corr != 0 && kvs_op_end(t, op) < g->ts);
        if (captured_op) {
            struct replayed one = {(uint32_t)i, op, rt};
            if (KVS_VEC_PUSH(rep, nrep, rep_cap, one) < 0) {
                st = KVS_STATUS_NO_MEMORY;
                break;
            }
        }
        if (op == KVS_NO_OP && rt != KVS_NO_OP && kvs_rt_get(t, rt).ext)
            FIND_OP(kvs_rt_get(t, rt).ext, op);
        act->v[i].op = op;
        act->launch[i] = rt != KVS_NO_OP                  ? kvs_rt_get(t, rt).ts
                         : op != KVS_NO_OP && !captured_op ? kvs_op_ts(t, op)
                                                           : g->ts;
        if (op == KVS_NO_OP && rt != KVS_NO_OP) {
            struct pending p = {kvs_rt_get(t, rt).ts, kvs_rt_get(t, rt).thread, (uint32_t)i};
            if (KVS_VEC_PUSH(pend, npend, pend_cap, p) < 0) {
                st = KVS_STATUS_NO_MEMORY;
                break;
            }
        }
    }
    free(by_ext.slots);
    free(by_corr.slots);
    if (st == KVS_STATUS_OK && npend) {
        /* the ops' starts never fall in file order: one pass (kvs_op_push kept the flag) */
        st = t->ops_ts_sorted ? enclose_in_order(t, act, pend, npend) : enclose_sorting(t, act, pend, npend);
    }
    free(pend);
    act->graph_node_ops = nrep;
    if (st == KVS_STATUS_OK && nrep)
        st = replay_ops(t, act, rep, nrep);
    free(rep);
    if (st != KVS_STATUS_OK)
        return st;
    act->unlinked = 0;
    for (size_t i = 0; i < t->gpus.n; i++)
        if (act->v[i].op == KVS_NO_OP)
            act->unlinked++;
    return KVS_STATUS_OK;
}
