/* kernels/cuda/moe.cu — MoE router and routed experts at decode batch sizes,
 * routing read from device memory (no host synchronisation: a decode step
 * with these can be captured in a CUDA graph). References:
 * kernels/cpu/moe.c; tests: kernels/tests/gpu/test_kernels_ops.c.
 *
 * variants:
 *   route    one warp per token. experts <= 256 (GLM-5: 256): each lane keeps
 *            its 8 experts' keys (s + bias, packed with the index into one
 *            ordered 64-bit word) and scores in registers; each of the top-k
 *            rounds is a warp max of those words (5 shuffle steps), the
 *            winner's lane drops it, and lane j keeps choice j. More experts:
 *            keys in shared memory, repeated warp arg-max.
 *   experts  two GEMV-style kernels, memory-bound on the expert weights:
 *            (1) per (token, k) pair and 8 rows of gate/up: h = swiglu, BF16
 *                into the workspace; (2) per token and 8 output rows: the
 *                top-k down projections summed in k order, weighted. One warp
 *                per weight row, 16-byte loads when dim/inter allow. Experts
 *                shared by several tokens are read once per token (L2 may
 *                catch the repeats); ids outside [0, n_resident) add nothing.
 *            Their bodies are shared with moe_fp8w.cu (moe_impl.cuh).
 * The warp router (kernels/src/route_impl.cuh) and both expert kernels are
 * launched with programmatic dependent launch (kernels/src/pdl_impl.cuh).
 * The down kernel does not prefetch its rows before the wait, as the GEMVs
 * do: measured on the H200 (GLM-5 step, batch 1, 4K, graph), prefetching the
 * first 512 bytes of each chosen row (25 MB a layer) cost 0.23 ms a step; it
 * competes with the gate/up kernel still streaming (docs/kernels.md).
 */
#include <math.h>

#include "cuda_common.cuh"
#include "moe_impl.cuh"
#include "pdl_impl.cuh"
#include "route_impl.cuh"

namespace {

using kvs_moe::bf;

// ----------------------------------------------------------------------------
// router

constexpr int kMaxExperts = 1024;
constexpr int kMaxTopk = 32;

__global__ void route_kernel(const float *__restrict__ logits, const float *__restrict__ bias,
                             int tokens, int experts, int topk, int norm, float scale,
                             int32_t *__restrict__ ids, float *__restrict__ weights)
{
    __shared__ float key[4][kMaxExperts];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int t = blockIdx.x * 4 + w;
    if (t >= tokens)
        return;
    const float *l = logits + (size_t)t * experts;
    float *k = key[w];
    for (int e = lane; e < experts; e += 32)
        k[e] = 1.0f / (1.0f + expf(-l[e])) + (bias ? bias[e] : 0.0f);
    __syncwarp();
    float wsel[kMaxTopk];
    float sum = 0.f;
    for (int j = 0; j < topk; j++) {
        float bv = -INFINITY;
        int bi = -1;
        for (int e = lane; e < experts; e += 32) {
            float v = k[e];
            if (!isnan(v) && (bi < 0 || v > bv)) /* taken experts hold NaN */
                bv = v, bi = e;
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (oi >= 0 && (bi < 0 || ov > bv || (ov == bv && oi < bi)))
                bv = ov, bi = oi;
        }
        if (bi < 0)
            bi = 0; /* fewer usable experts than topk: only with NaN logits */
        __syncwarp();
        if (lane == 0) {
            k[bi] = NAN;
            ids[(size_t)t * topk + j] = bi;
        }
        __syncwarp();
        float s = 1.0f / (1.0f + expf(-l[bi]));
        if (j < kMaxTopk)
            wsel[j] = s;
        sum += s;
    }
    if (lane == 0)
        for (int j = 0; j < topk && j < kMaxTopk; j++) {
            float v = wsel[j];
            if (norm)
                v /= sum + 1e-20f;
            weights[(size_t)t * topk + j] = v * scale;
        }
}

/* One warp per token: kvs_route_warp_token (kernels/src/route_impl.cuh). */
__global__ void __launch_bounds__(128)
route_warp_kernel(const float *__restrict__ logits, const float *__restrict__ bias, int tokens,
                  int experts, int topk, int norm, float scale, int32_t *__restrict__ ids,
                  float *__restrict__ weights)
{
    int lane, t;
    kvs_route_warp_start(&lane, &t);
    if (t >= tokens)
        return;
    int id;
    float w;
    kvs_route_warp_token(logits + (size_t)t * experts, bias, experts, topk, norm, scale, lane, &id,
                         &w);
    if (lane < topk) {
        ids[(size_t)t * topk + lane] = id;
        weights[(size_t)t * topk + lane] = w;
    }
}

// ----------------------------------------------------------------------------
// experts

/* BF16 experts for kvs_moe::up / down (moe_impl.cuh) */
struct Bf16 {
    using Args = struct kvs_moe_args;
    using Row = const uint16_t *;
    static constexpr int kVec = 8;
    static bool weights_set(const Args &a) { return a.gate_up && a.down; }

