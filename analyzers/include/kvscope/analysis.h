/* kvscope/analysis.h — the one analysis of a trace that reports and compare
 * consume.
 *
 * defines: struct kvs_analysis (and its parts), struct kvs_analysis_options,
 *          kvs_analysis_options_init, kvs_analyze_file, kvs_analyze_memory,
 *          kvs_analysis_free,
 *          kvs_category_name, KVS_LAUNCH_BOUND_BUSY, enum kvs_step_kind,
 *          struct kvs_engine_info, struct kvs_step_roofline, struct kvs_op_roofline,
 *          struct kvs_collective, enum kvs_figure_kind, struct kvs_figure, struct kvs_figures
 *
 * kvs_analyze_file() streams a Chrome-trace JSON file (PyTorch/Kineto's or
 * kvscope's own; plain, .gz, or "-" for stdin), links GPU activity to the ops
 * that launched it, groups copy/cast work by (op, input dims, input dtypes),
 * matches shapes to the model's dimensions, computes HBM-roofline efficiency
 * and per-step figures, and ranks findings. Everything a renderer prints is
 * in the struct: renderers format, they never recompute.
 *
 * Units: times in milliseconds (`_ms`) unless named `_us`; bytes as counts;
 * bandwidth in GB/s (1e9 bytes per second); fractions in [0, 1].
 * Strings are owned by the analysis and live until kvs_analysis_free().
 * Thread safety: one analysis per call; analyses are independent.
 */
#ifndef KVSCOPE_ANALYSIS_H
#define KVSCOPE_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * options */

struct kvs_hf_config; /* kvscope/hf_config.h */

struct kvs_analysis_options {
    const char *model;       /* config.json path or bundled name (glm5, deepseek-v3, ...); NULL: infer */
    int64_t kv_capacity;     /* KV capacity in tokens; 0: unknown (inferred when possible) */
    const char *device;      /* device name for the peak table; NULL: from deviceProperties */
    double peak_gbps;        /* overrides the device table when > 0 */
    const char *step_regex;  /* step ranges; NULL: "ProfilerStep#N", then NVTX/user "step" ranges */
    int batch;               /* sequences per step, for tokens/s; 0: unknown */
    const char *kv_dtype;    /* the KV cache's dtype ("fp8", "bf16", "c10::Float8_e4m3fn", ...):
                                the source of a cast kernel sized from its launch whose name does
                                not say it; NULL: unknown (its bytes are then a lower bound) */
    const char *graph_capture; /* a profile of the CUDA/HIP graph's capture (ops with shapes,
                                  launches recorded while capturing): replayed kernels get the
                                  ops they were captured under; NULL: none */
    struct kvs_logger log;   /* warnings (truncation, unknown device, ...) go here */
    kvs_progress_fn progress;
    void *progress_user;
    /* A config already read (kvscope/hf_config.h), used instead of reading
     * `model` again (which then only names it): a pipe can be read once,
     * and several traces share one config. NULL: read `model`. */
    const struct kvs_hf_config *model_config;
    /* Tokens in use per sequence (prompt + generated) while the trace ran;
     * 0: unknown (taken from the trace where it says, else unknown). Sizes
     * the bytes a full-buffer read needs. */
    int64_t context;
};

/* Defaults: everything unknown / inferred, logger = stderr. */
KVS_API void kvs_analysis_options_init(struct kvs_analysis_options *opt);

/* ---------------------------------------------------------------------------
 * the analysis */

/* Where GPU time goes, for the per-step stacked chart. Idle is step wall time
 * minus GPU busy time and is not a category of activity. */
enum kvs_category {
    KVS_CAT_COPY_CAST = 0, /* copies, casts, memcpy, memset */
    KVS_CAT_GEMM,          /* matmuls (cuBLAS/cuBLASLt/nvjet/cutlass, ...) */
    KVS_CAT_ATTENTION,     /* attention kernels (flash, mla, sdpa, ...) */
    KVS_CAT_COMM,          /* communication (nccl, all-reduce, ...) */
    KVS_CAT_OTHER,
    KVS_CAT_COUNT_
};
KVS_API const char *kvs_category_name(enum kvs_category cat); /* "copy/cast", "GEMM", ... */

