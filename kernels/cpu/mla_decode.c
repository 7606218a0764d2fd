/* kernels/cpu/mla_decode.c — reference MLA decode attention (absorbed form)
 * in double precision: the specification kvs_cuda_mla_decode is checked
 * against. See kvscope/kernels.h for the formula and layouts.
 *
 *   meson test -C build test_kernels_ref
 */
#include <math.h>
#include <stdlib.h>

#include "convert_impl.h"
#include "kvscope/kernels.h"

static double kv_elem(const struct kvs_mla_args *a, size_t row, int j)
{
    size_t i = row * KVS_MLA_ROW + (size_t)j;
    if (a->kv_dtype == KVS_KV_FP8)
        return kvs_conv_fp8_to_float(((const kvs_fp8 *)a->kv)[i]);
    return kvs_conv_bf16_to_float(((const kvs_bf16 *)a->kv)[i]);
}

/* One sequence. Its rows are converted once into `rows` (n x 576 doubles)
 * when the caller could allocate that, else read in place. Softmax is the
 * plain two-pass form: scores first, then the weighted sum. */
static double row_elem(const struct kvs_mla_args *a, const double *rows, int t, size_t r, int j)
{
    return rows ? rows[(size_t)t * KVS_MLA_ROW + j] : kv_elem(a, r, j);
}

static void mla_one_head(const struct kvs_mla_args *a, int b, int h, const double *rows,
                         double *s)
{
    int t0 = a->seq_start[b], n = a->seq_start[b + 1] - t0;
    size_t bh = (size_t)b * a->heads + h;
    const kvs_bf16 *ql = a->q_latent + bh * KVS_MLA_LATENT;
    const kvs_bf16 *qr = a->q_rope + bh * KVS_MLA_ROPE;
    kvs_bf16 *out = a->out + bh * KVS_MLA_LATENT;
    if (n <= 0) {
        for (int d = 0; d < KVS_MLA_LATENT; d++)
            out[d] = 0;
        if (a->lse)
            a->lse[bh] = -INFINITY;
        return;
    }
    double m = -INFINITY;
    for (int t = 0; t < n; t++) {
        size_t r = a->tokens ? (size_t)a->tokens[t0 + t] : (size_t)(t0 + t);
        double dot = 0.0;
        for (int d = 0; d < KVS_MLA_LATENT; d++)
            dot += kvs_conv_bf16_to_float(ql[d]) * row_elem(a, rows, t, r, d);
        for (int d = 0; d < KVS_MLA_ROPE; d++)
            dot += kvs_conv_bf16_to_float(qr[d]) * row_elem(a, rows, t, r, KVS_MLA_LATENT + d);
        s[t] = (double)a->scale * dot;
        if (s[t] > m)
            m = s[t];
    }
    double sum = 0.0;
    for (int t = 0; t < n; t++) {
        s[t] = exp(s[t] - m);
        sum += s[t];
    }
    for (int d = 0; d < KVS_MLA_LATENT; d++) {
        double acc = 0.0;
        for (int t = 0; t < n; t++) {
            size_t r = a->tokens ? (size_t)a->tokens[t0 + t] : (size_t)(t0 + t);
            acc += s[t] * row_elem(a, rows, t, r, d);
        }
        out[d] = kvs_conv_float_to_bf16((float)(acc / sum));
    }
    if (a->lse)
        a->lse[bh] = (float)(m + log(sum));
}

void kvs_cpu_mla_decode(const struct kvs_mla_args *a)
{
    int maxn = 1;
    for (int b = 0; b < a->batch; b++) {
        int n = a->seq_start[b + 1] - a->seq_start[b];
        if (n > maxn)
            maxn = n;
    }
    /* s is needed (n doubles); the row cache only saves time */
    double *s = malloc((size_t)maxn * sizeof *s);
    double *rows = malloc((size_t)maxn * KVS_MLA_ROW * sizeof *rows);
    for (int b = 0; b < a->batch; b++) {
        int t0 = a->seq_start[b], n = a->seq_start[b + 1] - t0;
        if (rows) {
            for (int t = 0; t < n; t++) {
                size_t r = a->tokens ? (size_t)a->tokens[t0 + t] : (size_t)(t0 + t);
                for (int j = 0; j < KVS_MLA_ROW; j++)
                    rows[(size_t)t * KVS_MLA_ROW + j] = kv_elem(a, r, j);
            }
        }
        for (int h = 0; h < a->heads; h++) {
            if (s)
                mla_one_head(a, b, h, rows, s);
        }
    }
    free(rows);
    free(s);
}
