/* engine/ops.h — the few ops the engine needs that kernels.h does not have,
 * each as a plain CPU reference (kernels/cpu/engine_ops.c) and a CUDA launcher
 * (kernels/cuda/engine_ops.cu, CUDA builds only). Private to the engine.
 *
 * defines: kvs_eng_cpu_* and kvs_eng_cuda_* for: synthetic fills, the KV row
 *          append (BF16 -> FP8 into the pool; alone, and with the latent's
 *          norm and the rope part's RoPE before it, and with q_a's norm in the
 *          same launch), expert mapping with the shared experts appended (alone,
 *          and fused with the router), the float-output linear (router, LM head);
 *          kvs_eng_cuda_seq_step (device-side sequence append + token list)
 *
 * Launchers take device pointers and a stream (cudaStream_t as void *), and
 * never synchronise; those launched with programmatic dependent launch
 * (kv_finish, route_map) take the kernels' launch options too
 * (struct kvs_kernel_opts, kvscope/kernels.h). So a decode step built from
 * them can be captured in a CUDA graph.
 */
#ifndef KVSCOPE_ENGINE_OPS_H
#define KVSCOPE_ENGINE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "kvscope/engine.h"
#include "kvscope/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

// ----------------------------------------------------------------------------
// CPU references

/* dst[i] = synthetic value i of stream `key` (engine/synth.h). */
KVS_API void kvs_eng_cpu_fill_bf16(kvs_bf16 *dst, uint64_t n, uint64_t key, float amp,
                                   float offset);
KVS_API void kvs_eng_cpu_fill_f32(float *dst, uint64_t n, uint64_t key, float amp, float offset);
/* pool rows [rows, 576]: element i = kvs_synth_kv_fp8(key, i) */
KVS_API void kvs_eng_cpu_fill_kv(kvs_fp8 *pool, uint64_t rows, uint64_t key);

/* Prefill: row t < len[b] of sequence b, stored at slot table[b*max_len + t],
 * gets element t*576 + j of stream kvs_synth_key(seed, KVS_SYNTH_ID_PREFILL(layer, b)). */
KVS_API void kvs_eng_cpu_prefill_kv(kvs_fp8 *pool, const int32_t *table, int max_len,
                                    const int32_t *len, int batch, uint64_t seed, int layer);

/* pool[slot[b]] = fp8(latent[b, 0:512] | rope[b, 0:64]) */
KVS_API void kvs_eng_cpu_kv_append(kvs_fp8 *pool, const int32_t *slot, const kvs_bf16 *latent,
                                   const kvs_bf16 *rope, int batch);

/* The new KV row from kv_a's outputs in one op: the latent part normalised
 * (kvs_cpu_rmsnorm with norm_w), the rope part rotated at pos[b]
 * (kvs_cpu_rope_interleaved, one head of 64), each rounded to BF16 as those
 * ops round, then appended as kvs_eng_cpu_kv_append does. kv_raw is
 * [B, 512], kv_rope [B, 64]; neither is modified. */
KVS_API void kvs_eng_cpu_kv_finish(kvs_fp8 *pool, const int32_t *slot, const kvs_bf16 *kv_raw,
                                   const kvs_bf16 *norm_w, const kvs_bf16 *kv_rope,
                                   const int32_t *pos, int batch, float eps, float theta);

/* Map each token's top-k logical experts to resident ones (kvs_expert_map_token)
 * and append the shared experts (resident + 0 .. shared-1, weight 1):
 * out_ids/out_w are [tokens, topk + shared]. */
KVS_API enum kvs_status kvs_eng_cpu_map_experts(const struct kvs_expert_map *m, const int32_t *ids,
                                                const float *w, int tokens, int32_t *out_ids,
                                                float *out_w);

/* y[M,N] = x[M,K] . w[N,K]^T with float output (no BF16 rounding). */
KVS_API void kvs_eng_cpu_linear_f32(const kvs_bf16 *x, const kvs_bf16 *w, float *y, int m, int n,
                                    int k);

// ----------------------------------------------------------------------------
// CUDA launchers

KVS_API enum kvs_status kvs_eng_cuda_fill_bf16(kvs_bf16 *dst, uint64_t n, uint64_t key, float amp,
                                               float offset, void *stream);
KVS_API enum kvs_status kvs_eng_cuda_fill_f32(float *dst, uint64_t n, uint64_t key, float amp,
                                              float offset, void *stream);
KVS_API enum kvs_status kvs_eng_cuda_fill_kv(kvs_fp8 *pool, uint64_t rows, uint64_t key,
                                             void *stream);
KVS_API enum kvs_status kvs_eng_cuda_prefill_kv(kvs_fp8 *pool, const int32_t *table, int max_len,
                                                const int32_t *len, int batch, int64_t max_ctx,
                                                uint64_t seed, int layer, void *stream);
