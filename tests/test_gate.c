/* tests/test_gate.c — the gate's statistics and checks (kvscope/gate.h):
 * Mann-Whitney's exact distribution against an enumeration of every
 * arrangement; the Hodges-Lehmann shift and its interval against brute force
 * (every pairwise difference formed and sorted) on random samples with and
 * without ties, small (exact) and large (normal approximation); and
 * kvs_gate_compare on the synthetic analyses of report_fixture.c, rendered in
 * every format. Expectations are computed here, not copied from output.
 *
 *   meson test -C build test_gate
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kvs_test.h"
#include "kvscope/compare.h"
#include "kvscope/gate.h"
#include "kvscope/report.h"
#include "report_fixture.h"

// ----------------------------------------------------------------------------
// brute force

/* P(U <= u) by enumerating every choice of which of the m + n ranks belong
 * to the first sample (U = pairs where a second-sample value is below a
 * first-sample one) */
static double cdf_enumerated(int m, int n, int u)
{
    int total = m + n;
    long long hits = 0, all = 0;
    for (uint32_t mask = 0; mask < (1u << total); mask++) {
        if (__builtin_popcount(mask) != m)
            continue;
        all++;
        int U = 0, below = 0; /* ranks ascending: count second-sample values seen */
        for (int r = 0; r < total; r++) {
            if (mask & (1u << r))
                U += below;
            else
                below++;
        }
        hits += U <= u;
    }
    return (double)hits / (double)all;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* every after_j - before_i, sorted (the caller frees) */
static double *all_differences(const double *x, size_t m, const double *y, size_t n)
{
    double *d = malloc(m * n * sizeof *d);
    if (!d)
        KVS_TEST_SETUP_FAILED("malloc");
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            d[i * n + j] = y[j] - x[i];
    qsort(d, m * n, sizeof *d, cmp_double);
    return d;
}

/* P(U <= u) from counts of arrangements (exact integers): the largest
 * value is of the first sample, above all b of the second (b pairs), or of
 * the second */
static double cdf_counted(size_t m, size_t n, size_t u)
{
    size_t N = m * n;
    uint64_t *c = calloc((m + 1) * (n + 1) * (N + 1), sizeof *c);
    if (!c)
        KVS_TEST_SETUP_FAILED("calloc");
#define C(a, b, v) c[((a) * (n + 1) + (b)) * (N + 1) + (v)]
    for (size_t a = 0; a <= m; a++)
        for (size_t b = 0; b <= n; b++) {
            if (a == 0 || b == 0) {
                C(a, b, 0) = 1;
                continue;
            }
            for (size_t v = 0; v <= a * b; v++)
                C(a, b, v) = (v >= b ? C(a - 1, b, v - b) : 0) + C(a, b - 1, v);
        }
    uint64_t all = 0, hits = 0;
    for (size_t v = 0; v <= N; v++) {
        all += C(m, n, v);
        hits += v <= u ? C(m, n, v) : 0;
    }
#undef C
    free(c);
    return (double)hits / (double)all;
}

/* the interval's k by its definition: the largest k with P(U <= k-1) <=
 * 2.5% from the counts, or the normal formula past 2500 pairs */
static size_t expected_k(size_t m, size_t n)
{
    size_t N = m * n;
    if (N <= 2500) {
        size_t k = 0;
        for (size_t u = 0; u <= N / 2; u++) {
            if (cdf_counted(m, n, u) > 0.025 * (1 + 1e-12))
                break;
            k = u + 1;
        }
        return k;
    }
    double sd = sqrt((double)N * (double)(m + n + 1) / 12.0);
    double k = floor((double)N / 2 - 1.959963984540054 * sd);
    return k >= 1 ? (size_t)k : 0;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

// ----------------------------------------------------------------------------
// the statistics

static void test_exact_distribution(void)
{
    for (int m = 1; m <= 7; m++)
        for (int n = 1; n <= 7; n++)
            for (int u = 0; u <= m * n; u++)
                KVS_CHECK_NEAR(kvs_mann_whitney_cdf((size_t)m, (size_t)n, (size_t)u),
                               cdf_enumerated(m, n, u), 1e-12);
    /* larger, against the counts (exact integers: C(50, 25) fits in 64 bits) */
    static const size_t sizes[][2] = {{12, 12}, {20, 20}, {25, 25}, {1, 40}, {3, 200}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t m = sizes[i][0], n = sizes[i][1];
        for (size_t u = 0; u <= m * n; u += 1 + m * n / 40)
            KVS_CHECK_NEAR(kvs_mann_whitney_cdf(m, n, u), cdf_counted(m, n, u), 1e-12);
    }
    /* 4 and 4 steps: the two most extreme of the 70 arrangements */
    KVS_CHECK_NEAR(kvs_mann_whitney_cdf(4, 4, 0), 1.0 / 70, 1e-15);
    KVS_CHECK_NEAR(kvs_mann_whitney_cdf(4, 4, 1), 2.0 / 70, 1e-15);
    KVS_CHECK_NEAR(kvs_mann_whitney_cdf(4, 4, 16), 1.0, 0);
    /* beyond the exact table: NAN, not a guess */
    KVS_CHECK(isnan(kvs_mann_whitney_cdf(51, 50, 3)));
    KVS_CHECK(isnan(kvs_mann_whitney_cdf(0, 5, 0)));
}

/* one random case against brute force */
static void check_against_brute_force(size_t m, size_t n, bool ties)
{
    double *x = malloc(m * sizeof *x), *y = malloc(n * sizeof *y);
    if (!x || !y)
        KVS_TEST_SETUP_FAILED("malloc");
    for (size_t i = 0; i < m; i++)
        x[i] = ties ? floor(uniform() * 5) : 10 + uniform();
    for (size_t j = 0; j < n; j++)
        y[j] = ties ? floor(uniform() * 5) + 1 : 10.3 + uniform();
    struct kvs_shift s;
    KVS_CHECK_EQ_INT(kvs_shift_estimate(x, m, y, n, 0.95, &s), KVS_STATUS_OK);
    qsort(x, m, sizeof *x, cmp_double);
    qsort(y, n, sizeof *y, cmp_double);
    double *d = all_differences(x, m, y, n);
    size_t N = m * n, k = expected_k(m, n);
    double hl = N % 2 ? d[N / 2] : (d[N / 2 - 1] + d[N / 2]) / 2;
    KVS_CHECK_EQ_INT(s.nbefore, m);
    KVS_CHECK_EQ_INT(s.nafter, n);
    KVS_CHECK_MSG(s.shift == hl, "%zu x %zu: shift %.17g, brute force %.17g", m, n, s.shift, hl);
    KVS_CHECK_MSG(s.median_before == (m % 2 ? x[m / 2] : (x[m / 2 - 1] + x[m / 2]) / 2), "median");
    KVS_CHECK_EQ_INT(s.has_interval, k >= 1);
    KVS_CHECK_EQ_INT(s.exact, N <= 2500);
    if (k >= 1 && s.has_interval) {
        KVS_CHECK_MSG(s.low == d[k - 1] && s.high == d[N - k],
                      "%zu x %zu, k %zu: [%.17g, %.17g], brute force [%.17g, %.17g]", m, n, k, s.low,
                      s.high, d[k - 1], d[N - k]);
        KVS_CHECK(s.low <= s.shift && s.shift <= s.high);
        KVS_CHECK(s.confidence >= 0.95 - 1e-12);
        if (s.exact)
            KVS_CHECK_NEAR(s.confidence, 1 - 2 * kvs_mann_whitney_cdf(m, n, k - 1), 1e-12);
    }
    free(d);
    free(x);
    free(y);
}

static void test_shift_brute_force(void)
{
    for (size_t m = 1; m <= 12; m++)
        for (size_t n = 1; n <= 12; n++) {
            check_against_brute_force(m, n, false);
            check_against_brute_force(m, n, true);
        }
    /* past the exact table (the normal approximation's k), and lopsided */
    check_against_brute_force(60, 50, false);
    check_against_brute_force(60, 50, true);
    check_against_brute_force(1, 40, false);
    check_against_brute_force(200, 3, false);
}

static void test_shift_cases(void)
{
    struct kvs_shift s;
    /* one value each: the shift is their difference, no interval */
    double a = 10, b = 12;
    KVS_CHECK_EQ_INT(kvs_shift_estimate(&a, 1, &b, 1, 0.95, &s), KVS_STATUS_OK);
    KVS_CHECK(s.shift == 2 && !s.has_interval && isnan(s.low) && isnan(s.confidence));
    /* 3 and 3: P(U = 0) = 1/20 > 2.5%, no 95% interval however far apart */
    double x3[] = {1, 2, 3}, y3[] = {100, 101, 102};
    KVS_CHECK_EQ_INT(kvs_shift_estimate(x3, 3, y3, 3, 0.95, &s), KVS_STATUS_OK);
    KVS_CHECK(!s.has_interval && s.shift == 99);
    /* 4 and 4 apart: k = 1, the whole range of differences at 1 - 2/70 */
    double x4[] = {1, 2, 3, 4}, y4[] = {11, 12, 13, 14};
    KVS_CHECK_EQ_INT(kvs_shift_estimate(x4, 4, y4, 4, 0.95, &s), KVS_STATUS_OK);
    KVS_CHECK(s.has_interval && s.low == 7 && s.high == 13 && s.shift == 10 && s.exact);
    KVS_CHECK_NEAR(s.confidence, 1 - 2.0 / 70, 1e-12);
    /* a sample against itself: no shift, an interval around zero */
    KVS_CHECK_EQ_INT(kvs_shift_estimate(x4, 4, x4, 4, 0.95, &s), KVS_STATUS_OK);
    KVS_CHECK(s.shift == 0 && s.low < 0 && s.high > 0);
    /* non-finite values are left out; none left is an error */
    double xn[] = {NAN, 1, INFINITY, 2, 3, 4};
    KVS_CHECK_EQ_INT(kvs_shift_estimate(xn, 6, y4, 4, 0.95, &s), KVS_STATUS_OK);
    KVS_CHECK(s.nbefore == 4 && s.shift == 10);
    double nan1 = NAN;
    KVS_CHECK_EQ_INT(kvs_shift_estimate(&nan1, 1, y4, 4, 0.95, &s), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_shift_estimate(x4, 0, y4, 4, 0.95, &s), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_shift_estimate(x4, 4, y4, 4, 1.0, &s), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_shift_estimate(x4, 4, y4, 4, 0.95, NULL), KVS_STATUS_INVALID_ARGUMENT);
}

// ----------------------------------------------------------------------------
// the gate on the synthetic analyses

static char *render(const struct kvs_comparison *c, enum kvs_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        KVS_TEST_SETUP_FAILED("open_memstream");
    struct kvs_render_options opt = {.format = fmt};
    KVS_CHECK_EQ_INT(kvs_render_compare(f, c, &opt), KVS_STATUS_OK);
    fclose(f);
    return buf;
}

static const struct kvs_gate_check *find_check(const struct kvs_gate *g, enum kvs_gate_kind k,
                                               const char *what)
{
    for (size_t i = 0; i < g->ncheck; i++)
        if (g->checks[i].kind == k && (!what || !strcmp(g->checks[i].what, what)))
            return &g->checks[i];
    return NULL;
}

static void test_gate_fixture(void)
{
    static struct kvs_fixture fixed, unfixed;
    kvs_fixture_fixed(&fixed);
    kvs_fixture_unfixed(&unfixed);
    struct kvs_comparison *c = NULL;
    /* the fix undone: the full-buffer cast comes back */
    KVS_CHECK_EQ_INT(kvs_compare(&fixed.a, &unfixed.a, 1, &c), KVS_STATUS_OK);
    KVS_REQUIRE(c);
    KVS_CHECK_EQ_INT(kvs_gate_compare(c, &fixed.a, &unfixed.a, 5), KVS_STATUS_OK);
    const struct kvs_gate *g = c->gate;
    KVS_REQUIRE(g);
    KVS_CHECK(!g->passed && g->threshold_pct == 5);
    /* wall: 41.6 ms x4 -> 51.4, 51.8, 52.2, 52.6: every pair +9.8..+11.0 ms */
    const struct kvs_gate_check *w = find_check(g, KVS_GATE_WALL_TIME, NULL);
    KVS_REQUIRE(w);
    KVS_CHECK_EQ_INT(w->result, KVS_GATE_FAIL);
    KVS_CHECK_EQ_INT(w->significant, 1);
    KVS_CHECK_NEAR(w->before, 41.6, 1e-9);
    KVS_CHECK_NEAR(w->after, 52.0, 1e-9);
    KVS_CHECK_NEAR(w->change_pct, 100 * 10.4 / 41.6, 1e-9);
    KVS_CHECK_NEAR(w->low_pct, 100 * 9.8 / 41.6, 1e-9);
    KVS_CHECK_NEAR(w->high_pct, 100 * 11.0 / 41.6, 1e-9);
    KVS_CHECK(strstr(w->message, "+25.0% [+23.6, +26.4], 95%") != NULL);
    /* the finding of severity high that the fixed trace lacks */
    const struct kvs_gate_check *f = find_check(g, KVS_GATE_FINDING, "kv_full_buffer_cast");
    KVS_REQUIRE(f);
    KVS_CHECK_EQ_INT(f->result, KVS_GATE_FAIL);
    KVS_CHECK(f->significant == -1 && isnan(f->change_pct) && f->after == 13.6);
    /* the cast's role: 1024 -> 131072 tokens, 128x the bytes */
    const struct kvs_gate_check *r = find_check(g, KVS_GATE_COPY_BYTES, NULL);
    KVS_REQUIRE(r);
    KVS_CHECK_EQ_INT(r->result, KVS_GATE_FAIL);
    KVS_CHECK_NEAR(r->change_pct, 100 * (131072.0 / 1024 - 1), 1e-6);
    size_t fails = 0;
    for (size_t i = 0; i < g->ncheck; i++)
        fails += g->checks[i].result == KVS_GATE_FAIL;
    KVS_CHECK_EQ_INT(g->nreason, fails);

    char *text = render(c, KVS_FORMAT_TEXT);
    KVS_CHECK_MSG(strstr(text, "\n\nGATE  FAILED (--fail-on regression, threshold 5%): ") != NULL, "%s", text);
    KVS_CHECK(strstr(text, "GATE") < strstr(text, "VERDICT"));
    free(text);
    char *json = render(c, KVS_FORMAT_JSON);
    cJSON *root = cJSON_Parse(json);
    KVS_REQUIRE(root);
    const cJSON *gate = cJSON_GetObjectItem(root, "gate");
    KVS_CHECK(cJSON_IsFalse(cJSON_GetObjectItem(gate, "passed")));
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(gate, "reasons")), (int)g->nreason);
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(gate, "checks")), (int)g->ncheck);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(gate, "reasons"), 0);
    static const char *const keys[] = {"kind", "what", "before", "after", "change_pct", "significant"};
    const cJSON *it = first ? first->child : NULL;
    for (size_t i = 0; i < 6; i++, it = it ? it->next : NULL) /* the keys, first and in order */
        KVS_CHECK_MSG(it && !strcmp(it->string, keys[i]), "key %zu: %s", i, it ? it->string : "(none)");
    cJSON_Delete(root);
    free(json);
    char *html = render(c, KVS_FORMAT_HTML);
    KVS_CHECK(strstr(html, "<h2>Gate: failed</h2>") != NULL);
    KVS_CHECK(strstr(html, "<script>") == NULL);
    free(html);
    char *xml = render(c, KVS_FORMAT_JUNIT);
    const char *head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites ";
    KVS_CHECK(!strncmp(xml, head, strlen(head)));
    KVS_CHECK(strstr(xml, "classname=\"kvscope.gate.mla_fixed_json_gz\"") == NULL); /* after is unfixed */
    KVS_CHECK(strstr(xml, "classname=\"kvscope.gate.mla__unfixed__json_gz\"") != NULL);
    KVS_CHECK(strstr(xml, "&quot;unfixed&quot;") != NULL);
    free(xml);

    /* the other way round: better everywhere, no reason */
    kvs_comparison_free(c);
    c = NULL;
    KVS_CHECK_EQ_INT(kvs_compare(&unfixed.a, &fixed.a, 1, &c), KVS_STATUS_OK);
    KVS_REQUIRE(c);
    KVS_CHECK_EQ_INT(kvs_gate_compare(c, &unfixed.a, &fixed.a, 5), KVS_STATUS_OK);
    KVS_CHECK(c->gate && c->gate->passed && c->gate->nreason == 0);
    /* an ungated comparison has no junit */
    struct kvs_comparison *plain = NULL;
    KVS_CHECK_EQ_INT(kvs_compare(&unfixed.a, &fixed.a, 1, &plain), KVS_STATUS_OK);
    struct kvs_render_options opt = {.format = KVS_FORMAT_JUNIT};
    KVS_CHECK_EQ_INT(kvs_render_compare(stdout, plain, &opt), KVS_STATUS_INVALID_ARGUMENT);
    kvs_comparison_free(plain);
    /* nor a report */
    KVS_CHECK_EQ_INT(kvs_render_report(stdout, &fixed.a, &opt), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_gate_compare(c, &unfixed.a, &fixed.a, -1), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_gate_compare(c, &unfixed.a, &fixed.a, NAN), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_gate_compare(NULL, &unfixed.a, &fixed.a, 5), KVS_STATUS_INVALID_ARGUMENT);
    kvs_comparison_free(c);
}

