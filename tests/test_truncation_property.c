/* tests/test_truncation_property.c — every trace in ../shared/traces (hta/
 * included), cut at random byte offsets, gives a clean answer: a report over
 * the prefix (KVS_STATUS_TRUNCATED, trace.truncated set, no more events than
 * the whole trace) or KVS_STATUS_EMPTY when no event was complete — never a
 * parse error, a crash or a hang; no leak under LeakSanitizer (.ci/run's
 * sanitizer build). Both the JSON text and the .gz bytes are cut.
 *
 *   meson test -C build test_truncation_property
 *   KVS_TEST_SEED=1234 ./build/tests/test_truncation_property   (repeat a run)
 *
 * The cuts are drawn from a seed printed at the start: the clock's unless
 * KVS_TEST_SEED gives one. Skips (77) without ../shared/traces.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"

#define MAX_TRACES 256
#define BIG_BYTES ((size_t)20 << 20) /* traces past this get fewer cuts (time) */

static uint64_t rng;
static struct kvs_log_capture cap;

static char *paths[MAX_TRACES];
static int ntraces;

static void find_traces(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && ntraces < MAX_TRACES) {
        if (e->d_name[0] == '.')
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0)
            continue;
        size_t l = strlen(p);
        if (S_ISDIR(st.st_mode))
            find_traces(p);
        else if ((l > 5 && !strcmp(p + l - 5, ".json")) || (l > 8 && !strcmp(p + l - 8, ".json.gz")))
            paths[ntraces++] = strdup(p);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the file's bytes as stored (raw) and decompressed (json) */
static char *read_file(const char *path, size_t *n)
{
    return kvs_read_all(path, n);
}

static char *gunzip(const char *path, size_t *n)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        KVS_TEST_SETUP_FAILED("gzopen %s failed", path);
    size_t cap_ = 1 << 20, len = 0;
    char *buf = malloc(cap_);
    int got;
    while (buf && (got = gzread(f, buf + len, (unsigned)(cap_ - len))) > 0) {
        len += (size_t)got;
        if (len == cap_)
            buf = realloc(buf, cap_ *= 2);
    }
    gzclose(f);
    if (!buf)
        KVS_TEST_SETUP_FAILED("out of memory reading %s", path);
    *n = len;
    return buf;
}

static enum kvs_status analyze(const char *data, size_t n, struct kvs_analysis **a)
{
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(&cap);
    return kvs_analyze_memory(data, n, "cut", &opt, a);
}

/* One cut: the prefix data[0..cut) must analyse cleanly. A JSON cut that
 * leaves only trailing whitespace out is the whole document (HTA's
 * trace_file_list rank 1 ends in "}\n": a cut at its last byte read all 54
 * events, status ok), so it is no cut. */
static void check_cut(const char *name, const char *what, const char *data, size_t cut,
                      uint64_t full_events, size_t n)
{
    size_t rest = cut;
    while (!strcmp(what, "JSON") && rest < n &&
           (data[rest] == ' ' || data[rest] == '\t' || data[rest] == '\r' || data[rest] == '\n'))
        rest++;
    if (rest == n)
        return;
    struct kvs_analysis *a = NULL;
    enum kvs_status st = analyze(data, cut, &a);
    bool clean = (st == KVS_STATUS_TRUNCATED && a && a->trace.truncated &&
                  a->trace.events <= full_events) ||
                 (st == KVS_STATUS_EMPTY && !a);
    KVS_CHECK_MSG(clean, "%s cut %s at byte %zu: status %d (%s), %llu events of %llu; %s", name, what,
                  cut, (int)st, kvs_status_str(st), a ? (unsigned long long)a->trace.events : 0ull,
                  (unsigned long long)full_events, cap.last);
    kvs_analysis_free(a);
}

static void test_cut_every_shared_trace(void)
{
    char root[1024];
    const char *dir = getenv("KVS_SHARED_DIR");
    if (!dir || !*dir)
        KVS_TEST_SKIP("KVS_SHARED_DIR is not set");
    snprintf(root, sizeof root, "%s/traces", dir);
    find_traces(root);
    if (ntraces == 0)
        KVS_TEST_SKIP("no traces under %s", root);
    qsort(paths, (size_t)ntraces, sizeof *paths, cmp_str);
    int cuts = 0;
    for (int i = 0; i < ntraces; i++) {
        const char *name = paths[i] + strlen(root) + 1;
        bool gz = strlen(paths[i]) > 3 && !strcmp(paths[i] + strlen(paths[i]) - 3, ".gz");
        size_t nraw, njson;
        char *raw = read_file(paths[i], &nraw);
        char *json = gz ? gunzip(paths[i], &njson) : raw;
        if (!gz)
            njson = nraw;
        /* the whole trace first: its event count bounds every prefix's */
        struct kvs_analysis *a = NULL;
        enum kvs_status st = analyze(json, njson, &a);
        KVS_CHECK_MSG(st == KVS_STATUS_OK, "%s: status %d (%s)", name, (int)st, cap.last);
        uint64_t full = a ? a->trace.events : 0;
        kvs_analysis_free(a);
        int n_json = njson > BIG_BYTES ? 2 : 5, n_gz = !gz ? 0 : njson > BIG_BYTES ? 1 : 3;
        for (int k = 0; k < n_json; k++, cuts++)
            check_cut(name, "JSON", json, (size_t)(kvs_test_rand(&rng) % njson), full, njson);
        /* a .gz cut past its 10-byte header: the gzip stream is cut short */
        for (int k = 0; k < n_gz && nraw > 11; k++, cuts++)
            check_cut(name, ".gz", raw, 10 + (size_t)(kvs_test_rand(&rng) % (nraw - 11)), full, nraw);
        if (gz)
            free(json);
        free(raw);
        free(paths[i]);
    }
    fprintf(stderr, "%d cuts of %d traces\n", cuts, ntraces);
}

/* the cut property on a trace small enough to cut everywhere: every byte
 * offset of the fixture (the fuzz corpus does the same in fuzz_trace) */
static void test_cut_fixture_everywhere(void)
{
    char path[512];
    kvs_fixture_path(path, sizeof path, "array_be.json");
    size_t n;
    char *text = kvs_read_all(path, &n);
    struct kvs_analysis *a = NULL;
    KVS_REQUIRE(analyze(text, n, &a) == KVS_STATUS_OK);
    uint64_t full = a->trace.events;
    kvs_analysis_free(a);
    for (size_t cut = 0; cut < n; cut++) {
        /* a cut in trailing whitespace leaves a complete document */
        size_t rest = cut;
        while (rest < n && (text[rest] == ' ' || text[rest] == '\n'))
            rest++;
        if (rest == n)
            continue;
        check_cut("array_be.json", "JSON", text, cut, full, n);
    }
    free(text);
}

int main(int argc, char **argv)
{
    const char *s = getenv("KVS_TEST_SEED");
    rng = s && *s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    fprintf(stderr, "seed %llu (KVS_TEST_SEED=%llu repeats this run)\n", (unsigned long long)rng,
            (unsigned long long)rng);
    static const struct kvs_test tests[] = {
        {"cut_every_shared_trace", test_cut_every_shared_trace},
        {"cut_fixture_everywhere", test_cut_fixture_everywhere},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
