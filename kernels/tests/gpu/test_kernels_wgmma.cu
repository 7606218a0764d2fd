/* kernels/tests/gpu/test_kernels_wgmma.cu — the wgmma pieces of the MLA
 * decode kernel (kernels/cuda/mla_wgmma.cuh) alone: one warpgroup computes
 * D (64 x 64, f32) = A (64 x K, f16, m16n8k16 A fragments in registers) .
 * B (K x 64, f16 in shared memory, K-major core matrices, no swizzle) with
 * the kernel's wrapper and descriptor, K = 64 (P's layout: SBO 1024) and
 * K = 576 (Q's: SBO 9216), against a double-precision CPU product on fresh
 * random inputs; D is poisoned first. On a mismatch it also runs the product
 * with LBO and SBO swapped and says whether that one matches (a layout
 * diagnosis, not a pass); and the S8 variant's e4m3 product (Q8's layout,
 * test_q8_layout). Built for sm_90a (kernels/meson.build).
 *
 *   meson test -C build --suite gpu test_kernels_wgmma
 */
#include <cuda_fp16.h>

#include <vector>

#include "kvs_kernel_test.h"
#include "mla_wgmma.cuh"

/* a: [64][K] row-major; b: [64 (n)][K]; d: [64][64] row-major */
__global__ void wg_product(const __half *a, const __half *b, float *d, int K, uint32_t lbo,
                           uint32_t sbo)
{
    extern __shared__ __align__(128) unsigned char sb[];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, t = lane & 3;
    /* B into the core-matrix layout of wg_q_off / wg_p_off with this K */
    for (int i = tid; i < 64 * K; i += blockDim.x) {
        int n = i / K, k = i - n * K;
        uint32_t off = (uint32_t)((n >> 3) * (K / 8) * 128 + (k >> 3) * 128 + (n & 7) * 16 + (k & 7) * 2);
        *(__half *)(sb + off) = b[i];
    }
    kvs_fence_proxy_async();
    __syncthreads();
    const uint64_t desc = kvs_wg_desc(kvs_smem_u32(sb), lbo, sbo);
    float acc[8][4];
    for (int j = 0; j < K / 16; j++) {
        /* rows 16 w + g, + 8; columns 16 j + 2 t, + 1, + 8, + 9 */
        const __half *r0 = a + (size_t)(16 * w + g) * K + 16 * j + 2 * t, *r1 = r0 + 8 * K;
        uint32_t f[4];
        f[0] = *(const uint32_t *)r0;
        f[1] = *(const uint32_t *)r1;
        f[2] = *(const uint32_t *)(r0 + 8);
        f[3] = *(const uint32_t *)(r1 + 8);
        kvs_wgmma_fence();
        kvs_wgmma_m64n64k16_rs(acc, f, desc + (uint64_t)(16 * j), j > 0);
        kvs_wgmma_commit();
        kvs_wgmma_wait<0>();
        kvs_wg_reg_fence(acc);
    }
    for (int nt = 0; nt < 8; nt++)
        for (int r = 0; r < 4; r++) {
            int row = 16 * w + g + 8 * (r >> 1), col = 8 * nt + 2 * t + (r & 1);
            d[row * 64 + col] = acc[nt][r];
        }
}

