/* kvscope/engine.h — the host side of kvscope's reference GLM-5 decode
 * engine: model config, memory plan, KV slot allocator and sequences, the
 * expert mapping and the bytes a decode step moves. Plain C, no CUDA: all of
 * it is unit-tested on CPU (tests/test_engine_config.c, test_engine_plan.c,
 * test_engine_tp_plan.c). The GPU engine that uses it is in
 * kvscope/engine_gpu.h.
 *
 * defines: struct kvs_model_config, kvs_model_config_load, kvs_model_config_parse,
 *          kvs_model_config_bundled, enum kvs_kv_path, kvs_kv_path_name, kvs_kv_path_parse,
 *          struct kvs_expert_map, kvs_expert_map_init, kvs_expert_map_token,
 *          kvs_expert_map_describe, kvs_expected_distinct_experts,
 *          struct kvs_run_shape, struct kvs_mem_plan, kvs_mem_plan_compute,
 *          kvs_mem_plan_max_capacity, kvs_mem_plan_format,
 *          struct kvs_step_bytes, kvs_step_bytes_compute,
 *          struct kvs_engine_run_facts, kvs_engine_run_facts_json,
 *          struct kvs_slots, kvs_slots_*, struct kvs_seqs, kvs_seqs_*
 *
 * Units: bytes as counts (uint64_t); capacities and contexts in tokens.
 * Thread safety: every object is used by one thread at a time.
 */
#ifndef KVSCOPE_ENGINE_H
#define KVSCOPE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * model config: a Hugging Face config.json as published (GLM-5 /
 * DeepSeek-V3 style MLA + MoE) */

struct kvs_model_config {
    char name[64];          /* "glm5", "tiny", or the file's name */
    int hidden;             /* hidden_size */
    int layers;             /* num_hidden_layers (decode layers; MTP layers are not counted) */
    int dense_layers;       /* first_k_dense_replace: the first layers have a dense MLP */
    int heads;              /* num_attention_heads */
    int q_lora_rank;
    int kv_lora_rank;       /* 512: the MLA kernels are specialised for 512 + 64 */
    int qk_nope_head_dim;
    int qk_rope_head_dim;   /* 64 */
    int v_head_dim;
    int n_routed_experts;
    int topk;               /* num_experts_per_tok */
    int n_shared_experts;
    int moe_inter;          /* moe_intermediate_size */
    int inter;              /* intermediate_size (dense MLP) */
    int vocab;
    float rms_eps;
    float rope_theta;
    float routed_scale;     /* routed_scaling_factor */
    int norm_topk;          /* norm_topk_prob */
    /* DSA indexer (index_topk > 0 in the config): read and reported, not run */
    int index_topk;
};

/* Softmax scale of absorbed MLA: (qk_nope_head_dim + qk_rope_head_dim)^-0.5. */
KVS_API float kvs_model_softmax_scale(const struct kvs_model_config *c);
/* Layers with a MoE MLP (layers - dense_layers). */
KVS_API int kvs_model_moe_layers(const struct kvs_model_config *c);

/* Parse config.json text. `name` labels the result. Fields this engine needs
 * and cannot default are required; a missing or mistyped one, or a value the
 * kernels cannot run (kv_lora_rank != 512, qk_rope_head_dim != 64, non-sigmoid
 * scoring, group-limited routing, non-interleaved RoPE) is an error that names
 * the field: KVS_STATUS_PARSE for malformed/missing, KVS_STATUS_UNSUPPORTED
 * for valid-but-unrunnable. */
KVS_API enum kvs_status kvs_model_config_parse(const char *json, size_t len, const char *name,
                                               struct kvs_model_config *out,
                                               const struct kvs_logger *lg);

/* Load by bundled name ("glm5", "tiny") or from a config.json path. A name
 * that is neither bundled nor a readable file gives KVS_STATUS_NOT_FOUND. */
KVS_API enum kvs_status kvs_model_config_load(const char *name_or_path,
                                              struct kvs_model_config *out,
                                              const struct kvs_logger *lg);

/* The bundled config text for `name`, or NULL. Bundled at build time from
 * analyzers/data/models/glm5.json and engine/configs/tiny.json. */
KVS_API const char *kvs_model_config_bundled(const char *name);

/* ---------------------------------------------------------------------------
 * KV paths */

enum kvs_kv_path {
    KVS_KV_PATH_FULL_CAST = 0, /* every layer casts the whole FP8 pool to BF16 (the bug) */
    KVS_KV_PATH_ACTIVE_CAST,   /* gather-then-cast the active tokens to BF16 */
    KVS_KV_PATH_FP8_DIRECT,    /* attention reads the FP8 pool */
    KVS_KV_PATH_COUNT_
};
KVS_API const char *kvs_kv_path_name(enum kvs_kv_path p); /* "full-cast", ... */
/* KVS_STATUS_INVALID_ARGUMENT for an unknown name. */
KVS_API enum kvs_status kvs_kv_path_parse(const char *name, enum kvs_kv_path *out);

