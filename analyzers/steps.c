/* steps.c — step ranges and per-step GPU busy time (see steps.h).
 * Private to analyzers/. */
#include "steps.h"

#include <stdlib.h>
#include <string.h>

#define FALLBACK_RE "^(decode[ _-]?)?(step|iteration|iter)([ _#:.-]*[0-9]+)?$"

/* Whether an ERE holds a back-reference (\1..\9 outside a bracket
 * expression): glibc matches those by backtracking, in time and memory that
 * grow as a power of the name's length. */
static bool has_backref(const char *re)
{
    for (const char *p = re; *p; p++) {
        if (*p == '\\') {
            if (p[1] >= '1' && p[1] <= '9')
                return true;
            if (p[1])
                p++;
        } else if (*p == '[') { /* to its closing ']': a leading ']' and [:class:] are inside */
            p++;
            if (*p == '^')
                p++;
            if (*p == ']')
                p++;
            while (*p && *p != ']') {
                if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
                    const char *e = strchr(p + 2, p[1]);
                    p = e && e[1] == ']' ? e + 1 : p;
                }
                p++;
            }
            if (!*p)
                return false; /* regcomp says what is wrong */
        }
    }
    return false;
}

enum kvs_status kvs_step_matcher_init(struct kvs_step_matcher *m, const char *regex,
                                      const struct kvs_logger *lg)
{
    memset(m, 0, sizeof *m);
    m->user = regex != NULL;
    if (regex && has_backref(regex)) {
        kvs_log(lg, KVS_LOG_ERROR,
                "--step-regex '%s': back-references (\\1..\\9) are not accepted (their matching "
                "time grows as a power of the name's length)",
                regex);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    int flags = REG_EXTENDED | REG_NOSUB | (regex ? 0 : REG_ICASE);
    int rc = regcomp(&m->re, regex ? regex : FALLBACK_RE, flags);
    if (rc != 0) {
        char msg[160];
        regerror(rc, &m->re, msg, sizeof msg);
        kvs_log(lg, KVS_LOG_ERROR, "--step-regex '%s': %s", regex ? regex : FALLBACK_RE, msg);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    m->have_re = true;
    return KVS_STATUS_OK;
}

void kvs_step_matcher_free(struct kvs_step_matcher *m)
{
    if (m->have_re)
        regfree(&m->re);
    m->have_re = false;
}

/* A name matched on its first KVS_STEP_NAME_MATCH bytes only: matching
 * costs up to the square of the length for some patterns, and names run to
 * a MiB. Step names are short; `$` matches at the cut. */
static bool step_regexec(const regex_t *re, const char *name)
{
    size_t n = strnlen(name, KVS_STEP_NAME_MATCH + 1);
    if (n <= KVS_STEP_NAME_MATCH)
        return regexec(re, name, 0, NULL, 0) == 0;
    char head[KVS_STEP_NAME_MATCH + 1];
    memcpy(head, name, KVS_STEP_NAME_MATCH);
    head[KVS_STEP_NAME_MATCH] = 0;
    return regexec(re, head, 0, NULL, 0) == 0;
}

static bool is_profiler_step(const char *name)
{
    return !strncmp(name, "ProfilerStep#", 13);
}

/* digits at *p as a count (at most 18 of them), advancing *p; -1 when none */
static int64_t read_count(const char **p)
{
    const char *s = *p;
    int64_t v = 0;
    int n = 0;
    while (*s >= '0' && *s <= '9' && n < 18) {
        v = v * 10 + (*s++ - '0');
        n++;
    }
    if (!n || (*s >= '0' && *s <= '9'))
        return -1;
    *p = s;
    return v;
}

static bool eat(const char **p, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(*p, word, n))
        return false;
    *p += n;
    return true;
}

/* vLLM's model-runner range, two spellings:
 *   execute_context_N(T_SQ)_generation_M(T...)       context N requests of T tokens, M decoding
 *   execute_NT_context_N(...)_generation_M(...)      NT tokens scheduled in all
 * (the parenthesised sums are vLLM's own; only the counts matter here) */
static bool parse_vllm(const char *s, struct kvs_step_desc *d)
{
    if (!eat(&s, "execute_"))
        return false;
    int64_t total = -1;
    if (*s >= '0' && *s <= '9') {
        if ((total = read_count(&s)) < 0 || !eat(&s, "_"))
            return false;
    }
    if (!eat(&s, "context_"))
        return false;
    int64_t nctx = read_count(&s);
    if (nctx < 0 || !eat(&s, "("))
        return false;
    int64_t ctx_tokens = total < 0 ? read_count(&s) : 0;
    const char *close = strchr(s, ')');
    if (!close || (total < 0 && ctx_tokens < 0))
        return false;
    s = close + 1;
    if (!eat(&s, "_generation_"))
        return false;
    int64_t ngen = read_count(&s);
    if (ngen < 0 || !eat(&s, "(") || !strchr(s, ')'))
        return false;
    d->kind = nctx && ngen ? KVS_STEP_MIXED : nctx ? KVS_STEP_PREFILL : ngen ? KVS_STEP_DECODE
                                                                          : KVS_STEP_UNKNOWN;
    d->batch = nctx + ngen;
    /* one new token per decoding request */
    d->tokens = total >= 0 ? total : ctx_tokens + ngen;
    return true;
}

/* SGLang's scheduler range: step[DECODE bs=32], step[EXTEND bs=15 toks=15360] */
static bool parse_sglang(const char *s, struct kvs_step_desc *d)
{
    if (!eat(&s, "step["))
        return false;
    static const struct {
        const char *word;
        enum kvs_step_kind kind;
    } kinds[] = {{"DECODE", KVS_STEP_DECODE}, {"EXTEND", KVS_STEP_PREFILL},
                 {"PREFILL", KVS_STEP_PREFILL}, {"MIXED", KVS_STEP_MIXED},
                 {"IDLE", KVS_STEP_UNKNOWN}};
    size_t k = 0;
    while (k < sizeof kinds / sizeof kinds[0] && !eat(&s, kinds[k].word))
        k++;
    if (k == sizeof kinds / sizeof kinds[0] || (*s != ' ' && *s != ']'))
        return false;
    d->kind = kinds[k].kind;
    d->batch = d->tokens = 0;
    while (*s == ' ') {
        s++;
        int64_t *dst = eat(&s, "bs=") ? &d->batch : eat(&s, "toks=") ? &d->tokens : NULL;
        if (!dst) { /* a field this reader does not know: skip it */
            while (*s && *s != ' ' && *s != ']')
                s++;
            continue;
        }
        if ((*dst = read_count(&s)) < 0)
            return false;
    }
    if (!eat(&s, "]"))
        return false;
    if (!d->tokens && d->kind == KVS_STEP_DECODE)
        d->tokens = d->batch; /* one new token per sequence */
    return true;
}

bool kvs_step_name_parse(const char *name, struct kvs_step_desc *d)
{
    memset(d, 0, sizeof *d);
    return parse_vllm(name, d) || parse_sglang(name, d);
}

static bool is_serving_step(const char *name)
{
    struct kvs_step_desc d;
    return kvs_step_name_parse(name, &d);
}

bool kvs_step_matcher_is_op_step(void *matcher, const char *name)
{
    struct kvs_step_matcher *m = matcher;
    if (m->user)
        return step_regexec(&m->re, name);
    return is_profiler_step(name) || is_serving_step(name);
}

static int cmp_step(const void *a, const void *b)
{
    const struct kvs_step_win *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* outermost first */
    return 0;
}

static int64_t index_of(const char *name, int64_t ordinal)
{
    const char *hash = strrchr(name, '#');
    const char *p = hash ? hash + 1 : NULL;
    if (!p) { /* the last run of digits */
        const char *e = name + strlen(name);
        while (e > name && (e[-1] < '0' || e[-1] > '9'))
            e--;
        p = e;
        while (p > name && p[-1] >= '0' && p[-1] <= '9')
            p--;
        if (p == e)
            return ordinal;
    }
    char *end;
    long long v = strtoll(p, &end, 10);
    return end == p ? ordinal : (int64_t)v;
}

enum kvs_status kvs_steps_find(const struct kvs_trace_data *t, struct kvs_step_matcher *m,
                               const struct kvs_logger *lg, struct kvs_step_table *steps)
{
    uint32_t nstr = kvs_intern_count(&t->strings);
    uint8_t *verdict = calloc(nstr ? nstr : 1, 1); /* 1 yes, 2 no, per name id */
    steps->v = malloc((t->nranges ? t->nranges : 1) * sizeof *steps->v);
    if (!verdict || !steps->v) {
        free(verdict);
        return KVS_STATUS_NO_MEMORY;
    }
    static const char *const sources[] = {"serving-engine step ranges", "ProfilerStep#N",
                                           "step ranges"};
    for (int pass = 0; pass < 3 && steps->n == 0; pass++) {
        /* pass 0: the user's regex, or vLLM/SGLang step ranges (they say the
         * step's kind and batch); pass 1: ProfilerStep#N; pass 2: "step" ranges */
        if (pass > 0 && m->user)
            break;
        memset(verdict, 0, nstr ? nstr : 1);
        size_t nodur = 0;
        for (size_t i = 0; i < t->nranges; i++) {
            const struct kvs_range_rec *g = &t->ranges[i];
            if (!verdict[g->name]) {
                const char *name = kvs_intern_str(&t->strings, g->name);
                bool yes = m->user || pass == 2 ? step_regexec(&m->re, name)
                           : pass == 0        ? is_serving_step(name)
                                              : is_profiler_step(name);
                verdict[g->name] = yes ? 1 : 2;
            }
            if (verdict[g->name] != 1)
                continue;
            if (g->dur <= 0) { /* missing or negative: a 0 ms step would halve the mean */
                nodur++;
                continue;
            }
            steps->v[steps->n++] = (struct kvs_step_win){g->ts, g->ts + g->dur, 0, g->name, {0}};
        }
        if (nodur)
            kvs_log(lg, KVS_LOG_WARN,
                    "%zu %s without a positive duration (\"dur\" missing, zero or negative): "
                    "not counted as steps",
                    nodur, nodur == 1 ? "step range" : "step ranges");
        steps->source = m->user ? "--step-regex" : sources[pass];
    }
    free(verdict);
    if (steps->n == 0) {
        steps->source = NULL;
        return KVS_STATUS_OK;
    }
    qsort(steps->v, steps->n, sizeof *steps->v, cmp_step);
    /* keep the outermost of overlapping ranges (a step marked twice, or a
     * "step" range inside another) */
    size_t k = 0;
    for (size_t i = 0; i < steps->n; i++) {
        if (k && steps->v[i].start < steps->v[k - 1].end)
            continue;
        steps->v[k++] = steps->v[i];
    }
    steps->n = k;
    for (size_t i = 0; i < steps->n; i++) {
        struct kvs_step_win *w = &steps->v[i];
        const char *name = kvs_intern_str(&t->strings, w->name);
        if (kvs_step_name_parse(name, &w->desc))
            w->index = (int64_t)i; /* the digits in such a name are counts, not an index */
        else
            w->index = index_of(name, (int64_t)i);
    }
    return KVS_STATUS_OK;
}

int64_t kvs_step_time_ns(const struct kvs_step_table *steps, size_t k)
{
    int64_t wall = steps->v[k].end - steps->v[k].start;
    int64_t span = steps->gpu_last[k] > steps->gpu_first[k] ? steps->gpu_last[k] - steps->gpu_first[k] : 0;
    return span > wall ? span : wall;
}

int32_t kvs_step_at(const struct kvs_step_table *steps, int64_t ts)
{
    size_t lo = 0, hi = steps->n; /* first step with start > ts */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (steps->v[mid].start <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const struct kvs_step_win *s = &steps->v[lo - 1];
    return ts < s->end || (s->start == s->end && ts == s->start) ? (int32_t)(lo - 1) : -1;
}

// ----------------------------------------------------------------------------
// busy time

static void keyed_sort(struct kvs_keyed_ival *v, size_t n, int depth);
static void kiv_sort(struct kvs_kiv *v, size_t n, int depth);
static int kiv_sort_depth(size_t n);

/* Sorts the list (keys all 0) by device and start, in place, and returns the
 * measure of its union per device, summed over devices (the sum in that
 * order, compact or wide: the same intervals merged the same way). */
static double merge_union(struct kvs_kiv_list *l)
{
    size_t n = l->n;
    if (!n)
        return 0;
    double total = 0;
    if (l->w) {
        struct kvs_keyed_ival *iv = l->w;
        keyed_sort(iv, n, kiv_sort_depth(n));
        struct kvs_keyed_ival cur = iv[0];
        for (size_t i = 1; i <= n; i++) {
            if (i < n && iv[i].device == cur.device && iv[i].start <= cur.end) {
                if (iv[i].end > cur.end)
                    cur.end = iv[i].end;
                continue;
            }
            total += (double)(cur.end - cur.start);
            if (i < n)
                cur = iv[i];
        }
        return total;
    }
    struct kvs_kiv *iv = l->c;
    kiv_sort(iv, n, kiv_sort_depth(n));
    uint32_t kd = iv[0].kd;
    int64_t start = iv[0].start, end = iv[0].start + (int64_t)iv[0].len;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && iv[i].kd == kd && iv[i].start <= end) {
            int64_t e = iv[i].start + (int64_t)iv[i].len;
            if (e > end)
                end = e;
            continue;
        }
        total += (double)(end - start);
        if (i < n) {
            kd = iv[i].kd;
            start = iv[i].start;
            end = iv[i].start + (int64_t)iv[i].len;
        }
    }
    return total;
}

