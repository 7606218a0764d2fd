/* tests/gpu/capture_target.cu — an ordinary CUDA program that knows nothing
 * of kvscope, for testing `kvscope capture` (tests/gpu/test_capture_inject.sh).
 * It uses NVTX the way applications do (push/pop, a domain, start/end).
 *
 *   capture_target probe     exit 0 with a GPU, 77 without
 *   capture_target run       4 steps of 6 kernels + a copy + a memset; returns from main
 *   capture_target exit      the same, then exit(0) from inside a function
 *   capture_target loop      steps until a signal ends it (prints "ready" after step 1)
 *   capture_target window    steps 0-1 outside, 2-3 inside cudaProfilerStart/Stop
 *   capture_target graph     one step's 6 kernels captured into a CUDA graph on one
 *                            stream before cudaProfilerStart, replayed 3 times inside
 *                            cudaProfilerStart/Stop (ranges step_0..2 around the launches)
 *   capture_target windows   two cudaProfilerStart/Stop windows: step 0 outside, 1 in
 *                            the first, 2 outside, 3 in the second, 4 outside
 *   capture_target graphs    the graph of `graph`, captured before the first of two
 *                            windows, replayed twice in the first (ranges step_0,
 *                            step_1), once in the second (step_2)
 *   capture_target driver    one step "step_0": 3 kernels "busy" launched through the
 *                            driver's cuLaunchKernel (as Triton and cuBLAS launch), then
 *                            3 through cudaLaunchKernel
 *
 * Each step: NVTX range "step_N" containing 6 kernels "busy" of ~50 us on
 * alternating streams, a 16 MiB device copy and a 4 MiB memset; kernels 0
 * and 3 sit inside a range of domain "app" named "layer".
 */
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                           \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

__global__ void busy(long long ns, int *out)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while ((long long)(t - t0) < ns);
    if (threadIdx.x == 0)
        out[blockIdx.x] = 1;
}

static cudaStream_t g_s[2];
static int *g_out;
static char *g_a, *g_b;
static nvtxDomainHandle_t g_app;

/* KVS_TARGET_GAP_MS: the time between two windows (kernels launched
 * meanwhile, outside them), long enough for kvscope to detach CUPTI there */
static void gap(void)
{
    const char *v = getenv("KVS_TARGET_GAP_MS");
    int ms = v ? atoi(v) : 0;
    for (int i = 0; i < ms; i++) {
        busy<<<1, 1, 0, g_s[0]>>>(1000, g_out); /* outside: in no trace */
        CK(cudaStreamSynchronize(g_s[0]));
        usleep(1000);
    }
}

static void step(int n)
{
    char name[32];
    snprintf(name, sizeof name, "step_%d", n);
    nvtxRangePushA(name);
    for (int k = 0; k < 6; k++) {
        if (k == 0 || k == 3) {
            nvtxEventAttributes_t a;
            memset(&a, 0, sizeof a);
            a.version = NVTX_VERSION;
            a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
            a.messageType = NVTX_MESSAGE_TYPE_ASCII;
            a.message.ascii = "layer";
            nvtxDomainRangePushEx(g_app, &a);
        }
        busy<<<2, 32, 0, g_s[k % 2]>>>(50000, g_out);
        CK(cudaGetLastError());
        if (k == 0 || k == 3)
            nvtxDomainRangePop(g_app);
    }
    CK(cudaMemcpyAsync(g_b, g_a, 16u << 20, cudaMemcpyDeviceToDevice, g_s[0]));
    CK(cudaMemsetAsync(g_a, 0, 4u << 20, g_s[1]));
    nvtxRangePop();
    CK(cudaDeviceSynchronize());
}

static void setup(void)
{
    g_app = nvtxDomainCreateA("app");
    CK(cudaStreamCreateWithFlags(&g_s[0], cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&g_s[1], cudaStreamNonBlocking));
    CK(cudaMalloc(&g_out, 64 * sizeof(int)));
    CK(cudaMalloc(&g_a, 16u << 20));
    CK(cudaMalloc(&g_b, 16u << 20));
}

static void finish_and_exit(void)
{
    CK(cudaDeviceSynchronize());
    exit(0); /* not a return from main: atexit handlers must still see it */
}

