/* kernels/cpu/engine_ops.c — CPU references of the engine's own ops (engine/ops.h):
 * synthetic fills, the KV row append (and its form with the norm and RoPE
 * fused in), expert mapping with shared experts, the float-output linear.
 * The CUDA versions in kernels/cuda/engine_ops.cu are checked against these by
 * kernels/tests/gpu/test_kernels_engine_ops.c. Built into the engine's host
 * library (engine/meson.build): they take the engine's types. */
#include "ops.h"

#include "kvscope/check.h"
#include "synth.h"

void kvs_eng_cpu_fill_bf16(kvs_bf16 *dst, uint64_t n, uint64_t key, float amp, float offset)
{
    for (uint64_t i = 0; i < n; i++)
        dst[i] = kvs_synth_value_bf16(key, i, amp, offset);
}

void kvs_eng_cpu_fill_f32(float *dst, uint64_t n, uint64_t key, float amp, float offset)
{
    for (uint64_t i = 0; i < n; i++)
        dst[i] = kvs_synth_value_f32(key, i, amp, offset);
}

void kvs_eng_cpu_fill_kv(kvs_fp8 *pool, uint64_t rows, uint64_t key)
{
    for (uint64_t i = 0; i < rows * KVS_MLA_ROW; i++)
        pool[i] = kvs_synth_kv_fp8(key, i);
}

void kvs_eng_cpu_prefill_kv(kvs_fp8 *pool, const int32_t *table, int max_len, const int32_t *len,
                            int batch, uint64_t seed, int layer)
{
    for (int b = 0; b < batch; b++) {
        uint64_t key = kvs_synth_key(seed, KVS_SYNTH_ID_PREFILL(layer, b));
        for (int t = 0; t < len[b]; t++) {
            kvs_fp8 *row = pool + (size_t)table[(size_t)b * max_len + t] * KVS_MLA_ROW;
            for (int j = 0; j < KVS_MLA_ROW; j++)
                row[j] = kvs_synth_kv_fp8(key, (uint64_t)t * KVS_MLA_ROW + j);
        }
    }
}

void kvs_eng_cpu_kv_append(kvs_fp8 *pool, const int32_t *slot, const kvs_bf16 *latent,
                           const kvs_bf16 *rope, int batch)
{
    for (int b = 0; b < batch; b++) {
        kvs_fp8 *row = pool + (size_t)slot[b] * KVS_MLA_ROW;
        for (int j = 0; j < KVS_MLA_LATENT; j++)
            row[j] = kvs_float_to_fp8(kvs_bf16_to_float(latent[(size_t)b * KVS_MLA_LATENT + j]));
        for (int j = 0; j < KVS_MLA_ROPE; j++)
            row[KVS_MLA_LATENT + j] =
                kvs_float_to_fp8(kvs_bf16_to_float(rope[(size_t)b * KVS_MLA_ROPE + j]));
    }
}

void kvs_eng_cpu_kv_finish(kvs_fp8 *pool, const int32_t *slot, const kvs_bf16 *kv_raw,
                           const kvs_bf16 *norm_w, const kvs_bf16 *kv_rope, const int32_t *pos,
                           int batch, float eps, float theta)
{
    for (int b = 0; b < batch; b++) {
        kvs_bf16 lat[KVS_MLA_LATENT], rope[KVS_MLA_ROPE];
        kvs_cpu_rmsnorm(kv_raw + (size_t)b * KVS_MLA_LATENT, norm_w, lat, 1, KVS_MLA_LATENT, eps);
        for (int j = 0; j < KVS_MLA_ROPE; j++)
            rope[j] = kv_rope[(size_t)b * KVS_MLA_ROPE + j];
        kvs_cpu_rope_interleaved(rope, pos + b, 1, 1, KVS_MLA_ROPE, 0, KVS_MLA_ROPE, theta);
        kvs_eng_cpu_kv_append(pool, slot + b, lat, rope, 1);
    }
}

enum kvs_status kvs_eng_cpu_map_experts(const struct kvs_expert_map *m, const int32_t *ids,
                                        const float *w, int tokens, int32_t *out_ids, float *out_w)
{
    const int ke = m->topk + m->shared;
    for (int t = 0; t < tokens; t++) {
        KVS_TRY(kvs_expert_map_token(m, ids + (size_t)t * m->topk, out_ids + (size_t)t * ke));
        for (int k = 0; k < m->topk; k++)
            out_w[(size_t)t * ke + k] = w[(size_t)t * m->topk + k];
        for (int s = 0; s < m->shared; s++) {
            out_ids[(size_t)t * ke + m->topk + s] = m->resident + s;
            out_w[(size_t)t * ke + m->topk + s] = 1.0f;
        }
    }
    return KVS_STATUS_OK;
}

void kvs_eng_cpu_linear_f32(const kvs_bf16 *x, const kvs_bf16 *w, float *y, int m, int n, int k)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int l = 0; l < k; l++)
                acc += kvs_bf16_to_float(x[(size_t)i * k + l]) *
                       kvs_bf16_to_float(w[(size_t)j * k + l]);
            y[(size_t)i * n + j] = acc;
        }
}
