/* engine/plan.c — the memory plan (printed before anything is allocated), the
 * largest KV capacity that fits, the activation layout, and the bytes a
 * decode step moves. Host only; tested by tests/test_engine_plan.c. */
#include "kvscope/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "model.h"

/* 512 latent + 64 rope: the row of the KV pool (kvs_model_config_parse
 * refuses anything else). */
#define KVS_ROW 576u

static uint64_t align256(uint64_t x)
{
    return (x + 255u) & ~(uint64_t)255u;
}

// ----------------------------------------------------------------------------
// activations

void kvs_act_layout_compute(const struct kvs_model_config *c, int batch, struct kvs_act_layout *o)
{
    const uint64_t B = (uint64_t)batch, H = (uint64_t)c->heads;
    const uint64_t ff = (uint64_t)(c->inter > c->moe_inter ? c->inter : c->moe_inter);
    const uint64_t ke = (uint64_t)(c->topk + c->n_shared_experts);
    uint64_t at = 0;
#define PLACE(field, bytes)                                                                       \
    do {                                                                                          \
        o->field = at;                                                                            \
        at += align256((uint64_t)(bytes));                                                        \
    } while (0)
    PLACE(x, B * c->hidden * 2);
    PLACE(h, B * c->hidden * 2);
    PLACE(q_a, B * c->q_lora_rank * 2);
    PLACE(q_an, B * c->q_lora_rank * 2);
    PLACE(q_nope, B * H * c->qk_nope_head_dim * 2);
    PLACE(q_rope, B * H * c->qk_rope_head_dim * 2);
    PLACE(q_lat, B * H * c->kv_lora_rank * 2);
    PLACE(kv_raw, B * c->kv_lora_rank * 2);
    PLACE(kv_lat, B * c->kv_lora_rank * 2);
    PLACE(kv_rope, B * c->qk_rope_head_dim * 2);
    PLACE(attn, B * H * c->kv_lora_rank * 2);
    PLACE(vout, B * H * c->v_head_dim * 2);
    PLACE(o, B * c->hidden * 2);
    PLACE(gate_up, B * 2 * ff * 2);
    PLACE(act, B * ff * 2);
    PLACE(router, B * c->n_routed_experts * 4);
    PLACE(topk_ids, B * c->topk * 4);
    PLACE(topk_w, B * c->topk * 4);
    PLACE(exp_ids, B * ke * 4);
    PLACE(exp_w, B * ke * 4);
    PLACE(logits, B * c->vocab * 4);
    PLACE(ids, B * 4);
    PLACE(pos, B * 4);
    PLACE(new_slot, B * 4);
#undef PLACE
    o->total = at;
}

// ----------------------------------------------------------------------------
// plan