/* One step's 6 kernels captured into a CUDA graph on one stream (kernels 0
 * and 3 inside "layer" ranges of domain "app"), instantiated. */
static cudaGraphExec_t capture_graph(void)
{
    busy<<<1, 32, 0, g_s[0]>>>(1000, g_out); /* module loaded before the capture */
    CK(cudaStreamSynchronize(g_s[0]));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(g_s[0], cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < 6; k++) {
        nvtxEventAttributes_t a;
        memset(&a, 0, sizeof a);
        a.version = NVTX_VERSION;
        a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = "layer";
        if (k == 0 || k == 3)
            nvtxDomainRangePushEx(g_app, &a);
        busy<<<2, 32, 0, g_s[0]>>>(50000, g_out);
        CK(cudaGetLastError());
        if (k == 0 || k == 3)
            nvtxDomainRangePop(g_app);
    }
    CK(cudaStreamEndCapture(g_s[0], &g));
    CK(cudaGraphInstantiate(&ge, g, 0)); /* g stays alive, as the program's graphs do */
    return ge;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "run";
    if (!strcmp(mode, "probe")) {
        int n = 0;
        return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 77;
    }
    setup();
    if (!strcmp(mode, "run") || !strcmp(mode, "exit")) {
        for (int i = 0; i < 4; i++)
            step(i);
        if (!strcmp(mode, "exit"))
            finish_and_exit();
        return 0;
    }
    if (!strcmp(mode, "loop")) {
        for (int i = 0;; i++) {
            step(i);
            if (i == 1) {
                printf("ready\n");
                fflush(stdout);
            }
        }
    }
    if (!strcmp(mode, "window")) {
        step(0);
        step(1);
        CK(cudaProfilerStart());
        step(2);
        step(3);
        CK(cudaProfilerStop());
        step(4);
        return 0;
    }
    if (!strcmp(mode, "windows")) {
        for (int i = 0; i < 5; i++) {
            if (i == 1 || i == 3)
                CK(cudaProfilerStart());
            step(i);
            if (i == 1 || i == 3)
                CK(cudaProfilerStop());
            if (i == 1)
                gap();
        }
        return 0;
    }
    if (!strcmp(mode, "graph") || !strcmp(mode, "graphs")) {
        int two = !strcmp(mode, "graphs");
        cudaGraphExec_t ge = capture_graph();
        CK(cudaProfilerStart());
        for (int r = 0; r < 3; r++) {
            if (two && r == 2) { /* the second window */
                CK(cudaProfilerStop());
                gap();
                CK(cudaProfilerStart());
            }
            char name[32];
            snprintf(name, sizeof name, "step_%d", r);
            nvtxRangePushA(name);
            CK(cudaGraphLaunch(ge, g_s[0]));
            CK(cudaStreamSynchronize(g_s[0]));
            nvtxRangePop();
        }
        CK(cudaProfilerStop());
        CK(cudaGraphExecDestroy(ge));
        return 0;
    }
    if (!strcmp(mode, "driver")) {
        typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, unsigned, CUstream, void **, void **);
        void *fn = NULL;
        cudaDriverEntryPointQueryResult q;
        CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &fn, 12000, cudaEnableDefault, &q));
        cudaFunction_t f;
        CK(cudaGetFuncBySymbol(&f, (const void *)busy));
        if (!fn || q != cudaDriverEntryPointSuccess) {
            fprintf(stderr, "capture_target: no cuLaunchKernel entry point\n");
            return 1;
        }
        long long ns = 50000;
        int *out = g_out;
        void *args[] = {&ns, &out};
        nvtxRangePushA("step_0");
        for (int k = 0; k < 3; k++)
            if (((launch_fn)fn)((CUfunction)f, 2, 1, 1, 32, 1, 1, 0, g_s[0], args, NULL) !=
                CUDA_SUCCESS) {
                fprintf(stderr, "capture_target: cuLaunchKernel failed\n");
                return 1;
            }
        for (int k = 0; k < 3; k++)
            busy<<<2, 32, 0, g_s[1]>>>(50000, g_out);
        CK(cudaGetLastError());
        nvtxRangePop();
        CK(cudaDeviceSynchronize());
        return 0;
    }
    fprintf(stderr, "capture_target: unknown mode %s\n", mode);
    return 2;
}
