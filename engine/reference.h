/* engine/reference.h — the CPU reference decode of a small config (the tiny
 * one): the same synthetic weights, KV rows, slots and rounding points as the
 * GPU engine, written with kernels/cpu's references. The gpu suite compares
 * the GPU engine's logits and greedy tokens with it. Private to the engine.
 *
 * defines: struct kvs_ref_params, struct kvs_ref_margins, struct kvs_ref,
 *          kvs_ref_create, kvs_ref_step, kvs_ref_free
 */
#ifndef KVSCOPE_ENGINE_REFERENCE_H
#define KVSCOPE_ENGINE_REFERENCE_H

#include <stdint.h>

#include "kvscope/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kvs_ref_params {
    int batch;
    const int64_t *context;  /* [batch] prefill tokens per sequence */
    int steps;               /* decode steps to make room for */
    int64_t kv_capacity;
    uint64_t seed;
    int resident_experts;    /* 0: topk */
    int scatter;             /* shuffle the free slots first (kvs_slots_scatter) */
};

/* How close a step came to a tie, so that tests can tell kernel error from
 * tie-breaking: the smallest gap between the last chosen and the best
 * unchosen router key (sigmoid score + bias) over every token and MoE layer,
 * and the smallest gap between the best and second-best logit. */
struct kvs_ref_margins {
    float route;
    float argmax;
};

struct kvs_ref;

/* Refuses configs whose weights exceed 4 GB (this is a reference, not an
 * engine): KVS_STATUS_LIMIT. */
KVS_API enum kvs_status kvs_ref_create(const struct kvs_model_config *c,
                                       const struct kvs_ref_params *p, struct kvs_ref **out,
                                       const struct kvs_logger *lg);
/* One decode step for every sequence: logits [batch, vocab] (may be NULL),
 * the greedy tokens [batch] (which the next step consumes), margins (may be
 * NULL). KVS_STATUS_LIMIT when the sequences have no room left. */
KVS_API enum kvs_status kvs_ref_step(struct kvs_ref *r, float *logits, int32_t *tokens,
                                     struct kvs_ref_margins *margins);
KVS_API void kvs_ref_free(struct kvs_ref *r);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ENGINE_REFERENCE_H */
