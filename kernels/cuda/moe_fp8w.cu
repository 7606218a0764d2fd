/* kernels/cuda/moe_fp8w.cu — routed MoE experts at decode batch sizes with
 * FP8 e4m3 expert weights and 128 x 128 block scales
 * (kvs_cuda_moe_experts_fp8w): moe.cu's two kernels with the weight reads
 * at half the bytes. Routing is read from device memory (no host
 * synchronisation; a step with it can be captured in a CUDA graph).
 * Reference: kvs_cpu_moe_experts_fp8w (kernels/cpu/fp8w.c); tests:
 * kernels/tests/gpu/test_kernels_fp8w.c; timed by bench_kernels fp8w.
 *
 * variants (as moe.cu):
 *   up    per (token, k) pair and 8 rows of gate/up, one warp a row: gate
 *         and up dots, rounded to BF16, SwiGLU to BF16 into the workspace
 *   down  per token and 8 output rows: the top-k down dots summed in k
 *         order, weighted, rounded once (added to y when accumulating)
 * Dots take 16 codes per 16-byte load (four loads in flight a lane), scaled
 * once per 16 codes by their block's scale, when the row length is a
 * multiple of 16 and pointers are aligned; otherwise one element at a time.
 * ids outside [0, n_resident) add nothing. Launched with programmatic
 * dependent launch (kernels/src/pdl_impl.cuh).
 */
#include <math.h>

#include "cuda_common.cuh"
#include "fp8w_impl.cuh"
#include "pdl_impl.cuh"