/* one step each, and whole-trace totals: the threshold alone, said so */
static void test_gate_unjudged(void)
{
    static struct kvs_fixture fixed, unfixed;
    kvs_fixture_fixed(&fixed);
    kvs_fixture_unfixed(&unfixed);
    fixed.a.nstep = unfixed.a.nstep = 1;
    struct kvs_comparison *c = NULL;
    KVS_CHECK_EQ_INT(kvs_compare(&fixed.a, &unfixed.a, 1, &c), KVS_STATUS_OK);
    KVS_REQUIRE(c);
    KVS_CHECK_EQ_INT(kvs_gate_compare(c, &fixed.a, &unfixed.a, 5), KVS_STATUS_OK);
    const struct kvs_gate_check *w = find_check(c->gate, KVS_GATE_WALL_TIME, NULL);
    KVS_REQUIRE(w);
    /* the first step: 41.6 -> 51.4 ms */
    KVS_CHECK_NEAR(w->change_pct, 100 * (51.4 - 41.6) / 41.6, 1e-9);
    KVS_CHECK(w->result == KVS_GATE_FAIL && w->significant == -1 && !w->has_interval);
    KVS_CHECK_MSG(strstr(w->message, "(one step each)") &&
                      strstr(w->message, "significance cannot be judged from one step per trace, so "
                                         "the threshold alone decides"),
                  "%s", w->message);
    /* at a threshold above the change the same check passes, and still says why */
    KVS_CHECK_EQ_INT(kvs_gate_compare(c, &fixed.a, &unfixed.a, 30), KVS_STATUS_OK);
    w = find_check(c->gate, KVS_GATE_WALL_TIME, NULL);
    KVS_CHECK(w && w->result == KVS_GATE_PASS &&
              strstr(w->message, "within the 30% threshold; significance cannot be judged"));
    kvs_comparison_free(c);

    /* no step markers in either: GPU time as whole-trace totals, wall time not checked */
    fixed.a.nstep = unfixed.a.nstep = 0;
    fixed.a.steps.count = unfixed.a.steps.count = 0;
    c = NULL;
    KVS_CHECK_EQ_INT(kvs_compare(&fixed.a, &unfixed.a, 1, &c), KVS_STATUS_OK);
    KVS_REQUIRE(c);
    KVS_CHECK_EQ_INT(kvs_gate_compare(c, &fixed.a, &unfixed.a, 5), KVS_STATUS_OK);
    const struct kvs_gate_check *gpu = find_check(c->gate, KVS_GATE_GPU_TIME, NULL);
    w = find_check(c->gate, KVS_GATE_WALL_TIME, NULL);
    KVS_REQUIRE(gpu && w);
    KVS_CHECK_EQ_STR(gpu->what, "GPU time");
    KVS_CHECK_NEAR(gpu->before, fixed.a.steps.total_gpu_ms, 1e-12);
    KVS_CHECK(strstr(gpu->message, "whole-trace totals") != NULL);
    KVS_CHECK_EQ_INT(w->result, KVS_GATE_SKIPPED);
    kvs_comparison_free(c);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"exact_distribution", test_exact_distribution},
        {"shift_brute_force", test_shift_brute_force},
        {"shift_cases", test_shift_cases},
        {"gate_fixture", test_gate_fixture},
        {"gate_unjudged", test_gate_unjudged},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
