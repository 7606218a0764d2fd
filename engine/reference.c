/* engine/reference.c — the CPU reference decode (engine/reference.h): one
 * GLM-5-shaped decode step written out op by op with kernels/cpu's
 * references, in the order and with the BF16 rounding points of the GPU
 * engine (engine/gpu_step.c). Every KV path computes the same function (the
 * FP8 -> BF16 cast is exact), so there is one reference for all three.
 * Tested by tests/test_engine_ref.c; used by tests/gpu/test_engine_gpu.c. */
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/check.h"
#include "kvscope/kernels.h"
#include "layout.h"
#include "model.h"
#include "ops.h"
#include "synth.h"

#define KVS_REF_MAX_WEIGHT_BYTES 4000000000ull

struct kvs_ref {
    struct kvs_model_config c;
    struct kvs_expert_map em;
    uint64_t seed;
    int batch;
    void **w;            /* [(layers + 1) * KVS_W_COUNT_], global tensors at layer -1 */
    kvs_fp8 **pool;      /* [layers] of [capacity, 576] */
    struct kvs_slots *slots;
    struct kvs_seqs seqs;
    int32_t *ids;        /* [batch] this step's input tokens */
    int32_t *seq_start, *tokens;
    struct kvs_act_layout lay;
    unsigned char *act;  /* host copy of the GPU engine's activation arena */
    struct kvs_logger lg;
};

static void *W(const struct kvs_ref *r, int layer, enum kvs_wkind k)
{
    return r->w[(size_t)(layer + 1) * KVS_W_COUNT_ + k];
}

#define ACT(r, field, type) ((type *)((r)->act + (r)->lay.field))

void kvs_ref_free(struct kvs_ref *r)
{
    if (!r)
        return;
    if (r->w)
        for (size_t i = 0; i < (size_t)(r->c.layers + 1) * KVS_W_COUNT_; i++)
            free(r->w[i]);
    free(r->w);
    if (r->pool)
        for (int l = 0; l < r->c.layers; l++)
            free(r->pool[l]);
    free(r->pool);
    kvs_seqs_free(&r->seqs, r->slots);
    kvs_slots_free_all(r->slots);
    free(r->ids);
    free(r->seq_start);
    free(r->tokens);
    free(r->act);
    free(r);
}

static enum kvs_status make_weights(struct kvs_ref *r)
{
    int64_t n = kvs_model_weights(&r->c, r->em.resident, NULL, 0);
    struct kvs_wdesc *d = malloc((size_t)n * sizeof *d);
    r->w = calloc((size_t)(r->c.layers + 1) * KVS_W_COUNT_, sizeof *r->w);
    if (!d || !r->w) {
        free(d);
        return KVS_STATUS_NO_MEMORY;
    }
    kvs_model_weights(&r->c, r->em.resident, d, n);
    uint64_t total = 0;
    for (int64_t i = 0; i < n; i++)
        total += kvs_wdesc_bytes(&d[i]);
    if (total > KVS_REF_MAX_WEIGHT_BYTES) {
        kvs_log(&r->lg, KVS_LOG_ERROR,
                "the CPU reference decodes small configs only: %s has %.1f GB of weights",
                r->c.name, (double)total / 1e9);
        free(d);
        return KVS_STATUS_LIMIT;
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t elems = (uint64_t)kvs_wdesc_elems(&d[i]);
        void *p = malloc(kvs_wdesc_bytes(&d[i]));
        if (!p) {
            free(d);
            return KVS_STATUS_NO_MEMORY;
        }
        uint64_t key = kvs_synth_key(r->seed, d[i].id);
        if (d[i].elem_bytes == 4)
            kvs_eng_cpu_fill_f32(p, elems, key, d[i].amp, d[i].offset);
        else
            kvs_eng_cpu_fill_bf16(p, elems, key, d[i].amp, d[i].offset);
        r->w[(size_t)(d[i].layer + 1) * KVS_W_COUNT_ + d[i].kind] = p;
    }
    free(d);
    return KVS_STATUS_OK;
}