enum kvs_status kvs_mem_plan_compute(const struct kvs_model_config *c,
                                     const struct kvs_run_shape *s, struct kvs_mem_plan *out,
                                     const struct kvs_logger *lg)
{
    if (!c || !s || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (s->batch < 1 || s->steps < 0 || s->context_tokens < 0 || s->max_context < 0 ||
        s->kv_capacity < 1 || (int)s->path < 0 || s->path >= KVS_KV_PATH_COUNT_) {
        kvs_log(lg, KVS_LOG_ERROR, "memory plan: batch, steps, context and capacity must be "
                                   "positive (batch %d, steps %d, capacity %lld)",
                s->batch, s->steps, (long long)s->kv_capacity);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    struct kvs_expert_map em;
    if (kvs_expert_map_init(c, s->resident_experts, &em) != KVS_STATUS_OK) {
        kvs_log(lg, KVS_LOG_ERROR, "memory plan: %d resident experts is outside [%d, %d]",
                s->resident_experts, c->topk, c->n_routed_experts);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    struct kvs_mem_plan p;
    memset(&p, 0, sizeof p);
    p.resident_experts = em.resident;
    p.active_bound = s->context_tokens + (int64_t)s->batch * s->steps;
    if (p.active_bound > s->kv_capacity) {
        kvs_log(lg, KVS_LOG_ERROR,
                "KV capacity %lld tokens is too small: %d sequence%s of up to %lld tokens plus %d "
                "decode steps need %lld slots",
                (long long)s->kv_capacity, s->batch, s->batch == 1 ? "" : "s",
                (long long)s->max_context, s->steps, (long long)p.active_bound);
        return KVS_STATUS_INVALID_ARGUMENT;
    }

    int64_t n = kvs_model_weights(c, em.resident, NULL, 0);
    struct kvs_wdesc *w = malloc((size_t)n * sizeof *w);
    if (!w)
        return KVS_STATUS_NO_MEMORY;
    kvs_model_weights(c, em.resident, w, n);
    for (int64_t i = 0; i < n; i++) {
        uint64_t bytes = align256(kvs_wdesc_bytes(&w[i]));
        switch (w[i].group) {
        case KVS_WG_EMBEDDING: p.embedding += bytes; break;
        case KVS_WG_LM_HEAD: p.lm_head += bytes; break;
        case KVS_WG_ATTENTION: p.attention += bytes; break;
        case KVS_WG_DENSE_MLP: p.dense_mlp += bytes; break;
        case KVS_WG_MOE_EXPERTS: p.moe_experts += bytes; break;
        case KVS_WG_ROUTERS: p.routers += bytes; break;
        case KVS_WG_NORMS: p.norms += bytes; break;
        }
    }
    free(w);
    p.tensors = n;
    p.weights = p.embedding + p.lm_head + p.attention + p.dense_mlp + p.moe_experts + p.routers +
                p.norms;

    const uint64_t cap = (uint64_t)s->kv_capacity, L = (uint64_t)c->layers;
    p.kv_pool = L * align256(cap * KVS_ROW);
    p.bytes_per_capacity_token = L * KVS_ROW;
    if (s->path == KVS_KV_PATH_FULL_CAST) {
        p.kv_scratch = align256(cap * KVS_ROW * 2);
        p.bytes_per_capacity_token += KVS_ROW * 2;
    } else if (s->path == KVS_KV_PATH_ACTIVE_CAST) {
        p.kv_scratch = align256((uint64_t)p.active_bound * KVS_ROW * 2);
    }
    /* slot table [B, longest + steps], length [B], CSR list, seq_start [B+1] */
    const uint64_t B = (uint64_t)s->batch;
    p.kv_index = align256(B * (uint64_t)(s->max_context + s->steps) * 4) + align256(B * 4) +
                 align256((uint64_t)p.active_bound * 4) + align256((B + 1) * 4);
    struct kvs_act_layout act;
    kvs_act_layout_compute(c, s->batch, &act);
    p.activations = act.total;
    p.workspace = s->workspace_bytes;
    p.total = p.weights + p.kv_pool + p.kv_scratch + p.kv_index + p.activations + p.workspace;
    *out = p;
    return KVS_STATUS_OK;
}

int64_t kvs_mem_plan_max_capacity(const struct kvs_mem_plan *p, int64_t capacity, uint64_t budget)
{
    uint64_t per = p->bytes_per_capacity_token;
    uint64_t variable = per * (uint64_t)capacity;
    uint64_t fixed = p->total > variable ? p->total - variable : 0;
    if (per == 0 || budget <= fixed)
        return 0;
    /* alignment padding of the pool rows is at most 256 bytes per layer: keep a page spare */
    uint64_t room = budget - fixed;
    room = room > 65536 ? room - 65536 : 0;
    int64_t max = (int64_t)(room / per);
    return max / 64 * 64;
}

// ----------------------------------------------------------------------------
// text

#define GB(x) ((double)(x) / 1e9)

struct text {
    char *buf;
    size_t size, len;
};

static void line(struct text *t, const char *label, uint64_t bytes)
{
    size_t room = t->len < t->size ? t->size - t->len : 0;
    int n = snprintf(room ? t->buf + t->len : NULL, room, "  %-56s %9.2f GB\n", label, GB(bytes));
    t->len += n > 0 ? (size_t)n : 0;
}

size_t kvs_mem_plan_format(const struct kvs_mem_plan *p, const struct kvs_model_config *c,
                           const struct kvs_run_shape *s, char *buf, size_t size)
{
    struct text t = {buf, size, 0};
    char label[128];
    if (size)
        buf[0] = '\0';
    int n = snprintf(buf, size, "memory plan (%s, kv-path %s, batch %d, KV capacity %lld tokens):\n",
                     c->name, kvs_kv_path_name(s->path), s->batch, (long long)s->kv_capacity);
    t.len = n > 0 ? (size_t)n : 0;
    snprintf(label, sizeof label, "weights (BF16, %lld tensors)", (long long)p->tensors);
    line(&t, label, p->weights);
    snprintf(label, sizeof label, "  embedding [%d, %d]", c->vocab, c->hidden);
    line(&t, label, p->embedding);
    snprintf(label, sizeof label, "  attention (%d layers, absorbed MLA)", c->layers);
    line(&t, label, p->attention);
    snprintf(label, sizeof label, "  dense MLP (%d layers)", c->dense_layers);
    line(&t, label, p->dense_mlp);
    snprintf(label, sizeof label, "  MoE experts (%d layers x %d resident + %d shared)",
             kvs_model_moe_layers(c), p->resident_experts, c->n_shared_experts);
    line(&t, label, p->moe_experts);
    snprintf(label, sizeof label, "  routers (%d layers)", kvs_model_moe_layers(c));
    line(&t, label, p->routers);
    line(&t, "  norms", p->norms);
    snprintf(label, sizeof label, "  LM head [%d, %d]", c->vocab, c->hidden);
    line(&t, label, p->lm_head);
    snprintf(label, sizeof label, "KV pool (FP8 e4m3, %d x %lld x 576)", c->layers,
             (long long)s->kv_capacity);
    line(&t, label, p->kv_pool);
    if (s->path == KVS_KV_PATH_FULL_CAST)
        snprintf(label, sizeof label, "KV scratch (one layer's pool in BF16, %lld x 576)",
                 (long long)s->kv_capacity);
    else if (s->path == KVS_KV_PATH_ACTIVE_CAST)
        snprintf(label, sizeof label, "KV scratch (active tokens in BF16, up to %lld x 576)",
                 (long long)p->active_bound);
    else
        snprintf(label, sizeof label, "KV scratch (none: attention reads the FP8 pool)");
    line(&t, label, p->kv_scratch);
    line(&t, "KV slot tables and token lists", p->kv_index);
    line(&t, "activations and logits", p->activations);
    line(&t, "kernel workspaces", p->workspace);
    line(&t, "total", p->total);
    return t.len;
}

// ----------------------------------------------------------------------------
// bytes per step

void kvs_step_bytes_compute(const struct kvs_model_config *c, enum kvs_kv_path path, int batch,
                            int64_t active, int64_t capacity, int routed_read,
                            struct kvs_step_bytes *out)
{
    memset(out, 0, sizeof *out);
    const double h = c->hidden, L = c->layers, row = KVS_ROW;
    const double expert = 3.0 * h * c->moe_inter * 2.0;
    const double H = c->heads, nope = c->qk_nope_head_dim, rope = c->qk_rope_head_dim,
                 lat = c->kv_lora_rank, v = c->v_head_dim, q = c->q_lora_rank;
    double attn = (q * h + q * H * (nope + rope) + (lat + rope) * h + H * lat * nope +
                   H * v * lat + h * H * v) * 2.0 + (2.0 * h + q + lat) * 2.0;
    double dense = 3.0 * h * c->inter * 2.0;
    double moe_fixed = c->n_routed_experts * h * 2.0 + c->n_routed_experts * 4.0;
    out->routed_read = routed_read;
    out->weights = L * attn + c->dense_layers * dense +
                   kvs_model_moe_layers(c) * (moe_fixed + (routed_read + c->n_shared_experts) * expert) +
                   (double)batch * h * 2.0 + (double)c->vocab * h * 2.0 + h * 2.0;
    const double a = (double)active;
    switch (path) {
    case KVS_KV_PATH_FULL_CAST:
        out->kv_cast = L * (double)capacity * row * 3.0;
        out->kv_attention = L * a * row * 2.0;
        break;
    case KVS_KV_PATH_ACTIVE_CAST:
        out->kv_cast = L * a * (row * 3.0 + 4.0);
        out->kv_attention = L * a * row * 2.0;
        break;
    default:
        out->kv_attention = L * a * row;
        break;
    }
    /* new rows; the token list attention reads (all but active-cast, whose
     * attention reads contiguous rows); building the list once a step */
    out->kv_other = L * (double)batch * row + (path == KVS_KV_PATH_ACTIVE_CAST ? 0.0 : L * a * 4.0) +
                    a * 8.0;
    out->total = out->weights + out->kv_attention + out->kv_cast + out->kv_other;
}
