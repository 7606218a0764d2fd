/* steps.c — step ranges and per-step GPU busy time (see steps.h).
 * Private to analyzers/. */
#include "steps.h"

#include <stdlib.h>
#include <string.h>

#define FALLBACK_RE "^(decode[ _-]?)?(step|iteration|iter)([ _#:.-]*[0-9]+)?$"

enum kvs_status kvs_step_matcher_init(struct kvs_step_matcher *m, const char *regex,
                                      const struct kvs_logger *lg)
{
    memset(m, 0, sizeof *m);
    m->user = regex != NULL;
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

static bool is_profiler_step(const char *name)
{
    return !strncmp(name, "ProfilerStep#", 13);
}

bool kvs_step_matcher_is_op_step(void *matcher, const char *name)
{
    struct kvs_step_matcher *m = matcher;
    if (m->user)
        return regexec(&m->re, name, 0, NULL, 0) == 0;
    return is_profiler_step(name);
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

enum kvs_status kvs_steps_find(struct kvs_ctx *c, struct kvs_step_matcher *m)
{
    const struct kvs_trace_data *t = &c->t;
    uint32_t nstr = kvs_intern_count(&t->strings);
    uint8_t *verdict = calloc(nstr ? nstr : 1, 1); /* 1 yes, 2 no, per name id */
    c->steps = malloc((t->nranges ? t->nranges : 1) * sizeof *c->steps);
    if (!verdict || !c->steps) {
        free(verdict);
        return KVS_STATUS_NO_MEMORY;
    }
    for (int pass = 0; pass < 2 && c->nsteps == 0; pass++) {
        /* pass 0: the user's regex, or ProfilerStep#N; pass 1: "step" ranges */
        if (pass == 1 && m->user)
            break;
        memset(verdict, 0, nstr ? nstr : 1);
        for (size_t i = 0; i < t->nranges; i++) {
            const struct kvs_range_rec *g = &t->ranges[i];
            if (!verdict[g->name]) {
                const char *name = kvs_intern_str(&t->strings, g->name);
                bool yes = pass == 0 && !m->user ? is_profiler_step(name)
                                                 : regexec(&m->re, name, 0, NULL, 0) == 0;
                verdict[g->name] = yes ? 1 : 2;
            }
            if (verdict[g->name] == 1)
                c->steps[c->nsteps++] = (struct kvs_step_win){g->ts, g->ts + g->dur, 0, g->name};
        }
        c->step_source = m->user ? "--step-regex" : pass == 0 ? "ProfilerStep#N" : "step ranges";
    }
    free(verdict);
    if (c->nsteps == 0) {
        c->step_source = NULL;
        return KVS_STATUS_OK;
    }
    qsort(c->steps, c->nsteps, sizeof *c->steps, cmp_step);
    /* keep the outermost of overlapping ranges (a step marked twice, or a
     * "step" range inside another) */
    size_t k = 0;
    for (size_t i = 0; i < c->nsteps; i++) {
        if (k && c->steps[i].start < c->steps[k - 1].end)
            continue;
        c->steps[k++] = c->steps[i];
    }
    c->nsteps = k;
    for (size_t i = 0; i < c->nsteps; i++)
        c->steps[i].index = index_of(kvs_intern_str(&t->strings, c->steps[i].name), (int64_t)i);
    return KVS_STATUS_OK;
}

int32_t kvs_step_at(const struct kvs_ctx *c, int64_t ts)
{
    size_t lo = 0, hi = c->nsteps; /* first step with start > ts */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->steps[mid].start <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const struct kvs_step_win *s = &c->steps[lo - 1];
    return ts < s->end || (s->start == s->end && ts == s->start) ? (int32_t)(lo - 1) : -1;
}

// ----------------------------------------------------------------------------
// busy time

struct ival {
    int64_t start, end;
    int32_t device;
};

static int cmp_ival(const void *a, const void *b)
{
    const struct ival *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return 0;
}

/* overlap of [a0,a1) with [b0,b1) */
static inline int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

/* Sorts iv[0..n), merges it into its union per device (in place) and adds
 * each step's share of the union to step_out[k]; returns the union's
 * measure over the whole trace. */
static double merge_clip(const struct kvs_ctx *c, struct ival *iv, size_t n, double *step_out)
{
    if (!n)
        return 0;
    qsort(iv, n, sizeof *iv, cmp_ival);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && iv[m - 1].device == iv[i].device && iv[i].start <= iv[m - 1].end) {
            if (iv[i].end > iv[m - 1].end)
                iv[m - 1].end = iv[i].end;
            continue;
        }
        iv[m++] = iv[i];
    }
    double total = 0;
    for (size_t i = 0; i < m; i++) {
        total += (double)(iv[i].end - iv[i].start);
        if (!c->nsteps)
            continue;
        int32_t j = kvs_step_at(c, iv[i].start);
        size_t k = 0;
        if (j >= 0) {
            k = (size_t)j;
        } else {
            size_t lo = 0, hi = c->nsteps;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (c->steps[mid].start <= iv[i].start)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            k = lo;
        }
        for (; k < c->nsteps && c->steps[k].start < iv[i].end; k++)
            step_out[k] += (double)overlap(iv[i].start, iv[i].end, c->steps[k].start, c->steps[k].end);
    }
    return total;
}

