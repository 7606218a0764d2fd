/* kernels/cuda/mla_kernel.cuh — the MLA decode kernel itself (one
 * template for BF16 KV, FP8 KV with 32- or 64-head groups, and the FP8
 * 64-head variant whose inner products run on wgmma, WG) and its launch.
 * Included by mla_decode.cu (sm_90: every variant but WG) and by
 * mla_wgmma.cu (sm_90a: WG only). Private. Layouts and why: the comment at
 * the top of mla_decode.cu, mla_wgmma.cuh and docs/kernels.md.
 *
 * defines (anonymous namespace): kLazyLog2, mla_decode_kernel, launch
 */
#ifndef KVSCOPE_MLA_KERNEL_CUH
#define KVSCOPE_MLA_KERNEL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include "cuda_common.cuh"
#include "mla_impl.cuh"
#include "mla_tile.cuh"
#include "mla_wgmma.cuh"
#include "pdl_impl.cuh"

namespace {
// ----------------------------------------------------------------------------
// the decode kernel

/* How far (log2 units) a tile's score may rise above the running max
 * before the lazy path gives way (the tile loop): p <= 2^8. */
constexpr float kLazyLog2 = 8.f;

/* WG: the FP8 64-head kernel with its inner products on wgmma (sm_90a;
 * mla_wgmma.cuh): Q and P in the core-matrix layouts wgmma reads, the rest
 * as in the mma.sync kernel.
 * AHEAD: token-list row indices a tile ahead in shared memory (load_tile);
 * every FP8 kernel. BF16 KV has two kernels: AHEAD for a token list, where
 * it made the tiles faster (B1 x 32K tiles -11%), and without AHEAD for
 * contiguous rows, the code from before AHEAD existed: with it those calls
 * measured up to 2.9% slower (B8 x 64K), not understood, no SASS taken
 * (docs/kernels.md, "Batch-1 fixed costs").
 * LAZY: the tile loop's lazy rescaling (below), for blocks of more than one
 * tile (kvs_mla::lazy_for). Without it the loop is the code from before
 * (main's PTX): on the H200 (2026-12-02) the lazy loop, with a run-time
 * on/off flag, cost blocks of a single tile 400-560 cycles (B8 x 1K, B1 x
 * 1K and 4K BF16), where the lazy path is never taken (docs/kernels.md). */
template <bool FP8, int HG, bool WG = false, bool AHEAD = FP8, bool LAZY = false, int WGV = 0>
__global__ void __launch_bounds__(kThreads, Cfg<FP8, HG>::BPS) mla_decode_kernel(const MlaParams p)
{
    static_assert(!WG || (FP8 && HG == 64), "wgmma: FP8 KV, 64-head groups");
    static_assert(WG || WGV == 0, "variants of the wgmma kernel only");
    /* WGV (the wgmma kernel's variants, kvs_kernel_opts mla_wgv; 0 = the
     * kernel as landed): bit 0, S8: S^T on e4m3 wgmmas, K unconverted, Q
     * split in hi + lo e4m3 (mla_wgmma.cuh); bit 1 (K3, K's conversion in
     * 3 instructions a pair) is every variant's since 2026-12-03; bit 2, VA: V converted on the
     * integer ALU (value * 2^-8, scaled back in the epilogue) instead of the
     * cvt unit; bit 3, S8H: S8 with S^T split between the warpgroups by
     * heads (no exchange of partial sums); bit 4, VH: VA for half of V
     * (each warp's dims 32..63), the cvt unit for the rest */
    constexpr bool S8H = (WGV & 8) != 0; /* bit 3: S8 with S split by heads (s_phase_wg8h) */
    constexpr bool S8 = (WGV & 1) != 0 || S8H, VA = (WGV & 4) != 0;
    constexpr bool VH = (WGV & 16) != 0 && !VA; /* bit 4: VA for dims 32..63 of each warp's 64 only */
    using C = Cfg<FP8, HG>;
    static_assert(!S8 || kWgQ8Inv + 4 * 64 <= C::Q_BYTES, "S8: Q hi, lo and 1 / c in Q's room");
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, t = lane & 3;
    const int split = blockIdx.x, b = blockIdx.y, hg = blockIdx.z;
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    const int seq0 = p.seq_start[b], n = p.seq_start[b + 1] - seq0;
    const int t_begin = split * p.tiles_per_split * C::NT;
    const int t_end = split == p.splits - 1 ? n : min(n, t_begin + p.tiles_per_split * C::NT);
    const bool direct = p.splits == 1;
    const size_t part = ((size_t)(b * p.hgroups + hg) * p.splits + split) * HG;

    const size_t pblk = ((size_t)hg * gridDim.y + b) * gridDim.x + split;
    if (p.prof && tid == 0) {
        p.prof[kvs_mla::kProfDecode * pblk] = kvs_mla::globaltimer();
        p.prof[kvs_mla::kProfDecode * pblk + 2] = clock64();
    }
    if (t_begin >= t_end) { /* nothing here: an empty sequence, or a split past its end */
        if (!direct) {
            if (tid < HG)
                p.lsepart[part + tid] = -INFINITY;
            return;
        }
        for (int i = tid; i < HG * 512; i += kThreads) {
            int hh = hg * HG + i / 512;
            if (hh < p.heads)
                p.out[((size_t)b * p.heads + hh) * 512 + i % 512] = 0;
        }
        if (tid < HG && hg * HG + tid < p.heads && p.lse)
            p.lse[(size_t)b * p.heads + hg * HG + tid] = -INFINITY;
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
    float *sm_m = (float *)(smem + C::OFF_M), *sm_alpha = sm_m + HG;

    int32_t *ids = (int32_t *)(smem + C::OFF_IDX); /* [2][NT]: tile t's in ids + (t & 1) NT */

    /* FP8: the first tile's index loads go out first, then Q's loads into
     * registers, then the tile's copies (which wait for the indices), and
     * Q is converted and stored while the tile is in flight: the prologue's
     * chain is seq_start -> token list -> KV rows, with Q's trip beside the
     * last two. (Q's loads ahead of the index loads delayed the 64-head
     * kernels' chain: 18 loads a thread, 73 KB a block, in front of them;
     * docs/kernels.md, "Batch-1 fixed costs".) BF16: the first tile's
     * copies, then Q's cp.asyncs (Q's between the index loads and the
     * copies measured slower: prologue +470..+1000 cycles, same section). */
    uint4 qv[FP8 ? kQChunks<HG> : 1];
    load_tile<FP8, HG, AHEAD, true>(p, stage_a, seq0, t_begin, t_end, nullptr, ids + C::NT, [&] {
        if constexpr (FP8)
            fetch_q<HG, WG>(p, qv, b, hg);
    });
    if constexpr (S8)
        store_q_fp8_wg8(p, sq, qv);
    else if constexpr (WG)
        store_q_fp8_wg(p, sq, qv);
    else if constexpr (FP8)
        store_q_fp8<HG>(p, sq, qv);
    else
        load_q_bf16(p, sqa, b, hg);
    kvs_cp_async_commit();

    const int ntiles = (t_end - t_begin + C::NT - 1) / C::NT;
    const int tg = w % C::TG, ks = w / C::TG;
    float o[4][C::NH8][4];
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int nt = 0; nt < C::NH8; nt++)
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
        if (!WG && tile + 1 < ntiles) { /* WG: after the P fence, below */
            load_tile<FP8, HG, AHEAD, false>(p, stage_a + ((tile + 1) & 1) * C::STAGE_BYTES, seq0,
                                      tile_start + C::NT, t_end, ids + ((tile + 1) & 1) * C::NT,
                                      ids + (tile & 1) * C::NT, [] {});
            kvs_cp_async_commit();
        }
        const unsigned char *st = smem + C::OFF_STAGE + (tile & 1) * C::STAGE_BYTES;

        /* S^T slice, then the exchange: keep n-tiles ks*NTW.., send the rest
         * (S8H: each warpgroup computes its own heads whole, no exchange) */
        float s[C::NH8][4];
        if constexpr (!WG) /* the wgmma path overwrites s */
#pragma unroll
            for (int nt = 0; nt < C::NH8; nt++)
                s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
        if constexpr (S8H)
            ; /* below, into sc */
        else if constexpr (S8)
            s_phase_wg8(s, st, sqa, tg, ks, lane);
        else if constexpr (WG)
            s_phase_wg(s, st, sqa, tg, ks, lane);
        else if constexpr (HG == 32)
            s_phase_fp8_h32(s, st, sqa, tg, ks, lane);
        else if constexpr (FP8)
            s_phase_fp8(s, st, sqa, tg, ks, lane);
        else
            s_phase_bf16(s, st, sqa, tg, ks, lane);
        if constexpr (!S8H)
#pragma unroll
            for (int nt = 0; nt < C::NH8; nt++)
                if (nt / C::NTW != ks)
                    xb[(w * C::NH8 + nt) * 32 + lane] =
                        make_float4(s[nt][0], s[nt][1], s[nt][2], s[nt][3]);
        float sc[C::NTW][4];
        if constexpr (S8H) {
            s_phase_wg8h(sc, st, sqa, tg, ks, lane);
        } else {
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
                    float4 v = xb[((k2 * C::TG + tg) * C::NH8 + ks * C::NTW + i) * 32 + lane];
                    sc[i][0] += v.x, sc[i][1] += v.y, sc[i][2] += v.z, sc[i][3] += v.w;
                }
            }
        }

        /* scores in log2 units, masked */
