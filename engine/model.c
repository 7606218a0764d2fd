/* engine/model.c — the table of the engine's weight tensors (engine/model.h):
 * shapes, plan groups and the scale of their synthetic values.
 *
 * Scales keep activations bounded through 78 layers: a Linear weight with
 * fan-in K is uniform in +-sqrt(3/K) (variance 1/K, so an RMS-normalised
 * input gives unit-variance outputs); norm weights are 1 +- 1/16; the router
 * bias is small beside the sigmoid scores; embedding rows are uniform in +-1. */
#include "model.h"

#include <math.h>

const char *kvs_wkind_name(enum kvs_wkind k)
{
    static const char *const names[KVS_W_COUNT_] = {
        [KVS_W_EMBED] = "embed_tokens",        [KVS_W_FINAL_NORM] = "norm",
        [KVS_W_LM_HEAD] = "lm_head",           [KVS_W_ATTN_NORM] = "input_layernorm",
        [KVS_W_Q_A] = "q_a_proj",              [KVS_W_Q_A_NORM] = "q_a_layernorm",
        [KVS_W_Q_B_NOPE] = "q_b_proj.nope",    [KVS_W_Q_B_ROPE] = "q_b_proj.rope",
        [KVS_W_KV_A_LAT] = "kv_a_proj.latent", [KVS_W_KV_A_ROPE] = "kv_a_proj.rope",
        [KVS_W_KV_A_NORM] = "kv_a_layernorm",  [KVS_W_UK] = "kv_b_proj.w_uk",
        [KVS_W_UV] = "kv_b_proj.w_uv",         [KVS_W_O] = "o_proj",
        [KVS_W_FFN_NORM] = "post_attention_layernorm",
        [KVS_W_MLP_GATE_UP] = "mlp.gate_up_proj", [KVS_W_MLP_DOWN] = "mlp.down_proj",
        [KVS_W_ROUTER] = "mlp.gate",           [KVS_W_ROUTER_BIAS] = "mlp.gate.e_score_correction_bias",
        [KVS_W_EXP_GATE_UP] = "mlp.experts.gate_up_proj",
        [KVS_W_EXP_DOWN] = "mlp.experts.down_proj",
    };
    return (int)k >= 0 && k < KVS_W_COUNT_ ? names[k] : "unknown";
}

uint64_t kvs_model_weight_id(int layer, enum kvs_wkind k)
{
    return ((uint64_t)(layer + 1) << 8) | (uint64_t)k;
}

struct table {
    struct kvs_wdesc *out;
    int64_t max, n;
};

static void add(struct table *t, enum kvs_wkind kind, enum kvs_wgroup group, int layer,
                int64_t count, int64_t rows, int64_t cols, int elem_bytes, float amp, float offset)
{
    if (t->out && t->n < t->max) {
        struct kvs_wdesc *d = &t->out[t->n];
        d->kind = kind;
        d->group = group;
        d->layer = layer;
        d->count = count;
        d->rows = rows;
        d->cols = cols;
        d->elem_bytes = elem_bytes;
        d->amp = amp;
        d->offset = offset;
        d->id = kvs_model_weight_id(layer, kind);
    }
    t->n++;
}

static float fan_in(int64_t k)
{
    return (float)sqrt(3.0 / (double)k);
}

static void add_linear(struct table *t, enum kvs_wkind kind, enum kvs_wgroup group, int layer,
                       int64_t count, int64_t rows, int64_t cols)
{
    add(t, kind, group, layer, count, rows, cols, 2, fan_in(cols), 0.0f);
}

static void add_norm(struct table *t, enum kvs_wkind kind, int layer, int64_t dim)
{
    add(t, kind, KVS_WG_NORMS, layer, 1, 1, dim, 2, 1.0f / 16.0f, 1.0f);
}

int64_t kvs_model_weights(const struct kvs_model_config *c, int resident, struct kvs_wdesc *out,
                          int64_t max)
{
    struct table t = {out, max, 0};
    const int64_t h = c->hidden, H = c->heads, lat = c->kv_lora_rank, rope = c->qk_rope_head_dim;
    add(&t, KVS_W_EMBED, KVS_WG_EMBEDDING, -1, 1, c->vocab, h, 2, 1.0f, 0.0f);
    add_norm(&t, KVS_W_FINAL_NORM, -1, h);
    add_linear(&t, KVS_W_LM_HEAD, KVS_WG_LM_HEAD, -1, 1, c->vocab, h);
    for (int l = 0; l < c->layers; l++) {
        add_norm(&t, KVS_W_ATTN_NORM, l, h);
        add_linear(&t, KVS_W_Q_A, KVS_WG_ATTENTION, l, 1, c->q_lora_rank, h);
        add_norm(&t, KVS_W_Q_A_NORM, l, c->q_lora_rank);
        add_linear(&t, KVS_W_Q_B_NOPE, KVS_WG_ATTENTION, l, 1, H * c->qk_nope_head_dim,
                   c->q_lora_rank);
        add_linear(&t, KVS_W_Q_B_ROPE, KVS_WG_ATTENTION, l, 1, H * rope, c->q_lora_rank);
        add_linear(&t, KVS_W_KV_A_LAT, KVS_WG_ATTENTION, l, 1, lat, h);
        add_linear(&t, KVS_W_KV_A_ROPE, KVS_WG_ATTENTION, l, 1, rope, h);
        add_norm(&t, KVS_W_KV_A_NORM, l, lat);
        add_linear(&t, KVS_W_UK, KVS_WG_ATTENTION, l, H, lat, c->qk_nope_head_dim);
        add_linear(&t, KVS_W_UV, KVS_WG_ATTENTION, l, H, c->v_head_dim, lat);
        add_linear(&t, KVS_W_O, KVS_WG_ATTENTION, l, 1, h, H * c->v_head_dim);
        add_norm(&t, KVS_W_FFN_NORM, l, h);
        if (l < c->dense_layers) {
            add_linear(&t, KVS_W_MLP_GATE_UP, KVS_WG_DENSE_MLP, l, 1, 2 * (int64_t)c->inter, h);
            add_linear(&t, KVS_W_MLP_DOWN, KVS_WG_DENSE_MLP, l, 1, h, c->inter);
        } else {
            int64_t n = (int64_t)resident + c->n_shared_experts;
            add_linear(&t, KVS_W_ROUTER, KVS_WG_ROUTERS, l, 1, c->n_routed_experts, h);
            add(&t, KVS_W_ROUTER_BIAS, KVS_WG_ROUTERS, l, 1, 1, c->n_routed_experts, 4,
                1.0f / 32.0f, 0.0f);
            add_linear(&t, KVS_W_EXP_GATE_UP, KVS_WG_MOE_EXPERTS, l, n, 2 * (int64_t)c->moe_inter,
                       h);
            add_linear(&t, KVS_W_EXP_DOWN, KVS_WG_MOE_EXPERTS, l, n, h, c->moe_inter);
        }
    }
    return t.n;
}
