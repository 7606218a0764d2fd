/* analyzers/multirank.c — kvs_multirank(): the analyses of several ranks of one
 * run (one trace per rank) into one summary: each rank's step time, GPU busy
 * time, computation and communication (NCCL) time and their overlap; when
 * each rank arrives at the steps' collectives, and so the straggler (the
 * rank the others wait for: it arrives last); the rank with the longest
 * step, said apart; which findings each rank has; and notes in plain words.
 *
 *   kvscope report R0.json R1.json ... [--format text|md|json|html]
 *
 * Ranks come from the traces (Kineto's distributedInfo, kvscope's metadata)
 * when every trace names a distinct rank, else from the order given.
 * Tested in tests/test_multirank.c (synthetic traces) and
 * tests/test_multirank_hta.py (the HTA rank traces of ../shared).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/multirank.h"
#include "multirank_arrival.h"
#include "kvscope/units.h"

/* Exposed communication differing across ranks by more than this share of
 * the mean step is worth a sentence. */
#define EXPOSED_SPREAD 0.05

struct builder {
    struct kvs_multirank *m;
    bool oom;
};

static void note(struct builder *b, char *s)
{
    kvs_strv_push(&b->oom, &b->m->notes, &b->m->nnote, s);
}

static int cmp_row(const void *x, const void *y)
{
    const struct kvs_rank_row *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

void kvs_rank_list(char *buf, size_t size, const int *r, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && len + 24 < size;) {
        size_t j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1)
            j++;
        if (j >= i + 2)
            len += (size_t)snprintf(buf + len, size - len, "%s%d-%d", len ? ", " : "", r[i], r[j]);
        else
            for (size_t k = i; k <= j; k++)
                len += (size_t)snprintf(buf + len, size - len, "%s%d", len ? ", " : "", r[k]);
        i = j + 1;
    }
}

static void fill_row(struct kvs_rank_row *r, const struct kvs_analysis *a, int rank)
{
    const struct kvs_steps *s = &a->steps;
    r->rank = rank;
    r->a = a;
    r->steps = s->count;
    r->step_ms = s->count > 0 ? s->mean_ms : NAN;
    r->gpu_ms = s->count > 0 ? s->gpu_ms_per_step : s->total_gpu_ms;
    r->busy_fraction = s->count > 0 ? s->gpu_busy_fraction : NAN;
    r->compute_ms = kvs_finite_or0(s->compute_ms_per_step);
    r->comm_ms = kvs_finite_or0(s->comm_ms_per_step);
    r->overlap_ms = kvs_finite_or0(s->overlap_ms_per_step);
    r->exposed_comm_ms = r->comm_ms > r->overlap_ms ? r->comm_ms - r->overlap_ms : 0;
    r->compute_only_ms = fmax(0, r->compute_ms - r->overlap_ms);
    r->idle_ms = isfinite(r->step_ms) ? fmax(0, r->step_ms - r->gpu_ms) : 0;
    r->comm_fraction = r->gpu_ms > 0 ? r->comm_ms / r->gpu_ms : 0;
}

/* ranks from the traces when each names a distinct one */
static bool ranks_from_traces(const struct kvs_analysis *const *a, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i]->trace.rank < 0)
            return false;
        for (size_t j = 0; j < i; j++)
            if (a[j]->trace.rank == a[i]->trace.rank)
                return false;
    }
    return true;
}