/* The GPU activities of one class (comm: 1 communication, 0 the rest, -1
 * all) into the list (emptied first) as intervals keyed by step (by_step,
 * those in a step), else all keyed 0; 0, or -1 when memory ran out. */
static int class_ivals(const struct kvs_trace_data *t, const struct kvs_activity_table *act, int comm,
                       bool by_step, struct kvs_kiv_list *l)
{
    l->n = 0;
    for (size_t i = 0; i < t->gpus.n; i++) {
        if (comm >= 0 && (act->v[i].cat == KVS_CAT_COMM) != (comm == 1))
            continue;
        if (by_step && act->v[i].step < 0)
            continue;
        int64_t ts = kvs_gpu_ts(t, i);
        if (kvs_kiv_add(l, by_step ? (uint32_t)act->v[i].step : 0,
                        (int32_t)kvs_packed_get(&t->gpus, i, KVS_GPF_DEVICE), ts, ts + kvs_gpu_dur(t, i)) < 0)
            return -1;
    }
    return 0;
}

/* Each step's share of the union of the activities it launched: the list
 * keyed by step, merged per device, into out[step] (busy: nsteps scratch). */
static void busy_by_step(struct kvs_kiv_list *l, double *out, size_t nsteps, int64_t *busy)
{
    memset(busy, 0, nsteps * sizeof *busy);
    kvs_kiv_busy(l, busy);
    for (size_t k = 0; k < nsteps; k++)
        out[k] = (double)busy[k];
}

