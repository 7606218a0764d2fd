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
static int check_pair(const struct kvs_ctx *c, const struct kvs_trace_data *cap, uint32_t gi, uint32_t op)
{
    const struct kvs_trace_data *t = &c->t;
    const struct kvs_gpu_rec *g = &t->gpus[gi];
    const char *kname = kvs_intern_str(&t->strings, g->name);
    const char *oname = kvs_intern_str(&cap->strings, cap->opkeys[cap->ops[op].key].name);
    uint32_t sh = cap->opkeys[cap->ops[op].key].shape;
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

enum kvs_status kvs_graph_capture_merge(struct kvs_ctx *c, const char *capture, const struct kvs_read_opts *ro)
{
    struct kvs_trace_data *t = &c->t;
    struct kvs_trace_data cap;
    memset(&cap, 0, sizeof cap);
    struct kvs_read_opts cro = *ro;
    cro.progress = NULL;
    enum kvs_status st = kvs_read_trace(capture, &cro, &cap);
    struct kvs_u64map ran = {0}, ext_op = {0}, launch_of = {0};
    struct idx_ts *launches = NULL, *kern = NULL;
    size_t nlaunch = 0, nkern = 0;
    uint32_t *kstart = NULL;
    if (st != KVS_STATUS_OK && st != KVS_STATUS_TRUNCATED)
        goto out;
    st = KVS_STATUS_NO_MEMORY;
    bool added;
    /* the launches recorded while capturing: kernel launches whose kernel did not run */
    for (size_t i = 0; i < cap.ngpus; i++)
        if (cap.gpus[i].corr && !kvs_u64map_put(&ran, (uint64_t)cap.gpus[i].corr, &added))
            goto out;
    launches = malloc((cap.nrts ? cap.nrts : 1) * sizeof *launches);
    if (!launches)
        goto out;
    for (size_t i = 0; i < cap.nrts; i++)
        if (cap.rts[i].kernel_launch && !(cap.rts[i].corr && kvs_u64map_get(&ran, (uint64_t)cap.rts[i].corr)))
            launches[nlaunch++] = (struct idx_ts){cap.rts[i].ts, (uint32_t)i};
    qsort(launches, nlaunch, sizeof *launches, cmp_idx_ts);
    for (size_t i = 0; i < cap.nops; i++) {
        if (!cap.ops[i].ext)
            continue;
        uint32_t *v = kvs_u64map_put(&ext_op, (uint64_t)cap.ops[i].ext, &added);
        if (!v)
            goto out;
        if (added)
            *v = (uint32_t)i + 1;
    }
    /* the replays: kernels by the graph launch that started them, in time order */
    size_t nreplay = 0;
    for (size_t i = 0; i < t->nrts; i++) {
        if (!t->rts[i].graph_launch || !t->rts[i].corr)
            continue;
        uint32_t *v = kvs_u64map_put(&launch_of, (uint64_t)t->rts[i].corr, &added);
        if (!v)
            goto out;
        if (added)
            *v = (uint32_t)(++nreplay);
    }
    kern = malloc((t->ngpus ? t->ngpus : 1) * sizeof *kern);
    kstart = calloc(nreplay + 2, sizeof *kstart);
    uint32_t *replay_rt = calloc(nreplay + 1, sizeof *replay_rt);
    if (!kern || !kstart || !replay_rt) {
        free(replay_rt);
        goto out;
    }
    for (size_t i = 0; i < t->nrts; i++) {
        uint32_t *v = t->rts[i].graph_launch && t->rts[i].corr ? kvs_u64map_get(&launch_of, (uint64_t)t->rts[i].corr) : NULL;
        if (v && !replay_rt[*v - 1])
            replay_rt[*v - 1] = (uint32_t)i + 1;
    }
    /* sort key: replay ordinal, then time */
    for (size_t i = 0; i < t->ngpus; i++) {
        const struct kvs_gpu_rec *g = &t->gpus[i];
        uint32_t *v = g->kind == KVS_GPU_KERNEL && g->corr ? kvs_u64map_get(&launch_of, (uint64_t)g->corr) : NULL;
        if (v) {
            kern[nkern++] = (struct idx_ts){g->ts, (uint32_t)i};
            kstart[*v]++;
        }
    }
    for (size_t r = 1; r <= nreplay + 1; r++) /* kstart[r] = first kernel of replay r (0-based r-1) */
        kstart[r] += kstart[r - 1];
    {
        struct idx_ts *sorted = malloc((nkern ? nkern : 1) * sizeof *sorted);
        uint32_t *fill = calloc(nreplay + 1, sizeof *fill);
        if (!sorted || !fill) {
            free(sorted);
            free(fill);
            free(replay_rt);
            goto out;
        }
        for (size_t k = 0; k < nkern; k++) {
            uint32_t r = *kvs_u64map_get(&launch_of, (uint64_t)t->gpus[kern[k].i].corr) - 1;
            sorted[kstart[r] + fill[r]++] = kern[k];
        }
        for (size_t r = 0; r < nreplay; r++)
            qsort(sorted + kstart[r], kstart[r + 1] - kstart[r], sizeof *sorted, cmp_idx_ts);
        free(kern);
        kern = sorted;
        free(fill);
    }
    /* which replays align, and what the checks say */
    size_t aligned_replays = 0, other = 0;
    uint64_t checked = 0, disagree = 0;
    for (size_t r = 0; r < nreplay; r++) {
        size_t n = kstart[r + 1] - kstart[r];
        if (n != nlaunch || n == 0) {
            other++;
            continue;
        }
        aligned_replays++;
        for (size_t k = 0; k < n; k++) {
            uint32_t *op = kvs_u64map_get(&ext_op, (uint64_t)cap.rts[launches[k].i].ext);
            if (!op)
                continue;
            int v = check_pair(c, &cap, kern[kstart[r] + k].i, *op - 1);
            checked += v >= 0;
            disagree += v == 0;
        }
    }
    if (!aligned_replays || (checked && (double)disagree > MAX_DISAGREE * (double)checked)) {
        if (!aligned_replays)
            kvs_log(c->log, KVS_LOG_ERROR,
                    "--graph-capture %s: its %zu captured kernel launches line up with none of the "
                    "trace's %zu graph replays (their kernel counts differ): not the capture of "
                    "this graph, so no ops are given to its kernels",
                    capture, nlaunch, nreplay);
        else
            kvs_log(c->log, KVS_LOG_ERROR,
                    "--graph-capture %s: aligned in order, %llu of %llu checked pairs disagree (a "
                    "copy kernel under a non-copy op, or an element count the kernel's launch "
                    "cannot hold): refused rather than guessed",
                    capture, (unsigned long long)disagree, (unsigned long long)checked);
        free(replay_rt);
        st = KVS_STATUS_INVALID_ARGUMENT;
        goto out;
    }
    /* merge: each aligned kernel gets a copy of its op at the graph launch */
    uint64_t given = 0;
    uint32_t *key_of = calloc(cap.nopkeys ? cap.nopkeys : 1, sizeof *key_of); /* replay key + 1 */
    if (!key_of) {
        free(replay_rt);
        goto out;
    }
    t->ops_ext_sorted = false;
    for (size_t r = 0; r < nreplay; r++) {
        size_t n = kstart[r + 1] - kstart[r];
        if (n != nlaunch)
            continue;
        const struct kvs_rt_rec *rt = &t->rts[replay_rt[r] - 1];
        for (size_t k = 0; k < n; k++) {
            uint32_t *opv = kvs_u64map_get(&ext_op, (uint64_t)cap.rts[launches[k].i].ext);
            if (!opv)
                continue;
            const struct kvs_op_rec *co = &cap.ops[*opv - 1];
            if (!key_of[co->key]) {
                uint32_t key = import_key(t, &cap, co->key);
                if (key == UINT32_MAX) {
                    free(key_of);
                    free(replay_rt);
                    goto out;
                }
                key_of[co->key] = key + 1;
            }
            struct kvs_op_rec o = {rt->ts, 0, co->ext, key_of[co->key] - 1, rt->thread, 0};
            if (KVS_VEC_PUSH(t->ops, t->nops, t->ops_cap, o) < 0) {
                free(key_of);
                free(replay_rt);
                goto out;
            }
            c->gpu_op[kern[kstart[r] + k].i] = (uint32_t)(t->nops - 1);
            given++;
        }
    }
    free(key_of);
    free(replay_rt);
    c->unlinked = 0;
    for (size_t i = 0; i < t->ngpus; i++)
        c->unlinked += c->gpu_op[i] == KVS_NO_OP;
    c->capture_aligned = given;
    kvs_log(c->log, KVS_LOG_INFO,
            "--graph-capture %s: %zu kernel launches captured; %zu of %zu graph replays aligned "
            "launch by launch (%llu kernels given their captured op; %llu pairs checked by kernel "
            "kind and element count, %llu disagree)%s",
            capture, nlaunch, aligned_replays, nreplay, (unsigned long long)given,
            (unsigned long long)checked, (unsigned long long)disagree,
            other ? "; the other replays have another kernel count: another graph, left as they are" : "");
    st = KVS_STATUS_OK;
out:
    free(launches);
    free(kern);
    free(kstart);
    kvs_u64map_free(&ran);
    kvs_u64map_free(&ext_op);
    kvs_u64map_free(&launch_of);
    kvs_trace_data_free(&cap);
    return st;
}
