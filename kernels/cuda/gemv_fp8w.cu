/* kernels/cuda/gemv_fp8w.cu — projections of a few rows (decode batches)
 * with FP8 e4m3 weights and one float scale per 128 x 128 weight block:
 * y = x . (w * scale)^T for m <= 8 rows of BF16 x (kvs_cuda_gemv_fp8w in
 * kernels.h). Memory-bound on the weights like kvs_cuda_gemv_bf16
 * (gemv.cu), whose shape it follows, at half the bytes. Reference:
 * kvs_cpu_gemv_fp8w (kernels/cpu/fp8w.c); tests:
 * kernels/tests/gpu/test_kernels_fp8w.c; timed against the BF16 GEMV by
 * kernels/bench/bench_fp8w.cuh (bench_kernels section fp8w).
 *
 * variants: one kernel, templated on the row count M (1, 2, 4, 8; m rounds
 * up, the extra rows read row m-1 and are not written) and on R, the weight
 * rows a lane walks together (2: every x load serves two rows, which halves
 * the L1 traffic of x, twice the weight bytes at m = 8). Per launch:
 *   lanes per weight row  lpr = 32, or fewer for short rows (k/16 < 64), so
 *                         every lane has at least two 16-byte loads
 *   k-split               ks warps share a row group, each a slice of k,
 *                         summed through shared memory, when there are too
 *                         few row groups to give every SM several blocks
 * A lane's 16-byte load is 16 codes of one row inside one 128-column block:
 * they are converted in registers (fp8w_impl.cuh), dotted with x in float,
 * and the sum is scaled once by that block's scale. Each lane keeps
 * 4 weight loads (16 B) in flight (R rows x 4 / R chunks); the grid is
 * persistent, launched with programmatic dependent launch, and each lane
 * prefetches its first weight chunks into L2 before the wait (as gemv.cu).
 */
#include "cuda_common.cuh"
#include "fp8w_impl.cuh"
#include "gemv_fp8w_cfg.h"
#include "gemv_impl.cuh"
#include "pdl_impl.cuh"