static void step_stats(struct builder *b)
{
    struct kvs_multirank *m = b->m;
    double *v = malloc(m->n * sizeof *v);
    size_t k = 0;
    m->step_min_ms = m->step_median_ms = m->step_max_ms = NAN;
    m->longest_step = -1;
    if (!v) {
        b->oom = true;
        return;
    }
    for (size_t i = 0; i < m->n; i++) {
        if (!isfinite(m->rows[i].step_ms))
            continue;
        v[k++] = m->rows[i].step_ms;
        if (m->longest_step < 0 || m->rows[i].step_ms > m->rows[m->longest_step].step_ms)
            m->longest_step = (int)i;
    }
    if (k) {
        m->step_median_ms = kvs_mr_median(v, k);
        m->step_min_ms = v[0];
        m->step_max_ms = v[k - 1];
        m->longest_over_ms = m->step_max_ms - m->step_median_ms;
        m->longest_over_fraction = m->step_median_ms > 0 ? m->longest_over_ms / m->step_median_ms : 0;
        m->longest_stands_out = k >= 2 && m->longest_over_fraction >= KVS_STRAGGLER_FRACTION;
    }
    free(v);
    m->most_compute = -1;
    for (size_t i = 0; i < m->n; i++) {
        if (m->rows[i].compute_ms > 0 &&
            (m->most_compute < 0 || m->rows[i].compute_ms > m->rows[m->most_compute].compute_ms))
            m->most_compute = (int)i;
        m->have_comm = m->have_comm || m->rows[i].comm_ms > 0;
    }
}

static struct kvs_rank_finding *finding_slot(struct builder *b, const char *id)
{
    struct kvs_multirank *m = b->m;
    for (size_t i = 0; i < m->nfinding; i++)
        if (!strcmp(m->findings[i].id, id))
            return &m->findings[i];
    struct kvs_rank_finding *v = realloc(m->findings, (m->nfinding + 1) * sizeof *v);
    if (!v)
        return NULL;
    m->findings = v;
    struct kvs_rank_finding *f = &v[m->nfinding];
    memset(f, 0, sizeof *f);
    f->ranks = malloc(m->n * sizeof *f->ranks);
    f->id = strdup(id);
    f->max_rank = -1;
    m->nfinding++;
    if (!f->ranks || !f->id)
        return NULL;
    return f;
}

static int cmp_finding(const void *x, const void *y)
{
    const struct kvs_rank_finding *a = x, *b = y;
    if (a->max_gpu_ms_per_step != b->max_gpu_ms_per_step)
        return a->max_gpu_ms_per_step > b->max_gpu_ms_per_step ? -1 : 1;
    return strcmp(a->id, b->id);
}

static void collect_findings(struct builder *b)
{
    struct kvs_multirank *m = b->m;
    for (size_t i = 0; i < m->n && !b->oom; i++) {
        const struct kvs_analysis *a = m->rows[i].a;
        for (size_t k = 0; a->findings && k < a->nfinding; k++) {
            const struct kvs_finding *x = &a->findings[k];
            if (!x->id)
                continue;
            struct kvs_rank_finding *f = finding_slot(b, x->id);
            if (!f) {
                b->oom = true;
                return;
            }
            if (!f->nranks || f->ranks[f->nranks - 1] != m->rows[i].rank)
                f->ranks[f->nranks++] = m->rows[i].rank;
            double ms = kvs_finite_or0(x->gpu_ms_per_step);
            if (f->max_rank < 0 || ms > f->max_gpu_ms_per_step) {
                f->max_gpu_ms_per_step = ms;
                f->max_rank = m->rows[i].rank;
            }
        }
    }
    if (m->nfinding > 1)
        qsort(m->findings, m->nfinding, sizeof *m->findings, cmp_finding);
}

