/* kv_read.c — kv_full_buffer_read (see kv_read.h). Private to analyzers/. */
#include "kv_read.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "group_figs.h"
#include "kvscope/check.h"
#include "match.h"
#include "opcost.h"
#include "figures.h"
#include "phrase.h"
#include "steps.h"
#include "kvscope/reader.h"

#define READ_RATIO 8          /* the buffer holds at least 8x the active tokens */
#define READ_MIN_TOKENS 4096  /* an inferred capacity is at least this (match.c's BUFFER_MIN_TOKENS) */
#define MIN_ROW 64            /* elements per token of a cache copy (a mask has 1) */

// ----------------------------------------------------------------------------
// attention ops and their key/value layout

/* The dim of the key and value tensors that counts the tokens attended
 * over, by the op's layout (opcost.c's table: [B,H,S,D] sdpa and its
 * backends, [B,S,H,D] the flash/efficient forward ops); -1 for other ops.
 * Ops told the active lengths (flash_attn_with_kvcache's cache_seqlens,
 * varlen and paged kernels) are not in that table: they read only the
 * tokens or blocks they are told, never the whole buffer by their shapes. */
static int kv_seq_dim(const char *name)
{
    int layout = kvs_attention_layout(name);
    return layout == 'H' ? 2 : layout == 'L' ? 1 : -1;
}

/* one op key of an attention op whose q, k, v dims say what it reads */
struct attn {
    uint32_t key;                 /* opkeys index */
    int sd;                       /* the sequence dim of k and v */
    int64_t S, lq;                /* keys attended over, queries */
    int64_t kv_bytes;             /* k + v per call */
    double bytes;                 /* per call, all its tensors and output (opcost.c) */
    int64_t k_numel, v_numel;
    int64_t calls, calls_in_steps, steps_with_calls;
    int64_t gpu_ns, gpu_ns_in_steps, gpu_calls;
    uint64_t devices;             /* kvs_device_bit()s of its kernels */
    struct kvs_shape s;
    /* the verdict */
    int64_t capacity, active;
    enum kvs_active_from active_from;
};

static bool attn_parse(const struct kvs_trace_data *t, uint32_t key, struct attn *a)
{
    const char *name = kvs_intern_str(&t->strings, t->opkeys[key].name);
    uint32_t sh = t->opkeys[key].shape;
    int sd = kv_seq_dim(name);
    if (sd < 0 || !sh)
        return false;
    memset(a, 0, sizeof *a);
    kvs_shape_parse(kvs_intern_str(&t->strings, sh), kvs_intern_len(&t->strings, sh), &a->s);
    const struct kvs_shape *s = &a->s;
    if (s->n < 3 || s->rank[0] != 4 || s->rank[1] != 4 || s->rank[2] != 4)
        return false;
    for (int d = 0; d < 3; d++) /* k and v alike but for the head dim */
        if (s->dims[1][d] != s->dims[2][d])
            return false;
    if (s->bytes[1] < 0 || s->bytes[2] < 0 || s->dims[1][sd] <= 1 || s->dims[0][0] != s->dims[1][0])
        return false;
    a->key = key;
    a->sd = sd;
    a->S = s->dims[1][sd];
    a->lq = s->dims[0][sd];
    a->kv_bytes = s->bytes[1] + s->bytes[2];
    struct kvs_op_cost cost;
    kvs_op_cost_of(name, s, &cost);
    a->bytes = cost.bytes >= (double)a->kv_bytes ? cost.bytes : (double)a->kv_bytes;
    a->k_numel = s->numel[1];
    a->v_numel = s->numel[2];
    return true;
}

/* "[1,16,8192,192]" */
// ----------------------------------------------------------------------------
// GPU time: each GPU activity goes to the outermost attention call around
// the op that launched it (sdpa -> its backend -> the kernel)

struct call {
    uint32_t thread, op, attn; /* op index, index into the attn table */
    int64_t ts, end;
};

static int cmp_call(const void *x, const void *y)
{
    const struct call *a = x, *b = y;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->end > b->end ? -1 : a->end < b->end; /* the enclosing one first */
}

