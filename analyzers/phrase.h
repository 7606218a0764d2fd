/* phrase.h — the words of the analysis, in one place: every finding's
 * message, evidence and fix from the figures its detector computed, and the
 * names sentences use (a group's op with its dims and dtypes, a copy/cast
 * group's role and its shape match's label). The detectors (findings.c,
 * kv_read.c, host_blocking.c, host_op.c, gemm_bound.c, match.c) compute a
 * figures struct and write no English; rewording a finding touches this
 * file only (docs/analysis.md says what each figure is).
 *
 * defines: struct kvs_fig_full_buffer, struct kvs_fig_low_efficiency,
 *          struct kvs_fig_gpu_idle, struct kvs_fig_exposed_comm,
 *          enum kvs_wait_kind, struct kvs_fig_host_blocking,
 *          struct kvs_fig_host_op, struct kvs_fig_gemm_op, struct kvs_fig_gemm_bound,
 *          struct kvs_fig_reader, struct kvs_fig_full_read, kvs_phrase_full_buffer,
 *          kvs_phrase_low_efficiency, kvs_phrase_gpu_idle, kvs_phrase_exposed_comm,
 *          kvs_phrase_host_blocking, kvs_phrase_host_op, kvs_phrase_gemm_bound,
 *          kvs_phrase_full_read, kvs_phrase_active_from, enum kvs_active_from, kvs_phrase_per_gpu, kvs_phrase_attention_desc,
 *          kvs_phrase_gemm_desc, enum kvs_row_kind, kvs_phrase_row_meaning, kvs_phrase_role, kvs_phrase_match_label,
 *          kvs_findings_human_bytes, kvs_findings_group_desc, kvs_findings_group_name
 *
 * Each kvs_phrase_<finding> sets fd->message, fd->evidence and fd->fix (in
 * the arena) and returns KVS_STATUS_OK, or KVS_STATUS_NO_MEMORY when one of
 * them could not be made. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_PHRASE_H
#define KVS_ANALYZERS_PHRASE_H

#include "tables.h"

/* ---- kv_full_buffer_cast (findings.c) */
struct kvs_fig_full_buffer {
    const char *op;           /* the group's name in a sentence */
    const char *group;        /* its op with dims and dtypes */
    const char *label;        /* the shape match's label, or NULL */
    bool cast;                /* a cast (else a copy) */
    bool at_least;            /* bytes a lower bound: the source dtype is unknown */
    bool per_layer;           /* called once per layer ... */
    int layers;               /* ... of these layers */
    bool layers_inferred;     /* counted from layer ranges */
    double tokens;            /* the buffer's capacity */
    double calls_per_step, bytes_per_step, needed_bytes_per_step;
    double gpu_ms_per_step, saving_ms, ms_per_call, achieved_gbps, gpu_fraction;
    int64_t active_tokens, calls, bytes_per_call;
    const char *src;          /* the cache's dtype, short ("Float8_e4m3fn"), src_len bytes */
    size_t src_len;
};
enum kvs_status kvs_phrase_full_buffer(struct kvs_arena *ar, const struct kvs_fig_full_buffer *f,
                                       struct kvs_finding *fd);

/* ---- low_bandwidth_efficiency (findings.c) */
struct kvs_fig_low_efficiency {
    const char *op, *group;
    const char *kernel;       /* its top kernel's full name, or NULL */
    const char *device;       /* or NULL */
    double achieved_gbps, efficiency, peak_gbps, copy_gbps; /* copy_gbps 0: not measured */
    double gpu_ms_per_step, saving_ms, good_efficiency, ms_per_call;
    int64_t gpu_calls, bytes_per_call;
    bool full_read;           /* it copies a whole KV buffer (kv_full_buffer_read) */
    bool repeat_kv;           /* [B,Hkv,n_rep,S,D]: repeat_kv's copy */
    bool fp8, cast;           /* an FP8 tensor converted; the dtypes differ */
};
enum kvs_status kvs_phrase_low_efficiency(struct kvs_arena *ar, const struct kvs_fig_low_efficiency *f,
                                          struct kvs_finding *fd);

