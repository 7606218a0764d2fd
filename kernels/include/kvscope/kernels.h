/* kvscope/kernels.h — C entry points of kvscope's kernels: plain CPU
 * references (kvs_cpu_*) and their CUDA counterparts (kvs_cuda_*).
 *
 * defines: kvs_bf16, kvs_fp8, the scalar converters, struct kvs_kernel_opts,
 *          kvs_kernel_opts_parse, struct kvs_mla_args,
 *          kvs_cpu_* references, kvs_cuda_* launchers, struct kvs_gemm,
 *          struct kvs_gemv_fp8w_out, struct kvs_moe_fp8w_args
 *
 * Storage types are raw bits so that this header needs no CUDA headers:
 * kvs_bf16 is a bfloat16, kvs_fp8 an FP8 e4m3fn (OCP: bias 7, no infinities,
 * 0x7f/0xff are NaN, max finite 448). CPU references compute in float (or
 * double where stated) and are the readable specification of each op; the
 * CUDA launchers take device pointers and a stream (a cudaStream_t passed as
 * void *, NULL = default stream), enqueue work and return without
 * synchronising. A launcher's status reports launch errors only; errors
 * inside a kernel surface at the next synchronising call. Launchers whose
 * launch can be steered take a `const struct kvs_kernel_opts *` (NULL = the
 * defaults) just before the stream.
 *
 * Layouts are row-major; "[B,H,512]" means the last index is contiguous.
 * Thread safety: launchers are thread-safe for distinct streams; a struct
 * kvs_gemm is used by one thread at a time.
 */
#ifndef KVSCOPE_KERNELS_H
#define KVSCOPE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t kvs_bf16;
typedef uint8_t kvs_fp8;

/* MLA latent row: kv_lora_rank 512 + qk_rope_head_dim 64. */
#define KVS_MLA_LATENT 512
#define KVS_MLA_ROPE 64
#define KVS_MLA_ROW (KVS_MLA_LATENT + KVS_MLA_ROPE)

/* ---------------------------------------------------------------------------
 * scalar conversions (exact; the CUDA casts must match them bit for bit) */

KVS_API float kvs_fp8_to_float(kvs_fp8 x);         /* exact; NaN codes give NaN */
KVS_API kvs_fp8 kvs_float_to_fp8(float x);         /* round to nearest even, saturate to +-448, NaN -> 0x7f */
KVS_API float kvs_bf16_to_float(kvs_bf16 x);       /* exact */
KVS_API kvs_bf16 kvs_float_to_bf16(float x);       /* round to nearest even; NaN stays NaN (quiet) */
KVS_API kvs_bf16 kvs_fp8_to_bf16(kvs_fp8 x);       /* exact (every e4m3 value is a bf16 value) */

/* ---------------------------------------------------------------------------
 * launch options: how the kernels launch, for A/B timing and captures. Zeroed
 * (or a NULL pointer) = the defaults, which are what the measurements in
 * docs/kernels.md chose. The library never reads the environment: programs
 * that honour KVS_PDL and KVS_MLA_* (kvscope engine, the benches, the tests)
 * turn them into this struct with kvs_kernel_opts_parse. */
struct kvs_kernel_opts {
    /* 1: every kernel launches plainly, without programmatic dependent launch
     * (PDL, kernels/src/pdl_impl.cuh). A capture wants that: with PDL a
     * kernel's record also spans its wait for the kernel before it. */
    int no_pdl;
    int mla_head_group; /* FP8 MLA decode's head group: 0 auto, 32 or 64 */
    int mla_waves;      /* blocks per SM the split aims at with 32-head groups: 0 auto (1), 1, 2 */
    int mla_wgmma;      /* FP8 64-head MLA decode on wgmma (where built): 0 auto, 1 on, -1 off */
    int mla_lazy;       /* MLA decode's lazy rescaling from a block's second tile: 0 auto (on),
                           1 on, -1 off (every tile takes its own max first, as before) */
    int mla_wgv;        /* FP8 64-head wgmma MLA kernel's variant, for A/B runs: 0 as landed;
                           1 S on e4m3 wgmma (Q split hi + lo), 4 V converted on the ALU (not
                           cvt), 5 = 1 + 4, 8 = 1 with S split by heads (no exchange),
                           12 = 8 + 4, 16 V half on the ALU, 24 = 8 + 16, 32 the
                           warp-specialized kernel (mla_ws.cuh) (lazy kernels only;
                           docs/kernels.md). K's conversion in 3 instructions a pair, once
                           variant 2, is every variant's since 2026-12-03 */
};

