/* tests/fuzz/fuzz_trace.c — libFuzzer harness: bytes -> the whole analysis
 * (scanner, reader, linking, groups, steps, matching, findings), in memory,
 * then a report rendered from it.
 *
 *   tests/fuzz/run.sh trace 60
 *   build-fuzz/tests/fuzz/fuzz_trace -dict=tests/fuzz/trace.dict CORPUS_DIR
 *
 * The input's length picks the reader's buffer size (tiny buffers send small
 * inputs across every refill), the raw chunk size, the analysis options and
 * the report format, so one corpus covers them all. Beyond "no crash, no
 * leak, no undefined behaviour, no hang", it checks what the API promises:
 * the status is one a trace can cause; a result exactly on OK/TRUNCATED;
 * trace.truncated exactly on TRUNCATED; a malformed trace or a limit logs an
 * error naming the byte offset; the JSON report parses; the HTML report
 * carries no markup from the trace.
 */
#include <cjson/cJSON.h>
#include <ctype.h>

#include "analyze_input.h"
#include "fuzz_common.h"
#include "kvscope/analysis.h"
#include "kvscope/compare.h"
#include "kvscope/report.h"

/* Tags the HTML renderer writes; anything else after a '<' came from a trace. */
static bool known_tag(const char *p, size_t n)
{
    static const char *const tags[] = {
        "!DOCTYPE", "html", "head", "meta", "title", "style", "body", "footer", "h1", "h2", "h3",
        "p", "b", "code", "span", "dl", "dt", "dd", "ol", "ul", "li", "table", "thead", "tbody",
        "tr", "th", "td", "svg", "g", "rect", "line", "text", "math", "section", "div", "small",
        "em", "strong", "title", "polyline", "path", "circle", "tspan", "br", "caption", "details",
        "summary", "header", "main", "abbr", "sup", "sub",
    };
    size_t len = 0;
    if (len < n && p[len] == '/')
        len++;
    size_t start = len;
    while (len < n && (isalnum((unsigned char)p[len]) || p[len] == '!'))
        len++;
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (strlen(tags[i]) == len - start && !memcmp(p + start, tags[i], len - start))
            return true;
    return false;
}

static void check_html(const char *out, size_t n)
{
    for (const char *p = out; (p = memchr(p, '<', (size_t)(out + n - p))); p++)
        FUZZ_CHECK(known_tag(p + 1, (size_t)(out + n - p - 1)), "unexpected markup in the HTML "
                   "report at offset %zu: %.40s", (size_t)(p - out), p);
}

static void render(const struct kvs_analysis *a, unsigned variant)
{
    static const enum kvs_format formats[] = {KVS_FORMAT_TEXT, KVS_FORMAT_MARKDOWN,
                                              KVS_FORMAT_JSON, KVS_FORMAT_HTML};
    struct kvs_render_options ro;
    memset(&ro, 0, sizeof ro);
    ro.format = formats[variant % 4];
    ro.color = (variant / 4) % 2;
    ro.top_kernels = (int)(variant % 7);
    struct fuzz_log log;
    ro.log = fuzz_logger(&log);
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    FUZZ_CHECK(f, "open_memstream failed");
    enum kvs_status st;
    struct kvs_comparison *cmp = NULL;
    if ((variant / 8) % 2) {
        /* compare the analysis with itself: every group pairs, nothing changes */
        st = kvs_compare(a, a, 0, &cmp);
        FUZZ_CHECK(st == KVS_STATUS_OK, "kvs_compare(a, a): status %d", (int)st);
        st = kvs_render_compare(f, cmp, &ro);
        kvs_comparison_free(cmp);
    } else {
        st = kvs_render_report(f, a, &ro);
    }
    FUZZ_CHECK(fclose(f) == 0, "fclose of the memstream failed");
    FUZZ_CHECK(st == KVS_STATUS_OK, "rendering format %d: status %d", (int)ro.format, (int)st);
    if (ro.format == KVS_FORMAT_JSON) {
        cJSON *doc = cJSON_ParseWithLength(out, n);
        FUZZ_CHECK(doc, "the JSON report does not parse near offset %ld",
                   cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - out) : -1L);
        cJSON_Delete(doc);
    } else if (ro.format == KVS_FORMAT_HTML) {
        check_html(out, n);
    }
    free(out);
}

/* progress reports: bytes never go back, the total of in-memory input is unknown */
struct progress {
    uint64_t last;
    unsigned calls;
};

