/* kvscope/multirank.h — several ranks of one run, one analysis each, judged
 * together: each rank's step time, GPU busy time, computation and
 * communication time and their overlap, when each rank arrives at the
 * steps' collectives and the straggler (the rank the others wait for), the
 * rank with the longest step (said apart), findings by rank and notes in
 * plain words. kvs_multirank() computes everything; the renderers
 * (kvscope/report.h, kvs_render_multirank) only format it.
 *
 * defines: struct kvs_multirank, struct kvs_rank_row, struct kvs_rank_finding,
 *          struct kvs_arrival, KVS_STRAGGLER_FRACTION, KVS_ARRIVAL_END_FRACTION,
 *          KVS_ARRIVAL_END_SLACK_MS, kvs_multirank, kvs_multirank_free,
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
    /* arrival at the steps' collectives (struct kvs_arrival): NAN unknown */
    double arrival_skew_ms;      /* median over matched steps of how late its collectives start
                                    after the earliest rank's (mean over the step's collectives) */
    double collective_ms;        /* median over matched steps of its matched collectives' summed
                                    duration: its time in them, waiting included */
};

/* How the ranks' collectives line up: the k-th communication kernel of a
 * step on every rank is the same collective (NCCL issues them in one order
 * on every rank), matched over steps of the same index that launched the
 * same number of them on every rank. A synchronous collective ends when the
 * last rank arrives, so ends agree and the rank that starts last is the one
 * the others wait for. */
struct kvs_arrival {
    int64_t steps;               /* steps matched */
    int64_t skipped_steps;       /* steps of rank 0's found on every rank with differing counts */
    int64_t collectives;         /* collectives matched, over those steps */
    double start_spread_ms;      /* median over them of latest minus earliest start; NAN none */
    double end_spread_ms;        /* median of latest minus earliest end; NAN none */
    double dur_ms;               /* median of the longest rank's duration; NAN none */
    bool ends_agree;             /* end_spread_ms <= KVS_ARRIVAL_END_FRACTION x dur_ms, or
                                    <= KVS_ARRIVAL_END_SLACK_MS: the clocks and collectives agree */
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
    struct kvs_arrival arrival;
    int straggler;               /* row index of the rank the others wait for: the latest
                                    arrival_skew_ms, when arrival.ends_agree and 2+ ranks; else -1 */
    bool straggler_stands_out;   /* its arrival skew is KVS_STRAGGLER_FRACTION of the median
                                    step or more */
    int least_collective;        /* row with the least collective_ms, -1 unknown */
    int longest_step;            /* row index of the longest mean step, -1 without steps */
    double longest_over_ms;      /* its step time minus the median */
    double longest_over_fraction;
    bool longest_stands_out;     /* over the median by KVS_STRAGGLER_FRACTION or more */
    int most_compute;            /* row with the most compute GPU time per step, -1 if none */
    bool have_comm;              /* any rank has communication kernels */
    size_t nfinding;
    struct kvs_rank_finding *findings; /* by largest recoverable time, descending */
    size_t nnote;
    char **notes;                /* sentences, most important first */
};

/* The straggler "stands out" when it arrives this share of the median step
 * after the earliest rank; the longest step when it is this much over the
 * median step. */
#define KVS_STRAGGLER_FRACTION 0.05
/* Matched collectives "end together" when the median spread of their ends is
 * within this share of their median duration, or this many ms. */
#define KVS_ARRIVAL_END_FRACTION 0.1
#define KVS_ARRIVAL_END_SLACK_MS 0.005

KVS_API enum kvs_status kvs_multirank(const struct kvs_analysis *const *ranks, size_t n,
                                      struct kvs_multirank **out);
KVS_API void kvs_multirank_free(struct kvs_multirank *m);

/* "0-3, 5, 7" from n ascending rank numbers into buf (size bytes). */
KVS_API void kvs_rank_list(char *buf, size_t size, const int *r, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_MULTIRANK_H */