enum kvs_status kvs_steps_measure(const struct kvs_trace_data *t, struct kvs_activity_table *act,
                                  struct kvs_step_table *steps)
{
    size_t ns = steps->n ? steps->n : 1;
    steps->busy_ns = calloc(ns, sizeof *steps->busy_ns);
    steps->cat_ns = calloc(ns, sizeof *steps->cat_ns);
    steps->comm_ns = calloc(ns, sizeof *steps->comm_ns);
    steps->compute_ns = calloc(ns, sizeof *steps->compute_ns);
    steps->gpu_first = malloc(ns * sizeof *steps->gpu_first);
    steps->gpu_last = malloc(ns * sizeof *steps->gpu_last);
    /* one buffer for the intervals by step (kv) and those of the whole trace, in turn */
    struct kvs_kiv_list kv = {0};
    int64_t *scratch = malloc(ns * sizeof *scratch);
    if (!scratch || !steps->busy_ns || !steps->cat_ns || !steps->comm_ns ||
        !steps->compute_ns || !steps->gpu_first || !steps->gpu_last ||
        kvs_kiv_reserve(&kv, t->gpus.n ? t->gpus.n : 1) < 0) {
        kvs_kiv_free(&kv);
        free(scratch);
        return KVS_STATUS_NO_MEMORY;
    }
    for (size_t k = 0; k < ns; k++) {
        steps->gpu_first[k] = INT64_MAX;
        steps->gpu_last[k] = INT64_MIN;
    }
    memset(steps->trace_cat_ns, 0, sizeof steps->trace_cat_ns);
    /* GPU work belongs to the step that launched it (the runtime call, or the
     * graph launch, inside the step's CPU range), however late it runs: with
     * CUDA graphs the CPU is often a whole step ahead of the GPU */
    bool no_memory = false;
    for (size_t i = 0; i < t->gpus.n; i++) {
        const struct kvs_gpu_rec g_ = kvs_gpu_get(t, i), *g = &g_;
        int32_t k = steps->n ? kvs_step_at(steps, act->launch[i]) : -1;
        act->v[i].step = k;
        int cat = act->v[i].cat;
        if (!steps->n) {
            steps->trace_cat_ns[cat] += (double)g->dur;
            continue;
        }
        if (k < 0)
            continue;
        steps->cat_ns[k][cat] += (double)g->dur;
        steps->trace_cat_ns[cat] += (double)g->dur;
        if (g->ts < steps->gpu_first[k])
            steps->gpu_first[k] = g->ts;
        if (g->ts + g->dur > steps->gpu_last[k])
            steps->gpu_last[k] = g->ts + g->dur;
        no_memory |= kvs_kiv_add(&kv, (uint32_t)k, g->device, g->ts, g->ts + g->dur) < 0;
    }
    free(act->launch); /* their steps are known now */
    act->launch = NULL;
    busy_by_step(&kv, steps->busy_ns, steps->n, scratch);
    no_memory |= class_ivals(t, act, -1, false, &kv) < 0;
    steps->trace_busy_ns = merge_union(&kv);
    /* the same for communication alone and for everything else, when the
     * trace has any communication (their overlap is comm + compute - busy) */
    size_t ncomm = 0;
    for (size_t i = 0; i < t->gpus.n; i++)
        ncomm += act->v[i].cat == KVS_CAT_COMM;
    if (ncomm == 0) {
        steps->trace_comm_ns = 0;
        steps->trace_compute_ns = steps->trace_busy_ns;
        memcpy(steps->compute_ns, steps->busy_ns, ns * sizeof *steps->busy_ns);
    } else {
        for (int comm = 1; comm >= 0; comm--) {
            no_memory |= class_ivals(t, act, comm, true, &kv) < 0;
            busy_by_step(&kv, comm ? steps->comm_ns : steps->compute_ns, steps->n, scratch);
            no_memory |= class_ivals(t, act, comm, false, &kv) < 0;
            *(comm ? &steps->trace_comm_ns : &steps->trace_compute_ns) = merge_union(&kv);
        }
    }
    kvs_kiv_free(&kv);
    free(scratch);
    return no_memory ? KVS_STATUS_NO_MEMORY : KVS_STATUS_OK;
}

