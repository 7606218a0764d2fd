/* kernels/cuda/mma.cuh — thin wrappers over the PTX the attention kernel
 * uses: mma.sync m16n8k16 (f16 and bf16 operands, f32 accumulators),
 * ldmatrix, cp.async, and the two FP8 e4m3 -> f16 pair conversions (the
 * cvt instruction, and an ALU bit-move that yields value * 2^-8).
 * Private to kernels/.
 *
 * defines: kvs_mma_f16, kvs_mma_bf16, kvs_ldsm_x4, kvs_ldsm_x4_t,
 *          kvs_cp_async16, kvs_cp_async4, kvs_cp_async_commit, kvs_cp_async_wait_all,
 *          kvs_e4m3x4_to_f16_cvt, kvs_e4m3x4_to_f16_alu, kvs_smem_u32
 */
#ifndef KVSCOPE_MMA_CUH
#define KVSCOPE_MMA_CUH

#include <stdint.h>

static __device__ __forceinline__ uint32_t kvs_smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* d += a . b, a 16x16 row-major, b 16x8 column-major (fragments as in the
 * PTX ISA's m16n8k16 layout). */
static __device__ __forceinline__ void kvs_mma_f16(float (&d)[4], const uint32_t (&a)[4],
                                                   uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ void kvs_mma_bf16(float (&d)[4], const uint32_t (&a)[4],
                                                    uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Four 8x8 b16 matrices; lanes 8j..8j+7 give the row addresses of matrix j. */
static __device__ __forceinline__ void kvs_ldsm_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

static __device__ __forceinline__ void kvs_ldsm_x4_t(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* 16 bytes global -> shared, bypassing L1; src_bytes 0 writes zeros. */
static __device__ __forceinline__ void kvs_cp_async16(uint32_t dst, const void *src,
                                                      uint32_t src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :
                 : "r"(dst), "l"(src), "r"(src_bytes));
}

/* 4 bytes global -> shared (through L1: .cg takes only 16); src_bytes 0
 * writes zeros. */
static __device__ __forceinline__ void kvs_cp_async4(uint32_t dst, const void *src,
                                                     uint32_t src_bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;"
                 :
                 : "r"(dst), "l"(src), "r"(src_bytes));
}

static __device__ __forceinline__ void kvs_cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}

static __device__ __forceinline__ void kvs_cp_async_wait_all(void)
{
    asm volatile("cp.async.wait_all;" ::: "memory");
}

/* Codes (b0,b1) -> f16x2 lo, (b2,b3) -> hi, exact values (the cvt unit). */
static __device__ __forceinline__ void kvs_e4m3x4_to_f16_cvt(uint32_t w, uint32_t &lo,
                                                             uint32_t &hi)
{
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;\n\t}"
        : "=r"(lo), "=r"(hi)
        : "r"(w));
}

/* Codes (b0,b1) -> f16x2 lo, (b2,b3) -> hi holding value * 2^-8, on the
 * integer ALU (Hopper's conversion unit is slow). An e4m3 code's magnitude
 * bits shifted left by 7 are the f16 of its value times 2^-8 (subnormals
 * included: both formats' subnormals line up); the sign, shifted to bit 14,
 * moves to bit 15 by adding the lane to itself masked to bit 14. NaN codes
 * come out as +-480 * 2^-8: callers document that. */
static __device__ __forceinline__ void kvs_e4m3x4_to_f16_alu(uint32_t w, uint32_t &lo,
                                                             uint32_t &hi)
{
    uint32_t x = __byte_perm(w, 0, 0x4140u) << 7;
    uint32_t y = __byte_perm(w, 0, 0x4342u) << 7;
    lo = x + (x & 0x40004000u);
    hi = y + (y & 0x40004000u);
}

#endif /* KVSCOPE_MMA_CUH */
