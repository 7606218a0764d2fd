/* kernels/cpu/fp8w.c — references for FP8-weight projections and experts:
 * the block quantiser (128 x 128 blocks, one float scale each, the layout of
 * DeepSeek-V3 / GLM FP8 checkpoints), the GEMV and the routed experts on
 * dequantised weights. The CUDA versions (kernels/cuda/gemv_fp8w.cu,
 * kernels/cuda/moe_fp8w.cu) are checked against these.
 *
 *   meson test -C build test_kernels_fp8w            (unit: quantiser, references)
 *   meson test -C build --suite gpu test_kernels_fp8w_gpu
 */
#include <math.h>
#include <stdlib.h>

#include "convert_impl.h"
#include "kvscope/kernels.h"

#define F(x) kvs_conv_bf16_to_float(x)
#define BF(x) kvs_conv_float_to_bf16(x)
#define B KVS_FP8_BLOCK

static int blocks(int n) { return (n + B - 1) / B; }

/* w_real[r, c] of a block-scaled matrix with k columns */
static double deq(const kvs_fp8 *w, const float *scale, int k, int r, int c)
{
    return (double)kvs_conv_fp8_to_float(w[(size_t)r * k + c]) *
           scale[(size_t)(r / B) * blocks(k) + c / B];
}

void kvs_cpu_quantize_fp8_blocks(const float *w, int n, int k, kvs_fp8 *q, float *scale)
{
    for (int br = 0; br < blocks(n); br++)
        for (int bc = 0; bc < blocks(k); bc++) {
            int r1 = br * B + B < n ? br * B + B : n, c1 = bc * B + B < k ? bc * B + B : k;
            float amax = 0.0f;
            for (int r = br * B; r < r1; r++)
                for (int c = bc * B; c < c1; c++)
                    amax = fmaxf(amax, fabsf(w[(size_t)r * k + c]));
            float s = amax > 0.0f ? amax / 448.0f : 1.0f;
            scale[(size_t)br * blocks(k) + bc] = s;
            for (int r = br * B; r < r1; r++)
                for (int c = bc * B; c < c1; c++)
                    q[(size_t)r * k + c] = kvs_float_to_fp8(w[(size_t)r * k + c] / s);
        }
}

void kvs_cpu_gemv_fp8w(const kvs_bf16 *x, int64_t ldx, int m, int k,
                       const struct kvs_gemv_fp8w_out *outs, int nout, int y_f32)
{
    double *row = malloc((size_t)(k > 0 ? k : 1) * sizeof *row);
    if (!row)
        return;
    for (int o = 0; o < nout; o++)
        for (int r = 0; r < outs[o].n; r++) {
            for (int c = 0; c < k; c++)
                row[c] = deq(outs[o].w, outs[o].scale, k, r, c);
            for (int i = 0; i < m; i++) {
                double acc = 0.0;
                for (int c = 0; c < k; c++)
                    acc += (double)F(x[(size_t)i * ldx + c]) * row[c];
                size_t at = (size_t)i * outs[o].ldy + r;
                if (y_f32)
                    ((float *)outs[o].y)[at] = (float)acc;
                else
                    ((kvs_bf16 *)outs[o].y)[at] = BF((float)acc);
            }
        }
    free(row);
}

/* As kvs_cpu_moe_experts (kernels/cpu/moe.c), on dequantised weights. */
void kvs_cpu_moe_experts_fp8w(const struct kvs_moe_fp8w_args *a)
{
    float *h = malloc((size_t)a->inter * sizeof *h);
    double *acc = malloc((size_t)a->dim * sizeof *acc);
    if (!h || !acc) {
        free(h);
        free(acc);
        return;
    }
    const size_t gu_sc = (size_t)blocks(2 * a->inter) * blocks(a->dim);
    const size_t dn_sc = (size_t)blocks(a->dim) * blocks(a->inter);
    for (int t = 0; t < a->tokens; t++) {
        const kvs_bf16 *x = a->x + (size_t)t * a->dim;
        for (int i = 0; i < a->dim; i++)
            acc[i] = 0.0;
        for (int k = 0; k < a->topk; k++) {
            int e = a->ids[(size_t)t * a->topk + k];
            float wk = a->weights[(size_t)t * a->topk + k];
            if (e < 0 || e >= a->n_resident) /* as the CUDA kernels: adds nothing */
                continue;
            const kvs_fp8 *gu = a->gate_up + (size_t)e * 2 * a->inter * a->dim;
            const float *gus = a->gate_up_scale + (size_t)e * gu_sc;
            const kvs_fp8 *dn = a->down + (size_t)e * a->dim * a->inter;
            const float *dns = a->down_scale + (size_t)e * dn_sc;
            for (int i = 0; i < a->inter; i++) {
                double g = 0.0, u = 0.0;
                for (int j = 0; j < a->dim; j++) {
                    g += F(x[j]) * deq(gu, gus, a->dim, i, j);
                    u += F(x[j]) * deq(gu, gus, a->dim, a->inter + i, j);
                }
                float gb = F(BF((float)g)), ub = F(BF((float)u));
                h[i] = F(BF(gb / (1.0f + expf(-gb)) * ub));
            }
            for (int r = 0; r < a->dim; r++) {
                double d = 0.0;
                for (int i = 0; i < a->inter; i++)
                    d += deq(dn, dns, a->inter, r, i) * h[i];
                acc[r] += wk * d;
            }
        }
        kvs_bf16 *y = a->y + (size_t)t * a->dim;
        for (int i = 0; i < a->dim; i++)
            y[i] = BF(a->accumulate ? (float)(F(y[i]) + acc[i]) : (float)acc[i]);
    }
    free(h);
    free(acc);
}
