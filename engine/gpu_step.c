/* engine/gpu_step.c — the device work of one GLM-5 decode step, op by op,
 * each op annotated with its name, input dims and dtypes (kvscope/annotate.h)
 * the way PyTorch's profiler records an op's inputs. The CPU reference
 * (engine/reference.c) computes the same step with the same rounding points.
 *
 *   per layer: (+x) RMSNorm -> q_a, kv_a (latent, rope) -> norm -> q_b (nope, rope)
 *              -> RoPE; kv_a latent -> norm, rope -> RoPE -> append the FP8 row
 *              W_UK absorption -> [KV path] -> MLA decode -> W_UV -> o_proj
 *              [-> all-reduce]
 *              (+x) RMSNorm -> dense MLP | router -> top-k -> map -> experts
 *              [-> all-reduce]
 *   then: (+x) final norm -> LM head (float) -> argmax (the next step's input)
 * Fusions (same rounding points as the reference): a sublayer's residual
 * add runs inside the next norm (kvs::add_rms_norm); projections of one
 * input share one GEMV launch at batch 1 (kvs::linear_multi: q_a with
 * kv_a's two parts; kvs::linear_multi_rope: q_b's two parts, q's rope part
 * rotated as the GEMV writes it); the KV row's norm, RoPE and FP8
 * append are one kernel (kvs::kv_append_cast), which also norms q_a in a
 * second row of blocks; the router's top-k and the expert map are one
 * kernel (kvs::moe_route).
 * Under tensor parallelism (kvscope/engine_tp.h) this is one rank's step:
 * its heads and intermediate slices (e->c is the rank's view of the model),
 * and an NCCL all-reduce where the partial sums of the ranks meet.
 */
#include "gpu_impl.h"

#include <stdio.h>

/* nccl.h declares a few functions without (void) (ncclResetDebugInit):
 * fine in C++, a -Wstrict-prototypes warning in C */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "kvscope/annotate.h"
#include "kvscope/check.h"

#define BF16 "c10::BFloat16"
#define FP8 "c10::Float8_e4m3fn"
#define F32 "float"
#define I32 "int"

static struct kvs_tensor_desc td(const char *dtype, int rank, int64_t a, int64_t b, int64_t c)
{
    struct kvs_tensor_desc t = {0};
    t.rank = rank;
    t.dims[0] = a;
    t.dims[1] = b;
    t.dims[2] = c;
    t.dtype = dtype;
    return t;
}

#define OP_BEGIN(name, ...)                                                                       \
    do {                                                                                          \
        const struct kvs_tensor_desc op_t_[] = {__VA_ARGS__};                                     \
        kvs_op_begin(name, (int)(sizeof op_t_ / sizeof op_t_[0]), op_t_);                         \
    } while (0)

/* Run `call` (a kvs_status expression) inside an annotated op. */
#define OP(call, name, ...)                                                                       \
    do {                                                                                          \
        OP_BEGIN(name, __VA_ARGS__);                                                              \
        enum kvs_status op_st_ = (call);                                                          \
        kvs_op_end();                                                                             \
        if (op_st_ != KVS_STATUS_OK)                                                              \
            return op_st_;                                                                        \
    } while (0)

#define ACT(field, type) KVS_ENGINE_ACT(e, field, type)
#define WL(kind) ((const kvs_bf16 *)KVS_ENGINE_W(e, l, kind))

static enum kvs_status linear(struct kvs_engine *e, const kvs_bf16 *x, const kvs_bf16 *w,
                              kvs_bf16 *y, int m, int n, int k)
{
    OP(kvs_gemm_linear_bf16(e->gemm, x, w, y, m, n, k), "kvs::linear", td(BF16, 2, m, k, 0),
       td(BF16, 2, n, k, 0));
    return KVS_STATUS_OK;
}

