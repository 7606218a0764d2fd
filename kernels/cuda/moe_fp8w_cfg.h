/* kernels/cuda/moe_fp8w_cfg.h — the FP8-weight MoE experts' internal
 * configurations (kernels/cuda/moe_fp8w.cu), for the tests (each is checked
 * against the CPU reference) and the bench (each is timed, so the choice
 * behind kvs_cuda_moe_experts_fp8w is on record in docs/benchmarks.md).
 * Private to kernels/; plain C.
 *
 * defines: KVS_MOE_FP8W_CFGS, KVS_MOE_FP8W_CFG_DEFAULT,
 *          kvs_moe_fp8w_cfg_name, kvs_cuda_moe_experts_fp8w_cfg
 */
#ifndef KVSCOPE_MOE_FP8W_CFG_H
#define KVSCOPE_MOE_FP8W_CFG_H

#include "kvscope/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0 r1: moe.cu's bodies, one weight row a warp at a time (gate, then up;
 *   the top-k down rows one after the other), 4 chunks of 16 codes in
 *   flight a lane
 * 1 gu2-k2: gate and up row together (8 chunks in flight, x loaded once),
 *   2 of the top-k down rows together; registers capped for 2 blocks of
 *   256 threads an SM (uncapped the compiler takes 236 for down)
 * 2 gu2-k4: as 1 with 4 down rows together (16 chunks in flight)
 * 3 gu2u6-k4: as 2 with 6 chunks of each gate/up row in flight (12)
 * 4 gu2-k2-b4: as 1 capped for 4 blocks an SM (64 registers, r1's
 *   occupancy with twice its loads in flight)
 * 5 gu2-k4-b3: as 2 capped for 3 blocks an SM (80 registers)
 * 6 gu2u6-k4-b3: as 3 capped for 3 blocks an SM */
#define KVS_MOE_FP8W_CFGS 7
#define KVS_MOE_FP8W_CFG_DEFAULT 4 /* gu2-k2-b4: docs/benchmarks.md 19:52 UTC */

const char *kvs_moe_fp8w_cfg_name(int cfg);
enum kvs_status kvs_cuda_moe_experts_fp8w_cfg(int cfg, const struct kvs_moe_fp8w_args *a,
                                              void *workspace, size_t workspace_bytes,
                                              const struct kvs_kernel_opts *opts, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_MOE_FP8W_CFG_H */
