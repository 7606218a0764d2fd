/* reports/multirank_impl.h — private to reports/: the summary of several
 * ranks' analyses as kvs_multirank() builds it and the multi-rank renderers
 * read it. The per-rank analyses are not copied: the summary points at them,
 * and the caller keeps them alive until kvs_multirank_free().
 *
 * defines: struct kvs_multirank, struct kvs_rank_row, struct kvs_rank_finding,
 *          kvs_mr_table_ranks, kvs_mr_table_findings, kvs_json_write_report,
 *          kvs_html_report_body
 */
#ifndef KVSCOPE_MULTIRANK_IMPL_H
#define KVSCOPE_MULTIRANK_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "table.h"

/* One rank's figures: per step, or whole-trace totals when steps is 0. */
struct kvs_rank_row {
    int rank;
    const struct kvs_analysis *a;
    int64_t steps;
    double step_ms;              /* mean step wall time; NAN without steps */
    double gpu_ms;               /* GPU busy (union of all activity) */
    double busy_fraction;        /* gpu_ms / step_ms; NAN without steps */
    double compute_ms;           /* union of non-communication activity */
    double comm_ms;              /* union of communication activity */
    double overlap_ms;           /* both at once: comm hidden under compute */
    double exposed_comm_ms;      /* comm_ms - overlap_ms */
    double comm_fraction;        /* comm_ms / gpu_ms; 0 without GPU work */
};

/* A finding id and the ranks that have it. */
struct kvs_rank_finding {
    char *id;
    int *ranks;                  /* rank numbers, ascending */
    size_t nranks;
    double max_gpu_ms_per_step;  /* the largest recoverable GPU time among them */
    int max_rank;                /* the rank with that largest figure */
};

struct kvs_multirank {
    size_t n;
    struct kvs_rank_row *rows;   /* by rank, ascending */
    const char *rank_source;     /* "distributedInfo" (or kvscope metadata) / "file order" */
    int world_size;              /* from the traces when they agree, else 0 */
    double step_min_ms, step_median_ms, step_max_ms; /* over ranks with steps; NAN if none */
    int straggler;               /* row index of the longest mean step, -1 without steps */
    double straggler_over_ms;    /* its step time minus the median */
    double straggler_over_fraction;
    bool straggler_stands_out;   /* over the median by KVS_STRAGGLER_FRACTION or more */
    int most_compute;            /* row with the most compute GPU time per step, -1 if none */
    bool have_comm;              /* any rank has communication kernels */
    size_t nfinding;
    struct kvs_rank_finding *findings; /* by largest recoverable time, descending */
    size_t nnote;
    char **notes;                /* sentences, most important first */
};

/* A straggler "stands out" when its mean step is this much over the median. */
#define KVS_STRAGGLER_FRACTION 0.05

/* Tables shared by the text, markdown and HTML pages. */
bool kvs_mr_table_ranks(struct kvs_table *t, const struct kvs_multirank *m);
bool kvs_mr_table_findings(struct kvs_table *t, const struct kvs_multirank *m);

/* The kvscope.report/1 object of one analysis at the writer's position
 * (render_json.c; kvs_render_json_report writes it as a whole document). */
struct kvs_jw;
void kvs_json_write_report(struct kvs_jw *w, const struct kvs_analysis *a);

/* The HTML report of one analysis from its <h1> to its last table, without
 * the page's head and foot (render_html.c); false when memory ran out. */
bool kvs_html_report_body(FILE *out, const struct kvs_analysis *a, const struct kvs_render_options *opt);

#endif /* KVSCOPE_MULTIRANK_IMPL_H */
