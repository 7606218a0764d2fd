/* tests/test_report_text.c — properties of the text and markdown reports that
 * goldens alone would not explain: section order (findings first), colour
 * only on request, names from the trace unable to inject escapes or break a
 * table, aligned columns, and empty analyses that still say something.
 *
 *   meson test -C build test_report_text
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_test.h"
#include "kvscope/report.h"
#include "report_fixture.h"

static char *render(const struct kvs_analysis *a, enum kvs_format fmt, bool color)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        KVS_TEST_SETUP_FAILED("open_memstream");
    struct kvs_render_options opt = {.format = fmt, .color = color};
    enum kvs_status st = kvs_render_report(f, a, &opt);
    fclose(f);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
    return buf;
}

static void test_order_and_content(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    char *t = render(&fx.a, KVS_FORMAT_TEXT, false);
    const char *fnd = strstr(t, "FINDINGS"), *grp = strstr(t, "COPY/CAST GROUPS"),
               *ker = strstr(t, "TOP KERNELS"), *stp = strstr(t, "STEPS");
    KVS_REQUIRE(fnd && grp && ker && stp);
    KVS_CHECK(fnd < grp && grp < ker && ker < stp);
    /* the numbers people read, in their units */
    KVS_CHECK(strstr(t, "226.5 MB") != NULL);       /* bytes/call: 131072*576*3 */
    KVS_CHECK(strstr(t, "1007") != NULL);           /* GB/s */
    KVS_CHECK(strstr(t, "21.0%") != NULL);          /* of the 4800 GB/s peak */
    KVS_CHECK(strstr(t, "[131072,1,576] x2") != NULL);
    KVS_CHECK(strstr(t, "bf16, fp8_e4m3fn") != NULL);
    KVS_CHECK(strstr(t, "KV capacity (tokens)") != NULL);
    KVS_CHECK(strstr(t, "kv_full_buffer_cast") < strstr(t, "gpu_idle"));
    KVS_CHECK(strstr(t, "13.8 GB/step") != NULL);
    KVS_CHECK(strstr(t, "ProfilerStep#13") != NULL);
    KVS_CHECK(!strchr(t, '\033'));
    KVS_CHECK(!strchr(t, '\x01'));
    KVS_CHECK(!strstr(t, "\xff"));
    free(t);
}

/* A group whose bytes are unknown (0) shows no rate rather than "0 GB/s". */
static void test_unknown_bytes(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    fx.groups[2].bytes_per_call = 0;
    fx.groups[2].achieved_gbps = 0;
    fx.groups[2].efficiency = 0;
    char *t = render(&fx.a, KVS_FORMAT_TEXT, false);
    const char *row = strstr(t, "  aten::_to_copy ");
    KVS_REQUIRE(row != NULL);
    const char *nl = strchr(row, '\n');
    KVS_CHECK(nl != NULL);
    char line[400];
    snprintf(line, sizeof line, "%.*s", (int)(nl - row), row);
    KVS_CHECK_MSG(strstr(line, "  -     -       -  -") != NULL && !strstr(line, "0.00"), "%s", line);
    free(t);
}

/* A rate above the HBM peak (a copy served from L2: HTA's A100 trace_diff
 * control trace has a 12.9 MB DtoD copy at 123% of 1555 GB/s) is shown as
 * it is, with a line under the table that says what it means; a host
 * link's copy reads "host" and is not counted as over the peak. */
static void test_over_peak_explained(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    char *t = render(&fx.a, KVS_FORMAT_TEXT, false);
    KVS_CHECK(!strstr(t, "over 100%"));
    free(t);
    fx.groups[1].efficiency = 1.227;
    fx.groups[1].achieved_gbps = 1.227 * fx.a.trace.peak_gbps;
    fx.groups[1].over_peak = true; /* as the analyzer says (test_steps step_figures) */
    for (int fmt = KVS_FORMAT_TEXT; fmt <= KVS_FORMAT_MARKDOWN; fmt++) {
        t = render(&fx.a, (enum kvs_format)fmt, false);
        KVS_CHECK_MSG(strstr(t, "122.7%") != NULL, "%s", t);
        KVS_CHECK_MSG(strstr(t, "over 100%: the bytes came from the L2 cache") != NULL, "%s", t);
        free(t);
    }
    fx.groups[1].host_link = true;
    fx.groups[1].efficiency = 0;
    fx.groups[1].over_peak = false;
    t = render(&fx.a, KVS_FORMAT_TEXT, false);
    KVS_CHECK(!strstr(t, "over 100%"));
    free(t);
}

/* "1 step", not "1 steps" (HTA's triton_example has one profiler step) */
static void test_one_step(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    fx.a.steps.count = 1;
    fx.a.nstep = 1;
    char *t = render(&fx.a, KVS_FORMAT_TEXT, false);
    KVS_CHECK_MSG(strstr(t, "  steps   1 step, ") != NULL, "%.400s", t);
    free(t);
    fx.a.steps.count = 4;
    fx.a.nstep = 4;
    t = render(&fx.a, KVS_FORMAT_TEXT, false);
    KVS_CHECK(strstr(t, "  steps   4 steps, ") != NULL);
    free(t);
}