namespace
{

using kvs_gemv::aligned16;
using kvs_gemv::kThreads;
using kvs_gemv::kWarps;
constexpr int kLoads = 4; /* 16-byte weight loads per lane at once (as gemv.cu) */

struct Fp8wArgs {
    const uint16_t *x;
    int64_t ldx; /* elements */
    int m, k, kb, nout, f32, rows;
    int lpr_log2, ks, nblocks;
    const uint8_t *w[KVS_GEMV_MAX_OUTS];
    const float *sc[KVS_GEMV_MAX_OUTS];
    void *y[KVS_GEMV_MAX_OUTS];
    int64_t ldy[KVS_GEMV_MAX_OUTS];
    int start[KVS_GEMV_MAX_OUTS + 1]; /* first row of each output; start[nout] = rows */
};

/* A lane's weight row: its output, row within it, codes and scale row. An
 * invalid row (past the last) reads row 0 of output 0 and writes nothing. */
struct Row {
    int r;
    bool valid;
    const uint4 *w;
    const float *sc;
    void *y;
    int64_t ldy;
};

__device__ __forceinline__ Row row_at(const Fp8wArgs &a, int row)
{
    Row o;
    o.valid = row < a.rows;
    if (!o.valid)
        row = 0;
    /* which output; constant indices only (a is in the parameter space) */
    const uint8_t *w = a.w[0];
    const float *sc = a.sc[0];
    o.y = a.y[0];
    o.ldy = a.ldy[0];
    int r0 = 0;
#pragma unroll
    for (int i = 1; i < KVS_GEMV_MAX_OUTS; i++)
        if (i < a.nout && row >= a.start[i])
            w = a.w[i], sc = a.sc[i], o.y = a.y[i], o.ldy = a.ldy[i], r0 = a.start[i];
    o.r = row - r0;
    o.w = (const uint4 *)(w + (size_t)o.r * a.k);
    o.sc = sc + (size_t)(o.r / KVS_FP8_BLOCK) * a.kb;
    return o;
}

/* Row rr of lane `sub` in row group `group` of block-sized group `blk`. */
template <int R>
__device__ __forceinline__ int row_index(const Fp8wArgs &a, int blk, int group, int rpw, int sub,
                                         int rr)
{
    return ((blk * (kWarps / a.ks) + group) * R + rr) * rpw + sub;
}

/* one chunk c (16 columns) of every row of the lane against every row of x */
template <int M, int R, bool ALU>
__device__ __forceinline__ void chunk(const uint4 (&wv)[R], const Row (&ra)[R], int c,
                                      const uint4 *const (&x4)[M], float (&acc)[R][M])
{
    float f[R][16], s[R];
#pragma unroll
    for (int rr = 0; rr < R; rr++) {
        s[rr] = __ldg(ra[rr].sc + (c >> 3)); /* 8 chunks a block */
        kvs_fp8w_codes16<ALU>(wv[rr], f[rr]);
        if constexpr (ALU)
            s[rr] *= 256.f; /* the ALU values are code * 2^-8: exact */
    }
#pragma unroll
    for (int i = 0; i < M; i++) {
        const uint4 xa = __ldg(x4[i] + 2 * c), xb = __ldg(x4[i] + 2 * c + 1);
#pragma unroll
        for (int rr = 0; rr < R; rr++)
            acc[rr][i] = fmaf(s[rr], kvs_fp8w_dot16(f[rr], xa, xb), acc[rr][i]);
    }
}

/* grid: min(row groups, resident blocks), each block walking row groups
 * blockIdx.x, + gridDim.x, ... */
template <int M, int R, bool ALU>
__global__ void __launch_bounds__(kThreads, M == 1 ? 4 : 2) gemv_fp8w_kernel(const Fp8wArgs a)
{
    constexpr int U = kLoads / R; /* chunks per row in flight */
    __shared__ float red[kWarps][32][R * M];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int lpr = 1 << a.lpr_log2, rpw = 32 >> a.lpr_log2; /* lanes per row, rows per warp */
    const int sub = lane >> a.lpr_log2, sl = lane & (lpr - 1);
    const int group = warp / a.ks, slice = warp - group * a.ks;
    const int k16 = a.k >> 4, step = lpr * a.ks;

#pragma unroll
    for (int rr = 0; rr < R; rr++) {
        const Row ra = row_at(a, row_index<R>(a, blockIdx.x, group, rpw, sub, rr));
        if (ra.valid)
#pragma unroll
            for (int u = 0; u < U; u++)
                if (slice * lpr + sl + u * step < k16)
                    kvs_prefetch_l2(ra.w + slice * lpr + sl + u * step);
    }
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();

    const uint4 *x4[M];
#pragma unroll
    for (int i = 0; i < M; i++)
        x4[i] = (const uint4 *)(a.x + (size_t)min(i, a.m - 1) * a.ldx);

    for (int blk = blockIdx.x; blk < a.nblocks; blk += gridDim.x) {
        Row ra[R];
#pragma unroll
        for (int rr = 0; rr < R; rr++)
            ra[rr] = row_at(a, row_index<R>(a, blk, group, rpw, sub, rr));
        float acc[R][M];
#pragma unroll
        for (int rr = 0; rr < R; rr++)
#pragma unroll
            for (int i = 0; i < M; i++)
                acc[rr][i] = 0.f;
        int c = slice * lpr + sl;
        for (; c + (U - 1) * step < k16; c += U * step) {
            uint4 wv[U][R];
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int rr = 0; rr < R; rr++)
                    wv[u][rr] = __ldcs(ra[rr].w + c + u * step);
#pragma unroll
            for (int u = 0; u < U; u++)
                chunk<M, R, ALU>(wv[u], ra, c + u * step, x4, acc);
        }
        /* fewer than U chunks left */
#pragma unroll
        for (int u = 0; u < U - 1; u++)
            if (c + u * step < k16) {
                uint4 wv[R];
#pragma unroll
                for (int rr = 0; rr < R; rr++)
                    wv[rr] = __ldcs(ra[rr].w + c + u * step);
                chunk<M, R, ALU>(wv, ra, c + u * step, x4, acc);
            }
        /* sum over the row's lanes (aligned groups of lpr) */
#pragma unroll
        for (int rr = 0; rr < R; rr++)
#pragma unroll
            for (int i = 0; i < M; i++)
                for (int o = lpr >> 1; o > 0; o >>= 1)
                    acc[rr][i] += __shfl_xor_sync(0xffffffffu, acc[rr][i], o);
        if (a.ks > 1) {
            if (sl == 0)
#pragma unroll
                for (int rr = 0; rr < R; rr++)
#pragma unroll
                    for (int i = 0; i < M; i++)
                        red[warp][sub][rr * M + i] = acc[rr][i];
            __syncthreads();
            if (slice == 0)
                for (int q = 1; q < a.ks; q++)
#pragma unroll
                    for (int rr = 0; rr < R; rr++)
#pragma unroll
                        for (int i = 0; i < M; i++)
                            acc[rr][i] += red[warp + q][sub][rr * M + i];
        }
        if (sl == 0 && slice == 0)
#pragma unroll
            for (int rr = 0; rr < R; rr++) {
                if (!ra[rr].valid)
                    continue;
#pragma unroll
                for (int i = 0; i < M; i++) {
                    if (i >= a.m)
                        break;
                    const size_t at = (size_t)i * ra[rr].ldy + ra[rr].r;
                    if (a.f32)
                        ((float *)ra[rr].y)[at] = acc[rr][i];
                    else
                        ((uint16_t *)ra[rr].y)[at] = kvs_conv_float_to_bf16(acc[rr][i]);
                }
            }
        /* the next row group reuses red */
        if (a.ks > 1)
            __syncthreads();
    }
}

