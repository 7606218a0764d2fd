/* engine/expert_map_impl.h — the expert map of one token, written once and
 * compiled as C (engine/experts.c) and as CUDA device code (kernels/cuda/engine_ops.cu),
 * so the GPU maps exactly as the CPU reference. Private to the engine.
 *
 * defines: kvs_expert_map_token_impl
 */
#ifndef KVSCOPE_ENGINE_EXPERT_MAP_IMPL_H
#define KVSCOPE_ENGINE_EXPERT_MAP_IMPL_H

#include <stdint.h>

#ifdef __CUDACC__
#define KVS_EMAP_FN static __host__ __device__ __forceinline__
#else
#define KVS_EMAP_FN static inline
#endif

/* Resident counts up to this many are supported (GLM-5 has 256 experts). */
#define KVS_EXPERT_MAP_MAX_RESIDENT 1024

/* resident = logical mod R, probing to the next free resident on a collision
 * within the token. Returns 0, or -1 for an id out of range or more choices
 * than residents (out is then partly written). */
KVS_EMAP_FN int kvs_expert_map_token_impl(int n_logical, int topk, int resident,
                                          const int32_t *logical, int32_t *out)
{
    uint64_t used[KVS_EXPERT_MAP_MAX_RESIDENT / 64];
    if (resident < 1 || resident > KVS_EXPERT_MAP_MAX_RESIDENT || topk > resident)
        return -1;
    for (int i = 0; i < (resident + 63) / 64; i++)
        used[i] = 0;
    for (int k = 0; k < topk; k++) {
        int32_t e = logical[k];
        if (e < 0 || e >= n_logical)
            return -1;
        int r = e % resident;
        while ((used[r >> 6] >> (r & 63)) & 1u)
            r = r + 1 == resident ? 0 : r + 1; /* ends: fewer than `resident` are used */
        used[r >> 6] |= 1ull << (r & 63);
        out[k] = r;
    }
    return 0;
}

#endif
