/* engine/cuda/shard_fill.cu — a tensor-parallel rank's slice of a synthetic
 * weight tensor (engine/shard.h): element (k, i, j) of the slice gets the
 * value of its index in the full tensor. CPU reference:
 * kvs_eng_cpu_fill_bf16_shard (engine/tp_plan.c); checked against it by
 * kernels/tests/gpu/test_kernels_engine_ops.c.
 *
 *   meson test -C build --suite gpu test_kernels_engine_ops
 * Runs once per weight at engine creation, so it is written for clarity:
 * one block per group of rows, threads across the row's columns (no 64-bit
 * division per element).
 */
#include <cuda_runtime.h>

#include "kvscope/check.h"
#include "shard.h"
#include "synth.h"

__global__ void fill_shard_kernel(kvs_bf16 *dst, int64_t rows_total, int64_t rows, int64_t cols,
                                  struct kvs_shard s, uint64_t key, float amp, float offset)
{
    for (int64_t r = blockIdx.x; r < rows_total; r += gridDim.x) {
        const int64_t k = r / rows, i = r - k * rows;
        const int64_t base = kvs_shard_index(&s, k, i, 0);
        kvs_bf16 *out = dst + r * cols;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            out[j] = kvs_synth_value_bf16(key, (uint64_t)(base + j), amp, offset);
    }
}

extern "C" enum kvs_status kvs_eng_cuda_fill_bf16_shard(kvs_bf16 *dst, const struct kvs_wdesc *d,
                                                        const struct kvs_shard *s, uint64_t key,
                                                        void *stream)
{
    if (!dst || !d || !s || d->elem_bytes != 2 || s->row_block < 1)
        return KVS_STATUS_INVALID_ARGUMENT;
    const int64_t rows_total = d->count * d->rows;
    if (rows_total == 0 || d->cols == 0)
        return KVS_STATUS_OK;
    unsigned grid = rows_total < 65535 ? (unsigned)rows_total : 65535u;
    fill_shard_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(dst, rows_total, d->rows, d->cols,
                                                               *s, key, d->amp, d->offset);
    KVS_CUDA_LAUNCH_TRY(NULL);
    return KVS_STATUS_OK;
}
