/* kvscope/engine_tp.h — tensor parallelism for kvscope's reference GLM-5
 * engine: the sharding plan (host side, plain C, unit-tested on CPU) and the
 * driver that runs one engine per GPU, one thread each, in one process,
 * joined by NCCL all-reduces (CUDA builds).
 *
 * defines: struct kvs_tp_plan, kvs_tp_plan_init, enum kvs_tp_dim, kvs_tp_rank_slice,
 *          kvs_tp_plan_describe, struct kvs_engine_tp, kvs_engine_gpu_count,
 *          kvs_engine_tp_create, kvs_engine_tp_step, kvs_engine_tp_logits,
 *          kvs_engine_tp_tokens, kvs_engine_tp_world, kvs_engine_tp_device,
 *          kvs_engine_tp_thread, kvs_engine_tp_engine, kvs_engine_tp_free
 *
 * The split over N ranks (Megatron-style, as MLA + MoE engines shard GLM-5
 * and DeepSeek-V3 at TP):
 *   attention  heads split, H/N per rank: q_b's rows (nope and rope parts)
 *              of its heads, W_UK and W_UV of its heads, o_proj's columns of
 *              its heads; attention runs on the rank's heads only; all-reduce
 *              (BF16 sum) of o_proj's output.
 *   MLPs       the dense MLP and every expert (routed and shared) split along
 *              the intermediate dimension (tensor parallel, not expert
 *              parallel): gate_up's rows of the rank's slice of gate and of
 *              up, down's columns of that slice; all-reduce of the output.
 *   replicated q_a and kv_a (each rank computes the new latent row), the MLA
 *              latent KV pool (every rank holds and reads all of it — in
 *              full-cast every rank casts its whole pool every layer), routers
 *              and their biases, norms, embedding, LM head (every rank
 *              computes the full logits and the same greedy token).
 * Every rank computes the router on the same all-reduced input (an NCCL
 * all-reduce gives every rank the same bits), so all ranks route alike.
 *
 * Threading: create, step, logits, tokens and free from one controlling
 * thread; each rank's engine lives on its own thread (its own device, stream,
 * cuBLAS handles, buffers).
 */
#ifndef KVSCOPE_ENGINE_TP_H
#define KVSCOPE_ENGINE_TP_H

#include <stddef.h>
#include <stdint.h>

#include "kvscope/base.h"
#include "kvscope/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVS_TP_MAX_WORLD 64

/* ---------------------------------------------------------------------------
 * the plan (host side) */

struct kvs_tp_plan {
    int world;                     /* N ranks */
    struct kvs_model_config full;  /* the model */
    /* what one rank computes: heads, inter and moe_inter divided by N, the
     * rest as in the model. Its weight table (engine/model.h), memory plan,
     * activation layout and bytes per step are those of one rank. */
    struct kvs_model_config rank;
};

/* KVS_STATUS_INVALID_ARGUMENT, with the reason logged, when world is outside
 * [1, KVS_TP_MAX_WORLD] or does not divide the heads, the dense
 * intermediate size or the experts' intermediate size. */
KVS_API enum kvs_status kvs_tp_plan_init(const struct kvs_model_config *c, int world,
                                         struct kvs_tp_plan *out, const struct kvs_logger *lg);

enum kvs_tp_dim {
    KVS_TP_HEADS = 0,  /* attention heads */
    KVS_TP_INTER,      /* the dense MLP's intermediate rows */
    KVS_TP_MOE_INTER,  /* each expert's intermediate rows (every expert on every rank) */
};
/* The part of a split dimension rank r owns: [*first, *first + *count). */
KVS_API void kvs_tp_rank_slice(const struct kvs_tp_plan *p, enum kvs_tp_dim dim, int rank,
                               int *first, int *count);

/* A few lines: what is split and what is replicated, per rank. Always
 * NUL-terminates; returns the length it wanted. */
KVS_API size_t kvs_tp_plan_describe(const struct kvs_tp_plan *p, char *buf, size_t size);

/* ---------------------------------------------------------------------------
 * the driver (CUDA builds; kvscope/engine_gpu.h for the params and results) */

struct kvs_engine;
struct kvs_engine_params;
struct kvs_engine_step_info;
struct kvs_engine_tp;

/* CUDA devices this process sees; 0 with the reason logged when none.
 * visible_devices: the program's CUDA_VISIBLE_DEVICES (NULL: unset), named
 * when it hides every GPU; the library reads no environment. */
KVS_API enum kvs_status kvs_engine_gpu_count(int *count, const char *visible_devices,
                                             const struct kvs_logger *lg);

/* Check the plan (kvs_tp_plan_init), refuse a world larger than the visible
 * GPU count (KVS_STATUS_INVALID_ARGUMENT, before NCCL or any allocation),
 * make the communicators (ncclCommInitAll over devices 0..world-1; NCCL
 * reads NCCL_NVLS_ENABLE then: the caller sets it to 0 beforehand to keep
 * NVLink multicast off, as kvscope engine does), start one thread per rank and
 * create rank r's engine (kvs_engine_create with p's tp fields set) on
 * device r. Any rank failing frees everything. world 1 runs the same path
 * (an NCCL communicator of one). */
KVS_API enum kvs_status kvs_engine_tp_create(const struct kvs_engine_params *p, int world,
                                             struct kvs_engine_tp **out);

/* One decode step on every rank at once; info[world] gets each rank's step
 * (may be NULL). A rank failing aborts the communicators so that no rank
 * waits forever in an all-reduce; the engine is unusable after that. */
KVS_API enum kvs_status kvs_engine_tp_step(struct kvs_engine_tp *t,
                                           struct kvs_engine_step_info *info);

/* Rank r's last logits [batch, vocab] / greedy tokens [batch] (every rank
 * computes the same). */
KVS_API enum kvs_status kvs_engine_tp_logits(struct kvs_engine_tp *t, int rank, float *host);
KVS_API enum kvs_status kvs_engine_tp_tokens(struct kvs_engine_tp *t, int rank, int32_t *host);

KVS_API int kvs_engine_tp_world(const struct kvs_engine_tp *t);
KVS_API int kvs_engine_tp_device(const struct kvs_engine_tp *t, int rank);
/* The system thread id (gettid) of rank r's thread: a capture's records of
 * that rank's ranges, ops and API calls carry it (kvs_trace_write_part). */
KVS_API uint32_t kvs_engine_tp_thread(const struct kvs_engine_tp *t, int rank);
/* Rank r's engine, for kvs_engine_expert_map / kvs_engine_mem_plan. */
KVS_API const struct kvs_engine *kvs_engine_tp_engine(const struct kvs_engine_tp *t, int rank);

KVS_API void kvs_engine_tp_free(struct kvs_engine_tp *t);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ENGINE_TP_H */
