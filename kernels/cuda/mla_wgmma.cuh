/* kernels/cuda/mla_wgmma.cuh — the inner products of the FP8 64-head MLA
 * decode kernel on Hopper's warpgroup MMA (wgmma, sm_90a only), and the
 * shared-memory layouts of Q and P they read. Private; included by
 * mla_kernel.cuh, whose WG variant is compiled in mla_wgmma.cu for sm_90a.
 * Elsewhere (sm_90) the wrappers compile to a trap and are never called.
 *
 * wgmma "RS" form: A (64 x 16, f16) in registers, B (16 x N, f16) in shared
 * memory, D (64 x N, f32) in registers. Per warp, A's registers and D's are
 * laid out exactly as mma.sync m16n8k16's A fragment and its N/8 C
 * fragments, for the warp's 16 rows (warp q of the warpgroup: rows 16q..);
 * so the FP8 -> f16 fragment code of the mma.sync kernel feeds it as is.
 * B is K-major without swizzle: "core matrices" of 8 rows (N) x 16 bytes
 * (8 K elements), 128 contiguous bytes each; the descriptor gives the
 * distance between core matrices adjacent in K (LBO) and in N (SBO).
 *   Q (S^T = K Q^T, N = 64 heads, K = the 576 permuted dims of store_q_fp8):
 *     byte (h/8) 9216 + (p/8) 128 + (h%8) 16 + (p%8) 2; k-step j at +256 j
 *   P (O^T += V^T P^T, N = 64 heads, K = the 64 tokens of a tile in the
 *     order of the V fragments): byte (h/8) 1024 + (k/8) 128 + (h%8) 16 + (k%8) 2
 * Split of a tile between the two warpgroups: S^T for all 64 tokens x 64
 * heads over half the dims each (18 x m64n64k16, summed through shared
 * memory as in the mma.sync kernel); O^T for 256 of the 512 dims each
 * (4 x m64n64k16 per 16 tokens); the same 128 f32 accumulators per thread.
 *
 * defines: kvs_wgmma_* wrappers, wg_q_off, wg_p_off, wg_p_base,
 *          store_q_fp8_wg, s_phase_wg, pv_phase_wg
 */
#ifndef KVSCOPE_MLA_WGMMA_CUH
#define KVSCOPE_MLA_WGMMA_CUH

#include <stdint.h>

#include "mla_impl.cuh"
#include "mla_tile.cuh"
#include "mma.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KVS_WG_ASM(...) asm volatile(__VA_ARGS__)
#else
#define KVS_WG_ASM(...) __trap()
#endif

/* orders this thread's register writes before the wgmmas that read them */
static __device__ __forceinline__ void kvs_wgmma_fence(void)
{
    KVS_WG_ASM("wgmma.fence.sync.aligned;" ::: "memory");
}

static __device__ __forceinline__ void kvs_wgmma_commit(void)
{
    KVS_WG_ASM("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N> static __device__ __forceinline__ void kvs_wgmma_wait(void)
{
    KVS_WG_ASM("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/* generic-proxy writes to shared memory (st.shared) made visible to the
 * async proxy that wgmma reads B through; then a barrier */
static __device__ __forceinline__ void kvs_fence_proxy_async(void)
{
    KVS_WG_ASM("fence.proxy.async.shared::cta;" ::: "memory");
}

/* keeps the compiler from moving reads of accumulators across a wait */
static __device__ __forceinline__ void kvs_wg_reg_fence(float (&d)[8][4])
{
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int r = 0; r < 4; r++)
            asm volatile("" : "+f"(d[i][r])::"memory");
}

/* shared-memory matrix descriptor, no swizzle: start address, LBO and SBO
 * in 16-byte units (bits 0-13, 16-29, 32-45), base offset 0, mode 0 */
static __device__ __forceinline__ uint64_t kvs_wg_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((saddr & 0x3ffffu) >> 4) | ((uint64_t)(lbo >> 4) << 16) |
           ((uint64_t)(sbo >> 4) << 32);
}

/* d (64 x 64 f32, this warp's 16 rows) = a . B (+ d when accumulate) */
static __device__ __forceinline__ void kvs_wgmma_m64n64k16_rs(float (&d)[8][4],
                                                             const uint32_t (&a)[4],
                                                             uint64_t desc, int accumulate)
{
    KVS_WG_ASM("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %37, 0;\n\t"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
               "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n\t}"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]),
                 "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]),
                 "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]),
                 "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                 "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]),
                 "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                 "+f"(d[7][2]), "+f"(d[7][3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));
}

