/* tests/test_event_paths.c — the reader's one-pass path for the usual event
 * (reader/event_fast.c) against its general, token-by-token path
 * (kvs_read_opts.general_path_only): on every trace of the repository and of
 * ../shared, and on thousands of mutations of real events, both must give the
 * same status, the same messages (error offsets included) and the same
 * records, field by field.
 *
 *   meson test -C build test_event_paths     ./build/tests/test_event_paths [case...]
 *
 * The mutations put at a random place of a real event (after '{', ',' or
 * ':', or inside a string) one of the things the fast path must give up on or
 * read exactly as the general path does: escapes in keys and kept strings,
 * exponents, long and negative numbers, string ids, repeated keys, deep and
 * empty containers, literals, odd whitespace, control bytes, cut events and
 * malformed numbers. Many mutants are not JSON: then the error and its
 * offset must agree too.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_test.h"
#include "kvscope/reader.h"
#include "trace_same.h" // defines: kvs_test_trace_differ

struct capture {
    char text[4096];
    size_t n;
};

static void capture_log(void *user, enum kvs_log_level level, const char *msg)
{
    struct capture *c = user;
    int k = snprintf(c->text + c->n, sizeof c->text - c->n, "%d:%s\n", (int)level, msg);
    if (k > 0)
        c->n += (size_t)k < sizeof c->text - c->n ? (size_t)k : sizeof c->text - c->n - 1;
}

/* Read data both ways through a scanner buffer of bufsize bytes and reads
 * of chunk bytes (0: the defaults); false (with a message) when they differ. */
static bool both_paths_sized(const void *data, size_t n, const char *name, size_t bufsize,
                             size_t chunk)
{
    struct kvs_trace_data t[2];
    struct capture cap[2];
    enum kvs_status st[2];
    for (int k = 0; k < 2; k++) {
        memset(&cap[k], 0, sizeof cap[k]);
        struct kvs_logger lg = {capture_log, &cap[k], KVS_LOG_DEBUG};
        struct kvs_read_opts o;
        memset(&o, 0, sizeof o);
        o.log = &lg;
        o.general_path_only = k == 1;
        o.bufsize = bufsize;
        o.source_chunk = chunk;
        memset(&t[k], 0, sizeof t[k]);
        st[k] = kvs_read_trace_memory(data, n, name, &o, &t[k]);
    }
    const char *d = st[0] != st[1] ? "status" : strcmp(cap[0].text, cap[1].text) ? "messages"
                  : st[0] == KVS_STATUS_OK || st[0] == KVS_STATUS_TRUNCATED ? kvs_test_trace_differ(&t[0], &t[1], true)
                                                                            : NULL;
    KVS_CHECK_MSG(d == NULL, "%s: the two paths differ in %s (status %d / %d)\n  fast:    %s  general: %s",
                  name, d, (int)st[0], (int)st[1], cap[0].text, cap[1].text);
    kvs_trace_data_free(&t[0]);
    kvs_trace_data_free(&t[1]);
    return d == NULL;
}

static bool both_paths(const void *data, size_t n, const char *name)
{
    return both_paths_sized(data, n, name, 0, 0);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    for (;;) {
        if (len == cap)
            b = realloc(b, cap *= 2);
        size_t k = fread(b + len, 1, cap - len, f);
        if (k == 0)
            break;
        len += k;
    }
    fclose(f);
    *n = len;
    return b;
}

static bool trace_name(const char *n)
{
    size_t l = strlen(n);
    return (l > 5 && !strcmp(n + l - 5, ".json")) || (l > 8 && !strcmp(n + l - 8, ".json.gz"));
}

/* every trace under dir (one level of subfolders); how many were read */
static int read_dir(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (trace_name(e->d_name)) {
            size_t n;
            char *b = slurp(path, &n);
            if (b) {
                both_paths(b, n, path);
                count++;
            }
            free(b);
        } else if (depth > 0) {
            count += read_dir(path, depth - 1);
        }
    }
    closedir(d);
    return count;
}

