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
 * Dots take 16 codes per 16-byte load, scaled once per 16 codes by their
 * block's scale, when the row length is a multiple of 16 and pointers are
 * aligned; otherwise one element at a time. Configurations
 * (moe_fp8w_cfg.h): r1, moe.cu's bodies (one row a warp at a time, four
 * loads in flight a lane), or gate and up rows together and several top-k
 * down rows together (moe_impl.cuh's up_rows / down_rows), registers capped.
 * ids outside [0, n_resident) add nothing. Launched with programmatic
 * dependent launch (kernels/src/pdl_impl.cuh).
 */
#include <math.h>

#include "cuda_common.cuh"
#include "fp8w_impl.cuh"
#include "moe_fp8w_cfg.h"
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

    /* the dots of R FP8 rows with BF16 x[j][n], by one warp; U chunks of
     * 16 codes of each row in flight a lane */
    template <int R, int U>
    static __device__ __forceinline__ void dots(const Row (&row)[R],
                                                const uint16_t *const (&x)[R], int n, bool vec,
                                                float (&out)[R])
    {
        const int lane = threadIdx.x & 31;
        float acc[R];
#pragma unroll
        for (int j = 0; j < R; j++)
            acc[j] = 0.f;
        if (vec) {
            const int n16 = n / 16;
            int i = lane;
            if constexpr (R == 1) { /* unrolled as the compiler likes (r1 as first measured) */
                for (; i + 32 * (U - 1) < n16; i += 32 * U)
                    round<R, U>(row, x, i, acc);
                for (; i < n16; i += 32)
                    round<R, 1>(row, x, i, acc);
            } else { /* one round at a time: its loads are all the registers hold */
#pragma unroll 1
                for (; i + 32 * (U - 1) < n16; i += 32 * U)
                    round<R, U>(row, x, i, acc);
#pragma unroll 1
                for (; i < n16; i += 32)
                    round<R, 1>(row, x, i, acc);
            }
        } else {
            for (int j = 0; j < R; j++)
                for (int i = lane; i < n; i += 32)
                    acc[j] += kvs_conv_fp8_to_float(row[j].w[i]) * row[j].sc[i / KVS_FP8_BLOCK] *
                              bf(x[j][i]);
        }
#pragma unroll
        for (int j = 0; j < R; j++)
            out[j] = kvs_moe::warp_sum(acc[j]);
    }

    /* chunks i + 32 u (u < U) of the R rows into acc: all loads first */
    template <int R, int U>
    static __device__ __forceinline__ void round(const Row (&row)[R],
                                                 const uint16_t *const (&x)[R], int i,
                                                 float (&acc)[R])
    {
        uint4 wv[R][U];
#pragma unroll
        for (int j = 0; j < R; j++)
#pragma unroll
            for (int u = 0; u < U; u++)
                wv[j][u] = __ldg((const uint4 *)row[j].w + i + 32 * u);
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int j = 0; j < R; j++)
                acc[j] = chunk(row[j], x[j], wv[j][u], i + 32 * u, acc[j]);
    }

    /* acc plus chunk c (16 codes w, scaled) of a row times x's chunk c */
    static __device__ __forceinline__ float chunk(const Row &row, const uint16_t *__restrict__ x,
                                                  const uint4 &w, int c, float acc)
    {
        const uint4 *x4 = (const uint4 *)x;
        float f[16];
        kvs_fp8w_codes16<false>(w, f);
        return fmaf(__ldg(row.sc + (c >> 3)),
                    kvs_fp8w_dot16(f, __ldg(x4 + 2 * c), __ldg(x4 + 2 * c + 1)), acc);
    }

    /* one row (kvs_moe::up / down): four chunks in flight */
    static __device__ __forceinline__ float dot(const Row &row, const uint16_t *__restrict__ x,
                                                int n, bool vec)
    {
        const Row rows[1] = {row};
        const uint16_t *xs[1] = {x};
        float d[1];
        dots<1, 4>(rows, xs, n, vec, d);
        return d[0];
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

/* configuration 0 (r1): the bodies moe.cu's kernels have */
KVS_MOE_KERNELS(Fp8w, up_kernel, down_kernel)

/* the others: gate and up rows together, U chunks of each in flight; KR
 * down rows together; at least MinB blocks an SM (a register cap) */
template <int U, int KR, int MinB>
__global__ void __launch_bounds__(32 * kvs_moe::kRows, MinB)
    up_rows_kernel(Fp8w::Args a, uint16_t *__restrict__ h, bool vec)
{
    kvs_moe::up_rows<Fp8w, U>(a, h, vec);
}
template <int U, int KR, int MinB>
__global__ void __launch_bounds__(32 * kvs_moe::kRows, MinB)
    down_rows_kernel(Fp8w::Args a, const uint16_t *__restrict__ h, bool vec)
{
    kvs_moe::down_rows<Fp8w, KR, 4>(a, h, vec);
}

struct Cfg {
    const char *name;
    void (*up)(Fp8w::Args, uint16_t *, bool);
    void (*down)(Fp8w::Args, const uint16_t *, bool);
};
#define KVS_MOE_FP8W_ROWS(name, U, KR, MinB)                                                       \
    {                                                                                              \
        name, up_rows_kernel<U, KR, MinB>, down_rows_kernel<U, KR, MinB>                           \
    }
const Cfg kCfgs[KVS_MOE_FP8W_CFGS] = {
    {"r1", up_kernel, down_kernel},
    KVS_MOE_FP8W_ROWS("gu2-k2", 4, 2, 2),
    KVS_MOE_FP8W_ROWS("gu2-k4", 4, 4, 2),
    KVS_MOE_FP8W_ROWS("gu2u6-k4", 6, 4, 2),
    KVS_MOE_FP8W_ROWS("gu2-k2-b4", 4, 2, 4),
    KVS_MOE_FP8W_ROWS("gu2-k4-b3", 4, 4, 3),
    KVS_MOE_FP8W_ROWS("gu2u6-k4-b3", 6, 4, 3),
};

} // namespace

extern "C" const char *kvs_moe_fp8w_cfg_name(int cfg)
{
    return cfg >= 0 && cfg < KVS_MOE_FP8W_CFGS ? kCfgs[cfg].name : "unknown";
}

extern "C" enum kvs_status kvs_cuda_moe_experts_fp8w_cfg(int cfg, const struct kvs_moe_fp8w_args *a,
                                                         void *workspace, size_t workspace_bytes,
                                                         const struct kvs_kernel_opts *opts,
                                                         void *stream)
{
    if (cfg < 0 || cfg >= KVS_MOE_FP8W_CFGS)
        return KVS_STATUS_INVALID_ARGUMENT;
    return kvs_moe::launch<Fp8w>(a, workspace, workspace_bytes, opts, stream, kCfgs[cfg].up,
                                 kCfgs[cfg].down);
}

extern "C" enum kvs_status kvs_cuda_moe_experts_fp8w(const struct kvs_moe_fp8w_args *a,
                                                     void *workspace, size_t workspace_bytes,
                                                     const struct kvs_kernel_opts *opts,
                                                     void *stream)
{
    return kvs_cuda_moe_experts_fp8w_cfg(KVS_MOE_FP8W_CFG_DEFAULT, a, workspace, workspace_bytes,
                                         opts, stream);
}