/* ---------------------------------------------------------------------------
 * expert mapping
 *
 * GLM-5's 256 routed experts per layer do not fit one GPU next to the KV
 * pool. The engine keeps `resident` routed experts per MoE layer (default:
 * top-k) plus the shared ones, and maps each token's k chosen logical experts
 * onto k *distinct* resident ones: resident = logical mod R, probing to the
 * next free resident on a collision within the token. So at batch 1 a token
 * reads exactly k routed experts' weights, as in the real model; the router
 * still decides which resident expert computes which choice. With
 * R >= n_routed the map is the identity. */
struct kvs_expert_map {
    int n_logical;   /* n_routed_experts */
    int topk;
    int resident;    /* routed experts kept per layer, topk <= resident <= n_logical */
    int shared;      /* shared experts, stored after the routed ones */
};

/* resident 0 means topk. KVS_STATUS_INVALID_ARGUMENT when resident < topk
 * or resident > n_logical. */
KVS_API enum kvs_status kvs_expert_map_init(const struct kvs_model_config *c, int resident,
                                            struct kvs_expert_map *out);
/* One token: logical[topk] (distinct, in [0, n_logical)) -> resident[topk]
 * (distinct, in [0, resident)). KVS_STATUS_INVALID_ARGUMENT on an id out of
 * range. */
KVS_API enum kvs_status kvs_expert_map_token(const struct kvs_expert_map *m,
                                             const int32_t *logical, int32_t *resident);
/* Expected number of distinct experts that `batch` tokens choosing k of n
 * uniformly at random touch: n * (1 - (1 - k/n)^batch). */
KVS_API double kvs_expected_distinct_experts(int n, int k, int batch);
/* A few lines saying what was mapped and what it changes at `batch`
 * (expert bytes read per MoE layer: this engine vs the real model under
 * uniform routing). Always NUL-terminates; returns the length it wanted. */
KVS_API size_t kvs_expert_map_describe(const struct kvs_expert_map *m,
                                       const struct kvs_model_config *c, int batch, char *buf,
                                       size_t size);

/* ---------------------------------------------------------------------------
 * memory plan */

/* What one run asks for. */
struct kvs_run_shape {
    enum kvs_kv_path path;
    int batch;
    int64_t context_tokens;   /* sum over sequences of their prefill context */
    int64_t max_context;      /* the longest sequence's prefill context */
    int steps;                /* decode steps (each sequence grows by one token a step) */
    int64_t kv_capacity;      /* pool capacity in tokens, per layer */
    int resident_experts;     /* 0: topk */
    uint64_t workspace_bytes; /* kernel workspaces the GPU engine asks for (attention, MoE, cuBLAS) */
};

struct kvs_mem_plan {
    /* weights, bytes */
    uint64_t embedding, lm_head, attention, dense_mlp, moe_experts, routers, norms;
    uint64_t weights;         /* sum of the above */
    /* per-run memory */
    uint64_t kv_pool;         /* layers * capacity * 576 bytes (FP8) */
    uint64_t kv_scratch;      /* full-cast: capacity * 576 * 2; active-cast: active bound * 576 * 2 */
    uint64_t kv_index;        /* slot tables and token lists (int32) */
    uint64_t activations;     /* per-step buffers, logits included */
    uint64_t workspace;       /* as given in the shape */
    uint64_t total;
    /* what capacity costs: bytes per token of capacity (pool over all layers,
     * plus the full-cast scratch); the rest is fixed */
    uint64_t bytes_per_capacity_token;
    int64_t active_bound;     /* tokens the run needs: context_tokens + batch * steps */
    int resident_experts;     /* routed experts kept per MoE layer */
    int64_t tensors;          /* weight tensors allocated */
};

/* Fill `out` for config `c` and shape `s`. KVS_STATUS_INVALID_ARGUMENT for a
 * shape that cannot run (batch < 1, capacity below the active bound, ...),
 * with the reason logged. */
KVS_API enum kvs_status kvs_mem_plan_compute(const struct kvs_model_config *c,
                                             const struct kvs_run_shape *s,
                                             struct kvs_mem_plan *out,
                                             const struct kvs_logger *lg);
/* The largest KV capacity (tokens) whose plan fits in `budget` bytes, 0 when
 * even no pool fits. Capacity is rounded down to a multiple of 64. */
KVS_API int64_t kvs_mem_plan_max_capacity(const struct kvs_mem_plan *p, int64_t capacity,
                                          uint64_t budget);
/* A table of the plan (GB = 1e9 bytes), one item a line. Always
 * NUL-terminates; returns the length it wanted. */
KVS_API size_t kvs_mem_plan_format(const struct kvs_mem_plan *p, const struct kvs_model_config *c,
                                   const struct kvs_run_shape *s, char *buf, size_t size);

/* ---------------------------------------------------------------------------
 * bytes a decode step moves (HBM traffic model; read + written, like a copy)
 *
 * Weights: every dense weight once, the embedding rows of the batch, the LM
 * head, and in each MoE layer the routed experts the batch touches
 * (`routed_read` of them) plus the shared ones. KV per layer by path:
 *   full-cast    capacity*576 read + capacity*1152 written + active*1152 read
 *   active-cast  active*576 read + active*1152 written + active*1152 read
 *   fp8-direct   active*576 read
 * plus the new rows (batch*576 written) and the token index lists.
 * Activations are small at decode batch sizes and are not counted. */
