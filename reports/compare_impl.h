/* reports/compare_impl.h — private to reports/: the comparison of two
 * analyses as kvs_compare() builds it and the compare renderers read it.
 * Everything is copied out of the analyses, so a comparison outlives them.
 *
 * defines: struct kvs_comparison, struct kvs_cmp_steps, struct kvs_cmp_side,
 *          struct kvs_cmp_group, kvs_cmp_table_steps, kvs_cmp_table_groups
 */
#ifndef KVSCOPE_COMPARE_IMPL_H
#define KVSCOPE_COMPARE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "table.h"

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
    char *dims;              /* JSON text of the largest group's dims */
    char *dtypes;            /* JSON text of its dtypes */
    char *dims_short;        /* "[131072,1,576] x2" */
    char *dtypes_short;      /* "bf16, fp8_e4m3fn" */
    char *match;             /* match label of the largest group, or NULL */
    double calls_per_step;
    double gpu_ms_per_step;
    double bytes_per_step;
    double achieved_gbps;    /* of the merged groups: bytes / GPU time */
    double efficiency;       /* achieved / peak; NAN when the peak is unknown */
};

struct kvs_cmp_group {
    char *role;
    struct kvs_cmp_side before, after;
};

struct kvs_comparison {
    struct kvs_cmp_steps before, after;
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
};

/* Change of b -> a as a fraction of b; NAN when b is 0 or either is not finite. */
double kvs_cmp_rel(double before, double after);

/* Tables shared by the text, markdown and HTML compare pages. */
bool kvs_cmp_table_steps(struct kvs_table *t, const struct kvs_comparison *c);
bool kvs_cmp_table_groups(struct kvs_table *t, const struct kvs_comparison *c, size_t max_rows);

#endif /* KVSCOPE_COMPARE_IMPL_H */
