/* engine/gpu_impl.h — the GPU engine's state, shared by engine/gpu_engine.c
 * (create, weights, free) and engine/gpu_step.c (one decode step). Private;
 * CUDA builds only (includes cuda_runtime.h).
 *
 * defines: struct kvs_engine, KVS_ENGINE_W, KVS_ENGINE_ACT, kvs_engine_run_body
 */
#ifndef KVSCOPE_ENGINE_GPU_IMPL_H
#define KVSCOPE_ENGINE_GPU_IMPL_H

#include <cuda_runtime.h>

#include "kvscope/engine.h"
#include "kvscope/engine_gpu.h"
#include "kvscope/engine_tp.h"
#include "kvscope/kernels.h"
#include "layout.h"
#include "model.h"
#include "ops.h"

struct kvs_engine {
    struct kvs_engine_params p;
    int64_t *context;             /* [batch] */
    struct kvs_model_config c;    /* what this engine computes: tp.rank (tp.full at tp 1) */
    struct kvs_tp_plan tp;
    void *comm;                   /* ncclComm_t, NULL without tensor parallelism */
    struct kvs_expert_map em;
    struct kvs_run_shape shape;
    struct kvs_mem_plan plan;
    struct kvs_logger lg;

    cudaStream_t stream;
    struct kvs_gemm *gemm;
    struct kvs_eng_blas *blas;

    unsigned char *weights;       /* one arena, kvs_model_weights order */
    void **w;                     /* [(layers + 1) * KVS_W_COUNT_] into the arena */
    kvs_fp8 *pool;                /* layers x pool_stride bytes */
    uint64_t pool_stride;
    kvs_bf16 *scratch;            /* full-cast: [capacity, 576]; active-cast: [bound, 576] */
    int32_t *d_table, *d_len;     /* device copies of seqs.slot / seqs.len */
    int32_t *d_seq_start, *d_tokens;
    unsigned char *act;
    struct kvs_act_layout lay;
    void *mla_ws, *moe_ws;
    size_t mla_ws_bytes, moe_ws_bytes;

    struct kvs_slots *slots;
    struct kvs_seqs seqs;
    int32_t *h_new_slot, *h_pos;  /* pinned */

    cudaEvent_t ev_start, ev_end;
    cudaEvent_t *ev_kv;           /* 2 per layer when time_kv */
    cudaEvent_t *ev_ar;           /* 4 per layer (2 all-reduces) when time_kv and comm */
    int ar_timed;                 /* this step records ev_ar (set by kvs_engine_run_body) */
    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    int step;
};

#define KVS_ENGINE_W(e, layer, kind) ((e)->w[(size_t)((layer) + 1) * KVS_W_COUNT_ + (kind)])
#define KVS_ENGINE_ACT(e, field, type) ((type *)((e)->act + (e)->lay.field))

/* Enqueue the device work of one step (no host synchronisation, so it can be
 * captured). `gather_rows` is the active-cast gather's row count: this
 * step's active tokens, or a fixed bound when captured. */
enum kvs_status kvs_engine_run_body(struct kvs_engine *e, int64_t gather_rows, int timed);

#endif /* KVSCOPE_ENGINE_GPU_IMPL_H */
