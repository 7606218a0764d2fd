/* kernels/cuda/mla_combine.cu — the split planning of MLA decode and the
 * exact combine of its partial results: out = sum_s w_s o_s / sum_s w_s with
 * w_s = 2^(lse_s - max lse) (each o_s already normalised by its own sum), and
 * lse = ln 2 * (max + log2 sum w). Kernel in mla_decode.cu; tests in
 * kernels/tests/gpu/test_kernels_mla.c.
 *
 * variants (by split count; the partials come from L2, so the combine is
 * bounded by load latency, not bandwidth):
 *   few   <= 16 splits: one 128-thread block per (sequence, head), every
 *         split's lse and partial loaded at once
 *   many  grid (sequence x head, 4 slices of 128 dims); the 8 warps of a block
 *         take every 8th split, eight loads in flight each (the first eight
 *         beside the lse loads), and add their sums in shared memory
 * each templated on the partials' type (f16 for FP8 KV, f32 for BF16 KV, see
 * mla_decode.cu) and on the head group size (a constant 64, or 0: read at
 * run time; launch_combine says which runs when); launched with
 * programmatic dependent launch: the combine waits for the decode first.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include "cuda_common.cuh"
#include "mla_impl.cuh"
#include "pdl_impl.cuh"

namespace kvs_mla {

namespace {

/* 4 partial values from element i (f16: 8 bytes, f32: 16; i % 4 == 0) */
template <bool HALF> __device__ __forceinline__ float4 load4(const void *__restrict__ opart, size_t i)
{
    if (HALF) {
        const uint2 u = *(const uint2 *)((const __half *)opart + i);
        const float2 a = __half22float2(*(const __half2 *)&u.x);
        const float2 b = __half22float2(*(const __half2 *)&u.y);
        return make_float4(a.x, a.y, b.x, b.y);
    }
    return *(const float4 *)((const float *)opart + i);
}

constexpr int kChunk = 8; /* partial loads in flight per warp (many-split kernel) */

