/* kernels/cuda/mla_ws.cuh — the warp-specialized FP8 64-head MLA decode
 * kernel on wgmma (sm_90a; an A/B variant of the wgmma kernel, selected by
 * kvs_kernel_opts mla_wgv 32, KVS_MLA_WGV=32; not the default). Private;
 * included by mla_wgmma.cu after mla_kernel.cuh, whose wgmma pieces
 * (mla_wgmma.cuh) and tile/Q helpers (mla_tile.cuh) it uses.
 *
 * Why: the landed wgmma kernel runs S, softmax and O in lockstep across its
 * two warpgroups (three or four __syncthreads a tile); ncu (B64 x 32K) saw
 * issue slots 39.7% busy, 58% of cycles with no eligible warp. Here the
 * phases run in different warpgroups and overlap across tiles:
 *
 *   WG0 (warps 0-3): S^T = K Q^T for the whole tile, 64 tokens (warp q:
 *       tokens 16q..) x 64 heads over all 576 dims (36 m64n64k16 RS wgmmas,
 *       K converted in registers as in s_phase_wg), the running max (lazy
 *       rescaling: P against the running max unless a score rose more than
 *       kLazyLog2 above it, OR-ed over WG0 by a named barrier), P into one
 *       of two P buffers, alpha and a rescale flag beside it; and the tile
 *       copies: warp 0's lanes issue a tile's 64 rows as cp.async.bulk
 *       copies (576 bytes each, global -> shared, completing on the stage's
 *       mbarrier), a tile ahead into a third stage.
 *   WG1, WG2: O^T += V^T P^T for 256 of the 512 dims each (pv_phase_wg:
 *       V = the first 512 bytes of the same K rows, converted by cvt), after
 *       rescaling O by alpha when the flag says a max moved.
 *
 * So S of tile j runs while O of tile j-1 does. Synchronisation, all
 * mbarriers (no __syncthreads in the loop):
 *   full[s]  (3 stages): tile j in stage j % 3 (expect_tx of 64 x 576 bytes)
 *   pfull[b] (2): P, alpha and the flag of tile j in buffer j % 2 (128
 *            arrivals: every WG0 thread after its P stores and a proxy fence)
 *   cons[b]  (2): O of tile j done by both consumer warpgroups (8 arrivals,
 *            one per warp after its wgmma wait): frees P buffer j % 2 and the
 *            stage of tile j, which WG0 refills with tile j + 3 at the top of
 *            its tile j + 2, after waiting on it.
 * Rows past the block's end are copies of its last row (the scores there
 * are masked to -inf, so P is 0; a NaN in V of that row reaches O through
 * the real row anyway), so every copy is a whole 576-byte row.
 * Registers: 384 threads, one block per SM (168 registers at launch);
 * setmaxnreg gives WG0 120 and the consumers 192 (128 accumulators each):
 * ptxas 0 spills, where 152/176 and 136/184 made it serialize the wgmmas.
 * The protocol is modelled in kernels/bench/mla_ws_protocol.py (random
 * interleavings: no deadlock, no buffer reused while read); change both.
 * Status (2026-12-08): compiled, never run on a GPU (docs/log/2026-12-08-mla.md);
 * tested by bench/mla_ws.sh (test_kernels_mla with KVS_TEST_MLA_WGVS=0,32).
 *
 * defines (anonymous namespace): WsCfg, mla_ws_kernel, launch_ws
 */
#ifndef KVSCOPE_MLA_WS_CUH
#define KVSCOPE_MLA_WS_CUH

#include "mla_kernel.cuh"

