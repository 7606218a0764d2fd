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
 *   FP8   tiles of 64 KV rows kept as FP8 in shared memory; f16 mma.sync
 *         (every e4m3 value is an f16 value): K converted on the integer ALU
 *         (bit moves, value * 2^-8, folded into the score scale), V with
 *         cvt.rn.f16x2.e4m3x2; Q pre-scaled by scale*log2(e) and stored in
 *         f16 with its 576 dims permuted so that one 16-byte shared load per
 *         row feeds four k-steps of K fragments.
 *
 * One block = 256 threads = 8 warps, 64 heads of one sequence, a range of
 * its tokens. Per tile: S^T = K Q^T (each warp 16 tokens x 64 heads over a
 * slice of the 576 dims; slices summed through shared memory), online
 * softmax per head, O^T += V^T P^T (each warp 64 of the 512 dims for all 64
 * heads, 128 f32 accumulators per thread). The next tile streams in by
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
#include "mma.cuh"
#include "pdl_impl.cuh"

using kvs_mla::kLn2;
using kvs_mla::kLog2e;
using MlaParams = kvs_mla::Params;

namespace {

constexpr int kThreads = 256;
constexpr int kQStride = 584; /* halves per Q row: 576 + 8, so ldmatrix rows hit distinct banks */

template <bool FP8> struct Cfg {
    static constexpr int NT = FP8 ? 64 : 32; /* KV rows per tile */
    static constexpr int TG = NT / 16;      /* token groups of 16 rows (one m-tile each) */
    static constexpr int KS = 8 / TG;       /* warps sharing a token group: k-slices */
    static constexpr int KSTEPS = 36 / KS;  /* k-steps of 16 dims per warp */
    static constexpr int NTW = 8 / KS;      /* 8-head n-tiles a warp owns after the exchange */
    /* shared row pitch: FP8 608 B (= 96 mod 128) makes both the S loads (rows
     * 2 apart) and the V loads (rows 4 apart) conflict-free; BF16 1168 B */
    static constexpr int ROWB = FP8 ? 608 : 1168;
    static constexpr int GROWB = FP8 ? 576 : 1152; /* bytes per KV row in global memory */
    static constexpr int CPR = GROWB / 16;
    static constexpr int PS = NT + 8; /* halves per P row */
    static constexpr int Q_BYTES = 64 * kQStride * 2;
    static constexpr int STAGE_BYTES = NT * ROWB;
    static constexpr int P_BYTES = 64 * PS * 2;
    static constexpr int X_BYTES = 8 * 8 * 32 * 16;
    static constexpr int RED_BYTES = TG * 64 * 4;
    static constexpr int M_BYTES = 2 * 64 * 4; /* per-head running max, then alpha */
    static constexpr int OFF_STAGE = Q_BYTES;
    static constexpr int OFF_P = OFF_STAGE + 2 * STAGE_BYTES;
    static constexpr int OFF_X = OFF_P + P_BYTES;
    static constexpr int OFF_MAX = OFF_X + X_BYTES;
    static constexpr int OFF_L = OFF_MAX + RED_BYTES;
    static constexpr int OFF_M = OFF_L + RED_BYTES;
    static constexpr int SMEM = OFF_M + M_BYTES;
    static_assert(SMEM <= 227 * 1024, "shared memory");
    static_assert(NT * CPR % kThreads == 0, "tile copy");
    static_assert(KSTEPS * KS == 36 && NTW * KS == 8, "warp split");
};



__device__ __forceinline__ float bf16_bits_to_float(uint32_t b) { return __uint_as_float(b << 16); }

__device__ __forceinline__ uint16_t prob_bits(float p, bool fp8)
{
    return fp8 ? __half_as_ushort(__float2half_rn(p))
               : __bfloat16_as_ushort(__float2bfloat16_rn(p));
}

// ----------------------------------------------------------------------------
// S^T = K Q^T for one warp: 16 tokens (group tg) x 64 heads, k-slice ks

/* One k-step: A (16 tokens x 16 dims) given, B = Q^T for all 64 heads. */
template <bool FP8>
__device__ __forceinline__ void s_kstep(float (&s)[8][4], const uint32_t (&a)[4], uint32_t sq,
                                        int j, int lane)
{
    const uint32_t row = (uint32_t)((lane & 7) + 8 * (lane >> 4));
    const uint32_t col = (uint32_t)(16 * j + 8 * ((lane >> 3) & 1));
#pragma unroll
    for (int q4 = 0; q4 < 4; q4++) {
        uint32_t b[4];
        kvs_ldsm_x4(b, sq + ((16 * q4 + row) * kQStride + col) * 2);
        if (FP8) {
            kvs_mma_f16(s[2 * q4], a, b[0], b[1]);
            kvs_mma_f16(s[2 * q4 + 1], a, b[2], b[3]);
        } else {
            kvs_mma_bf16(s[2 * q4], a, b[0], b[1]);
            kvs_mma_bf16(s[2 * q4 + 1], a, b[2], b[3]);
        }
    }
}

/* FP8: m-row g is token 2g of the group, m-row g+8 token 2g+1. Thread t
 * reads bytes 64c + 16t .. +15 of both rows: word i feeds k-step 4c + i (the
 * Q layout is permuted to match, see load_q_fp8). */
__device__ __forceinline__ void s_phase_fp8(float (&s)[8][4], const unsigned char *st, uint32_t sq,
                                            int tg, int ks, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    const unsigned char *r0 = st + (16 * tg + 2 * g) * Cfg<true>::ROWB + 16 * t;
    const unsigned char *r1 = r0 + Cfg<true>::ROWB;
    auto step = [&](uint32_t w0, uint32_t w1, int j) {
        uint32_t a[4];
        kvs_e4m3x4_to_f16_alu(w0, a[0], a[2]);
        kvs_e4m3x4_to_f16_alu(w1, a[1], a[3]);
        s_kstep<true>(s, a, sq, j, lane);
    };
    auto block = [&](int c) {
        uint4 x = *(const uint4 *)(r0 + 64 * c), y = *(const uint4 *)(r1 + 64 * c);
        step(x.x, y.x, 4 * c);
        step(x.y, y.y, 4 * c + 1);
        step(x.z, y.z, 4 * c + 2);
        step(x.w, y.w, 4 * c + 3);
    };
    /* 36 k-steps = 9 blocks of 4; slice 0 takes blocks 0-3 and the first
     * half of 4, slice 1 the second half of 4 and blocks 5-8. One copy of
     * the code serves both slices (block index c0 + c at run time): with a
     * copy per slice the kernel outgrew the instruction caches (ncu: a third
     * of the stalls were instruction fetch). */
    {
        const int hoff = ks == 0 ? 256 : 264, hj = ks == 0 ? 16 : 18, c0 = ks == 0 ? 0 : 5;
        uint2 x = *(const uint2 *)(r0 + hoff), y = *(const uint2 *)(r1 + hoff);
        step(x.x, y.x, hj);
        step(x.y, y.y, hj + 1);
#pragma unroll
        for (int c = 0; c < 4; c++)
            block(c0 + c);
    }
}

__device__ __forceinline__ void s_phase_bf16(float (&s)[8][4], const unsigned char *st,
                                             uint32_t sq, int tg, int ks, int lane)
{
    constexpr int ROWB = Cfg<false>::ROWB, KSTEPS = Cfg<false>::KSTEPS;
    const uint32_t sa = kvs_smem_u32(st) + (uint32_t)((16 * tg + (lane & 15)) * ROWB) +
                        (uint32_t)(8 * (lane >> 4)) * 2;
#pragma unroll
    for (int jj = 0; jj < KSTEPS; jj++) {
        const int j = ks * KSTEPS + jj;
        uint32_t a[4];
        kvs_ldsm_x4(a, sa + (uint32_t)(16 * j) * 2);
        s_kstep<false>(s, a, sq, j, lane);
    }
}

// ----------------------------------------------------------------------------
// O^T += V^T P^T for one warp: dims 64w .. 64w+63, all 64 heads

template <bool FP8>
__device__ __forceinline__ void pv_phase(float (&o)[4][8][4], const unsigned char *st,
                                         uint32_t sp, int w, int lane)
{
    using C = Cfg<FP8>;
    const int g = lane >> 2, t = lane & 3;
    const uint32_t prow = (uint32_t)((lane & 7) + 8 * (lane >> 4));
    const uint32_t pcol = (uint32_t)(8 * ((lane >> 3) & 1));
#pragma unroll
    for (int kk = 0; kk < C::NT / 16; kk++) {
        uint32_t bp[4][4];
#pragma unroll
        for (int q4 = 0; q4 < 4; q4++)
            kvs_ldsm_x4(bp[q4], sp + ((16 * q4 + prow) * C::PS + 16 * kk + pcol) * 2);
        if (FP8) {
            /* tokens t, t+4, t+8, t+12 of the step are logical k 2t, 2t+1,
             * 2t+8, 2t+9 (P is stored in that order); dims 4g..4g+3 of a
             * 32-dim block are rows (g, g+8) of two m-tiles */
#pragma unroll
            for (int blk = 0; blk < 2; blk++) {
                const unsigned char *vb = st + (16 * kk + t) * C::ROWB + 64 * w + 32 * blk + 4 * g;
                uint32_t w0 = *(const uint32_t *)vb, w1 = *(const uint32_t *)(vb + 4 * C::ROWB);
                uint32_t w2 = *(const uint32_t *)(vb + 8 * C::ROWB);
                uint32_t w3 = *(const uint32_t *)(vb + 12 * C::ROWB);
                uint32_t a0[4], a1[4];
                kvs_e4m3x4_to_f16_cvt(__byte_perm(w0, w1, 0x5140u), a0[0], a0[1]);
                kvs_e4m3x4_to_f16_cvt(__byte_perm(w0, w1, 0x7362u), a1[0], a1[1]);
                kvs_e4m3x4_to_f16_cvt(__byte_perm(w2, w3, 0x5140u), a0[2], a0[3]);
                kvs_e4m3x4_to_f16_cvt(__byte_perm(w2, w3, 0x7362u), a1[2], a1[3]);
#pragma unroll
                for (int nt = 0; nt < 8; nt++) {
                    kvs_mma_f16(o[2 * blk][nt], a0, bp[nt >> 1][2 * (nt & 1)],
                                bp[nt >> 1][2 * (nt & 1) + 1]);
                    kvs_mma_f16(o[2 * blk + 1][nt], a1, bp[nt >> 1][2 * (nt & 1)],
                                bp[nt >> 1][2 * (nt & 1) + 1]);
                }
            }
        } else {
            const uint32_t va = kvs_smem_u32(st) +
                                (uint32_t)((16 * kk + (lane & 7) + 8 * (lane >> 4)) * C::ROWB) +
                                (uint32_t)(64 * w + 8 * ((lane >> 3) & 1)) * 2;
#pragma unroll
            for (int mt = 0; mt < 4; mt++) {
                uint32_t a[4];
                kvs_ldsm_x4_t(a, va + (uint32_t)(16 * mt) * 2);
#pragma unroll
                for (int nt = 0; nt < 8; nt++)
                    kvs_mma_bf16(o[mt][nt], a, bp[nt >> 1][2 * (nt & 1)],
                                 bp[nt >> 1][2 * (nt & 1) + 1]);
            }
        }
    }
}

// ----------------------------------------------------------------------------
// loads

/* FP8 path: Q * scale * log2(e) in f16 (saturated to +-65504), dims
 * permuted: dim 64c + 16t + 4i + 2h + e sits at position 16(4c + i) + 2t +
 * 8h + e, the slot of k-step 4c + i where the K fragment built from word i
 * of the 16 bytes 64c + 16t.. puts it. All 18 16-byte loads of a thread are
 * issued before any is used (one round trip, not 18). */
__device__ __forceinline__ uint32_t q_pair_f16(uint32_t raw, float scale)
{
    float f0 = fminf(fmaxf(bf16_bits_to_float(raw & 0xffffu) * scale, -65504.f), 65504.f);
    float f1 = fminf(fmaxf(bf16_bits_to_float(raw >> 16) * scale, -65504.f), 65504.f);
    __half2 hv = __floats2half2_rn(f0, f1);
    return *(const uint32_t *)&hv;
}

__device__ __forceinline__ void load_q_fp8(const MlaParams &p, unsigned char *sq, int b, int hg)
{
    constexpr int R = 64 * 72 / kThreads; /* 16-byte chunks (8 dims) per thread */
    uint4 v[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        int i = threadIdx.x + r * kThreads, h = i / 72, c = i - h * 72, hh = hg * 64 + h;
        v[r] = make_uint4(0u, 0u, 0u, 0u);
        if (hh < p.heads) {
            size_t bh = (size_t)b * p.heads + hh;
            v[r] = *(const uint4 *)(c < 64 ? p.q_latent + bh * 512 + 8 * c
                                           : p.q_rope + bh * 64 + 8 * (c - 64));
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        int i = threadIdx.x + r * kThreads, h = i / 72, c = i - h * 72;
        int d0 = 8 * c, blk = d0 >> 6, t = (d0 >> 4) & 3, i0 = (d0 >> 2) & 3;
        uint32_t *row = (uint32_t *)(sq + h * kQStride * 2);
        /* words: dims (4 i0 + 0,1), (4 i0 + 2,3), (4 i0 + 4,5), (4 i0 + 6,7) */
        int p0 = 16 * (4 * blk + i0) + 2 * t, p1 = p0 + 16;
        row[p0 / 2] = q_pair_f16(v[r].x, p.scale_log2);
        row[(p0 + 8) / 2] = q_pair_f16(v[r].y, p.scale_log2);
        row[p1 / 2] = q_pair_f16(v[r].z, p.scale_log2);
        row[(p1 + 8) / 2] = q_pair_f16(v[r].w, p.scale_log2);
    }
}

__device__ __forceinline__ void load_q_bf16(const MlaParams &p, uint32_t sq, int b, int hg)
{
    for (int i = threadIdx.x; i < 64 * 72; i += kThreads) {
        int h = i / 72, c = i - h * 72, hh = hg * 64 + h;
        const uint16_t *src = p.q_latent;
        uint32_t bytes = 0;
        if (hh < p.heads) {
            size_t bh = (size_t)b * p.heads + hh;
            src = c < 64 ? p.q_latent + bh * 512 + 8 * c : p.q_rope + bh * 64 + 8 * (c - 64);
            bytes = 16;
        }
        kvs_cp_async16(sq + (uint32_t)(h * kQStride + 8 * c) * 2, src, bytes);
    }
}

/* Rows past the range are zero-filled, so masked P (0) never meets garbage. */
template <bool FP8>
__device__ __forceinline__ void load_tile(const MlaParams &p, uint32_t dst, int seq0,
                                          int tile_start, int t_end)
{
    using C = Cfg<FP8>;
#pragma unroll
    for (int r = 0; r < C::NT * C::CPR / kThreads; r++) {
        int i = threadIdx.x + r * kThreads;
        int row = i / C::CPR, c = i - row * C::CPR;
        int tau = tile_start + row;
        const unsigned char *src = p.kv;
        uint32_t bytes = 0;
        if (tau < t_end) {
            size_t kr = p.tokens ? (size_t)p.tokens[seq0 + tau] : (size_t)seq0 + (size_t)tau;
            src = p.kv + kr * C::GROWB + 16 * c;
            bytes = 16;
        }
        kvs_cp_async16(dst + (uint32_t)(row * C::ROWB + 16 * c), src, bytes);
    }
}

// ----------------------------------------------------------------------------
// the decode kernel

template <bool FP8>
__global__ void __launch_bounds__(kThreads, 1) mla_decode_kernel(const MlaParams p)
{
    using C = Cfg<FP8>;
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, t = lane & 3;
    const int split = blockIdx.x, b = blockIdx.y, hg = blockIdx.z;
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    const int seq0 = p.seq_start[b], n = p.seq_start[b + 1] - seq0;
    const int t_begin = split * p.tiles_per_split * C::NT;
    const int t_end = split == p.splits - 1 ? n : min(n, t_begin + p.tiles_per_split * C::NT);
    const bool direct = p.splits == 1;
    const size_t part = ((size_t)(b * p.hgroups + hg) * p.splits + split) * 64;

    const size_t pblk = ((size_t)hg * gridDim.y + b) * gridDim.x + split;
    if (p.prof && tid == 0) {
        p.prof[kvs_mla::kProfDecode * pblk] = kvs_mla::globaltimer();
        p.prof[kvs_mla::kProfDecode * pblk + 2] = clock64();
    }
    if (t_begin >= t_end) { /* nothing here: an empty sequence, or a split past its end */
        if (!direct) {
            if (tid < 64)
                p.lsepart[part + tid] = -INFINITY;
            return;
        }
        for (int i = tid; i < 64 * 512; i += kThreads) {
            int hh = hg * 64 + i / 512;
            if (hh < p.heads)
                p.out[((size_t)b * p.heads + hh) * 512 + i % 512] = 0;
        }
        if (tid < 64 && hg * 64 + tid < p.heads && p.lse)
            p.lse[(size_t)b * p.heads + hg * 64 + tid] = -INFINITY;
        if (p.prof && tid == 0) {
            unsigned long long c = clock64();
            p.prof[kvs_mla::kProfDecode * pblk + 3] = c;
            p.prof[kvs_mla::kProfDecode * pblk + 4] = c;
            p.prof[kvs_mla::kProfDecode * pblk + 5] = c;
            p.prof[kvs_mla::kProfDecode * pblk + 1] = kvs_mla::globaltimer();
        }
        return;
    }

    unsigned char *sq = smem;
    const uint32_t sqa = kvs_smem_u32(sq);
    const uint32_t stage_a = sqa + C::OFF_STAGE;
    const uint32_t spa = sqa + C::OFF_P;
    uint16_t *sp = (uint16_t *)(smem + C::OFF_P);
    float4 *xb = (float4 *)(smem + C::OFF_X);
    float *red_max = (float *)(smem + C::OFF_MAX);
    float *red_l = (float *)(smem + C::OFF_L);
    float *sm_m = (float *)(smem + C::OFF_M), *sm_alpha = sm_m + 64;

    /* the first tile's copies go out before Q is staged: its DRAM trip (and
     * the token-list load before it) overlaps Q's, instead of following it */
    load_tile<FP8>(p, stage_a, seq0, t_begin, t_end);
    if (FP8)
        load_q_fp8(p, sq, b, hg);
    else
        load_q_bf16(p, sqa, b, hg);
    kvs_cp_async_commit();

    const int ntiles = (t_end - t_begin + C::NT - 1) / C::NT;
    const int tg = w % C::TG, ks = w / C::TG;
    float o[4][8][4];
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                o[mt][nt][r] = 0.f;
    /* running max and sums of this warp's S heads; the accumulators' heads
     * get their rescale factor from sm_alpha, written by the tg == 0 warps */
    float m_s[C::NTW][2], l_s[C::NTW][2];
#pragma unroll
    for (int i = 0; i < C::NTW; i++)
        m_s[i][0] = m_s[i][1] = -INFINITY, l_s[i][0] = l_s[i][1] = 0.f;

    for (int tile = 0; tile < ntiles; tile++) {
        const int tile_start = t_begin + tile * C::NT;
        kvs_cp_async_wait_all();
        __syncthreads(); /* tile in place; every warp is past the previous tile */
        if (p.prof && tile == 0 && tid == 0)
            p.prof[kvs_mla::kProfDecode * pblk + 3] = clock64();
        if (tile + 1 < ntiles) {
            load_tile<FP8>(p, stage_a + ((tile + 1) & 1) * C::STAGE_BYTES, seq0,
                           tile_start + C::NT, t_end);
            kvs_cp_async_commit();
        }
        const unsigned char *st = smem + C::OFF_STAGE + (tile & 1) * C::STAGE_BYTES;

        /* S^T slice, then the exchange: keep n-tiles ks*NTW.., send the rest */
        float s[8][4];
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
            s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
        if (FP8)
            s_phase_fp8(s, st, sqa, tg, ks, lane);
        else
            s_phase_bf16(s, st, sqa, tg, ks, lane);
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
            if (nt / C::NTW != ks)
                xb[(w * 8 + nt) * 32 + lane] = make_float4(s[nt][0], s[nt][1], s[nt][2], s[nt][3]);
        float sc[C::NTW][4];
#pragma unroll
        for (int k2 = 0; k2 < C::KS; k2++)
            if (k2 == ks)
#pragma unroll
                for (int i = 0; i < C::NTW; i++)
#pragma unroll
                    for (int r = 0; r < 4; r++)
                        sc[i][r] = s[k2 * C::NTW + i][r];
        __syncthreads();
#pragma unroll
        for (int k2 = 0; k2 < C::KS; k2++) {
            if (k2 == ks)
                continue;
#pragma unroll
            for (int i = 0; i < C::NTW; i++) {
                float4 v = xb[((k2 * C::TG + tg) * 8 + ks * C::NTW + i) * 32 + lane];
                sc[i][0] += v.x, sc[i][1] += v.y, sc[i][2] += v.z, sc[i][3] += v.w;
            }
        }

        /* scores in log2 units, masked; per-head max over this warp's 16 tokens */
#pragma unroll
        for (int i = 0; i < C::NTW; i++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                int tau = FP8 ? 16 * tg + 2 * g + (r >> 1) : 16 * tg + g + 8 * (r >> 1);
                float v = FP8 ? sc[i][r] * 256.f : sc[i][r] * p.scale_log2;
                sc[i][r] = tile_start + tau < t_end ? v : -INFINITY;
            }
#pragma unroll
        for (int i = 0; i < C::NTW; i++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float mx = fmaxf(sc[i][e], sc[i][e + 2]);
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
                if (g == 0)
                    red_max[tg * 64 + 8 * (ks * C::NTW + i) + 2 * t + e] = mx;
            }
        __syncthreads();

        /* this warp's heads: new max, probabilities into P, running sums */
#pragma unroll
        for (int i = 0; i < C::NTW; i++) {
            const int h0 = 8 * (ks * C::NTW + i) + 2 * t;
            float2 mx = make_float2(-INFINITY, -INFINITY);
#pragma unroll
            for (int q = 0; q < C::TG; q++) {
                float2 v = *(const float2 *)(red_max + q * 64 + h0);
                mx.x = fmaxf(mx.x, v.x), mx.y = fmaxf(mx.y, v.y);
            }
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float mnew = fmaxf(m_s[i][e], e ? mx.y : mx.x);
                float alpha = m_s[i][e] == -INFINITY ? 0.f : exp2f(m_s[i][e] - mnew);
                m_s[i][e] = mnew;
                if (tg == 0 && g == 0) {
                    sm_m[h0 + e] = mnew;
                    sm_alpha[h0 + e] = alpha;
                }
                float p0 = exp2f(sc[i][e] - mnew), p1 = exp2f(sc[i][e + 2] - mnew);
                l_s[i][e] = l_s[i][e] * alpha + p0 + p1;
                int k0, k1; /* P column (logical k within the group) of tokens for rows g, g+8 */
                if (FP8) {
                    int a0 = (2 * g) & 3, a1 = (2 * g + 1) & 3, e4 = g >> 1 & 1, h8 = g >> 2;
                    k0 = 2 * a0 + e4 + 8 * h8;
                    k1 = 2 * a1 + e4 + 8 * h8;
                } else {
                    k0 = g;
                    k1 = g + 8;
                }
                uint16_t *row = sp + (h0 + e) * C::PS + 16 * tg;
                row[k0] = prob_bits(p0, FP8);
                row[k1] = prob_bits(p1, FP8);
            }
        }
        __syncthreads();
        /* every head of the accumulators: rescale by exp2(m_old - m_new),
         * skipped when no head's max moved (the common case after a few tiles) */
        {
            float2 al[8];
            bool same = true;
#pragma unroll
            for (int nt = 0; nt < 8; nt++) {
                al[nt] = *(const float2 *)(sm_alpha + 8 * nt + 2 * t);
                same = same && al[nt].x == 1.f && al[nt].y == 1.f;
            }
            if (!__all_sync(0xffffffffu, same)) {
#pragma unroll
                for (int nt = 0; nt < 8; nt++)
#pragma unroll
                    for (int mt = 0; mt < 4; mt++) {
                        o[mt][nt][0] *= al[nt].x, o[mt][nt][1] *= al[nt].y;
                        o[mt][nt][2] *= al[nt].x, o[mt][nt][3] *= al[nt].y;
                    }
            }
        }
        pv_phase<FP8>(o, st, spa, w, lane);
    }

    if (p.prof && tid == 0)
        p.prof[kvs_mla::kProfDecode * pblk + 4] = clock64();
    /* sums: over the 8 row-lanes, then over the token groups */
#pragma unroll
    for (int i = 0; i < C::NTW; i++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float v = l_s[i][e];
            v += __shfl_xor_sync(0xffffffffu, v, 4);
            v += __shfl_xor_sync(0xffffffffu, v, 8);
            v += __shfl_xor_sync(0xffffffffu, v, 16);
            if (g == 0)
                red_l[tg * 64 + 8 * (ks * C::NTW + i) + 2 * t + e] = v;
        }
    __syncthreads();

#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int h = 8 * nt + 2 * t + e, hh = hg * 64 + h;
            float l = 0.f;
#pragma unroll
            for (int q = 0; q < C::TG; q++)
                l += red_l[q * 64 + h];
            if (hh >= p.heads)
                continue;
            const float inv = 1.f / l;
            const float lse2 = sm_m[h] + log2f(l);
            const size_t orow = direct ? ((size_t)b * p.heads + hh) * 512 : (part + h) * 512;
            if (FP8) {
                /* m-tiles 2blk, 2blk+1 rows g, g+8 are dims 4g + 0..3 of block blk */
#pragma unroll
                for (int blk = 0; blk < 2; blk++) {
                    float r0 = o[2 * blk][nt][e] * inv, r1 = o[2 * blk][nt][e + 2] * inv;
                    float r2 = o[2 * blk + 1][nt][e] * inv, r3 = o[2 * blk + 1][nt][e + 2] * inv;
                    int d = 64 * w + 32 * blk + 4 * g;
                    if (direct) {
                        __nv_bfloat162 lo = __floats2bfloat162_rn(r0, r1);
                        __nv_bfloat162 hi = __floats2bfloat162_rn(r2, r3);
                        *(uint2 *)(p.out + orow + d) =
                            make_uint2(*(const uint32_t *)&lo, *(const uint32_t *)&hi);
                    } else { /* f16 partials (p.part_half) */
                        __half2 lo = __floats2half2_rn(r0, r1), hi = __floats2half2_rn(r2, r3);
                        *(uint2 *)((__half *)p.opart + orow + d) =
                            make_uint2(*(const uint32_t *)&lo, *(const uint32_t *)&hi);
                    }
                }
            } else {
#pragma unroll
                for (int mt = 0; mt < 4; mt++) {
                    float r0 = o[mt][nt][e] * inv, r1 = o[mt][nt][e + 2] * inv;
                    int d = 64 * w + 16 * mt + g;
                    if (direct) {
                        p.out[orow + d] = __bfloat16_as_ushort(__float2bfloat16_rn(r0));
                        p.out[orow + d + 8] = __bfloat16_as_ushort(__float2bfloat16_rn(r1));
                    } else {
                        ((float *)p.opart)[orow + d] = r0;
                        ((float *)p.opart)[orow + d + 8] = r1;
                    }
                }
            }
            if (w == 0 && g == 0) {
                if (!direct)
                    p.lsepart[part + h] = lse2;
                else if (p.lse)
                    p.lse[(size_t)b * p.heads + hh] = lse2 * kLn2;
            }
        }
    if (p.prof) {
        __syncthreads();
        if (tid == 0) {
            p.prof[kvs_mla::kProfDecode * pblk + 5] = clock64();
            p.prof[kvs_mla::kProfDecode * pblk + 1] = kvs_mla::globaltimer();
        }
    }
}

