/* kernels/cuda/gemv_fp8w_cfg.h — the FP8-weight GEMV's internal
 * configurations, for the tests (each is checked against the CPU reference)
 * and the bench (each is timed, so the choice behind kvs_cuda_gemv_fp8w is
 * on record in docs/benchmarks.md). Private to kernels/; plain C.
 *
 * defines: KVS_GEMV_FP8W_CFGS, KVS_GEMV_FP8W_CFG_DEFAULT,
 *          kvs_gemv_fp8w_cfg_name, kvs_cuda_gemv_fp8w_cfg
 */
#ifndef KVSCOPE_GEMV_FP8W_CFG_H
#define KVSCOPE_GEMV_FP8W_CFG_H

#include "kvscope/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0 cvt-r2: codes through the cvt unit (cvt.rn.f16x2.e4m3x2, exact, NaN
 *   stays NaN); each lane walks 2 weight rows, so one x load serves both
 * 1 alu-r2: codes through integer bit moves (kvs_e4m3x4_to_f16_alu: value
 *   * 2^-8, folded into the block scale; NaN codes read as +-480); 2 rows
 * 2 cvt-r1, 3 alu-r1: one row a lane, 4 chunks of it in flight */
#define KVS_GEMV_FP8W_CFGS 4
#define KVS_GEMV_FP8W_CFG_DEFAULT 0

const char *kvs_gemv_fp8w_cfg_name(int cfg);
enum kvs_status kvs_cuda_gemv_fp8w_cfg(int cfg, const kvs_bf16 *x, int64_t ldx, int m, int k,
                                       const struct kvs_gemv_fp8w_out *outs, int nout, int y_f32,
                                       const struct kvs_kernel_opts *opts, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_GEMV_FP8W_CFG_H */