namespace {

constexpr uint32_t kWgQSbo = 72 * 128; /* Q: 8 heads x 576 dims */
constexpr uint32_t kWgPSbo = 8 * 128;  /* P: 8 heads x 64 tokens */

/* byte offsets of (head h, position p) in Q and of (head h, token slot k) in P */
__device__ __forceinline__ uint32_t wg_q_off(int h, int p)
{
    return (uint32_t)((h >> 3) * kWgQSbo + (p >> 3) * 128 + (h & 7) * 16 + (p & 7) * 2);
}

__device__ __forceinline__ uint32_t wg_p_off(int h, int k)
{
    return (uint32_t)((h >> 3) * kWgPSbo + (k >> 3) * 128 + (h & 7) * 16 + (k & 7) * 2);
}

/* wg_p_off(8 (4 ks + i) + 2 t + e, 16 tg + k) = wg_p_base(ks, tg, t, k) + 1024 i
 * + 16 e: the softmax's P stores take the last two as immediates */
__device__ __forceinline__ uint32_t wg_p_base(int ks, int tg, int t, int k)
{
    return (uint32_t)(ks * 4 * kWgPSbo + (2 * tg + (k >> 3)) * 128 + 32 * t + (k & 7) * 2);
}

/* store_q_fp8<64> with Q in the core-matrix layout above (same permutation
 * of the dims, same scaling; the chunks from fetch_q<64, true>); ends with the
 * proxy fence (a barrier follows before the first wgmma reads Q) */
__device__ __forceinline__ void store_q_fp8_wg(const MlaParams &p, unsigned char *sq,
                                               const uint4 (&v)[kQChunks<64>])
{
#pragma unroll
    for (int r = 0; r < kQChunks<64>; r++) {
        int h, c;
        q_chunk<64, true>(r, h, c);
        const int p0 = q_pos<64>(8 * c), p1 = q_pos<64>(8 * c + 4);
        *(uint32_t *)(sq + wg_q_off(h, p0)) = q_pair_f16(v[r].x, p.scale_log2);
        *(uint32_t *)(sq + wg_q_off(h, p0 + 8)) = q_pair_f16(v[r].y, p.scale_log2);
        *(uint32_t *)(sq + wg_q_off(h, p1)) = q_pair_f16(v[r].z, p.scale_log2);
        *(uint32_t *)(sq + wg_q_off(h, p1 + 8)) = q_pair_f16(v[r].w, p.scale_log2);
    }
    kvs_fence_proxy_async();
}

/* S^T for this warpgroup's k-slice ks (the 18 k-steps of s_phase_fp8's
 * slice ks), this warp's 16 tokens (group tg) of all 64 heads, into s
 * (overwritten). A fragments as in s_phase_fp8; wgmma groups of up to 4
 * k-steps, one group in flight while the next one's K is converted (each
 * group's fresh A registers are fenced, wgmma.fence, before it reads them). */
__device__ __forceinline__ void s_phase_wg(float (&s)[8][4], const unsigned char *st, uint32_t sq,
                                           int tg, int ks, int lane)
{
    constexpr int ROWB = Cfg<true, 64>::ROWB;
    const int g = lane >> 2, t = lane & 3;
    const unsigned char *r0 = st + (16 * tg + 2 * g) * ROWB + 16 * t;
    const unsigned char *r1 = r0 + ROWB;
    const uint64_t qd = kvs_wg_desc(sq, 128, kWgQSbo);
    /* a k-step's A from word w0 of row 2g and w1 of row 2g+1 */
    auto frag = [](uint32_t (&a)[4], uint32_t w0, uint32_t w1) {
        kvs_e4m3x4_to_f16_alu(w0, a[0], a[2]);
        kvs_e4m3x4_to_f16_alu(w1, a[1], a[3]);
    };
    /* registers written since the last wgmmas are fenced before these read them */
    auto mma = [&](const uint32_t (&a)[4], int j, int acc) {
        kvs_wgmma_m64n64k16_rs(s, a, qd + (uint64_t)(16 * j), acc); /* +256 j bytes */
    };
    const int hoff = ks == 0 ? 256 : 264, hj = ks == 0 ? 16 : 18, c0 = ks == 0 ? 0 : 5;
    {
        uint2 x = *(const uint2 *)(r0 + hoff), y = *(const uint2 *)(r1 + hoff);
        uint32_t a0[4], a1[4];
        frag(a0, x.x, y.x);
        frag(a1, x.y, y.y);
        kvs_wgmma_fence();
        mma(a0, hj, 0);
        mma(a1, hj + 1, 1);
        kvs_wgmma_commit();
    }
#pragma unroll
    for (int c = 0; c < 4; c++) {
        const int cb = c0 + c;
        uint4 x = *(const uint4 *)(r0 + 64 * cb), y = *(const uint4 *)(r1 + 64 * cb);
        uint32_t a[4][4];
        frag(a[0], x.x, y.x);
        frag(a[1], x.y, y.y);
        frag(a[2], x.z, y.z);
        frag(a[3], x.w, y.w);
        kvs_wgmma_fence();
#pragma unroll
        for (int i = 0; i < 4; i++)
            mma(a[i], 4 * cb + i, 1);
        kvs_wgmma_commit();
        kvs_wgmma_wait<1>();
    }
    kvs_wgmma_wait<0>();
    kvs_wg_reg_fence(s);
}

/* O^T += V^T P^T: this warpgroup's 256 dims (m64 tiles mt = 0..3; warp w
 * owns dims 64 w.., rows as in pv_phase<true, 64>), all 64 heads, the 64
 * tokens of the tile. Returns with every wgmma complete (o readable, P free):
 * leaving the last group running into the next tile was 10% slower at
 * batch 64 x 128K (docs/kernels.md). */
__device__ __forceinline__ void pv_phase_wg(float (&o)[4][8][4], const unsigned char *st,
                                            uint32_t sp, int w, int lane)
{
    constexpr int ROWB = Cfg<true, 64>::ROWB;
    const int g = lane >> 2, t = lane & 3;
    const uint64_t pd = kvs_wg_desc(sp, 128, kWgPSbo);
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
        kvs_wg_reg_fence(o[mt]);
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        uint32_t a[4][4];
#pragma unroll
        for (int blk = 0; blk < 2; blk++) {
            const unsigned char *vb = st + (16 * kk + t) * ROWB + 64 * w + 32 * blk + 4 * g;
            uint32_t w0 = *(const uint32_t *)vb, w1 = *(const uint32_t *)(vb + 4 * ROWB);
            uint32_t w2 = *(const uint32_t *)(vb + 8 * ROWB);
            uint32_t w3 = *(const uint32_t *)(vb + 12 * ROWB);
            kvs_e4m3x4_to_f16_cvt(__byte_perm(w0, w1, 0x5140u), a[2 * blk][0], a[2 * blk][1]);
            kvs_e4m3x4_to_f16_cvt(__byte_perm(w0, w1, 0x7362u), a[2 * blk + 1][0],
                                  a[2 * blk + 1][1]);
            kvs_e4m3x4_to_f16_cvt(__byte_perm(w2, w3, 0x5140u), a[2 * blk][2], a[2 * blk][3]);
            kvs_e4m3x4_to_f16_cvt(__byte_perm(w2, w3, 0x7362u), a[2 * blk + 1][2],
                                  a[2 * blk + 1][3]);
        }
        kvs_wgmma_fence(); /* the new A, and (kk == 0) the rescaled o */
#pragma unroll
        for (int mt = 0; mt < 4; mt++)
            kvs_wgmma_m64n64k16_rs(o[mt], a[mt], pd + (uint64_t)(16 * kk), 1); /* +256 kk */
        kvs_wgmma_commit();
        kvs_wgmma_wait<1>();
    }
    kvs_wgmma_wait<0>();
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
        kvs_wg_reg_fence(o[mt]);
}

} // namespace

#endif /* KVSCOPE_MLA_WGMMA_CUH */