static void test_repository_traces(void)
{
    const char *root = getenv("KVS_SOURCE_ROOT");
    if (!root)
        KVS_TEST_SKIP("KVS_SOURCE_ROOT is not set (meson test sets it)");
    static const char *dirs[] = {"tests/traces", "tests/fixtures", "examples/traces"};
    int count = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
        count += read_dir(p, 2);
    }
    fprintf(stderr, "%d repository traces read both ways\n", count);
    KVS_CHECK(count > 10);
}

static void test_shared_traces(void)
{
    char p[4096];
    if (!kvs_test_shared_path(p, sizeof p, "traces"))
        KVS_TEST_SKIP("no ../shared (KVS_SHARED_DIR)");
    int count = read_dir(p, 2);
    fprintf(stderr, "%d shared traces read both ways\n", count);
    if (count == 0)
        KVS_TEST_SKIP("no traces under %s", p);
}

// ----------------------------------------------------------------------------
// mutations of real events

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* what a mutation inserts: after '{' or ',' a member, after ':' a value
 * prefix replacing the value's first byte, or raw bytes anywhere */
static const char *const members[] = {
    "\"ph\": \"X\", ", "\"ph\": \"i\", ", "\"ph\": \"B\", ", "\"ph\": \"E\", ", "\"p\\u0068\": \"X\", ",
    "\"cat\": \"kernel\", ", "\"cat\": \"cpu_op\", ", "\"cat\": \"c\\u0070u_op\", ", "\"cat\": 7, ",
    "\"name\": \"a\\\"b\", ", "\"name\": null, ", "\"name\": \"\\ud83d\\ude00\", ", "\"ts\": 1e3, ",
    "\"ts\": -0.5, ", "\"ts\": 12345678901234567890, ", "\"ts\": \"5\", ", "\"dur\": 1.0000000001, ",
    "\"dur\": -3, ", "\"pid\": \"p\\\\q\", ", "\"pid\": 1e2, ", "\"tid\": -7, ", "\"tid\": [1], ",
    "\"args\": [], ", "\"args\": {\"External id\": \"0x10\"}, ", "\"args\": {\"stream\": \"7\"}, ",
    "\"args\": {\"grid\": [1, 2, 3]}, ", "\"args\": {\"grid\": [0]}, ", "\"args\": {\"block\": [2147483649]}, ",
    "\"args\": {\"Input Dims\": [[1, 2], []], \"Input type\": [\"float\", \"\"]}, ",
    "\"args\": {\"Input Dims\": 5}, ", "\"args\": {\"correlation\": 1e1}, ", "\"args\": {\"device\": -0}, ",
    "\"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], ",
    "\"x\": {\"a\": {\"b\": [true, false, null, \"\\\\\"]}}, ", "\"x\": 01, ", "\"x\": 1.5.5, ",
    "\"x\": tru, ", "\"x\": -, ", "\"x\": \"\\q\", ", "\"ts\": 5, \"ts\": 6, ", "\"k\\\"ey\": 1, ",
    "\"x\" : 1 , ", "\"x\":\t\r\n1,", "\"x\": 1e+, ", "\"x\": [1,], ", "\"x\": {,}, ",
    "\"ts\": 1000000.0015678, ", "\"dur\": 0.0009999, ", "\"dur\": 7.12345, ", "\"ts\": 9223372036854775, ",
    "\"ts\": 999999999999999999, ", "\"args\": {\"bytes\": -12.9}, ", "\"tid\": 1.5e3, ",
    /* arrays as args hold them, and near misses */
    "\"args\": {\"Input Dims\": [[1,2],[3]], \"Input type\": [\"a\",\"b\"]}, ",
    "\"args\": {\"Input Dims\": [ [1], [2] ]}, ", "\"args\": {\"Input Dims\": [[1, 2] ,[3]]}, ",
    "\"args\": {\"Input Dims\": [[1,  2]]}, ", "\"args\": {\"Input Dims\": [[01]]}, ",
    "\"args\": {\"Input Dims\": [[-0, 1.5, -2.25]]}, ", "\"args\": {\"Input Dims\": [[1.]]}, ",
    "\"args\": {\"Input Dims\": [[1e5, 2]]}, ", "\"args\": {\"Input Dims\": [[1234567890123456]]}, ",
    "\"args\": {\"Input Dims\": [[123456789012345, 0.123456789012345]]}, ",
    "\"args\": {\"Input type\": [\"a\\\"b\", \"c\"]}, ", "\"args\": {\"Input Dims\": [[1,,2]]}, ",
    "\"args\": {\"Input Dims\": [[1,]]}, ", "\"args\": {\"Input Dims\": [[,1]]}, ",
    "\"args\": {\"Input Dims\": [[1 2]]}, ", "\"args\": {\"Input type\": [\"a\" \"b\"]}, ",
    "\"args\": {\"Input type\": [\"a\"1]}, ", "\"args\": {\"Input Dims\": [[1\"a\"]]}, ",
    "\"args\": {\"Input Dims\": [[1]]]}, ", "\"args\": {\"Input Dims\": [[-]]}, ",
    "\"args\": {\"Input Dims\": [[1], {}]}, ", "\"args\": {\"Input Dims\": [true, [null]]}, ",
    "\"x\": [1,2, 3,  4], ", "\"x\": [\"\", [[]], -1, 0.5], ", "\"x\": [\"]\", \"[\", \"\\\\\"], ",
    "\"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], ",
    "\"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], ",
};
/* members too long to write out: built once (generated_init) */
static char *generated[6];