#pragma unroll
        for (int i = 0; i < C::NTW; i++) {
            float2 qi = make_float2(256.f, 256.f); /* S8: 1 / c of the two heads */
            if constexpr (S8)
                qi = *(const float2 *)(smem + kWgQ8Inv + 4 * (8 * (ks * C::NTW + i) + 2 * t));
#pragma unroll
            for (int r = 0; r < 4; r++) {
                int tau = FP8 ? 16 * tg + 2 * g + (r >> 1) : 16 * tg + g + 8 * (r >> 1);
                float v = S8    ? sc[i][r] * (r & 1 ? qi.y : qi.x)
                          : FP8 ? sc[i][r] * 256.f
                                : sc[i][r] * p.scale_log2;
                sc[i][r] = tile_start + tau < t_end ? v : -INFINITY;
            }
        }
        /* P of head h0 + e (i, e as below) for this warp's two tokens */
        auto put_p = [&](int i, int e, float p0, float p1) {
            int k0, k1; /* P column (logical k within the group) of tokens for rows g, g+8 */
            if (FP8) {
                int a0 = (2 * g) & 3, a1 = (2 * g + 1) & 3, e4 = g >> 1 & 1, h8 = g >> 2;
                k0 = 2 * a0 + e4 + 8 * h8;
                k1 = 2 * a1 + e4 + 8 * h8;
            } else {
                k0 = g;
                k1 = g + 8;
            }
            if constexpr (WG) { /* wg_p_off(h0 + e, 16 tg + k) */
                unsigned char *pb = (unsigned char *)sp + 1024 * i + 16 * e;
                *(uint16_t *)(pb + wg_p_base(ks, tg, t, k0)) = prob_bits(p0, true);
                *(uint16_t *)(pb + wg_p_base(ks, tg, t, k1)) = prob_bits(p1, true);
            } else {
                uint16_t *row = sp + (8 * (ks * C::NTW + i) + 2 * t + e) * C::PS + 16 * tg;
                row[k0] = prob_bits(p0, FP8);
                row[k1] = prob_bits(p1, FP8);
            }
        };

        /* Lazy rescaling, from a block's second tile on: P against the
         * running max as it stands (m_s: for a head, the same in every
         * warp), without this tile's own max, which needs a reduction over
         * the token groups and a barrier; that is exact as long as no score
         * of the tile is more than kLazyLog2 above it (p <= 2^8, which f16
         * and BF16 keep as well as p <= 1, and O and l share the
         * reference). The barrier that makes P visible also ORs whether a
         * score went over; if one did, the tile's P is taken again as
         * before (the max over its tokens, alpha, rescaling). The first
         * tile always goes that way (m_s is -inf), and every tile of the
         * kernel without LAZY (kvs_mla::lazy_for: blocks of one tile, or
         * KVS_MLA_LAZY=0), which is the code from before. */
        bool slow = !LAZY || tile == 0;
        if (!slow) {
            bool over = false;
            float lt[C::NTW][2]; /* this tile's part of l_s */
#pragma unroll
            for (int i = 0; i < C::NTW; i++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float mr = m_s[i][e];
                    over = over || sc[i][e] > mr + kLazyLog2 || sc[i][e + 2] > mr + kLazyLog2;
                    const float p0 = exp2f(sc[i][e] - mr), p1 = exp2f(sc[i][e + 2] - mr);
                    lt[i][e] = p0 + p1;
                    put_p(i, e, p0, p1);
                }
            if constexpr (WG)
                kvs_fence_proxy_async(); /* P is read by wgmma (the async proxy) */
            slow = __syncthreads_or(over) != 0;
            if (!slow)
#pragma unroll
                for (int i = 0; i < C::NTW; i++)
                    l_s[i][0] += lt[i][0], l_s[i][1] += lt[i][1];
        }
        if (slow) {
            /* per-head max over this warp's 16 tokens, then over the token groups */
#pragma unroll
            for (int i = 0; i < C::NTW; i++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float mx = fmaxf(sc[i][e], sc[i][e + 2]);
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
                    if (g == 0)
                        red_max[tg * HG + 8 * (ks * C::NTW + i) + 2 * t + e] = mx;
                }
            __syncthreads();

            /* this warp's heads: new max, probabilities into P, running sums */
#pragma unroll
            for (int i = 0; i < C::NTW; i++) {
                const int h0 = 8 * (ks * C::NTW + i) + 2 * t;
                float2 mx = make_float2(-INFINITY, -INFINITY);
#pragma unroll
                for (int q = 0; q < C::TG; q++) {
                    float2 v = *(const float2 *)(red_max + q * HG + h0);
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
                    put_p(i, e, p0, p1);
                }
            }
            if constexpr (WG)
                kvs_fence_proxy_async(); /* P is read by wgmma (the async proxy) */
            __syncthreads();
        }
        /* WG: the next tile's copies go out only now. The proxy fence
         * (MEMBAR.ALL.CTA in SASS) also waits for this thread's copies in
         * flight; issued at the top of the tile they cost 3.6% at batch 64
         * x 128K (docs/kernels.md, "wgmma") */
        if (WG && tile + 1 < ntiles) {
            load_tile<FP8, HG, AHEAD, false>(p, stage_a + ((tile + 1) & 1) * C::STAGE_BYTES, seq0,
                                      tile_start + C::NT, t_end, ids + ((tile + 1) & 1) * C::NT,
                                      ids + (tile & 1) * C::NT, [] {});
            kvs_cp_async_commit();
        }
        /* every head of the accumulators: rescale by exp2(m_old - m_new),
         * skipped when no head's max moved (the common case after a few
         * tiles; always on the lazy path, where alpha is 1) */
        if (slow) {
            float2 al[C::NH8];
            bool same = true;
#pragma unroll
            for (int nt = 0; nt < C::NH8; nt++) {
                al[nt] = *(const float2 *)(sm_alpha + 8 * nt + 2 * t);
                same = same && al[nt].x == 1.f && al[nt].y == 1.f;
            }
            if (!__all_sync(0xffffffffu, same)) {
#pragma unroll
                for (int nt = 0; nt < C::NH8; nt++)
#pragma unroll
                    for (int mt = 0; mt < 4; mt++) {
                        o[mt][nt][0] *= al[nt].x, o[mt][nt][1] *= al[nt].y;
                        o[mt][nt][2] *= al[nt].x, o[mt][nt][3] *= al[nt].y;
                    }
            }
        }
        if constexpr (WG)
            pv_phase_wg<VA ? 1 : VH ? 2 : 0>(o, st, spa, w, lane);
        else
            pv_phase<FP8, HG>(o, st, spa, w, lane);
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
                red_l[tg * HG + 8 * (ks * C::NTW + i) + 2 * t + e] = v;
        }
    __syncthreads();