/* the rank the others wait for, from arrival at the collectives */
static void arrival_notes(struct builder *b)
{
    struct kvs_multirank *m = b->m;
    const struct kvs_arrival *ar = &m->arrival;
    if (m->straggler >= 0) {
        const struct kvs_rank_row *s = &m->rows[m->straggler];
        if (!m->straggler_stands_out) {
            note(b, kvs_fmt_dup(&b->oom,
                                "No rank holds the others up at the collectives: every rank "
                                "arrives within %.2f ms of the earliest (median over %lld steps; "
                                "the latest is rank %d), under %.0f%% of the median step.",
                                s->arrival_skew_ms, (long long)ar->steps, s->rank,
                                100.0 * KVS_STRAGGLER_FRACTION));
            return;
        }
        char least[96] = "";
        if (m->least_collective == m->straggler)
            snprintf(least, sizeof least, ", the least of any rank");
        else if (m->least_collective >= 0)
            snprintf(least, sizeof least, " (the least: rank %d, %.2f ms)",
                     m->rows[m->least_collective].rank, m->rows[m->least_collective].collective_ms);
        note(b, kvs_fmt_dup(&b->oom,
                            "Rank %d is the straggler, the rank the others wait for: it arrives "
                            "last at the steps' collectives, %.2f ms after the earliest rank "
                            "(median over %lld steps, %lld collectives), and spends %.2f ms per "
                            "step in them%s.",
                            s->rank, s->arrival_skew_ms, (long long)ar->steps,
                            (long long)ar->collectives, s->collective_ms, least));
    } else if (ar->steps > 0) {
        note(b, kvs_fmt_dup(&b->oom,
                            "The ranks' matched collectives do not end together (median spread "
                            "of their ends %.2f ms, of their starts %.2f ms, against a median "
                            "duration of %.2f ms): they are not one collective across these "
                            "ranks (point-to-point sends and receives, or other ranks' groups) "
                            "or the traces' clocks differ, so no straggler is named.",
                            ar->end_spread_ms, ar->start_spread_ms, ar->dur_ms));
    } else if (m->have_comm) {
        char skipped[96] = "";
        if (ar->skipped_steps)
            snprintf(skipped, sizeof skipped, "; %lld steps launched different numbers of them",
                     (long long)ar->skipped_steps);
        note(b, kvs_fmt_dup(&b->oom,
                            "No collective could be matched across the ranks (steps of the same "
                            "number launching as many communication kernels on every rank%s): "
                            "no straggler is named.",
                            skipped));
    }
}

static void straggler_notes(struct builder *b)
{
    struct kvs_multirank *m = b->m;
    size_t with_steps = 0;
    for (size_t i = 0; i < m->n; i++)
        with_steps += isfinite(m->rows[i].step_ms);
    if (with_steps == 0) {
        note(b, kvs_fmt_dup(&b->oom, "No step markers in any rank's trace: the per-rank figures are "
                                     "whole-trace totals, and no straggler is named (arrival at "
                                     "the collectives is judged step by step)."));
        return;
    }
    if (with_steps < 2)
        return;
    arrival_notes(b);
    const struct kvs_rank_row *l = &m->rows[m->longest_step];
    if (!m->longest_stands_out) {
        note(b, kvs_fmt_dup(&b->oom,
                            "No rank's step stands out: the %zu ranks' mean step times lie within "
                            "%.1f%% of their median (%.2f to %.2f ms; the longest is rank %d).",
                            with_steps,
                            100.0 *
                                fmax(m->step_max_ms - m->step_median_ms,
                                     m->step_median_ms - m->step_min_ms) /
                                (m->step_median_ms > 0 ? m->step_median_ms : 1),
                            m->step_min_ms, m->step_max_ms, l->rank));
        return;
    }
    char why[200] = "";
    if (m->straggler == m->longest_step)
        snprintf(why, sizeof why, "; it is also the straggler");
    else if (m->straggler >= 0 && l->collective_ms > m->rows[m->straggler].collective_ms)
        snprintf(why, sizeof why,
                 "; it is not the straggler: it spends %.2f ms per step in collectives (rank %d: "
                 "%.2f ms), waiting there for rank %d",
                 l->collective_ms, m->rows[m->straggler].rank, m->rows[m->straggler].collective_ms,
                 m->rows[m->straggler].rank);
    else if (m->straggler >= 0)
        snprintf(why, sizeof why, "; it is not the straggler (rank %d arrives last)",
                 m->rows[m->straggler].rank);
    note(b, kvs_fmt_dup(&b->oom,
                        "Rank %d has the longest step: %.2f ms, %.2f ms (%.1f%%) over the median "
                        "of the %zu ranks' mean step times (%.2f to %.2f ms)%s.",
                        l->rank, l->step_ms, m->longest_over_ms, 100.0 * m->longest_over_fraction,
                        with_steps, m->step_min_ms, m->step_max_ms, why));
}

