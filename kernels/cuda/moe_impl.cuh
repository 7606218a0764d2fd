/* kernels/cuda/moe_impl.cuh — what the routed-expert kernels with BF16
 * weights (moe.cu) and with FP8 weights and 128 x 128 block scales
 * (moe_fp8w.cu) share: the bodies of the gate/up and down kernels around
 * the dot of one weight row, the warp sum that ends each dot, and the
 * launcher's checks and grids. Private to kernels/.
 *
 * A weight type W (a struct of static members) gives:
 *   W::Args            kvs_moe_args or kvs_moe_fp8w_args
 *   W::kVec            16-byte loads need rows of a multiple of kVec
 *                      elements (8 BF16 values, 16 FP8 codes)
 *   W::weights_set(a)  whether its weight (and scale) pointers are set
 *   W::Row             what one weight row is (codes, and scales for FP8)
 *   W::dot(w, x, n, vec)  the dot of row w with BF16 x[n], by one warp
 *   W::GateUp(a, e)    expert e's gate_up; .row(a, r): gate rows [0, inter),
 *                      up rows [inter, 2 inter)
 *   W::Down(a)         the experts' down matrices; .row(a, e, r)
 * The pieces are cut so that each kernel computes its addresses in the
 * order it did when its body was written out in its own file: the PTX of
 * all four kernels was compared byte for byte when the bodies moved here
 * (moe.cu's are measured, tuned kernels the engine runs). Keep it so, or
 * time the experts again (bench_kernels moe fp8w).
 * Each .cu file names its __global__ kernels with KVS_MOE_KERNELS.
 *
 * defines: kvs_moe::kRows, kvs_moe::bf, kvs_moe::tobf, kvs_moe::warp_sum, kvs_moe::up,
 *          kvs_moe::down, KVS_MOE_KERNELS, kvs_moe::launch, kvs_moe::up_rows, down_rows
 */
#ifndef KVSCOPE_MOE_IMPL_CUH
#define KVSCOPE_MOE_IMPL_CUH

#include <math.h>

#include "cuda_common.cuh"
#include "pdl_impl.cuh"

namespace kvs_moe
{

constexpr int kRows = 8; /* weight rows per block: one per warp */

__device__ __forceinline__ float bf(uint16_t x)
{
    return kvs_conv_bf16_to_float(x);
}
__device__ __forceinline__ uint16_t tobf(float x)
{
    return kvs_conv_float_to_bf16(x);
}

/* a lane's partial dot summed over the warp (every lane gets the sum) */
__device__ __forceinline__ float warp_sum(float acc)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    return acc;
}

/* The gate/up kernel: grid (ceil(inter / kRows), tokens * topk), a warp per
 * row i of gate and of up; gate and up are rounded to BF16, SwiGLU to BF16
 * into h (as the CPU reference stores them). */
/* what both up kernels do around their dots: (after waiting for the kernel
 * before) this warp's row i of (token, k) pair `pair`, and lane 0's SwiGLU
 * of the BF16-rounded gate and up into h */
template <class A> __device__ __forceinline__ int up_row(const A &a, int &pair, int &t)
{
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    pair = blockIdx.y, t = pair / a.topk;
    return blockIdx.x * kRows + (threadIdx.x >> 5);
}

template <class A>
__device__ __forceinline__ void up_store(const A &a, uint16_t *__restrict__ h, int pair, int i,
                                         float gb, float ub)
{
    if ((threadIdx.x & 31) == 0)
        h[(size_t)pair * a.inter + i] = tobf(gb / (1.0f + expf(-gb)) * ub);
}

template <class W>
__device__ __forceinline__ void up(const typename W::Args &a, uint16_t *__restrict__ h, bool vec)
{
    int pair, t;
    const int i = up_row(a, pair, t);
    if (i >= a.inter)
        return;
    const int e = a.ids[pair];
    float gb = 0.f, ub = 0.f;
    if (e >= 0 && e < a.n_resident) {
        const typename W::GateUp gu(a, e);
        const uint16_t *x = a.x + (size_t)t * a.dim;
        gb = bf(tobf(W::dot(gu.row(a, i), x, a.dim, vec)));
        ub = bf(tobf(W::dot(gu.row(a, a.inter + i), x, a.dim, vec)));
    }
    up_store(a, h, pair, i, gb, ub);
}

