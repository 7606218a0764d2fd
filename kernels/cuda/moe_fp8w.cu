/* kernels/cuda/moe_fp8w.cu — routed MoE experts at decode batch sizes with
 * FP8 e4m3 expert weights and 128 x 128 block scales
 * (kvs_cuda_moe_experts_fp8w): moe.cu's two kernels with the weight reads
 * at half the bytes (the kernels' bodies and launcher: moe_impl.cuh).
 * Routing is read from device memory (no host synchronisation; a step with
 * it can be captured in a CUDA graph).
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
#include "moe_impl.cuh"
#include "pdl_impl.cuh"

namespace
{

using kvs_moe::bf;

/* FP8 experts for kvs_moe::up / down (moe_impl.cuh): row r of an expert's
 * matrix of n rows and k columns takes its scales from row r / 128 of the
 * expert's ceil(n / 128) x ceil(k / 128) scale blocks */
struct Fp8w {
    using Args = struct kvs_moe_fp8w_args;
    struct Row {
        const uint8_t *w; /* n codes */
        const float *sc;  /* their scale row */
    };
    static constexpr int kVec = 16;
    static bool weights_set(const Args &a)
    {
        return a.gate_up && a.gate_up_scale && a.down && a.down_scale;
    }

    /* dot of one FP8 row with BF16 x[n], by one warp */
    static __device__ __forceinline__ float dot(const Row &row, const uint16_t *__restrict__ x,
                                                int n, bool vec)
    {
        const uint8_t *__restrict__ w = row.w;
        const float *__restrict__ sc = row.sc;
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
                    kvs_fp8w_codes16<false>(wv[u], f);
                    acc = fmaf(__ldg(sc + (c >> 3)),
                               kvs_fp8w_dot16(f, __ldg(x4 + 2 * c), __ldg(x4 + 2 * c + 1)), acc);
                }
            }
            for (; i < n16; i += 32) {
                float f[16];
                kvs_fp8w_codes16<false>(__ldg(w4 + i), f);
                acc = fmaf(__ldg(sc + (i >> 3)),
                           kvs_fp8w_dot16(f, __ldg(x4 + 2 * i), __ldg(x4 + 2 * i + 1)), acc);
            }
        } else {
            for (int i = lane; i < n; i += 32)
                acc += kvs_conv_fp8_to_float(w[i]) * sc[i / KVS_FP8_BLOCK] * bf(x[i]);
        }
        return kvs_moe::warp_sum(acc);
    }

    struct GateUp {
        int e, kb, rb;
        __device__ GateUp(const Args &a, int expert)
            : e(expert), kb((a.dim + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK),
              rb((2 * a.inter + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK)
        {
        }
        __device__ Row row(const Args &a, int r) const
        {
            const uint8_t *gu = a.gate_up + (size_t)e * 2 * a.inter * a.dim;
            const float *sc = a.gate_up_scale + (size_t)e * rb * kb;
            return {gu + (size_t)r * a.dim, sc + (size_t)(r / KVS_FP8_BLOCK) * kb};
        }
    };
    struct Down {
        int kb, rb;
        __device__ explicit Down(const Args &a)
            : kb((a.inter + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK),
              rb((a.dim + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK)
        {
        }
        __device__ Row row(const Args &a, int e, int r) const
        {
            return {a.down + ((size_t)e * a.dim + r) * a.inter,
                    a.down_scale + ((size_t)e * rb + r / KVS_FP8_BLOCK) * kb};
        }
    };
};

KVS_MOE_KERNELS(Fp8w, up_kernel, down_kernel)

} // namespace

extern "C" enum kvs_status kvs_cuda_moe_experts_fp8w(const struct kvs_moe_fp8w_args *a,
                                                     void *workspace, size_t workspace_bytes,
                                                     void *stream)
{
    return kvs_moe::launch<Fp8w>(a, workspace, workspace_bytes, stream, up_kernel, down_kernel);
}
