/* kernels/cuda/mla_decode.cu — MLA decode attention, absorbed form, one
 * kernel for BF16 KV and one for FP8 e4m3 KV read directly (converted in
 * registers, no BF16 copy in memory). Flash-decoding: the context is split
 * across blocks so batch 1 x 64 heads fills the GPU, and a combine kernel
 * merges the partials exactly through their log-sum-exps. Checked against
 * kernels/cpu/mla_decode.c by kernels/tests/gpu/test_kernels_mla.c; timed by
 * kernels/bench/bench_kernels.cu. Split planning and the combine:
 * mla_combine.cu. Design and floors: docs/kernels.md.
 *
 * variants (kv_dtype):
 *   BF16  tiles of 32 KV rows; bf16 mma.sync m16n8k16; ldmatrix (.trans for V)
 *   FP8   KV rows kept as FP8 in shared memory; f16 mma.sync (every e4m3
 *         value is an f16 value): K converted on the integer ALU (bit moves,
 *         value * 2^-8, folded into the score scale), V with
 *         cvt.rn.f16x2.e4m3x2; Q pre-scaled by scale*log2(e) and stored in
 *         f16 with its 576 dims permuted so that one 16-byte shared load per
 *         row feeds four k-steps of K fragments. Two head groups:
 *     64  tiles of 64 rows, 2 k-slices, one block per SM (255 registers)
 *     32  tiles of 32 rows, 4 k-slices, <= 128 registers and 94 KB of shared
 *         memory (two blocks fit an SM); chosen when KV rows per SM are few
 *         (batch 1 to ~8K), where it halves the fixed costs of a block
 *     64 on wgmma (sm_90a, mla_wgmma.cu): the 64-head kernel with its two
 *         inner products on warpgroup MMAs (A fragments in registers, Q and
 *         P from shared memory), chosen above one 64-row tile per SM;
 *         struct kvs_kernel_opts mla_wgmma forces it on or off
 *
 * One block = 256 threads = 8 warps, HG heads of one sequence, a range of
 * its tokens. Per tile: S^T = K Q^T (each warp 16 tokens x HG heads over a
 * slice of the 576 dims; slices summed through shared memory), online
 * softmax per head, O^T += V^T P^T (each warp 64 of the 512 dims for all HG
 * heads, 2 HG f32 accumulators per thread). The next tile streams in by
 * cp.async while this one computes.
 * Partials (several splits): O in f16 for FP8 KV (a convex combination of
 * e4m3 values, so |O| <= 448 and f16 keeps 11 bits: half the bytes of f32
 * to write and to combine), f32 for BF16 KV (whose values may exceed f16).
 * Decode and combine are launched with programmatic dependent launch
 * (kernels/src/pdl_impl.cuh) and wait for the kernel before them first.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include "cuda_common.cuh"
#include "mla_impl.cuh"
#include "mla_kernel.cuh"

namespace {

/* A/B switches, the caller's (struct kvs_kernel_opts; kvscope engine and the
 * benches take them from KVS_MLA_HG, KVS_MLA_WAVES, KVS_MLA_WG): mla_head_group
 * 64 or 32 forces the FP8 kernel's head group; mla_waves 1 or 2 sets how many
 * blocks per SM the split planner aims at with 32-head groups; mla_wgmma 1 or
 * -1 forces the wgmma version of the FP8 64-head kernel on or off (where it
 * is built). 0 (or no opts): the measured choice below. */
const struct kvs_kernel_opts kNoOpts = {};

/* FP8 KV: 32-head groups while the KV rows per SM are few (batch x context
 * x 64-head groups <= 48 per SM: batch 1 to ~6K), where a block's fixed
 * costs (Q staging, the epilogue, the combine) dominate and halve; above
 * that the 64-head kernel is faster (each 32-head block converts every K
 * byte for half the heads: batch 64 x 128K 4.93 ms vs 6.19 ms with 32;
 * batch 8 x 1K 20.7 vs 22.4 us). Measured: docs/kernels.md. */
int fp8_group_heads(int batch, int heads, int max_ctx, int sms, const struct kvs_kernel_opts &o)
{
    const int forced = o.mla_head_group;
    if (forced == 32 || forced == 64)
        return forced;
    const long rows = (long)batch * (max_ctx > 0 ? max_ctx : 1) * ((heads + 63) / 64);
    return rows <= 48L * sms ? 32 : 64;
}

/* FP8 KV with 64-head groups: the wgmma kernel (where it is built) once the
 * KV rows per SM exceed one 64-row tile (batch x context x 64-head groups >
 * 64 x SMs), else the mma.sync one; mla_wgmma 1 | -1 forces either. At one
 * tile per block (batch 8 x 1K) wgmma was 0.1-0.8 us slower in each of four
 * H200 calls (its Q staging costs more, and there is no steady state to
 * win); from two tiles per block on it was faster: batch 1 x 16K -1.4%,
 * 1 x 128K -15%, 64 x 128K -22% (docs/kernels.md, "wgmma"). */
cudaError_t launch_fp8_64(const MlaParams &p, const kvs_mla::Plan &pl, int batch, int max_ctx,
                          int sms, cudaStream_t s, const struct kvs_kernel_opts &o)
{
#ifdef KVS_MLA_WGMMA
    const int forced = o.mla_wgmma;
    const long rows = (long)batch * (max_ctx > 0 ? max_ctx : 1) * pl.hgroups;
    if (forced == 1 || (forced == 0 && rows > 64L * sms))
        return kvs_mla::launch_wgmma(p, pl, batch, s, &o);
#else
    (void)max_ctx, (void)sms;
#endif
    return kvs_mla::lazy_for(pl, &o) ? launch<true, 64, false, true, true>(p, pl, batch, s, &o)
                                     : launch<true, 64>(p, pl, batch, s, &o);
}

