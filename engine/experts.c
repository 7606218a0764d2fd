/* engine/experts.c — mapping GLM-5's 256 logical routed experts onto the
 * experts kept resident per layer, so that a token reads as many expert
 * weights as in the real model (kvscope/engine.h says how). The CUDA version
 * of kvs_expert_map_token shares its code (engine/expert_map_impl.h). Tested by tests/test_engine_plan.c. */
#include "kvscope/engine.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "expert_map_impl.h"

enum kvs_status kvs_expert_map_init(const struct kvs_model_config *c, int resident,
                                    struct kvs_expert_map *out)
{
    if (!c || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (resident == 0)
        resident = c->topk;
    if (resident < c->topk || resident > c->n_routed_experts ||
        resident > KVS_EXPERT_MAP_MAX_RESIDENT)
        return KVS_STATUS_INVALID_ARGUMENT;
    out->n_logical = c->n_routed_experts;
    out->topk = c->topk;
    out->resident = resident;
    out->shared = c->n_shared_experts;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_expert_map_token(const struct kvs_expert_map *m, const int32_t *logical,
                                     int32_t *resident)
{
    return kvs_expert_map_token_impl(m->n_logical, m->topk, m->resident, logical, resident) == 0
               ? KVS_STATUS_OK
               : KVS_STATUS_INVALID_ARGUMENT;
}

double kvs_expected_distinct_experts(int n, int k, int batch)
{
    if (n <= 0 || k <= 0 || batch <= 0)
        return 0.0;
    return n * (1.0 - pow(1.0 - (double)k / n, batch));
}

size_t kvs_expert_map_describe(const struct kvs_expert_map *m, const struct kvs_model_config *c,
                               int batch, char *buf, size_t size)
{
    double expert_gb = 3.0 * c->hidden * (double)c->moe_inter * 2.0 / 1e9;
    double real = kvs_expected_distinct_experts(m->n_logical, m->topk, batch);
    /* this engine: at most `resident`, and a batch touches at most batch*topk */
    double ours = m->resident < (double)batch * m->topk ? m->resident : (double)batch * m->topk;
    int moe = kvs_model_moe_layers(c);
    if (m->resident >= m->n_logical) {
        return (size_t)snprintf(buf, size,
                                "experts: all %d routed experts resident per MoE layer (identity "
                                "map), plus %d shared\n",
                                m->n_logical, m->shared);
    }
    return (size_t)snprintf(
        buf, size,
        "experts: %d logical routed experts per MoE layer mapped onto %d resident (+%d shared):\n"
        "  resident = logical mod %d, probing to the next free one, so each token's %d choices\n"
        "  read %d distinct experts as in the real model (%.3f GB of weights per MoE layer at\n"
        "  batch 1). At batch %d the real model would read ~%.1f distinct experts per layer\n"
        "  (uniform routing: %.2f GB/layer, %.1f GB/step over %d MoE layers); this engine reads\n"
        "  at most %.0f (%.2f GB/layer, %.1f GB/step): expert traffic %s by %.1f GB/step.\n",
        m->n_logical, m->resident, m->shared, m->resident, m->topk, m->topk,
        (m->topk + m->shared) * expert_gb, batch, real, (real + m->shared) * expert_gb,
        (real + m->shared) * expert_gb * moe, moe, ours, (ours + m->shared) * expert_gb,
        (ours + m->shared) * expert_gb * moe, real > ours + 1e-9 ? "understated" : "unchanged",
        (real - ours) * expert_gb * moe);
}
