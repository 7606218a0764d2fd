/* examples/naive_kv_cast.cu — an ordinary CUDA program with the bug kvscope
 * is built around, for `kvscope capture` (examples/4_capture_cuda.sh runs it).
 * It knows nothing of capture: no CUPTI, no trace calls; run it alone or under
 * `kvscope capture` unchanged.
 *
 *   build/examples/naive_kv_cast                  the bug: every layer casts its WHOLE FP8 KV pool to BF16
 *   build/examples/naive_kv_cast --fixed          the fix: attention reads the FP8 rows directly
 *   build/examples/naive_kv_cast --no-annotate    NVTX step/layer ranges only, no op shapes
 *   kvscope capture -o naive.json.gz -- build/examples/naive_kv_cast
 *   options: --layers N (78)  --capacity TOKENS (131072)  --active TOKENS (4096)  --steps N (4)
 *
 * A decode-like loop. Each step (NVTX range "step_N") runs every layer (NVTX
 * "layer_N"): one query's attention scores against the layer's active KV
 * rows, which sit scattered in a preallocated FP8 e4m3 pool [capacity, 1, 576]
 * (576 = MLA latent 512 + rope 64). Unfixed, the layer first casts the whole
 * pool to a BF16 scratch with a naive one-element-per-thread kernel, as a
 * `.to(torch.bfloat16)` on the pool would; fixed, the scores kernel converts
 * the active FP8 rows as it reads them.
 *
 * The two ops are named with kvscope's annotation API (kvscope/annotate.h):
 * NVTX ranges whose message carries the op's input dims and dtypes, which
 * the capture turns into ops with shapes — what lets `kvscope report` say
 * "[131072,1,576] is the whole buffer". When no tool listens they cost one
 * atomic load. With --no-annotate the program only has NVTX ranges, and the
 * report can still name the cast kernel, its GPU time and the steps.
 *
 * Before timing anything it checks layer 0's scores against the CPU.
 */
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/annotate.h"   // defines: kvs_op_begin, kvs_op_end, struct kvs_tensor_desc

#define ROW 576  // kv_lora_rank 512 + qk_rope_head_dim 64

#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "naive_kv_cast: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                    cudaGetErrorString(e_));                                                      \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

// ----------------------------------------------------------------------------
// the KV rows: a hash of (layer, row, column) -> an e4m3 byte, on both sides

__host__ __device__ static inline uint8_t kv_byte(uint32_t layer, uint32_t row, uint32_t col)
{
    uint32_t h = layer * 0x9E3779B1u ^ row * 0x85EBCA77u ^ col * 0xC2B2AE3Du;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    h ^= h >> 15;
    // sign, exponent 4..9 (0.125 .. 7.5 with bias 7), any mantissa: never NaN
    return (uint8_t)(((h >> 8) & 0x80u) | ((4u + h % 6u) << 3) | ((h >> 4) & 7u));
}

__host__ __device__ static inline float q_val(int j) { return 0.01f * (float)((j * 37) % 29 - 14); }

// ----------------------------------------------------------------------------
// kernels

__global__ void fill_pool(uint8_t *pool, uint32_t layer, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        pool[i] = kv_byte(layer, (uint32_t)(i / ROW), (uint32_t)(i % ROW));
}

// The naive cast: one element per thread, one byte in, two bytes out.
__global__ void naive_cast_fp8_to_bf16(const __nv_fp8_e4m3 *in, __nv_bfloat16 *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = __float2bfloat16((float)in[i]);
}

__device__ static inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ static inline float to_float(__nv_fp8_e4m3 x) { return (float)x; }