static void test_color_only_on_request(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    char *t = render(&fx.a, KVS_FORMAT_TEXT, true);
    KVS_CHECK(strstr(t, "\033[1m") != NULL);
    KVS_CHECK(strstr(t, "\033[31mhigh") != NULL);
    /* a kernel name cannot carry its own escape sequence into the terminal */
    fx.kernels[2].name = "bad\033[2Jname";
    free(t);
    t = render(&fx.a, KVS_FORMAT_TEXT, false);
    KVS_CHECK(!strchr(t, '\033'));
    KVS_CHECK(strstr(t, "bad?[2Jname") != NULL);
    free(t);
}

/* Every line of a table block has its columns at the same places: find the
 * header's column starts and check each row's cell ends line up for numbers. */
static void test_columns_align(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    char *t = render(&fx.a, KVS_FORMAT_TEXT, false);
    const char *h = strstr(t, "  kernel ");
    KVS_REQUIRE(h != NULL);
    const char *calls = strstr(h, "calls");
    size_t end_col = (size_t)(calls - h) + 5; /* right edge of the "calls" column */
    const char *line = strchr(h, '\n') + 1;
    for (int r = 0; r < 4; r++) {
        const char *nl = strchr(line, '\n');
        KVS_REQUIRE(nl != NULL);
        /* the character before the right edge is a digit, the one at it a space */
        KVS_CHECK_MSG(line[end_col - 1] >= '0' && line[end_col - 1] <= '9' && line[end_col] == ' ',
                      "row %d: %.*s", r, (int)(nl - line), line);
        line = nl + 1;
    }
    free(t);
}

static int count_unescaped_pipes(const char *s, const char *end)
{
    int n = 0;
    for (const char *p = s; p < end; p++)
        if (*p == '|' && (p == s || p[-1] != '\\'))
            n++;
    return n;
}

static void test_markdown_tables_intact(void)
{
    struct kvs_fixture fx;
    kvs_fixture_unfixed(&fx);
    fx.groups[0].match.label = "a | b `c`";
    char *t = render(&fx.a, KVS_FORMAT_MARKDOWN, false);
    KVS_CHECK(!strchr(t, '\033'));
    int tables = 0, want = -1;
    for (const char *line = t; *line;) {
        const char *nl = strchr(line, '\n');
        if (!nl)
            nl = line + strlen(line);
        if (*line == '|') {
            int n = count_unescaped_pipes(line, nl);
            if (want < 0) {
                want = n;
                tables++;
            }
            KVS_CHECK_MSG(n == want, "%d cells, wanted %d: %.*s", n - 1, want - 1,
                          (int)(nl - line), line);
        } else {
            want = -1;
        }
        line = *nl ? nl + 1 : nl;
    }
    KVS_CHECK_EQ_INT(tables, 4); /* groups, the op roofline, kernels, steps */
    KVS_CHECK(strstr(t, "## Findings") < strstr(t, "## Copy/cast groups"));
    free(t);
}

static void test_empty_analysis_says_so(void)
{
    struct kvs_analysis a;
    memset(&a, 0, sizeof a);
    char *t = render(&a, KVS_FORMAT_TEXT, false);
    KVS_CHECK(strstr(t, "no step markers") != NULL);
    KVS_CHECK(strstr(t, "none: the trace has no GPU activity") != NULL);
    KVS_CHECK(strstr(t, "HBM peak unknown") != NULL);
    /* no findings in a trace without GPU data is no all-clear */
    KVS_CHECK(strstr(t, "none: the trace records no GPU activity") != NULL);
    KVS_CHECK(!strstr(t, "stands out"));
    free(t);
    char *m = render(&a, KVS_FORMAT_MARKDOWN, false);
    KVS_CHECK(strstr(m, "No step markers") != NULL);
    KVS_CHECK(strstr(m, "None: the trace records no GPU activity") != NULL);
    free(m);
    m = render(&a, KVS_FORMAT_HTML, false);
    KVS_CHECK(strstr(m, "None: the trace records no GPU activity") != NULL);
    free(m);
    /* GPU activity and no finding: then nothing stands out */
    a.trace.kernels = 3;
    t = render(&a, KVS_FORMAT_TEXT, false);
    KVS_CHECK(strstr(t, "none: no copy/cast bottleneck, bandwidth or idle-GPU problem stands out"));
    free(t);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"order_and_content", test_order_and_content},
        {"color_only_on_request", test_color_only_on_request},
        {"unknown_bytes", test_unknown_bytes},
        {"over_peak_explained", test_over_peak_explained},
        {"one_step", test_one_step},
        {"columns_align", test_columns_align},
        {"markdown_tables_intact", test_markdown_tables_intact},
        {"empty_analysis_says_so", test_empty_analysis_says_so},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
