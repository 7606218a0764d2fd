/* tables.h — the tables the analysis' stages build from the records, and the
 * read-only view of them a stage reads (docs/conventions.md, "The
 * analysis' stages and their tables").
 *
 * defines: struct kvs_activity, struct kvs_activity_table,
 *          struct kvs_step_table, struct kvs_group_table, struct kvs_op_table,
 *          struct kvs_peaks, struct kvs_model_facts, struct kvs_gpu_set, struct kvs_stage_in,
 *          struct kvs_step_desc, struct kvs_step_win, struct kvs_group_acc,
 *          struct kvs_op_acc, struct kvs_family, struct kvs_families, KVS_NO_OP,
 *          kvs_device_bit, kvs_gpus_of
 *
 * The stages run in order in analysis.c (run_stages), each a function of
 * the tables it reads (const pointers, or the view struct kvs_stage_in)
 * filling the one it makes: link and classify the activity table, steps
 * the step table, groups and match the group table (and the model facts),
 * the device its peaks, the step's GPUs their set, roofline the op table;
 * the detectors read them all and make the findings. A stage reads only
 * the tables of stages before it, and its header says which. analysis.c
 * alone holds the tables while the stages run. Per-activity entries are
 * indexed like the records' t.gpus. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_TABLES_H
#define KVS_ANALYZERS_TABLES_H

#include "kvscope/analysis.h"
#include "kvscope/reader.h" /* the records, interning, maps, the arena */
#include "launch_size.h"
#include "models.h"
#include "opcost.h"
#include "shapes.h"

/* what a serving engine's step range says (steps.c) */
struct kvs_step_desc {
    enum kvs_step_kind kind;
    int64_t batch;             /* requests in the step, 0 unknown */
    int64_t tokens;            /* tokens the step computes, 0 unknown */
};

#define KVS_NO_OP UINT32_MAX

/* A device's bit in a 64-bit set: ids 0..62 their own, any other the last. */
static inline uint64_t kvs_device_bit(int32_t d)
{
    return d >= 0 && d < 63 ? (uint64_t)1 << d : (uint64_t)1 << 63;
}

struct kvs_step_win {
    int64_t start, end;          /* ns */
    int64_t index;
    uint32_t name;
    struct kvs_step_desc desc;   /* kind, batch, tokens where the name says them */
};

/* one copy/cast group while it is being built */
struct kvs_group_acc {
    uint32_t op_name;            /* interned op name, or the activity name for bare activities */
    uint32_t shape;              /* interned shape key, 0 when none */
    bool bare;                   /* memcpy/memset with no op */
    int64_t calls, calls_in_steps;
    int64_t steps_with_calls;    /* distinct steps in which the group's op was called */
    int64_t gpu_calls;           /* calls that launched GPU work */
    int64_t gpu_ns, gpu_ns_in_steps;
    int64_t gpu_busy_ns;         /* union of its activities' intervals (per device, summed) */
    int64_t activity_bytes;      /* sum of memcpy/memset `bytes` */
    int64_t host_ns;             /* GPU time of its host<->device copies (HtoD, DtoH, ...) */
    int64_t activities;
    uint64_t devices;            /* the devices its activities ran on (kvs_device_bit) */
    int64_t byte_calls;          /* calls whose GPU work had a memcpy/memset with `bytes` */
    int64_t byte_ns;             /* GPU time of those memcpy/memset activities */
    uint32_t top_kernel;         /* kernel name with the most time */
    int64_t top_kernel_ns;
    struct kvs_shape shape_info;
    int64_t bytes_per_call;      /* -1 unknown */
    const char *sized_from;      /* "dims", "activity bytes", "launch" (static), NULL unknown */
    /* sizing from launches (launch_size.h), for groups no dims size */
    struct kvs_launch_acc launch;
    bool launch_sized;           /* bytes (and shape_info, where rows x row factor) from grid x block */
    int64_t launch_lo, launch_hi;/* elements per call the launches allow */
    int bytes_bound;             /* 0 bytes_per_call exact, -1 a lower bound, 1 an upper bound */
    /* match */
    bool has_match;
    struct kvs_match match;      /* label in the arena */
    int64_t active_tokens;       /* tokens actually in use, when inferable; 0 unknown */
    const char *row_meaning;     /* the model's name for the rows ("kv_lora_rank 512 + ..."), or NULL */
    const char *role;            /* in the arena */
};

/* one op group of the roofline table (roofline.c): every op name + shape
 * key that launched GPU work, and GPU work no op launched by its name */
struct kvs_op_acc {
    uint32_t op_name;            /* interned op name, or the activity name when bare */
    uint32_t shape;              /* interned shape key, 0 when none */
    bool bare;                   /* GPU work no op launched */
    uint32_t top_kernel;
    int64_t top_kernel_ns;
    int64_t calls;               /* calls that launched GPU work (activities when bare) */
    int64_t calls_in_steps;
    int64_t gpu_ns, gpu_ns_in_steps, gpu_busy_ns;
    uint64_t devices;            /* the devices its activities ran on (kvs_device_bit) */
    struct kvs_shape shape_info;
    struct kvs_op_cost cost;     /* copy: bytes from its copy/cast group */
    const char *sized_from;      /* copy: its group's; "dims" for the other families; NULL */
    /* figures (roofline.c; NAN when unknown) */
    double achieved_gbps, achieved_tflops, intensity, peak_tflops, roof_fraction;
    const char *bound;           /* "memory", "compute", NULL */
};

