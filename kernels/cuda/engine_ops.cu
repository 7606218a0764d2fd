/* kernels/cuda/engine_ops.cu — CUDA versions of the engine's own ops (engine/ops.h),
 * each checked against its CPU reference (kernels/cpu/engine_ops.c) by
 * kernels/tests/gpu/test_kernels_engine_ops.c:
 *
 *   fill_bf16 / fill_f32   synthetic weights from the hash of engine/synth.h
 *   fill_kv / prefill_kv   the pool's background rows; each sequence's context
 *   kv_append              this step's KV rows, BF16 -> FP8 e4m3, into their slots
 *   kv_finish              the same with the latent's RMSNorm and the rope part's
 *                          RoPE fused in (one launch instead of three); optionally
 *                          with q_a's RMSNorm in a second row of blocks (one launch
 *                          instead of two more)
 *   map_experts            logical -> resident experts (engine/expert_map_impl.h)
 *   route_map              the router (kernels/src/route_impl.cuh) with the expert
 *                          map applied by the same warp (one launch instead of two)
 *   seq_step               device half of the sequence append + CSR token list
 *
 *   meson test -C build --suite gpu test_kernels_engine_ops
 * Built into the engine's GPU library (engine/meson.build), not
 * kvs_kernels_cuda: the ops take the engine's types (struct kvs_expert_map,
 * engine/synth.h's hash, engine/expert_map_impl.h).
 * None synchronises; all are safe inside CUDA-graph capture. The ops of a
 * decode step (kv_finish, route_map) are launched with programmatic
 * dependent launch, as the kernels' (kernels/src/pdl_impl.cuh).
 */
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>

#include "expert_map_impl.h"
#include "kvscope/check.h"
#include "ops.h"
#include "pdl_impl.cuh"
#include "rope_impl.cuh"
#include "route_impl.cuh"
#include "synth.h"

// ----------------------------------------------------------------------------
// launch geometry

static unsigned grid_for(uint64_t n, unsigned block)
{
    uint64_t g = (n + block - 1) / block;
    /* grid-stride loops cover the rest; 132 SMs x 16 is plenty */
    return (unsigned)(g < 1 ? 1 : g > 65535u * 32u ? 65535u * 32u : g);
}

// ----------------------------------------------------------------------------
// fills

__global__ void fill_bf16_kernel(kvs_bf16 *dst, uint64_t n, uint64_t key, float amp, float offset)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        dst[i] = kvs_synth_value_bf16(key, i, amp, offset);
}

__global__ void fill_f32_kernel(float *dst, uint64_t n, uint64_t key, float amp, float offset)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        dst[i] = kvs_synth_value_f32(key, i, amp, offset);
}

/* four codes a thread: rows are 576 bytes, a multiple of 4 */
__global__ void fill_kv_kernel(uint32_t *dst, uint64_t n4, uint64_t key)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n4;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t e = 4 * i;
        dst[i] = (uint32_t)kvs_synth_kv_fp8(key, e) | (uint32_t)kvs_synth_kv_fp8(key, e + 1) << 8 |
                 (uint32_t)kvs_synth_kv_fp8(key, e + 2) << 16 |
                 (uint32_t)kvs_synth_kv_fp8(key, e + 3) << 24;
    }
}

/* grid.y = sequence; x covers (position, 4-byte word) of its rows */
__global__ void prefill_kv_kernel(uint32_t *pool, const int32_t *table, int max_len,
                                  const int32_t *len, uint64_t seed, int layer)
{
    const int b = blockIdx.y;
    const uint64_t words = (uint64_t)len[b] * (KVS_MLA_ROW / 4);
    const uint64_t key = kvs_synth_key(seed, KVS_SYNTH_ID_PREFILL(layer, b));
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t t = i / (KVS_MLA_ROW / 4), w = i % (KVS_MLA_ROW / 4);
        uint64_t e = t * KVS_MLA_ROW + 4 * w;
        uint64_t slot = (uint64_t)table[(uint64_t)b * max_len + t];
        pool[slot * (KVS_MLA_ROW / 4) + w] =
            (uint32_t)kvs_synth_kv_fp8(key, e) | (uint32_t)kvs_synth_kv_fp8(key, e + 1) << 8 |
            (uint32_t)kvs_synth_kv_fp8(key, e + 2) << 16 | (uint32_t)kvs_synth_kv_fp8(key, e + 3) << 24;
    }
}

