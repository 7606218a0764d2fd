/* kernels/cuda/mla_combine.cu — the split planning of MLA decode and the
 * exact combine of its partial results: out = sum_s w_s o_s / sum_s w_s with
 * w_s = 2^(lse_s - max lse) (each o_s already normalised by its own sum), and
 * lse = ln 2 * (max + log2 sum w). Kernel in mla_decode.cu; tests in
 * kernels/tests/gpu/test_kernels_mla.c.
 *
 * variants (by split count; the partials come from L2, so the combine is
 * bounded by load latency, not bandwidth):
 *   few   <= 16 splits: one 128-thread block per (sequence, head), every
 *         split's load issued at once
 *   many  grid (sequence x head, 4 slices of 128 dims); the 8 warps of a block
 *         take every 8th split, four loads in flight each, and add their sums
 *         in shared memory
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

    float mx = -INFINITY;
    for (int s = tid; s < splits; s += 256)
        mx = fmaxf(mx, lsepart[(base + s) * hgh + h]);
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
    for (int s = tid; s < splits; s += 256) {
        float l = lsepart[(base + s) * hgh + h];
        float v = mx == -INFINITY || l == -INFINITY ? 0.f : exp2f(l - mx);
        wgt[s] = v;
        sum += v;
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

    const int d = 128 * blockIdx.y + 4 * lane;
    const size_t src = (base * hgh + h) * 512 + d; /* split s: + s * hgh * 512 */
    const size_t step = (size_t)hgh * 512;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    int s = w;
    for (; s + 24 < splits; s += 32) {
        float4 x[4];
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            v[u] = wgt[s + 8 * u];
            x[u] = v[u] != 0.f ? load4<HALF>(opart, src + (size_t)(s + 8 * u) * step)
                               : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
            acc.x += v[u] * x[u].x, acc.y += v[u] * x[u].y, acc.z += v[u] * x[u].z,
                acc.w += v[u] * x[u].w;
    }
    for (; s < splits; s += 8) {
        float v = wgt[s];
        if (v != 0.f) {
            float4 x = load4<HALF>(opart, src + (size_t)s * step);
            acc.x += v * x.x, acc.y += v * x.y, acc.z += v * x.z, acc.w += v * x.w;
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

/* Few splits (<= kFewSplits): one 128-thread block per (sequence, head),
 * 4 dims per thread, all splits' loads issued together. */
constexpr int kFewSplits = 16;

template <bool HALF, int HGH>
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
    float l[kFewSplits];
    float mx = -INFINITY;
#pragma unroll
    for (int s = 0; s < kFewSplits; s++) {
        l[s] = s < splits ? lsepart[(base + s) * hgh + h] : -INFINITY;
        mx = fmaxf(mx, l[s]);
    }
    float sum = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const size_t src = (base * hgh + h) * 512 + 4 * threadIdx.x;
#pragma unroll
    for (int s = 0; s < kFewSplits; s++) {
        float v = mx == -INFINITY || l[s] == -INFINITY ? 0.f : exp2f(l[s] - mx);
        sum += v;
        if (v != 0.f) {
            float4 x = load4<HALF>(opart, src + (size_t)s * hgh * 512);
            acc.x += v * x.x, acc.y += v * x.y, acc.z += v * x.z, acc.w += v * x.w;
        }
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

cudaError_t launch_combine(const Params &p, int batch, cudaStream_t s)
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
        if (p.hg_heads == 64)
            return kvs_launch_pdl(p.part_half ? combine_few_kernel<true, 64>
                                              : combine_few_kernel<false, 64>,
                                  grid, dim3(128), 0, s, op, lp, p.heads, p.hgroups, p.hg_heads,
                                  p.splits, p.out, p.lse, p.prof);
        return kvs_launch_pdl(p.part_half ? combine_few_kernel<true, 0>
                                          : combine_few_kernel<false, 0>,
                              grid, dim3(128), 0, s, op, lp, p.heads, p.hgroups, p.hg_heads,
                              p.splits, p.out, p.lse, p.prof);
    }
    return kvs_launch_pdl(p.part_half ? combine_kernel<true, 0> : combine_kernel<false, 0>,
                          dim3((unsigned)(batch * p.heads), 4), dim3(256), 0, s, op, lp, p.heads,
                          p.hgroups, p.hg_heads, p.splits, p.out, p.lse, p.prof);
}

} // namespace kvs_mla