namespace
{

constexpr int kRows = 8; /* weight rows per block: one per warp */

__device__ __forceinline__ float bf(uint16_t x) { return kvs_conv_bf16_to_float(x); }
__device__ __forceinline__ uint16_t tobf(float x) { return kvs_conv_float_to_bf16(x); }

/* dot of one FP8 row (n codes, scale row sc) with BF16 x, by one warp */
__device__ __forceinline__ float warp_dot_fp8(const uint8_t *__restrict__ w,
                                              const float *__restrict__ sc,
                                              const uint16_t *__restrict__ x, int n, bool vec)
{
    const int lane = threadIdx.x & 31;
    float acc = 0.f;
    if (vec) {
        const uint4 *w4 = (const uint4 *)w, *x4 = (const uint4 *)x;
        const int n16 = n / 16;
        int i = lane;
        for (; i + 96 < n16; i += 128) {
            uint4 wv[4];
#pragma unroll
            for (int u = 0; u < 4; u++)
                wv[u] = __ldg(w4 + i + 32 * u);
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int c = i + 32 * u;
                float f[16];
                kvs_fp8w_cvt16(wv[u], f);
                acc = fmaf(__ldg(sc + (c >> 3)),
                           kvs_fp8w_dot16(f, __ldg(x4 + 2 * c), __ldg(x4 + 2 * c + 1)), acc);
            }
        }
        for (; i < n16; i += 32) {
            float f[16];
            kvs_fp8w_cvt16(__ldg(w4 + i), f);
            acc = fmaf(__ldg(sc + (i >> 3)),
                       kvs_fp8w_dot16(f, __ldg(x4 + 2 * i), __ldg(x4 + 2 * i + 1)), acc);
        }
    } else {
        for (int i = lane; i < n; i += 32)
            acc += kvs_conv_fp8_to_float(w[i]) * sc[i / KVS_FP8_BLOCK] * bf(x[i]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    return acc;
}

/* grid (ceil(inter / kRows), tokens * topk) */
__global__ void __launch_bounds__(32 * kRows)
up_kernel(struct kvs_moe_fp8w_args a, uint16_t *__restrict__ h, bool vec)
{
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    const int pair = blockIdx.y, t = pair / a.topk;
    const int i = blockIdx.x * kRows + (threadIdx.x >> 5);
    if (i >= a.inter)
        return;
    const int e = a.ids[pair];
    float gb = 0.f, ub = 0.f;
    if (e >= 0 && e < a.n_resident) {
        const int kb = (a.dim + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK;
        const int rb = (2 * a.inter + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK;
        const uint16_t *x = a.x + (size_t)t * a.dim;
        const uint8_t *gu = a.gate_up + (size_t)e * 2 * a.inter * a.dim;
        const float *sc = a.gate_up_scale + (size_t)e * rb * kb;
        const int ru = a.inter + i;
        gb = bf(tobf(warp_dot_fp8(gu + (size_t)i * a.dim, sc + (size_t)(i / KVS_FP8_BLOCK) * kb, x,
                                  a.dim, vec)));
        ub = bf(tobf(warp_dot_fp8(gu + (size_t)ru * a.dim, sc + (size_t)(ru / KVS_FP8_BLOCK) * kb,
                                  x, a.dim, vec)));
    }
    if ((threadIdx.x & 31) == 0)
        h[(size_t)pair * a.inter + i] = tobf(gb / (1.0f + expf(-gb)) * ub);
}

/* grid (ceil(dim / kRows), tokens) */
__global__ void __launch_bounds__(32 * kRows)
down_kernel(struct kvs_moe_fp8w_args a, const uint16_t *__restrict__ h, bool vec)
{
    const int t = blockIdx.y;
    const int r = blockIdx.x * kRows + (threadIdx.x >> 5);
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    if (r >= a.dim)
        return;
    const int kb = (a.inter + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK;
    const int rb = (a.dim + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK;
    float acc = 0.f;
    for (int k = 0; k < a.topk; k++) {
        const int pair = t * a.topk + k, e = a.ids[pair];
        if (e < 0 || e >= a.n_resident)
            continue;
        const uint8_t *dn = a.down + ((size_t)e * a.dim + r) * a.inter;
        const float *sc = a.down_scale + ((size_t)e * rb + r / KVS_FP8_BLOCK) * kb;
        acc += a.weights[pair] * warp_dot_fp8(dn, sc, h + (size_t)pair * a.inter, a.inter, vec);
    }
    if ((threadIdx.x & 31) == 0) {
        uint16_t *y = a.y + (size_t)t * a.dim + r;
        *y = tobf(a.accumulate ? bf(*y) + acc : acc);
    }
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

} // namespace

extern "C" enum kvs_status kvs_cuda_moe_experts_fp8w(const struct kvs_moe_fp8w_args *a,
                                                     void *workspace, size_t workspace_bytes,
                                                     void *stream)
{
    if (!a || a->tokens < 0 || a->dim <= 0 || a->inter <= 0 || a->topk <= 0 ||
        a->n_resident <= 0 || a->tokens > 65535)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (a->tokens == 0)
        return KVS_STATUS_OK;
    if (!a->x || !a->ids || !a->weights || !a->gate_up || !a->gate_up_scale || !a->down ||
        !a->down_scale || !a->y || !workspace ||
        workspace_bytes < kvs_cuda_moe_experts_workspace(a->tokens, a->topk, a->inter) ||
        (size_t)a->tokens * a->topk > 65535)
        return KVS_STATUS_INVALID_ARGUMENT;
    cudaStream_t s = kvs_stream(stream);
    uint16_t *h = (uint16_t *)workspace;
    /* 16-byte loads: rows of 16 codes' multiples on aligned bases, x rows
     * (dim * 2 bytes apart) and h rows (inter * 2) aligned as well */
    const bool vec_up = a->dim % 16 == 0 && aligned16(a->x) && aligned16(a->gate_up);
    const bool vec_dn = a->inter % 16 == 0 && aligned16(a->down) && aligned16(h);
    dim3 g1((unsigned)((a->inter + kRows - 1) / kRows), (unsigned)(a->tokens * a->topk));
    KVS_CUDA_TRY(NULL, kvs_launch_pdl(up_kernel, g1, dim3(32 * kRows), 0, s, *a, h, vec_up));
    dim3 g2((unsigned)((a->dim + kRows - 1) / kRows), (unsigned)a->tokens);
    KVS_CUDA_TRY(NULL, kvs_launch_pdl(down_kernel, g2, dim3(32 * kRows), 0, s, *a,
                                      (const uint16_t *)h, vec_dn));
    return KVS_STATUS_OK;
}
