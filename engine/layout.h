/* engine/layout.h — the per-step buffers of a decode step, as offsets into
 * one device allocation; the memory plan sizes it, the GPU engine carves it.
 * Private to the engine.
 *
 * defines: struct kvs_act_layout, kvs_act_layout_compute
 */
#ifndef KVSCOPE_ENGINE_LAYOUT_H
#define KVSCOPE_ENGINE_LAYOUT_H

#include <stdint.h>

#include "kvscope/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Byte offsets (256-aligned) into the activation arena; B = batch. */
struct kvs_act_layout {
    uint64_t x;          /* [B, hidden] bf16: the residual stream */
    uint64_t h;          /* [B, hidden] bf16: normed input of a sublayer */
    uint64_t q_a;        /* [B, q_lora] bf16 */
    uint64_t q_an;       /* [B, q_lora] bf16: q_a after its norm */
    uint64_t q_nope;     /* [B, H*nope] bf16 */
    uint64_t q_rope;     /* [B, H, 64] bf16 */
    uint64_t q_lat;      /* [B, H, 512] bf16: q_nope absorbed through W_UK */
    uint64_t kv_raw;     /* [B, 512] bf16: kv_a latent before its norm */
    uint64_t kv_lat;     /* [B, 512] bf16 */
    uint64_t kv_rope;    /* [B, 64] bf16 */
    uint64_t attn;       /* [B, H, 512] bf16 */
    uint64_t vout;       /* [B, H*v] bf16 */
    uint64_t o;          /* [B, hidden] bf16: a sublayer's output */
    uint64_t gate_up;    /* [B, 2*max(inter, moe_inter)] bf16 */
    uint64_t act;        /* [B, max(inter, moe_inter)] bf16 */
    uint64_t router;     /* [B, n_routed] float */
    uint64_t topk_ids;   /* [B, topk] int32: logical experts */
    uint64_t topk_w;     /* [B, topk] float */
    uint64_t exp_ids;    /* [B, topk + shared] int32: resident experts */
    uint64_t exp_w;      /* [B, topk + shared] float */
    uint64_t logits;     /* [B, vocab] float */
    uint64_t ids;        /* [B] int32: this step's input tokens, then the argmax */
    uint64_t pos;        /* [B] int32 */
    uint64_t new_slot;   /* [B] int32 */
    uint64_t total;
};

KVS_API void kvs_act_layout_compute(const struct kvs_model_config *c, int batch,
                                    struct kvs_act_layout *out);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ENGINE_LAYOUT_H */