template <bool HALF, int HGH>
__global__ void __launch_bounds__(256)
combine_kernel(const void *__restrict__ opart, const float *__restrict__ lsepart, int heads,
               int hgroups, int hgh_rt, int splits, uint16_t *__restrict__ out,
               float *__restrict__ lse, unsigned long long *prof)
{
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    const int hgh = HGH ? HGH : hgh_rt;
    const size_t pb = 2 * ((size_t)blockIdx.y * gridDim.x + blockIdx.x);
    if (prof && threadIdx.x == 0)
        prof[pb] = globaltimer();
    __shared__ float wgt[kMaxSplits];
    __shared__ float red[8];
    __shared__ float4 part[8][32];
    const int bh = blockIdx.x, b = bh / heads, hh = bh - b * heads, hg = hh / hgh, h = hh % hgh;
    const size_t base = (size_t)(b * hgroups + hg) * splits;
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const int d = 128 * blockIdx.y + 4 * lane;
    const size_t src = (base * hgh + h) * 512 + d; /* split s: + s * hgh * 512 */
    const size_t step = (size_t)hgh * 512;
    /* the partials of this warp's splits w, w + 8, ... in chunks of
     * kChunk loads in flight; the first chunk's go out before the lse
     * reductions (a load does not need its split's weight), so the lse and
     * the first partials share a round trip */
    float4 x[kChunk];
    auto fetch = [&](int s0) {
#pragma unroll
        for (int u = 0; u < kChunk; u++) {
            const int s = s0 + 8 * u;
            x[u] = s < splits ? load4<HALF>(opart, src + (size_t)s * step)
                              : make_float4(0.f, 0.f, 0.f, 0.f);
        }
    };
    fetch(w);

    /* one split's lse per thread (kMaxSplits <= 256), read once and kept
     * for the weight: the second read was another round trip */
    static_assert(kMaxSplits <= 256, "one lse per thread");
    const float ls = tid < splits ? lsepart[(base + tid) * hgh + h] : -INFINITY;
    float mx = ls;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if (lane == 0)
        red[w] = mx;
    __syncthreads();
    mx = red[0];
    for (int i = 1; i < 8; i++)
        mx = fmaxf(mx, red[i]);
    __syncthreads();
    float sum = 0.f;
    if (tid < splits) {
        sum = mx == -INFINITY || ls == -INFINITY ? 0.f : exp2f(ls - mx);
        wgt[tid] = sum;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0)
        red[w] = sum;
    __syncthreads();
    sum = 0.f;
    for (int i = 0; i < 8; i++)
        sum += red[i];

    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = w; s0 < splits; s0 += 8 * kChunk) {
        if (s0 != w)
            fetch(s0);
#pragma unroll
        for (int u = 0; u < kChunk; u++) {
            const int s = s0 + 8 * u;
            /* weight 0: an empty split (its partial never written) or one
             * that underflows; select, so garbage never meets the sum */
            const float v = s < splits ? wgt[s] : 0.f;
            if (v != 0.f)
                acc.x += v * x[u].x, acc.y += v * x[u].y, acc.z += v * x[u].z,
                    acc.w += v * x[u].w;
        }
    }
    part[w][lane] = acc;
    __syncthreads();
    if (w == 0) {
        float4 t = part[0][lane];
        for (int i = 1; i < 8; i++) {
            float4 q = part[i][lane];
            t.x += q.x, t.y += q.y, t.z += q.z, t.w += q.w;
        }
        const float inv = sum > 0.f ? 1.f / sum : 0.f;
        __nv_bfloat162 lo = __floats2bfloat162_rn(t.x * inv, t.y * inv);
        __nv_bfloat162 hi = __floats2bfloat162_rn(t.z * inv, t.w * inv);
        uint2 pk = make_uint2(*(const uint32_t *)&lo, *(const uint32_t *)&hi);
        *(uint2 *)(out + ((size_t)b * heads + hh) * 512 + d) = pk;
        if (blockIdx.y == 0 && lane == 0 && lse)
            lse[(size_t)b * heads + hh] = sum > 0.f ? (mx + log2f(sum)) * kLn2 : -INFINITY;
        if (prof && lane == 0)
            prof[pb + 1] = globaltimer();
    }
}

/* Few splits (<= FEW <= kFewSplits): one 128-thread block per (sequence,
 * head), 4 dims per thread, every split's lse and partial loaded at once
 * (one round trip; the partial loads used to wait for the weights). FEW
 * sizes the registers that hold them: 16 splits' partials take ~96
 * registers, and at batch 64 (2 splits, 4096 blocks) a block per SM fewer
 * costs a wave, so up to 4 splits run the FEW = 4 kernel. */
constexpr int kFewSplits = 16;

template <bool HALF, int HGH, int FEW>
__global__ void __launch_bounds__(128)
combine_few_kernel(const void *__restrict__ opart, const float *__restrict__ lsepart, int heads,
                   int hgroups, int hgh_rt, int splits, uint16_t *__restrict__ out,
                   float *__restrict__ lse, unsigned long long *prof)
{
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    const int hgh = HGH ? HGH : hgh_rt;
    if (prof && threadIdx.x == 0)
        prof[2 * blockIdx.x] = globaltimer();
    const int bh = blockIdx.x, b = bh / heads, hh = bh - b * heads, hg = hh / hgh, h = hh % hgh;
    const size_t base = (size_t)(b * hgroups + hg) * splits;
    const size_t src = (base * hgh + h) * 512 + 4 * threadIdx.x;
    float l[FEW];
    float4 x[FEW];
    float mx = -INFINITY;
#pragma unroll
    for (int s = 0; s < FEW; s++) {
        l[s] = s < splits ? lsepart[(base + s) * hgh + h] : -INFINITY;
        x[s] = s < splits ? load4<HALF>(opart, src + (size_t)s * hgh * 512)
                          : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int s = 0; s < FEW; s++)
        mx = fmaxf(mx, l[s]);
    float sum = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int s = 0; s < FEW; s++) {
        float v = mx == -INFINITY || l[s] == -INFINITY ? 0.f : exp2f(l[s] - mx);
        sum += v;
        if (v != 0.f) /* select: an empty split's partial was never written */
            acc.x += v * x[s].x, acc.y += v * x[s].y, acc.z += v * x[s].z, acc.w += v * x[s].w;
    }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    __nv_bfloat162 lo = __floats2bfloat162_rn(acc.x * inv, acc.y * inv);
    __nv_bfloat162 hi = __floats2bfloat162_rn(acc.z * inv, acc.w * inv);
    *(uint2 *)(out + ((size_t)b * heads + hh) * 512 + 4 * threadIdx.x) =
        make_uint2(*(const uint32_t *)&lo, *(const uint32_t *)&hi);
    if (threadIdx.x == 0 && lse)
        lse[(size_t)b * heads + hh] = sum > 0.f ? (mx + log2f(sum)) * kLn2 : -INFINITY;
    if (prof && threadIdx.x == 0)
        prof[2 * blockIdx.x + 1] = globaltimer();
}

} // namespace

