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
 * 3 vec8x8: as 1, 8 in flight
 * 4 vec8x4g: as 1, but a grid covering the whole buffer (one pass per
 *   thread, no grid-stride loop): the block scheduler spreads the work
 * 5 vec16sh: 16-byte loads (16 codes a lane), the warp's 1 KB of output
 *   rearranged by shuffles into two 512-byte stores contiguous across the
 *   warp (16-byte loads and full-sector stores together) */
#define KVS_CAST_CFGS 6
/* what KVS_CAST_VECTOR runs: vec8x4g, 93.8% of the copy rate on the H200
 * against 89.0% for vec8x4 (docs/benchmarks.md, 2026-11-29, third run) */
#define KVS_CAST_CFG_VECTOR 4

const char *kvs_cast_cfg_name(int cfg);
enum kvs_status kvs_cuda_cast_fp8_to_bf16_cfg(int cfg, const kvs_fp8 *src, kvs_bf16 *dst,
                                              size_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_CAST_CFG_H */
