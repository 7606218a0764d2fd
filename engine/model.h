/* engine/model.h — the engine's weight tensors: one table that the memory
 * plan sizes, the GPU engine allocates and fills, and the CPU reference
 * regenerates. Private to the engine.
 *
 * defines: enum kvs_wkind, struct kvs_wdesc, kvs_model_weights, kvs_wkind_name,
 *          kvs_model_weight_id, kvs_wdesc_elems, kvs_wdesc_bytes
 *
 * Layout choices (the bytes and the arithmetic are those of GLM-5's weights;
 * only the row order within a projection is ours, which synthetic weights are
 * free to choose):
 *   q_b is split into its nope rows [H*nope, q_lora] and rope rows
 *   [H*rope, q_lora], and kv_a into latent rows [512, hidden] and rope rows
 *   [64, hidden], so every output lands contiguous with no copy kernel;
 *   kv_b is stored as its two absorbed halves: W_UK per head as a Linear
 *   weight [512, nope] (q_nope -> latent) and W_UV per head [v, 512];
 *   a MoE layer's experts are [resident + shared, ...], shared ones last.
 */
#ifndef KVSCOPE_ENGINE_MODEL_H
#define KVSCOPE_ENGINE_MODEL_H

#include <stdint.h>

#include "kvscope/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

enum kvs_wkind {
    /* global */
    KVS_W_EMBED = 0,   /* [vocab, hidden] */
    KVS_W_FINAL_NORM,  /* [hidden] */
    KVS_W_LM_HEAD,     /* [vocab, hidden] */
    /* every layer: attention */
    KVS_W_ATTN_NORM,   /* [hidden] */
    KVS_W_Q_A,         /* [q_lora, hidden] */
    KVS_W_Q_A_NORM,    /* [q_lora] */
    KVS_W_Q_B_NOPE,    /* [H*nope, q_lora] */
    KVS_W_Q_B_ROPE,    /* [H*rope, q_lora] */
    KVS_W_KV_A_LAT,    /* [512, hidden] */
    KVS_W_KV_A_ROPE,   /* [64, hidden] */
    KVS_W_KV_A_NORM,   /* [512] */
    KVS_W_UK,          /* H x [512, nope] */
    KVS_W_UV,          /* H x [v, 512] */
    KVS_W_O,           /* [hidden, H*v] */
    KVS_W_FFN_NORM,    /* [hidden] */
    /* dense layers */
    KVS_W_MLP_GATE_UP, /* [2*inter, hidden] */
    KVS_W_MLP_DOWN,    /* [hidden, inter] */
    /* MoE layers */
    KVS_W_ROUTER,      /* [n_routed, hidden] */
    KVS_W_ROUTER_BIAS, /* [n_routed] float: e_score_correction_bias */
    KVS_W_EXP_GATE_UP, /* (resident+shared) x [2*moe_inter, hidden] */
    KVS_W_EXP_DOWN,    /* (resident+shared) x [hidden, moe_inter] */
    KVS_W_COUNT_
};

/* Which line of the memory plan a tensor is counted in. */
enum kvs_wgroup {
    KVS_WG_EMBEDDING = 0,
    KVS_WG_LM_HEAD,
    KVS_WG_ATTENTION,
    KVS_WG_DENSE_MLP,
    KVS_WG_MOE_EXPERTS,
    KVS_WG_ROUTERS,
    KVS_WG_NORMS,
};

struct kvs_wdesc {
    enum kvs_wkind kind;
    enum kvs_wgroup group;
    int layer;          /* -1 for global tensors */
    int64_t count;      /* stacked matrices (heads or experts), 1 otherwise */
    int64_t rows, cols; /* of one matrix */
    int elem_bytes;     /* 2 (BF16) or 4 (float) */
    float amp, offset;  /* value = fmaf(u, amp, offset), u uniform in [-1, 1) */
    uint64_t id;        /* synthetic stream id */
};

KVS_API const char *kvs_wkind_name(enum kvs_wkind k);
KVS_API uint64_t kvs_model_weight_id(int layer, enum kvs_wkind k);

static inline int64_t kvs_wdesc_elems(const struct kvs_wdesc *d)
{
    return d->count * d->rows * d->cols;
}
static inline uint64_t kvs_wdesc_bytes(const struct kvs_wdesc *d)
{
    return (uint64_t)kvs_wdesc_elems(d) * (uint64_t)d->elem_bytes;
}

/* Every weight tensor of config `c` with `resident` routed experts kept per
 * MoE layer, global ones first, then layer by layer. Writes up to `max`
 * entries into out (may be NULL) and returns how many there are. */
KVS_API int64_t kvs_model_weights(const struct kvs_model_config *c, int resident,
                                  struct kvs_wdesc *out, int64_t max);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ENGINE_MODEL_H */
