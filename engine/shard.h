/* engine/shard.h — which elements of a weight tensor one tensor-parallel
 * rank holds (kvscope/engine_tp.h says what is split), so that each rank
 * fills exactly its slice of the synthetic full tensor. Private to the
 * engine; included by plain C and by CUDA (.cu) files.
 *
 * defines: struct kvs_shard, kvs_shard_index, kvs_tp_shard, kvs_shard_is_whole,
 *          kvs_eng_cpu_fill_bf16_shard, kvs_eng_cuda_fill_bf16_shard
 *
 * A rank's tensor is [count, rows, cols] (its kvs_wdesc); its element
 * (k, i, j) is element kvs_shard_index(s, k, i, j) of the full tensor
 * [count_g, rows_g, cols_g], whose value is synthetic value number `index`
 * of the tensor's stream (engine/synth.h). So rank slices concatenate to
 * the full tensor bit for bit, and the CPU reference of the full model
 * stays the reference of every rank count.
 */
#ifndef KVSCOPE_ENGINE_SHARD_H
#define KVSCOPE_ENGINE_SHARD_H

#include <stdint.h>

#include "kvscope/engine_tp.h"
#include "kvscope/kernels.h"
#include "model.h"

#ifdef __CUDACC__
#define KVS_SHARD_FN static __host__ __device__ __forceinline__
#else
#define KVS_SHARD_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct kvs_shard {
    int64_t count_g;        /* matrices (heads, experts) in the full tensor */
    int64_t rows_g, cols_g; /* one matrix of the full tensor */
    int64_t count_off;      /* the rank's first matrix (head) in the full stack */
    /* local row i -> full row row_off + (i / row_block) * row_stride + i % row_block:
     * one block of rows (q_b's rows of some heads), or a gate block and an up
     * block of a gate_up matrix (row_block = the rank's intermediate rows) */
    int64_t row_off, row_block, row_stride;
    int64_t col_off;        /* local column j -> full column col_off + j */
};

KVS_SHARD_FN int64_t kvs_shard_index(const struct kvs_shard *s, int64_t k, int64_t i, int64_t j)
{
    int64_t row = s->row_off + (i / s->row_block) * s->row_stride + i % s->row_block;
    return ((s->count_off + k) * s->rows_g + row) * s->cols_g + s->col_off + j;
}

/* Rank `rank`'s part of the full model's tensor `full` (an entry of
 * kvs_model_weights(&p->full, ...)): its descriptor (shape of the slice;
 * kind, layer, scale and stream id of the full tensor) and the map. */
KVS_API void kvs_tp_shard(const struct kvs_tp_plan *p, int rank, const struct kvs_wdesc *full,
                          struct kvs_wdesc *local, struct kvs_shard *shard);

/* 1 when the rank holds the whole tensor (replicated, or world 1). */
KVS_API int kvs_shard_is_whole(const struct kvs_wdesc *local, const struct kvs_shard *s);

/* dst (the rank's [count, rows, cols], BF16) = its slice of the synthetic
 * full tensor of stream `key`. */
KVS_API void kvs_eng_cpu_fill_bf16_shard(kvs_bf16 *dst, const struct kvs_wdesc *local,
                                         const struct kvs_shard *s, uint64_t key);
/* The same on the GPU (CUDA builds; engine/cuda/shard_fill.cu). */
KVS_API enum kvs_status kvs_eng_cuda_fill_bf16_shard(kvs_bf16 *dst, const struct kvs_wdesc *local,
                                                     const struct kvs_shard *s, uint64_t key,
                                                     void *stream);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ENGINE_SHARD_H */