static void comm_notes(struct builder *b)
{
    struct kvs_multirank *m = b->m;
    if (!m->have_comm) {
        if (m->n >= 2)
            note(b, kvs_fmt_dup(&b->oom,
                                "No communication kernels (NCCL) in any rank's trace: every figure "
                                "is computation."));
        return;
    }
    double comm = 0, overlap = 0, exposed = 0, busy = 0, step = 0;
    size_t lo = 0, hi = 0, nstep = 0;
    for (size_t i = 0; i < m->n; i++) {
        const struct kvs_rank_row *r = &m->rows[i];
        comm += r->comm_ms, overlap += r->overlap_ms, exposed += r->exposed_comm_ms, busy += r->gpu_ms;
        if (isfinite(r->step_ms))
            step += r->step_ms, nstep++;
        if (r->exposed_comm_ms < m->rows[lo].exposed_comm_ms)
            lo = i;
        if (r->exposed_comm_ms > m->rows[hi].exposed_comm_ms)
            hi = i;
    }
    double n = (double)m->n;
    const char *unit = nstep ? "per step" : "in the trace";
    note(b, kvs_fmt_dup(&b->oom,
                        "Communication (NCCL kernels) takes %.2f ms of GPU time %s on average "
                        "(%.0f%% of GPU busy time), %.0f%% of it overlapped with computation; "
                        "exposed communication: %.2f ms %s on average.",
                        comm / n, unit, busy > 0 ? 100.0 * comm / busy : 0.0,
                        comm > 0 ? 100.0 * overlap / comm : 0.0, exposed / n, unit));
    double spread = m->rows[hi].exposed_comm_ms - m->rows[lo].exposed_comm_ms;
    double ref = nstep ? step / (double)nstep : busy / n;
    if (m->n >= 2 && ref > 0 && spread > EXPOSED_SPREAD * ref) {
        char *s = kvs_fmt_dup(&b->oom,
                              "Exposed communication ranges from %.2f ms (rank %d) to %.2f ms "
                              "(rank %d) %s: a rank that spends longer in collectives is "
                              "waiting there for slower ranks",
                              m->rows[lo].exposed_comm_ms, m->rows[lo].rank,
                              m->rows[hi].exposed_comm_ms, m->rows[hi].rank, unit);
        if (s && m->most_compute == (int)lo)
            note(b, kvs_fmt_dup(&b->oom,
                                "%s; rank %d, with the least waiting and the most computation "
                                "(%.2f ms), sets the pace.",
                                s, m->rows[lo].rank, m->rows[lo].compute_ms));
        else if (s)
            note(b, kvs_fmt_dup(&b->oom, "%s.", s));
        free(s);
    }
}

/* Whether every rank's kv_full_buffer_cast casts rows matched to the MLA
 * latent (kv_lora_rank [+ rope]): a latent KV cache is replicated, not
 * split, across tensor-parallel ranks, so each rank pays the whole cast. */
static bool latent_cast_everywhere(const struct kvs_multirank *m)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct kvs_analysis *a = m->rows[i].a;
        bool latent = false;
        for (size_t k = 0; a->findings && k < a->nfinding && !latent; k++) {
            const struct kvs_finding *x = &a->findings[k];
            if (!x->id || strcmp(x->id, "kv_full_buffer_cast") || x->group < 0 ||
                (size_t)x->group >= a->ngroup)
                continue;
            const struct kvs_group *g = &a->groups[x->group];
            latent = g->has_match && g->match.label && strstr(g->match.label, "kv_lora_rank");
        }
        if (!latent)
            return false;
    }
    return m->n > 1;
}

static void finding_notes(struct builder *b)
{
    struct kvs_multirank *m = b->m;
    const bool replicated = latent_cast_everywhere(m);
    for (size_t i = 0; i < m->nfinding; i++) {
        const struct kvs_rank_finding *f = &m->findings[i];
        char ranks[256];
        kvs_rank_list(ranks, sizeof ranks, f->ranks, f->nranks);
        char where[320];
        if (f->nranks == m->n && m->n > 1)
            snprintf(where, sizeof where, "on every rank (%zu of %zu)", f->nranks, m->n);
        else
            snprintf(where, sizeof where, "on rank%s %s (%zu of %zu)", f->nranks > 1 ? "s" : "", ranks,
                     f->nranks, m->n);
        const char *why = replicated && !strcmp(f->id, "kv_full_buffer_cast")
                              ? " Every rank casts the whole MLA latent KV pool (its rows are "
                                "replicated, not split, across tensor-parallel ranks), so more "
                                "ranks do not shrink this cost; only the fix does (gather the "
                                "active rows, or attention that reads the FP8 pool)."
                              : "";
        if (f->max_gpu_ms_per_step > 0)
            note(b, kvs_fmt_dup(&b->oom, "%s %s: up to %.2f ms per step recoverable (rank %d).%s",
                                f->id, where, f->max_gpu_ms_per_step, f->max_rank, why));
        else
            note(b, kvs_fmt_dup(&b->oom, "%s %s.%s", f->id, where, why));
    }
}

