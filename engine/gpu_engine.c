/* engine/gpu_engine.c — the GPU engine's life cycle (kvscope/engine_gpu.h):
 * plan, fit check before any allocation, allocation, synthetic weights and
 * KV pool, prefill, the step driver (eager or CUDA graph), results, free.
 * The step's device work is in engine/gpu_step.c.
 * Tested by tests/gpu/test_engine_gpu.c (meson test -C build --suite gpu). */
#include "gpu_impl.h"

/* nccl.h declares a few functions without (void) prototypes: see gpu_step.c */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/annotate.h"
#include "kvscope/check.h"
#include "shard.h"
#include "synth.h"

/* Kept free beyond the plan: the CUDA context's later needs, cuBLAS handles
 * and their lazily allocated state, graph instantiation, fragmentation. */
#define KVS_ENGINE_MARGIN_BYTES (3ull << 29) /* 1.5 GiB */

void kvs_engine_params_init(struct kvs_engine_params *p)
{
    memset(p, 0, sizeof *p);
    p->path = KVS_KV_PATH_FP8_DIRECT;
    p->batch = 1;
    p->context_len = 4096;
    p->steps = 16;
    p->kv_capacity = 495552;
    p->seed = 1;
    p->time_kv = 1;
    p->log = kvs_logger_stderr();
}

// ----------------------------------------------------------------------------
// plan

static int64_t ctx_of(const struct kvs_engine_params *p, int b)
{
    return p->context ? p->context[b] : p->context_len;
}