/* (key, device, start) order. The merge below needs only that order, not
 * how ties fall, so an unstable sort gives the same sums as qsort's merge
 * sort did; this one compares inline (qsort's indirect compare and its merge
 * copy were 5% of a report on a 97 MB trace, docs/log/2026-12-03-reader-speed.md). */
static inline bool keyed_less(const struct kvs_keyed_ival *x, const struct kvs_keyed_ival *y)
{
    if (x->key != y->key)
        return x->key < y->key;
    if (x->device != y->device)
        return x->device < y->device;
    return x->start < y->start;
}

/* An introsort of T by less(): quicksort on the median of three places drawn
 * from a fixed pseudo-random sequence (first, middle and last fall on the
 * starts of runs when the input is several sorted runs one after another,
 * GPU work stream by stream, and the partitions went lopsided), insertion
 * sort for short runs, heapsort past depth levels. In place. */
#define DEFINE_INTROSORT(NAME, T, LESS)                                                                   \
    static void NAME##_sift(T *v, size_t i, size_t n)                                                     \
    {                                                                                                     \
        T x = v[i];                                                                                       \
        for (;;) {                                                                                        \
            size_t c = 2 * i + 1;                                                                         \
            if (c >= n)                                                                                   \
                break;                                                                                    \
            if (c + 1 < n && LESS(&v[c], &v[c + 1]))                                                      \
                c++;                                                                                      \
            if (!LESS(&x, &v[c]))                                                                         \
                break;                                                                                    \
            v[i] = v[c];                                                                                  \
            i = c;                                                                                        \
        }                                                                                                 \
        v[i] = x;                                                                                         \
    }                                                                                                     \
    static void NAME##_sort(T *v, size_t n, int depth)                                                    \
    {                                                                                                     \
        uint64_t rng = n;                                                                                 \
        while (n > 16) {                                                                                  \
            if (depth-- == 0) {                                                                           \
                for (size_t i = n / 2; i-- > 0;)                                                          \
                    NAME##_sift(v, i, n);                                                                 \
                for (size_t e = n - 1; e > 0; e--) {                                                      \
                    T t = v[0];                                                                           \
                    v[0] = v[e];                                                                          \
                    v[e] = t;                                                                             \
                    NAME##_sift(v, 0, e);                                                                 \
                }                                                                                         \
                return;                                                                                   \
            }                                                                                             \
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;                                  \
            T *a = &v[(rng >> 33) % n], *b = &v[(rng >> 11) % n], *c = &v[(rng ^ rng >> 29) % n];         \
            T *m = LESS(a, b) ? (LESS(b, c) ? b : LESS(a, c) ? c : a) : (LESS(a, c) ? a : LESS(b, c) ? c : b); \
            T pivot = *m;                                                                                 \
            size_t i = 0, j = n - 1;                                                                      \
            for (;;) { /* Hoare: v[0..i) <= pivot <= v[j+1..n) */                                         \
                while (LESS(&v[i], &pivot))                                                               \
                    i++;                                                                                  \
                while (LESS(&pivot, &v[j]))                                                               \
                    j--;                                                                                  \
                if (i >= j)                                                                               \
                    break;                                                                                \
                T t = v[i];                                                                               \
                v[i] = v[j];                                                                              \
                v[j] = t;                                                                                 \
                i++;                                                                                      \
                j--;                                                                                      \
            }                                                                                             \
            size_t left = j + 1; /* [0, left) and [left, n) */                                            \
            if (left == n) { /* the pivot was the last place's, above all before it: in place */          \
                n--;                                                                                      \
                continue;                                                                                 \
            }                                                                                             \
            if (left < n - left) {                                                                        \
                NAME##_sort(v, left, depth);                                                              \
                v += left;                                                                                \
                n -= left;                                                                                \
            } else {                                                                                      \
                NAME##_sort(v + left, n - left, depth);                                                   \
                n = left;                                                                                 \
            }                                                                                             \
        }                                                                                                 \
        for (size_t i = 1; i < n; i++) {                                                                  \
            T x = v[i];                                                                                   \
            size_t k = i;                                                                                 \
            for (; k > 0 && LESS(&x, &v[k - 1]); k--)                                                     \
                v[k] = v[k - 1];                                                                          \
            v[k] = x;                                                                                     \
        }                                                                                                 \
    }