Plan plan(int batch, int heads, int max_ctx, int nt, int hg_heads, int slots)
{
    Plan pl;
    pl.hg_heads = hg_heads;
    pl.hgroups = (heads + hg_heads - 1) / hg_heads;
    int tiles = max_ctx > 0 ? (max_ctx + nt - 1) / nt : 1;
    long units = (long)batch * pl.hgroups;
    int target = units >= slots ? 1 : (int)(slots / units);
    if (target > kMaxSplits)
        target = kMaxSplits;
    pl.tiles_per_split = (tiles + target - 1) / target;
    pl.splits = (tiles + pl.tiles_per_split - 1) / pl.tiles_per_split;
    return pl;
}

size_t partials_bytes(int batch, const Plan &pl)
{
    if (pl.splits <= 1)
        return 0;
    /* f32 sizes, whatever the partials' type: the lse part sits after an
     * f32-sized O part (Params) */
    return (size_t)batch * pl.hgroups * pl.splits * pl.hg_heads * (512 + 1) * sizeof(float);
}

cudaError_t launch_combine(const Params &p, int batch, cudaStream_t s,
                           const struct kvs_kernel_opts *o)
{
    const void *op = p.opart;
    const float *lp = p.lsepart;
    /* Which code each variant runs is measured, not reasoned (same call, H200,
     * docs/kernels.md): the few-split kernel with the group size a constant
     * (64: the code before 32-head groups) is 2.6 us faster at 16 splits than
     * with the size read at run time, and the many-split kernel with the size
     * read at run time ~1 us faster at 64-128 splits than with the constant.
     * Neither difference is understood. */
    if (p.splits <= kFewSplits) {
        const dim3 grid((unsigned)(batch * p.heads));
        auto few = [&](auto kernel) {
            return kvs_launch_pdl(o, kernel, grid, dim3(128), 0, s, op, lp, p.heads, p.hgroups,
                                  p.hg_heads, p.splits, p.out, p.lse, p.prof);
        };
        const bool h = p.part_half != 0, h64 = p.hg_heads == 64;
        if (p.splits <= 4)
            return h64 ? few(h ? combine_few_kernel<true, 64, 4> : combine_few_kernel<false, 64, 4>)
                       : few(h ? combine_few_kernel<true, 0, 4> : combine_few_kernel<false, 0, 4>);
        return h64 ? few(h ? combine_few_kernel<true, 64, 16> : combine_few_kernel<false, 64, 16>)
                   : few(h ? combine_few_kernel<true, 0, 16> : combine_few_kernel<false, 0, 16>);
    }
    return kvs_launch_pdl(o, p.part_half ? combine_kernel<true, 0> : combine_kernel<false, 0>,
                          dim3((unsigned)(batch * p.heads), 4), dim3(256), 0, s, op, lp, p.heads,
                          p.hgroups, p.hg_heads, p.splits, p.out, p.lse, p.prof);
}

} // namespace kvs_mla