    /* dot of one BF16 weight row with a BF16 vector, over n, by one warp */
    static __device__ __forceinline__ float dot(const uint16_t *__restrict__ a,
                                                const uint16_t *__restrict__ b, int n, bool vec)
    {
        const int lane = threadIdx.x & 31;
        float acc = 0.f;
        if (vec) {
            const uint4 *a4 = (const uint4 *)a, *b4 = (const uint4 *)b;
            for (int i = lane; i < n / 8; i += 32) {
                uint4 x = __ldg(a4 + i), y = __ldg(b4 + i);
                const uint32_t *px = &x.x, *py = &y.x;
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    acc += bf(px[k] & 0xffffu) * bf(py[k] & 0xffffu);
                    acc += bf(px[k] >> 16) * bf(py[k] >> 16);
                }
            }
        } else {
            for (int i = lane; i < n; i += 32)
                acc += bf(a[i]) * bf(b[i]);
        }
        return kvs_moe::warp_sum(acc);
    }

    struct GateUp {
        int e;
        __device__ GateUp(const Args &, int expert) : e(expert) {}
        __device__ Row row(const Args &a, int r) const
        {
            const uint16_t *gu = a.gate_up + (size_t)e * 2 * a.inter * a.dim;
            return gu + (size_t)r * a.dim;
        }
    };
    struct Down {
        __device__ explicit Down(const Args &) {}
        __device__ Row row(const Args &a, int e, int r) const
        {
            return a.down + ((size_t)e * a.dim + r) * a.inter;
        }
    };
};

KVS_MOE_KERNELS(Bf16, experts_up_kernel, experts_down_kernel)

} // namespace

extern "C" enum kvs_status kvs_cuda_moe_route(const float *logits, const float *bias, int tokens,
                                              int experts, int topk, int norm_topk,
                                              float routed_scale, int32_t *ids, float *weights,
                                              const struct kvs_kernel_opts *opts, void *stream)
{
    if (tokens == 0)
        return KVS_STATUS_OK;
    if (!logits || !ids || !weights || tokens < 0 || experts <= 0 || experts > kMaxExperts ||
        topk <= 0 || topk > experts || topk > kMaxTopk)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (experts <= KVS_ROUTE_WARP_MAX_EXPERTS) {
        KVS_CUDA_TRY(NULL,
                     kvs_launch_pdl(opts, route_warp_kernel, dim3((unsigned)((tokens + 3) / 4)),
                                    dim3(128), 0, kvs_stream(stream), logits, bias, tokens, experts,
                                    topk, norm_topk, routed_scale, ids, weights));
        return KVS_STATUS_OK;
    }
    route_kernel<<<(tokens + 3) / 4, 128, 0, kvs_stream(stream)>>>(
        logits, bias, tokens, experts, topk, norm_topk, routed_scale, ids, weights);
    KVS_LAUNCH_CHECK();
    return KVS_STATUS_OK;
}

extern "C" size_t kvs_cuda_moe_experts_workspace(int tokens, int topk, int inter)
{
    if (tokens <= 0 || topk <= 0 || inter <= 0)
        return 0;
    size_t b = (size_t)tokens * topk * inter * sizeof(uint16_t);
    return (b + 255) & ~(size_t)255;
}

extern "C" enum kvs_status kvs_cuda_moe_experts(const struct kvs_moe_args *a, void *workspace,
                                                size_t workspace_bytes,
                                                const struct kvs_kernel_opts *opts, void *stream)
{
    return kvs_moe::launch<Bf16>(a, workspace, workspace_bytes, opts, stream, experts_up_kernel,
                                 experts_down_kernel);
}