/* Fills o from named values, as the environment gives them: lookup(name)
 * returns the text or NULL (pass getenv). KVS_PDL=0 sets no_pdl (1 or unset:
 * PDL on); KVS_MLA_HG=32|64, KVS_MLA_WAVES=1|2, KVS_MLA_WG=1|0, KVS_MLA_LAZY=1|0,
 * KVS_MLA_WGV=0|1|4|5|8|12|16|24. An unset name
 * leaves its field as it was; any other text is KVS_STATUS_INVALID_ARGUMENT
 * with the name and text logged (fields before it may have been set). */
KVS_API enum kvs_status kvs_kernel_opts_parse(struct kvs_kernel_opts *o,
                                              char *(*lookup)(const char *name),
                                              const struct kvs_logger *lg);

/* ---------------------------------------------------------------------------
 * KV cast and gather-cast */

/* dst[i] = bf16(src[i]) for n elements. */
KVS_API void kvs_cpu_cast_fp8_to_bf16(const kvs_fp8 *src, kvs_bf16 *dst, size_t n);

/* Gather rows of `row` elements: dst[i*row + j] = bf16(pool[tokens[i]*row + j]). */
KVS_API void kvs_cpu_gather_cast_fp8_to_bf16(const kvs_fp8 *pool, size_t row,
                                             const int32_t *tokens, size_t ntokens, kvs_bf16 *dst);

enum kvs_cast_variant {
    KVS_CAST_GENERIC = 0, /* one element per thread through float: a framework's generic copy */
    KVS_CAST_VECTOR,      /* 16-byte loads/stores, packed conversion */
};
KVS_API const char *kvs_cast_variant_name(enum kvs_cast_variant v); /* "generic", "vector" */

KVS_API enum kvs_status kvs_cuda_cast_fp8_to_bf16(enum kvs_cast_variant v, const kvs_fp8 *src,
                                                  kvs_bf16 *dst, size_t n, void *stream);
KVS_API enum kvs_status kvs_cuda_gather_cast_fp8_to_bf16(const kvs_fp8 *pool, size_t row,
                                                         const int32_t *tokens, size_t ntokens,
                                                         kvs_bf16 *dst, void *stream);

/* ---------------------------------------------------------------------------
 * MLA decode attention, absorbed form
 *
 * For sequence b, head h, with the sequence's KV rows r = kv_row(b, t),
 * t < ctx(b):
 *   s_t      = scale * (q_latent[b,h,:] . kv[r, 0:512] + q_rope[b,h,:] . kv[r, 512:576])
 *   out[b,h] = sum_t softmax(s)_t * kv[r, 0:512]
 *   lse[b,h] = log(sum_t exp(s_t))          (natural log)
 * Rows come from `tokens` (CSR: sequence b owns tokens[seq_start[b] ..
 * seq_start[b+1])), or, when tokens is NULL, are the contiguous rows
 * seq_start[b] .. seq_start[b+1] of kv. A sequence with no tokens gives
 * out = 0 and lse = -inf. */
enum kvs_kv_dtype { KVS_KV_BF16 = 0, KVS_KV_FP8 };

struct kvs_mla_args {
    int batch;                  /* B */
    int heads;                  /* H (64 for GLM-5 at tp 1) */
    const kvs_bf16 *q_latent;   /* [B, H, 512] */
    const kvs_bf16 *q_rope;     /* [B, H, 64] */
    enum kvs_kv_dtype kv_dtype;
    const void *kv;             /* [rows, 576] of kvs_bf16 or kvs_fp8 */
    const int32_t *seq_start;   /* [B + 1] */
    const int32_t *tokens;      /* row indices, or NULL for contiguous rows */
    float scale;                /* softmax scale (1/16 for GLM-5) */
    kvs_bf16 *out;              /* [B, H, 512] */
    float *lse;                 /* [B, H], may be NULL */
};

/* Double-precision reference. */
KVS_API void kvs_cpu_mla_decode(const struct kvs_mla_args *a);

/* Flash-decoding: the context is split across blocks and partial results
 * combined exactly. `max_ctx` bounds any sequence's length; the workspace
 * holds the partials (size from kvs_cuda_mla_decode_workspace with the same
 * opts: the head group and waves change the split). Pointers in `a` are
 * device pointers. */
