/* kernels/cuda/gemv.cu — projections of a few rows (decode batches): y = x . w^T
 * for m <= 8 rows of x, memory-bound on the weights, several weights sharing
 * one x in one launch (kvs_cuda_gemv_bf16 in kernels.h). Float accumulation;
 * outputs rounded once to BF16 (as kvs_cpu_linear) or kept in float. Checked
 * against the CPU reference by kernels/tests/gpu/test_kernels_ops.c; timed
 * against cuBLAS by kernels/bench/bench_kernels.cu (section gemm).
 *
 * Why not cuBLAS at m = 1: for weights of a few to tens of MB cuBLAS picks
 * split-K kernels plus a reduction kernel and reaches ~36% of the copy rate
 * (2048 x 6144); a GEMV needs no reduction pass and no tiles.
 *
 * variants: one kernel, templated on the row count M (1, 2, 4, 8; m rounds
 * up, the extra rows read row m-1 and are not written). Shape per launch:
 *   lanes per weight row  lpr = 32, or fewer for short rows (k/8 < 64), so
 *                         every lane has at least two 16-byte loads
 *   k-split               ks warps share a row group, each a slice of k,
 *                         summed through shared memory: used when there are
 *                         too few row groups to give every SM several blocks
 *   rope epilogue         gemv_kernel<M, true>: one output rotated as it is
 *                         written (kvs_cuda_gemv_bf16_rope)
 * Each lane keeps 4 weight loads (16 B each) in flight; x rows are read
 * through L1 (every warp of the block reads the same x). The grid is
 * persistent: at most the blocks that are resident at once, each walking
 * row groups (a grid of 2.4 waves lost its last partial one).
 * Launched with programmatic dependent launch (kernels/src/pdl_impl.cuh):
 * before waiting for the kernel that writes x, each lane prefetches into L2
 * the weight chunks of its first round of loads, so a GEMV that follows a
 * short kernel starts with its first weights on the way.
 */
#include "cuda_common.cuh"
#include "gemv_impl.cuh"
#include "pdl_impl.cuh"
#include "rope_impl.cuh"

namespace
{

using kvs_gemv::aligned16;
using kvs_gemv::kThreads;
using kvs_gemv::kWarps;
constexpr int kInFlight = 4; /* 16-byte weight loads per lane at once (8: 0.8 ms a step slower) */

struct GemvArgs {
    const uint16_t *x;
    int64_t ldx, sx, sw, sy; /* elements */
    int m, k, nout, f32, rows;
    int lpr_log2, ks;
    const uint16_t *w[KVS_GEMV_MAX_OUTS];
    void *y[KVS_GEMV_MAX_OUTS];
    int64_t ldy[KVS_GEMV_MAX_OUTS];
    int start[KVS_GEMV_MAX_OUTS + 1]; /* first row of each output; start[nout] = rows */
    int nblocks;                      /* row groups (of kWarps / ks * rows per warp) */
    /* the rope epilogue (gemv_kernel<M, true>): rows [rope_lo, rope_hi) hold
     * heads of rope_dim interleaved pairs; token i is at position rope_pos[i] */
    const int32_t *rope_pos;
    int rope_lo, rope_hi, rope_dim;
    double log_theta;
};

__device__ __forceinline__ float dot8(const uint4 &a, const uint4 &b, float acc)
{
    const uint32_t *pa = &a.x, *pb = &b.x;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        acc = fmaf(__uint_as_float(pa[q] << 16), __uint_as_float(pb[q] << 16), acc);
        acc = fmaf(__uint_as_float(pa[q] & 0xffff0000u), __uint_as_float(pb[q] & 0xffff0000u), acc);
    }
    return acc;
}

/* The rows of block-sized group `blk`: its row, output, weights. */
struct RowAt {
    int row, r;
    bool valid;
    const uint16_t *w;
    void *y;
    int64_t ldy;
};