/* What a step computes, where its range's name says it (vLLM, SGLang). */
enum kvs_step_kind {
    KVS_STEP_UNKNOWN = 0,
    KVS_STEP_DECODE,       /* every request generates one token */
    KVS_STEP_PREFILL,      /* prompts only (SGLang EXTEND, vLLM context requests alone) */
    KVS_STEP_MIXED,        /* prompts and decoding requests in one step */
    KVS_STEP_KIND_COUNT_
};
/* its name: kvs_step_kind_name() in kvscope/units.h */

struct kvs_trace_info {
    const char *path;            /* as given ("-" for stdin) */
    uint64_t bytes;              /* bytes of JSON read (uncompressed) */
    uint64_t events;             /* entries of traceEvents read */
    bool truncated;              /* the input ended early: analysis covers what was read */
    const char *device;          /* device name used for the peak ("NVIDIA H200"), or NULL */
    double peak_gbps;            /* HBM peak used for efficiency; 0 when unknown */
    const char *peak_source;     /* "device table", "--peak-gbps", or "unknown" */
    double copy_gbps;            /* measured device-to-device copy rate where known, else 0 */
    const char *producer;        /* "pytorch-kineto", "kvscope", "unknown" */
    int rank;                    /* distributed rank, -1 when not recorded */
    int world_size;              /* 0 when not recorded */
    /* activity counts */
    uint64_t ops;                /* cpu_op events */
    uint64_t kernels;            /* kernel events */
    uint64_t memcpys, memsets;
    int gpu_devices;             /* devices with >= KVS_DEVICE_MIN_SHARE of the busiest one's GPU
                                    time; busy fractions are per device (of devices x wall time) */
    uint64_t gpu_unlinked;       /* GPU activities linked to no op */
    uint64_t graph_launched;     /* GPU activities started by a CUDA/HIP graph launch: their ops
                                    ran at capture, so no shapes describe them */
    uint64_t dropped_records;    /* from a kvscope capture's metadata; 0 otherwise */
    uint64_t capture_aligned;    /* graph-replayed kernels given the op they were captured under
                                    (options.graph_capture), 0 without a capture */
    bool with_stack;             /* recorded with with_stack: the profiler's Python stack capture
                                    inflates CPU time (gaps between launches read longer) */
    double peak_bf16_tflops;     /* the device's dense BF16/FP16 tensor peak (device table), TFLOP/s;
                                    0 when unknown */
    double peak_fp8_tflops;      /* its dense FP8 tensor peak; 0 when unknown or none */
    /* The kvscope JSON report this analysis was read from, as its rank's
     * kvscope.rank/1 summary (kvscope/rank_summary.h): then only what the
     * view across ranks needs is filled in (trace identity, steps and
     * their collectives, findings' ids and figures); NULL: read from a trace. */
    const char *report_path;
};

/* Below this GPU busy fraction of the step, the CPU issuing work, not the
 * GPU doing it, sets the step's length (launch-bound): the gpu_idle finding
 * fires below it and compare's verdict calls such a step launch-bound. */
#define KVS_LAUNCH_BOUND_BUSY 0.6

/* A device counts as one of the step's GPUs (trace.gpu_devices, the busy
 * fraction's devices) only with at least this share of the busiest device's
 * GPU time; fewer are stray device ids, said in a warning. */
#define KVS_DEVICE_MIN_SHARE 0.01

/* exposed_comm: communication with no other GPU work beside it for at least
 * this share of the step (docs/analysis.md) */
#define KVS_EXPOSED_COMM_SHARE 0.2