enum kvs_status kvs_steps_measure(struct kvs_ctx *c)
{
    const struct kvs_trace_data *t = &c->t;
    size_t ns = c->nsteps ? c->nsteps : 1;
    c->gpu_step = malloc((t->ngpus ? t->ngpus : 1) * sizeof *c->gpu_step);
    c->step_busy_ns = calloc(ns, sizeof *c->step_busy_ns);
    c->step_cat_ns = calloc(ns, sizeof *c->step_cat_ns);
    c->step_comm_ns = calloc(ns, sizeof *c->step_comm_ns);
    c->step_compute_ns = calloc(ns, sizeof *c->step_compute_ns);
    struct ival *iv = malloc((t->ngpus ? t->ngpus : 1) * sizeof *iv);
    if (!c->gpu_step || !c->step_busy_ns || !c->step_cat_ns || !c->step_comm_ns ||
        !c->step_compute_ns || !iv) {
        free(iv);
        return KVS_STATUS_NO_MEMORY;
    }
    memset(c->cat_ns, 0, sizeof c->cat_ns);
    for (size_t i = 0; i < t->ngpus; i++) {
        const struct kvs_gpu_rec *g = &t->gpus[i];
        c->gpu_step[i] = c->nsteps ? kvs_step_at(c, c->gpu_launch[i]) : -1;
        iv[i] = (struct ival){g->ts, g->ts + g->dur, g->device};
        int cat = c->gpu_cat[i];
        if (!c->nsteps) {
            c->cat_ns[cat] += (double)g->dur;
            continue;
        }
        /* clip to every step window the activity overlaps */
        int32_t j = kvs_step_at(c, g->ts);
        if (j < 0) {
            size_t lo = 0, hi = c->nsteps;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (c->steps[mid].start <= g->ts)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            j = (int32_t)lo;
        }
        for (size_t k = (size_t)j; k < c->nsteps && c->steps[k].start < g->ts + g->dur; k++) {
            int64_t ov = overlap(g->ts, g->ts + g->dur, c->steps[k].start, c->steps[k].end);
            c->step_cat_ns[k][cat] += (double)ov;
            c->cat_ns[cat] += (double)ov;
        }
    }
    /* union per device, then each step's share of it; then the same for
     * communication alone and for everything else, when the trace has any
     * communication (their overlap is comm + compute - busy) */
    c->trace_busy_ns = merge_clip(c, iv, t->ngpus, c->step_busy_ns);
    size_t ncomm = 0;
    for (size_t i = 0; i < t->ngpus; i++)
        ncomm += c->gpu_cat[i] == KVS_CAT_COMM;
    if (ncomm == 0) {
        c->trace_comm_ns = 0;
        c->trace_compute_ns = c->trace_busy_ns;
        memcpy(c->step_compute_ns, c->step_busy_ns, ns * sizeof *c->step_busy_ns);
    } else {
        for (int comm = 1; comm >= 0; comm--) {
            size_t m = 0;
            for (size_t i = 0; i < t->ngpus; i++) {
                const struct kvs_gpu_rec *g = &t->gpus[i];
                if ((c->gpu_cat[i] == KVS_CAT_COMM) == (comm == 1))
                    iv[m++] = (struct ival){g->ts, g->ts + g->dur, g->device};
            }
            double total = merge_clip(c, iv, m, comm ? c->step_comm_ns : c->step_compute_ns);
            *(comm ? &c->trace_comm_ns : &c->trace_compute_ns) = total;
        }
    }
    free(iv);
    return KVS_STATUS_OK;
}

static int cmp_keyed(const void *a, const void *b)
{
    const struct kvs_keyed_ival *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return 0;
}

void kvs_busy_by_key(struct kvs_keyed_ival *v, size_t n, int64_t *busy)
{
    if (!n)
        return;
    qsort(v, n, sizeof *v, cmp_keyed);
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