/* The down kernel: grid (ceil(dim / kRows), tokens), a warp per output row
 * r: the top-k down dots summed in k order, weighted, rounded once (added to
 * y when accumulating). It does not prefetch its rows before the wait: see
 * moe.cu. */
/* what both down kernels do around their dots: this warp's output row r of
 * token t (after waiting for the up kernel), and lane 0's store of the sum */
__device__ __forceinline__ int down_row(int &t)
{
    t = blockIdx.y;
    const int r = blockIdx.x * kRows + (threadIdx.x >> 5);
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    return r;
}

template <class A> __device__ __forceinline__ void down_store(const A &a, int t, int r, float acc)
{
    if ((threadIdx.x & 31) == 0) {
        uint16_t *y = a.y + (size_t)t * a.dim + r;
        *y = tobf(a.accumulate ? bf(*y) + acc : acc);
    }
}

template <class W>
__device__ __forceinline__ void down(const typename W::Args &a, const uint16_t *__restrict__ h,
                                     bool vec)
{
    int t;
    const int r = down_row(t);
    if (r >= a.dim)
        return;
    const typename W::Down dn(a);
    float acc = 0.f;
    for (int k = 0; k < a.topk; k++) {
        const int pair = t * a.topk + k, e = a.ids[pair];
        if (e < 0 || e >= a.n_resident)
            continue;
        const typename W::Row w = dn.row(a, e, r);
        acc += a.weights[pair] * W::dot(w, h + (size_t)pair * a.inter, a.inter, vec);
    }
    down_store(a, t, r, acc);
}

/* The two __global__ kernels of weight type W, named by the caller (the
 * names are what profiles and kvscope's own traces show): `up` with grid
 * (ceil(inter / kRows), tokens * topk), `down` with (ceil(dim / kRows),
 * tokens). A macro, as a kernel template's name would carry W. */
#define KVS_MOE_KERNELS(W, up_name, down_name)                                                     \
    __global__ void __launch_bounds__(32 * kvs_moe::kRows)                                         \
        up_name(W::Args a, uint16_t *__restrict__ h, bool vec)                                     \
    {                                                                                              \
        kvs_moe::up<W>(a, h, vec);                                                                 \
    }                                                                                              \
    __global__ void __launch_bounds__(32 * kvs_moe::kRows)                                         \
        down_name(W::Args a, const uint16_t *__restrict__ h, bool vec)                             \
    {                                                                                              \
        kvs_moe::down<W>(a, h, vec);                                                               \
    }

static inline bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

/* Checks a (kvs_cuda_moe_experts' rules) and launches the two kernels, each
 * with programmatic dependent launch; h in the workspace. 16-byte loads
 * when the rows are multiples of W::kVec elements on aligned bases (x rows
 * are dim * 2 bytes apart, h rows inter * 2: aligned as well). */