enum kvs_status kvs_engine_plan(const struct kvs_engine_params *p, struct kvs_run_shape *shape,
                                struct kvs_mem_plan *plan)
{
    if (!p || !shape || !plan)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (p->batch < 1 || p->steps < 1 || p->model.hidden < 1 ||
        p->model.kv_lora_rank != KVS_MLA_LATENT || p->model.qk_rope_head_dim != KVS_MLA_ROPE ||
        p->tp_rank < 0 || p->tp_rank >= (p->tp_world > 1 ? p->tp_world : 1)) {
        kvs_log(&p->log, KVS_LOG_ERROR, "engine: needs a loaded model config, batch >= 1, "
                                        "steps >= 1 and a rank below the world size");
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    /* one rank's share of the model (the whole model at tp 1) */
    struct kvs_tp_plan tp;
    KVS_TRY(kvs_tp_plan_init(&p->model, p->tp_world > 1 ? p->tp_world : 1, &tp, &p->log));
    const struct kvs_model_config *c = &tp.rank;
    struct kvs_run_shape s;
    memset(&s, 0, sizeof s);
    s.path = p->path;
    s.batch = p->batch;
    s.steps = p->steps;
    s.kv_capacity = p->kv_capacity;
    s.resident_experts = p->resident_experts;
    for (int b = 0; b < p->batch; b++) {
        int64_t n = ctx_of(p, b);
        if (n < 0 || n > INT32_MAX / 2) {
            kvs_log(&p->log, KVS_LOG_ERROR, "engine: a context of %lld tokens is outside [0, %d]",
                    (long long)n, INT32_MAX / 2);
            return KVS_STATUS_INVALID_ARGUMENT;
        }
        s.context_tokens += n;
        s.max_context = n > s.max_context ? n : s.max_context;
    }
    int max_len = (int)(s.max_context + p->steps);
    s.workspace_bytes =
        kvs_cuda_mla_decode_workspace(p->batch, c->heads, max_len, &p->kernels) +
        kvs_cuda_moe_experts_workspace(p->batch, c->topk + c->n_shared_experts,
                                       c->moe_inter > c->inter ? c->moe_inter : c->inter) +
        kvs_eng_blas_workspace_bytes();
    KVS_TRY(kvs_mem_plan_compute(c, &s, plan, &p->log));
    *shape = s;
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// create

/* the plan against the current device's free memory */
static enum kvs_status fit_here(const struct kvs_mem_plan *plan, const struct kvs_run_shape *shape,
                                const struct kvs_logger *lg)
{
    size_t free_b = 0, total_b = 0;
    KVS_CUDA_TRY(lg, cudaMemGetInfo(&free_b, &total_b));
    uint64_t budget = free_b > KVS_ENGINE_MARGIN_BYTES ? free_b - KVS_ENGINE_MARGIN_BYTES : 0;
    if (plan->total <= budget)
        return KVS_STATUS_OK;
    int64_t fit = kvs_mem_plan_max_capacity(plan, shape->kv_capacity, budget);
    kvs_log(lg, KVS_LOG_ERROR,
            "the plan needs %.2f GB but the GPU has %.2f GB free (of %.2f GB; %.1f GB kept for "
            "the CUDA context and libraries); nothing was allocated",
            (double)plan->total / 1e9, (double)free_b / 1e9, (double)total_b / 1e9,
            (double)KVS_ENGINE_MARGIN_BYTES / 1e9);
    if (fit >= plan->active_bound)
        kvs_log(lg, KVS_LOG_ERROR,
                "the largest KV capacity that fits is %lld tokens (--kv-capacity %lld)",
                (long long)fit, (long long)fit);
    else
        kvs_log(lg, KVS_LOG_ERROR,
                "the largest KV capacity that fits, %lld tokens, is below the %lld this run "
                "needs: lower the batch, context or steps",
                (long long)fit, (long long)plan->active_bound);
    return KVS_STATUS_LIMIT;
}

static enum kvs_status check_fit(struct kvs_engine *e)
{
    return fit_here(&e->plan, &e->shape, &e->lg);
}

enum kvs_status kvs_engine_check_fit(const struct kvs_mem_plan *plan,
                                     const struct kvs_run_shape *shape, int device,
                                     const struct kvs_logger *lg)
{
    if (!plan || !shape || device < 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    int prev = 0;
    KVS_CUDA_TRY(lg, cudaGetDevice(&prev));
    KVS_CUDA_TRY(lg, cudaSetDevice(device));
    enum kvs_status st = fit_here(plan, shape, lg);
    cudaSetDevice(prev);
    return st;
}

/* Each tensor is this rank's slice of the full model's (engine/shard.h):
 * values by their index in the full tensor, so every rank count computes
 * the same function and the CPU reference of the full model checks them. */
static enum kvs_status make_weights(struct kvs_engine *e)
{
    int64_t n = kvs_model_weights(&e->tp.full, e->em.resident, NULL, 0);
    struct kvs_wdesc *d = malloc((size_t)n * sizeof *d);
    e->w = calloc((size_t)(e->c.layers + 1) * KVS_W_COUNT_, sizeof *e->w);
    if (!d || !e->w) {
        free(d);
        return KVS_STATUS_NO_MEMORY;
    }
    kvs_model_weights(&e->tp.full, e->em.resident, d, n);
    enum kvs_status st = KVS_CUDA_STATUS(&e->lg, cudaMalloc((void **)&e->weights, e->plan.weights));
    uint64_t at = 0;
    for (int64_t i = 0; st == KVS_STATUS_OK && i < n; i++) {
        struct kvs_wdesc mine;
        struct kvs_shard sh;
        kvs_tp_shard(&e->tp, e->p.tp_rank, &d[i], &mine, &sh);
        void *p = e->weights + at;
        at += (kvs_wdesc_bytes(&mine) + 255u) & ~(uint64_t)255u;
        uint64_t key = kvs_synth_key(e->p.seed, mine.id);
        uint64_t elems = (uint64_t)kvs_wdesc_elems(&mine);
        if (!kvs_shard_is_whole(&mine, &sh))
            st = kvs_eng_cuda_fill_bf16_shard(p, &mine, &sh, key, e->stream); /* BF16 only */
        else if (mine.elem_bytes == 4)
            st = kvs_eng_cuda_fill_f32(p, elems, key, mine.amp, mine.offset, e->stream);
        else
            st = kvs_eng_cuda_fill_bf16(p, elems, key, mine.amp, mine.offset, e->stream);
        KVS_ENGINE_W(e, mine.layer, mine.kind) = p;
    }
    free(d);
    if (st == KVS_STATUS_OK && at != e->plan.weights) {
        kvs_log(&e->lg, KVS_LOG_ERROR, "weights: %llu bytes placed, %llu planned",
                (unsigned long long)at, (unsigned long long)e->plan.weights);
        return KVS_STATUS_INTERNAL;
    }
    return st;
}

static enum kvs_status make_kv(struct kvs_engine *e)
{
    const uint64_t cap = (uint64_t)e->shape.kv_capacity;
    const int B = e->p.batch;
    e->pool_stride = (cap * KVS_MLA_ROW + 255u) & ~(uint64_t)255u;
    KVS_CUDA_TRY(&e->lg, cudaMalloc((void **)&e->pool, e->pool_stride * (uint64_t)e->c.layers));
    if (e->plan.kv_scratch)
        KVS_CUDA_TRY(&e->lg, cudaMalloc((void **)&e->scratch, e->plan.kv_scratch));

    /* slots and sequences on the host; their tables mirrored on the device */
    KVS_TRY(kvs_slots_init(&e->slots, e->shape.kv_capacity));
    if (e->p.scatter)
        kvs_slots_scatter(e->slots, e->p.seed);
    KVS_TRY(kvs_seqs_init(&e->seqs, e->slots, B, e->context, e->p.steps));
    size_t table = (size_t)B * (size_t)e->seqs.max_len * sizeof(int32_t);
    KVS_CUDA_TRY(&e->lg, cudaMalloc((void **)&e->d_table, table));
    KVS_CUDA_TRY(&e->lg, cudaMalloc((void **)&e->d_len, (size_t)B * sizeof(int32_t)));
    KVS_CUDA_TRY(&e->lg, cudaMalloc((void **)&e->d_seq_start, (size_t)(B + 1) * sizeof(int32_t)));
    KVS_CUDA_TRY(&e->lg, cudaMalloc((void **)&e->d_tokens,
                                    (size_t)e->plan.active_bound * sizeof(int32_t)));
    KVS_CUDA_TRY(&e->lg, cudaMemcpy(e->d_table, e->seqs.slot, table, cudaMemcpyHostToDevice));
    KVS_CUDA_TRY(&e->lg, cudaMemcpy(e->d_len, e->seqs.len, (size_t)B * sizeof(int32_t),
                                    cudaMemcpyHostToDevice));

    /* every row of the pool holds data (a full-pool cast never reads zeros);
     * each sequence's context is its own stream, wherever its slots are */
    for (int l = 0; l < e->c.layers; l++) {
        kvs_fp8 *layer = e->pool + e->pool_stride * (uint64_t)l;
        KVS_TRY(kvs_eng_cuda_fill_kv(layer, cap, kvs_synth_key(e->p.seed, KVS_SYNTH_ID_KV(l)),
                                     e->stream));
        KVS_TRY(kvs_eng_cuda_prefill_kv(layer, e->d_table, e->seqs.max_len, e->d_len, B,
                                        e->shape.max_context, e->p.seed, l, e->stream));
    }
    return KVS_STATUS_OK;
}

static enum kvs_status make_buffers(struct kvs_engine *e)
{
    const int B = e->p.batch;
    kvs_act_layout_compute(&e->c, B, &e->lay);
    KVS_CUDA_TRY(&e->lg, cudaMalloc((void **)&e->act, e->lay.total));
    KVS_CUDA_TRY(&e->lg, cudaMemsetAsync(e->act, 0, e->lay.total, e->stream));
    int max_len = e->seqs.max_len;
    e->mla_ws_bytes = kvs_cuda_mla_decode_workspace(B, e->c.heads, max_len, &e->p.kernels);
    e->moe_ws_bytes = kvs_cuda_moe_experts_workspace(
        B, e->c.topk + e->c.n_shared_experts,
        e->c.moe_inter > e->c.inter ? e->c.moe_inter : e->c.inter);
    if (e->mla_ws_bytes)
        KVS_CUDA_TRY(&e->lg, cudaMalloc(&e->mla_ws, e->mla_ws_bytes));
    if (e->moe_ws_bytes)
        KVS_CUDA_TRY(&e->lg, cudaMalloc(&e->moe_ws, e->moe_ws_bytes));
    KVS_CUDA_TRY(&e->lg, cudaMallocHost((void **)&e->h_new_slot, (size_t)B * sizeof(int32_t)));
    KVS_CUDA_TRY(&e->lg, cudaMallocHost((void **)&e->h_pos, (size_t)B * sizeof(int32_t)));
    for (int b = 0; b < B; b++)
        e->h_pos[b] = kvs_synth_token(e->p.seed, b, e->c.vocab);
    KVS_CUDA_TRY(&e->lg, cudaMemcpyAsync(KVS_ENGINE_ACT(e, ids, int32_t), e->h_pos,
                                         (size_t)B * sizeof(int32_t), cudaMemcpyHostToDevice,
                                         e->stream));
    KVS_CUDA_TRY(&e->lg, cudaEventCreate(&e->ev_start));
    KVS_CUDA_TRY(&e->lg, cudaEventCreate(&e->ev_end));
    if (e->p.time_kv && !e->p.graph && e->p.path != KVS_KV_PATH_FP8_DIRECT) {
        e->ev_kv = calloc((size_t)e->c.layers * 2, sizeof *e->ev_kv);
        if (!e->ev_kv)
            return KVS_STATUS_NO_MEMORY;
        for (int i = 0; i < 2 * e->c.layers; i++)
            KVS_CUDA_TRY(&e->lg, cudaEventCreate(&e->ev_kv[i]));
    }
    if (e->p.time_kv && !e->p.graph && e->comm) {
        e->ev_ar = calloc((size_t)e->c.layers * 4, sizeof *e->ev_ar);
        if (!e->ev_ar)
            return KVS_STATUS_NO_MEMORY;
        for (int i = 0; i < 4 * e->c.layers; i++)
            KVS_CUDA_TRY(&e->lg, cudaEventCreate(&e->ev_ar[i]));
    }
    return KVS_STATUS_OK;
}

enum kvs_status kvs_engine_create(const struct kvs_engine_params *p, struct kvs_engine **out)
{
    if (!p || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    struct kvs_engine *e = calloc(1, sizeof *e);
    if (!e)
        return KVS_STATUS_NO_MEMORY;
    e->p = *p;
    e->lg = p->log;
    e->comm = p->tp_comm;
    e->context = malloc((size_t)(p->batch > 0 ? p->batch : 1) * sizeof *e->context);
    if (!e->context) {
        free(e);
        return KVS_STATUS_NO_MEMORY;
    }
    for (int b = 0; b < p->batch; b++)
        e->context[b] = ctx_of(p, b);
    e->p.context = e->context;

    enum kvs_status st = kvs_engine_plan(&e->p, &e->shape, &e->plan);
    if (st == KVS_STATUS_OK)
        st = kvs_tp_plan_init(&p->model, p->tp_world > 1 ? p->tp_world : 1, &e->tp, &e->lg);
    e->c = e->tp.rank;
    if (st == KVS_STATUS_OK)
        st = kvs_expert_map_init(&e->c, p->resident_experts, &e->em);
    if (st == KVS_STATUS_OK)
        st = check_fit(e);
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(&e->lg, cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking));
    if (st == KVS_STATUS_OK)
        st = kvs_gemm_init(&e->gemm, e->stream, &e->lg);
    if (st == KVS_STATUS_OK)
        kvs_gemm_set_opts(e->gemm, &e->p.kernels);
    if (st == KVS_STATUS_OK)
        st = kvs_eng_blas_init(&e->blas, e->stream, &e->lg);
    if (st == KVS_STATUS_OK)
        st = make_weights(e);
    if (st == KVS_STATUS_OK)
        st = make_kv(e);
    if (st == KVS_STATUS_OK)
        st = make_buffers(e);
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(&e->lg, cudaStreamSynchronize(e->stream));
    if (st != KVS_STATUS_OK) {
        kvs_engine_free(e);
        return st;
    }
    *out = e;
    return KVS_STATUS_OK;
}

void kvs_engine_drop_graph(struct kvs_engine *e)
{
    if (!e)
        return;
    if (e->stream)
        cudaStreamSynchronize(e->stream);
    if (e->graph_exec)
        cudaGraphExecDestroy(e->graph_exec);
    if (e->graph)
        cudaGraphDestroy(e->graph);
    e->graph_exec = NULL;
    e->graph = NULL;
}

void kvs_engine_free(struct kvs_engine *e)
{
    if (!e)
        return;
    kvs_engine_drop_graph(e);
    if (e->ev_kv)
        for (int i = 0; i < 2 * e->c.layers; i++)
            if (e->ev_kv[i])
                cudaEventDestroy(e->ev_kv[i]);
    free(e->ev_kv);
    if (e->ev_ar)
        for (int i = 0; i < 4 * e->c.layers; i++)
            if (e->ev_ar[i])
                cudaEventDestroy(e->ev_ar[i]);
    free(e->ev_ar);
    if (e->ev_start)
        cudaEventDestroy(e->ev_start);
    if (e->ev_end)
        cudaEventDestroy(e->ev_end);
    kvs_gemm_free(e->gemm);
    kvs_eng_blas_free(e->blas);
    cudaFree(e->weights);
    cudaFree(e->pool);
    cudaFree(e->scratch);
    cudaFree(e->d_table);
    cudaFree(e->d_len);
    cudaFree(e->d_seq_start);
    cudaFree(e->d_tokens);
    cudaFree(e->act);
    cudaFree(e->mla_ws);
    cudaFree(e->moe_ws);
    if (e->h_new_slot)
        cudaFreeHost(e->h_new_slot);
    if (e->h_pos)
        cudaFreeHost(e->h_pos);
    kvs_seqs_free(&e->seqs, e->slots);
    kvs_slots_free_all(e->slots);
    if (e->stream)
        cudaStreamDestroy(e->stream);
    free(e->w);
    free(e->context);
    free(e);
}

// ----------------------------------------------------------------------------
// steps

/* NCCL connects a communicator's peers on its first collective, with
 * allocations a stream capture refuses: capturing the first all-reduce
 * failed on two H200s (NCCL 2.28: "internal error", then the capture broken,
 * 2026-11-29). So every rank runs one all-reduce of the step's size eagerly
 * before capturing. Collective: every rank's thread calls it. */
static enum kvs_status warm_comm(struct kvs_engine *e)
{
    if (!e->comm)
        return KVS_STATUS_OK;
    const size_t n = (size_t)e->p.batch * (size_t)e->c.hidden;
    kvs_bf16 *buf = NULL;
    KVS_CUDA_TRY(&e->lg, cudaMalloc((void **)&buf, n * sizeof *buf));
    enum kvs_status st = KVS_CUDA_STATUS(&e->lg, cudaMemsetAsync(buf, 0, n * sizeof *buf, e->stream));
    if (st == KVS_STATUS_OK)
        st = KVS_NCCL_STATUS(&e->lg, ncclAllReduce(buf, buf, n, ncclBfloat16, ncclSum,
                                                   (ncclComm_t)e->comm, e->stream));
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(&e->lg, cudaStreamSynchronize(e->stream));
    cudaFree(buf);
    return st;
}

static enum kvs_status capture_graph(struct kvs_engine *e)
{
    KVS_TRY(warm_comm(e));
    KVS_CUDA_TRY(&e->lg, cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
    /* a fixed row count: the gather list is padded up to the run's bound */
    enum kvs_status st = kvs_engine_run_body(e, e->plan.active_bound, 0);
    cudaGraph_t g = NULL;
    enum kvs_status end = KVS_CUDA_STATUS(&e->lg, cudaStreamEndCapture(e->stream, &g));
    if (st == KVS_STATUS_OK)
        st = end;
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(&e->lg, cudaGraphInstantiate(&e->graph_exec, g, 0));
    if (st != KVS_STATUS_OK && g)
        cudaGraphDestroy(g);
    else
        e->graph = g;
    return st;
}

enum kvs_status kvs_engine_step(struct kvs_engine *e, struct kvs_engine_step_info *info)
{
    if (!e)
        return KVS_STATUS_INVALID_ARGUMENT;
    const int B = e->p.batch;
    enum kvs_status st = kvs_seqs_append(&e->seqs, e->slots, e->h_new_slot, e->h_pos);
    if (st != KVS_STATUS_OK) {
        kvs_log(&e->lg, KVS_LOG_ERROR, "step %d: the sequences are full (room was made for %d "
                                       "steps)", e->step, e->p.steps);
        return st;
    }
    int64_t active = kvs_seqs_tokens(&e->seqs);
    char name[48];
    snprintf(name, sizeof name, "ProfilerStep#%d", e->step);
    kvs_range_begin(name);
    /* the graph is captured on its first step, outside the timed region */
    if (e->p.graph && !e->graph_exec)
        st = capture_graph(e);
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(&e->lg, cudaEventRecord(e->ev_start, e->stream));
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(&e->lg,
                             cudaMemcpyAsync(KVS_ENGINE_ACT(e, new_slot, int32_t), e->h_new_slot,
                                             (size_t)B * sizeof(int32_t), cudaMemcpyHostToDevice,
                                             e->stream));
    int timed = e->ev_kv != NULL || e->ev_ar != NULL;
    if (st == KVS_STATUS_OK)
        st = e->graph_exec ? KVS_CUDA_STATUS(&e->lg, cudaGraphLaunch(e->graph_exec, e->stream))
                           : kvs_engine_run_body(e, active, timed);
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(&e->lg, cudaEventRecord(e->ev_end, e->stream));
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(&e->lg, cudaEventSynchronize(e->ev_end));
    kvs_range_end();
    if (st != KVS_STATUS_OK)
        return st;
    struct kvs_engine_step_info in;
    memset(&in, 0, sizeof in);
    in.step = e->step++;
    in.active = active;
    in.graph = e->graph_exec != NULL;
    float ms = 0.0f;
    KVS_CUDA_TRY(&e->lg, cudaEventElapsedTime(&ms, e->ev_start, e->ev_end));
    in.ms = ms;
    for (int l = 0; e->ev_kv && timed && l < e->c.layers; l++) {
        KVS_CUDA_TRY(&e->lg, cudaEventElapsedTime(&ms, e->ev_kv[2 * l], e->ev_kv[2 * l + 1]));
        in.kv_ms += ms;
    }
    for (int i = 0; e->ev_ar && !e->graph_exec && i < 2 * e->c.layers; i++) {
        KVS_CUDA_TRY(&e->lg, cudaEventElapsedTime(&ms, e->ev_ar[2 * i], e->ev_ar[2 * i + 1]));
        in.allreduce_ms += ms;
    }
    if (info)
        *info = in;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_engine_logits(struct kvs_engine *e, float *host)
{
    size_t n = (size_t)e->p.batch * (size_t)e->c.vocab * sizeof(float);
    KVS_CUDA_TRY(&e->lg, cudaMemcpy(host, KVS_ENGINE_ACT(e, logits, float), n,
                                    cudaMemcpyDeviceToHost));
    return KVS_STATUS_OK;
}

enum kvs_status kvs_engine_tokens(struct kvs_engine *e, int32_t *host)
{
    KVS_CUDA_TRY(&e->lg, cudaMemcpy(host, KVS_ENGINE_ACT(e, ids, int32_t),
                                    (size_t)e->p.batch * sizeof(int32_t), cudaMemcpyDeviceToHost));
    return KVS_STATUS_OK;
}

const struct kvs_expert_map *kvs_engine_expert_map(const struct kvs_engine *e)
{
    return &e->em;
}

const struct kvs_mem_plan *kvs_engine_mem_plan(const struct kvs_engine *e)
{
    return &e->plan;
}

// ----------------------------------------------------------------------------
// copy rate

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

enum kvs_status kvs_engine_copy_rate(uint64_t bytes, int repeats, double *gbps,
                                     const struct kvs_logger *lg)
{
    if (bytes == 0 || repeats < 1 || repeats > 101 || !gbps)
        return KVS_STATUS_INVALID_ARGUMENT;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float ms[101];
    enum kvs_status st = KVS_CUDA_STATUS(lg, cudaMalloc(&a, bytes));
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(lg, cudaMalloc(&b, bytes));
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(lg, cudaMemset(a, 0x5a, bytes));
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(lg, cudaEventCreate(&e0));
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(lg, cudaEventCreate(&e1));
    /* warm-up, then timed copies one at a time */
    if (st == KVS_STATUS_OK)
        st = KVS_CUDA_STATUS(lg, cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    for (int i = 0; st == KVS_STATUS_OK && i < repeats; i++) {
        st = KVS_CUDA_STATUS(lg, cudaEventRecord(e0, 0));
        if (st == KVS_STATUS_OK)
            st = KVS_CUDA_STATUS(lg, cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
        if (st == KVS_STATUS_OK)
            st = KVS_CUDA_STATUS(lg, cudaEventRecord(e1, 0));
        if (st == KVS_STATUS_OK)
            st = KVS_CUDA_STATUS(lg, cudaEventSynchronize(e1));
        if (st == KVS_STATUS_OK)
            st = KVS_CUDA_STATUS(lg, cudaEventElapsedTime(&ms[i], e0, e1));
    }
    if (st == KVS_STATUS_OK) {
        qsort(ms, (size_t)repeats, sizeof ms[0], cmp_float);
        float med = ms[repeats / 2];
        *gbps = med > 0.0f ? 2.0 * (double)bytes / ((double)med * 1e6) : 0.0;
    }
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    return st;
}
