/* kernels/bench/bench_util.cuh — what kvscope's kernel benchmarks share
 * (bench_kernels.cu, bench_decode.cu): device buffers filled from a hash,
 * downloads, the normalized error (kt_norm_err_bf16, the tests' own), a
 * check that stops before a wrong result is timed, the median of CUDA-event
 * timings after warm-up, and the
 * device-to-device copy rate every figure is reported against; the device
 * line each benchmark opens with, and which sections its command line asks for.
 *
 * defines: g_copy_gbps, CK, ST, bench_opts, dmalloc, dfill_fp8, dfill_bf16, download,
 *          require, time_us, graph_us, pct, bench_copy, print_device, wanted,
 *          struct bench_routing, bench_route, bench_routing_free
 */
#ifndef KVSCOPE_BENCH_UTIL_CUH
#define KVSCOPE_BENCH_UTIL_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "../tests/kvs_kernel_err.h" /* defines: kt_norm_err_bf16, as the tests judge */
#include "kvscope/die.h"
#include "kvscope/kernels.h"

static double g_copy_gbps = 0.0;

#define CK(call) KVS_CUDA_DIE(call)
#define ST(call) KVS_STATUS_DIE(call)

__device__ __forceinline__ uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The kernels' launch options, from KVS_PDL and KVS_MLA_* in the environment
 * (a bench may read it; the kernels never do). Parsed once; a bad value ends
 * the bench with the reason. */
static const struct kvs_kernel_opts *bench_opts(void)
{
    static struct kvs_kernel_opts o;
    static bool done = false;
    if (!done) {
        KVS_STATUS_DIE(kvs_kernel_opts_parse(&o, getenv, NULL));
        done = true;
    }
    return &o;
}

/* FP8 codes; mask 0xff keeps every code (NaN included), 0xbf keeps |x| < 2 */
__global__ void fill_fp8(uint8_t *p, size_t n, uint64_t seed, uint32_t mask)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (uint8_t)(mix(i * 0x9E3779B97F4A7C15ull + seed) & mask);
}

/* BF16 uniform in [-a, a) (truncated to BF16) */
__global__ void fill_bf16(uint16_t *p, size_t n, uint64_t seed, float a)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float u = (float)(mix(i * 0x9E3779B97F4A7C15ull + seed) >> 40) * 0x1p-24f;
        p[i] = (uint16_t)(__float_as_uint((2.f * u - 1.f) * a) >> 16);
    }
}

static void *dmalloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes));
    return p;
}

static void dfill_fp8(void *p, size_t n, uint64_t seed, uint32_t mask)
{
    fill_fp8<<<1024, 256>>>((uint8_t *)p, n, seed, mask);
    KVS_CUDA_LAUNCH_DIE();
}

static void dfill_bf16(void *p, size_t n, uint64_t seed, float a)
{
    fill_bf16<<<1024, 256>>>((uint16_t *)p, n, seed, a);
    KVS_CUDA_LAUNCH_DIE();
}

template <class T> static std::vector<T> download(const void *d, size_t n)
{
    std::vector<T> h(n);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

static void require(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "CHECK FAILED: %s (not timing a wrong result)\n", what);
        exit(1);
    }
}

/* median microseconds of `reps` calls of f(rep), after `warm` calls; the
 * events go to stream st (f enqueues there too), all recorded before one
 * synchronisation, so the calls run back to back */
template <class F> static double time_us(F f, int warm, int reps, cudaStream_t st = 0)
{
    for (int i = 0; i < warm; i++)
        f(i);
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev)
        CK(cudaEventCreate(&e));
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(ev[2 * i], st));
        f(warm + i);
        CK(cudaEventRecord(ev[2 * i + 1], st));
    }
    CK(cudaDeviceSynchronize());
    std::vector<float> ms(reps);
    for (int i = 0; i < reps; i++)
        CK(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
    for (auto &e : ev)
        CK(cudaEventDestroy(e));
    std::sort(ms.begin(), ms.end());
    return 1000.0 * ms[reps / 2];
}

/* median microseconds of one replay of graph ge on stream s over `reps`
 * replays (after `warm`), divided by `per`, the calls it holds */
static double graph_us(cudaGraphExec_t ge, cudaStream_t s, int warm, int reps, int per)
{
    for (int i = 0; i < warm; i++)
        CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(e0, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float t;
        CK(cudaEventElapsedTime(&t, e0, e1));
        ms.push_back(t);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(ms.begin(), ms.end());
    return 1000.0 * ms[ms.size() / 2] / per;
}

static double pct(double gbps) { return g_copy_gbps > 0 ? 100.0 * gbps / g_copy_gbps : 0.0; }

static void bench_copy(void)
{
    const size_t bytes = (size_t)1 << 30;
    void *a = dmalloc(bytes), *b = dmalloc(bytes);
    dfill_fp8(a, bytes, 1, 0xff);
    double us = time_us([&](int) { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); },
                        3, 20);
    g_copy_gbps = 2.0 * bytes / us * 1e-3;
    printf("\n## device-to-device copy (1 GiB, bytes read + written)\n\n");
    printf("| bytes | median us | GB/s |\n|---|---|---|\n");
    printf("| %zu | %.1f | %.0f |\n", bytes, us, g_copy_gbps);
    CK(cudaFree(a));
    CK(cudaFree(b));
}

/* "# NAME: <device>, <SMs>, L2, sm_XY" */
static void print_device(const char *bench)
{
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s: %s, %d SMs, L2 %.0f MB, sm_%d%d\n", bench, p.name, p.multiProcessorCount,
           p.l2CacheSize / 1e6, p.major, p.minor);
}

/* Whether section `what` runs: the arguments name it, or name nothing. */
static bool wanted(int argc, char **argv, const char *what)
{
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], what))
            return true;
    return false;
}

/* The routing of the MoE benches (bench_kernels moe and fp8w): token t's
 * k-th of K experts is (t * 11 + k * 7) % R, weight 0.1 + 0.05 k, so that
 * tokens share some experts; on the host and the device, with how many
 * distinct experts the T tokens read (the bytes a call must stream). */
struct bench_routing {
    std::vector<int32_t> ids; /* [T, K] */
    std::vector<float> w;     /* [T, K] */
    int distinct;
    int32_t *d_ids;
    float *d_w;
};

static inline bench_routing bench_route(int T, int K, int R)
{
    bench_routing r;
    r.ids.resize((size_t)T * K);
    r.w.resize((size_t)T * K);
    std::vector<int> used(R, 0);
    for (int t = 0; t < T; t++)
        for (int k = 0; k < K; k++) {
            r.ids[t * K + k] = (t * 11 + k * 7) % R;
            r.w[t * K + k] = 0.1f + 0.05f * k;
            used[r.ids[t * K + k]] = 1;
        }
    r.distinct = 0;
    for (int u : used)
        r.distinct += u;
    r.d_ids = (int32_t *)dmalloc(r.ids.size() * 4);
    r.d_w = (float *)dmalloc(r.w.size() * 4);
    CK(cudaMemcpy(r.d_ids, r.ids.data(), r.ids.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r.d_w, r.w.data(), r.w.size() * 4, cudaMemcpyHostToDevice));
    return r;
}

static inline void bench_routing_free(bench_routing &r)
{
    CK(cudaFree(r.d_ids));
    CK(cudaFree(r.d_w));
}

#endif /* KVSCOPE_BENCH_UTIL_CUH */
