/* match.c — shape matching and roles (see match.h). Private to analyzers/. */
#include "match.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "dtypes.h"
#include "phrase.h"
#include "steps.h"

#define BUFFER_RATIO 8        /* capacity >= 8x the active tokens */
#define BUFFER_MIN_TOKENS 4096

/* a token count seen in the trace: the leading dim of a tensor, with the
 * dims after it (rank 0: a 1-D integer index list, which fits any rows) */
struct token_dim {
    int rank;
    int64_t rest[KVS_SHAPE_MAX_RANK - 1];
    int64_t tokens;
};

/* What matching reads, and what it writes: the groups it matches and
 * gives roles in place, the model facts. */
struct matching {
    const struct kvs_trace_data *t;
    const struct kvs_step_table *steps;
    const struct kvs_model *model; /* NULL: none */
    int64_t kv_capacity;           /* --kv-capacity, 0 none */
    struct kvs_arena *ar;
    struct kvs_group_table *groups;
    struct kvs_model_facts *mf;
};

/* calls per step of a group: calls in steps / steps, or all calls */
static double calls_per_step(const struct kvs_step_table *steps, const struct kvs_group_acc *g)
{
    return steps->n ? (double)g->calls_in_steps / (double)steps->n : (double)g->calls;
}

/* a * b, or -1 when that overflows or a factor is negative: recorded dims
 * are data, and no real row or token count comes near 2^63 */
