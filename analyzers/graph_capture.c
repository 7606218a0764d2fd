/* graph_capture.c — align a graph capture profile with the replays (see
 * graph_capture.h). Private to analyzers/. */
#include "graph_capture.h"

#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "launch_size.h"
#include "shapes.h"
#include "kvscope/reader.h"

#define MAX_DISAGREE 0.05 /* of the checked pairs */

struct idx_ts {
    int64_t ts;
    uint32_t i;
};

static int cmp_idx_ts(const void *a, const void *b)
{
    const struct idx_ts *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* does the pair say it is wrong? 1 agree, 0 disagree, -1 nothing to check */
static int check_pair(const struct kvs_trace_data *t, const struct kvs_trace_data *cap, uint32_t gi, uint32_t op)
{
    const struct kvs_gpu_rec g_ = kvs_gpu_get(t, gi), *g = &g_;
    const char *kname = kvs_intern_str(&t->strings, g->name);
    const char *oname = kvs_intern_str(&cap->strings, cap->opkeys[kvs_op_key(cap, op)].name);
    uint32_t sh = cap->opkeys[kvs_op_key(cap, op)].shape;
    struct kvs_launch_kernel k;
    int64_t lo, hi;
    if (kvs_launch_kernel_parse(kname, &k)) { /* a PyTorch elementwise copy/cast kernel */
        struct kvs_shape s = {0};
        if (sh)
            kvs_shape_parse(kvs_intern_str(&cap->strings, sh), kvs_intern_len(&cap->strings, sh), &s);
        if (s.n > 0 && kvs_launch_elements(&k, g->grid_blocks, g->block_threads, &lo, &hi)) {
            for (int i = 0; i < s.n; i++)
                if (s.numel[i] >= lo && s.numel[i] <= hi)
                    return 1;
            return 0;
        }
        return kvs_op_is_copy(oname) ? 1 : 0; /* launched by a copy op */
    }
    /* PyTorch's other elementwise copy loops (ROCm's elementwise_kernel_manual_unroll<...
     * direct_copy_kernel_cuda ...>, launches with no grid recorded) say copy in their name */
    if (strstr(kname, "elementwise_kernel") && kvs_op_is_copy(kname))
        return kvs_op_is_copy(oname) ? 1 : 0;
    /* torch.compile records each Triton launch as an op named after the kernel */
    if (!strncmp(oname, "triton_", 7))
        return strcmp(oname, kname) ? 0 : 1;
    return -1;
}

/* the op's name and shape in the replay's string table -> its opkey */
static uint32_t import_key(struct kvs_trace_data *t, const struct kvs_trace_data *cap, uint32_t ckey)
{
    const struct kvs_opkey *k = &cap->opkeys[ckey];
    uint32_t name = kvs_intern_id(&t->strings, kvs_intern_str(&cap->strings, k->name),
                                  kvs_intern_len(&cap->strings, k->name));
    uint32_t shape = k->shape ? kvs_intern_id(&t->strings, kvs_intern_str(&cap->strings, k->shape),
                                              kvs_intern_len(&cap->strings, k->shape))
                              : 0;
    if (name == KVS_INTERN_NONE || shape == KVS_INTERN_NONE)
        return UINT32_MAX;
    bool added;
    uint32_t *slot = kvs_u64map_put(&t->opkey_map, kvs_pair_key(name, shape), &added);
    if (!slot)
        return UINT32_MAX;
    if (added) {
        struct kvs_opkey ok = {name, shape};
        if (KVS_VEC_PUSH(t->opkeys, t->nopkeys, t->opkeys_cap, ok) < 0)
            return UINT32_MAX;
        *slot = (uint32_t)t->nopkeys;
    }
    return *slot - 1;
}

/* What the capture recorded: the kernel launches whose kernel did not run,
 * in time order, and each op by its External id (index + 1). */
struct captured {
    struct idx_ts *launches;
    size_t nlaunch;
    struct kvs_u64map ext_op;
};

static enum kvs_status captured_launches(const struct kvs_trace_data *cap, struct captured *k)
{
    struct kvs_u64map ran = {0};
    enum kvs_status st = KVS_STATUS_NO_MEMORY;
    bool added;
    for (size_t i = 0; i < cap->gpus.n; i++)
        if (kvs_gpu_get(cap, i).corr && !kvs_u64map_put(&ran, (uint64_t)kvs_gpu_get(cap, i).corr, &added))
            goto out;
    k->launches = malloc((cap->rts.n ? cap->rts.n : 1) * sizeof *k->launches);
    if (!k->launches)
        goto out;
    for (size_t i = 0; i < cap->rts.n; i++)
        if (kvs_rt_get(cap, i).kernel_launch && !(kvs_rt_get(cap, i).corr && kvs_u64map_get(&ran, (uint64_t)kvs_rt_get(cap, i).corr)))
            k->launches[k->nlaunch++] = (struct idx_ts){kvs_rt_get(cap, i).ts, (uint32_t)i};
    qsort(k->launches, k->nlaunch, sizeof *k->launches, cmp_idx_ts);
    for (size_t i = 0; i < cap->ops.n; i++) {
        if (!kvs_op_ext(cap, i))
            continue;
        uint32_t *v = kvs_u64map_put(&k->ext_op, (uint64_t)kvs_op_ext(cap, i), &added);
        if (!v)
            goto out;
        if (added)
            *v = (uint32_t)i + 1;
    }
    st = KVS_STATUS_OK;
out:
    kvs_u64map_free(&ran);
    return st;
}

/* The replays: each graph launch's kernels, in time order. Replay r
 * (0-based) has kernels kern[kstart[r] .. kstart[r + 1]) and was launched
 * by runtime call rt[r]. */
struct replays {
    size_t n;
    struct idx_ts *kern;
    uint32_t *kstart; /* [n + 2] */
    uint32_t *rt;     /* [n + 1]: its launch's runtime call + 1 */
    struct kvs_u64map launch_of; /* a graph launch's correlation -> replay + 1 */
};

/* the kernels by replay, then time (a counting sort, then each replay's by time) */
static enum kvs_status sort_by_replay(const struct kvs_trace_data *t, struct replays *p, size_t nkern)
{
    struct idx_ts *sorted = malloc((nkern ? nkern : 1) * sizeof *sorted);
    uint32_t *fill = calloc(p->n + 1, sizeof *fill);
    if (!sorted || !fill) {
        free(sorted);
        free(fill);
        return KVS_STATUS_NO_MEMORY;
    }
    for (size_t k = 0; k < nkern; k++) {
        uint32_t r = *kvs_u64map_get(&p->launch_of, (uint64_t)kvs_gpu_get(t, p->kern[k].i).corr) - 1;
        sorted[p->kstart[r] + fill[r]++] = p->kern[k];
    }
    for (size_t r = 0; r < p->n; r++)
        qsort(sorted + p->kstart[r], p->kstart[r + 1] - p->kstart[r], sizeof *sorted, cmp_idx_ts);
    free(p->kern);
    p->kern = sorted;
    free(fill);
    return KVS_STATUS_OK;
}

static enum kvs_status replay_kernels(const struct kvs_trace_data *t, struct replays *p)
{
    bool added;
    for (size_t i = 0; i < t->rts.n; i++) {
        if (!kvs_rt_get(t, i).graph_launch || !kvs_rt_get(t, i).corr)
            continue;
        uint32_t *v = kvs_u64map_put(&p->launch_of, (uint64_t)kvs_rt_get(t, i).corr, &added);
        if (!v)
            return KVS_STATUS_NO_MEMORY;
        if (added)
            *v = (uint32_t)(++p->n);
    }
    p->kern = malloc((t->gpus.n ? t->gpus.n : 1) * sizeof *p->kern);
    p->kstart = calloc(p->n + 2, sizeof *p->kstart);
    p->rt = calloc(p->n + 1, sizeof *p->rt);
    if (!p->kern || !p->kstart || !p->rt)
        return KVS_STATUS_NO_MEMORY;
    for (size_t i = 0; i < t->rts.n; i++) {
        uint32_t *v = kvs_rt_get(t, i).graph_launch && kvs_rt_get(t, i).corr ? kvs_u64map_get(&p->launch_of, (uint64_t)kvs_rt_get(t, i).corr) : NULL;
        if (v && !p->rt[*v - 1])
            p->rt[*v - 1] = (uint32_t)i + 1;
    }
    size_t nkern = 0;
    for (size_t i = 0; i < t->gpus.n; i++) {
        const struct kvs_gpu_rec g_ = kvs_gpu_get(t, i), *g = &g_;
        uint32_t *v = g->kind == KVS_GPU_KERNEL && g->corr ? kvs_u64map_get(&p->launch_of, (uint64_t)g->corr) : NULL;
        if (v) {
            p->kern[nkern++] = (struct idx_ts){g->ts, (uint32_t)i};
            p->kstart[*v]++;
        }
    }
    for (size_t r = 1; r <= p->n + 1; r++) /* kstart[r] = first kernel of replay r (0-based r-1) */
        p->kstart[r] += p->kstart[r - 1];
    return sort_by_replay(t, p, nkern);
}

static void replays_free(struct replays *p)
{
    free(p->kern);
    free(p->kstart);
    free(p->rt);
    kvs_u64map_free(&p->launch_of);
}

/* which replays align, and what the checks say: KVS_STATUS_INVALID_ARGUMENT
 * (logged) when none does or too many pairs disagree */
struct alignment {
    size_t aligned, other;
    uint64_t checked, disagree;
};

static enum kvs_status align(const struct kvs_trace_data *t, const struct kvs_trace_data *cap, const char *name,
                             const struct kvs_logger *log, const struct captured *k, const struct replays *p,
                             struct alignment *al)
{
    for (size_t r = 0; r < p->n; r++) {
        size_t n = p->kstart[r + 1] - p->kstart[r];
        if (n != k->nlaunch || n == 0) {
            al->other++;
            continue;
        }
        al->aligned++;
        for (size_t j = 0; j < n; j++) {
            uint32_t *op = kvs_u64map_get(&k->ext_op, (uint64_t)kvs_rt_get(cap, k->launches[j].i).ext);
            if (!op)
                continue;
            int v = check_pair(t, cap, p->kern[p->kstart[r] + j].i, *op - 1);
            al->checked += v >= 0;
            al->disagree += v == 0;
        }
    }
    if (!al->aligned) {
        kvs_log(log, KVS_LOG_ERROR,
                "--graph-capture %s: its %zu captured kernel launches line up with none of the "
                "trace's %zu graph replays (their kernel counts differ): not the capture of "
                "this graph, so no ops are given to its kernels",
                name, k->nlaunch, p->n);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    if (al->checked && (double)al->disagree > MAX_DISAGREE * (double)al->checked) {
        kvs_log(log, KVS_LOG_ERROR,
                "--graph-capture %s: aligned in order, %llu of %llu checked pairs disagree (a "
                "copy kernel under a non-copy op, or an element count the kernel's launch "
                "cannot hold): refused rather than guessed",
                name, (unsigned long long)al->disagree, (unsigned long long)al->checked);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    return KVS_STATUS_OK;
}

/* merge: each aligned kernel gets a copy of its op at the graph launch;
 * *given counts them */
static enum kvs_status give_ops(struct kvs_trace_data *t, const struct kvs_trace_data *cap, const struct captured *k,
                                const struct replays *p, struct kvs_activity_table *act, uint64_t *given)
{
    uint32_t *key_of = calloc(cap->nopkeys ? cap->nopkeys : 1, sizeof *key_of); /* replay key + 1 */
    if (!key_of)
        return KVS_STATUS_NO_MEMORY;
    t->ops_ext_sorted = false;
    for (size_t r = 0; r < p->n; r++) {
        size_t n = p->kstart[r + 1] - p->kstart[r];
        if (n != k->nlaunch)
            continue;
        const struct kvs_rt_rec rt_ = kvs_rt_get(t, p->rt[r] - 1), *rt = &rt_;
        for (size_t j = 0; j < n; j++) {
            uint32_t *opv = kvs_u64map_get(&k->ext_op, (uint64_t)kvs_rt_get(cap, k->launches[j].i).ext);
            if (!opv)
                continue;
            const struct kvs_op_rec co_ = kvs_op_get(cap, *opv - 1), *co = &co_;
            uint32_t key = key_of[co->key] ? key_of[co->key] - 1 : import_key(t, cap, co->key);
            struct kvs_op_rec o = {rt->ts, 0, co->ext, key, rt->thread, 0};
            if (key == UINT32_MAX || kvs_op_push(t, &o) < 0) {
                free(key_of);
                return KVS_STATUS_NO_MEMORY;
            }
            key_of[co->key] = key + 1;
            act->v[p->kern[p->kstart[r] + j].i].op = (uint32_t)(t->ops.n - 1);
            (*given)++;
        }
    }
    free(key_of);
    return KVS_STATUS_OK;
}

enum kvs_status kvs_graph_capture_merge(struct kvs_trace_data *t, const struct kvs_trace_data *cap, const char *name,
                                        const struct kvs_logger *log, struct kvs_activity_table *act)
{
    struct captured k = {0};
    struct replays p = {0};
    struct alignment al = {0};
    uint64_t given = 0;
    enum kvs_status st = captured_launches(cap, &k);
    if (st == KVS_STATUS_OK)
        st = replay_kernels(t, &p);
    if (st == KVS_STATUS_OK)
        st = align(t, cap, name, log, &k, &p, &al);
    if (st == KVS_STATUS_OK)
        st = give_ops(t, cap, &k, &p, act, &given);
    if (st == KVS_STATUS_OK) {
        act->unlinked = 0;
        for (size_t i = 0; i < t->gpus.n; i++)
            act->unlinked += act->v[i].op == KVS_NO_OP;
        act->capture_aligned = given;
        kvs_log(log, KVS_LOG_INFO,
                "--graph-capture %s: %zu kernel launches captured; %zu of %zu graph replays aligned "
                "launch by launch (%llu kernels given their captured op; %llu pairs checked by kernel "
                "kind and element count, %llu disagree)%s",
                name, k.nlaunch, al.aligned, p.n, (unsigned long long)given,
                (unsigned long long)al.checked, (unsigned long long)al.disagree,
                al.other ? "; the other replays have another kernel count: another graph, left as they are" : "");
    }
    free(k.launches);
    kvs_u64map_free(&k.ext_op);
    replays_free(&p);
    return st;
}