static enum kvs_status rmsnorm(struct kvs_engine *e, const kvs_bf16 *x, const kvs_bf16 *w,
                               kvs_bf16 *y, int rows, int dim)
{
    OP(kvs_cuda_rmsnorm(x, w, y, rows, dim, e->c.rms_eps, &e->p.kernels, e->stream),
       "kvs::rms_norm", td(BF16, 2, rows, dim, 0), td(BF16, 1, dim, 0, 0));
    return KVS_STATUS_OK;
}

/* h = norm(x); when a sublayer's output o is pending, x += o first, in the
 * same kernel (the residual add fused into the norm after it). */
static enum kvs_status residual_norm(struct kvs_engine *e, const kvs_bf16 *w, int pending)
{
    const int B = e->p.batch, D = e->c.hidden;
    kvs_bf16 *x = ACT(x, kvs_bf16), *h = ACT(h, kvs_bf16), *o = ACT(o, kvs_bf16);
    if (!pending)
        return rmsnorm(e, x, w, h, B, D);
    OP(kvs_cuda_add_rmsnorm(x, o, w, h, B, D, e->c.rms_eps, &e->p.kernels, e->stream),
       "kvs::add_rms_norm", td(BF16, 2, B, D, 0), td(BF16, 2, B, D, 0), td(BF16, 1, D, 0, 0));
    return KVS_STATUS_OK;
}

static enum kvs_status rope(struct kvs_engine *e, kvs_bf16 *x, int heads)
{
    const int B = e->p.batch;
    OP(kvs_cuda_rope_interleaved(x, ACT(pos, int32_t), B, heads, KVS_MLA_ROPE, 0, KVS_MLA_ROPE,
                                 e->c.rope_theta, &e->p.kernels, e->stream),
       "kvs::rope_interleaved", td(BF16, 3, B, heads, KVS_MLA_ROPE), td(I32, 1, B, 0, 0));
    return KVS_STATUS_OK;
}

/* Projections of one input x [B, k]: one GEMV launch for all of them at
 * batch 1 (measured faster than cuBLAS there: q_a + kv_a 12.5 us against
 * 48.4 for three cuBLAS calls; at batch 4-8 the GEMV is the slower one),
 * else one kvs_gemm call each. With ro >= 0, output ro (heads of
 * KVS_MLA_ROPE) is then rotated by RoPE: inside that GEMV as it writes
 * (kvs::linear_multi_rope, the same bits) where it runs these shapes, else
 * by the RoPE op after the projections. */
static enum kvs_status linears(struct kvs_engine *e, const kvs_bf16 *x, int k,
                               const struct kvs_gemv_out *o, int n, int ro)
{
    const int B = e->p.batch;
    const struct kvs_gemv_rope r = {ro, ACT(pos, int32_t), KVS_MLA_ROPE, e->c.rope_theta};
    const int gemv = B <= KVS_GEMV_AUTO_MAX_M && kvs_cuda_gemv_supported(x, k, B, k, o, n, 1, 0, 0);
    const int fused = gemv && ro >= 0 && kvs_cuda_gemv_rope_supported(x, k, B, k, o, n, &r);
    if (gemv && (ro < 0 || fused)) {
        struct kvs_tensor_desc t[2 + KVS_GEMV_MAX_OUTS];
        t[0] = td(BF16, 2, B, k, 0);
        for (int i = 0; i < n; i++)
            t[1 + i] = td(BF16, 2, o[i].n, k, 0);
        if (fused)
            t[1 + n] = td(I32, 1, B, 0, 0);
        kvs_op_begin(fused ? "kvs::linear_multi_rope" : "kvs::linear_multi", 1 + n + fused, t);
        enum kvs_status st =
            fused ? kvs_cuda_gemv_bf16_rope(x, k, B, k, o, n, &r, &e->p.kernels, e->stream)
                  : kvs_cuda_gemv_bf16(x, k, B, k, o, n, 0, 1, 0, 0, 0, &e->p.kernels, e->stream);
        kvs_op_end();
        return st;
    }
    if (gemv) /* the projections in one GEMV, the rotation after it */
        KVS_TRY(linears(e, x, k, o, n, -1));
    else
        for (int i = 0; i < n; i++)
            KVS_TRY(linear(e, x, o[i].w, (kvs_bf16 *)o[i].y, B, o[i].n, k));
    return ro >= 0 ? rope(e, (kvs_bf16 *)o[ro].y, (int)(o[ro].n / KVS_MLA_ROPE)) : KVS_STATUS_OK;
}

