/* kvscope/gate.h — `kvscope compare --fail-on regression`: a comparison
 * judged as a CI gate. NEW (the comparison's after) is worse than BASE (its
 * before) when its GPU or wall time per step rose, or its tokens/s fell, by
 * more than a threshold and beyond the step-to-step noise of the two traces;
 * when it has a high-severity finding BASE lacks; or when a copy/cast role
 * moves more bytes per step by more than the threshold. Each check is
 * computed here, with its sentence; the renderers (kvscope/report.h) only
 * lay them out (text, md, html, json, junit).
 *
 * Noise: the steps of each trace are samples. A change is the
 * Hodges-Lehmann shift (the median of after_j - before_i over every pair of
 * steps) over BASE's median, and its interval is the distribution-free one
 * that inverts the Mann-Whitney test (exact for small samples): a change is
 * significant when its interval excludes zero. Nothing is random, so the
 * same traces always give the same verdict. docs/analysis.md, "The gate".
 *
 * defines: struct kvs_shift, kvs_shift_estimate, kvs_mann_whitney_cdf,
 *          enum kvs_gate_kind, enum kvs_gate_result, struct kvs_gate_check,
 *          struct kvs_gate, kvs_gate_compare, kvs_gate_free,
 *          kvs_gate_kind_name, kvs_gate_result_name, KVS_GATE_LEVEL,
 *          KVS_GATE_THRESHOLD_PCT, KVS_GATE_ROLE_MIN_SHARE
 *
 * Thread safety: reentrant; one comparison per call.
 */
#ifndef KVSCOPE_GATE_H
#define KVSCOPE_GATE_H

#include <stdbool.h>
#include <stddef.h>

#include "kvscope/analysis.h"
#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kvs_comparison; /* kvscope/compare.h */

/* ---------------------------------------------------------------------------
 * the statistics */

/* After against before, from two samples (non-finite values left out). */
struct kvs_shift {
    size_t nbefore, nafter;      /* finite samples used */
    double median_before, median_after;
    double shift;                /* Hodges-Lehmann: the median of after_j - before_i, all pairs */
    bool has_interval;           /* false: too few samples for an interval at the level asked
                                  * (one step each; 2 and 3; ...): significance cannot be judged */
    double low, high;            /* the interval of the shift: order statistics k and N+1-k of the
                                    N pairwise differences, k from Mann-Whitney's distribution */
    double confidence;           /* its coverage: exact (>= the level) when exact, else the level */
    bool exact;                  /* k from the exact distribution (nbefore x nafter <= 2500), else
                                    from its normal approximation */
};

/* level: the interval's confidence, in (0, 1) (the gate uses KVS_GATE_LEVEL).
 * KVS_STATUS_INVALID_ARGUMENT when a sample has no finite value or the level
 * is out of range; KVS_STATUS_NO_MEMORY. */
KVS_API enum kvs_status kvs_shift_estimate(const double *before, size_t nbefore,
                                           const double *after, size_t nafter, double level,
                                           struct kvs_shift *out);

/* P(U <= u) for the Mann-Whitney count U of two samples of m and n values
 * without ties under the null hypothesis (the exact distribution; m x n <=
 * 2500, else NAN). Exposed for the tests. */
KVS_API double kvs_mann_whitney_cdf(size_t m, size_t n, size_t u);

/* ---------------------------------------------------------------------------
 * the gate */

#define KVS_GATE_LEVEL 0.95          /* the intervals' confidence */
#define KVS_GATE_THRESHOLD_PCT 5.0   /* --threshold's default */
/* a copy/cast role is checked when it takes at least this share of NEW's GPU
 * time per step: a 4-byte memcpy that appears does not fail a build */
#define KVS_GATE_ROLE_MIN_SHARE 0.01

enum kvs_gate_kind {
    KVS_GATE_GPU_TIME = 0,   /* GPU time per step (busy: the union of its GPU work) */
    KVS_GATE_WALL_TIME,      /* wall time per step */
    KVS_GATE_TOKENS,         /* tokens/s (per step: its tokens, or --batch, over its time) */
    KVS_GATE_FINDING,        /* a high-severity finding of NEW */
    KVS_GATE_COPY_BYTES,     /* a copy/cast role's bytes per step */
};
KVS_API const char *kvs_gate_kind_name(enum kvs_gate_kind k); /* "gpu_time", ... */

enum kvs_gate_result { KVS_GATE_PASS = 0, KVS_GATE_FAIL, KVS_GATE_SKIPPED };
KVS_API const char *kvs_gate_result_name(enum kvs_gate_result r); /* "pass", "fail", "skipped" */

struct kvs_gate_check {
    enum kvs_gate_kind kind;
    enum kvs_gate_result result;
    char *what;              /* "GPU time per step", the finding's id, the role */
    const char *unit;        /* "ms", "tokens/s", "B" (bytes per step); NULL for a finding */
    double before, after;    /* medians of the steps; bytes per step; a finding: NAN before, its
                                GPU time per step after; NAN when unknown */
    double change_pct;       /* the change over before, percent; NAN when none (a finding, a
                                role new in NEW, unknown figures) */
    bool has_interval;       /* the change's interval is known (sampled figures only) */
    double low_pct, high_pct;/* its bounds, percent of before */
    double confidence;       /* its coverage (kvs_shift.confidence) */
    int significant;         /* 1: the interval excludes no change; 0: it does not (inside the
                                noise); -1: cannot be judged (too few steps) or not sampled
                                (bytes are counted, a finding is found) */
    size_t nbefore, nafter;  /* samples: steps (1 each without step markers); 0 when not sampled */
    char *message;           /* one sentence with the figures, for people */
};

struct kvs_gate {
    double threshold_pct;
    bool passed;             /* no check failed */
    size_t ncheck;
    struct kvs_gate_check *checks; /* GPU time, wall time, tokens/s, findings, copy/cast roles */
    size_t nreason;          /* checks failed */
    size_t roles_unchecked;  /* copy/cast roles under KVS_GATE_ROLE_MIN_SHARE of NEW's GPU time */
};

/* Gate comparison c (kvs_compare(before, after, ...), kvscope/compare.h) at
 * threshold_pct (>= 0): sets c->gate, which kvs_comparison_free frees (a
 * gate already there is replaced). */
KVS_API enum kvs_status kvs_gate_compare(struct kvs_comparison *c, const struct kvs_analysis *before,
                                         const struct kvs_analysis *after, double threshold_pct);
KVS_API void kvs_gate_free(struct kvs_gate *g);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_GATE_H */