KVS_API size_t kvs_cuda_mla_decode_workspace(int batch, int heads, int max_ctx,
                                             const struct kvs_kernel_opts *opts);
KVS_API enum kvs_status kvs_cuda_mla_decode(const struct kvs_mla_args *a, int max_ctx,
                                            void *workspace, size_t workspace_bytes,
                                            const struct kvs_kernel_opts *opts, void *stream);

/* ---------------------------------------------------------------------------
 * the rest of a decode step (CPU references; CUDA counterparts take the same
 * arguments as device pointers plus a stream) */

/* y[t,:] = x[t,:] / sqrt(mean(x[t,:]^2) + eps) * w */
KVS_API void kvs_cpu_rmsnorm(const kvs_bf16 *x, const kvs_bf16 *w, kvs_bf16 *y, int tokens,
                             int dim, float eps);
/* The residual add that ends a sublayer fused with the norm that starts the
 * next: x += r (kvs_cpu_add, rounded to BF16 and stored), then
 * y = rmsnorm(x) (kvs_cpu_rmsnorm). x, r are [tokens, dim]. */
KVS_API void kvs_cpu_add_rmsnorm(kvs_bf16 *x, const kvs_bf16 *r, const kvs_bf16 *w, kvs_bf16 *y,
                                 int tokens, int dim, float eps);
/* Interleaved RoPE in place on [tokens, heads, dim] starting at `offset`
 * within each head row of `stride` elements: pairs (2i, 2i+1) rotated by
 * pos[t] * theta^(-2i/dim). */
KVS_API void kvs_cpu_rope_interleaved(kvs_bf16 *x, const int32_t *pos, int tokens, int heads,
                                      int stride, int offset, int dim, float theta);
/* out[t,i] = silu(gate_up[t,i]) * gate_up[t,inter+i], gate_up is [tokens, 2*inter] */
KVS_API void kvs_cpu_swiglu(const kvs_bf16 *gate_up, kvs_bf16 *out, int tokens, int inter);
/* x += y, elementwise over n */
KVS_API void kvs_cpu_add(kvs_bf16 *x, const kvs_bf16 *y, size_t n);
/* out[t,:] = table[ids[t],:] */
KVS_API void kvs_cpu_embedding(const kvs_bf16 *table, const int32_t *ids, kvs_bf16 *out,
                               int tokens, int dim);
/* GLM-5 / DeepSeek-V3 router: s = sigmoid(logits); choose top-k of
 * s + bias; weights = s of the chosen (normalised to sum 1 when norm_topk)
 * times routed_scale. logits [tokens, experts] float. */
KVS_API void kvs_cpu_moe_route(const float *logits, const float *bias, int tokens, int experts,
                               int topk, int norm_topk, float routed_scale, int32_t *ids,
                               float *weights);
/* ids[t] = argmax_v logits[t, v] (lowest index wins ties) */
KVS_API void kvs_cpu_argmax(const float *logits, int tokens, int vocab, int32_t *ids);
/* y[M,N] = x[M,K] . w[N,K]^T, float accumulation (PyTorch Linear layout) */
KVS_API void kvs_cpu_linear(const kvs_bf16 *x, const kvs_bf16 *w, kvs_bf16 *y, int m, int n,
                            int k);

KVS_API enum kvs_status kvs_cuda_rmsnorm(const kvs_bf16 *x, const kvs_bf16 *w, kvs_bf16 *y,
                                         int tokens, int dim, float eps,
                                         const struct kvs_kernel_opts *opts, void *stream);
KVS_API enum kvs_status kvs_cuda_add_rmsnorm(kvs_bf16 *x, const kvs_bf16 *r, const kvs_bf16 *w,
                                             kvs_bf16 *y, int tokens, int dim, float eps,
                                             const struct kvs_kernel_opts *opts, void *stream);
KVS_API enum kvs_status kvs_cuda_rope_interleaved(kvs_bf16 *x, const int32_t *pos, int tokens,
                                                  int heads, int stride, int offset, int dim,
                                                  float theta, const struct kvs_kernel_opts *opts,
                                                  void *stream);
KVS_API enum kvs_status kvs_cuda_swiglu(const kvs_bf16 *gate_up, kvs_bf16 *out, int tokens,
                                        int inter, const struct kvs_kernel_opts *opts,
                                        void *stream);
