/* analyzers/multirank_arrival.c — when each rank arrives at the steps'
 * collectives (struct kvs_arrival), and so the straggler: the k-th
 * communication kernel of a step on every rank is one collective; the rank
 * that starts it last is the one the others wait for, when the collectives
 * end together (docs/analysis.md, Several ranks). Called by kvs_multirank().
 *
 * Tested in tests/test_multirank.c (arrival_*), tests/test_multirank_sync.py
 * (a generated 8-rank run) and tests/test_multirank_hta.py (HTA's ranks).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kvscope/multirank.h"
#include "multirank_arrival.h"

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* sorts v[0..n) and returns its median; NAN when n is 0 */
double kvs_mr_median(double *v, size_t n)
{
    if (!n)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct step_key {
    int64_t index;
    size_t pos;
};

static int cmp_step_key(const void *x, const void *y)
{
    const struct step_key *a = x, *b = y;
    if (a->index != b->index)
        return a->index < b->index ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static int cmp_step_index(const void *key, const void *elem)
{
    int64_t k = *(const int64_t *)key, e = ((const struct step_key *)elem)->index;
    return (k > e) - (k < e);
}

/* one rank's steps by index, and where each step's collectives begin */
struct rank_steps {
    struct step_key *keys;
    size_t *first;               /* nstep + 1 offsets into a->collectives */
};

static bool rank_steps_init(struct rank_steps *rs, const struct kvs_analysis *a)
{
    rs->keys = malloc(a->nstep * sizeof *rs->keys);
    rs->first = malloc((a->nstep + 1) * sizeof *rs->first);
    if (!rs->keys || !rs->first)
        return false;
    for (size_t i = 0; i < a->nstep; i++)
        rs->keys[i] = (struct step_key){a->step[i].index, i};
    qsort(rs->keys, a->nstep, sizeof *rs->keys, cmp_step_key);
    size_t c = 0;
    for (size_t i = 0; i <= a->nstep; i++) {
        while (c < a->ncollective && a->collectives[c].step < (int32_t)i)
            c++;
        rs->first[i] = c;
    }
    return true;
}

/* position of the step numbered `index`, or SIZE_MAX */
static size_t rank_step_find(const struct rank_steps *rs, const struct kvs_analysis *a, int64_t index)
{
    const struct step_key *k = bsearch(&index, rs->keys, a->nstep, sizeof *rs->keys, cmp_step_index);
    return k ? k->pos : SIZE_MAX;
}

/* Lines the ranks' collectives up step by step (struct kvs_arrival): each
 * rank's lateness at a collective is its start minus the earliest rank's
 * start; a step's figure is the mean over its collectives, a rank's the
 * median over the steps. */
bool kvs_mr_arrival(struct kvs_multirank *m)
{
    struct kvs_arrival *ar = &m->arrival;
    const size_t n = m->n;
    ar->start_spread_ms = ar->end_spread_ms = ar->dur_ms = NAN;
    m->straggler = m->least_collective = -1;
    for (size_t i = 0; i < n; i++)
        m->rows[i].arrival_skew_ms = m->rows[i].collective_ms = NAN;
    if (n < 2)
        return true;
    for (size_t i = 0; i < n; i++)
        if (!m->rows[i].a->nstep || !m->rows[i].a->ncollective)
            return true;
    const struct kvs_analysis *a0 = m->rows[0].a;
    struct rank_steps *rs = calloc(n, sizeof *rs);
    double **skew = calloc(n, sizeof *skew), **coll = calloc(n, sizeof *coll);
    double *late = malloc(n * sizeof *late), *dur = malloc(n * sizeof *dur);
    size_t *pos = malloc(n * sizeof *pos);
    double *sspread = malloc(a0->ncollective * sizeof *sspread);
    double *espread = malloc(a0->ncollective * sizeof *espread);
    double *longest = malloc(a0->ncollective * sizeof *longest);
    bool ok = rs && skew && coll && late && dur && pos && sspread && espread && longest;
    for (size_t r = 0; ok && r < n; r++) {
        skew[r] = malloc(a0->nstep * sizeof **skew);
        coll[r] = malloc(a0->nstep * sizeof **coll);
        ok = skew[r] && coll[r] && rank_steps_init(&rs[r], m->rows[r].a);
    }
    size_t nstep = 0, ncoll = 0;
    for (size_t p0 = 0; ok && p0 < a0->nstep; p0++) {
        bool found = true, same = true;
        size_t cnt = 0;
        for (size_t r = 0; r < n && found; r++) {
            pos[r] = rank_step_find(&rs[r], m->rows[r].a, a0->step[p0].index);
            found = pos[r] != SIZE_MAX;
            if (!found)
                break;
            size_t c = rs[r].first[pos[r] + 1] - rs[r].first[pos[r]];
            same = same && (r == 0 || c == cnt);
            cnt = r == 0 ? c : cnt;
        }
        if (!found)
            continue;
        if (!same) {
            ar->skipped_steps++;
            continue;
        }
        if (!cnt)
            continue;
        for (size_t r = 0; r < n; r++)
            late[r] = dur[r] = 0;
        for (size_t k = 0; k < cnt; k++) {
            double s_lo = INFINITY, s_hi = -INFINITY, e_lo = INFINITY, e_hi = -INFINITY, d_hi = 0;
            for (size_t r = 0; r < n; r++) {
                const struct kvs_collective *c = &m->rows[r].a->collectives[rs[r].first[pos[r]] + k];
                double e = c->start_us + c->dur_ms * 1e3;
                s_lo = fmin(s_lo, c->start_us), s_hi = fmax(s_hi, c->start_us);
                e_lo = fmin(e_lo, e), e_hi = fmax(e_hi, e);
                d_hi = fmax(d_hi, c->dur_ms);
            }
            for (size_t r = 0; r < n; r++) {
                const struct kvs_collective *c = &m->rows[r].a->collectives[rs[r].first[pos[r]] + k];
                late[r] += (c->start_us - s_lo) / 1e3;
                dur[r] += c->dur_ms;
            }
            sspread[ncoll] = (s_hi - s_lo) / 1e3;
            espread[ncoll] = (e_hi - e_lo) / 1e3;
            longest[ncoll++] = d_hi;
        }
        for (size_t r = 0; r < n; r++) {
            skew[r][nstep] = late[r] / (double)cnt;
            coll[r][nstep] = dur[r];
        }
        nstep++;
    }
    if (ok && nstep) {
        ar->steps = (int64_t)nstep;
        ar->collectives = (int64_t)ncoll;
        ar->start_spread_ms = kvs_mr_median(sspread, ncoll);
        ar->end_spread_ms = kvs_mr_median(espread, ncoll);
        ar->dur_ms = kvs_mr_median(longest, ncoll);
        ar->ends_agree = ar->end_spread_ms <= KVS_ARRIVAL_END_FRACTION * ar->dur_ms ||
                         ar->end_spread_ms <= KVS_ARRIVAL_END_SLACK_MS;
        for (size_t r = 0; r < n; r++) {
            struct kvs_rank_row *row = &m->rows[r];
            row->arrival_skew_ms = kvs_mr_median(skew[r], nstep);
            row->collective_ms = kvs_mr_median(coll[r], nstep);
            if (m->least_collective < 0 || row->collective_ms < m->rows[m->least_collective].collective_ms)
                m->least_collective = (int)r;
            if (ar->ends_agree &&
                (m->straggler < 0 || row->arrival_skew_ms > m->rows[m->straggler].arrival_skew_ms))
                m->straggler = (int)r;
        }
        if (m->straggler >= 0) {
            double skew_ms = m->rows[m->straggler].arrival_skew_ms;
            m->straggler_stands_out = skew_ms > 0 && isfinite(m->step_median_ms) &&
                                      skew_ms >= KVS_STRAGGLER_FRACTION * m->step_median_ms;
        }
    }
    for (size_t r = 0; r < n; r++) {
        if (rs) {
            free(rs[r].keys);
            free(rs[r].first);
        }
        if (skew)
            free(skew[r]);
        if (coll)
            free(coll[r]);
    }
    free(rs);
    free(skew);
    free(coll);
    free(late);
    free(dur);
    free(pos);
    free(sspread);
    free(espread);
    free(longest);
    return ok;
}