/* The ranks' partial sums of a sublayer's output [B, hidden], summed in
 * place on every rank (BF16, NCCL's ring/tree order: rounding differs from
 * one GPU's sum). `slot` numbers the layer's all-reduces for the timing
 * events. No-op without a communicator. */
static enum kvs_status all_reduce(struct kvs_engine *e, kvs_bf16 *buf, int l, int slot)
{
    if (!e->comm)
        return KVS_STATUS_OK;
    const int B = e->p.batch;
    cudaEvent_t *ev = e->ar_timed && e->ev_ar ? &e->ev_ar[4 * l + 2 * slot] : NULL;
    if (ev)
        KVS_CUDA_TRY(&e->lg, cudaEventRecord(ev[0], e->stream));
    OP(KVS_NCCL_STATUS(&e->lg, ncclAllReduce(buf, buf, (size_t)B * (size_t)e->c.hidden,
                                             ncclBfloat16, ncclSum, (ncclComm_t)e->comm,
                                             e->stream)),
       "kvs::all_reduce", td(BF16, 2, B, e->c.hidden, 0));
    if (ev)
        KVS_CUDA_TRY(&e->lg, cudaEventRecord(ev[1], e->stream));
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// the KV path: what attention reads

static enum kvs_status kv_prepare(struct kvs_engine *e, int l, const kvs_fp8 *pool,
                                  int64_t gather_rows, int timed)
{
    const int64_t cap = e->shape.kv_capacity;
    timed = timed && e->ev_kv;
    if (timed)
        KVS_CUDA_TRY(&e->lg, cudaEventRecord(e->ev_kv[2 * l], e->stream));
    if (e->p.path == KVS_KV_PATH_FULL_CAST) {
        /* the bug: the whole pool, every layer, through the generic converter;
         * dims as copy_ records them, destination first */
        OP(kvs_cuda_cast_fp8_to_bf16(KVS_CAST_GENERIC, pool, e->scratch,
                                     (size_t)cap * KVS_MLA_ROW, e->stream),
           "kvs::cast_fp8_to_bf16", td(BF16, 3, cap, 1, KVS_MLA_ROW),
           td(FP8, 3, cap, 1, KVS_MLA_ROW));
    } else if (e->p.path == KVS_KV_PATH_ACTIVE_CAST) {
        OP(kvs_cuda_gather_cast_fp8_to_bf16(pool, KVS_MLA_ROW, e->d_tokens, (size_t)gather_rows,
                                            e->scratch, e->stream),
           "kvs::gather_cast_fp8_to_bf16", td(BF16, 3, gather_rows, 1, KVS_MLA_ROW),
           td(FP8, 3, gather_rows, 1, KVS_MLA_ROW), td(I32, 1, gather_rows, 0, 0));
    }
    if (timed)
        KVS_CUDA_TRY(&e->lg, cudaEventRecord(e->ev_kv[2 * l + 1], e->stream));
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// attention

static enum kvs_status attention(struct kvs_engine *e, int l, int64_t gather_rows, int timed)
{
    const struct kvs_model_config *c = &e->c;
    const int B = e->p.batch, H = c->heads, nope = c->qk_nope_head_dim, v = c->v_head_dim;
    const int lat = KVS_MLA_LATENT;
    kvs_bf16 *h = ACT(h, kvs_bf16);
    kvs_fp8 *pool = e->pool + e->pool_stride * (uint64_t)l;

    KVS_TRY(residual_norm(e, WL(KVS_W_ATTN_NORM), l > 0));
    /* h -> q_a, kv_a latent, kv_a rope */
    const struct kvs_gemv_out qkv_a[] = {
        {WL(KVS_W_Q_A), ACT(q_a, kvs_bf16), c->q_lora_rank, c->q_lora_rank},
        {WL(KVS_W_KV_A_LAT), ACT(kv_raw, kvs_bf16), lat, lat},
        {WL(KVS_W_KV_A_ROPE), ACT(kv_rope, kvs_bf16), KVS_MLA_ROPE, KVS_MLA_ROPE},
    };
    KVS_TRY(linears(e, h, c->hidden, qkv_a, 3, -1));

    /* this token's row: latent normed, rope part rotated, BF16 -> FP8 into
     * its slot (a cast of B rows), one kernel; q_a's norm runs in the same
     * launch when it can (a second row of blocks), else on its own */
    kvs_bf16 *q_a = ACT(q_a, kvs_bf16), *q_an = ACT(q_an, kvs_bf16);
    const kvs_bf16 *q_a_w = WL(KVS_W_Q_A_NORM);
    const int qfused = kvs_eng_cuda_kv_finish_qnorm_supported(q_a, q_a_w, q_an, c->q_lora_rank);
    if (!qfused)
        KVS_TRY(rmsnorm(e, q_a, q_a_w, q_an, B, c->q_lora_rank));
    OP(kvs_eng_cuda_kv_finish_qnorm(pool, ACT(new_slot, int32_t), ACT(kv_raw, kvs_bf16),
                                    WL(KVS_W_KV_A_NORM), ACT(kv_rope, kvs_bf16), ACT(pos, int32_t),
                                    B, c->rms_eps, c->rope_theta, qfused ? q_a : NULL, q_a_w, q_an,
                                    c->q_lora_rank, &e->p.kernels, e->stream),
       "kvs::kv_append_cast", td(FP8, 3, B, 1, KVS_MLA_ROW), td(BF16, 3, B, 1, KVS_MLA_ROW),
       td(I32, 1, B, 0, 0));

    const struct kvs_gemv_out q_b[] = {
        {WL(KVS_W_Q_B_NOPE), ACT(q_nope, kvs_bf16), H * nope, (int64_t)H * nope},
        {WL(KVS_W_Q_B_ROPE), ACT(q_rope, kvs_bf16), H * KVS_MLA_ROPE, (int64_t)H * KVS_MLA_ROPE},
    };
    KVS_TRY(linears(e, q_an, c->q_lora_rank, q_b, 2, 1));

    /* absorb W_UK: q_latent[b,h,:] = W_UK[h] . q_nope[b,h,:] (per-head, batched) */
    OP(kvs_gemm_linear_batched_bf16(e->gemm, ACT(q_nope, kvs_bf16), (int64_t)H * nope, nope,
                                    WL(KVS_W_UK), (int64_t)lat * nope, ACT(q_lat, kvs_bf16),
                                    (int64_t)H * lat, lat, B, lat, nope, H),
       "kvs::linear_per_head", td(BF16, 3, B, H, nope), td(BF16, 3, H, lat, nope));

    KVS_TRY(kv_prepare(e, l, pool, gather_rows, timed));

    const int active_cast = e->p.path == KVS_KV_PATH_ACTIVE_CAST;
    const int bf16_kv = e->p.path != KVS_KV_PATH_FP8_DIRECT;
    struct kvs_mla_args a = {
        .batch = B, .heads = H, .q_latent = ACT(q_lat, kvs_bf16),
        .q_rope = ACT(q_rope, kvs_bf16), .kv_dtype = bf16_kv ? KVS_KV_BF16 : KVS_KV_FP8,
        .kv = bf16_kv ? (const void *)e->scratch : (const void *)pool,
        .seq_start = e->d_seq_start, .tokens = active_cast ? NULL : e->d_tokens,
        .scale = kvs_model_softmax_scale(c), .out = ACT(attn, kvs_bf16), .lse = NULL,
    };
    int64_t kv_rows = e->p.path == KVS_KV_PATH_ACTIVE_CAST ? gather_rows : e->shape.kv_capacity;
    OP(kvs_cuda_mla_decode(&a, e->seqs.max_len, e->mla_ws, e->mla_ws_bytes, &e->p.kernels,
                           e->stream),
       "kvs::mla_decode", td(BF16, 3, B, H, lat), td(BF16, 3, B, H, KVS_MLA_ROPE),
       td(bf16_kv ? BF16 : FP8, 3, kv_rows, 1, KVS_MLA_ROW), td(I32, 1, B + 1, 0, 0),
       /* the token list: tells a trace reader how many rows are active */
       td(I32, 1, active_cast ? 0 : gather_rows, 0, 0));

    /* W_UV per head, o_proj, residual */
    OP(kvs_gemm_linear_batched_bf16(e->gemm, ACT(attn, kvs_bf16), (int64_t)H * lat, lat,
                                    WL(KVS_W_UV), (int64_t)v * lat, ACT(vout, kvs_bf16),
                                    (int64_t)H * v, v, B, v, lat, H),
       "kvs::linear_per_head", td(BF16, 3, B, H, lat), td(BF16, 3, H, v, lat));
    KVS_TRY(linear(e, ACT(vout, kvs_bf16), WL(KVS_W_O), ACT(o, kvs_bf16), B, c->hidden, H * v));
    /* the residual add waits for the next norm */
    return all_reduce(e, ACT(o, kvs_bf16), l, 0);
}

// ----------------------------------------------------------------------------
// MLP

static enum kvs_status mlp(struct kvs_engine *e, int l)
{
    const struct kvs_model_config *c = &e->c;
    const int B = e->p.batch, E = c->n_routed_experts, ke = c->topk + c->n_shared_experts;
    kvs_bf16 *h = ACT(h, kvs_bf16), *o = ACT(o, kvs_bf16);
    KVS_TRY(residual_norm(e, WL(KVS_W_FFN_NORM), 1));
    if (l < c->dense_layers) {
        KVS_TRY(linear(e, h, WL(KVS_W_MLP_GATE_UP), ACT(gate_up, kvs_bf16), B, 2 * c->inter,
                       c->hidden));
        OP(kvs_cuda_swiglu(ACT(gate_up, kvs_bf16), ACT(act, kvs_bf16), B, c->inter, &e->p.kernels,
                           e->stream),
           "kvs::swiglu", td(BF16, 2, B, 2 * c->inter, 0));
        KVS_TRY(linear(e, ACT(act, kvs_bf16), WL(KVS_W_MLP_DOWN), o, B, c->hidden, c->inter));
        return all_reduce(e, o, l, 1); /* the residual add waits for the next norm */
    }
    /* float logits: the GEMV's float output at batch 1, cuBLAS otherwise */
    const struct kvs_gemv_out ro = {WL(KVS_W_ROUTER), ACT(router, float), E, E};
    const int gemv = B <= KVS_GEMV_AUTO_MAX_M &&
                     kvs_cuda_gemv_supported(h, c->hidden, B, c->hidden, &ro, 1, 1, 0, 0);
    OP(gemv ? kvs_cuda_gemv_bf16(h, c->hidden, B, c->hidden, &ro, 1, 1, 1, 0, 0, 0, &e->p.kernels,
                                 e->stream)
            : kvs_eng_cuda_linear_f32(e->blas, h, WL(KVS_W_ROUTER), ACT(router, float), B, E,
                                      c->hidden),
       "kvs::router_linear", td(BF16, 2, B, c->hidden, 0), td(BF16, 2, E, c->hidden, 0));
    const float *bias = (const float *)KVS_ENGINE_W(e, l, KVS_W_ROUTER_BIAS);
    if (E <= KVS_ENG_ROUTE_MAP_MAX_EXPERTS && c->topk <= KVS_ENG_ROUTE_MAP_MAX_TOPK) {
        /* top-k and the expert map in one launch */
        OP(kvs_eng_cuda_route_map(&e->em, ACT(router, float), bias, B, c->norm_topk,
                                  c->routed_scale, ACT(exp_ids, int32_t), ACT(exp_w, float),
                                  &e->p.kernels, e->stream),
           "kvs::moe_route", td(F32, 2, B, E, 0), td(F32, 1, E, 0, 0));
    } else {
        OP(kvs_cuda_moe_route(ACT(router, float), bias, B, E, c->topk, c->norm_topk,
                              c->routed_scale, ACT(topk_ids, int32_t), ACT(topk_w, float),
                              &e->p.kernels, e->stream),
           "kvs::moe_route", td(F32, 2, B, E, 0), td(F32, 1, E, 0, 0));
        OP(kvs_eng_cuda_map_experts(&e->em, ACT(topk_ids, int32_t), ACT(topk_w, float), B,
                                    ACT(exp_ids, int32_t), ACT(exp_w, float), e->stream),
           "kvs::moe_map_experts", td(I32, 2, B, c->topk, 0), td(F32, 2, B, c->topk, 0));
    }
    struct kvs_moe_args m = {
        .tokens = B, .dim = c->hidden, .inter = c->moe_inter, .topk = ke,
        .n_resident = e->em.resident + e->em.shared, .x = h, .ids = ACT(exp_ids, int32_t),
        .weights = ACT(exp_w, float), .gate_up = WL(KVS_W_EXP_GATE_UP), .down = WL(KVS_W_EXP_DOWN),
        .y = o, .accumulate = 0,
    };
    OP(kvs_cuda_moe_experts(&m, e->moe_ws, e->moe_ws_bytes, &e->p.kernels, e->stream),
       "kvs::moe_experts", td(BF16, 2, B, c->hidden, 0), td(I32, 2, B, ke, 0),
       td(BF16, 3, m.n_resident, 2 * c->moe_inter, c->hidden),
       td(BF16, 3, m.n_resident, c->hidden, c->moe_inter));
    return all_reduce(e, o, l, 1); /* the residual add waits for the next norm */
}

// ----------------------------------------------------------------------------
// the step

enum kvs_status kvs_engine_run_body(struct kvs_engine *e, int64_t gather_rows, int timed)
{
    const struct kvs_model_config *c = &e->c;
    const int B = e->p.batch;
    e->ar_timed = timed;
    /* this step's slots into the device tables, then the token lists */
    OP(kvs_eng_cuda_seq_step(e->d_table, e->seqs.max_len, e->d_len, ACT(new_slot, int32_t),
                             ACT(pos, int32_t), B, e->d_seq_start, e->d_tokens, gather_rows, 0,
                             e->stream),
       "kvs::seq_step", td(I32, 2, B, e->seqs.max_len, 0), td(I32, 1, B, 0, 0));
    OP(kvs_cuda_embedding((const kvs_bf16 *)KVS_ENGINE_W(e, -1, KVS_W_EMBED), ACT(ids, int32_t),
                          ACT(x, kvs_bf16), B, c->hidden, e->stream),
       "kvs::embedding", td(BF16, 2, c->vocab, c->hidden, 0), td(I32, 1, B, 0, 0));
    for (int l = 0; l < c->layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "layer_%d", l);
        kvs_range_begin(name);
        enum kvs_status st = attention(e, l, gather_rows, timed);
        if (st == KVS_STATUS_OK)
            st = mlp(e, l);
        kvs_range_end();
        if (st != KVS_STATUS_OK)
            return st;
    }
    const int l = -1;
    KVS_TRY(residual_norm(e, WL(KVS_W_FINAL_NORM), c->layers > 0));
    OP(kvs_eng_cuda_linear_f32(e->blas, ACT(h, kvs_bf16), WL(KVS_W_LM_HEAD), ACT(logits, float), B,
                               c->vocab, c->hidden),
       "kvs::lm_head", td(BF16, 2, B, c->hidden, 0), td(BF16, 2, c->vocab, c->hidden, 0));
    OP(kvs_cuda_argmax(ACT(logits, float), B, c->vocab, ACT(ids, int32_t), &e->p.kernels,
                       e->stream),
       "kvs::argmax", td(F32, 2, B, c->vocab, 0));
    return KVS_STATUS_OK;
}