static void on_progress(void *user, uint64_t bytes_read, uint64_t bytes_total)
{
    struct progress *p = user;
    FUZZ_CHECK(bytes_read >= p->last && bytes_total == 0, "progress %llu after %llu, total %llu",
               (unsigned long long)bytes_read, (unsigned long long)p->last,
               (unsigned long long)bytes_total);
    p->last = bytes_read;
    p->calls++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t bufsizes[] = {0, 64, 67, 4096};
    static const size_t chunks[] = {0, 1, 7};
    struct kvs_analyze_input in;
    memset(&in, 0, sizeof in);
    in.path = "fuzz.json";
    in.data = data;
    in.len = size;
    in.in_memory = true;
    in.read_bufsize = bufsizes[size % 4];
    in.source_chunk = chunks[(size / 4) % 3];

    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    struct fuzz_log log;
    opt.log = fuzz_logger(&log);
    struct progress progress = {0, 0};
    switch ((size / 12) % 4) {
    case 1:
        opt.model = "glm5";
        opt.kv_capacity = 131072;
        opt.batch = 1;
        break;
    case 2:
        opt.step_regex = "^(layer|step)";
        opt.peak_gbps = 1000;
        opt.progress = on_progress;
        opt.progress_user = &progress;
        break;
    case 3:
        opt.model = "llama-3-70b";
        opt.device = "H200";
        break;
    default:
        break;
    }

    struct kvs_analysis *a = NULL;
    enum kvs_status st = kvs_analyze_input(&in, &opt, &a);
    /* an Nsight Systems export (the SQLite magic) is read from its file only:
     * in memory it is UNSUPPORTED, with an error (analysis.c kvs_read_any) */
    bool sqlite = size >= 16 && !memcmp(data, "SQLite format 3", 16);
    FUZZ_CHECK(st == KVS_STATUS_OK || st == KVS_STATUS_TRUNCATED || st == KVS_STATUS_PARSE ||
                   st == KVS_STATUS_LIMIT || st == KVS_STATUS_EMPTY ||
                   (sqlite && st == KVS_STATUS_UNSUPPORTED && log.errors > 0),
               "status %d (%s): %s", (int)st, kvs_status_str(st), log.last_error);
    FUZZ_CHECK(!sqlite || st == KVS_STATUS_UNSUPPORTED, "the SQLite magic read as JSON: status %d",
               (int)st);
    bool result = st == KVS_STATUS_OK || st == KVS_STATUS_TRUNCATED;
    FUZZ_CHECK(result == (a != NULL), "status %d with result %p", (int)st, (void *)a);
    if (st == KVS_STATUS_PARSE || st == KVS_STATUS_LIMIT || st == KVS_STATUS_EMPTY)
        FUZZ_CHECK(log.errors > 0, "status %d without an error message", (int)st);
    if (st == KVS_STATUS_PARSE || st == KVS_STATUS_LIMIT)
        FUZZ_CHECK(strstr(log.last_error, "byte "), "no byte offset in \"%s\"", log.last_error);
    if (st == KVS_STATUS_TRUNCATED)
        FUZZ_CHECK(log.warnings > 0, "truncated without a warning");
    if (!a)
        return 0;
    FUZZ_CHECK(a->trace.truncated == (st == KVS_STATUS_TRUNCATED), "truncated %d, status %d",
               (int)a->trace.truncated, (int)st);
    FUZZ_CHECK(a->trace.events > 0, "a result with no events");
    for (size_t i = 0; i < a->ngroup; i++) {
        const struct kvs_group *g = &a->groups[i];
        FUZZ_CHECK(g->op && g->role && g->ntensors >= 0 &&
                       (g->ntensors == 0 || (g->tensor_dims && g->tensor_dtypes)),
                   "group %zu has a NULL string or tensor list", i);
        for (int k = 0; k < g->ntensors; k++)
            FUZZ_CHECK(g->tensor_dtypes[k] && g->tensor_dims[k].rank >= 0 && g->tensor_dims[k].rank <= 8,
                       "group %zu tensor %d: NULL dtype or rank %d", i, k, g->tensor_dims[k].rank);
    }
    for (size_t i = 0; i < a->nfinding; i++)
        FUZZ_CHECK(a->findings[i].group < (int)a->ngroup, "finding %zu names group %d of %zu", i,
                   a->findings[i].group, a->ngroup);
    render(a, (unsigned)(size / 48));
    kvs_analysis_free(a);
    return 0;
}