// ----------------------------------------------------------------------------
// host side

template <bool FP8> cudaError_t launch(const MlaParams &p, const kvs_mla::Plan &pl, int batch, cudaStream_t s)
{
    cudaError_t e = cudaFuncSetAttribute(mla_decode_kernel<FP8>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<FP8>::SMEM);
    if (e != cudaSuccess)
        return e;
    dim3 grid((unsigned)pl.splits, (unsigned)batch, (unsigned)pl.hgroups);
    return kvs_launch_pdl(mla_decode_kernel<FP8>, grid, dim3(kThreads), (size_t)Cfg<FP8>::SMEM, s, p);
}

} // namespace

extern "C" size_t kvs_cuda_mla_decode_workspace(int batch, int heads, int max_ctx)
{
    if (batch <= 0 || heads <= 0)
        return 0;
    int sms = kvs_sm_count();
    size_t a = kvs_mla::partials_bytes(batch, kvs_mla::plan(batch, heads, max_ctx, Cfg<true>::NT, sms));
    size_t b = kvs_mla::partials_bytes(batch, kvs_mla::plan(batch, heads, max_ctx, Cfg<false>::NT, sms));
    return a > b ? a : b;
}

namespace kvs_mla {

enum kvs_status decode(const struct kvs_mla_args *a, int max_ctx, void *workspace,
                       size_t workspace_bytes, unsigned long long *prof, Plan *plan_out,
                       cudaStream_t s)
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
    Plan pl = plan(a->batch, a->heads, max_ctx, fp8 ? Cfg<true>::NT : Cfg<false>::NT,
                   kvs_sm_count());
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
    p.splits = pl.splits;
    p.tiles_per_split = pl.tiles_per_split;
    p.scale_log2 = a->scale * kLog2e;
    p.out = a->out;
    p.lse = a->lse;
    p.opart = workspace;
    p.part_half = fp8;
    p.lsepart = need > 0 ? (float *)workspace + (size_t)a->batch * pl.hgroups * pl.splits * 64 * 512
                         : nullptr;
    p.prof = prof;

    KVS_CUDA_TRY(NULL, fp8 ? launch<true>(p, pl, a->batch, s) : launch<false>(p, pl, a->batch, s));
    if (pl.splits > 1) {
        if (prof)
            p.prof = prof + (size_t)kProfDecode * pl.splits * a->batch * pl.hgroups;
        KVS_CUDA_TRY(NULL, launch_combine(p, a->batch, s));
    }
    return KVS_STATUS_OK;
}

} // namespace kvs_mla

extern "C" enum kvs_status kvs_cuda_mla_decode(const struct kvs_mla_args *a, int max_ctx,
                                               void *workspace, size_t workspace_bytes,
                                               void *stream)
{
    return kvs_mla::decode(a, max_ctx, workspace, workspace_bytes, nullptr, nullptr,
                           kvs_stream(stream));
}