KVS_API enum kvs_status kvs_eng_cuda_kv_append(kvs_fp8 *pool, const int32_t *slot,
                                               const kvs_bf16 *latent, const kvs_bf16 *rope,
                                               int batch, void *stream);
/* Needs kv_raw and norm_w 16-byte aligned and kv_rope 4-byte aligned
 * (else KVS_STATUS_UNSUPPORTED). */
KVS_API enum kvs_status kvs_eng_cuda_kv_finish(kvs_fp8 *pool, const int32_t *slot,
                                               const kvs_bf16 *kv_raw, const kvs_bf16 *norm_w,
                                               const kvs_bf16 *kv_rope, const int32_t *pos,
                                               int batch, float eps, float theta,
                                               const struct kvs_kernel_opts *opts, void *stream);
/* kvs_eng_cuda_kv_finish and, in the same launch, q_out[b] = rmsnorm(q[b],
 * q_w) for b < batch (q [batch, q_dim], as kvs_cpu_rmsnorm): the decode
 * step's two norms of kv_a's and q_a's outputs in one launch. q = NULL: only
 * the KV row. KVS_STATUS_UNSUPPORTED unless
 * kvs_eng_cuda_kv_finish_qnorm_supported (q_dim a multiple of 8, <= 4096,
 * the three q pointers 16-byte aligned) and kv_finish's own alignment. */
KVS_API int kvs_eng_cuda_kv_finish_qnorm_supported(const kvs_bf16 *q, const kvs_bf16 *q_w,
                                                   const kvs_bf16 *q_out, int q_dim);
KVS_API enum kvs_status
kvs_eng_cuda_kv_finish_qnorm(kvs_fp8 *pool, const int32_t *slot, const kvs_bf16 *kv_raw,
                             const kvs_bf16 *norm_w, const kvs_bf16 *kv_rope, const int32_t *pos,
                             int batch, float eps, float theta, const kvs_bf16 *q,
                             const kvs_bf16 *q_w, kvs_bf16 *q_out, int q_dim,
                             const struct kvs_kernel_opts *opts, void *stream);
KVS_API enum kvs_status kvs_eng_cuda_map_experts(const struct kvs_expert_map *m,
                                                 const int32_t *ids, const float *w, int tokens,
                                                 int32_t *out_ids, float *out_w, void *stream);

/* The router and the expert map in one launch: logits [tokens, m->n_logical]
 * routed as kvs_cuda_moe_route(logits, bias, tokens, m->n_logical, m->topk,
 * norm, scale, ...), then mapped as kvs_eng_cuda_map_experts(m, ...) into
 * out_ids/out_w [tokens, m->topk + m->shared]. KVS_STATUS_UNSUPPORTED for
 * more than KVS_ENG_ROUTE_MAP_MAX_EXPERTS experts or
 * KVS_ENG_ROUTE_MAP_MAX_TOPK choices (use the two ops). */
#define KVS_ENG_ROUTE_MAP_MAX_EXPERTS 256
#define KVS_ENG_ROUTE_MAP_MAX_TOPK 32
KVS_API enum kvs_status kvs_eng_cuda_route_map(const struct kvs_expert_map *m, const float *logits,
                                               const float *bias, int tokens, int norm, float scale,
                                               int32_t *out_ids, float *out_w,
                                               const struct kvs_kernel_opts *opts, void *stream);

/* The device half of kvs_seqs_append + kvs_seqs_csr, so that a step needs
 * from the host only this step's new slots: for each sequence b,
 * table[b, len[b]] = new_slot[b], pos[b] = len[b], len[b] += 1; then the
 * CSR list of every held token: seq_start[batch+1], tokens[...] in sequence
 * order, padded with `pad_slot` up to `pad_to` entries (a fixed count for a
 * graph-captured gather; 0 = no padding). One block. */
KVS_API enum kvs_status kvs_eng_cuda_seq_step(int32_t *table, int max_len, int32_t *len,
                                              const int32_t *new_slot, int32_t *pos, int batch,
                                              int32_t *seq_start, int32_t *tokens, int64_t pad_to,
                                              int32_t pad_slot, void *stream);

/* Float-output linear through cuBLAS (BF16 inputs, float accumulation and
 * output): the router logits and the LM head. One context per stream. */
struct kvs_eng_blas;
KVS_API enum kvs_status kvs_eng_blas_init(struct kvs_eng_blas **out, void *stream,
                                          const struct kvs_logger *lg);
KVS_API void kvs_eng_blas_free(struct kvs_eng_blas *b);
KVS_API uint64_t kvs_eng_blas_workspace_bytes(void);
KVS_API enum kvs_status kvs_eng_cuda_linear_f32(struct kvs_eng_blas *b, const kvs_bf16 *x,
                                                const kvs_bf16 *w, float *y, int m, int n, int k);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ENGINE_OPS_H */
