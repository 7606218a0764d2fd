/* tests/test_report_html.c — the HTML report's structure without a browser:
 * self-contained (CSP forbids everything but inline style, no external
 * reference), every trace string escaped (no markup injection through kernel
 * names), both charts present with finite coordinates even for NaN inputs,
 * the steps chart's axis ending at its tallest bar, tags balanced. tests/test_html_chromium.sh renders it for real.
 *
 *   meson test -C build test_report_html
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_test.h"
#include "kvscope/report.h"
#include "report_fixture.h"

static char *render(const struct kvs_analysis *a)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        KVS_TEST_SETUP_FAILED("open_memstream");
    struct kvs_render_options opt = {.format = KVS_FORMAT_HTML};
    KVS_CHECK_EQ_INT(kvs_render_report(f, a, &opt), KVS_STATUS_OK);
    fclose(f);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void test_self_contained(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    char *h = render(&fx.a);
    KVS_CHECK(!strncmp(h, "<!DOCTYPE html>", 15));
    KVS_CHECK(strstr(h, "Content-Security-Policy\" content=\"default-src 'none'") != NULL);
    KVS_CHECK_EQ_INT(count(h, "http://") + count(h, "https://"),
                     count(h, "xmlns=\"http://www.w3.org/2000/svg\""));
    KVS_CHECK(!strstr(h, "<script"));
    KVS_CHECK(!strstr(h, "<link"));
    KVS_CHECK(!strstr(h, "@import"));
    KVS_CHECK(!strstr(h, "url("));
    KVS_CHECK(strstr(h, "</html>\n") != NULL);
    free(h);
}

static void test_trace_strings_escaped(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    fx.a.trace.path = "<img src=x onerror=alert(1)>.json";
    fx.groups[0].op = "aten::copy_\"><svg onload=alert(1)>";
    fx.findings[0].message = "</li></ol><script>alert(1)</script>";
    fx.ops[0].op = "aten::mm\"><svg onload=alert(2)>"; /* a point of the op roofline chart */
    char *h = render(&fx.a);
    KVS_CHECK(!strstr(h, "<script"));
    KVS_CHECK(!strstr(h, "<img"));
    KVS_CHECK(!strstr(h, "<svg onload"));
    KVS_CHECK(strstr(h, "&lt;img src=x onerror=alert(1)&gt;.json") != NULL);
    KVS_CHECK(strstr(h, "evil&lt;script&gt;") != NULL); /* the fixture's hostile kernel */
    KVS_CHECK_EQ_INT(count(h, "<svg "), 3); /* bandwidth bars, op roofline, steps */
    KVS_CHECK_EQ_INT(count(h, "</svg>"), 3);
    KVS_CHECK(strstr(h, "aten::mm&quot;&gt;&lt;svg onload=alert(2)&gt;") != NULL);
    KVS_CHECK_EQ_INT(count(h, "<table"), count(h, "</table>"));
    KVS_CHECK_EQ_INT(count(h, "<li>"), count(h, "</li>"));
    KVS_CHECK_EQ_INT(count(h, "<g>"), count(h, "</g>"));
    free(h);
}

static void test_charts_finite(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    fx.groups[1].achieved_gbps = NAN;
    fx.groups[2].achieved_gbps = INFINITY;
    fx.step[1].category_ms[KVS_CAT_GEMM] = NAN;
    fx.step[2].wall_ms = -INFINITY;
    char *h = render(&fx.a);
    KVS_CHECK(!strstr(h, "nan") && !strstr(h, "inf\""));
    KVS_CHECK(strstr(h, "HBM peak 4800 GB/s") != NULL);
    KVS_CHECK(strstr(h, "measured copy 4257 GB/s") != NULL);
    /* one bar per group and one stacked bar per step */
    KVS_CHECK_EQ_INT(count(h, "<rect class=\"bar\""), 3);
    free(h);
}

/* the y of the highest rect in the steps chart (its bars' tops) */
static double steps_chart_top(const char *h)
{
    const char *p = strstr(h, "aria-label=\"GPU time per step by category\"");
    const char *end = p ? strstr(p, "</svg>") : NULL;
    double top = INFINITY;
    if (!end)
        return NAN;
    for (const char *r = p; (r = strstr(r, "<rect x=\"")) && r < end; r++) {
        double x, y, w, hh;
        if (sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\" fill", &x, &y, &w,
                   &hh) == 4 && x < 710) /* a bar, not a legend swatch (right of the plot) */
            top = fmin(top, y);
    }
    return top;
}

static void test_steps_axis(void)
{
    /* the axis ends where the tallest stacked bar does: 16 (plot top) +
     * 240 (plot height) x (1 - 1/1.05), the 5% headroom above it */
    const double want = 16 + 240 * (1 - 1 / 1.05);
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    char *h = render(&fx.a);
    KVS_CHECK_NEAR(steps_chart_top(h), want, 0.06);
    free(h);
    /* a part the chart does not draw (an idle below 0, from a caller's own
     * analysis) adds nothing to the axis either: the axis used to end 20 ms
     * short of the tallest bar, step 3, whose top ran out of the chart
     * (y 14.7, above the plot's 16) */
    fx.step[3].category_ms[KVS_CAT_GEMM] = 40;
    fx.step[3].idle_ms = -20;
    h = render(&fx.a);
    KVS_CHECK_NEAR(steps_chart_top(h), want, 0.06);
    free(h);
}

static void test_empty(void)
{
    struct kvs_analysis a;
    memset(&a, 0, sizeof a);
    char *h = render(&a);
    KVS_CHECK(strstr(h, "no copy/cast groups in this trace") != NULL);
    KVS_CHECK(strstr(h, "no step markers in this trace") != NULL);
    KVS_CHECK(!strstr(h, "nan"));
    free(h);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"self_contained", test_self_contained},
        {"trace_strings_escaped", test_trace_strings_escaped},
        {"charts_finite", test_charts_finite},
        {"steps_axis", test_steps_axis},
        {"empty", test_empty},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
