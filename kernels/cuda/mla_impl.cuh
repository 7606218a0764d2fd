/* kernels/cuda/mla_impl.cuh — what the MLA decode kernel (mla_decode.cu)
 * and its split planning and combine (mla_combine.cu) share. Private.
 *
 * defines: kvs_mla::Params, kvs_mla::Plan, kvs_mla::plan, kvs_mla::partials_bytes,
 *          kvs_mla::launch_combine, kvs_mla::kMaxSplits, kvs_mla::decode, kvs_mla::lazy_for,
 *          kvs_mla::launch_wgmma, kvs_mla::kProf*
 */
#ifndef KVSCOPE_MLA_IMPL_CUH
#define KVSCOPE_MLA_IMPL_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/kernels.h"

namespace kvs_mla {

constexpr int kMaxSplits = 256;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kLog2e = 1.4426950408889634f;

/* Partials of split s of (sequence b, head group hg of hg_heads heads): rows
 * ((b * hgroups + hg) * splits + s) * hg_heads + head of opart ([.., 512], f16
 * when part_half (FP8 KV) else f32, already divided by their own sum) and
 * lsepart (f32, log2 units; placed as if opart were f32). */
struct Params {
    const uint16_t *q_latent, *q_rope;
    const unsigned char *kv;
    const int32_t *seq_start, *tokens;
    int heads, hgroups, hg_heads, splits, tiles_per_split;
    float scale_log2;
    uint16_t *out;
    float *lse;
    void *opart;            /* splits > 1: f16 or f32 (part_half) */
    float *lsepart;         /* splits > 1 */
    int part_half;
    unsigned long long *prof; /* phase stamps for the bench, or null (see decode) */
};

/* Phase stamps (bench only): decode block i (x fastest, then y, z) writes
 * kProfDecode words at prof[kProfDecode * i]: globaltimer at its start and
 * end (ns), clock64 at its start, when Q and its first tile were in shared
 * memory, after its last tile, and at its end; combine block j writes
 * globaltimer at its start and end at prof[kProfDecode * decode blocks +
 * 2 j]. */
constexpr int kProfDecode = 6;
__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

struct Plan {
    int hgroups, hg_heads, splits, tiles_per_split;
};

/* Splits of each sequence's context for head groups of hg_heads heads:
 * about `slots` blocks (SMs x blocks resident per SM), whole tiles of nt
 * rows each. */
Plan plan(int batch, int heads, int max_ctx, int nt, int hg_heads, int slots);
/* Workspace for the partials (0 when there is one split). */
size_t partials_bytes(int batch, const Plan &pl);
/* Whether the decode kernel of this plan is the one with the tile loop's
 * lazy rescaling (mla_kernel.cuh, LAZY): only where blocks hold more than
 * one tile (a block's first tile never takes the lazy path), unless the
 * options turn it off (mla_lazy -1). Elsewhere the kernel is the code from
 * before lazy rescaling (LAZY false: main's PTX, checked when it landed). */
inline bool lazy_for(const Plan &pl, const struct kvs_kernel_opts *o)
{
    return pl.tiles_per_split > 1 && !(o && o->mla_lazy == -1);
}
cudaError_t launch_combine(const Params &p, int batch, cudaStream_t s,
                           const struct kvs_kernel_opts *o);
/* the FP8 64-head decode kernel on wgmma (mla_wgmma.cu, sm_90a; built when
 * KVS_MLA_WGMMA is defined) */
cudaError_t launch_wgmma(const Params &p, const Plan &pl, int batch, cudaStream_t s,
                         const struct kvs_kernel_opts *o);
/* kvs_cuda_mla_decode with phase stamps into prof (null: none); *plan_out,
 * if given, receives the plan it ran. */
enum kvs_status decode(const struct kvs_mla_args *a, int max_ctx, void *workspace,
                       size_t workspace_bytes, unsigned long long *prof, Plan *plan_out,
                       const struct kvs_kernel_opts *o, cudaStream_t s);

} // namespace kvs_mla

#endif /* KVSCOPE_MLA_IMPL_CUH */