DEFINE_INTROSORT(keyed, struct kvs_keyed_ival, keyed_less)

static inline bool kiv_less(const struct kvs_kiv *x, const struct kvs_kiv *y)
{
    return x->kd != y->kd ? x->kd < y->kd : x->start < y->start;
}

DEFINE_INTROSORT(kiv, struct kvs_kiv, kiv_less)

void kvs_busy_by_key(struct kvs_keyed_ival *v, size_t n, int64_t *busy)
{
    if (!n)
        return;
    size_t k = 1;
    while (k < n && !keyed_less(&v[k], &v[k - 1]))
        k++;
    if (k < n) /* not already in order */
        keyed_sort(v, n, 2 * (64 - __builtin_clzll((unsigned long long)n)));
    struct kvs_keyed_ival cur = v[0];
    for (size_t i = 1; i <= n; i++) {
        if (i < n && v[i].key == cur.key && v[i].device == cur.device && v[i].start <= cur.end) {
            if (v[i].end > cur.end)
                cur.end = v[i].end;
            continue;
        }
        busy[cur.key] += cur.end - cur.start;
        if (i < n)
            cur = v[i];
    }
}

static int kiv_sort_depth(size_t n)
{
    return n > 1 ? 2 * (64 - __builtin_clzll((unsigned long long)n)) : 0;
}