struct kvs_step_bytes {
    double weights;
    double kv_attention;      /* what attention reads */
    double kv_cast;           /* what the cast / gather-cast reads and writes */
    double kv_other;          /* new rows and index lists */
    double total;
    int routed_read;          /* routed experts read per MoE layer */
};

/* `active` = tokens attended this step, over all sequences (new ones included). */
KVS_API void kvs_step_bytes_compute(const struct kvs_model_config *c, enum kvs_kv_path path,
                                    int batch, int64_t active, int64_t capacity, int routed_read,
                                    struct kvs_step_bytes *out);

/* ---------------------------------------------------------------------------
 * A run's facts as `kvscope engine --trace` writes them into the trace: the
 * top-level object "kvscope.engine" (schema "kvscope.engine/1";
 * docs/engine.md lists the keys), from which kvscope report and compare
 * draw the whole-step roofline. */
struct kvs_engine_run_facts {
    const char *config; /* the model config's name */
    enum kvs_kv_path path;
    int batch;
    int64_t context;     /* prefilled tokens per sequence */
    int64_t kv_capacity; /* tokens per layer */
    int layers;
    int tp; /* ranks (1: one GPU) */
    int graph;
    int steps;                   /* timed steps */
    struct kvs_step_bytes bytes; /* per step by the byte model (a rank's share with tp > 1) */
    double copy_gbps;            /* the copy rate the roofline uses; <= 0: not measured (null) */
    double step_ms;              /* the engine's own median step */
};

/* The object's JSON text into buf (always NUL-terminated when size > 0);
 * returns the length it wanted. Byte counts are JSON integers (rounded),
 * copy_gbps and step_ms numbers. */
KVS_API size_t kvs_engine_run_facts_json(const struct kvs_engine_run_facts *f, char *buf,
                                         size_t size);

/* ---------------------------------------------------------------------------
 * KV slot allocator: a free list of token slots in a pool of `capacity`.
 * A fresh allocator hands out 0, 1, 2, ...; freed slots are reused first
 * (LIFO), so lists scatter over the pool as sequences come and go. */
struct kvs_slots;

KVS_API enum kvs_status kvs_slots_init(struct kvs_slots **out, int64_t capacity);
KVS_API void kvs_slots_free_all(struct kvs_slots *s); /* destroys the allocator */
KVS_API int64_t kvs_slots_available(const struct kvs_slots *s);
KVS_API int64_t kvs_slots_capacity(const struct kvs_slots *s);
/* Shuffle the free list (deterministically from `seed`), as a long-running
 * server's pool looks: later allocations scatter over the whole pool. */
KVS_API void kvs_slots_scatter(struct kvs_slots *s, uint64_t seed);
/* n slots into out[n]; KVS_STATUS_LIMIT (nothing taken) when fewer are free. */
KVS_API enum kvs_status kvs_slots_alloc(struct kvs_slots *s, int64_t n, int32_t *out);
/* Return slots; KVS_STATUS_INVALID_ARGUMENT (nothing returned) for a slot out
 * of range or not allocated (double free). */
KVS_API enum kvs_status kvs_slots_release(struct kvs_slots *s, int64_t n, const int32_t *slots);

/* ---------------------------------------------------------------------------
 * sequences: B sequences, each a list of KV slots (its context), stored as a
 * [batch, max_len] table so that a decode step appends in place. */
struct kvs_seqs {
    int batch;
    int max_len;              /* per-sequence bound: longest context + steps */
    int32_t *len;             /* [batch] tokens held */
    int32_t *slot;            /* [batch, max_len] slot of each held token */
};

/* Allocate context[b] slots for each sequence (prefill) with room for
 * `steps` more tokens each. KVS_STATUS_LIMIT when the pool is too small. */
KVS_API enum kvs_status kvs_seqs_init(struct kvs_seqs *q, struct kvs_slots *slots, int batch,
                                      const int64_t *context, int steps);
/* Give every sequence one more slot (the token decoded this step): new_slot[b]
 * is its slot, pos[b] its position (= tokens held before). KVS_STATUS_LIMIT
 * when a sequence is full or the pool is empty (nothing changed). */
KVS_API enum kvs_status kvs_seqs_append(struct kvs_seqs *q, struct kvs_slots *slots,
                                        int32_t *new_slot, int32_t *pos);
/* Total tokens held. */
KVS_API int64_t kvs_seqs_tokens(const struct kvs_seqs *q);
/* CSR token list: seq_start[batch+1], tokens[kvs_seqs_tokens()]. */
KVS_API void kvs_seqs_csr(const struct kvs_seqs *q, int32_t *seq_start, int32_t *tokens);
/* Release every slot and the tables. */
KVS_API void kvs_seqs_free(struct kvs_seqs *q, struct kvs_slots *slots);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ENGINE_H */