struct kvs_steps {
    int64_t count;               /* 0: no step markers (figures are trace totals) */
    const char *source;          /* how they were found: "serving-engine step ranges",
                                    "ProfilerStep#N", "step ranges", "--step-regex"; NULL */
    double mean_ms;              /* mean step wall time (the CPU range) */
    double mean_time_ms;         /* mean step time (kvs_step.time_ms) */
    double gpu_ms_per_step;      /* mean GPU busy time (union of activity intervals) */
    double gpu_busy_fraction;    /* gpu_ms_per_step / mean_time_ms (per device) */
    double tokens_per_s;         /* the steps' tokens (from their names) over their time; else
                                    batch * 1000 / mean_time_ms when --batch is given; else 0 */
    double total_gpu_ms;         /* busy time over the whole trace (or all steps) */
    /* communication (NCCL/RCCL kernels, category comm) against the rest, per
     * step (trace totals without steps); each is the union of its activity
     * intervals, so overlap = comm + compute - gpu busy: communication hidden
     * under computation. Exposed communication = comm - overlap. */
    double comm_ms_per_step;
    double compute_ms_per_step;
    double overlap_ms_per_step;
    int64_t outliers;            /* steps left out of their kind's figures (kvs_step.outlier) */
    bool gpu_lags;               /* mean_time_ms is over mean_ms by more than 0.1%: the GPU work
                                    outlasts the CPU ranges, a step takes as long as its GPU work */
};

struct kvs_step {
    int64_t index;               /* N of ProfilerStep#N, or the ordinal */
    const char *name;
    enum kvs_step_kind kind;     /* from the name (vLLM, SGLang ranges); else unknown */
    int64_t batch;               /* requests, from the name; 0 unknown */
    int64_t tokens;              /* tokens computed, from the name; 0 unknown */
    double start_us;             /* trace clock */
    double wall_ms;              /* the step's CPU range */
    double gpu_span_ms;          /* first start to last end of the GPU work it launched; 0 none */
    double time_ms;              /* the larger of wall_ms and gpu_span_ms: when the GPU lags the
                                    CPU (CUDA graphs) the step takes as long as its GPU work */
    double gpu_busy_ms;          /* union of the GPU work the step launched, summed over devices */
    double busy_fraction;        /* gpu_busy_ms / (time_ms x trace.gpu_devices) */
    double idle_ms;              /* time_ms x trace.gpu_devices less gpu_busy_ms, not below 0:
                                    the devices' idle time within the step's time, the
                                    complement of busy_fraction */
    const char *outlier;         /* "warm-up" (the first of its kind) or "outlier": its time is
                                    over 1.5 x the median of its kind (3+ steps); else NULL */
    double category_ms[KVS_CAT_COUNT_]; /* GPU time by category of the work it launched */
    double comm_busy_ms;         /* union of communication activity within the step */
    double compute_busy_ms;      /* union of all other activity within the step */
    double exposed_comm_ms;      /* gpu_busy_ms - compute_busy_ms, not below 0: communication
                                    with no other GPU work beside it */
    double end_us;               /* start_us + time_ms: where the step's time ends */
};

/* The steps of one kind, outliers (kvs_step.outlier) left out of the means. */
struct kvs_step_kind_stat {
    enum kvs_step_kind kind;
    int64_t count;               /* steps of this kind, outliers included */
    int64_t outliers;            /* left out of the figures below */
    double mean_ms;              /* mean step time (time_ms) */
    double gpu_ms_per_step;
    double busy_fraction;        /* per device */
    double batch;                /* mean requests per step, 0 unknown */
    double tokens_per_step;      /* 0 unknown */
    double tokens_per_s;         /* tokens over time, 0 unknown */
};

/* What kvscope's engine wrote about its own run: the trace's top-level
 * "kvscope.engine" object (schema kvscope.engine/1, docs/report-json.md).
 * present is false for other traces. A member the object lacks, or one out
 * of range, is unknown: NULL for strings, 0 for numbers, -1 for graph. */
struct kvs_engine_info {
    bool present;
    const char *config;          /* "glm5" */
    const char *kv_path;         /* "full-cast", "fp8-direct", "active-cast" */
    int64_t batch, context, kv_capacity, layers, tp, steps;
    int graph;                   /* 1: CUDA graph, 0: eager, -1: unknown */
    double bytes_per_step;       /* bytes moved per step by the engine's byte model */
    double weight_bytes_per_step, kv_bytes_per_step; /* its two parts */
    double copy_gbps;            /* device-to-device copy rate the engine measured */
    double step_ms;              /* the engine's own median step time */
};

/* The whole decode step against the HBM roofline: the bytes the engine's
 * byte model moves per step over the step time (docs/analysis.md). Known
 * when the trace carries kvscope.engine with bytes_per_step and a step time
 * (the trace's steps, else the engine's step_ms). */