template <class W>
static enum kvs_status launch(const typename W::Args *a, void *workspace, size_t workspace_bytes,
                              const struct kvs_kernel_opts *opts, void *stream,
                              void (*up_kernel)(typename W::Args, uint16_t *, bool),
                              void (*down_kernel)(typename W::Args, const uint16_t *, bool))
{
    if (!a || a->tokens < 0 || a->dim <= 0 || a->inter <= 0 || a->topk <= 0 || a->n_resident <= 0 ||
        a->tokens > 65535)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (a->tokens == 0)
        return KVS_STATUS_OK;
    if (!a->x || !a->ids || !a->weights || !W::weights_set(*a) || !a->y || !workspace ||
        workspace_bytes < kvs_cuda_moe_experts_workspace(a->tokens, a->topk, a->inter) ||
        (size_t)a->tokens * a->topk > 65535)
        return KVS_STATUS_INVALID_ARGUMENT;
    cudaStream_t s = kvs_stream(stream);
    uint16_t *h = (uint16_t *)workspace;
    const bool vec_up = a->dim % W::kVec == 0 && aligned16(a->x) && aligned16(a->gate_up);
    const bool vec_dn = a->inter % W::kVec == 0 && aligned16(a->down) && aligned16(h);
    dim3 g1((unsigned)((a->inter + kRows - 1) / kRows), (unsigned)(a->tokens * a->topk));
    KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, up_kernel, g1, dim3(32 * kRows), 0, s, *a, h, vec_up));
    dim3 g2((unsigned)((a->dim + kRows - 1) / kRows), (unsigned)a->tokens);
    KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, down_kernel, g2, dim3(32 * kRows), 0, s, *a,
                                      (const uint16_t *)h, vec_dn));
    return KVS_STATUS_OK;
}

/* Several weight rows a warp (the FP8 experts' configurations,
 * moe_fp8w_cfg.h): up and down with their rows' loads in flight together.
 * W::dots<R, U>(rows, xs, n, vec, out) gives the R dots of rows[j] with
 * xs[j], U 16-byte chunks of each row in flight a lane, each row's sum in
 * the order W::dot takes. up_rows: gate and up row i together (one x: the
 * compiler loads it once). down_rows<KR>: KR of the top-k rows together,
 * added in k order; a slot past topk or with an id outside [0, n_resident)
 * reads expert 0's row r (valid memory, its dot dropped), so the loads take
 * no branch. The four share their row index and store (up_row, up_store,
 * down_row, down_store); the BF16 kernels' PTX is the same as before they
 * did, line info aside. */
template <class W, int U>
__device__ __forceinline__ void up_rows(const typename W::Args &a, uint16_t *__restrict__ h,
                                        bool vec)
{
    int pair, t;
    const int i = up_row(a, pair, t);
    if (i >= a.inter)
        return;
    const int e = a.ids[pair];
    float d[2] = {0.f, 0.f};
    if (e >= 0 && e < a.n_resident) {
        const typename W::GateUp gu(a, e);
        const uint16_t *x = a.x + (size_t)t * a.dim;
        const typename W::Row rows[2] = {gu.row(a, i), gu.row(a, a.inter + i)};
        const uint16_t *xs[2] = {x, x};
        W::template dots<2, U>(rows, xs, a.dim, vec, d);
    }
    up_store(a, h, pair, i, bf(tobf(d[0])), bf(tobf(d[1])));
}

template <class W, int KR, int U>
__device__ __forceinline__ void down_rows(const typename W::Args &a,
                                          const uint16_t *__restrict__ h, bool vec)
{
    int t;
    const int r = down_row(t);
    if (r >= a.dim)
        return;
    const typename W::Down dn(a);
    float acc = 0.f;
#pragma unroll 1
    for (int k0 = 0; k0 < a.topk; k0 += KR) {
        typename W::Row rows[KR];
        const uint16_t *xs[KR];
        bool use[KR];
#pragma unroll
        for (int j = 0; j < KR; j++) {
            const int pair = t * a.topk + (k0 + j < a.topk ? k0 + j : 0);
            const int e = k0 + j < a.topk ? a.ids[pair] : -1;
            use[j] = e >= 0 && e < a.n_resident;
            rows[j] = dn.row(a, use[j] ? e : 0, r);
            xs[j] = h + (size_t)pair * a.inter;
        }
        float d[KR];
        W::template dots<KR, U>(rows, xs, a.inter, vec, d);
#pragma unroll
        for (int j = 0; j < KR; j++)
            if (use[j])
                acc += a.weights[t * a.topk + k0 + j] * d[j];
    }
    down_store(a, t, r, acc);
}

} // namespace kvs_moe

#endif /* KVSCOPE_MOE_IMPL_CUH */
