/* kernels/cpu/decode_ops.c — reference versions of the small ops of a GLM-5
 * decode step: RMSNorm (alone and after the residual add), interleaved RoPE,
 * SwiGLU, residual add, embedding, argmax and the BF16 linear layer. Float
 * arithmetic, one rounding to BF16 at the end of each output element (RoPE
 * angles in double: positions reach 10^5 and a float angle would be off by
 * ~10^-2 rad there).
 *
 *   meson test -C build test_kernels_ref
 */
#include <math.h>

#include "convert_impl.h"
#include "kvscope/kernels.h"

#define F(x) kvs_conv_bf16_to_float(x)
#define BF(x) kvs_conv_float_to_bf16(x)

void kvs_cpu_rmsnorm(const kvs_bf16 *x, const kvs_bf16 *w, kvs_bf16 *y, int tokens, int dim,
                     float eps)
{
    for (int t = 0; t < tokens; t++) {
        const kvs_bf16 *xr = x + (size_t)t * dim;
        float ss = 0.0f;
        for (int i = 0; i < dim; i++)
            ss += F(xr[i]) * F(xr[i]);
        float inv = 1.0f / sqrtf(ss / (float)dim + eps);
        for (int i = 0; i < dim; i++)
            y[(size_t)t * dim + i] = BF(F(xr[i]) * inv * F(w[i]));
    }
}

void kvs_cpu_add_rmsnorm(kvs_bf16 *x, const kvs_bf16 *r, const kvs_bf16 *w, kvs_bf16 *y,
                         int tokens, int dim, float eps)
{
    kvs_cpu_add(x, r, (size_t)tokens * (size_t)dim);
    kvs_cpu_rmsnorm(x, w, y, tokens, dim, eps);
}

void kvs_cpu_rope_interleaved(kvs_bf16 *x, const int32_t *pos, int tokens, int heads, int stride,
                              int offset, int dim, float theta)
{
    for (int t = 0; t < tokens; t++) {
        for (int i = 0; i < dim / 2; i++) {
            double ang = (double)pos[t] * pow((double)theta, -2.0 * i / dim);
            float c = (float)cos(ang), s = (float)sin(ang);
            for (int h = 0; h < heads; h++) {
                kvs_bf16 *p = x + ((size_t)t * heads + h) * stride + offset + 2 * i;
                float a = F(p[0]), b = F(p[1]);
                p[0] = BF(a * c - b * s);
                p[1] = BF(a * s + b * c);
            }
        }
    }
}

void kvs_cpu_swiglu(const kvs_bf16 *gate_up, kvs_bf16 *out, int tokens, int inter)
{
    for (int t = 0; t < tokens; t++) {
        const kvs_bf16 *g = gate_up + (size_t)t * 2 * inter;
        for (int i = 0; i < inter; i++) {
            float gv = F(g[i]);
            out[(size_t)t * inter + i] = BF(gv / (1.0f + expf(-gv)) * F(g[inter + i]));
        }
    }
}

void kvs_cpu_add(kvs_bf16 *x, const kvs_bf16 *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = BF(F(x[i]) + F(y[i]));
}

void kvs_cpu_embedding(const kvs_bf16 *table, const int32_t *ids, kvs_bf16 *out, int tokens,
                       int dim)
{
    for (int t = 0; t < tokens; t++)
        for (int i = 0; i < dim; i++)
            out[(size_t)t * dim + i] = table[(size_t)ids[t] * dim + i];
}

/* NaN ranks above every number (as torch.argmax does); ties go to the lower
 * index. */
void kvs_cpu_argmax(const float *logits, int tokens, int vocab, int32_t *ids)
{
    for (int t = 0; t < tokens; t++) {
        const float *l = logits + (size_t)t * vocab;
        int best = 0;
        for (int v = 1; v < vocab; v++) {
            if (isnan(l[best]))
                break;
            if (isnan(l[v]) || l[v] > l[best])
                best = v;
        }
        ids[t] = best;
    }
}

void kvs_cpu_linear(const kvs_bf16 *x, const kvs_bf16 *w, kvs_bf16 *y, int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int l = 0; l < k; l++)
                acc += F(x[(size_t)i * k + l]) * F(w[(size_t)j * k + l]);
            y[(size_t)i * n + j] = BF(acc);
        }
}