struct kvs_step_roofline {
    bool known;
    double bytes_per_step;
    double step_ms;              /* the trace's mean step wall time, else the engine's */
    const char *step_source;     /* "trace" or "engine" */
    double achieved_gbps;        /* bytes_per_step / step time */
    double peak_fraction;        /* achieved / trace.peak_gbps; NAN when the peak is unknown */
    double copy_gbps;            /* the engine's measured copy rate, else trace.copy_gbps; 0: unknown */
    double copy_fraction;        /* achieved / copy_gbps; NAN when unknown */
};

/* What a group's shape was matched to. */
struct kvs_match {
    const char *label;           /* "KV capacity (tokens) x kv_lora_rank 512 + qk_rope_head_dim 64" */
    int64_t capacity_tokens;     /* the token dim when it is a KV capacity, else 0 */
    int64_t row_dim;             /* the per-token row width (576), else 0 */
    bool per_layer;              /* calls per step == number of layers */
    bool inferred;               /* matched without a model config (heuristic) */
};

/* One tensor's dims as recorded by the launching op (rank <= 8 kept). */
struct kvs_dims {
    int rank;
    int64_t d[8];
};

struct kvs_group {
    const char *op;              /* "aten::copy_", or the activity name for bare memcpy/memset */
    const char *kernel;          /* the kernel with the most GPU time in the group */
    int ntensors;                /* the op's inputs, in its own order (copy_: destination first) */
    const struct kvs_dims *tensor_dims;  /* ntensors entries (as text: kvs_dims_json, kvscope/units.h) */
    const char *const *tensor_dtypes;    /* ntensors entries, "" where none */
    const char *role;            /* pairing key for compare: copy/cast kind + dtype pair + the
                                    rows' matched meaning ("cast BFloat16<-Float8_e4m3fn
                                    [*,1,576]"), independent of the token count and op name */
    int64_t calls;               /* op calls (or activities for bare memcpy/memset) */
    double calls_per_step;
    double gpu_ms;               /* GPU time of the kernels/activities it launched (sum) */
    double gpu_ms_per_step;
    double gpu_fraction;         /* the union of its activities' intervals over the total GPU
                                    busy time (overlap on several streams counts once): <= 1 */
    int64_t bytes_per_call;      /* bytes read + written; <= 0 unknown */
    const char *sized_from;      /* what bytes_per_call comes from: "dims" (the op's recorded
                                    shapes), "activity bytes" (memcpy/memset), "launch" (grid x
                                    block and the kernel's name: no shapes recorded), NULL unknown */
    int bytes_bound;             /* 0: bytes_per_call is exact; -1: a lower bound (a cast whose
                                    source dtype is not known: 1 byte per element counted);
                                    1: an upper bound (the element count known to a range) */
    int64_t launch_elements_min; /* sized_from "launch": elements per call the grid x block allow */
    int64_t launch_elements_max; /* (min == max when rows x row factor it exactly), else 0 */
    double achieved_gbps;        /* bytes / GPU time */
    double efficiency;           /* achieved / peak; 0 when the peak is unknown or host_link */
    bool host_link;              /* its GPU time is mostly host<->device copies (HtoD, DtoH):
                                    the host link (PCIe, NVLink-C2C) bounds them, not HBM, so
                                    they are not judged against the HBM peak */
    bool over_peak;              /* bytes known, not host_link, efficiency over 1 by more than a
                                    shown 100.0% rounds off: the bytes did not all come from HBM
                                    (the L2 cache held them), or the peak is wrong */
    bool has_match;
    struct kvs_match match;      /* valid when has_match */
};

struct kvs_kernel_stat {
    const char *name;
    int64_t calls;
    double gpu_ms;               /* sum of durations */
    double gpu_fraction;         /* union of its intervals over total GPU busy time: <= 1 */
    enum kvs_category category;
    const char *family;          /* its name's family ("hipblaslt", "flash_attention", "nccl",
                                    "copy_cast", ...: analyzers/data/kernel_families.json), "other"
                                    when none; category can differ for a pointwise kernel
                                    ("elementwise") that a copy op launched (copy/cast) */
};