int kvs_kiv_reserve(struct kvs_kiv_list *l, size_t cap)
{
    if (cap <= l->cap)
        return 0;
    if (l->w) {
        struct kvs_keyed_ival *p = realloc(l->w, cap * sizeof *p);
        if (!p)
            return -1;
        l->w = p;
    } else {
        struct kvs_kiv *p = realloc(l->c, cap * sizeof *p);
        if (!p)
            return -1;
        l->c = p;
    }
    l->cap = cap;
    return 0;
}

int kvs_kiv_widen(struct kvs_kiv_list *l)
{
    size_t cap = l->cap ? l->cap : 16;
    struct kvs_keyed_ival *w = malloc(cap * sizeof *w);
    if (!w)
        return -1;
    for (size_t i = 0; i < l->n; i++)
        w[i] = (struct kvs_keyed_ival){l->c[i].kd >> 8, (int32_t)(l->c[i].kd & 255), l->c[i].start,
                                       l->c[i].start + (int64_t)l->c[i].len};
    free(l->c);
    l->c = NULL;
    l->w = w;
    l->cap = cap;
    return 0;
}

int kvs_kiv_grow(struct kvs_kiv_list *l)
{
    size_t cap = l->cap ? l->cap + l->cap / 2 : 1024;
    return kvs_kiv_reserve(l, cap);
}

void kvs_kiv_busy(struct kvs_kiv_list *l, int64_t *busy)
{
    size_t n = l->n;
    if (!n)
        return;
    if (l->w) {
        kvs_busy_by_key(l->w, n, busy);
        return;
    }
    struct kvs_kiv *v = l->c;
    size_t k = 1;
    while (k < n && !kiv_less(&v[k], &v[k - 1]))
        k++;
    if (k < n) /* not already in order */
        kiv_sort(v, n, kiv_sort_depth(n));
    uint32_t kd = v[0].kd;
    int64_t start = v[0].start, end = v[0].start + (int64_t)v[0].len;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && v[i].kd == kd && v[i].start <= end) {
            int64_t e = v[i].start + (int64_t)v[i].len;
            if (e > end)
                end = e;
            continue;
        }
        busy[kd >> 8] += end - start;
        if (i < n) {
            kd = v[i].kd;
            start = v[i].start;
            end = v[i].start + (int64_t)v[i].len;
        }
    }
}

void kvs_kiv_free(struct kvs_kiv_list *l)
{
    free(l->c);
    free(l->w);
    memset(l, 0, sizeof *l);
}