KVS_API enum kvs_status kvs_cuda_add(kvs_bf16 *x, const kvs_bf16 *y, size_t n, void *stream);
KVS_API enum kvs_status kvs_cuda_embedding(const kvs_bf16 *table, const int32_t *ids,
                                           kvs_bf16 *out, int tokens, int dim, void *stream);
KVS_API enum kvs_status kvs_cuda_moe_route(const float *logits, const float *bias, int tokens,
                                           int experts, int topk, int norm_topk, float routed_scale,
                                           int32_t *ids, float *weights,
                                           const struct kvs_kernel_opts *opts, void *stream);
KVS_API enum kvs_status kvs_cuda_argmax(const float *logits, int tokens, int vocab, int32_t *ids,
                                        const struct kvs_kernel_opts *opts, void *stream);

/* GEMV: projections of a few rows (decode batches), memory-bound on the
 * weights. For every output i, y_i[r, :] = x[r, :] . w_i^T (r < m): several
 * projections of one input in one launch, each weight read once, float
 * accumulation, outputs rounded once to BF16 (kvs_cpu_linear) or kept in
 * float (y_f32 != 0). w_i is row-major [n_i, k]; x rows are ldx elements
 * apart; y_i rows ldy_i apart. batch > 1 repeats the whole call for
 * independent problems: problem b reads x + b*stride_x and w_i + b*stride_w
 * and writes y_i + b*stride_y (strides in elements; the per-head
 * projections of absorbed MLA).
 * Needs 1 <= m <= KVS_GEMV_MAX_M, k a multiple of 8, x and every w_i 16-byte
 * aligned, ldx, stride_x and stride_w multiples of 8 (else
 * KVS_STATUS_UNSUPPORTED: use kvs_gemm); batch <= 65535. Correct for every
 * m up to 8, but faster than cuBLAS only at m = 1 (see kvs_gemm_mode). */
#define KVS_GEMV_MAX_M 8
#define KVS_GEMV_MAX_OUTS 4
struct kvs_gemv_out {
    const kvs_bf16 *w; /* [n, k] */
    void *y;           /* [m, ldy] of kvs_bf16, or float when y_f32 */
    int n;
    int64_t ldy;
};
KVS_API int kvs_cuda_gemv_supported(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                    const struct kvs_gemv_out *outs, int nout, int batch,
                                    int64_t stride_x, int64_t stride_w);
KVS_API enum kvs_status kvs_cuda_gemv_bf16(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                           const struct kvs_gemv_out *outs, int nout, int y_f32,
                                           int batch, int64_t stride_x, int64_t stride_w,
                                           int64_t stride_y, const struct kvs_kernel_opts *opts,
                                           void *stream);
/* The same (batch 1, BF16 outputs) with output `out` rotated as it is written,
 * as kvs_cuda_rope_interleaved(y_out, pos, m, n / dim, dim, 0, dim, theta)
 * would rotate it afterwards — bit for bit, one launch fewer (q's rope part
 * in the decode step). KVS_STATUS_UNSUPPORTED where kvs_cuda_gemv_bf16 is,
 * or when that output's first row (counted over the outputs before it) is
 * odd, its n is not a multiple of dim, or the rows are so few that the GEMV
 * would split k over all 8 warps of a block (one row a block): run the two
 * kernels then. */
struct kvs_gemv_rope {
    int out;            /* which output */
    const int32_t *pos; /* [m] positions */
    int dim;            /* rope dims per head (pairs 2i, 2i+1) */
    float theta;
};
/* Whether kvs_cuda_gemv_bf16_rope runs these shapes (1) or would answer
 * UNSUPPORTED or INVALID_ARGUMENT (0); launches nothing. */
KVS_API int kvs_cuda_gemv_rope_supported(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                         const struct kvs_gemv_out *outs, int nout,
                                         const struct kvs_gemv_rope *rope);
KVS_API enum kvs_status kvs_cuda_gemv_bf16_rope(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                                const struct kvs_gemv_out *outs, int nout,
                                                const struct kvs_gemv_rope *rope,
                                                const struct kvs_kernel_opts *opts, void *stream);

/* Projections through cuBLAS/cuBLASLt. One context per stream/thread. */
struct kvs_gemm;
KVS_API enum kvs_status kvs_gemm_init(struct kvs_gemm **out, void *stream,
                                      const struct kvs_logger *lg);