/* pre, then item times over (joined by sep), then post */
static char *repeat_list(const char *pre, const char *item, const char *sep, int times, const char *post)
{
    size_t n = strlen(pre) + strlen(post) + (size_t)times * (strlen(item) + strlen(sep)) + 1;
    char *b = malloc(n), *w = b;
    w += sprintf(w, "%s", pre);
    for (int i = 0; i < times; i++)
        w += sprintf(w, "%s%s", i ? sep : "", item);
    sprintf(w, "%s", post);
    return b;
}

static void generated_init(void)
{
    /* a grid over LAUNCH_DIMS_MAX (4096) bytes, and one just under */
    generated[0] = repeat_list("\"args\": {\"grid\": [5, 6, 7", "   ", "", 1400, "]}, ");
    generated[1] = repeat_list("\"args\": {\"grid\": [5, 6, 7", "   ", "", 1300, "]}, ");
    /* Input Dims of rank 64 (kept) and 65 (the limit) */
    generated[2] = repeat_list("\"args\": {\"Input Dims\": [[", "2", ", ", 64, "]]}, ");
    generated[3] = repeat_list("\"args\": {\"Input Dims\": [[", "2", ", ", 65, "]]}, ");
    /* Input Dims and Input type over KVS_READ_MAX_SHAPE (64 KiB): not kept */
    generated[4] = repeat_list("\"args\": {\"Input Dims\": [", "[1, 2, 3]", ", ", 7000, "]}, ");
    generated[5] = repeat_list("\"args\": {\"Input type\": [", "\"float\"", ", ", 8000, "]}, ");
}
static const char *const raw[] = {
    " ", "\n", "\t", "\r", "\\", "\"", ",", ":", "{", "}", "[", "]", "\x01", "\x7f", "e5", ".", "-",
    "0", "\\u00", "\xc3\xa9", "\0",
};