/* The step table: kvs_steps_find fills v, n and source; kvs_steps_measure
 * the GPU time each step launched. */
struct kvs_step_table {
    struct kvs_step_win *v;      /* by start */
    size_t n;                    /* 0: no step markers, figures are trace totals */
    const char *source;          /* how steps were found (for messages) */
    double *busy_ns;             /* per step: union of the GPU work it launched */
    int64_t *gpu_first;          /* per step: first start / last end of that work (ns); */
    int64_t *gpu_last;           /*   INT64_MAX / INT64_MIN when it launched none */
    double (*cat_ns)[KVS_CAT_COUNT_]; /* per step and category */
    double *comm_ns;             /* per step: union of communication activity */
    double *compute_ns;          /* per step: union of all other activity */
    double trace_busy_ns;        /* union of all GPU activity over the trace */
    double trace_comm_ns, trace_compute_ns;
    double trace_cat_ns[KVS_CAT_COUNT_];
};

/* The copy/cast groups (groups.c), sorted by GPU time; match.c adds each
 * one's match and role. */
struct kvs_group_table {
    struct kvs_group_acc *v;
    size_t n;
};

/* The op table of the roofline (roofline.c), by GPU time. */
struct kvs_op_table {
    struct kvs_op_acc *v;
    size_t n;
};

/* What the trace says of the model (match.c). */
struct kvs_model_facts {
    int layers;                  /* the model's, else counted from layer ranges, else 0 */
    bool layers_inferred;        /* counted from layer ranges */
    bool backward;               /* the trace runs autograd's backward pass: training, no KV cache */
};

/* The device the figures are held against (analysis.c's pick_device). */
struct kvs_peaks {
    const char *name;            /* the device's name used, or NULL */
    const char *source;          /* where peak_gbps comes from (the table, --peak-gbps) */
    double peak_gbps, copy_gbps; /* HBM peak; a measured copy rate; 0 unknown */
    double bf16_tflops, fp8_tflops; /* dense tensor peaks, 0 unknown */
};

/* The step's GPUs (analysis.c's count_devices): the devices that run
 * kernels in most steps, at least 1; busy time is summed over every device. */
struct kvs_gpu_set {
    int n;
    uint64_t bits;               /* their kvs_device_bit()s */
};

/* The kernel family table, in the analysis' arena (classify.c). */
#define KVS_MAX_FAMILIES 64
struct kvs_family {
    const char *name;
    uint8_t category;            /* enum kvs_category */
    bool weak;                   /* says little: the launching op decides the category */
    const char *const *prefix;   /* case-sensitive, after a leading "void " */
    const char *const *contains; /* lowercase substrings */
    const char *const *unless;   /* lowercase, blanked before contains are tried */
    size_t nprefix, ncontains, nunless;
};
struct kvs_families {
    struct kvs_family *fam;      /* the table's families, then memcpy, memset, other */
    size_t n;
    uint8_t memcpy_, memset_, other, copy_cast, attention, gemm;
};

/* One GPU activity as the stages see it, indexed like the records'
 * t.gpus: kvs_link fills op, launch and graph; kvs_categorize cat, family
 * and kfamily; kvs_steps_measure step. */
struct kvs_activity {         /* 12 bytes */
    uint32_t op;                 /* the launching op's index, or KVS_NO_OP */
    int32_t step;                /* the step by launch time, -1 outside */
    uint8_t cat;                 /* enum kvs_category */
    uint8_t family;              /* index into families.fam (a weak name's family replaced by
                                    what its op says) */
    uint8_t kfamily;             /* its kernel name's family alone */
    bool graph;                  /* a CUDA/HIP graph launch started it */
};

/* The activity table: link's result (with --graph-capture's ops merged
 * in), then each activity's category and step. */
struct kvs_activity_table {
    struct kvs_activity *v;      /* [t.gpus.n] */
    int64_t *launch;             /* [t.gpus.n] launch times (ns): the runtime call's start, else
                                  * the op's, else the activity's own; they decide its step.
                                  * kvs_steps_measure frees them (NULL after) */
    uint64_t unlinked;           /* activities linked to no op */
    uint64_t graph_launched;     /* activities a CUDA/HIP graph launch started */
    uint64_t capture_aligned;    /* of those, kernels given their op from --graph-capture */
    uint64_t graph_node_ops;     /* of those, kernels whose own External id names the op their
                                  * graph node was captured under (kvscope's capture; link.c) */
};

/* What a later stage reads of the earlier ones, read-only: the records,
 * the options and the tables so far (analysis.c points it at its tables
 * before the first stage; a table is filled once its stage has run). */
struct kvs_stage_in {
    const struct kvs_trace_data *t;
    const struct kvs_analysis_options *opt;
    const struct kvs_activity_table *act;
    const struct kvs_step_table *steps;
    const struct kvs_group_table *groups;
    const struct kvs_peaks *dev;
    const struct kvs_model_facts *mf;
    const struct kvs_gpu_set *gpus;
    const struct kvs_op_table *ops;
};

/* How many of the step's GPUs a culprit's work ran on (its
 * kvs_device_bit()s), at least 1: the findings' figures are per GPU. */
static inline int kvs_gpus_of(const struct kvs_gpu_set *gpus, uint64_t devices)
{
    int n = __builtin_popcountll(devices & gpus->bits);
    return n > 0 ? n : 1;
}

#endif
