/* kernels/cuda/cast_cfg.h — the vector cast's internal configurations, for
 * the tests (each is checked bit for bit) and the bench (each is timed, so
 * the choice behind KVS_CAST_VECTOR is on record in docs/benchmarks.md).
 * Private to kernels/; plain C.
 *
 * defines: KVS_CAST_CFGS, KVS_CAST_CFG_VECTOR, kvs_cast_cfg_name,
 *          kvs_cuda_cast_fp8_to_bf16_cfg
 */
#ifndef KVSCOPE_CAST_CFG_H
#define KVSCOPE_CAST_CFG_H

#include <stddef.h>

#include "kvscope/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0 vec16x2: 16-byte loads, each lane storing its 32 bytes as 2 x 16 B
 *   (a warp's store instruction writes every other 16 B: half sectors)
 * 1 vec8x4: 8-byte loads, 4 in flight per thread, 16-byte stores that are
 *   contiguous across the warp (full sectors)
 * 2 vec8x4cs: as 1, with evict-first (.cs) loads and stores
 * 3 vec8x8: as 1, 8 in flight */
#define KVS_CAST_CFGS 4
#define KVS_CAST_CFG_VECTOR 1 /* what KVS_CAST_VECTOR runs */

const char *kvs_cast_cfg_name(int cfg);
enum kvs_status kvs_cuda_cast_fp8_to_bf16_cfg(int cfg, const kvs_fp8 *src, kvs_bf16 *dst,
                                              size_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_CAST_CFG_H */