/* One event of text: [*s, *e) holds {...} at depth 1 of traceEvents. */
static void mutate_event(const char *ev, size_t n, char *out, size_t *out_n)
{
    size_t at;
    const char *ins;
    int kind = (int)(next_rand() % 3);
    /* pick a position: after '{'/',' for members, else anywhere */
    for (int tries = 0;; tries++) {
        at = 1 + next_rand() % (n - 1);
        char c = ev[at - 1];
        if (kind == 2 || tries > 50 || c == '{' || c == ',')
            break;
    }
    if (kind == 2) {
        ins = raw[next_rand() % (sizeof raw / sizeof *raw)];
    } else if (next_rand() % 16 == 0) {
        ins = generated[next_rand() % (sizeof generated / sizeof *generated)];
    } else {
        ins = members[next_rand() % (sizeof members / sizeof *members)];
    }
    size_t k = *ins ? strlen(ins) : 1; /* "\0": one NUL byte */
    memcpy(out, ev, at);
    memcpy(out + at, ins, k);
    memcpy(out + at + k, ev + at, n - at);
    *out_n = n + k;
    if (next_rand() % 8 == 0) { /* and sometimes cut the event short */
        *out_n = 1 + next_rand() % *out_n;
    }
}

/* The real events of tests/fixtures/kineto_small.json: each '{' at depth 3
 * (inside traceEvents' '[') to its '}'; how many (at most max). */