enum kvs_status kvs_multirank(const struct kvs_analysis *const *ranks, size_t n, struct kvs_multirank **out)
{
    if (!out)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!ranks || n == 0 || n > (size_t)1 << 20)
        return KVS_STATUS_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (!ranks[i])
            return KVS_STATUS_INVALID_ARGUMENT;
    struct kvs_multirank *m = calloc(1, sizeof *m);
    if (!m)
        return KVS_STATUS_NO_MEMORY;
    struct builder b = {m, false};
    m->n = n;
    m->rows = calloc(n, sizeof *m->rows);
    if (!m->rows) {
        kvs_multirank_free(m);
        return KVS_STATUS_NO_MEMORY;
    }
    bool from_traces = ranks_from_traces(ranks, n);
    m->rank_source = from_traces ? "trace" : "file order";
    m->world_size = ranks[0]->trace.world_size > 0 ? ranks[0]->trace.world_size : 0;
    for (size_t i = 0; i < n; i++) {
        fill_row(&m->rows[i], ranks[i], from_traces ? ranks[i]->trace.rank : (int)i);
        if (ranks[i]->trace.world_size != m->world_size)
            m->world_size = 0; /* the traces disagree: none is trusted */
    }
    qsort(m->rows, n, sizeof *m->rows, cmp_row);
    step_stats(&b);
    b.oom = !kvs_mr_arrival(m) || b.oom;
    collect_findings(&b);

    if (m->world_size > 0 && (size_t)m->world_size > n)
        note(&b, kvs_fmt_dup(&b.oom, "%zu of %d ranks given: the figures cover those ranks only.",
                             n, m->world_size));
    /* every trace names a rank but two name the same one: the same file
     * given twice, or ranks of different runs; say which, not "not every
     * trace names a rank" */
    size_t dup_i = 0, dup_j = 0;
    for (size_t i = 0; i < n && !dup_j; i++)
        for (size_t j = i + 1; j < n && !dup_j && ranks[i]->trace.rank >= 0; j++)
            if (ranks[j]->trace.rank == ranks[i]->trace.rank)
                dup_i = i, dup_j = j;
    bool all_named = true;
    for (size_t i = 0; i < n; i++)
        all_named = all_named && ranks[i]->trace.rank >= 0;
    if (!from_traces && n > 1 && all_named && dup_j)
        note(&b, kvs_fmt_dup(&b.oom,
                             "Traces %zu and %zu both name rank %d (the same file given twice, or "
                             "ranks of different runs?): ranks are numbered in the order the files "
                             "were given.",
                             dup_i + 1, dup_j + 1, ranks[dup_i]->trace.rank));
    else if (!from_traces && n > 1)
        note(&b, kvs_fmt_dup(&b.oom,
                             "Not every trace names a rank of its own (distributedInfo or kvscope "
                             "metadata): ranks are numbered in the order the files were given."));
    straggler_notes(&b);
    comm_notes(&b);
    finding_notes(&b);
    if (b.oom) {
        kvs_multirank_free(m);
        return KVS_STATUS_NO_MEMORY;
    }
    *out = m;
    return KVS_STATUS_OK;
}

void kvs_multirank_free(struct kvs_multirank *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nfinding; i++) {
        free(m->findings[i].id);
        free(m->findings[i].ranks);
    }
    free(m->findings);
    for (size_t i = 0; i < m->nnote; i++)
        free(m->notes[i]);
    free(m->notes);
    free(m->rows);
    free(m);
}
