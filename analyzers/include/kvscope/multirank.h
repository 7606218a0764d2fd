/* kvscope/multirank.h — several ranks of one run, one analysis each, judged
 * together: each rank's step time, GPU busy time, computation and
 * communication time and their overlap, the straggler, findings by rank and
 * notes in plain words. kvs_multirank() computes everything; the renderers
 * (kvscope/report.h, kvs_render_multirank) only format it.
 *
 * defines: struct kvs_multirank, struct kvs_rank_row, struct kvs_rank_finding,
 *          KVS_STRAGGLER_FRACTION, kvs_multirank, kvs_multirank_free,
 *          kvs_rank_list
 *
 * A rank's number is the one its trace names (Kineto's distributedInfo,
 * kvscope's metadata) when every trace names a distinct rank, else its
 * position in `ranks`. The summary points into the analyses (it does not
 * copy them): keep them until kvs_multirank_free().
 * Thread safety: one summary per call; summaries are independent.
 */
#ifndef KVSCOPE_MULTIRANK_H
#define KVSCOPE_MULTIRANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/analysis.h"
#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    double compute_only_ms;      /* compute_ms - overlap_ms: computation with no comm beside it */
    double idle_ms;              /* step_ms - gpu_ms (not below 0); 0 without steps */
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
    const char *rank_source;     /* "trace" (distributedInfo or kvscope metadata) / "file order" */
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

KVS_API enum kvs_status kvs_multirank(const struct kvs_analysis *const *ranks, size_t n,
                                      struct kvs_multirank **out);
KVS_API void kvs_multirank_free(struct kvs_multirank *m);

/* "0-3, 5, 7" from n ascending rank numbers into buf (size bytes). */
KVS_API void kvs_rank_list(char *buf, size_t size, const int *r, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_MULTIRANK_H */