/* GPU time of one kernel family (of activities: a pointwise kernel that a
 * copy, attention or matmul op launched counts to copy_cast, attention, gemm). */
struct kvs_family_stat {
    const char *family;
    enum kvs_category category;
    int64_t activities;          /* in the steps (whole trace without steps) */
    double gpu_ms;               /* sum of durations of those */
    double gpu_ms_per_step;      /* gpu_ms / steps (= gpu_ms without steps) */
};

/* One op group against the device's roofline (docs/analysis.md, "Per-op
 * roofline"): an op name + its recorded shapes that launched GPU work, or
 * GPU work no op launched, by its activity's name. Per-call figures are of
 * the calls that launched GPU work; rates are per call over its GPU time
 * (durations summed). */
struct kvs_op_roofline {
    const char *op;              /* "aten::mm", "kvs::mla_decode"; the activity name when no op */
    const char *family;          /* "matmul", "attention", "embedding", "norm", "elementwise",
                                    "reduction", "copy"; NULL: no formula for it (unknown) */
    const char *kernel;          /* the kernel with the most GPU time in it */
    int ntensors;
    const struct kvs_dims *tensor_dims;  /* ntensors entries, as for kvs_group */
    const char *const *tensor_dtypes;
    int64_t calls;               /* calls that launched GPU work (activities when no op) */
    double calls_per_step;
    double gpu_ms, gpu_ms_per_step;
    double gpu_fraction;         /* the union of its activities over GPU busy time: <= 1 */
    double us_per_call;          /* GPU time per call */
    double bytes_per_call;       /* read + written; < 0 unknown */
    double flops_per_call;       /* < 0: unknown, or not defined (bytes-only families) */
    const char *sized_from;      /* "dims", or a copy's group's ("activity bytes", "launch"); NULL */
    const char *precision;       /* "fp8", "bf16", "fp16", "fp32": the inputs of a matmul or
                                    attention, whose tensor peak is its compute roof; NULL */
    double achieved_gbps;        /* bytes_per_call / us_per_call; NAN unknown */
    double achieved_tflops;      /* flops_per_call / us_per_call; NAN unknown */
    double intensity;            /* FLOP per byte; NAN unknown */
    double peak_tflops;          /* the compute roof for its precision; 0 unknown */
    const char *bound;           /* "memory" or "compute" on this device; NULL unknown */
    double roof_fraction;        /* achieved over the bound roof (bandwidth x intensity, or the
                                    compute peak; bytes-only: achieved GB/s over the peak); NAN */
};

/* One communication kernel (category comm) that a step launched: the
 * collectives kvs_multirank() (kvscope/multirank.h) lines up across ranks. */
struct kvs_collective {
    int32_t step;                /* index into kvs_analysis.step */
    const char *name;
    double start_us;             /* trace clock, as kvs_step.start_us */
    double dur_ms;
    int32_t name_index;          /* name's index in kvs_analysis.collective_names */
};

enum kvs_severity { KVS_SEV_INFO = 0, KVS_SEV_WARN, KVS_SEV_HIGH };

/* One figure of a finding: a number (not finite: unknown), an integer, a
 * yes/no, a string (NULL: none), or a list of objects each a list of
 * figures (kv_full_buffer_read's readers). */
enum kvs_figure_kind {
    KVS_FIGURE_NUMBER = 0,
    KVS_FIGURE_INTEGER,
    KVS_FIGURE_BOOL,
    KVS_FIGURE_STRING,
    KVS_FIGURE_LIST
};
struct kvs_figure;
struct kvs_figures {
    size_t n;
    const struct kvs_figure *v;
};
struct kvs_figure {
    const char *name;
    enum kvs_figure_kind kind;
    double number;               /* KVS_FIGURE_NUMBER */
    int64_t integer;             /* KVS_FIGURE_INTEGER; KVS_FIGURE_BOOL: 0 or 1 */
    const char *string;          /* KVS_FIGURE_STRING */
    size_t nlist;                /* KVS_FIGURE_LIST: nlist objects */
    const struct kvs_figures *list;
};