static size_t fixture_events(const char *doc, size_t n, const char **ev, size_t *evn, size_t max)
{
    size_t nev = 0;
    int depth = 0;
    const char *start = NULL;
    bool in_str = false;
    for (size_t i = 0; i < n && nev < max; i++) {
        char c = doc[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"')
            in_str = true;
        else if (c == '{' || c == '[') {
            if (++depth == 3 && c == '{')
                start = doc + i;
        } else if (c == '}' || c == ']') {
            if (depth-- == 3 && c == '}' && start) {
                ev[nev] = start;
                evn[nev++] = (size_t)(doc + i + 1 - start);
                start = NULL;
            }
        }
    }
    return nev;
}

/* tests/fixtures/kineto_small.json read, its events into ev/evn (*nev of
 * them, at most max): the document they point into, or NULL when
 * KVS_SOURCE_ROOT is not set (meson test sets it). */
static char *fixture_doc(const char **ev, size_t *evn, size_t max, size_t *nev)
{
    const char *root = getenv("KVS_SOURCE_ROOT");
    if (!root)
        return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/kineto_small.json", root);
    size_t n;
    char *doc = slurp(path, &n);
    if (!doc)
        KVS_TEST_SETUP_FAILED("cannot read %s", path);
    *nev = fixture_events(doc, n, ev, evn, max);
    return doc;
}

static void test_mutations(void)
{
    /* real Kineto events of three kinds, as PyTorch writes them */
    const char *ev[512];
    size_t evn[512], nev = 0;
    char *doc = fixture_doc(ev, evn, 512, &nev);
    if (!doc)
        KVS_TEST_SKIP("KVS_SOURCE_ROOT is not set (meson test sets it)");
    KVS_REQUIRE(nev >= 5);
    static const char head[] = "{\"traceEvents\": [\n  ";
    static const char tail[] = "\n]}";
    generated_init();
    char *buf = malloc(1 << 21), *mut = malloc(1 << 19);
    int docs = 0, failures = 0;
    for (int round = 0; round < 3000 && failures < 5; round++) {
        /* a few real events, one of them mutated (twice, now and then) */
        size_t len = 0;
        memcpy(buf, head, sizeof head - 1);
        len += sizeof head - 1;
        int count = 1 + (int)(next_rand() % 4), which = (int)(next_rand() % (uint32_t)count);
        for (int j = 0; j < count; j++) {
            size_t e = next_rand() % nev;
            if (j) {
                memcpy(buf + len, ",\n  ", 4);
                len += 4;
            }
            if (j == which && evn[e] < 8000) {
                size_t mn;
                mutate_event(ev[e], evn[e], mut, &mn);
                if (next_rand() % 4 == 0) {
                    char *m2 = malloc(mn + (1 << 19));
                    size_t m2n;
                    mutate_event(mut, mn > 1 ? mn : 2, m2, &m2n);
                    memcpy(mut, m2, m2n);
                    mn = m2n;
                    free(m2);
                }
                memcpy(buf + len, mut, mn);
                len += mn;
            } else {
                memcpy(buf + len, ev[e], evn[e]);
                len += evn[e];
            }
        }
        memcpy(buf + len, tail, sizeof tail - 1);
        len += sizeof tail - 1;
        char name[64];
        snprintf(name, sizeof name, "mutant %d", round);
        failures += !both_paths(buf, len, name);
        docs++;
    }
    /* and every member above at every top level member boundary of every event */
    int placed = 0;
    for (size_t e = 0; e < nev && failures < 5; e++) {
        int d = 0;
        bool q = false;
        for (size_t i = 0; i < evn[e] && failures < 5; i++) {
            char c = ev[e][i];
            if (q) {
                if (c == '\\')
                    i++;
                else if (c == '"')
                    q = false;
                continue;
            }
            if (c == '"')
                q = true;
            else if (c == '{' || c == '[')
                d++;
            else if (c == '}' || c == ']')
                d--;
            bool last = c == '}' && d == 0; /* before the event's '}': ", member" */
            if (!((c == '{' && d == 1) || (c == ',' && d == 1) || last))
                continue;
            size_t nm = sizeof members / sizeof *members, ng = sizeof generated / sizeof *generated;
            for (size_t m = 0; m < nm + ng && failures < 5; m++) {
                const char *ins = m < nm ? members[m] : generated[m - nm];
                size_t k = strlen(ins), len = 0;
                memcpy(buf, head, sizeof head - 1);
                len += sizeof head - 1;
                size_t cut = last ? i : i + 1;
                memcpy(buf + len, ev[e], cut);
                len += cut;
                if (last) {
                    memcpy(buf + len, ", ", 2);
                    len += 2;
                    k -= 2; /* without its own ", " */
                }
                memcpy(buf + len, ins, k);
                len += k;
                memcpy(buf + len, ev[e] + cut, evn[e] - cut);
                len += evn[e] - cut;
                memcpy(buf + len, tail, sizeof tail - 1);
                len += sizeof tail - 1;
                char name[64];
                snprintf(name, sizeof name, "event %zu + member %zu at %zu", e, m, i);
                failures += !both_paths(buf, len, name);
                placed++;
            }
        }
    }
    fprintf(stderr, "%d mutated documents and %d with a member placed read both ways (%zu real events)\n",
            docs, placed, nev);
    free(buf);
    free(mut);
    free(doc);
    for (size_t i = 0; i < sizeof generated / sizeof *generated; i++)
        free(generated[i]);
}

/* The one-pass path guesses each key from the ones before it in events of
 * the same kind (reader/reader_impl.h, struct kvs_key_guess) and checks the
 * guess with one compare of the text "key": . Here each real event is read
 * four times (the guesses learnt), then once changed at one key -- a byte
 * more or less in the key, one bit off in its last byte, other whitespace
 * around its colon, an escape in it, the document cut just after it -- or at
 * its value (one bit off in its last byte, a digit before it, a space after
 * it, its last byte gone, a number or a string in its place), then once more
 * as it was: both paths must agree on every one. And events with
 * more distinct keys than there are slots, and keys just under and over the
 * 32 bytes a slot holds. */
static void test_guessed_keys(void)
{
    const char *ev[512];
    size_t evn[512], nev = 0;
    char *doc = fixture_doc(ev, evn, 512, &nev);
    if (!doc)
        KVS_TEST_SKIP("KVS_SOURCE_ROOT is not set (meson test sets it)");
    KVS_REQUIRE(nev >= 5);
    static const char head[] = "{\"traceEvents\": [\n  ";
    static const char tail[] = "\n]}";
    size_t cap = 1 << 20;
    char *buf = malloc(cap), *var = malloc(1 << 16);
    KVS_REQUIRE(buf && var);
    int docs = 0, failures = 0;
    for (size_t e = 0; e < nev && failures < 5; e++) {
        if (evn[e] > 8000)
            continue;
        const char *x = ev[e];
        bool q = false;
        for (size_t i = 0; i < evn[e] && failures < 5; i++) {
            if (q) {
                if (x[i] == '\\')
                    i++;
                else if (x[i] == '"')
                    q = false;
                continue;
            }
            if (x[i] != '"') {
                continue;
            }
            q = true;
            /* a key: a string followed by ':' */
            size_t j = i + 1;
            while (j < evn[e] && x[j] != '"')
                j += x[j] == '\\' ? 2 : 1;
            if (j + 1 >= evn[e] || x[j + 1] != ':')
                continue;
            /* its value, when it is a scalar after ": " (guessed values) */
            size_t v0 = j + 3, v1 = v0;
            bool scalar = j + 3 < evn[e] && x[j + 2] == ' ' && strchr("\"-0123456789tfn", x[v0]);
            if (scalar && x[v0] == '"') {
                for (v1 = v0 + 1; v1 < evn[e] && x[v1] != '"'; v1 += x[v1] == '\\' ? 2 : 1)
                    ;
                v1++;
            } else if (scalar) {
                while (v1 < evn[e] && !strchr(",}] ", x[v1]))
                    v1++;
            }
            for (int how = 0; how < 15 && failures < 5; how++) {
                size_t vn = 0;
                bool cut = false;
                if (how >= 9) {
                    /* the value changed: its last byte one bit off, a digit
                     * before it, a space after it, its last byte gone, a
                     * number or a string in its place */
                    if (!scalar || v1 <= v0 + 1 || v1 > evn[e])
                        break;
                    memcpy(var, x, v0);
                    vn = v0;
                    size_t from = v1;
                    switch (how) {
                    case 9: memcpy(var + vn, x + v0, v1 - v0); vn += v1 - v0; var[vn - 1 - (x[v0] == '"')] ^= 1; break;
                    case 10: var[vn++] = '7'; from = v0; break;
                    case 11: memcpy(var + vn, x + v0, v1 - v0); vn += v1 - v0; var[vn++] = ' '; break;
                    case 12: memcpy(var + vn, x + v0, v1 - v0 - 1); vn += v1 - v0 - 1; break;
                    case 13: memcpy(var + vn, "1e2", 3); vn += 3; break;
                    case 14: memcpy(var + vn, "\"s\"", 3); vn += 3; break;
                    }
                    memcpy(var + vn, x + from, evn[e] - from);
                    vn += evn[e] - from;
                    goto build;
                }
                /* the event up to the key's closing quote (i..j is "key") */
                memcpy(var, x, j);
                vn = j;
                const char *rest = x + j; /* from the closing quote */
                switch (how) {
                case 0: var[vn++] = 'x'; break;                        /* "keyx": */
                case 1: if (j - i > 2) vn--; break;                    /* "ke": */
                case 2: var[vn - 1] ^= 1; break;                       /* one bit off */
                case 3: memcpy(var + vn, "\":  ", 4); vn += 4; rest += 3; break; /* two spaces */
                case 4: memcpy(var + vn, "\":\t", 3); vn += 3; rest += 3; break;
                case 5: memcpy(var + vn, "\" : ", 4); vn += 4; rest += 3; break;
                case 6: memcpy(var + vn, "\":", 2); vn += 2; rest += 3; break;  /* no space */
                case 7: memcpy(var + vn, "\\u0041", 6); vn += 6; break;       /* an escape */
                case 8: cut = true; memcpy(var + vn, "\": ", 3); vn += 3; break;
                }
                if (!cut) {
                    size_t left = evn[e] - (size_t)(rest - x);
                    memcpy(var + vn, rest, left);
                    vn += left;
                }
            build:;
                size_t len = 0;
                memcpy(buf, head, sizeof head - 1);
                len += sizeof head - 1;
                for (int k = 0; k < 4; k++) {
                    memcpy(buf + len, x, evn[e]);
                    len += evn[e];
                    memcpy(buf + len, ",\n  ", 4);
                    len += 4;
                }
                memcpy(buf + len, var, vn);
                len += vn;
                if (!cut) {
                    memcpy(buf + len, ",\n  ", 4);
                    len += 4;
                    memcpy(buf + len, x, evn[e]);
                    len += evn[e];
                    memcpy(buf + len, tail, sizeof tail - 1);
                    len += sizeof tail - 1;
                }
                char name[96];
                snprintf(name, sizeof name, "event %zu, key at %zu changed (%d)", e, i, how);
                failures += !both_paths(buf, len, name);
                docs++;
            }
        }
    }
    /* 100 distinct args keys (more than the slots), keys of 27 to 30 bytes
     * (a slot holds "key": of up to 32), each event twice */
    size_t len = 0;
    len += (size_t)snprintf(buf + len, cap - len, "%s", head);
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < 100; k++)
            len += (size_t)snprintf(
                buf + len, cap - len,
                "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"pid\": 0, "
                "\"tid\": 7, \"ts\": %d.5, \"dur\": 1.0, \"args\": {\"key number %d\": %d, "
                "\"%.*s\": 1, \"correlation\": %d, \"device\": 0, \"stream\": %d}}",
                round || k ? ",\n  " : "", k, 1000 + k + round * 1000, k, k,
                27 + k % 4, "abcdefghijklmnopqrstuvwxyz0123456789", k + 1, k % 3);
    len += (size_t)snprintf(buf + len, cap - len, "%s", tail);
    KVS_REQUIRE(len < cap - 1);
    failures += !both_paths(buf, len, "100 args keys");
    docs++;
    fprintf(stderr, "%d documents with a guessed key changed read both ways\n", docs);
    free(buf);
    free(var);
    free(doc);
}

