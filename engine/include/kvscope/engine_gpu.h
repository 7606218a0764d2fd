/* kvscope/engine_gpu.h — kvscope's reference GLM-5 decode engine on one GPU:
 * synthetic weights, an FP8 KV pool, B sequences decoding greedily, and a
 * switchable KV path (kvscope/engine.h: full-cast, active-cast, fp8-direct).
 * Every step, layer and op is annotated (kvscope/annotate.h) so a capture
 * carries op names, input dims and dtypes as a PyTorch trace does.
 *
 * defines: struct kvs_engine_params, kvs_engine_params_init, struct kvs_engine,
 *          kvs_engine_plan, kvs_engine_create, kvs_engine_step, struct kvs_engine_step_info,
 *          kvs_engine_logits, kvs_engine_tokens, kvs_engine_expert_map,
 *          kvs_engine_drop_graph, kvs_engine_free,
 *          kvs_engine_copy_rate
 *
 *   struct kvs_engine_params p;
 *   kvs_engine_params_init(&p);
 *   kvs_model_config_load("glm5", &p.model, NULL);
 *   p.batch = 8; p.context_len = 4096; p.steps = 16;
 *   struct kvs_engine *e;
 *   KVS_TRY(kvs_engine_create(&p, &e));          // prints nothing; plan via kvs_engine_plan
 *   for (int i = 0; i < p.steps; i++) KVS_TRY(kvs_engine_step(e, &info));
 *   kvs_engine_free(e);
 *
 * Left out of GLM-5's decode: the DSA sparse indexer (attention is dense over
 * each sequence's context), the MTP layer. Tensor parallelism over several
 * GPUs: kvscope/engine_tp.h (one engine per GPU, these params' tp fields).
 * Available in CUDA builds only; the header itself is plain C. One engine
 * per thread; it owns a CUDA stream and uses the current device.
 */
#ifndef KVSCOPE_ENGINE_GPU_H
#define KVSCOPE_ENGINE_GPU_H

#include <stdint.h>

#include "kvscope/base.h"
#include "kvscope/engine.h"
#include "kvscope/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kvs_engine_params {
    struct kvs_model_config model;
    enum kvs_kv_path path;
    int batch;
    const int64_t *context;  /* [batch] prefill tokens per sequence; NULL: context_len each */
    int64_t context_len;
    int steps;               /* decode steps the run makes room for */
    int64_t kv_capacity;     /* tokens per layer; init: 495552 */
    uint64_t seed;           /* synthetic weights, KV rows and first tokens; init: 1 */
    int graph;               /* capture the decode step in a CUDA graph */
    int resident_experts;    /* 0: top-k */
    int scatter;             /* shuffle free KV slots before the sequences take theirs */
    int time_kv;             /* time the KV preparation (cast / gather-cast) and the
                                all-reduces with events */
    struct kvs_kernel_opts kernels; /* how every kernel of the step launches (PDL, the
                                MLA variants; kvscope/kernels.h); init: zero, the defaults */
    struct kvs_logger log;
    /* tensor parallel (kvscope/engine_tp.h; kvs_engine_tp_create sets these):
     * this engine is rank tp_rank of tp_world and holds that rank's share of
     * the weights; tp_comm is its ncclComm_t, all-reduced after o_proj and
     * after each MLP. tp_world 0 or 1 with tp_comm NULL: one GPU, no NCCL. */
    int tp_world, tp_rank;
    void *tp_comm;
    /* The library reads and writes no environment. visible_devices is the
     * CUDA_VISIBLE_DEVICES the program runs under (NULL: unset), named in
     * the message when no GPU is visible. NCCL reads NCCL_NVLS_ENABLE
     * itself when the communicators are made: a program that wants NVLink
     * multicast off sets it first (kvscope engine sets 0 unless the user
     * did: cli/cmd_engine.c). */
    const char *visible_devices;
};

/* Defaults above; model zeroed (load one). */
KVS_API void kvs_engine_params_init(struct kvs_engine_params *p);

/* The memory plan and run shape for `p` (kernel workspaces included), without
 * touching the GPU's memory; with tp_world > 1, those of one rank.
 * KVS_STATUS_INVALID_ARGUMENT when the shape cannot run or the ranks do not
 * divide the model (the logger says why). */
KVS_API enum kvs_status kvs_engine_plan(const struct kvs_engine_params *p,
                                        struct kvs_run_shape *shape, struct kvs_mem_plan *plan);

/* The plan against `device`'s free memory (minus the margin) without
 * allocating: KVS_STATUS_LIMIT and the largest KV capacity that would fit
 * in the log, as kvs_engine_create does. The current device is restored.
 * For a check before other device work (kvscope engine's copy-rate probe). */
KVS_API enum kvs_status kvs_engine_check_fit(const struct kvs_mem_plan *plan,
                                             const struct kvs_run_shape *shape, int device,
                                             const struct kvs_logger *lg);

struct kvs_engine;

/* Plan, check the plan against free device memory (minus a margin for the
 * CUDA context and allocator) before allocating anything — on a misfit
 * KVS_STATUS_LIMIT with the largest KV capacity that would fit in the log —
 * then allocate, fill the weights and KV pool, and prefill the sequences. */
KVS_API enum kvs_status kvs_engine_create(const struct kvs_engine_params *p,
                                          struct kvs_engine **out);

struct kvs_engine_step_info {
    int step;                /* 0-based */
    double ms;               /* the step on the GPU stream, CUDA events */
    double kv_ms;            /* KV preparation (casts) within it; 0 unless time_kv (and not graph) */
    int64_t active;          /* tokens attended this step, all sequences */
    int graph;               /* the step ran as a CUDA graph */
    double allreduce_ms;     /* in the all-reduces, waiting for the other ranks included;
                                0 unless tensor parallel and time_kv (and not graph) */
};

/* One greedy decode step for every sequence; synchronises at the end. */
KVS_API enum kvs_status kvs_engine_step(struct kvs_engine *e, struct kvs_engine_step_info *info);

/* The last step's float logits [batch, vocab] / greedy tokens [batch]. */
KVS_API enum kvs_status kvs_engine_logits(struct kvs_engine *e, float *host);
KVS_API enum kvs_status kvs_engine_tokens(struct kvs_engine *e, int32_t *host);
KVS_API const struct kvs_expert_map *kvs_engine_expert_map(const struct kvs_engine *e);
KVS_API const struct kvs_mem_plan *kvs_engine_mem_plan(const struct kvs_engine *e);

/* Destroys the captured CUDA graph, if any (the next step captures anew).
 * A graph that holds NCCL all-reduces keeps NCCL's plan for them alive, and
 * ncclCommFinalize waits until it is released: a tensor-parallel rank drops
 * its graph before finalizing its communicator (engine/tp_gpu.c). */
KVS_API void kvs_engine_drop_graph(struct kvs_engine *e);

KVS_API void kvs_engine_free(struct kvs_engine *e);

/* Device-to-device copy rate (bytes read + written per second / 1e9) of a
 * `bytes`-sized cudaMemcpyAsync, median of `repeats` after a warm-up. */
KVS_API enum kvs_status kvs_engine_copy_rate(uint64_t bytes, int repeats, double *gbps,
                                             const struct kvs_logger *lg);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ENGINE_GPU_H */