namespace {

constexpr int kWsThreads = 384;

struct WsCfg {
    static constexpr int NT = 64, ROWB = 608, GROWB = 576, STAGES = 3;
    static constexpr int Q_BYTES = 64 * 576 * 2;
    static constexpr int STAGE_BYTES = NT * ROWB;
    static constexpr int P_BYTES = 64 * 64 * 2;
    static constexpr int OFF_STAGE = Q_BYTES;
    static constexpr int OFF_P = OFF_STAGE + STAGES * STAGE_BYTES;
    static constexpr int OFF_RED = OFF_P + 2 * P_BYTES; /* [4][64] f32: tile max per warp */
    static constexpr int OFF_L = OFF_RED + 4 * 64 * 4;  /* [4][64] f32: sums per warp */
    static constexpr int OFF_M = OFF_L + 4 * 64 * 4;    /* [64] f32: final max */
    static constexpr int OFF_ALPHA = OFF_M + 64 * 4;    /* [2][64] f32 */
    static constexpr int OFF_FLAG = OFF_ALPHA + 2 * 64 * 4; /* [2] int (16 bytes) */
    static constexpr int OFF_BAR = OFF_FLAG + 16;       /* 7 mbarriers */
    static constexpr int SMEM = OFF_BAR + 64;
    static_assert(SMEM <= 227 * 1024, "shared memory");
    static_assert(NT == Cfg<true, 64>::NT && ROWB == Cfg<true, 64>::ROWB, "the wgmma pieces' layout");
};

__device__ __forceinline__ void ws_mbar_init(uint32_t bar, uint32_t count)
{
    KVS_WG_ASM("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void ws_mbar_init_fence(void)
{
    KVS_WG_ASM("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void ws_mbar_arrive(uint32_t bar)
{
    KVS_WG_ASM("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared::cta.b64 st, [%0];\n\t}" ::"r"(bar)
               : "memory");
}

__device__ __forceinline__ void ws_mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    KVS_WG_ASM("{\n\t.reg .b64 st;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}" ::"r"(
                   bar),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void ws_mbar_wait(uint32_t bar, uint32_t parity)
{
    KVS_WG_ASM("{\n\t.reg .pred P1;\n\tLAB_WAIT:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
               "@P1 bra DONE;\n\tbra LAB_WAIT;\n\tDONE:\n\t}" ::"r"(bar),
               "r"(parity)
               : "memory");
}

/* bytes (a multiple of 16) from global src to shared dst, completing on bar */
__device__ __forceinline__ void ws_bulk_g2s(uint32_t dst, const void *src, uint32_t bytes,
                                            uint32_t bar)
{
    KVS_WG_ASM("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

/* the 128 threads of WG0 (named barrier 1) */
__device__ __forceinline__ void ws_bar_wg0(void)
{
    KVS_WG_ASM("bar.sync 1, 128;" ::: "memory");
}

/* all 384 threads, from different places in the code (named barrier 2) */
__device__ __forceinline__ void ws_bar_all(void)
{
    KVS_WG_ASM("bar.sync 2, 384;" ::: "memory");
}

/* WG0's 128, OR-ing a predicate over them */
__device__ __forceinline__ bool ws_bar_wg0_or(bool v)
{
    uint32_t r = 0;
    KVS_WG_ASM("{\n\t.reg .pred p, q;\n\tsetp.ne.b32 q, %1, 0;\n\t"
               "bar.red.or.pred p, 1, 128, q;\n\tselp.b32 %0, 1, 0, p;\n\t}"
               : "=r"(r)
               : "r"((uint32_t)v)
               : "memory");
    return r != 0;
}

template <int N> __device__ __forceinline__ void ws_setmaxnreg_dec(void)
{
    KVS_WG_ASM("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

template <int N> __device__ __forceinline__ void ws_setmaxnreg_inc(void)
{
    KVS_WG_ASM("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

/* S^T of the whole tile for this warp's 16 tokens (group tg) x 64 heads,
 * all 576 dims: s_phase_wg's two slices in one accumulator (k-step 4c + i
 * from word i of the 16 bytes at 64c + 16t of rows 2g and 2g + 1) */
__device__ __forceinline__ void s_phase_ws(float (&s)[8][4], const unsigned char *st, uint32_t sq,
                                           int tg, int lane)
{
    constexpr int ROWB = WsCfg::ROWB;
    const int g = lane >> 2, t = lane & 3;
    const unsigned char *r0 = st + (16 * tg + 2 * g) * ROWB + 16 * t;
    const unsigned char *r1 = r0 + ROWB;
    const uint64_t qd = kvs_wg_desc(sq, 128, kWgQSbo);
    auto frag = [](uint32_t (&a)[4], uint32_t w0, uint32_t w1) {
        a[0] = kvs_e4m3x2_to_f16_alu3(w0, 0u, 0x9180u);
        a[2] = kvs_e4m3x2_to_f16_alu3(w0, 0u, 0xB3A2u);
        a[1] = kvs_e4m3x2_to_f16_alu3(w1, 0u, 0x9180u);
        a[3] = kvs_e4m3x2_to_f16_alu3(w1, 0u, 0xB3A2u);
    };
#pragma unroll
    for (int c = 0; c < 9; c++) {
        uint4 x = *(const uint4 *)(r0 + 64 * c), y = *(const uint4 *)(r1 + 64 * c);
        uint32_t a[4][4];
        frag(a[0], x.x, y.x);
        frag(a[1], x.y, y.y);
        frag(a[2], x.z, y.z);
        frag(a[3], x.w, y.w);
        kvs_wgmma_fence();
#pragma unroll
        for (int i = 0; i < 4; i++)
            kvs_wgmma_m64n64k16_rs(s, a[i], qd + (uint64_t)(16 * (4 * c + i)), c > 0 || i > 0);
        kvs_wgmma_commit();
        if (c > 0)
            kvs_wgmma_wait<1>();
    }
    kvs_wgmma_wait<0>();
    kvs_wg_reg_fence(s);
}

template <int V>
__global__ void __launch_bounds__(kWsThreads, 1) mla_ws_kernel(const MlaParams p)
{
    using W = WsCfg;
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
    const int g = lane >> 2, t = lane & 3;
    const int split = blockIdx.x, b = blockIdx.y, hg = blockIdx.z;
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    const int seq0 = p.seq_start[b], n = p.seq_start[b + 1] - seq0;
    const int t_begin = split * p.tiles_per_split * W::NT;
    const int t_end = split == p.splits - 1 ? n : min(n, t_begin + p.tiles_per_split * W::NT);
    const bool direct = p.splits == 1;
    const size_t part = ((size_t)(b * p.hgroups + hg) * p.splits + split) * 64;
    const size_t pblk = ((size_t)hg * gridDim.y + b) * gridDim.x + split;
    if (p.prof && tid == 0) {
        p.prof[kvs_mla::kProfDecode * pblk] = kvs_mla::globaltimer();
        p.prof[kvs_mla::kProfDecode * pblk + 2] = clock64();
    }
    if (t_begin >= t_end) { /* as mla_decode_kernel */
        if (!direct) {
            if (tid < 64)
                p.lsepart[part + tid] = -INFINITY;
            return;
        }
        for (int i = tid; i < 64 * 512; i += kWsThreads) {
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

    const uint32_t sqa = kvs_smem_u32(smem);
    const uint32_t bar = sqa + W::OFF_BAR;
    /* full[s] at bar + 8 s, pfull[b] at bar + 24 + 8 b, cons[b] at bar + 40 + 8 b */
    float *red_l = (float *)(smem + W::OFF_L);
    float *sm_m = (float *)(smem + W::OFF_M);
    float *sm_alpha = (float *)(smem + W::OFF_ALPHA);
    int *flags = (int *)(smem + W::OFF_FLAG);
    const int ntiles = (t_end - t_begin + W::NT - 1) / W::NT;
    const int32_t *tok = p.tokens;

    if (tid == 0) {
        for (int s = 0; s < 3; s++)
            ws_mbar_init(bar + 8 * s, 1);
        for (int q = 0; q < 2; q++) {
            ws_mbar_init(bar + 24 + 8 * q, 128);
            ws_mbar_init(bar + 40 + 8 * q, 8);
        }
        ws_mbar_init_fence();
    }
    __syncthreads();

    /* KV row of unit u of the tile at ts (past the end: the last row) */
    auto row_of = [&](int ts, int u) -> int {
        const int tau = min(ts + u, t_end - 1);
        return tok ? tok[seq0 + tau] : seq0 + tau;
    };
    /* warp 0: tile `tile`'s rows r0 (unit lane), r1 (unit lane + 32) */
    auto issue = [&](int tile, int r0, int r1) {
        const int s = tile % 3;
        const uint32_t dst = sqa + W::OFF_STAGE + (uint32_t)(s * W::STAGE_BYTES);
        if (lane == 0)
            ws_mbar_expect_tx(bar + 8 * s, W::NT * W::GROWB);
        __syncwarp();
        ws_bulk_g2s(dst + (uint32_t)(lane * W::ROWB), p.kv + (size_t)r0 * W::GROWB, W::GROWB,
                    bar + 8 * s);
        ws_bulk_g2s(dst + (uint32_t)((lane + 32) * W::ROWB), p.kv + (size_t)r1 * W::GROWB,
                    W::GROWB, bar + 8 * s);
    };
    int nr0 = 0, nr1 = 0; /* warp 0: rows of the next tile to issue */
    if (tid < 32) {
        issue(0, row_of(t_begin, lane), row_of(t_begin, lane + 32));
        if (ntiles > 1)
            issue(1, row_of(t_begin + W::NT, lane), row_of(t_begin + W::NT, lane + 32));
        if (ntiles > 2)
            nr0 = row_of(t_begin + 2 * W::NT, lane), nr1 = row_of(t_begin + 2 * W::NT, lane + 32);
    }
    if (tid < 256) { /* Q by WG0 and WG1 (the mapping of fetch_q<64, true>) */
        uint4 qv[kQChunks<64>];
        fetch_q<64, true>(p, qv, b, hg);
        store_q_fp8_wg(p, smem, qv);
    }
    __syncthreads();

    if (wg == 0) {
        ws_setmaxnreg_dec<120>();
        float *red_max = (float *)(smem + W::OFF_RED);
        float m_s[8][2], l_s[8][2];
#pragma unroll
        for (int i = 0; i < 8; i++)
            m_s[i][0] = m_s[i][1] = -INFINITY, l_s[i][0] = l_s[i][1] = 0.f;
        /* P column (token slot within the group) of rows g, g + 8: as put_p */
        const int e4 = (g >> 1) & 1, h8 = g >> 2;
        const int k0 = 2 * ((2 * g) & 3) + e4 + 8 * h8, k1 = 2 * ((2 * g + 1) & 3) + e4 + 8 * h8;
        const uint32_t po0 = wg_p_base(0, wq, t, k0), po1 = wg_p_base(0, wq, t, k1);
        for (int j = 0; j < ntiles; j++) {
            const int tile_start = t_begin + j * W::NT;
            if (j >= 2) /* O of tile j - 2 done: its stage and P buffer are free */
                ws_mbar_wait(bar + 40 + 8 * (j & 1), ((j - 2) >> 1) & 1);
            if (tid < 32 && j >= 1 && j + 1 < ntiles) {
                issue(j + 1, nr0, nr1);
                if (j + 2 < ntiles)
                    nr0 = row_of(tile_start + 2 * W::NT, lane),
                    nr1 = row_of(tile_start + 2 * W::NT, lane + 32);
            }
            ws_mbar_wait(bar + 8 * (j % 3), (j / 3) & 1);
            if (p.prof && j == 0 && tid == 0)
                p.prof[kvs_mla::kProfDecode * pblk + 3] = clock64();
            const unsigned char *st = smem + W::OFF_STAGE + (j % 3) * W::STAGE_BYTES;
            float s[8][4];
            s_phase_ws(s, st, sqa, wq, lane);
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int r = 0; r < 4; r++) {
                    const int tau = 16 * wq + 2 * g + (r >> 1);
                    s[i][r] = tile_start + tau < t_end ? s[i][r] * 256.f : -INFINITY;
                }
            bool slow = j == 0;
            if (!slow) {
                bool over = false;
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        over = over || s[i][e] > m_s[i][e] + kLazyLog2 ||
                               s[i][e + 2] > m_s[i][e] + kLazyLog2;
                slow = ws_bar_wg0_or(over);
            }
            bool moved = false;
            if (slow) {
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        float mx = fmaxf(s[i][e], s[i][e + 2]);
                        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
                        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
                        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
                        if (g == 0)
                            red_max[wq * 64 + 8 * i + 2 * t + e] = mx;
                    }
                ws_bar_wg0();
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    const int h0 = 8 * i + 2 * t;
                    float2 mx = make_float2(-INFINITY, -INFINITY);
#pragma unroll
                    for (int q = 0; q < 4; q++) {
                        const float2 v = *(const float2 *)(red_max + q * 64 + h0);
                        mx.x = fmaxf(mx.x, v.x), mx.y = fmaxf(mx.y, v.y);
                    }
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const float mnew = fmaxf(m_s[i][e], e ? mx.y : mx.x);
                        const float alpha = m_s[i][e] == -INFINITY ? 0.f : exp2f(m_s[i][e] - mnew);
                        m_s[i][e] = mnew;
                        l_s[i][e] *= alpha;
                        moved = moved || alpha != 1.f;
                        if (wq == 0 && g == 0)
                            sm_alpha[64 * (j & 1) + h0 + e] = alpha;
                    }
                }
            }
            /* the rescale flag of this tile (tile 0: O is still 0) */
            moved = __any_sync(0xffffffffu, moved);
            if (tid == 0)
                flags[j & 1] = j > 0 && moved;
            unsigned char *pb = smem + W::OFF_P + (j & 1) * W::P_BYTES;
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float p0 = exp2f(s[i][e] - m_s[i][e]), p1 = exp2f(s[i][e + 2] - m_s[i][e]);
                    l_s[i][e] += p0 + p1;
                    *(uint16_t *)(pb + 1024 * i + 16 * e + po0) = prob_bits(p0, true);
                    *(uint16_t *)(pb + 1024 * i + 16 * e + po1) = prob_bits(p1, true);
                }
            kvs_fence_proxy_async(); /* P is read by wgmma (the async proxy) */
            ws_mbar_arrive(bar + 24 + 8 * (j & 1));
        }
        if (p.prof && tid == 0)
            p.prof[kvs_mla::kProfDecode * pblk + 4] = clock64();
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float v = l_s[i][e];
                v += __shfl_xor_sync(0xffffffffu, v, 4);
                v += __shfl_xor_sync(0xffffffffu, v, 8);
                v += __shfl_xor_sync(0xffffffffu, v, 16);
                if (g == 0) {
                    red_l[wq * 64 + 8 * i + 2 * t + e] = v;
                    if (wq == 0)
                        sm_m[8 * i + 2 * t + e] = m_s[i][e];
                }
            }
        ws_bar_all(); /* red_l and sm_m for the consumers' epilogue */
    } else {
        ws_setmaxnreg_inc<192>();
        const int w = 4 * (wg - 1) + wq; /* dims 64 w .. 64 w + 63 (pv_phase_wg's warp) */
        float o[4][8][4];
#pragma unroll
        for (int mt = 0; mt < 4; mt++)
#pragma unroll
            for (int nt = 0; nt < 8; nt++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    o[mt][nt][r] = 0.f;
        for (int j = 0; j < ntiles; j++) {
            ws_mbar_wait(bar + 24 + 8 * (j & 1), (j >> 1) & 1);
            ws_mbar_wait(bar + 8 * (j % 3), (j / 3) & 1); /* the stage's copies, seen here too */
            if (flags[j & 1]) {
#pragma unroll
                for (int nt = 0; nt < 8; nt++) {
                    const float2 al = *(const float2 *)(sm_alpha + 64 * (j & 1) + 8 * nt + 2 * t);
#pragma unroll
                    for (int mt = 0; mt < 4; mt++) {
                        o[mt][nt][0] *= al.x, o[mt][nt][1] *= al.y;
                        o[mt][nt][2] *= al.x, o[mt][nt][3] *= al.y;
                    }
                }
            }
            const unsigned char *st = smem + W::OFF_STAGE + (j % 3) * W::STAGE_BYTES;
            pv_phase_wg<0>(o, st, sqa + W::OFF_P + (uint32_t)((j & 1) * W::P_BYTES), w, lane);
            __syncwarp();
            if (lane == 0)
                ws_mbar_arrive(bar + 40 + 8 * (j & 1));
        }
        ws_bar_all();
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int h = 8 * nt + 2 * t + e, hh = hg * 64 + h;
                const float l = (red_l[h] + red_l[64 + h]) + (red_l[128 + h] + red_l[192 + h]);
                if (hh >= p.heads)
                    continue;
                const float inv = 1.f / l;
                const float lse2 = sm_m[h] + log2f(l);
                const size_t orow = direct ? ((size_t)b * p.heads + hh) * 512 : (part + h) * 512;
#pragma unroll
                for (int blk = 0; blk < 2; blk++) {
                    float r0 = o[2 * blk][nt][e] * inv, r1 = o[2 * blk][nt][e + 2] * inv;
                    float r2 = o[2 * blk + 1][nt][e] * inv, r3 = o[2 * blk + 1][nt][e + 2] * inv;
                    const int d = 64 * w + 32 * blk + 4 * g;
                    if (direct) {
                        __nv_bfloat162 lo = __floats2bfloat162_rn(r0, r1);
                        __nv_bfloat162 hi = __floats2bfloat162_rn(r2, r3);
                        *(uint2 *)(p.out + orow + d) =
                            make_uint2(*(const uint32_t *)&lo, *(const uint32_t *)&hi);
                    } else {
                        __half2 lo = __floats2half2_rn(r0, r1), hi = __floats2half2_rn(r2, r3);
                        *(uint2 *)((__half *)p.opart + orow + d) =
                            make_uint2(*(const uint32_t *)&lo, *(const uint32_t *)&hi);
                    }
                }
                if (w == 0 && g == 0) {
                    if (!direct)
                        p.lsepart[part + h] = lse2;
                    else if (p.lse)
                        p.lse[(size_t)b * p.heads + hh] = lse2 * kLn2;
                }
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

template <int V>
cudaError_t launch_ws(const MlaParams &p, const kvs_mla::Plan &pl, int batch, cudaStream_t s,
                      const struct kvs_kernel_opts *o)
{
    const auto kernel = mla_ws_kernel<V>;
    cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, WsCfg::SMEM);
    if (e != cudaSuccess)
        return e;
    dim3 grid((unsigned)pl.splits, (unsigned)batch, (unsigned)pl.hgroups);
    return kvs_launch_pdl(o, kernel, grid, dim3(kWsThreads), (size_t)WsCfg::SMEM, s, p);
}

} // namespace

#endif /* KVSCOPE_MLA_WS_CUH */