KVS_API void kvs_gemm_free(struct kvs_gemm *g);
/* Who computes a kvs_gemm projection. AUTO (the default): the GEMV kernel
 * when m <= KVS_GEMV_AUTO_MAX_M, kvs_cuda_gemv_supported holds and the
 * weights of the call are at most KVS_GEMV_AUTO_MAX_BYTES, cuBLAS otherwise
 * — where the H200 measured the GEMV faster (docs/benchmarks.md: 1.4-2.7x
 * at m = 1 up to 25 MB; slower at 50 MB and above, and at m = 4 and 8).
 * CUBLAS / GEMV force one (GEMV still falls back to cuBLAS where it is
 * unsupported): for benchmarks and tests. */
enum kvs_gemm_mode { KVS_GEMM_AUTO = 0, KVS_GEMM_CUBLAS, KVS_GEMM_GEMV };
#define KVS_GEMV_AUTO_MAX_M 1
#define KVS_GEMV_AUTO_MAX_BYTES (32ull << 20)
KVS_API void kvs_gemm_set_mode(struct kvs_gemm *g, enum kvs_gemm_mode mode);
/* The launch options of the GEMV kernel it calls (copied; NULL: defaults). */
KVS_API void kvs_gemm_set_opts(struct kvs_gemm *g, const struct kvs_kernel_opts *opts);
/* y[M,N] = x[M,K] . w[N,K]^T in BF16 with float accumulation. */
KVS_API enum kvs_status kvs_gemm_linear_bf16(struct kvs_gemm *g, const kvs_bf16 *x,
                                             const kvs_bf16 *w, kvs_bf16 *y, int m, int n, int k);
/* The same for `batch` independent problems (per-head projections of
 * absorbed MLA): problem i uses x + i*stride_x, w + i*stride_w, y + i*stride_y
 * (strides in elements); rows of x and y are ldx / ldy elements apart. */
KVS_API enum kvs_status kvs_gemm_linear_batched_bf16(struct kvs_gemm *g, const kvs_bf16 *x,
                                                     int64_t ldx, int64_t stride_x,
                                                     const kvs_bf16 *w, int64_t stride_w,
                                                     kvs_bf16 *y, int64_t ldy, int64_t stride_y,
                                                     int m, int n, int k, int batch);

/* ---------------------------------------------------------------------------
 * MoE experts at decode batch sizes, routing read from device memory (no host
 * synchronisation, so a decode step can be captured in a CUDA graph):
 *
 *   y[t,:] (+)= sum_k weights[t,k] * down[e] . swiglu(gate_up[e] . x[t,:]),  e = ids[t,k]
 *
 * ids are resident expert slots in [0, n_resident) (the engine maps logical
 * experts onto resident ones before this call). gate_up[e] is [2*inter, dim]
 * (gate rows first, then up rows), down[e] is [dim, inter]. */
struct kvs_moe_args {
    int tokens, dim, inter, topk, n_resident;
    const kvs_bf16 *x;          /* [tokens, dim] */
    const int32_t *ids;         /* [tokens, topk] */
    const float *weights;       /* [tokens, topk] */
    const kvs_bf16 *gate_up;    /* [n_resident, 2*inter, dim] */
    const kvs_bf16 *down;       /* [n_resident, dim, inter] */
    kvs_bf16 *y;                /* [tokens, dim] */
    int accumulate;             /* 1: y += result; 0: y = result */
};
KVS_API void kvs_cpu_moe_experts(const struct kvs_moe_args *a);
/* Scratch the CUDA version needs (bytes), passed as `workspace`. */
KVS_API size_t kvs_cuda_moe_experts_workspace(int tokens, int topk, int inter);
KVS_API enum kvs_status kvs_cuda_moe_experts(const struct kvs_moe_args *a, void *workspace,
                                             size_t workspace_bytes,
                                             const struct kvs_kernel_opts *opts, void *stream);

/* ---------------------------------------------------------------------------
 * FP8-weight projections and experts (kernels/cpu/fp8w.c, kernels/cuda/gemv_fp8w.cu,
 * kernels/cuda/moe_fp8w.cu): weights stored as e4m3 codes with one float
 * scale per 128 x 128 block, the layout of FP8 checkpoints (DeepSeek-V3,
 * GLM FP8: weight_scale_inv). For W[n, k]:
 *   scale is [ceil(n/128), ceil(k/128)] row-major, and
 *   w_real[r, c] = fp8(w[r, c]) * scale[r / 128][c / 128].
 * Activations stay BF16, sums are float (double in the references), outputs
 * BF16 or float. At decode batch sizes these matmuls read each weight byte
 * once, so FP8 halves the bytes they move. */