/* Keys and values with raw NUL bytes in them (JSON forbids control bytes in
 * strings; the reader does not check strings it does not decode), learnt as
 * guesses, then met again across the scanner buffer's end: the NUL sentinel
 * at the end must not pass for the NUL of a guess while the stale bytes
 * after it (what an earlier fill left there) match the rest. Small buffers
 * and reads of every size put every byte of them at the buffer's end. */
static void test_guesses_at_refills(void)
{
    size_t cap = 1 << 16, len = 0;
    char *doc = malloc(cap);
    KVS_REQUIRE(doc);
    len += (size_t)snprintf(doc, cap, "{\"traceEvents\": [");
    for (int i = 0; i < 60; i++) {
        static const char ev[] = "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
                                 "\"tid\": 7, \"ts\": 1%03d.5, \"dur\": 1.0, \"args\": {\"a@b\": 1, "
                                 "\"device\": 0, \"x\": \"v@w\", \"stream\": 7}}";
        char one[256];
        int k = snprintf(one, sizeof one, ev, i);
        for (int j = 0; j < k; j++)
            if (one[j] == '@')
                one[j] = '\0';
        len += (size_t)snprintf(doc + len, cap - len, "%s\n  ", i ? "," : "");
        memcpy(doc + len, one, (size_t)k);
        len += (size_t)k;
    }
    len += (size_t)snprintf(doc + len, cap - len, "\n]}\n");
    int reads = 0;
    for (size_t b = 64; b < 1100; b += 3)
        for (size_t c = 0; c < 40; c += 3) {
            char name[64];
            snprintf(name, sizeof name, "NUL keys, buffer %zu, reads of %zu", b, c);
            if (!both_paths_sized(doc, len, name, b, c))
                goto out;
            reads++;
        }
out:
    printf("%d reads of keys and values with NUL bytes\n", reads);
    free(doc);
}