__device__ __forceinline__ RowAt row_at(const GemvArgs &a, int blk, int group, int rpw, int sub)
{
    RowAt o;
    o.row = (blk * (kWarps / a.ks) + group) * rpw + sub;
    o.valid = o.row < a.rows;
    /* which output the row belongs to; constant indices only (a is in the
     * parameter space, where a run-time index would make a local copy) */
    o.w = a.w[0];
    o.y = a.y[0];
    o.ldy = a.ldy[0];
    int r0 = 0;
#pragma unroll
    for (int i = 1; i < KVS_GEMV_MAX_OUTS; i++)
        if (i < a.nout && o.row >= a.start[i])
            o.w = a.w[i], o.y = a.y[i], o.ldy = a.ldy[i], r0 = a.start[i];
    o.r = o.row - r0;
    return o;
}

/* grid (min(row groups, resident blocks), batch): a persistent grid, each
 * block walks row groups blockIdx.x, + gridDim.x, ... */
template <int M, bool ROPE> __global__ void __launch_bounds__(kThreads) gemv_kernel(const GemvArgs a)
{
    __shared__ float red[kWarps][32][M];
    __shared__ float pair[ROPE ? kWarps * 32 : 1][M];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int lpr = 1 << a.lpr_log2, rpw = 32 >> a.lpr_log2; /* lanes per row, rows per warp */
    const int sub = lane >> a.lpr_log2, sl = lane & (lpr - 1);
    const int group = warp / a.ks, slice = warp - group * a.ks;
    const int b = blockIdx.y;
    const int k8 = a.k >> 3, step = lpr * a.ks;

    {
        const RowAt ra = row_at(a, blockIdx.x, group, rpw, sub);
        const uint4 *w4 = (const uint4 *)(ra.w + (size_t)b * a.sw + (size_t)ra.r * a.k);
        if (ra.valid)
#pragma unroll
            for (int u = 0; u < kInFlight; u++)
                if (slice * lpr + sl + u * step < k8)
                    kvs_prefetch_l2(w4 + slice * lpr + sl + u * step);
    }
    kvs_pdl_wait();
    kvs_pdl_launch_dependents();

    const uint4 *x4[M];
#pragma unroll
    for (int i = 0; i < M; i++)
        x4[i] = (const uint4 *)(a.x + (size_t)b * a.sx + (size_t)min(i, a.m - 1) * a.ldx);

    for (int blk = blockIdx.x; blk < a.nblocks; blk += gridDim.x) {
        const RowAt ra = row_at(a, blk, group, rpw, sub);
        const uint4 *w4 = (const uint4 *)(ra.w + (size_t)b * a.sw + (size_t)ra.r * a.k);
        float acc[M];
#pragma unroll
        for (int i = 0; i < M; i++)
            acc[i] = 0.f;
        if (ra.valid) {
            int c = slice * lpr + sl;
            for (; c + (kInFlight - 1) * step < k8; c += kInFlight * step) {
                uint4 wv[kInFlight];
#pragma unroll
                for (int u = 0; u < kInFlight; u++)
                    wv[u] = __ldcs(w4 + c + u * step);
#pragma unroll
                for (int u = 0; u < kInFlight; u++)
#pragma unroll
                    for (int i = 0; i < M; i++)
                        acc[i] = dot8(wv[u], __ldg(x4[i] + c + u * step), acc[i]);
            }
            /* fewer than kInFlight loads left: issue them together */
            uint4 wv[kInFlight - 1];
#pragma unroll
            for (int u = 0; u < kInFlight - 1; u++)
                if (c + u * step < k8)
                    wv[u] = __ldcs(w4 + c + u * step);
#pragma unroll
            for (int u = 0; u < kInFlight - 1; u++)
                if (c + u * step < k8)
#pragma unroll
                    for (int i = 0; i < M; i++)
                        acc[i] = dot8(wv[u], __ldg(x4[i] + c + u * step), acc[i]);
        }
        /* sum over the row's lanes (aligned groups of lpr) */
#pragma unroll
        for (int i = 0; i < M; i++)
            for (int o = lpr >> 1; o > 0; o >>= 1)
                acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
        if (a.ks > 1) {
            if (sl == 0)
#pragma unroll
                for (int i = 0; i < M; i++)
                    red[warp][sub][i] = acc[i];
            __syncthreads();
            if (slice == 0)
                for (int q = 1; q < a.ks; q++)
#pragma unroll
                    for (int i = 0; i < M; i++)
                        acc[i] += red[warp + q][sub][i];
        }
        const bool owner = ra.valid && sl == 0 && slice == 0;
        if constexpr (ROPE) {
            /* rows 2j and 2j+1 of a head are one pair: each row's owner
             * rounds its sums to BF16 (as the plain GEMV stores them), shares
             * them through shared memory (the pair is in this row group: rows
             * per group and rope_lo are even), then rotates as
             * kvs_cuda_rope_interleaved does to the stored values: the same
             * bits as the two kernels */
            const int lr = group * rpw + sub;
            float v[M];
#pragma unroll
            for (int i = 0; i < M; i++) {
                v[i] = kvs_conv_bf16_to_float(kvs_conv_float_to_bf16(acc[i]));
                if (owner)
                    pair[lr][i] = v[i];
            }
            __syncthreads();
            if (owner && ra.row >= a.rope_lo && ra.row < a.rope_hi) {
                const int rr = ra.row - a.rope_lo, j = (rr % a.rope_dim) >> 1;
#pragma unroll
                for (int i = 0; i < M; i++) {
                    if (i >= a.m)
                        break;
                    float c, s, x0, x1;
                    kvs_rope_cos_sin((double)a.rope_pos[i], j, a.rope_dim, a.log_theta, &c, &s);
                    const float other = pair[lr ^ 1][i];
                    if (rr & 1) {
                        kvs_rope_rotate(other, v[i], c, s, &x0, &x1);
                        v[i] = x1;
                    } else {
                        kvs_rope_rotate(v[i], other, c, s, &x0, &x1);
                        v[i] = x0;
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < M; i++)
                acc[i] = v[i];
        }
        if (owner) {
            const size_t base = (size_t)b * a.sy + (size_t)ra.r;
#pragma unroll
            for (int i = 0; i < M; i++) {
                if (i >= a.m)
                    break;
                if (a.f32)
                    ((float *)ra.y)[base + (size_t)i * ra.ldy] = acc[i];
                else
                    ((uint16_t *)ra.y)[base + (size_t)i * ra.ldy] = kvs_conv_float_to_bf16(acc[i]);
            }
        }
        /* the next row group reuses red and pair */
        if (a.ks > 1 || ROPE)
            __syncthreads();
    }
}

} // namespace

extern "C" int kvs_cuda_gemv_supported(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                       const struct kvs_gemv_out *outs, int nout, int batch,
                                       int64_t stride_x, int64_t stride_w)
{
    if (!x || !outs || m < 1 || m > KVS_GEMV_MAX_M || k < 8 || k % 8 || nout < 1 ||
        nout > KVS_GEMV_MAX_OUTS || batch < 1 || batch > 65535 || ldx < k || ldx % 8 ||
        stride_x % 8 || stride_w % 8 || !aligned16(x))
        return 0;
    return kvs_gemv::outs_ok(outs, nout, m);
}

/* The plain GEMV, or with rope (batch 1, BF16 outputs) the rope epilogue on
 * output rope->out. UNSUPPORTED when the shapes do not allow it. */
/* The launch's arguments and shape (lanes per row, k-split, row groups), or
 * why not: UNSUPPORTED where the shapes do not allow it (the caller runs
 * another kernel), INVALID_ARGUMENT for bad arguments. */
static enum kvs_status gemv_plan(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                 const struct kvs_gemv_out *outs, int nout, int y_f32, int batch,
                                 int64_t stride_x, int64_t stride_w, int64_t stride_y,
                                 const struct kvs_gemv_rope *rope, GemvArgs &a)
{
    if (!kvs_cuda_gemv_supported(x, ldx, m, k, outs, nout, batch, stride_x, stride_w))
        return x && outs && m >= 1 && k >= 1 && nout >= 1 && batch >= 1
                   ? KVS_STATUS_UNSUPPORTED
                   : KVS_STATUS_INVALID_ARGUMENT;
    a = GemvArgs{};
    if (kvs_gemv::set_args(a, x, ldx, m, k, outs, nout, y_f32) != KVS_STATUS_OK)
        return KVS_STATUS_INVALID_ARGUMENT;
    a.sx = stride_x;
    a.sw = stride_w;
    a.sy = stride_y;
    if (rope) {
        if (rope->out < 0 || rope->out >= nout || !rope->pos || rope->dim < 2 || rope->dim % 2 ||
            !(rope->theta > 0.f))
            return KVS_STATUS_INVALID_ARGUMENT;
        a.rope_pos = rope->pos;
        a.rope_lo = a.start[rope->out];
        a.rope_hi = a.start[rope->out + 1];
        a.rope_dim = rope->dim;
        a.log_theta = log((double)rope->theta);
        if (y_f32 || batch != 1 || a.rope_lo % 2 || (a.rope_hi - a.rope_lo) % rope->dim)
            return KVS_STATUS_UNSUPPORTED;
    }
    if (a.rows == 0)
        return KVS_STATUS_OK;

    a.lpr_log2 = kvs_gemv::lanes_log2(k / 8);
    const int rpw = 32 >> a.lpr_log2;
    a.ks = kvs_gemv::ksplit(a.rows, k / 8, a.lpr_log2, rpw, batch);
    const long per_block = (long)(kWarps / a.ks) * rpw;
    /* with rope, the same split as the plain GEMV (the same sums, so the same
     * bits) and a pair never spans two blocks: a block of one row is refused */
    if (rope && per_block < 2)
        return KVS_STATUS_UNSUPPORTED;
    a.nblocks = (int)((a.rows + per_block - 1) / per_block);
    return KVS_STATUS_OK;
}

static enum kvs_status gemv_launch(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                   const struct kvs_gemv_out *outs, int nout, int y_f32, int batch,
                                   int64_t stride_x, int64_t stride_w, int64_t stride_y,
                                   const struct kvs_gemv_rope *rope,
                                   const struct kvs_kernel_opts *opts, void *stream)
{
    GemvArgs a;
    enum kvs_status st = gemv_plan(x, ldx, m, k, outs, nout, y_f32, batch, stride_x, stride_w,
                                   stride_y, rope, a);
    if (st != KVS_STATUS_OK || a.rows == 0)
        return st;
    cudaStream_t s = kvs_stream(stream);
    void (*kernel)(GemvArgs);
    if (rope)
        kernel = m == 1 ? gemv_kernel<1, true>
                 : m == 2 ? gemv_kernel<2, true>
                 : m <= 4 ? gemv_kernel<4, true>
                          : gemv_kernel<8, true>;
    else
        kernel = m == 1 ? gemv_kernel<1, false>
                 : m == 2 ? gemv_kernel<2, false>
                 : m <= 4 ? gemv_kernel<4, false>
                          : gemv_kernel<8, false>;
    dim3 grid((unsigned)kvs_gemv::grid_x(kernel, a.nblocks, batch), (unsigned)batch);
    KVS_CUDA_TRY(NULL, kvs_launch_pdl(opts, kernel, grid, dim3(kThreads), 0, s, a));
    return KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_gemv_bf16(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                              const struct kvs_gemv_out *outs, int nout, int y_f32,
                                              int batch, int64_t stride_x, int64_t stride_w,
                                              int64_t stride_y, const struct kvs_kernel_opts *opts,
                                              void *stream)
{
    return gemv_launch(x, ldx, m, k, outs, nout, y_f32, batch, stride_x, stride_w, stride_y, NULL,
                       opts, stream);
}

extern "C" int kvs_cuda_gemv_rope_supported(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                            const struct kvs_gemv_out *outs, int nout,
                                            const struct kvs_gemv_rope *rope)
{
    GemvArgs a;
    return rope && gemv_plan(x, ldx, m, k, outs, nout, 0, 1, 0, 0, 0, rope, a) == KVS_STATUS_OK;
}

extern "C" enum kvs_status kvs_cuda_gemv_bf16_rope(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                                   const struct kvs_gemv_out *outs, int nout,
                                                   const struct kvs_gemv_rope *rope,
                                                   const struct kvs_kernel_opts *opts, void *stream)
{
    if (!rope)
        return KVS_STATUS_INVALID_ARGUMENT;
    return gemv_launch(x, ldx, m, k, outs, nout, 0, 1, 0, 0, 0, rope, opts, stream);
}
