/* tests/gpu/test_gpu_env.cu — the gpu suite's smoke test: a device is there,
 * it is the architecture we built for, and a kernel writes what it should.
 * Exits 77 (skipped) without a GPU.   meson test -C build --suite gpu */
#include "kvs_test_gpu.h"

#include <vector>

__global__ void fill_iota(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 3 * i + 1;
}

static void test_kernel_writes(void)
{
    const int n = 1 << 20;
    int *d = nullptr;
    KVS_TEST_CUDA(cudaMalloc(&d, n * sizeof(int)));
    KVS_TEST_CUDA(cudaMemset(d, 0xA5, n * sizeof(int))); /* poison */
    fill_iota<<<(n + 255) / 256, 256>>>(d, n);
    KVS_TEST_CUDA(cudaGetLastError());
    std::vector<int> h(n);
    KVS_TEST_CUDA(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += h[i] != 3 * i + 1;
    KVS_CHECK_EQ_INT(bad, 0);
    cudaFree(d);
}

static void test_device_arch(void)
{
    cudaDeviceProp p;
    KVS_TEST_CUDA(cudaGetDeviceProperties(&p, 0));
    fprintf(stderr, "device 0: %s, sm_%d%d, %d SMs, %.1f GiB\n", p.name, p.major, p.minor,
            p.multiProcessorCount, p.totalGlobalMem / 1073741824.0);
    KVS_CHECK_MSG(p.major * 10 + p.minor >= KVS_CUDA_ARCH,
                  "built for sm_%d, device is sm_%d%d", KVS_CUDA_ARCH, p.major, p.minor);
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    static const struct kvs_test tests[] = {
        {"kernel_writes", test_kernel_writes},
        {"device_arch", test_device_arch},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