enum kvs_status kvs_ref_create(const struct kvs_model_config *c, const struct kvs_ref_params *p,
                               struct kvs_ref **out, const struct kvs_logger *lg)
{
    if (!c || !p || !out || p->batch < 1 || !p->context)
        return KVS_STATUS_INVALID_ARGUMENT;
    struct kvs_ref *r = calloc(1, sizeof *r);
    if (!r)
        return KVS_STATUS_NO_MEMORY;
    r->c = *c;
    r->seed = p->seed;
    r->batch = p->batch;
    r->lg = lg ? *lg : kvs_logger_stderr();
    enum kvs_status st = kvs_expert_map_init(c, p->resident_experts, &r->em);
    if (st == KVS_STATUS_OK)
        st = make_weights(r);
    if (st == KVS_STATUS_OK)
        st = kvs_slots_init(&r->slots, p->kv_capacity);
    if (st == KVS_STATUS_OK && p->scatter)
        kvs_slots_scatter(r->slots, p->seed);
    if (st == KVS_STATUS_OK)
        st = kvs_seqs_init(&r->seqs, r->slots, p->batch, p->context, p->steps);
    if (st != KVS_STATUS_OK) {
        kvs_ref_free(r);
        return st;
    }
    r->pool = calloc((size_t)c->layers, sizeof *r->pool);
    r->ids = malloc((size_t)p->batch * sizeof *r->ids);
    r->seq_start = malloc((size_t)(p->batch + 1) * sizeof *r->seq_start);
    r->tokens = malloc((size_t)p->batch * (size_t)r->seqs.max_len * sizeof *r->tokens);
    kvs_act_layout_compute(c, p->batch, &r->lay);
    r->act = calloc(1, r->lay.total);
    if (!r->pool || !r->ids || !r->seq_start || !r->tokens || !r->act) {
        kvs_ref_free(r);
        return KVS_STATUS_NO_MEMORY;
    }
    for (int l = 0; l < c->layers; l++) {
        r->pool[l] = malloc((size_t)p->kv_capacity * KVS_MLA_ROW);
        if (!r->pool[l]) {
            kvs_ref_free(r);
            return KVS_STATUS_NO_MEMORY;
        }
        kvs_eng_cpu_fill_kv(r->pool[l], (uint64_t)p->kv_capacity,
                            kvs_synth_key(p->seed, KVS_SYNTH_ID_KV(l)));
        kvs_eng_cpu_prefill_kv(r->pool[l], r->seqs.slot, r->seqs.max_len, r->seqs.len, p->batch,
                               p->seed, l);
    }
    for (int b = 0; b < p->batch; b++)
        r->ids[b] = kvs_synth_token(p->seed, b, c->vocab);
    *out = r;
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// one step

static void attention(struct kvs_ref *r, int l)
{
    const struct kvs_model_config *c = &r->c;
    const int B = r->batch, H = c->heads, nope = c->qk_nope_head_dim, v = c->v_head_dim;
    kvs_bf16 *x = ACT(r, x, kvs_bf16), *h = ACT(r, h, kvs_bf16);
    kvs_cpu_rmsnorm(x, W(r, l, KVS_W_ATTN_NORM), h, B, c->hidden, c->rms_eps);
    /* queries: q_a, its norm, q_b (nope rows, rope rows), RoPE on the rope part */
    kvs_cpu_linear(h, W(r, l, KVS_W_Q_A), ACT(r, q_a, kvs_bf16), B, c->q_lora_rank, c->hidden);
    kvs_cpu_rmsnorm(ACT(r, q_a, kvs_bf16), W(r, l, KVS_W_Q_A_NORM), ACT(r, q_an, kvs_bf16), B,
                    c->q_lora_rank, c->rms_eps);
    kvs_cpu_linear(ACT(r, q_an, kvs_bf16), W(r, l, KVS_W_Q_B_NOPE), ACT(r, q_nope, kvs_bf16), B,
                   H * nope, c->q_lora_rank);
    kvs_cpu_linear(ACT(r, q_an, kvs_bf16), W(r, l, KVS_W_Q_B_ROPE), ACT(r, q_rope, kvs_bf16), B,
                   H * KVS_MLA_ROPE, c->q_lora_rank);
    kvs_cpu_rope_interleaved(ACT(r, q_rope, kvs_bf16), ACT(r, pos, int32_t), B, H, KVS_MLA_ROPE, 0,
                             KVS_MLA_ROPE, c->rope_theta);
    /* the new token's KV row: latent (normed) and rope part, appended as FP8 */
    kvs_cpu_linear(h, W(r, l, KVS_W_KV_A_LAT), ACT(r, kv_raw, kvs_bf16), B, KVS_MLA_LATENT,
                   c->hidden);
    kvs_cpu_rmsnorm(ACT(r, kv_raw, kvs_bf16), W(r, l, KVS_W_KV_A_NORM), ACT(r, kv_lat, kvs_bf16),
                    B, KVS_MLA_LATENT, c->rms_eps);
    kvs_cpu_linear(h, W(r, l, KVS_W_KV_A_ROPE), ACT(r, kv_rope, kvs_bf16), B, KVS_MLA_ROPE,
                   c->hidden);
    kvs_cpu_rope_interleaved(ACT(r, kv_rope, kvs_bf16), ACT(r, pos, int32_t), B, 1, KVS_MLA_ROPE,
                             0, KVS_MLA_ROPE, c->rope_theta);
    kvs_eng_cpu_kv_append(r->pool[l], ACT(r, new_slot, int32_t), ACT(r, kv_lat, kvs_bf16),
                          ACT(r, kv_rope, kvs_bf16), B);
    /* absorb W_UK: q_latent[b,h] = q_nope[b,h] . W_UK[h]^T */
    const kvs_bf16 *uk = W(r, l, KVS_W_UK), *uv = W(r, l, KVS_W_UV);
    for (int b = 0; b < B; b++)
        for (int hd = 0; hd < H; hd++)
            kvs_cpu_linear(ACT(r, q_nope, kvs_bf16) + ((size_t)b * H + hd) * nope,
                           uk + (size_t)hd * KVS_MLA_LATENT * nope,
                           ACT(r, q_lat, kvs_bf16) + ((size_t)b * H + hd) * KVS_MLA_LATENT, 1,
                           KVS_MLA_LATENT, nope);
    struct kvs_mla_args a = {
        .batch = B, .heads = H, .q_latent = ACT(r, q_lat, kvs_bf16),
        .q_rope = ACT(r, q_rope, kvs_bf16), .kv_dtype = KVS_KV_FP8, .kv = r->pool[l],
        .seq_start = r->seq_start, .tokens = r->tokens, .scale = kvs_model_softmax_scale(c),
        .out = ACT(r, attn, kvs_bf16), .lse = NULL,
    };
    kvs_cpu_mla_decode(&a);
    /* W_UV per head, then o_proj and the residual */
    for (int b = 0; b < B; b++)
        for (int hd = 0; hd < H; hd++)
            kvs_cpu_linear(ACT(r, attn, kvs_bf16) + ((size_t)b * H + hd) * KVS_MLA_LATENT,
                           uv + (size_t)hd * v * KVS_MLA_LATENT,
                           ACT(r, vout, kvs_bf16) + ((size_t)b * H + hd) * v, 1, v,
                           KVS_MLA_LATENT);
    kvs_cpu_linear(ACT(r, vout, kvs_bf16), W(r, l, KVS_W_O), ACT(r, o, kvs_bf16), B, c->hidden,
                   H * v);
    kvs_cpu_add(x, ACT(r, o, kvs_bf16), (size_t)B * c->hidden);
}

/* Gap between the last chosen and the best unchosen router key. */
static float route_margin(const struct kvs_ref *r, const float *logits, const float *bias,
                          const int32_t *ids)
{
    const int E = r->c.n_routed_experts, k = r->c.topk;
    float last = INFINITY, best_out = -INFINITY;
    for (int e = 0; e < E; e++) {
        float key = 1.0f / (1.0f + expf(-logits[e])) + bias[e];
        int chosen = 0;
        for (int j = 0; j < k; j++)
            chosen |= ids[j] == e;
        if (chosen && key < last)
            last = key;
        if (!chosen && key > best_out)
            best_out = key;
    }
    return k < E ? last - best_out : INFINITY;
}

static enum kvs_status mlp(struct kvs_ref *r, int l, float *margin)
{
    const struct kvs_model_config *c = &r->c;
    const int B = r->batch;
    kvs_bf16 *x = ACT(r, x, kvs_bf16), *h = ACT(r, h, kvs_bf16), *o = ACT(r, o, kvs_bf16);
    kvs_cpu_rmsnorm(x, W(r, l, KVS_W_FFN_NORM), h, B, c->hidden, c->rms_eps);
    if (l < c->dense_layers) {
        kvs_cpu_linear(h, W(r, l, KVS_W_MLP_GATE_UP), ACT(r, gate_up, kvs_bf16), B, 2 * c->inter,
                       c->hidden);
        kvs_cpu_swiglu(ACT(r, gate_up, kvs_bf16), ACT(r, act, kvs_bf16), B, c->inter);
        kvs_cpu_linear(ACT(r, act, kvs_bf16), W(r, l, KVS_W_MLP_DOWN), o, B, c->hidden, c->inter);
    } else {
        float *logits = ACT(r, router, float);
        const float *bias = W(r, l, KVS_W_ROUTER_BIAS);
        kvs_eng_cpu_linear_f32(h, W(r, l, KVS_W_ROUTER), logits, B, c->n_routed_experts,
                               c->hidden);
        kvs_cpu_moe_route(logits, bias, B, c->n_routed_experts, c->topk, c->norm_topk,
                          c->routed_scale, ACT(r, topk_ids, int32_t), ACT(r, topk_w, float));
        for (int b = 0; b < B; b++) {
            float m = route_margin(r, logits + (size_t)b * c->n_routed_experts, bias,
                                   ACT(r, topk_ids, int32_t) + (size_t)b * c->topk);
            if (m < *margin)
                *margin = m;
        }
        KVS_TRY(kvs_eng_cpu_map_experts(&r->em, ACT(r, topk_ids, int32_t), ACT(r, topk_w, float),
                                        B, ACT(r, exp_ids, int32_t), ACT(r, exp_w, float)));
        struct kvs_moe_args m = {
            .tokens = B, .dim = c->hidden, .inter = c->moe_inter,
            .topk = c->topk + c->n_shared_experts, .n_resident = r->em.resident + r->em.shared,
            .x = h, .ids = ACT(r, exp_ids, int32_t), .weights = ACT(r, exp_w, float),
            .gate_up = W(r, l, KVS_W_EXP_GATE_UP), .down = W(r, l, KVS_W_EXP_DOWN), .y = o,
            .accumulate = 0,
        };
        kvs_cpu_moe_experts(&m);
    }
    kvs_cpu_add(x, o, (size_t)B * c->hidden);
    return KVS_STATUS_OK;
}

enum kvs_status kvs_ref_step(struct kvs_ref *r, float *logits, int32_t *tokens,
                             struct kvs_ref_margins *margins)
{
    const struct kvs_model_config *c = &r->c;
    const int B = r->batch;
    KVS_TRY(kvs_seqs_append(&r->seqs, r->slots, ACT(r, new_slot, int32_t), ACT(r, pos, int32_t)));
    kvs_seqs_csr(&r->seqs, r->seq_start, r->tokens);
    memcpy(ACT(r, ids, int32_t), r->ids, (size_t)B * sizeof *r->ids);