kvs_mla::Plan plan_for(int batch, int heads, int max_ctx, bool fp8, int sms,
                       const struct kvs_kernel_opts &o)
{
    /* one block per SM by default also for 32-head groups: at batch 1 x 4K,
     * 128 blocks of two 32-row tiles (16.9 us) beat 256 blocks of one
     * (19.3 us): fewer partials to write and combine, half the Q staging */
    const int waves = o.mla_waves == 1 || o.mla_waves == 2 ? o.mla_waves : 0;
    const int hgh = fp8 ? fp8_group_heads(batch, heads, max_ctx, sms, o) : 64;
    const int nt = fp8 ? (hgh == 64 ? Cfg<true, 64>::NT : Cfg<true, 32>::NT) : Cfg<false, 64>::NT;
    const int bps = hgh == 64 ? 1 : waves ? waves : 1;
    return kvs_mla::plan(batch, heads, max_ctx, nt, hgh, bps * sms);
}

} // namespace

extern "C" size_t kvs_cuda_mla_decode_workspace(int batch, int heads, int max_ctx,
                                                const struct kvs_kernel_opts *opts)
{
    if (batch <= 0 || heads <= 0)
        return 0;
    int sms = kvs_sm_count();
    const struct kvs_kernel_opts &o = opts ? *opts : kNoOpts;
    size_t a = kvs_mla::partials_bytes(batch, plan_for(batch, heads, max_ctx, true, sms, o));
    size_t b = kvs_mla::partials_bytes(batch, plan_for(batch, heads, max_ctx, false, sms, o));
    return a > b ? a : b;
}

namespace kvs_mla {

enum kvs_status decode(const struct kvs_mla_args *a, int max_ctx, void *workspace,
                       size_t workspace_bytes, unsigned long long *prof, Plan *plan_out,
                       const struct kvs_kernel_opts *opts, cudaStream_t s)
{
    if (!a || a->batch <= 0 || a->heads <= 0 || a->batch > 65535 || max_ctx < 0 || !a->q_latent ||
        !a->q_rope || !a->kv || !a->seq_start || !a->out ||
        (a->kv_dtype != KVS_KV_BF16 && a->kv_dtype != KVS_KV_FP8))
        return KVS_STATUS_INVALID_ARGUMENT;
    /* 16-byte copies of Q and KV rows; bf16x2 stores of out */
    if (((uintptr_t)a->q_latent | (uintptr_t)a->q_rope | (uintptr_t)a->kv) & 15u ||
        ((uintptr_t)a->out & 7u))
        return KVS_STATUS_INVALID_ARGUMENT;
    const bool fp8 = a->kv_dtype == KVS_KV_FP8;
    const int sms = kvs_sm_count();
    const struct kvs_kernel_opts &o = opts ? *opts : kNoOpts;
    Plan pl = plan_for(a->batch, a->heads, max_ctx, fp8, sms, o);
    if (plan_out)
        *plan_out = pl;
    size_t need = partials_bytes(a->batch, pl);
    if (need > 0 && (!workspace || workspace_bytes < need || ((uintptr_t)workspace & 15u)))
        return KVS_STATUS_INVALID_ARGUMENT;

    MlaParams p;
    p.q_latent = a->q_latent;
    p.q_rope = a->q_rope;
    p.kv = (const unsigned char *)a->kv;
    p.seq_start = a->seq_start;
    p.tokens = a->tokens;
    p.heads = a->heads;
    p.hgroups = pl.hgroups;
    p.hg_heads = pl.hg_heads;
    p.splits = pl.splits;
    p.tiles_per_split = pl.tiles_per_split;
    p.scale_log2 = a->scale * kLog2e;
    p.out = a->out;
    p.lse = a->lse;
    p.opart = workspace;
    p.part_half = fp8;
    p.lsepart = need > 0 ? (float *)workspace +
                               (size_t)a->batch * pl.hgroups * pl.splits * pl.hg_heads * 512
                         : nullptr;
    p.prof = prof;

    /* BF16: the AHEAD kernel only with a token list (mla_kernel.cuh); LAZY
     * where blocks hold more than one tile (kvs_mla::lazy_for) */
    const bool lz = lazy_for(pl, &o);
    const cudaError_t le =
        !fp8 ? (a->tokens ? (lz ? launch<false, 64, false, true, true>(p, pl, a->batch, s, &o)
                                : launch<false, 64, false, true>(p, pl, a->batch, s, &o))
                          : (lz ? launch<false, 64, false, false, true>(p, pl, a->batch, s, &o)
                                : launch<false, 64, false, false>(p, pl, a->batch, s, &o)))
        : pl.hg_heads == 32 ? (lz ? launch<true, 32, false, true, true>(p, pl, a->batch, s, &o)
                                  : launch<true, 32>(p, pl, a->batch, s, &o))
                            : launch_fp8_64(p, pl, a->batch, max_ctx, sms, s, o);
    KVS_CUDA_TRY(NULL, le);
    if (pl.splits > 1) {
        if (prof)
            p.prof = prof + (size_t)kProfDecode * pl.splits * a->batch * pl.hgroups;
        KVS_CUDA_TRY(NULL, launch_combine(p, a->batch, s, &o));
    }
    return KVS_STATUS_OK;
}

} // namespace kvs_mla

extern "C" enum kvs_status kvs_cuda_mla_decode(const struct kvs_mla_args *a, int max_ctx,
                                               void *workspace, size_t workspace_bytes,
                                               const struct kvs_kernel_opts *opts, void *stream)
{
    return kvs_mla::decode(a, max_ctx, workspace, workspace_bytes, nullptr, nullptr, opts,
                           kvs_stream(stream));
}