#define KVS_FP8_BLOCK 128

/* Blocks of W[n, k] (finite floats; BF16 weights widen exactly): scale =
 * amax / 448 per block (1 for an all-zero block), codes =
 * kvs_float_to_fp8(w / scale), round to nearest even. q is [n, k], scale
 * [ceil(n/128), ceil(k/128)]. |dequantised - w| <= max(|w| * 2^-4,
 * scale * 2^-10) (half an e4m3 step; the second term is the subnormal
 * range) up to float rounding of w / scale. For tests and benchmarks. */
KVS_API void kvs_cpu_quantize_fp8_blocks(const float *w, int n, int k, kvs_fp8 *q, float *scale);

/* One output of an FP8-weight GEMV: y[r, :] = x[r, :] . w_real^T. */
struct kvs_gemv_fp8w_out {
    const kvs_fp8 *w;   /* [n, k] codes */
    const float *scale; /* [ceil(n/128), ceil(k/128)] */
    void *y;            /* [m, ldy] of kvs_bf16, or float when y_f32 */
    int n;
    int64_t ldy;
};
/* Reference: each output in double from the dequantised weights, rounded
 * once to BF16 (or to float when y_f32). */
KVS_API void kvs_cpu_gemv_fp8w(const kvs_bf16 *x, int64_t ldx, int m, int k,
                               const struct kvs_gemv_fp8w_out *outs, int nout, int y_f32);
/* The GEMV of kvs_cuda_gemv_bf16 with FP8 weights: m <= KVS_GEMV_MAX_M rows
 * of x, up to KVS_GEMV_MAX_OUTS outputs of one x in one launch, each weight
 * byte read once. Needs k a multiple of 16, x and every w 16-byte aligned,
 * ldx a multiple of 8 (else KVS_STATUS_UNSUPPORTED); n and k need not be
 * multiples of 128. */
KVS_API int kvs_cuda_gemv_fp8w_supported(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                         const struct kvs_gemv_fp8w_out *outs, int nout);
KVS_API enum kvs_status kvs_cuda_gemv_fp8w(const kvs_bf16 *x, int64_t ldx, int m, int k,
                                           const struct kvs_gemv_fp8w_out *outs, int nout,
                                           int y_f32, const struct kvs_kernel_opts *opts,
                                           void *stream);

/* kvs_moe_args with FP8 expert weights: each expert's stacked gate_up
 * [2*inter, dim] and down [dim, inter] quantised as one matrix each (with
 * inter a multiple of 128, as GLM-5's 2048, the stacked gate and up scales
 * are the checkpoint's gate_proj and up_proj scales one after the other). */
struct kvs_moe_fp8w_args {
    int tokens, dim, inter, topk, n_resident;
    const kvs_bf16 *x;          /* [tokens, dim] */
    const int32_t *ids;         /* [tokens, topk] */
    const float *weights;       /* [tokens, topk] */
    const kvs_fp8 *gate_up;     /* [n_resident, 2*inter, dim] */
    const float *gate_up_scale; /* [n_resident, ceil(2*inter/128), ceil(dim/128)] */
    const kvs_fp8 *down;        /* [n_resident, dim, inter] */
    const float *down_scale;    /* [n_resident, ceil(dim/128), ceil(inter/128)] */
    kvs_bf16 *y;                /* [tokens, dim] */
    int accumulate;             /* 1: y += result; 0: y = result */
};
/* The roundings of kvs_cpu_moe_experts (gate, up and SwiGLU to BF16, the
 * weighted top-k sum rounded once), dots in double on dequantised weights. */
KVS_API void kvs_cpu_moe_experts_fp8w(const struct kvs_moe_fp8w_args *a);
/* Workspace: kvs_cuda_moe_experts_workspace(tokens, topk, inter). */
KVS_API enum kvs_status kvs_cuda_moe_experts_fp8w(const struct kvs_moe_fp8w_args *a,
                                                  void *workspace, size_t workspace_bytes,
                                                  const struct kvs_kernel_opts *opts, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_KERNELS_H */