extern "C" enum kvs_status kvs_eng_cuda_fill_bf16(kvs_bf16 *dst, uint64_t n, uint64_t key,
                                                  float amp, float offset, void *stream)
{
    if (n == 0)
        return KVS_STATUS_OK;
    fill_bf16_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(dst, n, key, amp, offset);
    KVS_CUDA_LAUNCH_TRY(NULL);
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_eng_cuda_fill_f32(float *dst, uint64_t n, uint64_t key, float amp,
                                                 float offset, void *stream)
{
    if (n == 0)
        return KVS_STATUS_OK;
    fill_f32_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(dst, n, key, amp, offset);
    KVS_CUDA_LAUNCH_TRY(NULL);
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_eng_cuda_fill_kv(kvs_fp8 *pool, uint64_t rows, uint64_t key,
                                                void *stream)
{
    uint64_t n4 = rows * (KVS_MLA_ROW / 4);
    if (n4 == 0)
        return KVS_STATUS_OK;
    fill_kv_kernel<<<grid_for(n4, 256), 256, 0, (cudaStream_t)stream>>>((uint32_t *)pool, n4, key);
    KVS_CUDA_LAUNCH_TRY(NULL);
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_eng_cuda_prefill_kv(kvs_fp8 *pool, const int32_t *table,
                                                   int max_len, const int32_t *len, int batch,
                                                   int64_t max_ctx, uint64_t seed, int layer,
                                                   void *stream)
{
    if (batch < 1 || batch > 65535 || max_ctx < 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    uint64_t words = (uint64_t)max_ctx * (KVS_MLA_ROW / 4);
    if (words == 0)
        return KVS_STATUS_OK;
    dim3 grid(grid_for(words, 256) < 4096 ? grid_for(words, 256) : 4096, (unsigned)batch);
    prefill_kv_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>((uint32_t *)pool, table, max_len,
                                                              len, seed, layer);
    KVS_CUDA_LAUNCH_TRY(NULL);
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// KV append

__device__ __forceinline__ float bf16_bits_to_float(kvs_bf16 x)
{
    return __uint_as_float((uint32_t)x << 16);
}

/* RNE, saturating to +-448, NaN -> 0x7f: kvs_float_to_fp8's rules */
__device__ __forceinline__ kvs_fp8 float_to_e4m3(float f)
{
    return (kvs_fp8)__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3);
}

__global__ void kv_append_kernel(kvs_fp8 *pool, const int32_t *slot, const kvs_bf16 *latent,
                                 const kvs_bf16 *rope)
{
    const int b = blockIdx.x;
    kvs_fp8 *row = pool + (uint64_t)slot[b] * KVS_MLA_ROW;
    for (int j = threadIdx.x; j < KVS_MLA_ROW; j += blockDim.x) {
        kvs_bf16 v = j < KVS_MLA_LATENT ? latent[(uint64_t)b * KVS_MLA_LATENT + j]
                                        : rope[(uint64_t)b * KVS_MLA_ROPE + (j - KVS_MLA_LATENT)];
        row[j] = float_to_e4m3(bf16_bits_to_float(v));
    }
}

extern "C" enum kvs_status kvs_eng_cuda_kv_append(kvs_fp8 *pool, const int32_t *slot,
                                                  const kvs_bf16 *latent, const kvs_bf16 *rope,
                                                  int batch, void *stream)
{
    if (batch < 1)
        return KVS_STATUS_INVALID_ARGUMENT;
    kv_append_kernel<<<batch, 192, 0, (cudaStream_t)stream>>>(pool, slot, latent, rope);
    KVS_CUDA_LAUNCH_TRY(NULL);
    return KVS_STATUS_OK;
}

/* KV finish: one block of 64 threads per sequence. Thread c normalises
 * latent values 8c .. 8c+7 (16-byte loads; the row's sum of squares over
 * both warps) and stores their 8 codes; threads c < 32 rotate rope pair c.
 * Angles as kernels/cuda/decode_ops.cu's RoPE: pos * theta^(-2i/64) in
 * double, reduced mod 2 pi in double, then sincos.
 * With q (grid.y = 2): the blocks of row 1 normalise q[b] [q_dim] into
 * q_out[b] as kvs_cpu_rmsnorm (8 values per thread and chunk, up to
 * kQChunks chunks a thread, the sum of squares over both warps). */
constexpr int kQChunks = 8; /* q_dim <= 8 * 64 * kQChunks = 4096 */
__device__ __forceinline__ kvs_bf16 float_to_bf16_bits(float f)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__device__ __forceinline__ void unpack8(const uint4 &v, float (&f)[8])
{
    const uint32_t *p = &v.x;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        f[2 * q] = bf16_bits_to_float((kvs_bf16)(p[q] & 0xffffu));
        f[2 * q + 1] = bf16_bits_to_float((kvs_bf16)(p[q] >> 16));
    }
}

/* 1 / sqrt(mean square + eps) of a row whose squares this 64-thread block
 * holds as per-thread partial sums `ss`: both warps reduce, then meet in
 * red[2]. */
__device__ __forceinline__ float rms_inv_2warps(float ss, int dim, float eps, float *red)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = ss;
    __syncthreads();
    ss = red[0] + red[1];
    return 1.0f / sqrtf(ss / (float)dim + eps);
}

__device__ __forceinline__ void q_norm_row(const kvs_bf16 *q, const kvs_bf16 *w, kvs_bf16 *out,
                                           int dim, float eps, float *red)
{
    const int c = threadIdx.x, n8 = dim >> 3;
    uint4 xv[kQChunks], wv[kQChunks];
#pragma unroll
    for (int u = 0; u < kQChunks; u++)
        if (c + 64 * u < n8) {
            xv[u] = ((const uint4 *)q)[c + 64 * u];
            wv[u] = ((const uint4 *)w)[c + 64 * u];
        }
    float ss = 0.f;
#pragma unroll
    for (int u = 0; u < kQChunks; u++)
        if (c + 64 * u < n8) {
            float f[8];
            unpack8(xv[u], f);
#pragma unroll
            for (int k = 0; k < 8; k++)
                ss += f[k] * f[k];
        }
    const float inv = rms_inv_2warps(ss, dim, eps, red);
#pragma unroll
    for (int u = 0; u < kQChunks; u++)
        if (c + 64 * u < n8) {
            float f[8], g[8];
            unpack8(xv[u], f);
            unpack8(wv[u], g);
            uint4 y;
            uint32_t *py = &y.x;
#pragma unroll
            for (int k = 0; k < 4; k++)
                py[k] = (uint32_t)float_to_bf16_bits(f[2 * k] * inv * g[2 * k]) |
                        (uint32_t)float_to_bf16_bits(f[2 * k + 1] * inv * g[2 * k + 1]) << 16;
            ((uint4 *)out)[c + 64 * u] = y;
        }
}

__global__ void __launch_bounds__(64)
kv_finish_kernel(kvs_fp8 *pool, const int32_t *slot, const kvs_bf16 *kv_raw,
                 const kvs_bf16 *norm_w, const kvs_bf16 *kv_rope, const int32_t *pos, float eps,
                 double log_theta, const kvs_bf16 *q, const kvs_bf16 *q_w, kvs_bf16 *q_out,
                 int q_dim)
{
    __shared__ float red[2];
    const int b = blockIdx.x, c = threadIdx.x;
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();
    if (blockIdx.y == 1) {
        q_norm_row(q + (uint64_t)b * q_dim, q_w, q_out + (uint64_t)b * q_dim, q_dim, eps, red);
        return;
    }
    const uint4 xv = ((const uint4 *)(kv_raw + (uint64_t)b * KVS_MLA_LATENT))[c];
    const uint4 wv = ((const uint4 *)norm_w)[c];
    uint32_t rp = 0;
    if (c < KVS_MLA_ROPE / 2)
        rp = ((const uint32_t *)(kv_rope + (uint64_t)b * KVS_MLA_ROPE))[c];
    const int32_t s = slot[b], p = pos[b];
    float f[8], g[8];
    unpack8(xv, f);
    unpack8(wv, g);
    float ss = 0.f;
#pragma unroll
    for (int q = 0; q < 8; q++)
        ss += f[q] * f[q];
    const float inv = rms_inv_2warps(ss, KVS_MLA_LATENT, eps, red);
    kvs_fp8 *row = pool + (uint64_t)s * KVS_MLA_ROW;
    uint32_t lo = 0, hi = 0;
#pragma unroll
    for (int q = 0; q < 8; q++) {
        float v = bf16_bits_to_float(float_to_bf16_bits(f[q] * inv * g[q]));
        uint32_t code = float_to_e4m3(v);
        if (q < 4)
            lo |= code << (8 * q);
        else
            hi |= code << (8 * (q - 4));
    }
    *(uint2 *)(row + 8 * c) = make_uint2(lo, hi);
    if (c < KVS_MLA_ROPE / 2) {
        float co, si, r0, r1;
        kvs_rope_cos_sin((double)p, c, KVS_MLA_ROPE, log_theta, &co, &si);
        kvs_rope_rotate(bf16_bits_to_float((kvs_bf16)(rp & 0xffffu)),
                        bf16_bits_to_float((kvs_bf16)(rp >> 16)), co, si, &r0, &r1);
        const float o0 = bf16_bits_to_float(float_to_bf16_bits(r0));
        const float o1 = bf16_bits_to_float(float_to_bf16_bits(r1));
        *(uint16_t *)(row + KVS_MLA_LATENT + 2 * c) =
            (uint16_t)(float_to_e4m3(o0) | (uint32_t)float_to_e4m3(o1) << 8);
    }
}

extern "C" int kvs_eng_cuda_kv_finish_qnorm_supported(const kvs_bf16 *q, const kvs_bf16 *q_w,
                                                      const kvs_bf16 *q_out, int q_dim)
{
    return q && q_w && q_out && q_dim > 0 && q_dim % 8 == 0 && q_dim <= 8 * 64 * kQChunks &&
           !(((uintptr_t)q | (uintptr_t)q_w | (uintptr_t)q_out) & 15u);
}

extern "C" enum kvs_status
kvs_eng_cuda_kv_finish_qnorm(kvs_fp8 *pool, const int32_t *slot, const kvs_bf16 *kv_raw,
                             const kvs_bf16 *norm_w, const kvs_bf16 *kv_rope, const int32_t *pos,
                             int batch, float eps, float theta, const kvs_bf16 *q,
                             const kvs_bf16 *q_w, kvs_bf16 *q_out, int q_dim,
                             const struct kvs_kernel_opts *opts, void *stream)
{
    if (batch < 1 || batch > 65535 || !pool || !slot || !kv_raw || !norm_w || !kv_rope || !pos ||
        !(theta > 0.f))
        return KVS_STATUS_INVALID_ARGUMENT;
    if (((uintptr_t)kv_raw | (uintptr_t)norm_w) & 15u || (uintptr_t)kv_rope & 3u)
        return KVS_STATUS_UNSUPPORTED;
    if (q && !kvs_eng_cuda_kv_finish_qnorm_supported(q, q_w, q_out, q_dim))
        return KVS_STATUS_UNSUPPORTED;
    dim3 grid((unsigned)batch, q ? 2u : 1u);
    KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, kv_finish_kernel, grid, dim3(64), 0,
                                      (cudaStream_t)stream, pool, slot, kv_raw, norm_w, kv_rope,
                                      pos, eps, log((double)theta), q, q_w, q_out, q ? q_dim : 0));
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_eng_cuda_kv_finish(kvs_fp8 *pool, const int32_t *slot,
                                                  const kvs_bf16 *kv_raw, const kvs_bf16 *norm_w,
                                                  const kvs_bf16 *kv_rope, const int32_t *pos,
                                                  int batch, float eps, float theta,
                                                  const struct kvs_kernel_opts *opts, void *stream)
{
    return kvs_eng_cuda_kv_finish_qnorm(pool, slot, kv_raw, norm_w, kv_rope, pos, batch, eps, theta,
                                        NULL, NULL, NULL, 0, opts, stream);
}

// ----------------------------------------------------------------------------
// expert map

__global__ void map_experts_kernel(int n_logical, int topk, int resident, int shared, int tokens,
                                   const int32_t *ids, const float *w, int32_t *out_ids,
                                   float *out_w)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tokens)
        return;
    const int ke = topk + shared;
    int32_t *o = out_ids + (uint64_t)t * ke;
    if (kvs_expert_map_token_impl(n_logical, topk, resident, ids + (uint64_t)t * topk, o) != 0) {
        /* bad ids cannot come from the router; keep the expert kernel in bounds */
        for (int k = 0; k < topk; k++)
            o[k] = k;
    }
    for (int k = 0; k < topk; k++)
        out_w[(uint64_t)t * ke + k] = w[(uint64_t)t * topk + k];
    for (int s = 0; s < shared; s++) {
        o[topk + s] = resident + s;
        out_w[(uint64_t)t * ke + topk + s] = 1.0f;
    }
}