#pragma unroll
    for (int nt = 0; nt < C::NH8; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int h = 8 * nt + 2 * t + e, hh = hg * HG + h;
            float l = 0.f;
#pragma unroll
            for (int q = 0; q < C::TG; q++)
                l += red_l[q * HG + h];
            if (hh >= p.heads)
                continue;
            const float inv = VA ? 256.f / l : 1.f / l; /* VA: V was read times 2^-8 */
            const float lse2 = sm_m[h] + log2f(l);
            const size_t orow = direct ? ((size_t)b * p.heads + hh) * 512 : (part + h) * 512;
            if (FP8) {
                /* m-tiles 2blk, 2blk+1 rows g, g+8 are dims 4g + 0..3 of block blk */
#pragma unroll
                for (int blk = 0; blk < 2; blk++) {
                    const float ib = VH && blk == 1 ? inv * 256.f : inv; /* VH: blk 1 read * 2^-8 */
                    float r0 = o[2 * blk][nt][e] * ib, r1 = o[2 * blk][nt][e + 2] * ib;
                    float r2 = o[2 * blk + 1][nt][e] * ib, r3 = o[2 * blk + 1][nt][e + 2] * ib;
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

template <bool FP8, int HG, bool WG = false, bool AHEAD = FP8, bool LAZY = false, int WGV = 0>
cudaError_t launch(const MlaParams &p, const kvs_mla::Plan &pl, int batch, cudaStream_t s,
                   const struct kvs_kernel_opts *o)
{
    using C = Cfg<FP8, HG>;
    const auto kernel = mla_decode_kernel<FP8, HG, WG, AHEAD, LAZY, WGV>;
    const int smem = C::SMEM + (AHEAD ? C::IDX_BYTES : 0);
    cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e == cudaSuccess && C::BPS > 1) /* room for the second block */
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 cudaSharedmemCarveoutMaxShared);
    if (e != cudaSuccess)
        return e;
    dim3 grid((unsigned)pl.splits, (unsigned)batch, (unsigned)pl.hgroups);
    return kvs_launch_pdl(o, kernel, grid, dim3(kThreads), (size_t)smem, s, p);
}

} // namespace

#endif /* KVSCOPE_MLA_KERNEL_CUH */
