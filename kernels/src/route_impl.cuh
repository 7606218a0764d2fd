/* kernels/src/route_impl.cuh — one warp routes one token (GLM-5 noaux_tc
 * with one group, kvs_cpu_moe_route's rules), written once for the router
 * kernel (kernels/cuda/moe.cu) and the engine's router fused with its expert
 * map (kernels/cuda/engine_ops.cu). Private to kernels/ and the engine.
 *
 * defines: kvs_route_warp_token, kvs_route_warp_start, KVS_ROUTE_WARP_MAX_EXPERTS
 *
 * Each lane keeps its (up to) 8 experts' keys (s + bias, packed with the
 * index into one ordered 64-bit word) and scores in registers; each of the
 * top-k rounds is a warp max of those words, the winner's
 * lane drops it, and lane j keeps choice j. The warp max is two
 * __reduce_max_sync (sm_80+) over the word's halves.
 */
#ifndef KVSCOPE_ROUTE_IMPL_CUH
#define KVSCOPE_ROUTE_IMPL_CUH

#include <math.h>
#include <stdint.h>

#include "pdl_impl.cuh"

#define KVS_ROUTE_WARP_LANE 8 /* experts per lane */
#define KVS_ROUTE_WARP_MAX_EXPERTS (32 * KVS_ROUTE_WARP_LANE)

/* float -> uint32 with the order of the floats (-0 and +0 made equal by the
 * caller); NaN is never passed. */
static __device__ __forceinline__ uint32_t kvs_route_ordered(float f)
{
    uint32_t u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* Token logits l[experts] (experts <= KVS_ROUTE_WARP_MAX_EXPERTS, topk <= 32),
 * bias[experts] or null; called by all 32 lanes of a warp. Lane j < topk
 * gets choice j: *id (in the reference's order: larger key first, ties to the
 * lower index) and *w (sigmoid, divided by the chosen sum + 1e-20 when norm,
 * times scale). Key word of expert e: ordered(key) above, ~e below, so the
 * larger word is the larger key and, on equal keys, the lower index; 0 = not
 * available (taken, past the end, or a NaN key). */
static __device__ __forceinline__ void kvs_route_warp_token(const float *__restrict__ l,
                                                            const float *__restrict__ bias,
                                                            int experts, int topk, int norm,
                                                            float scale, int lane, int *id,
                                                            float *w)
{
    float lg[KVS_ROUTE_WARP_LANE], bs[KVS_ROUTE_WARP_LANE];
#pragma unroll
    for (int j = 0; j < KVS_ROUTE_WARP_LANE; j++) {
        const int e = lane + 32 * j;
        lg[j] = e < experts ? l[e] : 0.f;
        bs[j] = e < experts && bias ? bias[e] : 0.f;
    }
    float sc[KVS_ROUTE_WARP_LANE];
    unsigned long long key[KVS_ROUTE_WARP_LANE];
#pragma unroll
    for (int j = 0; j < KVS_ROUTE_WARP_LANE; j++) {
        const int e = lane + 32 * j;
        sc[j] = 1.0f / (1.0f + expf(-lg[j]));
        const float k = sc[j] + bs[j] + 0.0f; /* + 0: -0 becomes +0 */
        key[j] = e < experts && !isnan(k)
                     ? (unsigned long long)kvs_route_ordered(k) << 32 | (uint32_t)~(uint32_t)e
                     : 0ull;
    }
    float sum = 0.f, my_w = 0.f;
    int my_id = 0;
    for (int j = 0; j < topk; j++) {
        unsigned long long best = key[0];
#pragma unroll
        for (int q = 1; q < KVS_ROUTE_WARP_LANE; q++)
            best = key[q] > best ? key[q] : best;
        /* the warp's largest word: the largest high half (the key), then
         * the largest low half among the lanes holding it (the lowest index)
         * — two redux.sync instead of five dependent 64-bit shuffle rounds */
        const unsigned hi = __reduce_max_sync(0xffffffffu, (unsigned)(best >> 32));
        const unsigned lo = __reduce_max_sync(
            0xffffffffu, (unsigned)(best >> 32) == hi ? (unsigned)best : 0u);
        best = (unsigned long long)hi << 32 | lo;
        /* no expert left (NaN logits only): expert 0, as the other kernel */
        const int e = best ? (int)~(uint32_t)best : 0;
        /* the owner finds the winner by its word (it holds the index), so no
         * register array is indexed at run time */
        float s = 0.f;
#pragma unroll
        for (int q = 0; q < KVS_ROUTE_WARP_LANE; q++)
            if (best && key[q] == best) {
                s = sc[q];
                key[q] = 0ull;
            }
        s = best ? __shfl_sync(0xffffffffu, s, e & 31) : 1.0f / (1.0f + expf(-l[0]));
        sum += s;
        if (lane == j)
            my_w = s, my_id = e;
    }
    *id = my_id;
    *w = (norm ? my_w / (sum + 1e-20f) : my_w) * scale;
}

/* The start both router kernels share (kernels/cuda/moe.cu's
 * route_warp_kernel and engine_ops.cu's route_map_kernel: blocks of 4 warps,
 * one token a warp, launched with PDL): wait for the kernel before, let the
 * next one launch, and name this thread's lane and its warp's token. The
 * kernel then returns for t >= tokens and routes token t with
 * kvs_route_warp_token. */
static __device__ __forceinline__ void kvs_route_warp_start(int *lane, int *t)
{
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    *lane = threadIdx.x & 31;
    *t = blockIdx.x * 4 + (threadIdx.x >> 5);
}

#endif /* KVSCOPE_ROUTE_IMPL_CUH */