/* The launch's arguments and shape, or why not (as gemv_plan in gemv.cu). */
enum kvs_status plan(const kvs_bf16 *x, int64_t ldx, int m, int k,
                     const struct kvs_gemv_fp8w_out *outs, int nout, int y_f32, int R,
                     Fp8wArgs &a)
{
    if (!kvs_cuda_gemv_fp8w_supported(x, ldx, m, k, outs, nout))
        return x && outs && m >= 1 && k >= 1 && nout >= 1 ? KVS_STATUS_UNSUPPORTED
                                                          : KVS_STATUS_INVALID_ARGUMENT;
    a = Fp8wArgs{};
    if (kvs_gemv::set_args(a, x, ldx, m, k, outs, nout, y_f32) != KVS_STATUS_OK)
        return KVS_STATUS_INVALID_ARGUMENT;
    a.kb = (k + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK;
    for (int i = 0; i < nout; i++)
        a.sc[i] = outs[i].scale;
    if (a.rows == 0)
        return KVS_STATUS_OK;
    /* as gemv.cu, on 16-byte loads of 16 codes, R rows a lane */
    a.lpr_log2 = kvs_gemv::lanes_log2(k / 16);
    const long rows_per_warp = (long)R * (32 >> a.lpr_log2);
    a.ks = kvs_gemv::ksplit(a.rows, k / 16, a.lpr_log2, rows_per_warp, 1);
    const long per_block = (long)(kWarps / a.ks) * rows_per_warp;
    a.nblocks = (int)((a.rows + per_block - 1) / per_block);
    return KVS_STATUS_OK;
}

} // namespace

extern "C" int kvs_cuda_gemv_fp8w_supported(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                            const struct kvs_gemv_fp8w_out *outs, int nout)
{
    if (!x || !outs || m < 1 || m > KVS_GEMV_MAX_M || k < 16 || k % 16 || nout < 1 ||
        nout > KVS_GEMV_MAX_OUTS || ldx < k || ldx % 8 || !aligned16(x))
        return 0;
    for (int i = 0; i < nout; i++)
        if (!outs[i].scale)
            return 0;
    return kvs_gemv::outs_ok(outs, nout, m);
}

namespace
{

template <int R, bool ALU> void (*pick(int m))(Fp8wArgs)
{
    return m == 1   ? gemv_fp8w_kernel<1, R, ALU>
           : m == 2 ? gemv_fp8w_kernel<2, R, ALU>
           : m <= 4 ? gemv_fp8w_kernel<4, R, ALU>
                    : gemv_fp8w_kernel<8, R, ALU>;
}

} // namespace

extern "C" const char *kvs_gemv_fp8w_cfg_name(int cfg)
{
    static const char *const names[KVS_GEMV_FP8W_CFGS] = {"cvt-r2", "alu-r2", "cvt-r1", "alu-r1"};
    return cfg >= 0 && cfg < KVS_GEMV_FP8W_CFGS ? names[cfg] : "unknown";
}

extern "C" enum kvs_status kvs_cuda_gemv_fp8w_cfg(int cfg, const kvs_bf16 *x, int64_t ldx, int m,
                                                  int k, const struct kvs_gemv_fp8w_out *outs,
                                                  int nout, int y_f32,
                                                  const struct kvs_kernel_opts *opts, void *stream)
{
    if (cfg < 0 || cfg >= KVS_GEMV_FP8W_CFGS)
        return KVS_STATUS_INVALID_ARGUMENT;
    const int R = cfg < 2 ? 2 : 1;
    const bool alu = cfg & 1;
    Fp8wArgs a;
    enum kvs_status st = plan(x, ldx, m, k, outs, nout, y_f32, R, a);
    if (st != KVS_STATUS_OK || a.rows == 0)
        return st;
    void (*kernel)(Fp8wArgs) = R == 2 ? (alu ? pick<2, true>(m) : pick<2, false>(m))
                                      : (alu ? pick<1, true>(m) : pick<1, false>(m));
    const int gx = kvs_gemv::grid_x(kernel, a.nblocks, 1);
    KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, kernel, dim3((unsigned)gx), dim3(kThreads), 0,
                                      kvs_stream(stream), a));
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_gemv_fp8w(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                              const struct kvs_gemv_fp8w_out *outs, int nout,
                                              int y_f32, const struct kvs_kernel_opts *opts,
                                              void *stream)
{
    return kvs_cuda_gemv_fp8w_cfg(KVS_GEMV_FP8W_CFG_DEFAULT, x, ldx, m, k, outs, nout, y_f32, opts,
                                  stream);
}