extern "C" enum kvs_status kvs_eng_cuda_map_experts(const struct kvs_expert_map *m,
                                                    const int32_t *ids, const float *w, int tokens,
                                                    int32_t *out_ids, float *out_w, void *stream)
{
    if (tokens < 1 || m->resident > KVS_EXPERT_MAP_MAX_RESIDENT || m->topk > m->resident)
        return KVS_STATUS_INVALID_ARGUMENT;
    map_experts_kernel<<<(tokens + 127) / 128, 128, 0, (cudaStream_t)stream>>>(
        m->n_logical, m->topk, m->resident, m->shared, tokens, ids, w, out_ids, out_w);
    KVS_CUDA_LAUNCH_TRY(NULL);
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// router + expert map: one warp per token routes (as kvs_cuda_moe_route),
// then the warp maps the choices (as map_experts_kernel) with the used
// residents spread over the lanes (lane L holds residents 32L..32L+31 as
// bits): per choice, the first free resident at or after e mod R is found by
// one ballot (a second from resident 0 when the probe wraps). Lane 0 walking
// kvs_expert_map_token_impl's array alone cost ~2.3 us a layer (the array in
// local memory, one dependent step per probe).

static_assert(KVS_ENG_ROUTE_MAP_MAX_EXPERTS == KVS_ROUTE_WARP_MAX_EXPERTS, "route_map limits");
static_assert(KVS_EXPERT_MAP_MAX_RESIDENT <= 32 * 32, "one 32-bit word of residents per lane");

__global__ void __launch_bounds__(128)
route_map_kernel(const float *__restrict__ logits, const float *__restrict__ bias, int tokens,
                 int experts, int topk, int norm, float scale, int n_logical, int resident,
                 int shared, int32_t *__restrict__ out_ids, float *__restrict__ out_w)
{
    int lane, t;
    kvs_route_warp_start(&lane, &t);
    if (t >= tokens)
        return;
    int id;
    float w;
    kvs_route_warp_token(logits + (size_t)t * experts, bias, experts, topk, norm, scale, lane, &id,
                         &w);
    const int ke = topk + shared;
    int32_t *o = out_ids + (size_t)t * ke;
    const int below = resident - 32 * lane; /* residents in this lane's word */
    const uint32_t mine = below <= 0 ? 0u : below >= 32 ? ~0u : (1u << below) - 1u;
    uint32_t used = 0;
    int mapped = 0, bad = 0;
    for (int k = 0; k < topk; k++) {
        const int e = __shfl_sync(0xffffffffu, id, k);
        if (e < 0 || e >= n_logical) { /* warp-uniform: e is the same in every lane */
            bad = 1;
            break;
        }
        const int r = e % resident, wr = r >> 5;
        const uint32_t avail = mine & ~used;
        uint32_t cand = lane > wr ? avail : lane == wr ? avail & (~0u << (r & 31)) : 0u;
        unsigned who = __ballot_sync(0xffffffffu, cand != 0);
        if (!who) { /* wrap: the first free resident from 0 */
            cand = avail;
            who = __ballot_sync(0xffffffffu, cand != 0);
        }
        if (!who) { /* more choices than residents: the host refuses it */
            bad = 1;
            break;
        }
        const int wl = __ffs(who) - 1;
        int pick = lane == wl ? 32 * lane + __ffs(cand) - 1 : 0;
        pick = __shfl_sync(0xffffffffu, pick, wl);
        if (lane == wl)
            used |= 1u << (pick & 31);
        if (lane == k)
            mapped = pick;
    }
    if (lane < topk) {
        o[lane] = bad ? lane : mapped; /* as map_experts_kernel: stay in bounds */
        out_w[(size_t)t * ke + lane] = w;
    }
    if (lane == 0)
        for (int s2 = 0; s2 < shared; s2++) {
            o[topk + s2] = resident + s2;
            out_w[(size_t)t * ke + topk + s2] = 1.0f;
        }
}

extern "C" enum kvs_status kvs_eng_cuda_route_map(const struct kvs_expert_map *m,
                                                  const float *logits, const float *bias,
                                                  int tokens, int norm, float scale,
                                                  int32_t *out_ids, float *out_w,
                                                  const struct kvs_kernel_opts *opts, void *stream)
{
    if (tokens < 1 || !m || !logits || !out_ids || !out_w || m->topk < 1 ||
        m->topk > m->resident || m->resident > KVS_EXPERT_MAP_MAX_RESIDENT || m->shared < 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (m->n_logical > KVS_ENG_ROUTE_MAP_MAX_EXPERTS || m->topk > KVS_ENG_ROUTE_MAP_MAX_TOPK ||
        m->topk > m->n_logical)
        return KVS_STATUS_UNSUPPORTED;
    KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, route_map_kernel, dim3((unsigned)((tokens + 3) / 4)),
                                      dim3(128), 0, (cudaStream_t)stream, logits, bias, tokens,
                                      m->n_logical, m->topk, norm, scale, m->n_logical, m->resident,
                                      m->shared, out_ids, out_w));
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// sequence step: append on the device, then the CSR token list

__global__ void seq_append_kernel(int32_t *table, int max_len, int32_t *len,
                                  const int32_t *new_slot, int32_t *pos, int batch,
                                  int32_t *seq_start)
{
    /* one block; batch is small (decode), a serial prefix is cheapest */
    for (int b = threadIdx.x; b < batch; b += blockDim.x) {
        int32_t l = len[b];
        table[(int64_t)b * max_len + l] = new_slot[b];
        pos[b] = l;
        len[b] = l + 1;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t at = 0;
        for (int b = 0; b < batch; b++) {
            seq_start[b] = at;
            at += len[b];
        }
        seq_start[batch] = at;
    }
}

/* grid.y = sequence (and one more for the padding), x strides over tokens */
__global__ void seq_list_kernel(const int32_t *table, int max_len, const int32_t *len, int batch,
                                const int32_t *seq_start, int32_t *tokens, int64_t pad_to,
                                int32_t pad_slot)
{
    const int b = blockIdx.y;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (b < batch) {
        const int32_t *src = table + (int64_t)b * max_len;
        int32_t *dst = tokens + seq_start[b];
        for (int64_t t = first; t < len[b]; t += stride)
            dst[t] = src[t];
    } else {
        for (int64_t i = seq_start[batch] + first; i < pad_to; i += stride)
            tokens[i] = pad_slot;
    }
}

extern "C" enum kvs_status kvs_eng_cuda_seq_step(int32_t *table, int max_len, int32_t *len,
                                                 const int32_t *new_slot, int32_t *pos, int batch,
                                                 int32_t *seq_start, int32_t *tokens,
                                                 int64_t pad_to, int32_t pad_slot, void *stream)
{
    if (batch < 1 || batch > 65534 || max_len < 1)
        return KVS_STATUS_INVALID_ARGUMENT;
    cudaStream_t s = (cudaStream_t)stream;
    seq_append_kernel<<<1, 256, 0, s>>>(table, max_len, len, new_slot, pos, batch, seq_start);
    KVS_CUDA_LAUNCH_TRY(NULL);
    unsigned gx = (unsigned)((max_len + 1023) / 1024);
    gx = gx > 64 ? 64 : gx;
    dim3 grid(gx, (unsigned)batch + 1);
    seq_list_kernel<<<grid, 1024, 0, s>>>(table, max_len, len, batch, seq_start, tokens, pad_to,
                                          pad_slot);
    KVS_CUDA_LAUNCH_TRY(NULL);
    return KVS_STATUS_OK;
}