struct kvs_finding {
    const char *id;              /* "kv_full_buffer_cast", "low_bandwidth_efficiency", "gpu_idle", ... */
    enum kvs_severity severity;
    const char *message;         /* one sentence with the numbers */
    const char *evidence;        /* what in the trace shows it */
    const char *fix;             /* what to do about it */
    double gpu_ms_per_step;      /* recoverable GPU time per step (ranking key) */
    double bytes_per_step;       /* bytes moved per step by the culprit, 0 if n/a */
    double needed_bytes_per_step;/* bytes that were actually needed, 0 if unknown */
    int group;                   /* index into groups, -1 if none */
    /* kv_full_buffer_cast and kv_full_buffer_read: the buffer's capacity and
     * the tokens in use (0 unknown); kv_full_buffer_read: the ops that read
     * the buffer, each with its dims, most GPU time first (nops 0 otherwise) */
    int64_t capacity_tokens;
    int64_t active_tokens;
    size_t nops;
    const char *const *ops;
    /* The step's GPUs (trace.gpu_devices) whose time gpu_ms_per_step is
     * shared by: several when the culprit ran on several (a model split
     * over GPUs in one process) — the figure is then per GPU, its total over
     * this; 1 otherwise (host-side findings: the CPU's time). The figure is
     * never over the mean step time (docs/analysis.md). */
    int gpus;
    /* The figures the finding's detector computed, by name: what its
     * message, evidence and fix are written from (docs/report-json.md,
     * findings[].figures, lists them per id) — before the per-GPU division
     * and the cap above, which gpu_ms_per_step and gpus say. */
    struct kvs_figures figures;
};

struct kvs_analysis {
    struct kvs_trace_info trace;
    struct kvs_steps steps;
    size_t nstep;
    const struct kvs_step *step;         /* nstep entries */
    size_t nkind;
    const struct kvs_step_kind_stat *kinds; /* one per kind present, in enum order */
    size_t ngroup;
    const struct kvs_group *groups;      /* sorted by gpu_ms, descending */
    size_t nkernel;
    const struct kvs_kernel_stat *kernels; /* sorted by gpu_ms, descending */
    size_t nfamily;
    const struct kvs_family_stat *families; /* families with GPU time, by gpu_ms, descending */
    size_t ncollective;
    const struct kvs_collective *collectives; /* by step, then start; none without steps */
    size_t nfinding;
    const struct kvs_finding *findings;  /* ranked by gpu_ms_per_step, descending */
    double category_ms[KVS_CAT_COUNT_];  /* GPU time by category over the steps (or trace) */
    double category_share[KVS_CAT_COUNT_]; /* each category_ms over their sum; all 0 when none */
    const char *model;                   /* model name used for matching, or NULL */
    int num_layers;                      /* from the model config, 0 when unknown */
    struct kvs_engine_info engine;       /* kvscope's engine's own facts, when it made the trace */
    struct kvs_step_roofline roofline;   /* the whole step against the HBM roofline */
    size_t nop;
    const struct kvs_op_roofline *ops;   /* every op group against the roofline, by gpu_ms,
                                            descending */
    size_t ncollective_name;
    const char *const *collective_names; /* the collectives' distinct names, in order of first use */
};

/* Analyse one trace. On KVS_STATUS_OK or KVS_STATUS_TRUNCATED (the input
 * ended early: *out covers the complete events read, trace.truncated is set
 * and a warning says how much was read) *out is set and must be freed. On
 * any other status *out is NULL and the logger says why (for malformed JSON:
 * the byte offset and what was expected). A trace with no events gives
 * KVS_STATUS_EMPTY. */
KVS_API enum kvs_status kvs_analyze_file(const char *path, const struct kvs_analysis_options *opt,
                                         struct kvs_analysis **out);

/* The same over a trace held in memory: data[0..len) is the JSON text, or
 * gzip bytes (recognised by their magic, like a file). name stands for the
 * path in messages and in trace.path ("(memory)" when NULL). The bytes are
 * only read: they may be freed as soon as this returns. */
KVS_API enum kvs_status kvs_analyze_memory(const void *data, size_t len, const char *name,
                                           const struct kvs_analysis_options *opt,
                                           struct kvs_analysis **out);

KVS_API void kvs_analysis_free(struct kvs_analysis *a);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ANALYSIS_H */