/* the top-level call enclosing op o, or NULL */
static const struct call *enclosing(const struct call *top, size_t n, const struct kvs_op_rec *o)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first call after (thread, ts) */
        size_t mid = lo + (hi - lo) / 2;
        if (top[mid].thread < o->thread || (top[mid].thread == o->thread && top[mid].ts <= o->ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return NULL;
    const struct call *k = &top[lo - 1];
    return k->thread == o->thread && k->ts <= o->ts && o->ts + o->dur <= k->end ? k : NULL;
}

static enum kvs_status measure(const struct kvs_stage_in *in, struct attn *at, const uint32_t *attn_of_key)
{
    const struct kvs_trace_data *t = in->t;
    struct call *calls = NULL;
    size_t ncalls = 0, cap = 0;
    /* ops a graph replay's kernels were given from the capture (graph_capture.c):
     * copies placed at the graph launch's time, so time says nothing about
     * which encloses which: each is its own call and owns only its kernels */
    uint8_t *graphed = calloc(t->ops.n / 8 + 1, 1);
    uint32_t *call_of_op = calloc(t->ops.n ? t->ops.n : 1, sizeof *call_of_op);
    uint8_t *counted = NULL;
    struct kvs_u64map seen = {0};
    enum kvs_status rc = KVS_STATUS_NO_MEMORY;
    if (!graphed || !call_of_op)
        goto out;
    for (size_t i = 0; i < t->gpus.n; i++)
        if (in->act->v[i].graph && in->act->v[i].op != KVS_NO_OP)
            graphed[in->act->v[i].op / 8] |= (uint8_t)(1u << (in->act->v[i].op % 8));
    for (size_t k = 0; k < t->ops.n; k++) {
        uint32_t a = attn_of_key[kvs_op_key(t, k)];
        if (!a)
            continue;
        struct call one = {kvs_op_thread(t, k), (uint32_t)k, a - 1, kvs_op_ts(t, k), kvs_op_end(t, k)};
        if (KVS_VEC_PUSH(calls, ncalls, cap, one) < 0)
            goto out;
    }
    rc = KVS_STATUS_OK;
    if (!ncalls)
        goto out;
    qsort(calls, ncalls, sizeof *calls, cmp_call);
    size_t ntop = 0, last = SIZE_MAX; /* keep the outermost calls, in place */
    for (size_t i = 0; i < ncalls; i++) {
        bool g = graphed[calls[i].op / 8] & (1u << (calls[i].op % 8));
        if (!g && last != SIZE_MAX && calls[last].thread == calls[i].thread && calls[i].end <= calls[last].end)
            continue;
        /* each kernel of a captured op has its own copy (same External id,
         * same time): one call */
        if (g && ntop && calls[ntop - 1].thread == calls[i].thread && calls[ntop - 1].ts == calls[i].ts &&
            kvs_op_ext(t, calls[ntop - 1].op) == kvs_op_ext(t, calls[i].op) &&
            (graphed[calls[ntop - 1].op / 8] & (1u << (calls[ntop - 1].op % 8)))) {
            call_of_op[calls[i].op] = (uint32_t)ntop;
            continue;
        }
        calls[ntop] = calls[i];
        call_of_op[calls[i].op] = (uint32_t)ntop + 1;
        if (!g)
            last = ntop;
        ntop++;
    }
    for (size_t i = 0; i < ntop && rc == KVS_STATUS_OK; i++) {
        struct attn *a = &at[calls[i].attn];
        a->calls++;
        int32_t step = in->steps->n ? kvs_step_at(in->steps, calls[i].ts) : -1;
        if (step < 0)
            continue;
        a->calls_in_steps++;
        bool added;
        if (!kvs_u64map_put(&seen, kvs_pair_key(calls[i].attn, (uint32_t)step), &added))
            rc = KVS_STATUS_NO_MEMORY;
        else if (added)
            a->steps_with_calls++;
    }
    counted = rc == KVS_STATUS_OK ? calloc(ntop / 8 + 1, 1) : NULL;
    if (!counted)
        rc = KVS_STATUS_NO_MEMORY;
    for (size_t i = 0; i < t->gpus.n && rc == KVS_STATUS_OK; i++) {
        uint32_t op = in->act->v[i].op;
        if (op == KVS_NO_OP)
            continue;
        const struct call *k = call_of_op[op] ? &calls[call_of_op[op] - 1] : NULL;
        if (!k && !in->act->v[i].graph) {
            const struct kvs_op_rec o = kvs_op_get(t, op);
            k = enclosing(calls, ntop, &o);
            if (k && (graphed[k->op / 8] & (1u << (k->op % 8))))
                k = NULL;
        }
        if (!k)
            continue;
        struct attn *a = &at[k->attn];
        a->gpu_ns += kvs_gpu_get(t, i).dur;
        a->devices |= kvs_device_bit(kvs_gpu_get(t, i).device);
        if (in->act->v[i].step >= 0)
            a->gpu_ns_in_steps += kvs_gpu_get(t, i).dur;
        size_t ci = (size_t)(k - calls);
        if (!(counted[ci / 8] & (1u << (ci % 8)))) {
            counted[ci / 8] |= (uint8_t)(1u << (ci % 8));
            a->gpu_calls++;
        }
    }
out:
    free(counted);
    free(graphed);
    free(call_of_op);
    kvs_u64map_free(&seen);
    free(calls);
    return rc;
}

// ----------------------------------------------------------------------------
// capacity and active tokens

/* Another attention key of the same op and dims but a sequence length
 * within 1/8 of this one's: the length grows as tokens are decoded (a
 * DynamicCache: 521, 522, ...), it is no capacity. */
static bool grows(const struct attn *at, size_t nat, const struct kvs_trace_data *t, const struct attn *a)
{
    for (size_t i = 0; i < nat; i++) {
        const struct attn *o = &at[i];
        if (o == a || t->opkeys[o->key].name != t->opkeys[a->key].name || o->sd != a->sd || o->S == a->S)
            continue;
        if (o->S > 0 && llabs(o->S - a->S) <= (a->S - 1) / READ_RATIO)
            return true;
    }
    return false;
}

/* The largest token count below S seen in the trace along the keys'
 * sequence dim: a tensor with the keys' or the values' dims but for that
 * dim (a prefill's new keys [1,16,512,192] written into a [1,16,8192,192]
 * cache), or the same in the [B,S,H,D] order of the attention's backend.
 * 0 when none. */
static int64_t seen_active(const struct kvs_stage_in *in, const struct attn *a)
{
    const struct kvs_trace_data *t = in->t;
    int64_t best = 0;
    for (size_t k = 0; k < t->nopkeys; k++) {
        uint32_t sh = t->opkeys[k].shape;
        if (!sh)
            continue;
        struct kvs_shape s;
        kvs_shape_parse(kvs_intern_str(&t->strings, sh), kvs_intern_len(&t->strings, sh), &s);
        for (int i = 0; i < s.n; i++) {
            if (s.rank[i] != 4)
                continue;
            for (int kv = 1; kv <= 2; kv++) {
                const int64_t *ref = a->s.dims[kv], *d = s.dims[i];
                /* the same order ([B,H,S,D] with sd 2), or heads and tokens swapped */
                for (int swap = 0; swap < 2; swap++) {
                    int sd = swap ? 3 - a->sd : a->sd, hd = swap ? a->sd : 3 - a->sd;
                    if (d[0] != ref[0] || d[3] != ref[3] || d[hd] != ref[3 - a->sd])
                        continue;
                    if (d[sd] > 1 && d[sd] < a->S && d[sd] > best)
                        best = d[sd];
                }
            }
        }
    }
    return best;
}

/* the tokens in use by what the user or the trace's engine says, else 0 */
static int64_t given_active(const struct kvs_stage_in *in, enum kvs_active_from *from)
{
    if (in->opt->context > 0) {
        *from = KVS_ACTIVE_CONTEXT_OPTION;
        return in->opt->context;
    }
    if (in->t->engine.present && in->t->engine.context > 0) {
        *from = KVS_ACTIVE_ENGINE_CONTEXT;
        return in->t->engine.context;
    }
    return 0;
}

/* capacity and active tokens of one attention key; false: it is no full read */
static bool judge(const struct kvs_stage_in *in, const struct attn *at, size_t nat, struct attn *a)
{
    /* in most steps: a trace that holds the prefill step too has the decode
     * attention in all the others */
    double cps = in->steps->n ? (double)a->calls_in_steps / (double)in->steps->n : (double)a->calls;
    bool steady = !in->steps->n || 2 * a->steps_with_calls > (int64_t)in->steps->n;
    if (a->calls == 0 || !steady || a->lq > a->S / READ_RATIO || (!in->steps->n && cps < 1))
        return false;
    enum kvs_active_from from = KVS_ACTIVE_UNKNOWN;
    int64_t active = given_active(in, &from);
    if (active <= 0 && (active = seen_active(in, a)) > 0)
        from = KVS_ACTIVE_SEEN_KEYS;
    if (in->opt->kv_capacity > 0) {
        if (a->S != in->opt->kv_capacity)
            return false;
    } else if (in->mf->backward || a->S < READ_MIN_TOKENS || grows(at, nat, in->t, a)) {
        return false;
    } else if (active > 0 ? a->S / READ_RATIO < active : a->steps_with_calls < 2) {
        /* with no active count: the keys' length held over two decode steps
         * or more, where a cache that grows adds a token a step (a
         * decode-only trace of a static cache records nothing that counts
         * the active tokens) */
        return false;
    }
    if (active >= a->S)
        return false;
    a->capacity = a->S;
    a->active = active;
    a->active_from = from;
    return true;
}

// ----------------------------------------------------------------------------
// the finding

struct reader {
    const char *desc;      /* the op with its dims */
    const char *op;        /* its name */
    double calls_per_step, bytes_per_step, gpu_ms_per_step, ms_per_call, gbps;
    double fixed_bytes_per_step; /* of those, what the active count does not scale (queries, output) */
    int64_t active;        /* tokens in use for it, 0 unknown */
    enum kvs_active_from active_from;
    bool attention;
    uint64_t devices;      /* kvs_device_bit()s of its GPU work */
};

static int cmp_reader(const void *x, const void *y)
{
    const struct reader *a = x, *b = y;
    if (a->gpu_ms_per_step != b->gpu_ms_per_step)
        return a->gpu_ms_per_step > b->gpu_ms_per_step ? -1 : 1;
    return strcmp(a->desc, b->desc);
}

/* a copy group that moves the whole buffer of `capacity` tokens without
 * changing its dtype: matched to it by match.c, or a tensor of the
 * attention's batch with the capacity among its other dims, 64 or more
 * elements a token, and no larger than the attention's keys or values */
static bool copies_buffer(const struct kvs_stage_in *in, const struct kvs_group_acc *g, int64_t capacity,
                          const struct attn *at, size_t nat)
{
    const char *op = kvs_intern_str(&in->t->strings, g->op_name);
    const struct kvs_shape *s = &g->shape_info;
    if (g->bare || s->n == 0 || g->bytes_per_call <= 0 || !kvs_op_is_copy(op) ||
        kvs_op_is_indexed_write(op) || !kvs_findings_keeps_dtype(g))
        return false;
    if (in->steps->n && g->steps_with_calls != (int64_t)in->steps->n)
        return false;
    if (g->has_match && g->match.capacity_tokens == capacity)
        return true;
    bool dim = false;
    for (int i = 1; i < s->rank[0] && i < KVS_SHAPE_MAX_RANK; i++)
        dim = dim || s->dims[0][i] == capacity;
    if (!dim || s->numel[0] / capacity < MIN_ROW)
        return false;
    /* part of what an attention over the buffer reads, or all of it: the
     * MLA cache expanded to its heads ([1,16,8192,128] values, the
     * [1,16,8192,64] rope half of the keys), repeat_kv's [1,4,4,8192,64] */
    for (size_t i = 0; i < nat; i++)
        if (at[i].capacity == capacity && at[i].s.dims[1][0] == s->dims[0][0] &&
            (s->numel[0] <= at[i].k_numel || s->numel[0] <= at[i].v_numel))
            return true;
    return false;
}

/* The ops that read one buffer: attentions over it, copies of it, GEMMs
 * over its every slot; and what the fix needs to know of them. */
struct readers {
    struct reader *v;
    size_t n, cap;
    int64_t attn_active;        /* the attention's active tokens, for copies of its buffer */
    enum kvs_active_from attn_from;
    bool any_repeat, any_expand; /* kinds of copy, for the fix */
};

static enum kvs_status add_reader(struct readers *rs, const struct reader *one)
{
    return KVS_VEC_PUSH(rs->v, rs->n, rs->cap, *one) < 0 ? KVS_STATUS_NO_MEMORY : KVS_STATUS_OK;
}

static enum kvs_status attention_readers(const struct kvs_stage_in *in, struct kvs_arena *ar, int64_t capacity,
                                         const struct attn *at, size_t nat, struct readers *rs)
{
    for (size_t i = 0; i < nat; i++) {
        const struct attn *a = &at[i];
        if (a->capacity != capacity)
            continue;
        double cps = in->steps->n ? (double)a->calls_in_steps / (double)in->steps->n : (double)a->calls;
        double ms = in->steps->n ? (double)a->gpu_ns_in_steps / 1e6 / (double)in->steps->n : (double)a->gpu_ns / 1e6;
        const char *name = kvs_intern_str(&in->t->strings, in->t->opkeys[a->key].name);
        struct reader one = {
            .desc = kvs_phrase_attention_desc(ar, name, a->s.dims[1], a->s.dims[2], a->lq),
            .op = name,
            .calls_per_step = cps,
            .bytes_per_step = a->bytes * cps,
            .fixed_bytes_per_step = (a->bytes - (double)a->kv_bytes) * cps,
            .gpu_ms_per_step = ms,
            .ms_per_call = a->gpu_calls ? (double)a->gpu_ns / 1e6 / (double)a->gpu_calls : 0,
            .gbps = a->gpu_ns > 0 ? a->bytes * (double)a->gpu_calls / (double)a->gpu_ns : 0,
            .active = a->active,
            .active_from = a->active_from,
            .attention = true,
            .devices = a->devices,
        };
        if (a->active > rs->attn_active) {
            rs->attn_active = a->active;
            rs->attn_from = a->active_from;
        }
        KVS_TRY(add_reader(rs, &one));
    }
    return KVS_STATUS_OK;
}

/* full_read[gi]: group gi copies the buffer (low_bandwidth_efficiency's fix says so) */
static enum kvs_status copy_readers(const struct kvs_stage_in *in, struct kvs_arena *ar, int64_t capacity,
                                    const struct attn *at, size_t nat, struct readers *rs, bool *full_read)
{
    enum kvs_active_from given_from = KVS_ACTIVE_UNKNOWN;
    int64_t given = given_active(in, &given_from);
    for (size_t gi = 0; gi < in->groups->n; gi++) {
        const struct kvs_group_acc *g = &in->groups->v[gi];
        if (!copies_buffer(in, g, capacity, at, nat))
            continue;
        struct kvs_group_figs f;
        kvs_group_figures(in->steps, in->dev, g, &f);
        if (f.calls_per_step < 1)
            continue;
        full_read[gi] = true;
        /* [B, Hkv, n_rep, S, D]: HF's repeat_kv expanding the KV heads */
        if (g->shape_info.rank[0] == 5 && g->shape_info.dims[0][2] > 1)
            rs->any_repeat = true;
        else
            rs->any_expand = true;
        struct reader one = {
            .desc = kvs_findings_group_desc(ar, &in->t->strings, g),
            .op = kvs_intern_str(&in->t->strings, g->op_name),
            .calls_per_step = f.calls_per_step,
            .bytes_per_step = (double)g->bytes_per_call * f.calls_per_step,
            .gpu_ms_per_step = f.gpu_ms_per_step,
            .ms_per_call = g->gpu_calls ? (double)g->gpu_ns / 1e6 / (double)g->gpu_calls : 0,
            .gbps = f.achieved_gbps,
            .devices = g->devices,
        };
        if (given > 0) {
            one.active = given;
            one.active_from = given_from;
        } else if (g->active_tokens > 0 && g->active_tokens < capacity) {
            one.active = g->active_tokens;
            one.active_from = KVS_ACTIVE_SEEN_ROWS;
        } else {
            one.active = rs->attn_active;
            one.active_from = rs->attn_from;
        }
        KVS_TRY(add_reader(rs, &one));
    }
    return KVS_STATUS_OK;
}

/* a GEMM over every slot of the buffer: MLA's kv_b_proj applied to the
 * whole latent cache ([8192,512] x [512,4096] in HF's DeepseekV3 with a
 * StaticCache), an activation whose rows are the capacity, against a
 * weight, in every step; its weight bytes do not scale with the tokens */
static enum kvs_status gemm_readers(const struct kvs_stage_in *in, struct kvs_arena *ar, int64_t capacity,
                                    struct readers *rs)
{
    enum kvs_active_from given_from = KVS_ACTIVE_UNKNOWN;
    int64_t given = given_active(in, &given_from);
    for (size_t k = 0; k < in->ops->n && rs->n; k++) {
        const struct kvs_op_acc *o = &in->ops->v[k];
        if (o->bare || o->cost.family != KVS_OPF_MATMUL || o->cost.rows != (double)capacity ||
            o->cost.bytes <= 0 || o->cost.weight_bytes < 0 || o->shape_info.n == 0 ||
            o->shape_info.dims[0][0] != capacity)
            continue;
        double cps = in->steps->n ? (double)o->calls_in_steps / (double)in->steps->n : (double)o->calls;
        if (cps < 1)
            continue;
        const char *name = kvs_intern_str(&in->t->strings, o->op_name);
        struct reader one = {
            .desc = kvs_phrase_gemm_desc(ar, name, &o->shape_info),
            .op = name,
            .calls_per_step = cps,
            .bytes_per_step = o->cost.bytes * cps,
            .fixed_bytes_per_step = o->cost.weight_bytes * cps,
            .gpu_ms_per_step = in->steps->n ? (double)o->gpu_ns_in_steps / 1e6 / (double)in->steps->n
                                         : (double)o->gpu_ns / 1e6,
            .ms_per_call = o->calls ? (double)o->gpu_ns / 1e6 / (double)o->calls : 0,
            .gbps = isfinite(o->achieved_gbps) ? o->achieved_gbps : 0,
            .active = given > 0 ? given : rs->attn_active,
            .active_from = given > 0 ? given_from : rs->attn_from,
            .devices = o->devices,
        };
        rs->any_expand = true;
        KVS_TRY(add_reader(rs, &one));
    }
    return KVS_STATUS_OK;
}

/* The readers' sums: bytes, time, the bytes their active tokens need and
 * the time that saves; each reader needs its active tokens' share of what
 * it reads, one whose active count is unknown may save all of its time. */
static void sum_readers(const struct reader *r, size_t nr, int64_t capacity, struct kvs_fig_full_read *f)
{
    bool all_known = true;
    for (size_t i = 0; i < nr; i++) {
        double share = r[i].active > 0 ? (double)r[i].active / (double)capacity : 0;
        double need = r[i].active > 0 ? r[i].fixed_bytes_per_step +
                                            (r[i].bytes_per_step - r[i].fixed_bytes_per_step) * share
                                      : 0;
        f->bytes_per_step += r[i].bytes_per_step;
        f->gpu_ms_per_step += r[i].gpu_ms_per_step;
        f->needed_bytes_per_step += need;
        f->saving_ms += r[i].gpu_ms_per_step * (r[i].bytes_per_step > 0 ? 1.0 - need / r[i].bytes_per_step : 1.0);
        all_known = all_known && r[i].active > 0;
        f->mixed = f->mixed || (i && r[i].active != r[0].active);
        if (r[i].active > f->active) {
            f->active = r[i].active;
            f->active_from = r[i].active_from;
        }
        f->any_attention = f->any_attention || r[i].attention;
        f->any_copy = f->any_copy || !r[i].attention;
    }
    if (!all_known) { /* a partial sum of the needed bytes is not what is needed */
        f->needed_bytes_per_step = 0;
        f->active = 0;
    }
}

static enum kvs_status one_finding(const struct kvs_stage_in *in, struct kvs_arena *ar, int64_t capacity,
                                   const struct attn *at, size_t nat, struct kvs_finding_list *out,
                                   bool *full_read)
{
    struct readers rs = {0};
    enum kvs_status st = attention_readers(in, ar, capacity, at, nat, &rs);
    if (st == KVS_STATUS_OK)
        st = copy_readers(in, ar, capacity, at, nat, &rs, full_read);
    if (st == KVS_STATUS_OK)
        st = gemm_readers(in, ar, capacity, &rs);
    const size_t nr = rs.n;
    struct reader *r = rs.v;
    struct kvs_fig_reader *fr = st == KVS_STATUS_OK && nr ? malloc(nr * sizeof *fr) : NULL;
    if (st != KVS_STATUS_OK || !nr || !fr) {
        free(r);
        return st == KVS_STATUS_OK && nr ? KVS_STATUS_NO_MEMORY : st;
    }
    qsort(r, nr, sizeof *r, cmp_reader);
    struct kvs_fig_full_read fig = {
        .readers = fr,
        .nreaders = nr,
        .capacity = capacity,
        .busy_ms = kvs_findings_step_busy_ms(in->steps),
        .capacity_given = in->opt->kv_capacity > 0,
        .steps = in->steps->n,
        .any_repeat = rs.any_repeat,
        .any_expand = rs.any_expand,
    };
    sum_readers(r, nr, capacity, &fig);
    for (size_t i = 0; i < nat && !fig.capacity_attention; i++) /* the attention that set it, if one did */
        if (at[i].capacity == capacity) {
            fig.capacity_attention = true;
            fig.capacity_steps = at[i].steps_with_calls;
        }
    /* the ops, most GPU time first */
    const char **ops = kvs_arena_alloc(ar, nr * sizeof *ops);
    uint64_t devices = 0;
    for (size_t i = 0; i < nr; i++) {
        if (ops)
            ops[i] = r[i].desc;
        fr[i] = (struct kvs_fig_reader){r[i].desc, r[i].op, r[i].calls_per_step, r[i].bytes_per_step,
                                        r[i].ms_per_call, r[i].gbps};
        devices |= r[i].devices;
    }
    struct kvs_finding fd = {0};
    fd.id = "kv_full_buffer_read";
    fd.gpus = kvs_gpus_of(in->gpus, devices);
    /* as kv_full_buffer_cast's: high at 10% of the step's GPU time recoverable
     * or 20% of it in these ops */
    double busy = fig.busy_ms, ms = fig.gpu_ms_per_step;
    fd.severity = busy > 0 && (fig.saving_ms >= 0.1 * busy || ms >= 0.2 * busy) ? KVS_SEV_HIGH : KVS_SEV_WARN;
    fd.gpu_ms_per_step = fig.saving_ms;
    fd.bytes_per_step = fig.bytes_per_step;
    fd.needed_bytes_per_step = fig.needed_bytes_per_step;
    fd.group = -1;
    fd.capacity_tokens = capacity;
    fd.active_tokens = fig.active;
    fd.ops = ops;
    fd.nops = ops ? nr : 0;
    st = kvs_figures_full_read(ar, &fig, &fd);
    if (st == KVS_STATUS_OK)
        st = kvs_phrase_full_read(ar, &fig, &fd);
    free(fr);
    free(r);
    return st == KVS_STATUS_OK ? kvs_finding_push(out, &fd) : st;
}

enum kvs_status kvs_kv_full_reads(const struct kvs_stage_in *in, struct kvs_arena *ar, struct kvs_finding_list *out,
                                  bool *full_read)
{
    const struct kvs_trace_data *t = in->t;
    struct attn *at = NULL;
    size_t nat = 0, acap = 0;
    uint32_t *attn_of_key = calloc(t->nopkeys ? t->nopkeys : 1, sizeof *attn_of_key);
    enum kvs_status rc = attn_of_key ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
    for (size_t k = 0; k < t->nopkeys && rc == KVS_STATUS_OK; k++) {
        struct attn a;
        if (!attn_parse(t, (uint32_t)k, &a))
            continue;
        if (KVS_VEC_PUSH(at, nat, acap, a) < 0)
            rc = KVS_STATUS_NO_MEMORY;
        else
            attn_of_key[k] = (uint32_t)nat;
    }
    if (rc == KVS_STATUS_OK && nat)
        rc = measure(in, at, attn_of_key);
    /* capacities: the attention's, else a given one that copies match */
    for (size_t i = 0; i < nat && rc == KVS_STATUS_OK; i++)
        if (!judge(in, at, nat, &at[i]))
            at[i].capacity = 0;
    int64_t done[16];
    size_t ndone = 0;
    for (size_t i = 0; i < nat && rc == KVS_STATUS_OK; i++) {
        bool seen = false;
        for (size_t j = 0; j < ndone; j++)
            seen = seen || done[j] == at[i].capacity;
        if (!at[i].capacity || seen || ndone == sizeof done / sizeof done[0])
            continue;
        done[ndone++] = at[i].capacity;
        rc = one_finding(in, ar, at[i].capacity, at, nat, out, full_read);
    }
    /* copies of a buffer no attention here reads (an eager copy of a
     * buffer matched by match.c): the same finding, copies only */
    for (size_t gi = 0; gi < in->groups->n && rc == KVS_STATUS_OK; gi++) {
        const struct kvs_group_acc *g = &in->groups->v[gi];
        int64_t capacity = g->has_match ? g->match.capacity_tokens : 0;
        bool seen = false;
        for (size_t j = 0; j < ndone; j++)
            seen = seen || done[j] == capacity;
        if (capacity <= 0 || seen || ndone == sizeof done / sizeof done[0] ||
            !copies_buffer(in, g, capacity, at, nat))
            continue;
        done[ndone++] = capacity;
        rc = one_finding(in, ar, capacity, at, nat, out, full_read);
    }
    free(at);
    free(attn_of_key);
    return rc;
}