    kvs_cpu_embedding(W(r, -1, KVS_W_EMBED), ACT(r, ids, int32_t), ACT(r, x, kvs_bf16), B,
                      c->hidden);
    float route = INFINITY;
    for (int l = 0; l < c->layers; l++) {
        attention(r, l);
        KVS_TRY(mlp(r, l, &route));
    }
    kvs_cpu_rmsnorm(ACT(r, x, kvs_bf16), W(r, -1, KVS_W_FINAL_NORM), ACT(r, h, kvs_bf16), B,
                    c->hidden, c->rms_eps);
    float *lg = ACT(r, logits, float);
    kvs_eng_cpu_linear_f32(ACT(r, h, kvs_bf16), W(r, -1, KVS_W_LM_HEAD), lg, B, c->vocab,
                           c->hidden);
    kvs_cpu_argmax(lg, B, c->vocab, r->ids);

    float arg = INFINITY;
    for (int b = 0; b < B; b++) {
        const float *row = lg + (size_t)b * c->vocab;
        float best = row[r->ids[b]], second = -INFINITY;
        for (int v = 0; v < c->vocab; v++)
            if (v != r->ids[b] && row[v] > second)
                second = row[v];
        if (best - second < arg)
            arg = best - second;
    }
    if (logits)
        memcpy(logits, lg, (size_t)B * c->vocab * sizeof *logits);
    if (tokens)
        memcpy(tokens, r->ids, (size_t)B * sizeof *tokens);
    if (margins) {
        margins->route = route;
        margins->argmax = arg;
    }
    return KVS_STATUS_OK;
}
