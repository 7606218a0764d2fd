/* kernels/cuda/mla_tile.cuh — the per-tile pieces of the MLA decode kernel
 * (mla_decode.cu, its only includer; private): the block configuration per
 * KV type and head group (Cfg), S^T = K Q^T and O^T += V^T P^T for one warp,
 * and the loads of Q and of a KV tile into shared memory. Layouts and why:
 * the comment at the top of mla_decode.cu and docs/kernels.md.
 *
 * defines (anonymous namespace): Cfg, kThreads, kQStride, s_phase_fp8,
 *   s_phase_fp8_h32, s_phase_bf16, pv_phase, kQChunks, q_chunk, fetch_q, store_q_fp8,
 *   load_q_bf16, load_tile, prob_bits
 */
#ifndef KVSCOPE_MLA_TILE_CUH
#define KVSCOPE_MLA_TILE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda_common.cuh"
#include "mla_impl.cuh"
#include "mma.cuh"

using kvs_mla::kLn2;
using kvs_mla::kLog2e;
using MlaParams = kvs_mla::Params;

namespace {

constexpr int kThreads = 256;
constexpr int kQStride = 584; /* halves per Q row: 576 + 8, so ldmatrix rows hit distinct banks */

/* HG: heads per block. 64 (BF16 KV; FP8 KV with many KV rows per SM): one block per
 * SM. 32 (FP8 KV only): half the Q and the accumulators, tiles of 32 rows,
 * ~94 KB of shared memory and <= 128 registers, so two blocks share an SM
 * (two warp pairs per scheduler); each KV tile is then read by both head
 * groups' blocks (the second read mostly from L2). */
template <bool FP8, int HG> struct Cfg {
    static constexpr int NT = FP8 && HG == 64 ? 64 : 32; /* KV rows per tile */
    static constexpr int TG = NT / 16;      /* token groups of 16 rows (one m-tile each) */
    static constexpr int KS = 8 / TG;       /* warps sharing a token group: k-slices */
    static constexpr int KSTEPS = 36 / KS;  /* k-steps of 16 dims per warp */
    static constexpr int NH8 = HG / 8;      /* 8-head n-tiles of the block */
    static constexpr int NTW = NH8 / KS;    /* 8-head n-tiles a warp owns after the exchange */
    static constexpr int BPS = HG == 32 ? 2 : 1; /* blocks per SM (launch bounds) */
    /* shared row pitch: FP8 608 B (= 96 mod 128) makes both the S loads (rows
     * 2 apart) and the V loads (rows 4 apart) conflict-free; BF16 1168 B */
    static constexpr int ROWB = FP8 ? 608 : 1168;
    static constexpr int GROWB = FP8 ? 576 : 1152; /* bytes per KV row in global memory */
    static constexpr int CPR = GROWB / 16;
    static constexpr int PS = NT + 8; /* halves per P row */
    static constexpr int Q_BYTES = HG * kQStride * 2;
    static constexpr int STAGE_BYTES = NT * ROWB;
    static constexpr int P_BYTES = HG * PS * 2;
    static constexpr int X_BYTES = 8 * NH8 * 32 * 16;
    static constexpr int RED_BYTES = TG * HG * 4;
    static constexpr int M_BYTES = 2 * HG * 4; /* per-head running max, then alpha */
    /* token-list row indices of two tiles, after everything else: only
     * the AHEAD kernels (load_tile) have them */
    static constexpr int IDX_BYTES = 2 * NT * 4;
    static constexpr int OFF_STAGE = Q_BYTES;
    static constexpr int OFF_P = OFF_STAGE + 2 * STAGE_BYTES;
    static constexpr int OFF_X = OFF_P + P_BYTES;
    static constexpr int OFF_MAX = OFF_X + X_BYTES;
    static constexpr int OFF_L = OFF_MAX + RED_BYTES;
    static constexpr int OFF_M = OFF_L + RED_BYTES;
    static constexpr int SMEM = OFF_M + M_BYTES; /* without the indices */
    static constexpr int OFF_IDX = SMEM;
    static_assert(SMEM + IDX_BYTES <= 227 * 1024, "shared memory");
    /* two blocks per SM: 228 KB less 1 KB reserved per block */
    static_assert(BPS == 1 || SMEM + IDX_BYTES <= 113 * 1024,
                  "shared memory for two blocks per SM");
    static_assert(HG == 64 || (FP8 && HG == 32), "head group");
    static_assert(KSTEPS * KS == 36 && NTW * KS == NH8, "warp split");
    static_assert(HG * 72 % kThreads == 0, "Q copy");
};

__device__ __forceinline__ float bf16_bits_to_float(uint32_t b) { return __uint_as_float(b << 16); }

__device__ __forceinline__ uint16_t prob_bits(float p, bool fp8)
{
    return fp8 ? __half_as_ushort(__float2half_rn(p))
               : __bfloat16_as_ushort(__float2bfloat16_rn(p));
}

// ----------------------------------------------------------------------------
// S^T = K Q^T for one warp: 16 tokens (group tg) x 64 heads, k-slice ks

/* One k-step: A (16 tokens x 16 dims) given, B = Q^T for all NH8 * 8 heads. */
template <bool FP8, int NH8>
__device__ __forceinline__ void s_kstep(float (&s)[NH8][4], const uint32_t (&a)[4], uint32_t sq,
                                        int j, int lane)
{
    const uint32_t row = (uint32_t)((lane & 7) + 8 * (lane >> 4));
    const uint32_t col = (uint32_t)(16 * j + 8 * ((lane >> 3) & 1));
#pragma unroll
    for (int q4 = 0; q4 < NH8 / 2; q4++) {
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
 * Q layout is permuted to match, see store_q_fp8). */
__device__ __forceinline__ void s_phase_fp8(float (&s)[8][4], const unsigned char *st, uint32_t sq,
                                            int tg, int ks, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    const unsigned char *r0 = st + (16 * tg + 2 * g) * Cfg<true, 64>::ROWB + 16 * t;
    const unsigned char *r1 = r0 + Cfg<true, 64>::ROWB;
    auto step = [&](uint32_t w0, uint32_t w1, int j) {
        uint32_t a[4];
        kvs_e4m3x4_to_f16_alu(w0, a[0], a[2]);
        kvs_e4m3x4_to_f16_alu(w1, a[1], a[3]);
        s_kstep<true, 8>(s, a, sq, j, lane);
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

/* FP8, 32 heads, 4 k-slices of 9 k-steps: slice ks reads the two 64-byte
 * blocks at 128 ks (words i of thread t's 16 bytes 128 ks + 64 cc + 16 t
 * feed k-step 9 ks + 4 cc + i) and word ks of the 16 bytes 512 + 16 t
 * (k-step 9 ks + 8); every load is 16 bytes and conflict-free. The Q layout
 * matches (q_pos). */
__device__ __forceinline__ void s_phase_fp8_h32(float (&s)[4][4], const unsigned char *st,
                                                uint32_t sq, int tg, int ks, int lane)
{
    constexpr int ROWB = Cfg<true, 32>::ROWB;
    const int g = lane >> 2, t = lane & 3;
    const unsigned char *r0 = st + (16 * tg + 2 * g) * ROWB + 16 * t;
    const unsigned char *r1 = r0 + ROWB;
    auto step = [&](uint32_t w0, uint32_t w1, int j) {
        uint32_t a[4];
        kvs_e4m3x4_to_f16_alu(w0, a[0], a[2]);
        kvs_e4m3x4_to_f16_alu(w1, a[1], a[3]);
        s_kstep<true, 4>(s, a, sq, j, lane);
    };
    const int j0 = 9 * ks;
    {
        uint4 x = *(const uint4 *)(r0 + 512), y = *(const uint4 *)(r1 + 512);
        uint32_t wx = ks == 0 ? x.x : ks == 1 ? x.y : ks == 2 ? x.z : x.w;
        uint32_t wy = ks == 0 ? y.x : ks == 1 ? y.y : ks == 2 ? y.z : y.w;
        step(wx, wy, j0 + 8);
    }
#pragma unroll 1
    for (int cc = 0; cc < 2; cc++) {
        uint4 x = *(const uint4 *)(r0 + 128 * ks + 64 * cc);
        uint4 y = *(const uint4 *)(r1 + 128 * ks + 64 * cc);
        step(x.x, y.x, j0 + 4 * cc);
        step(x.y, y.y, j0 + 4 * cc + 1);
        step(x.z, y.z, j0 + 4 * cc + 2);
        step(x.w, y.w, j0 + 4 * cc + 3);
    }
}

__device__ __forceinline__ void s_phase_bf16(float (&s)[8][4], const unsigned char *st,
                                             uint32_t sq, int tg, int ks, int lane)
{
    constexpr int ROWB = Cfg<false, 64>::ROWB, KSTEPS = Cfg<false, 64>::KSTEPS;
    const uint32_t sa = kvs_smem_u32(st) + (uint32_t)((16 * tg + (lane & 15)) * ROWB) +
                        (uint32_t)(8 * (lane >> 4)) * 2;
#pragma unroll
    for (int jj = 0; jj < KSTEPS; jj++) {
        const int j = ks * KSTEPS + jj;
        uint32_t a[4];
        kvs_ldsm_x4(a, sa + (uint32_t)(16 * j) * 2);
        s_kstep<false, 8>(s, a, sq, j, lane);
    }
}

// ----------------------------------------------------------------------------
// O^T += V^T P^T for one warp: dims 64w .. 64w+63, all HG heads

template <bool FP8, int HG>
__device__ __forceinline__ void pv_phase(float (&o)[4][HG / 8][4], const unsigned char *st,
                                         uint32_t sp, int w, int lane)
{
    using C = Cfg<FP8, HG>;
    const int g = lane >> 2, t = lane & 3;
    const uint32_t prow = (uint32_t)((lane & 7) + 8 * (lane >> 4));
    const uint32_t pcol = (uint32_t)(8 * ((lane >> 3) & 1));
#pragma unroll
    for (int kk = 0; kk < C::NT / 16; kk++) {
        uint32_t bp[C::NH8 / 2][4];
#pragma unroll
        for (int q4 = 0; q4 < C::NH8 / 2; q4++)
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
                for (int nt = 0; nt < C::NH8; nt++) {
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
                for (int nt = 0; nt < C::NH8; nt++)
                    kvs_mma_bf16(o[mt][nt], a, bp[nt >> 1][2 * (nt & 1)],
                                 bp[nt >> 1][2 * (nt & 1) + 1]);
            }
        }
    }
}

// ----------------------------------------------------------------------------
// loads

/* FP8 path: Q * scale * log2(e) in f16 (saturated to +-65504), dims
 * permuted to match the K fragments: 64 heads, dim 64c + 16t + 4i + 2h + e
 * sits at position 16(4c + i) + 2t + 8h + e, the slot of k-step 4c + i
 * where the K fragment built from word i of the 16 bytes 64c + 16t.. puts
 * it; 32 heads, the k-step of a word is that of s_phase_fp8_h32 (fetch_q
 * and store_q_fp8 below). */
__device__ __forceinline__ uint32_t q_pair_f16(uint32_t raw, float scale)
{
    float f0 = fminf(fmaxf(bf16_bits_to_float(raw & 0xffffu) * scale, -65504.f), 65504.f);
    float f1 = fminf(fmaxf(bf16_bits_to_float(raw >> 16) * scale, -65504.f), 65504.f);
    __half2 hv = __floats2half2_rn(f0, f1);
    return *(const uint32_t *)&hv;
}

/* Q position (halves) of the word of K dims d .. d+3 (d % 4 == 0), for
 * thread t = (d >> 4) & 3 of the fragment: 16 j + 2t with j its k-step. */
template <int HG> __device__ __forceinline__ int q_pos(int d)
{
    const int t = (d >> 4) & 3, i = (d >> 2) & 3;
    int j;
    if (HG == 64)
        j = 4 * (d >> 6) + i;
    else if (d < 512)
        j = 9 * (d >> 7) + 4 * ((d >> 6) & 1) + i;
    else
        j = 9 * i + 8;
    return 16 * j + 2 * t;
}

/* Q's 16-byte chunks (8 dims each) of this thread, all loads issued at
 * once (one round trip, not one per chunk); the kernel issues them before
 * the first tile's copies and stages them (store_q_fp8 / store_q_fp8_wg)
 * while that tile is in flight */
template <int HG> constexpr int kQChunks = HG * 72 / kThreads;

/* Head h (in the group) and chunk c (dims 8c..8c+7 of its 576) of this
 * thread's Q chunk r. WGL (the wgmma kernel's Q layout, 64 heads): warp w
 * takes heads 8w..8w+7, lane l head 8w + (l & 7) and chunk 4r + (l >> 3), so
 * one load instruction of a warp reads 64 contiguous bytes (two whole
 * sectors) of each of 8 heads and its stores spread over 16 banks (2-way
 * conflicts: lanes l and l + 8). Otherwise consecutive threads on
 * consecutive chunks of one head: in the wgmma layout that put a warp's
 * stores on 4 banks (8-way: the bank is 4 (h & 7) + ((c >> 1) & 3)), 512
 * store wavefronts a warp in the prologue instead of 144 (measured on the
 * H200, B1 x 32K: prologue 9.7K -> 8.8K cycles). The mma.sync 64-head
 * layout keeps it: with the WGL mapping (4-way -> 2-way stores) its
 * prologue measured 1,660 cycles longer (B8 x 1K, 2026-12-02; not
 * understood: more L2 lines a load instruction is the guess). */
template <int HG, bool WGL = false> __device__ __forceinline__ void q_chunk(int r, int &h, int &c)
{
    if constexpr (WGL) {
        static_assert(HG == 64, "the wgmma layout holds 64 heads");
        const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
        h = 8 * w + (l & 7);
        c = 4 * r + (l >> 3);
    } else {
        const int i = threadIdx.x + r * kThreads;
        h = i / 72;
        c = i - h * 72;
    }
}
static_assert(kQChunks<64> == 18 && kThreads == 256, "q_chunk<64>: 8 warps x 8 heads, 18 x 4 chunks");

template <int HG, bool WGL = false>
__device__ __forceinline__ void fetch_q(const MlaParams &p, uint4 (&v)[kQChunks<HG>], int b, int hg)
{
#pragma unroll
    for (int r = 0; r < kQChunks<HG>; r++) {
        int h, c;
        q_chunk<HG, WGL>(r, h, c);
        const int hh = hg * HG + h;
        v[r] = make_uint4(0u, 0u, 0u, 0u);
        if (hh < p.heads) {
            size_t bh = (size_t)b * p.heads + hh;
            v[r] = *(const uint4 *)(c < 64 ? p.q_latent + bh * 512 + 8 * c
                                           : p.q_rope + bh * 64 + 8 * (c - 64));
        }
    }
}

template <int HG>
__device__ __forceinline__ void store_q_fp8(const MlaParams &p, unsigned char *sq,
                                            const uint4 (&v)[kQChunks<HG>])
{
#pragma unroll
    for (int r = 0; r < kQChunks<HG>; r++) {
        int h, c;
        q_chunk<HG>(r, h, c);
        const int d0 = 8 * c;
        uint32_t *row = (uint32_t *)(sq + h * kQStride * 2);
        /* dims d0 + 0..3 at p0, p0 + 1, p0 + 8, p0 + 9; d0 + 4..7 likewise at p1 */
        const int p0 = q_pos<HG>(d0), p1 = q_pos<HG>(d0 + 4);
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

/* The copies of one KV tile: C::NT rows from tile_start, rows at or past
 * t_end zero-filled (so masked P, 0, never meets garbage). A row is UPR
 * units of 576 bytes (an FP8 row; half a BF16 row), a unit 36 16-byte
 * columns; threads 0..251 are 7 units x 36 columns (units 7 r + tid / 36,
 * r = 0..R-1). So a copy costs a few instructions (no division, no
 * per-copy row lookup), and with a token list every row index of a tile is
 * loaded before its first copy goes out (one round trip per tile, not one
 * per copy). One routine for every variant, the wgmma kernel's included.
 * AHEAD: only the FIRST tile's indices come from global memory, and
 * `between` runs after those loads are issued, before the copies that wait
 * for them (the FP8 prologue issues Q's loads there: behind the index
 * loads in the queue, not ahead of them); every later tile's rows come
 * from shared memory (ids), where the copy of the tile before put them a
 * tile ahead: the next tile's indices are cp.async'ed into ids_next beside
 * this tile's copies (same group), so no tile's copies but the first wait
 * for a global load. Without AHEAD, ids, ids_next and `between` are not
 * used and the code is the one from before AHEAD (the BF16 kernel without
 * a token list; mla_kernel.cuh says why). */
template <bool FP8, int HG, bool AHEAD, bool FIRST, class F>
__device__ __forceinline__ void load_tile(const MlaParams &p, uint32_t dst, int seq0,
                                          int tile_start, int t_end, const int32_t *ids,
                                          int32_t *ids_next, F &&between)
{
    using C = Cfg<FP8, HG>;
    constexpr bool A = AHEAD;
    constexpr int UB = 576, UC = UB / 16, UPR = C::GROWB / UB, U = C::NT * UPR;
    constexpr int UPT = kThreads / UC; /* units per round */
    constexpr int R = (U + UPT - 1) / UPT;
    static_assert(C::GROWB % UB == 0 && UPT * (R - 1) < U, "tile copy layout");
    static_assert(C::NT <= UPT * UC, "index copies by the copying threads");
    const int tid = threadIdx.x, u0 = tid / UC, c = tid - UC * u0;
    const bool copier = tid < UPT * UC;
    if (!A && !copier)
        return;
    const int32_t *tok = p.tokens;
    int kr[R]; /* KV row of each unit, -1: zero-fill */
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int u = u0 + UPT * r, tau = tile_start + u / UPR;
        kr[r] = -1;
        if (copier && u < U && tau < t_end)
            kr[r] = !tok ? seq0 + tau : !A || FIRST ? tok[seq0 + tau] : ids[u / UPR];
    }
    if constexpr (A) {
        between();
        if (!copier)
            return;
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int u = u0 + UPT * r; /* only the last round can run past the tile */
        if (r == R - 1 && u >= U)
            break;
        const int off = (u % UPR) * UB + 16 * c;
        const bool ok = kr[r] >= 0;
        kvs_cp_async16(dst + (uint32_t)((u / UPR) * C::ROWB + off),
                       p.kv + (ok ? (size_t)kr[r] * C::GROWB + off : 0), ok ? 16u : 0u);
    }
    if constexpr (A) {
        const int next = tile_start + C::NT;
        if (tok && next < t_end && tid < C::NT) {
            const bool ok = next + tid < t_end;
            kvs_cp_async4(kvs_smem_u32(ids_next + tid), tok + seq0 + (ok ? next + tid : 0),
                          ok ? 4u : 0u);
        }
    }
}

} // namespace

#endif /* KVSCOPE_MLA_TILE_CUH */