/* Numbers of every length (the one-pass path finds digit runs 16 bytes at a
 * time: reader/digits.h) at every offset of a 64-byte block and at every
 * distance from the scanner buffer's end (small buffers, small reads): both
 * paths keep the same, and the timestamps are the ones written. */
static void test_numbers_at_refills(void)
{
    size_t cap = 1 << 20, len = 0;
    char *doc = malloc(cap);
    int64_t *want = malloc(4096 * sizeof *want);
    KVS_REQUIRE(doc && want);
    len += (size_t)snprintf(doc, cap, "{\"traceEvents\": [");
    int nev = 0;
    for (int idigits = 1; idigits <= 15; idigits++)
        for (int fdigits = 0; fdigits <= 12; fdigits++) /* 0: no fraction */
            for (int pad = 0; pad < 3; pad++) {
                char ip[32], fr[32], skip[64];
                for (int i = 0; i < idigits; i++)
                    ip[i] = (char)((i == 0 ? '1' : '0') + next_rand() % (i == 0 ? 9 : 10));
                ip[idigits] = '\0';
                for (int i = 0; i < fdigits; i++)
                    fr[i] = (char)('0' + next_rand() % 10);
                fr[fdigits] = '\0';
                /* a skipped number of 1..25 digits, a fraction now and then */
                int sd = 1 + (int)(next_rand() % 25);
                for (int i = 0; i < sd; i++)
                    skip[i] = (char)((i == 0 ? '1' : '0') + next_rand() % (i == 0 ? 9 : 10));
                skip[sd] = '\0';
                if (next_rand() % 3 == 0)
                    strcat(skip, ".125");
                len += (size_t)snprintf(
                    doc + len, cap - len,
                    "%s\n%*s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"pid\": %d, "
                    "\"tid\": %u, \"ts\": %s%s%s, \"dur\": %u.%u, \"args\": {\"External id\": %u, "
                    "\"Ev Idx\": %s, \"device\": 0, \"stream\": 7, \"correlation\": %u}}",
                    nev ? "," : "", pad + (int)(next_rand() % 40), "", nev % 7, 1 + nev % 3,
                    next_rand() % 100000, ip, fdigits > 0 ? "." : "", fr, next_rand() % 1000,
                    next_rand() % 1000, next_rand(), skip, next_rand() % 100000000);
                /* the ns the reader keeps for "ip.fr" us (fractions of up to 3 digits exact) */
                int64_t ns = (int64_t)strtoll(ip, NULL, 10) * 1000;
                if (fdigits > 0 && fdigits <= 3) {
                    int64_t f = strtoll(fr, NULL, 10);
                    for (int i = fdigits; i < 3; i++)
                        f *= 10;
                    ns += f;
                }
                want[nev++] = fdigits > 3 ? INT64_MIN : ns;
            }
    len += (size_t)snprintf(doc + len, cap - len, "\n]}\n");
    KVS_REQUIRE(len < cap - 1);
    static const size_t bufsizes[] = {0, 64, 100, 191, 256, 333, 1000, 4096};
    static const size_t chunks[] = {0, 1, 7, 61, 509};
    int reads = 0;
    for (size_t b = 0; b < sizeof bufsizes / sizeof *bufsizes; b++)
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
            char name[64];
            snprintf(name, sizeof name, "numbers, buffer %zu, reads of %zu", bufsizes[b], chunks[c]);
            both_paths_sized(doc, len, name, bufsizes[b], chunks[c]);
            reads++;
        }
    /* the one-pass path's timestamps against the ones written */
    struct kvs_trace_data t;
    memset(&t, 0, sizeof t);
    struct kvs_read_opts o;
    memset(&o, 0, sizeof o);
    KVS_CHECK_EQ_INT(kvs_read_trace_memory(doc, len, "numbers", &o, &t), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(t.gpus.n, nev);
    int checked = 0;
    for (size_t i = 0; i < t.gpus.n && i < (size_t)nev; i++)
        if (want[i] != INT64_MIN) {
            KVS_CHECK_EQ_INT(kvs_gpu_get(&t, i).ts, want[i]);
            checked++;
        }
    kvs_trace_data_free(&t);
    printf("%d events of numbers read both ways %d times; %d timestamps checked\n", nev, reads, checked);
    free(doc);
    free(want);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"repository_traces", test_repository_traces},
        {"shared_traces", test_shared_traces},
        {"mutations", test_mutations},
        {"guessed_keys", test_guessed_keys},
        {"guesses_at_refills", test_guesses_at_refills},
        {"numbers_at_refills", test_numbers_at_refills},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