static int64_t mul_dims(int64_t a, int64_t b)
{
    int64_t r;
    return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

/* elements per token row; -1 when not a sensible count */
static int64_t row_of(const int64_t *dims, int rank)
{
    int64_t r = 1;
    for (int i = 1; i < rank && i < KVS_SHAPE_MAX_RANK && r >= 0; i++)
        r = mul_dims(r, dims[i]);
    return r;
}

static bool is_index_dtype(const char *s, size_t n)
{
    size_t l;
    const char *d = kvs_dtype_short(s, n, &l);
    return (l == 8 && !memcmp(d, "long int", 8)) || (l == 3 && !memcmp(d, "int", 3)) ||
           (l == 5 && !memcmp(d, "int64", 5)) || (l == 5 && !memcmp(d, "int32", 5));
}

/* every (row, leading dim) pair in the trace's recorded shapes */
static enum kvs_status collect_token_dims(const struct matching *m, struct token_dim **out, size_t *nout)
{
    const struct kvs_trace_data *t = m->t;
    uint32_t nstr = kvs_intern_count(&t->strings);
    uint8_t *done = calloc(nstr / 8 + 1, 1);
    struct token_dim *v = NULL;
    size_t n = 0, cap = 0;
    if (!done)
        return KVS_STATUS_NO_MEMORY;
    for (size_t k = 0; k < t->nopkeys; k++) {
        uint32_t sh = t->opkeys[k].shape;
        if (!sh || (done[sh / 8] & (1u << (sh % 8))))
            continue;
        done[sh / 8] |= (uint8_t)(1u << (sh % 8));
        struct kvs_shape s;
        kvs_shape_parse(kvs_intern_str(&t->strings, sh), kvs_intern_len(&t->strings, sh), &s);
        for (int i = 0; i < s.n; i++) {
            struct token_dim d;
            memset(&d, 0, sizeof d);
            if (s.rank[i] >= 2 && s.rank[i] <= KVS_SHAPE_MAX_RANK) {
                d.rank = s.rank[i];
                memcpy(d.rest, s.dims[i] + 1, sizeof(int64_t) * (size_t)(s.rank[i] - 1));
                d.tokens = s.dims[i][0];
            } else if (s.rank[i] == 1 && is_index_dtype(s.dtype[i], s.dtype_len[i])) {
                d.tokens = s.dims[i][0];
            } else {
                continue;
            }
            if (d.tokens <= 1 || KVS_VEC_PUSH(v, n, cap, d) < 0) {
                if (d.tokens <= 1)
                    continue;
                free(v);
                free(done);
                return KVS_STATUS_NO_MEMORY;
            }
        }
    }
    free(done);
    *out = v;
    *nout = n;
    return KVS_STATUS_OK;
}

/* The largest token count below `tokens` seen with exactly the same
 * trailing dims ([1024,1,576] beside [131072,1,576]) or as an index list.
 * Exact dims, not just the same row size, keep weights out: a [6144,576]
 * projection has 576-wide rows but is no list of tokens. */
static int64_t active_tokens(const struct token_dim *d, size_t n, const int64_t *dims, int rank,
                             int64_t tokens)
{
    int64_t best = 0;
    for (size_t i = 0; i < n; i++) {
        bool same = d[i].rank == 0 ||
                    (d[i].rank == rank && !memcmp(d[i].rest, dims + 1, sizeof(int64_t) * (size_t)(rank - 1)));
        if (same && d[i].tokens < tokens && d[i].tokens > best)
            best = d[i].tokens;
    }
    return best;
}

/* A gather lists the rows it takes: a 1-D integer index list as long as the
 * group's leading dim means the tensor holds exactly the gathered (active)
 * rows — gather_cast [[4099,1,576],[4099,1,576],[4099]] — never a whole
 * buffer. */
static bool gathers_its_rows(const struct kvs_shape *s, int64_t tokens)
{
    for (int i = 1; i < s->n; i++)
        if (s->rank[i] == 1 && s->dims[i][0] == tokens && is_index_dtype(s->dtype[i], s->dtype_len[i]))
            return true;
    return false;
}

/* A preallocated buffer keeps its size. Another group of the same op, rows
 * and dtypes whose leading dim is within 1/8 of this one's means the dim is a
 * live count that grows as tokens are decoded ([4099,1,576], [4100,1,576],
 * ...), not a capacity. Pools of different sizes (a sliding window beside a
 * full one) are further apart than that. */
/* x has s's tensors, dtypes and dims, except the leading dims that are
 * s's token count */
static bool same_but_tokens(const struct kvs_shape *s, const struct kvs_shape *x, int64_t tokens)
{
    if (x->n != s->n)
        return false;
    for (int k = 0; k < s->n; k++) {
        if (x->rank[k] != s->rank[k] || x->dtype_len[k] != s->dtype_len[k] ||
            memcmp(x->dtype[k], s->dtype[k], s->dtype_len[k]))
            return false;
        int rank = s->rank[k] < KVS_SHAPE_MAX_RANK ? s->rank[k] : KVS_SHAPE_MAX_RANK;
        for (int d = 0; d < rank; d++)
            if (x->dims[k][d] != s->dims[k][d] && !(d == 0 && s->dims[k][0] == tokens))
                return false;
    }
    return true;
}

/* A preallocated buffer keeps its size. Another group of the same op, rows
 * and dtypes whose leading dim is within 1/8 of this one's means the dim is a
 * live count that grows as tokens are decoded ([4099,1,576], [4100,1,576],
 * ...), not a capacity. Pools of different sizes (a sliding window beside a
 * full one) are further apart than that. */
static bool has_near_sibling(const struct matching *m, const struct kvs_group_acc *g)
{
    const struct kvs_shape *s = &g->shape_info;
    int64_t tokens = s->dims[0][0];
    for (size_t i = 0; i < m->groups->n; i++) {
        const struct kvs_group_acc *o = &m->groups->v[i];
        if (o == g || o->bare || o->op_name != g->op_name || o->shape_info.n == 0 ||
            o->shape_info.rank[0] != s->rank[0])
            continue;
        int64_t other = o->shape_info.dims[0][0];
        /* |other - tokens| * 8 < tokens, divided rather than multiplied: dims
         * are data and may be near 2^63 (both are positive here) */
        if (other != tokens && other > 0 && llabs(other - tokens) <= (tokens - 1) / BUFFER_RATIO &&
            same_but_tokens(s, &o->shape_info, tokens))
            return true;
    }
    return false;
}

/* A KV pool is the tensor a copy or cast moves (the group's op copies or
 * casts, or its kernels were sized from their launch as a cast), held in the
 * cache's own precision. Not a KV pool: the activation of a GEMM that a
 * memset ran under (aten::mm [8944,2816] in the H100 Qwen trace), or a
 * float32 table cast down once per use (a RoPE cos/sin cache,
 * triton_poi_fused__to_copy_1 [131072,64] float -> BFloat16 in the vLLM
 * capture): no serving engine keeps its KV cache in 32-bit floats. */
static bool plays_kv_role(const struct matching *m, const struct kvs_group_acc *g)
{
    const struct kvs_shape *s = &g->shape_info;
    if (!kvs_op_is_copy(kvs_intern_str(&m->t->strings, g->op_name)))
        return false;
    for (int i = 0; i < s->n && i < 2; i++) {
        size_t l;
        const char *d = kvs_dtype_short(s->dtype[i], s->dtype_len[i], &l);
        if ((l == 5 && !memcmp(d, "float", 5)) || (l == 7 && !memcmp(d, "float32", 7)) ||
            (l == 5 && !memcmp(d, "Float", 5)))
            return false;
    }
    return true;
}

/* layer ranges per step (or distinct layer names); -1 when memory ran out */
static int count_layers(const struct matching *m)
{
    const struct kvs_trace_data *t = m->t;
    regex_t re;
    if (regcomp(&re, "^(model[.])?(layers?|decoder[._ ]?layers?|blocks?|h)[._ #:-]?[0-9]+$",
                REG_EXTENDED | REG_NOSUB | REG_ICASE))
        return 0;
    uint32_t nstr = kvs_intern_count(&t->strings);
    uint8_t *verdict = calloc(nstr ? nstr : 1, 1);
    if (!verdict) {
        regfree(&re);
        return -1;
    }
    size_t hits = 0, distinct = 0;
    for (size_t i = 0; i < t->nranges; i++) {
        uint32_t nm = t->ranges[i].name;
        if (!verdict[nm]) {
            verdict[nm] = regexec(&re, kvs_intern_str(&t->strings, nm), 0, NULL, 0) == 0 ? 1 : 2;
            if (verdict[nm] == 1)
                distinct++;
        }
        if (verdict[nm] == 1 && m->steps->n && kvs_step_at(m->steps, t->ranges[i].ts) >= 0)
            hits++;
    }
    free(verdict);
    regfree(&re);
    if (m->steps->n)
        return (int)llround((double)hits / (double)m->steps->n);
    return (int)distinct;
}

/* what a row of `row` elements is, by the model's dimensions (phrase.c
 * names it) */
static enum kvs_row_kind row_kind(const struct kvs_model *m, const int64_t *dims, int rank)
{
    int64_t row = row_of(dims, rank);
    if (m->mla && m->qk_rope_head_dim && row == m->kv_lora_rank + m->qk_rope_head_dim)
        return KVS_ROW_LATENT_ROPE;
    if (m->mla && row == m->kv_lora_rank)
        return KVS_ROW_LATENT;
    if (m->index_head_dim && row == m->index_head_dim)
        return KVS_ROW_INDEXER;
    if (!m->mla && m->kv_heads && m->head_dim) {
        if (row == m->kv_heads * m->head_dim)
            return KVS_ROW_KV_HEADS;
        if (row == 2 * m->kv_heads * m->head_dim)
            return KVS_ROW_K_AND_V;
    }
    return KVS_ROW_NONE;
}

/* What a group does, independent of its name and token count, so that
 * compare pairs the same work across a fix and across engines: the kind
 * (cast: the first two dtypes differ; copy: they do not), the dtype pair
 * (destination <- source) and the rows — the model's name for them when it
 * has one, else the first tensor's dims with the token dim as '*'.
 * `aten::copy_ [[131072,1,576],[131072,1,576]]` and
 * `kvs::gather_cast_fp8_to_bf16 [[4099,1,576],[4099,1,576],[4099]]` are
 * both "cast BFloat16<-Float8_e4m3fn [*,1,576]". Activities no copy/cast op
 * launched (a bare memcpy, a memcpy under another op) keep their name. */
static void make_role(const struct matching *m, struct kvs_group_acc *g)
{
    const struct kvs_trace_data *t = m->t;
    const char *op = kvs_intern_str(&t->strings, g->op_name);
    const struct kvs_shape *s = &g->shape_info;
    if ((g->bare && !g->launch_sized) || s->n == 0) {
        g->role = kvs_arena_strdup(m->ar, op);
        return;
    }
    bool copy_op = kvs_op_is_copy(op);
    const char *kind = op;
    if (copy_op) {
        size_t a = 0, b = 0;
        const char *x = kvs_dtype_short(s->dtype[0], s->dtype_len[0], &a);
        const char *y = s->n > 1 ? kvs_dtype_short(s->dtype[1], s->dtype_len[1], &b) : x;
        kind = s->n > 1 && (a != b || memcmp(x, y, a)) ? "cast" : "copy";
        if (s->n == 1)
            kind = "copy";
    }
    g->role = kvs_phrase_role(m->ar, kind, s, copy_op ? g->row_meaning : NULL);
}

static void match_one(const struct matching *m, struct kvs_group_acc *g, const struct token_dim *td, size_t ntd)
{
    const struct kvs_shape *s = &g->shape_info;
    if ((g->bare && !g->launch_sized) || s->n == 0 || s->rank[0] < 2 || s->rank[0] > KVS_SHAPE_MAX_RANK)
        return;
    const int64_t *dims = s->dims[0];
    int rank = s->rank[0];
    int64_t tokens = dims[0];
    int64_t row = row_of(dims, rank);
    double cps = calls_per_step(m->steps, g);
    enum kvs_row_kind rk = m->model != NULL ? row_kind(m->model, dims, rank) : KVS_ROW_NONE;
    bool row_ok = rk != KVS_ROW_NONE;
    /* paged layouts: [blocks, block_size, ...row] */
    if ((m->model != NULL) && !row_ok && rank >= 3) {
        int64_t sub[KVS_SHAPE_MAX_RANK];
        sub[0] = mul_dims(dims[0], dims[1]);
        for (int i = 2; i < rank; i++)
            sub[i - 1] = dims[i];
        if (sub[0] >= 0 && (rk = row_kind(m->model, sub, rank - 1)) != KVS_ROW_NONE) {
            row_ok = true;
            tokens = sub[0];
            row = row_of(sub, rank - 1);
        }
    }
    int64_t active = tokens == dims[0] ? active_tokens(td, ntd, dims, rank, tokens) : 0;
    bool per_layer = m->mf->layers > 0 && fabs(cps - m->mf->layers) < 0.01;
    bool capacity = m->kv_capacity > 0 && tokens == m->kv_capacity;
    bool inferred = false;
    /* Inference is the fallback: a given capacity is the only capacity, and
     * with a model only the model's KV rows can be a KV buffer. It is also
     * conservative: the buffer is touched in every step, is not what a
     * gather produced, and keeps its size from step to step. */
    bool may_infer = m->kv_capacity <= 0 && (!(m->model != NULL) || row_ok) && !m->mf->backward &&
                     tokens >= BUFFER_MIN_TOKENS && cps >= 1 &&
                     (!m->steps->n || g->steps_with_calls == (int64_t)m->steps->n) &&
                     !gathers_its_rows(s, dims[0]) && !has_near_sibling(m, g) && plays_kv_role(m, g);
    if (may_infer) {
        if (active > 0 && tokens / BUFFER_RATIO >= active) /* tokens >= 8 x active, without overflow */
            inferred = true;
        else if (active == 0 && tokens >= 16 * BUFFER_MIN_TOKENS && per_layer)
            inferred = true;
        /* sized from its launches (a graph replay records no shapes, so no
         * active-token count can be seen): a cast of the model's own KV rows,
         * of at least 64K of them, in every step */
        else if (active == 0 && tokens >= 16 * BUFFER_MIN_TOKENS && g->launch_sized && row_ok &&
                 (g->launch.k.load_cast || g->launch.k.src_dtype != g->launch.k.dst_dtype))
            inferred = true;
    }
    if (!row_ok && !capacity && !inferred)
        return;
    if (row_ok)
        g->row_meaning = kvs_phrase_row_meaning(m->ar, rk, m->model);
    g->has_match = true;
    g->match.label = kvs_phrase_match_label(m->ar,
                                            capacity   ? KVS_TOKENS_CAPACITY
                                            : inferred ? KVS_TOKENS_INFERRED
                                                       : KVS_TOKENS_PLAIN,
                                            row_ok ? g->row_meaning : NULL, row);
    g->match.capacity_tokens = capacity || inferred ? tokens : 0;
    g->match.row_dim = row;
    g->match.per_layer = per_layer;
    g->match.inferred = !capacity && (inferred || !(m->model != NULL));
    g->active_tokens = capacity || inferred ? active : 0;
}

/* autograd's engine runs a backward pass only in training, where there is no
 * KV cache: a [4096, 2798] batch copied every step is a batch, not a pool
 * (HTA's negative_queue_length trace: 11 such "KV buffers" otherwise) */
static bool runs_backward(const struct matching *m)
{
    static const char prefix[] = "autograd::engine::evaluate_function";
    for (size_t k = 0; k < m->t->nopkeys; k++)
        if (!strncmp(kvs_intern_str(&m->t->strings, m->t->opkeys[k].name), prefix, sizeof prefix - 1))
            return true;
    return false;
}

enum kvs_status kvs_match_groups(const struct kvs_stage_in *in, const struct kvs_model *model,
                                 int64_t kv_capacity, struct kvs_arena *ar,
                                 struct kvs_group_table *groups, struct kvs_model_facts *mf)
{
    const struct matching match = {in->t, in->steps, model, kv_capacity, ar, groups, mf};
    const struct matching *m = &match;
    m->mf->backward = runs_backward(m);
    m->mf->layers = (m->model != NULL) ? m->model->layers : 0;
    m->mf->layers_inferred = false;
    if (!m->mf->layers) {
        m->mf->layers = count_layers(m);
        if (m->mf->layers < 0)
            return KVS_STATUS_NO_MEMORY;
        m->mf->layers_inferred = m->mf->layers > 0;
    }
    struct token_dim *td = NULL;
    size_t ntd = 0;
    enum kvs_status st = collect_token_dims(m, &td, &ntd);
    if (st != KVS_STATUS_OK)
        return st;
    for (size_t i = 0; i < m->groups->n; i++) {
        match_one(m, &m->groups->v[i], td, ntd);
        make_role(m, &m->groups->v[i]);
    }
    free(td);
    return KVS_STATUS_OK;
}
