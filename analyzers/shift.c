/* analyzers/shift.c — how far one sample of step times moved from another,
 * and whether that is more than their noise: the Hodges-Lehmann shift (the
 * median of every pairwise difference after_j - before_i) with the
 * distribution-free interval that inverts the Mann-Whitney test: order
 * statistics k and N+1-k of the N = m x n differences, k the largest count
 * with P(U < k) <= (1 - level) / 2 under the null hypothesis (exact for m x n
 * <= 2500, else its normal approximation). No resampling, no seed: the same
 * samples always give the same interval.
 *
 * The k-th difference is found without forming the N differences: on sorted
 * samples the pairs with a difference <= d are counted in m + n steps, and
 * the value is narrowed between two differences (bisection, then the next
 * difference above the lower end).
 *
 * Used by the gate (analyzers/gate.c, kvscope/gate.h); tested against brute
 * force in tests/test_gate.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/gate.h"

#define EXACT_MAX_PAIRS 2500 /* the exact distribution's table: <= 51 x 1251 x 2 doubles */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median_sorted(const double *v, size_t n)
{
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ----------------------------------------------------------------------------
// order statistics of the pairwise differences y[j] - x[i] (x, y ascending)

/* pairs with y[j] - x[i] <= d: for each j the first i where it holds moves
 * right as j grows (the difference falls with i and rises with j, and so
 * does its rounded value) */
static size_t count_le(const double *x, size_t m, const double *y, size_t n, double d)
{
    size_t i = 0, c = 0;
    for (size_t j = 0; j < n; j++) {
        while (i < m && y[j] - x[i] > d)
            i++;
        c += m - i;
    }
    return c;
}

/* the smallest difference above lo (INFINITY when none) */
static double next_above(const double *x, size_t m, const double *y, size_t n, double lo)
{
    double best = INFINITY;
    size_t i = 0;
    for (size_t j = 0; j < n; j++) {
        while (i < m && y[j] - x[i] > lo)
            i++;
        if (i > 0 && y[j] - x[i - 1] < best)
            best = y[j] - x[i - 1];
    }
    return best;
}

/* the k-th smallest difference, 1 <= k <= m x n */
static double kth_difference(const double *x, size_t m, const double *y, size_t n, size_t k)
{
    double lo = y[0] - x[m - 1], hi = y[n - 1] - x[0];
    if (count_le(x, m, y, n, lo) >= k)
        return lo;
    /* count_le(lo) < k <= count_le(hi): each round moves lo to the next
     * difference above it or halves [lo, hi], so it ends */
    for (;;) {
        double s = next_above(x, m, y, n, lo);
        if (!(s <= hi) || count_le(x, m, y, n, s) >= k)
            return s <= hi ? s : hi;
        lo = s;
        double mid = lo + (hi - lo) / 2;
        if (mid > lo && mid < hi) {
            if (count_le(x, m, y, n, mid) >= k)
                hi = mid;
            else
                lo = mid;
        }
    }
}

// ----------------------------------------------------------------------------
// Mann-Whitney's null distribution

/* P(U = u) for u < len, two samples of a and b values (a x b <= EXACT_MAX_PAIRS):
 * the largest of the a + b values is one of the a (probability a / (a + b)),
 * and then it is above all b of the others, or one of the b. The table rolls
 * over the larger sample, so it holds (smaller + 1) x len values twice. */
static double *mw_pmf(size_t m, size_t n, size_t len)
{
    size_t big = m > n ? m : n, small = m > n ? n : m;
    double *prev = calloc((small + 1) * len, sizeof *prev);
    double *cur = calloc((small + 1) * len, sizeof *cur);
    double *out = malloc(len * sizeof *out);
    if (!prev || !cur || !out) {
        free(prev);
        free(cur);
        free(out);
        return NULL;
    }
    for (size_t b = 0; b <= small; b++)
        prev[b * len] = 1; /* no value of the first sample: U = 0 */
    for (size_t a = 1; a <= big; a++) {
        memset(cur, 0, (small + 1) * len * sizeof *cur);
        cur[0] = 1;
        for (size_t b = 1; b <= small; b++) {
            double pa = (double)a / (double)(a + b), pb = (double)b / (double)(a + b);
            double *c = cur + b * len;
            const double *up = prev + b * len, *left = cur + (b - 1) * len;
            for (size_t u = 0; u < len; u++)
                c[u] = (u >= b ? pa * up[u - b] : 0) + pb * left[u];
        }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    memcpy(out, prev + small * len, len * sizeof *out);
    free(prev);
    free(cur);
    return out;
}

double kvs_mann_whitney_cdf(size_t m, size_t n, size_t u)
{
    if (m == 0 || n == 0 || m > EXACT_MAX_PAIRS || n > EXACT_MAX_PAIRS / m)
        return NAN;
    size_t N = m * n;
    if (u >= N)
        return 1;
    /* U is symmetric about N / 2: the table needs the lower half only */
    bool upper = u > N / 2;
    size_t v = upper ? N - u - 1 : u; /* P(U <= u) = 1 - P(U <= N - u - 1) */
    double *p = mw_pmf(m, n, v + 1);
    if (!p)
        return NAN;
    double c = 0;
    for (size_t i = 0; i <= v; i++)
        c += p[i];
    free(p);
    return upper ? 1 - c : c;
}

/* the standard normal quantile, by bisection on erfc (deterministic, ~1e-15) */
static double normal_quantile(double p)
{
    double lo = -40, hi = 40;
    for (int i = 0; i < 200; i++) {
        double mid = (lo + hi) / 2;
        if (0.5 * erfc(-mid / sqrt(2)) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* k of the interval (0: none at this level), and its coverage */
static enum kvs_status critical_k(size_t m, size_t n, double level, size_t *k, double *coverage,
                                  bool *exact)
{
    double tail = (1 - level) / 2;
    size_t N = m * n;
    *k = 0;
    *coverage = NAN;
    *exact = N <= EXACT_MAX_PAIRS;
    if (*exact) {
        size_t len = N / 2 + 1;
        double *p = mw_pmf(m, n, len);
        if (!p)
            return KVS_STATUS_NO_MEMORY;
        double c = 0;
        for (size_t u = 0; u < len; u++) {
            c += p[u];
            if (c > tail * (1 + 1e-12)) /* past the tail (rounding of an exact boundary kept) */
                break;
            *k = u + 1;
            *coverage = 1 - 2 * c;
        }
        free(p);
        return KVS_STATUS_OK;
    }
    double sd = sqrt((double)N * (double)(m + n + 1) / 12.0);
    double kk = floor((double)N / 2 - normal_quantile(1 - tail) * sd);
    if (kk >= 1) {
        *k = (size_t)kk;
        *coverage = level;
    }
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// entry point

static double *finite_sorted(const double *v, size_t n, size_t *out_n)
{
    double *s = malloc((n ? n : 1) * sizeof *s);
    size_t k = 0;
    if (!s)
        return NULL;
    for (size_t i = 0; v && i < n; i++)
        if (isfinite(v[i]))
            s[k++] = v[i];
    qsort(s, k, sizeof *s, cmp_double);
    *out_n = k;
    return s;
}

enum kvs_status kvs_shift_estimate(const double *before, size_t nbefore, const double *after,
                                   size_t nafter, double level, struct kvs_shift *out)
{
    if (!out)
        return KVS_STATUS_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    out->low = out->high = out->confidence = out->shift = NAN;
    out->median_before = out->median_after = NAN;
    if (!(level > 0 && level < 1))
        return KVS_STATUS_INVALID_ARGUMENT;
    size_t m, n;
    double *x = finite_sorted(before, nbefore, &m);
    double *y = x ? finite_sorted(after, nafter, &n) : NULL;
    enum kvs_status st = KVS_STATUS_OK;
    if (!x || !y) {
        st = KVS_STATUS_NO_MEMORY;
    } else if (m == 0 || n == 0 || m > SIZE_MAX / n) {
        st = KVS_STATUS_INVALID_ARGUMENT;
    } else {
        size_t N = m * n, k;
        out->nbefore = m;
        out->nafter = n;
        out->median_before = median_sorted(x, m);
        out->median_after = median_sorted(y, n);
        out->shift = N % 2 ? kth_difference(x, m, y, n, (N + 1) / 2)
                           : (kth_difference(x, m, y, n, N / 2) +
                              kth_difference(x, m, y, n, N / 2 + 1)) / 2;
        st = critical_k(m, n, level, &k, &out->confidence, &out->exact);
        if (st == KVS_STATUS_OK && k >= 1 && k <= (N + 1) / 2) {
            out->has_interval = true;
            out->low = kth_difference(x, m, y, n, k);
            out->high = kth_difference(x, m, y, n, N + 1 - k);
        } else {
            out->confidence = NAN;
        }
    }
    free(x);
    free(y);
    return st;
}
