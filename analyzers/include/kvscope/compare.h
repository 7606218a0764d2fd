/* kvscope/compare.h — two analyses (before and after a fix) judged against
 * each other: step figures side by side, copy/cast groups paired by role,
 * findings resolved and new, and a verdict in plain words. kvs_compare()
 * computes everything; the renderers (kvscope/report.h,
 * kvs_render_compare) only format it.
 *
 * defines: struct kvs_comparison, struct kvs_cmp_steps, struct kvs_cmp_side,
 *          struct kvs_cmp_group, struct kvs_cmp_change, struct kvs_summary,
 *          struct kvs_summary_path, kvs_summarize, kvs_summary_free, kvs_compare,
 *          kvs_comparison_free, kvs_cmp_rel
 *
 * Everything is copied out of the analyses, so a comparison outlives them.
 * Thread safety: one comparison per call; comparisons are independent.
 */
#ifndef KVSCOPE_COMPARE_H
#define KVSCOPE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/analysis.h"
#include "kvscope/base.h"
#include "kvscope/gate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One trace's step figures (per step; whole-trace totals when count is 0). */
struct kvs_cmp_steps {
    char *path;
    char *device;
    double peak_gbps;        /* 0: unknown */
    int64_t count;
    double mean_ms;
    double gpu_ms_per_step;
    double gpu_busy_fraction;
    double tokens_per_s;     /* 0: unknown (no batch) */
    double wall_min_ms;      /* shortest and longest step; NAN without steps */
    double wall_max_ms;
};

/* One side of a role: the groups of one trace that share the role, summed. */
struct kvs_cmp_side {
    bool present;
    int ngroups;             /* groups merged (usually 1) */
    char *op;                /* of the largest group */
    int ntensors;            /* the largest group's inputs: */
    struct kvs_dims *tensor_dims;  /* ntensors entries */
    char **tensor_dtypes;    /* ntensors entries, "" where none */
    char *dims_short;        /* "[131072,1,576] x2" */
    char *dtypes_short;      /* "bf16, fp8_e4m3fn" */
    char *match;             /* match label of the largest group, or NULL */
    double calls_per_step;
    double gpu_ms_per_step;
    double bytes_per_step;
    bool bytes_known;        /* every merged group's bytes are known (no shapes and no launch
                                sizing: not); when not, bytes_per_step counts only the known
                                ones and is shown "unknown", achieved_gbps and efficiency NAN */
    double achieved_gbps;    /* of the merged groups: bytes / GPU time */
    double efficiency;       /* achieved / peak; NAN when the peak is unknown */
};

/* One figure before -> after: diff = after - before (a side that is
 * absent or not finite counts as 0), rel = kvs_cmp_rel(before, after). */
struct kvs_cmp_change {
    double diff;
    double rel;
};

struct kvs_cmp_group {
    char *role;
    struct kvs_cmp_side before, after;
    /* an absent side counts as no work: the group went away (or came) */
    struct kvs_cmp_change gpu_ms_per_step, bytes_per_step;
    double efficiency_diff;  /* after - before; NAN unless both sides have one */
};

struct kvs_comparison {
    struct kvs_cmp_steps before, after;
    struct {
        struct kvs_cmp_change mean_ms, gpu_ms_per_step, gpu_busy_fraction, tokens_per_s;
    } change;                           /* after against before, per step */
    int batch;                          /* as given to kvs_compare; 0 = unknown */
    size_t ngroup;
    struct kvs_cmp_group *groups;       /* largest GPU time (either side) first */
    size_t nresolved, nnew, nkept;
    char **resolved;                    /* finding ids in before only */
    char **resolved_msg;                /* their messages (before's) */
    char **new_ids;                     /* finding ids in after only */
    char **new_msg;
    char **kept;                        /* ids in both */
    size_t nverdict;
    char **verdict;                     /* sentences, most important first */
    struct kvs_gate *gate;              /* NULL unless gated (kvs_gate_compare, kvscope/gate.h) */
};

/* batch: sequences per step for tokens/s (0 = unknown; then the analyses'
 * own steps.tokens_per_s is used if set). */
KVS_API enum kvs_status kvs_compare(const struct kvs_analysis *before,
                                    const struct kvs_analysis *after, int batch,
                                    struct kvs_comparison **out);
KVS_API void kvs_comparison_free(struct kvs_comparison *c);

/* The closing summary of one baseline against one or more fixes ("IN
 * SHORT"): the bottleneck of the baseline (its largest copy/cast group whose
 * rows matched a KV capacity), what each fix saved (from its comparison),
 * and each trace's whole step against the roofline (kvs_step_roofline, for
 * traces that carry kvscope.engine). Sentences and figures are computed
 * here; kvs_render_summary (kvscope/report.h) lays them out. */
struct kvs_summary_path {
    char *name;                  /* the engine's KV path, else the trace's file name */
    double step_ms, bytes_per_step, achieved_gbps;
    double peak_fraction;        /* NAN when the peak is unknown */
    double copy_fraction;        /* against the first row's copy rate; NAN when unknown */
};

struct kvs_summary {
    char *bottleneck;            /* one sentence */
    size_t nfix;
    char **fixes;                /* one sentence per fix, in the order given */
    char *roofline;              /* what the table holds, or why there is none */
    size_t npath;
    struct kvs_summary_path *paths; /* the baseline first, then the fixes; traces with
                                       kvscope.engine's bytes per step only */
};

/* before: the baseline; after[i] and cmp[i] (kvs_compare(before, after[i]))
 * for i < n, n >= 1. */
KVS_API enum kvs_status kvs_summarize(const struct kvs_analysis *before,
                                      const struct kvs_analysis *const *after,
                                      const struct kvs_comparison *const *cmp, size_t n,
                                      struct kvs_summary **out);
KVS_API void kvs_summary_free(struct kvs_summary *s);

/* Change of before -> after as a fraction of before; NAN when before is 0
 * or either is not finite. */
KVS_API double kvs_cmp_rel(double before, double after);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_COMPARE_H */
