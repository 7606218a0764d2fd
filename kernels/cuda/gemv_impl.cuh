/* kernels/cuda/gemv_impl.cuh — what the BF16 GEMV (gemv.cu) and the
 * FP8-weight GEMV (gemv_fp8w.cu) share on the host: the block shape, the
 * checks on the outputs, the outputs' arrays in the launch's arguments, the
 * launch shape (lanes per row, k-split) and the persistent grid. The two
 * kernels stay apart although they are laid out alike (lanes per row,
 * k-split summed through shared memory): the FP8 one walks R rows a lane
 * with [R][M] sums and scales each 16-code chunk, the BF16 one has the rope
 * epilogue, and gemv.cu's kernel is measured and tuned for the engine, so
 * it is left as written (its PTX did not change when this file was made).
 * Private to kernels/.
 *
 * defines: kvs_gemv::kWarps, kvs_gemv::kThreads, kvs_gemv::aligned16,
 *          kvs_gemv::outs_ok, kvs_gemv::set_args, kvs_gemv::lanes_log2,
 *          kvs_gemv::ksplit, kvs_gemv::grid_x
 */
#ifndef KVSCOPE_GEMV_IMPL_CUH
#define KVSCOPE_GEMV_IMPL_CUH

#include "cuda_common.cuh"

namespace kvs_gemv
{

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;

static inline bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

/* Each output (kvs_gemv_out or kvs_gemv_fp8w_out) has weights on a 16-byte
 * boundary, a destination, n >= 0 and, for m > 1, rows ldy >= n apart. */
template <class Out> static bool outs_ok(const Out *outs, int nout, int m)
{
    for (int i = 0; i < nout; i++)
        if (!outs[i].w || !outs[i].y || outs[i].n < 0 || !aligned16(outs[i].w) ||
            (m > 1 && outs[i].ldy < outs[i].n))
            return false;
    return true;
}

/* The arguments both GEMVs take into a: x, its row stride, m, k, whether
 * y is float, and the outputs' weights, destinations and row strides, with
 * a.start[i] each output's first row over all of them and a.rows =
 * a.start[nout] their sum; INVALID_ARGUMENT when that sum is too large for
 * the kernels' int row indices. */
template <class Args, class Out>
static enum kvs_status set_args(Args &a, const kvs_bf16 *x, int64_t ldx, int m, int k,
                                const Out *outs, int nout, int y_f32)
{
    a.x = x;
    a.ldx = ldx;
    a.m = m;
    a.k = k;
    a.nout = nout;
    a.f32 = y_f32 != 0;
    int64_t rows = 0;
    for (int i = 0; i < nout; i++) {
        a.w[i] = outs[i].w;
        a.y[i] = outs[i].y;
        a.ldy[i] = outs[i].ldy;
        a.start[i] = (int)rows;
        rows += outs[i].n;
    }
    if (rows > 0x7fffffff - 4096)
        return KVS_STATUS_INVALID_ARGUMENT;
    a.rows = (int)rows;
    a.start[nout] = a.rows;
    return KVS_STATUS_OK;
}

/* Lanes per row (log2) for rows of `loads` 16-byte loads: 32, or fewer so
 * that every lane has at least two loads. */
static inline int lanes_log2(int loads)
{
    int lg = 5;
    while (lg > 0 && (2 << lg) > loads)
        lg--;
    return lg;
}

/* The k-split: warps sharing a row group, each a slice of k, doubled while
 * the grid would give the SMs fewer than 4 blocks each and every lane keeps
 * two loads. A warp holds rows_per_warp rows; the grid is `batch` deep. */
static inline int ksplit(int rows, int loads, int lg, long rows_per_warp, int batch)
{
    const long target = 4L * kvs_sm_count();
    auto blocks = [&](int ks) {
        const long per = (long)(kWarps / ks) * rows_per_warp;
        return (rows + per - 1) / per * (long)batch;
    };
    int ks = 1;
    while (ks < kWarps && blocks(ks) < target && loads >= 2 * (1 << lg) * (ks * 2))
        ks *= 2;
    return ks;
}

/* The persistent grid's width: no more blocks than are resident at once
 * over the batch (the last wave of a 2.4-wave grid is gone; measured
 * -0.13 ms a GLM-5 step), at least one. */
template <class Kernel> static int grid_x(Kernel kernel, int nblocks, int batch)
{
    int gx = nblocks, per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0) ==
            cudaSuccess &&
        per_sm > 0) {
        long resident = (long)per_sm * kvs_sm_count() / batch;
        if (resident < 1)
            resident = 1;
        if (gx > resident)
            gx = (int)resident;
    }
    return gx;
}

} // namespace kvs_gemv

#endif /* KVSCOPE_GEMV_IMPL_CUH */