// One warp per active token: score = q . row / 16 over the token's pool row.
template <typename T>
__global__ void attend_scores(const T *kv, const int *slots, int active, float *scores)
{
    int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
    if (warp >= active)
        return;
    const T *row = kv + (size_t)slots[warp] * ROW;
    float s = 0.0f;
    for (int j = lane; j < ROW; j += 32)
        s += q_val(j) * to_float(row[j]);
    for (int o = 16; o; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
        scores[warp] = s * 0.0625f;
}

// ----------------------------------------------------------------------------
// the decode loop

struct opts {
    int layers, steps, fixed, annotate;
    long long capacity, active;
};

static struct kvs_tensor_desc tensor3(long long tokens, const char *dtype)
{
    struct kvs_tensor_desc t;
    memset(&t, 0, sizeof t);
    t.rank = 3;
    t.dims[0] = tokens;
    t.dims[1] = 1;
    t.dims[2] = ROW;
    t.dtype = dtype;
    return t;
}

static void layer(const struct opts *o, int l, uint8_t *const *pool, __nv_bfloat16 *scratch,
                  const int *slots, float *scores)
{
    const char *bf16 = "c10::BFloat16", *fp8 = "c10::Float8_e4m3fn";
    int threads = 256;
    if (!o->fixed) {
        size_t n = (size_t)o->capacity * ROW;
        struct kvs_tensor_desc t[2] = {tensor3(o->capacity, bf16), tensor3(o->capacity, fp8)};
        if (o->annotate)
            kvs_op_begin("naive::cast_fp8_to_bf16", 2, t);
        naive_cast_fp8_to_bf16<<<(unsigned)((n + threads - 1) / threads), threads>>>(
            (const __nv_fp8_e4m3 *)pool[l], scratch, n);
        CK(cudaGetLastError());
        if (o->annotate)
            kvs_op_end();
    }
    // attention's inputs: the query, the rows it reads, and the active token list
    struct kvs_tensor_desc t[3];
    memset(t, 0, sizeof t);
    t[0].rank = 2, t[0].dims[0] = 1, t[0].dims[1] = ROW, t[0].dtype = "float";
    t[1] = tensor3(o->capacity, o->fixed ? fp8 : bf16);
    t[2].rank = 1, t[2].dims[0] = o->active, t[2].dtype = "int";
    if (o->annotate)
        kvs_op_begin("naive::attend", 3, t);
    unsigned blocks = (unsigned)((o->active * 32 + threads - 1) / threads);
    if (o->fixed)
        attend_scores<<<blocks, threads>>>((const __nv_fp8_e4m3 *)pool[l], slots, (int)o->active,
                                           scores);
    else
        attend_scores<<<blocks, threads>>>(scratch, slots, (int)o->active, scores);
    CK(cudaGetLastError());
    if (o->annotate)
        kvs_op_end();
}

// Step n >= 1 is the range "step_n" (kvscope report finds steps by that name);
// the warm-up (n = 0) is "warmup", so it is not counted as one.
static void step(const struct opts *o, int n, uint8_t *const *pool, __nv_bfloat16 *scratch,
                 const int *slots, float *scores)
{
    char name[32];
    snprintf(name, sizeof name, n ? "step_%d" : "warmup", n);
    nvtxRangePushA(name);
    for (int l = 0; l < o->layers; l++) {
        snprintf(name, sizeof name, "layer_%d", l);
        nvtxRangePushA(name);
        layer(o, l, pool, scratch, slots, scores + (size_t)l * o->active);
        nvtxRangePop();
    }
    nvtxRangePop();
}

static long long gcd(long long a, long long b) { return b ? gcd(b, a % b) : a; }

static int parse(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--fixed"))
            o->fixed = 1;
        else if (!strcmp(a, "--no-annotate"))
            o->annotate = 0;
        else if (i + 1 < argc && !strcmp(a, "--layers"))
            o->layers = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(a, "--steps"))
            o->steps = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(a, "--capacity"))
            o->capacity = atoll(argv[++i]);
        else if (i + 1 < argc && !strcmp(a, "--active"))
            o->active = atoll(argv[++i]);
        else {
            fprintf(stderr, "usage: naive_kv_cast [--fixed] [--no-annotate] [--layers N] "
                            "[--capacity TOKENS] [--active TOKENS] [--steps N]\n");
            return 2;
        }
    }
    if (o->layers < 1 || o->steps < 1 || o->active < 1 || o->capacity < o->active ||
        o->active > (1 << 24)) {
        fprintf(stderr, "naive_kv_cast: need layers, steps >= 1 and 1 <= active <= capacity\n");
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {78, 4, 0, 1, 131072, 4096};
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "naive_kv_cast: no CUDA device\n");
        return 77;
    }

    // the pools, the BF16 scratch of one layer, the scattered active slots
    size_t pool_bytes = (size_t)o.capacity * ROW;
    uint8_t **pool = (uint8_t **)calloc((size_t)o.layers, sizeof *pool);
    for (int l = 0; l < o.layers; l++) {
        CK(cudaMalloc(&pool[l], pool_bytes));
        fill_pool<<<1024, 256>>>(pool[l], (uint32_t)l, pool_bytes);
        CK(cudaGetLastError());
    }
    __nv_bfloat16 *scratch = NULL;
    if (!o.fixed)
        CK(cudaMalloc(&scratch, pool_bytes * 2));
    long long stride = 7919;  // a prime: slot t = t * stride mod capacity, all distinct
    while (gcd(stride, o.capacity) != 1)
        stride += 2;
    int *h_slots = (int *)malloc((size_t)o.active * sizeof(int));
    for (long long t = 0; t < o.active; t++)
        h_slots[t] = (int)(t * stride % o.capacity);
    int *slots = NULL;
    float *scores = NULL;
    CK(cudaMalloc(&slots, (size_t)o.active * sizeof(int)));
    CK(cudaMalloc(&scores, (size_t)o.layers * o.active * sizeof(float)));
    CK(cudaMemcpy(slots, h_slots, (size_t)o.active * sizeof(int), cudaMemcpyHostToDevice));

    // warm-up step, then the check against the CPU (layer 0, every active token)
    step(&o, 0, pool, scratch, slots, scores);
    CK(cudaDeviceSynchronize());
    float *got = (float *)malloc((size_t)o.active * sizeof(float));
    CK(cudaMemcpy(got, scores, (size_t)o.active * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0.0;
    for (long long t = 0; t < o.active; t++) {
        double want = 0.0;
        for (int j = 0; j < ROW; j++) {
            __nv_fp8_e4m3 v;
            v.__x = kv_byte(0, (uint32_t)h_slots[t], (uint32_t)j);
            want += (double)q_val(j) * (double)(float)v;
        }
        want *= 0.0625;
        double err = fabs(got[t] - want) / (fabs(want) + 1.0);
        worst = err > worst ? err : worst;
    }
    if (worst > 1e-3) {
        fprintf(stderr, "naive_kv_cast: scores differ from the CPU's (worst %.3g)\n", worst);
        return 1;
    }
    printf("check: layer 0 scores of %lld active tokens match the CPU (worst error %.2g)\n",
           o.active, worst);

    // the timed steps
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int n = 1; n <= o.steps; n++) {
        CK(cudaEventRecord(e0));
        step(&o, n, pool, scratch, slots, scores);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0.0f;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        printf("step %d: %.3f ms (%s, %d layers, KV pool %lld tokens, %lld active)\n", n, ms,
               o.fixed ? "fixed: attention reads FP8" : "unfixed: full-pool cast per layer",
               o.layers, o.capacity, o.active);
    }
    for (int l = 0; l < o.layers; l++)
        CK(cudaFree(pool[l]));
    CK(cudaFree(scratch));
    CK(cudaFree(slots));
    CK(cudaFree(scores));
    free(pool);
    free(h_slots);
    free(got);
    return 0;
}