/* ---- gpu_idle (findings.c) */
struct kvs_fig_gpu_idle {
    int gpus;                 /* the step's GPUs */
    bool steps;               /* per step (else over the traced span) */
    bool sparse;              /* few launches for the idle time: CPU work between them */
    bool graphs;              /* most of the work launched from CUDA graphs */
    bool with_stack;          /* recorded with the profiler's Python stacks */
    double busy_fraction, busy_ms, wall_ms, idle_ms; /* wall_ms less the host-wait */
    double launches_per_step, idle_us_per_launch, us_per_launch, median_us;
    double host_wait_ms, in_op_ms; /* left to host_blocking, host_op_bound */
    size_t graphed, activities; /* of the activities counted, graph-launched */
    size_t trace_activities;  /* the trace's GPU activities (none in a step) */
};
enum kvs_status kvs_phrase_gpu_idle(struct kvs_arena *ar, const struct kvs_fig_gpu_idle *f,
                                    struct kvs_finding *fd);

/* ---- exposed_comm (findings.c) */
struct kvs_fig_exposed_comm {
    int gpus;
    bool steps;
    double exposed_ms, comm_ms, wall_ms;
};
enum kvs_status kvs_phrase_exposed_comm(struct kvs_arena *ar, const struct kvs_fig_exposed_comm *f,
                                        struct kvs_finding *fd);

/* ---- host_blocking (host_blocking.c) */
enum kvs_wait_kind {
    KVS_WAIT_NONE = 0,
    KVS_WAIT_SYNC,            /* stream / device / event synchronize */
    KVS_WAIT_MEMCPY,          /* a synchronous copy */
    KVS_WAIT_MEMSET,          /* a synchronous memset */
    KVS_WAIT_ASYNC_COPY,      /* an async copy that blocked: pageable host memory */
    KVS_WAIT_KIND_COUNT_
};
struct kvs_fig_host_blocking {
    bool steps;
    double blocked_ms, step_ms; /* per step (of the span) */
    const char *call;         /* the largest call's name */
    enum kvs_wait_kind kind;  /* ... and its kind */
    enum kvs_wait_kind main_kind; /* the kind holding the most blocked time: the fix's */
    double call_ms, call_at_ms, call_idle_ms; /* its time, start in its step, idle part */
    int64_t call_step;        /* its step's index, -1 none */
    long long corr;           /* its correlation id */
    size_t calls, windows_with, windows;
};
enum kvs_status kvs_phrase_host_blocking(struct kvs_arena *ar, const struct kvs_fig_host_blocking *f,
                                         struct kvs_finding *fd);

/* ---- host_op_bound (host_op.c) */
struct kvs_fig_host_op {
    bool steps;
    const char *op;
    double idle_ms, step_ms, idle_ms_per_call, cpu_ms_per_call;
    int64_t calls;
    size_t windows_with, windows;
};
enum kvs_status kvs_phrase_host_op(struct kvs_arena *ar, const struct kvs_fig_host_op *f,
                                   struct kvs_finding *fd);

/* ---- gemm_memory_bound (gemm_bound.c) */
struct kvs_fig_gemm_op {
    const char *op;           /* its full name */
    double rows, weight_bytes, calls_per_step, ms_per_step, achieved_gbps, roof_fraction;
};
struct kvs_fig_gemm_bound {
    size_t shapes;            /* GEMM shapes bound by memory */
    double calls_per_step, max_rows, ms, busy_ms, weight_bytes, achieved_gbps;
    double peak_gbps, max_intensity, ridge, saving_ms;
    const char *device;       /* or NULL */
    const char *precision;    /* the largest's weights ("bf16"), or NULL */
    struct kvs_fig_gemm_op top[3]; /* the largest, by GPU time */
    size_t ntop;
};
enum kvs_status kvs_phrase_gemm_bound(struct kvs_arena *ar, const struct kvs_fig_gemm_bound *f,
                                      struct kvs_finding *fd);

