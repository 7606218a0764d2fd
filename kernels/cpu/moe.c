/* kernels/cpu/moe.c — reference MoE router (GLM-5 / DeepSeek-V3 noaux_tc with
 * one group) and reference routed experts at decode batch sizes.
 *
 *   meson test -C build test_kernels_ref
 */
#include <math.h>
#include <stdlib.h>

#include "convert_impl.h"
#include "kvscope/kernels.h"

#define F(x) kvs_conv_bf16_to_float(x)
#define BF(x) kvs_conv_float_to_bf16(x)

/* Selection is by s + bias, highest first, the lower expert index winning
 * ties; ids come out in that order. The weights use s without the bias. */
void kvs_cpu_moe_route(const float *logits, const float *bias, int tokens, int experts, int topk,
                       int norm_topk, float routed_scale, int32_t *ids, float *weights)
{
    for (int t = 0; t < tokens; t++) {
        const float *l = logits + (size_t)t * experts;
        int32_t *id = ids + (size_t)t * topk;
        float *w = weights + (size_t)t * topk;
        float sum = 0.0f;
        for (int k = 0; k < topk; k++) {
            int best = -1;
            float best_key = 0.0f;
            for (int e = 0; e < experts; e++) {
                int taken = 0;
                for (int j = 0; j < k; j++)
                    taken |= id[j] == e;
                if (taken)
                    continue;
                float key = 1.0f / (1.0f + expf(-l[e])) + (bias ? bias[e] : 0.0f);
                if (best < 0 || key > best_key) {
                    best = e;
                    best_key = key;
                }
            }
            id[k] = best;
            w[k] = 1.0f / (1.0f + expf(-l[best]));
            sum += w[k];
        }
        for (int k = 0; k < topk; k++) {
            if (norm_topk)
                w[k] /= sum + 1e-20f;
            w[k] *= routed_scale;
        }
    }
}

/* Intermediate roundings follow what a BF16 framework does: the gate and up
 * projections are BF16 tensors, so is their SwiGLU; each expert's down
 * projection stays in float and the weighted sum over the top-k is rounded
 * once at the end. */
void kvs_cpu_moe_experts(const struct kvs_moe_args *a)
{
    float *h = malloc((size_t)a->inter * sizeof *h);
    float *acc = malloc((size_t)a->dim * sizeof *acc);
    if (!h || !acc) {
        free(h);
        free(acc);
        return;
    }
    for (int t = 0; t < a->tokens; t++) {
        const kvs_bf16 *x = a->x + (size_t)t * a->dim;
        for (int i = 0; i < a->dim; i++)
            acc[i] = 0.0f;
        for (int k = 0; k < a->topk; k++) {
            int e = a->ids[(size_t)t * a->topk + k];
            float wk = a->weights[(size_t)t * a->topk + k];
            const kvs_bf16 *gu = a->gate_up + (size_t)e * 2 * a->inter * a->dim;
            const kvs_bf16 *dn = a->down + (size_t)e * a->dim * a->inter;
            for (int i = 0; i < a->inter; i++) {
                float g = 0.0f, u = 0.0f;
                for (int j = 0; j < a->dim; j++) {
                    g += F(gu[(size_t)i * a->dim + j]) * F(x[j]);
                    u += F(gu[(size_t)(a->inter + i) * a->dim + j]) * F(x[j]);
                }
                float gb = F(BF(g)), ub = F(BF(u));
                h[i] = F(BF(gb / (1.0f + expf(-gb)) * ub));
            }
            for (int r = 0; r < a->dim; r++) {
                float d = 0.0f;
                for (int i = 0; i < a->inter; i++)
                    d += F(dn[(size_t)r * a->inter + i]) * h[i];
                acc[r] += wk * d;
            }
        }
        kvs_bf16 *y = a->y + (size_t)t * a->dim;
        for (int i = 0; i < a->dim; i++)
            y[i] = BF(a->accumulate ? F(y[i]) + acc[i] : acc[i]);
    }
    free(h);
    free(acc);
}