/* the max relative error of the GPU product with (lbo, sbo), vs ref */
static double run_product(const __half *da, const __half *db, float *dd, int K, uint32_t lbo,
                          uint32_t sbo, const std::vector<double> &ref)
{
    KVS_TEST_CUDA(cudaMemset(dd, 0xff, 64 * 64 * 4)); /* NaN */
    const int smem = 64 * K * 2;
    KVS_TEST_CUDA(cudaFuncSetAttribute(wg_product, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    wg_product<<<1, 128, smem>>>(da, db, dd, K, lbo, sbo);
    KVS_TEST_CUDA(cudaGetLastError());
    std::vector<float> d(64 * 64);
    kt_down(d.data(), dd, d.size() * 4);
    double worst = 0.0, scale = 0.0;
    for (double r : ref)
        scale = fmax(scale, fabs(r));
    for (size_t i = 0; i < d.size(); i++) {
        double e = fabs((double)d[i] - ref[i]);
        if (isnan(d[i]))
            e = INFINITY;
        worst = fmax(worst, e / scale);
    }
    return worst;
}

static void check_k(int K, uint32_t sbo)
{
    uint64_t st = kt_seed("wgmma");
    std::vector<__half> a(64 * (size_t)K), b(64 * (size_t)K);
    for (auto &x : a)
        x = __float2half(kt_unif(&st, -1.f, 1.f));
    for (auto &x : b)
        x = __float2half(kt_unif(&st, -1.f, 1.f));
    std::vector<double> ref(64 * 64);
    for (int m = 0; m < 64; m++)
        for (int n = 0; n < 64; n++) {
            double s = 0.0;
            for (int k = 0; k < K; k++)
                s += (double)__half2float(a[m * K + k]) * __half2float(b[n * K + k]);
            ref[m * 64 + n] = s;
        }
    __half *da = (__half *)kt_dev(a.size() * 2), *db = (__half *)kt_dev(b.size() * 2);
    float *dd = (float *)kt_dev(64 * 64 * 4);
    kt_up(da, a.data(), a.size() * 2);
    kt_up(db, b.data(), b.size() * 2);
    /* f32 accumulation of K products of values < 1: well inside 1e-5 */
    double e = run_product(da, db, dd, K, 128, sbo, ref);
    fprintf(stderr, "K=%d LBO=128 SBO=%u: max error %.3g (of the largest |D|)\n", K, sbo, e);
    KVS_CHECK_MSG(e <= 1e-5, "K=%d: wgmma product off by %.3g", K, e);
    if (!(e <= 1e-5)) {
        double e2 = run_product(da, db, dd, K, sbo, 128, ref);
        fprintf(stderr, "  diagnosis: LBO and SBO swapped gives %.3g\n", e2);
    }
    KVS_TEST_CUDA(cudaFree(da));
    KVS_TEST_CUDA(cudaFree(db));
    KVS_TEST_CUDA(cudaFree(dd));
}

/* The S8 variant's product (mla_wgmma.cuh): D = A (64 x 576 e4m3, the
 * m16n8k32 A fragments of kvs_wgmma_m64n64k32_e4m3_rs) . B (Q8's layout,
 * wg_q8_off: K-major core matrices of 8 rows x 16 codes, LBO 128, SBO
 * 4608), the positions in order (the layout, not the kernel's dim
 * permutation). Codes of small integers (-3..3: exact products, sums below
 * 2^13, so the tensor core's truncating accumulation is exact too), so the
 * check is exact. */
__global__ void wg_product8(const uint8_t *a, const uint8_t *b, float *d, uint32_t lbo, uint32_t sbo)
{
    extern __shared__ __align__(128) unsigned char sb[];
    const int K = 576, tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, t = lane & 3;
    for (int i = tid; i < 64 * K; i += blockDim.x) {
        int n = i / K, k = i - n * K;
        sb[wg_q8_off(n, k)] = b[i];
    }
    kvs_fence_proxy_async();
    __syncthreads();
    const uint64_t desc = kvs_wg_desc(kvs_smem_u32(sb), lbo, sbo);
    float acc[8][4];
    for (int j = 0; j < K / 32; j++) {
        const uint8_t *r0 = a + (size_t)(16 * w + g) * K + 32 * j + 4 * t, *r1 = r0 + 8 * K;
        uint32_t f[4];
        f[0] = *(const uint32_t *)r0;
        f[1] = *(const uint32_t *)r1;
        f[2] = *(const uint32_t *)(r0 + 16);
        f[3] = *(const uint32_t *)(r1 + 16);
        kvs_wgmma_fence();
        kvs_wgmma_m64n64k32_e4m3_rs(acc, f, desc + (uint64_t)(16 * j), j > 0);
        kvs_wgmma_commit();
        kvs_wgmma_wait<0>();
        kvs_wg_reg_fence(acc);
    }
    for (int nt = 0; nt < 8; nt++)
        for (int r = 0; r < 4; r++) {
            int row = 16 * w + g + 8 * (r >> 1), col = 8 * nt + 2 * t + (r & 1);
            d[row * 64 + col] = acc[nt][r];
        }
}

static void test_q8_layout(void)
{
    const int K = 576;
    uint64_t st = kt_seed("wgmma e4m3");
    std::vector<uint8_t> a(64 * (size_t)K), b(64 * (size_t)K);
    for (auto &x : a)
        x = kvs_float_to_fp8((float)((int)(kvs_test_rand(&st) % 7) - 3));
    for (auto &x : b)
        x = kvs_float_to_fp8((float)((int)(kvs_test_rand(&st) % 7) - 3));
    std::vector<double> ref(64 * 64);
    for (int m = 0; m < 64; m++)
        for (int n = 0; n < 64; n++) {
            double s = 0.0;
            for (int k = 0; k < K; k++)
                s += (double)kvs_fp8_to_float(a[m * K + k]) * kvs_fp8_to_float(b[n * K + k]);
            ref[m * 64 + n] = s;
        }
    uint8_t *da = (uint8_t *)kt_dev(a.size()), *db = (uint8_t *)kt_dev(b.size());
    float *dd = (float *)kt_dev(64 * 64 * 4);
    kt_up(da, a.data(), a.size());
    kt_up(db, b.data(), b.size());
    for (int swap = 0; swap < 2; swap++) {
        KVS_TEST_CUDA(cudaMemset(dd, 0xff, 64 * 64 * 4));
        KVS_TEST_CUDA(cudaFuncSetAttribute(wg_product8, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           64 * K));
        wg_product8<<<1, 128, 64 * K>>>(da, db, dd, swap ? kWgQ8Sbo : 128, swap ? 128 : kWgQ8Sbo);
        KVS_TEST_CUDA(cudaGetLastError());
        std::vector<float> d(64 * 64);
        kt_down(d.data(), dd, d.size() * 4);
        int bad = 0;
        for (size_t i = 0; i < d.size(); i++)
            bad += !((double)d[i] == ref[i]);
        fprintf(stderr, "e4m3 K=576 LBO=%u SBO=%u: %d of 4096 differ\n", swap ? kWgQ8Sbo : 128,
                swap ? 128 : kWgQ8Sbo, bad);
        if (!swap)
            KVS_CHECK_MSG(bad == 0, "e4m3 wgmma product: %d of 4096 entries differ", bad);
        if (bad == 0) /* the diagnosis run only after a failure */
            break;
    }
    KVS_TEST_CUDA(cudaFree(da));
    KVS_TEST_CUDA(cudaFree(db));
    KVS_TEST_CUDA(cudaFree(dd));
}

static void test_p_layout(void) { check_k(64, kWgPSbo); }
static void test_q_layout(void) { check_k(576, kWgQSbo); }

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    static const struct kvs_test tests[] = {
        {"p_layout_k64", test_p_layout},
        {"q_layout_k576", test_q_layout},
        {"q8_layout_e4m3", test_q8_layout},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