/* ---- kv_full_buffer_read (kv_read.c) */
/* where a reader's count of the tokens in use comes from */
enum kvs_active_from {
    KVS_ACTIVE_UNKNOWN = 0,
    KVS_ACTIVE_CONTEXT_OPTION,  /* --context */
    KVS_ACTIVE_ENGINE_CONTEXT,  /* the trace's kvscope.engine context */
    KVS_ACTIVE_SEEN_KEYS,       /* the largest token count along the keys' sequence dim */
    KVS_ACTIVE_SEEN_ROWS,       /* the largest token count seen with the same rows */
    KVS_ACTIVE_FROM_COUNT_
};
struct kvs_fig_reader {
    const char *desc;         /* the op with its dims */
    const char *op;           /* its name */
    double calls_per_step, bytes_per_step, ms_per_call, gbps;
};
struct kvs_fig_full_read {
    const struct kvs_fig_reader *readers; /* most GPU time first */
    size_t nreaders;
    int64_t capacity, active; /* active 0: unknown */
    bool mixed;               /* the readers' active counts differ: "up to" */
    enum kvs_active_from active_from; /* where the active count comes from */
    double bytes_per_step, needed_bytes_per_step, gpu_ms_per_step, saving_ms, busy_ms;
    bool capacity_given;      /* --kv-capacity */
    bool capacity_attention;  /* an attention's keys set it ... */
    int64_t capacity_steps;   /* ... in this many steps ... */
    size_t steps;             /* ... of these */
    bool any_attention, any_copy, any_repeat, any_expand; /* kinds of reader, for the fix */
};
enum kvs_status kvs_phrase_full_read(struct kvs_arena *ar, const struct kvs_fig_full_read *f,
                                     struct kvs_finding *fd);
/* the words for where an active count comes from ("--context", ...); NULL
 * for KVS_ACTIVE_UNKNOWN */
const char *kvs_phrase_active_from(enum kvs_active_from from);
/* a reader's desc: "sdpa (keys [1,8,8192,64], values [...], queries 1)" */
const char *kvs_phrase_attention_desc(struct kvs_arena *ar, const char *op, const int64_t *keys,
                                      const int64_t *values, int64_t queries);
/* "aten::mm [8192,512] x [512,4096] (a GEMM over every slot)" */
const char *kvs_phrase_gemm_desc(struct kvs_arena *ar, const char *op, const struct kvs_shape *s);

/* ---- every finding: its time per GPU and within the step (findings.c) */
/* appends to fd->message what per_gpu did to fd->gpu_ms_per_step: divided
 * over fd->gpus GPUs, capped at the step's time */
enum kvs_status kvs_phrase_per_gpu(struct kvs_arena *ar, bool steps, bool capped,
                                   struct kvs_finding *fd);

/* ---- names of copy/cast groups (match.c) */
/* what a row of a KV buffer is by the model's dimensions (match.c decides) */
enum kvs_row_kind {
    KVS_ROW_NONE = 0,
    KVS_ROW_LATENT_ROPE,      /* kv_lora_rank + qk_rope_head_dim: MLA's latent with its rope part */
    KVS_ROW_LATENT,           /* kv_lora_rank */
    KVS_ROW_INDEXER,          /* index_head_dim: the sparse-attention indexer's keys */
    KVS_ROW_KV_HEADS,         /* num_key_value_heads x head_dim */
    KVS_ROW_K_AND_V           /* K and V together: 2 x num_key_value_heads x head_dim */
};
/* the model's name for such a row ("kv_lora_rank 512 + qk_rope_head_dim
 * 64"), in the arena; NULL for KVS_ROW_NONE or out of memory */
const char *kvs_phrase_row_meaning(struct kvs_arena *ar, enum kvs_row_kind k, const struct kvs_model *m);
/* a group's role: "cast BFloat16<-Float8_e4m3fn rows of kv_lora_rank 512 + ..."
 * (rows: the model's name for them, else the first tensor's dims with the
 * token dim as '*'), NULL when out of memory */
const char *kvs_phrase_role(struct kvs_arena *ar, const char *kind, const struct kvs_shape *s,
                            const char *row_meaning);
/* a shape match's label: what the token dim is (the capacity given, a
 * buffer inferred, or tokens) x what a row is (the model's name for it, or
 * "row N") */
enum kvs_token_dim { KVS_TOKENS_CAPACITY, KVS_TOKENS_INFERRED, KVS_TOKENS_PLAIN };
const char *kvs_phrase_match_label(struct kvs_arena *ar, enum kvs_token_dim tokens,
                                   const char *row_meaning, int64_t row);

/* ---- the words findings share */
/* "1.23 GB" into buf */
const char *kvs_findings_human_bytes(char *buf, size_t n, double b);
/* a group's op with its dims and dtypes */
const char *kvs_findings_group_desc(struct kvs_arena *ar, const struct kvs_intern *strings,
                                    const struct kvs_group_acc *g);
/* a group's name in a sentence: its op, or for an activity no op launched
 * the kernel's short name (in the arena) */
const char *kvs_findings_group_name(struct kvs_arena *ar, const struct kvs_intern *strings,
                                    const struct kvs_group_acc *g);

#endif
