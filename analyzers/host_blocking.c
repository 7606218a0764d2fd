/* host_blocking.c — idle GPU time that names its cause: the CPU waiting in a
 * blocking runtime call (a synchronous memcpy/memset, a stream/device/event
 * synchronize, an async copy that waited: a DtoH for .item()/.tolist())
 * while the GPU has nothing to run. The host_blocking finding (see
 * host_blocking.h; figures in docs/analysis.md). Private to analyzers/.
 */
#include "host_blocking.h"

#include <stdlib.h>
#include <string.h>

#include "kvscope/check.h"
#include "figures.h"
#include "phrase.h"
#include "steps.h"

#define ASYNC_WAIT_NS 1000000  /* an async copy call this long waited for the GPU (pageable DtoH) */
#define MIN_BLOCKED_FRACTION 0.05 /* of the step: below this, no finding */

static enum kvs_wait_kind kind_of(const char *name, int64_t dur)
{
    if (strstr(name, "Synchronize"))
        return KVS_WAIT_SYNC; /* cuda/hip Stream, Device, Event, Ctx */
    bool async = strstr(name, "Async") != NULL;
    bool copy = strstr(name, "emcpy") != NULL; /* cudaMemcpy*, hipMemcpy*, cuMemcpy* */
    bool set = strstr(name, "emset") != NULL;
    if ((copy || set) && !async)
        return copy ? KVS_WAIT_MEMCPY : KVS_WAIT_MEMSET;
    if (copy && dur >= ASYNC_WAIT_NS)
        return KVS_WAIT_ASYNC_COPY;
    return KVS_WAIT_NONE;
}

/* kind_of(name, dur), each name's strings searched once (by_name[name]: 0
 * not yet, else 1 + its kind at any duration, + 16 when a long call of it is
 * an async copy's wait: kind_of's duration matters for that alone) */
static enum kvs_wait_kind kind_by_name(const struct kvs_trace_data *t, uint32_t name, int64_t dur,
                                       uint8_t *by_name)
{
    uint8_t *k = &by_name[name];
    if (!*k) {
        const char *nm = kvs_intern_str(&t->strings, name);
        *k = (uint8_t)(1 + kind_of(nm, 0) + (kind_of(nm, INT64_MAX) == KVS_WAIT_ASYNC_COPY ? 16 : 0));
    }
    enum kvs_wait_kind k0 = (enum kvs_wait_kind)((*k & 15) - 1);
    if (k0 != KVS_WAIT_NONE)
        return k0;
    return (*k & 16) && dur >= ASYNC_WAIT_NS ? KVS_WAIT_ASYNC_COPY : KVS_WAIT_NONE;
}

bool kvs_trace_has_capture(const struct kvs_trace_data *t)
{
    uint32_t asked[256]; /* names searched already (a few call names make most calls), by name % 256 */
    memset(asked, 0xff, sizeof asked);
    for (size_t i = 0; i < t->rts.n; i++) {
        uint32_t name = kvs_rt_get(t, i).name;
        if (asked[name % 256] == name)
            continue;
        asked[name % 256] = name;
        const char *rn = kvs_intern_str(&t->strings, name);
        if (strstr(rn, "BeginCapture") || strstr(rn, "GraphInstantiate"))
            return true;
    }
    return false;
}

bool kvs_host_blocking_call(const char *name, int64_t dur)
{
    return kind_of(name, dur) != KVS_WAIT_NONE;
}

/* u[0..n) by start, in place (qsort's merge sort copies the array: as
 * much again at the analysis's peak): quicksort on the median of three,
 * insertion sort for short runs, heapsort past 2 log2 n levels, so no input
 * makes it quadratic. Intervals of one start may come in any order: their
 * union below is the same. */
static void ival_swap(struct kvs_ival *x, struct kvs_ival *y)
{
    struct kvs_ival t = *x;
    *x = *y;
    *y = t;
}

static void ival_sift(struct kvs_ival *u, size_t r, size_t n)
{
    for (size_t c; (c = 2 * r + 1) < n; r = c) {
        if (c + 1 < n && u[c + 1].a > u[c].a)
            c++;
        if (u[r].a >= u[c].a)
            return;
        ival_swap(&u[r], &u[c]);
    }
}

static void ival_sort(struct kvs_ival *u, size_t n, unsigned depth)
{
    while (n > 16) {
        if (depth-- == 0) { /* heapsort */
            for (size_t k = n / 2; k-- > 0;)
                ival_sift(u, k, n);
            for (size_t end = n - 1; end > 0; end--) {
                ival_swap(&u[0], &u[end]);
                ival_sift(u, 0, end);
            }
            return;
        }
        size_t mid = n / 2;
        if (u[mid].a < u[0].a)
            ival_swap(&u[mid], &u[0]);
        if (u[n - 1].a < u[0].a)
            ival_swap(&u[n - 1], &u[0]);
        if (u[n - 1].a < u[mid].a)
            ival_swap(&u[n - 1], &u[mid]);
        int64_t pivot = u[mid].a;
        size_t i = 0, j = n - 1;
        for (;;) { /* Hoare's partition: [0, j] <= pivot <= [j + 1, n) */
            while (u[i].a < pivot)
                i++;
            while (u[j].a > pivot)
                j--;
            if (i >= j)
                break;
            ival_swap(&u[i], &u[j]);
            i++;
            j--;
        }
        size_t left = j + 1;
        if (left < n - left) { /* the smaller side by recursion: log n deep */
            ival_sort(u, left, depth);
            u += left;
            n -= left;
        } else {
            ival_sort(u + left, n - left, depth);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++) {
        struct kvs_ival x = u[i];
        size_t j = i;
        for (; j > 0 && u[j - 1].a > x.a; j--)
            u[j] = u[j - 1];
        u[j] = x;
    }
}

size_t kvs_ival_merge(struct kvs_ival *u, size_t n)
{
    unsigned depth = 0;
    for (size_t k = n; k > 1; k >>= 1)
        depth += 2;
    ival_sort(u, n, depth);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && u[i].a <= u[m - 1].b) {
            if (u[i].b > u[m - 1].b)
                u[m - 1].b = u[i].b;
            continue;
        }
        u[m++] = u[i];
    }
    return m;
}

/* the end of indexed interval i */
static inline int64_t ival_end(const struct kvs_ival *u, size_t i)
{
    return u[i].a + (u[i + 1].b - u[i].b);
}

/* The first i in [from, m) with u[i].a > x, or m (u[from - 1].a <= x, or
 * from is 0): galloping from from, then a binary search in the last step */
static size_t first_start_after(const struct kvs_ival *u, size_t from, size_t m, int64_t x)
{
    size_t lo = from, step = 1;
    while (lo + step <= m && u[lo + step - 1].a <= x) {
        lo += step;
        step *= 2;
    }
    size_t hi = lo + step <= m ? lo + step - 1 : m;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (u[mid].a <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* the same for u[i].a >= x */
static size_t first_start_from(const struct kvs_ival *u, size_t from, size_t m, int64_t x)
{
    size_t lo = from, step = 1;
    while (lo + step <= m && u[lo + step - 1].a < x) {
        lo += step;
        step *= 2;
    }
    size_t hi = lo + step <= m ? lo + step - 1 : m;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (u[mid].a < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int64_t kvs_ival_covered_at(const struct kvs_ival *u, size_t m, int64_t a, int64_t b, size_t *hint)
{
    if (b <= a || !m)
        return 0;
    /* starts only grow: the first starting after a is at or after the hint
     * when the one before the hint starts by a */
    size_t from = *hint <= m && (*hint == 0 || u[*hint - 1].a <= a) ? *hint : 0;
    size_t lo = first_start_after(u, from, m, a);
    *hint = lo;
    /* the first ending after a: that one, or the one before when it holds a
     * (merged intervals end before the next starts, so no earlier one can) */
    if (lo > 0 && ival_end(u, lo - 1) > a)
        lo--;
    size_t l2 = first_start_from(u, lo, m, b); /* first interval starting at or after b */
    if (l2 <= lo)
        return 0;
    int64_t sum = u[l2].b - u[lo].b;
    if (u[lo].a < a)
        sum -= a - u[lo].a; /* the first interval starts before a */
    if (ival_end(u, l2 - 1) > b)
        sum -= ival_end(u, l2 - 1) - b; /* the last ends after b */
    return sum;
}

int64_t kvs_ival_covered(const struct kvs_ival *u, size_t m, int64_t a, int64_t b)
{
    size_t hint = 0;
    return kvs_ival_covered_at(u, m, a, b, &hint);
}

void kvs_ival_index(struct kvs_ival *u, size_t m)
{
    int64_t before = 0;
    for (size_t i = 0; i < m; i++) {
        int64_t len = u[i].b - u[i].a;
        u[i].b = before;
        before += len;
    }
    u[m] = (struct kvs_ival){0, before};
}

int32_t kvs_clip_to_step(const struct kvs_step_table *steps, int64_t ts, int64_t dur, int64_t lo,
                         int64_t hi, int64_t *a, int64_t *b)
{
    int32_t s = steps->n ? kvs_step_at(steps, ts) : 0;
    if (s < 0)
        return -1;
    int64_t w0 = steps->n ? steps->v[s].start : lo;
    int64_t w1 = steps->n ? steps->v[s].start + kvs_step_time_ns(steps, (size_t)s) : hi;
    *a = ts > w0 ? ts : w0;
    *b = ts + dur < w1 ? ts + dur : w1;
    return s;
}

double kvs_window_ms(const struct kvs_step_table *steps, int64_t lo, int64_t hi)
{
    if (!steps->n)
        return (double)(hi - lo) / 1e6;
    double time = 0;
    for (size_t s = 0; s < steps->n; s++)
        time += (double)kvs_step_time_ns(steps, s);
    return time / 1e6 / (double)steps->n;
}

/* the union of all GPU activity (any device), merged in place */
static size_t gpu_union(const struct kvs_trace_data *t, struct kvs_ival *u)
{
    for (size_t i = 0; i < t->gpus.n; i++)
        u[i] = (struct kvs_ival){kvs_gpu_get(t, i).ts, kvs_gpu_get(t, i).ts + kvs_gpu_get(t, i).dur};
    return kvs_ival_merge(u, t->gpus.n);
}

enum kvs_status kvs_host_blocking(const struct kvs_trace_data *t, const struct kvs_step_table *steps,
                                  struct kvs_arena *ar, struct kvs_finding_list *out,
                                  double *blocked_ms_per_step)
{
    *blocked_ms_per_step = 0;
    if (!t->gpus.n || !t->rts.n)
        return KVS_STATUS_OK;
    size_t nwin = steps->n ? steps->n : 1;
    struct kvs_ival *u = malloc((t->gpus.n + 1) * sizeof *u);
    int64_t *blocked = calloc(nwin, sizeof *blocked);
    uint8_t *by_name = calloc(t->strings.n + 1, 1); /* kind_by_name's */
    if (!u || !blocked || !by_name) {
        free(u);
        free(blocked);
        free(by_name);
        return KVS_STATUS_NO_MEMORY;
    }
    size_t m = gpu_union(t, u);
    /* without steps, the window is the trace from the first to the last
     * GPU activity or runtime call */
    int64_t lo = u[0].a, hi = u[m - 1].b;
    kvs_ival_index(u, m);
    for (size_t i = 0; !steps->n && i < t->rts.n; i++) {
        if (kvs_rt_get(t, i).ts < lo)
            lo = kvs_rt_get(t, i).ts;
        if (kvs_rt_get(t, i).ts + kvs_rt_get(t, i).dur > hi)
            hi = kvs_rt_get(t, i).ts + kvs_rt_get(t, i).dur;
    }
    int64_t best_idle = 0;
    size_t best = 0;
    enum kvs_wait_kind best_kind = KVS_WAIT_NONE, main_kind = KVS_WAIT_NONE;
    int64_t kind_ns[KVS_WAIT_KIND_COUNT_] = {0};
    size_t ncalls = 0;
    size_t hint = 0; /* calls mostly come in order of time */
    for (size_t i = 0; i < t->rts.n; i++) {
        const struct kvs_rt_rec r_ = kvs_rt_get(t, i), *r = &r_;
        if (!r->name || r->dur <= 0)
            continue;
        enum kvs_wait_kind k = kind_by_name(t, r->name, r->dur, by_name);
        if (k == KVS_WAIT_NONE)
            continue;
        int64_t a, b;
        int32_t s = kvs_clip_to_step(steps, r->ts, r->dur, lo, hi, &a, &b);
        if (s < 0 || b <= a)
            continue;
        int64_t idle = (b - a) - kvs_ival_covered_at(u, m, a, b, &hint);
        if (idle <= 0)
            continue;
        blocked[s] += idle;
        kind_ns[k] += idle;
        ncalls++;
        if (idle > best_idle) {
            best_idle = idle;
            best = i;
            best_kind = k;
        }
    }
    free(u);
    free(by_name);
    double sum = 0;
    size_t with = 0;
    for (size_t k = 0; k < nwin; k++) {
        sum += (double)blocked[k];
        with += blocked[k] > 0;
    }
    free(blocked);
    for (int k = 1; k < KVS_WAIT_KIND_COUNT_; k++)
        if (kind_ns[k] > kind_ns[main_kind])
            main_kind = (enum kvs_wait_kind)k;
    double per_step = sum / 1e6 / (double)nwin, step_ms = kvs_window_ms(steps, lo, hi);
    if (step_ms <= 0 || per_step < MIN_BLOCKED_FRACTION * step_ms)
        return KVS_STATUS_OK;
    *blocked_ms_per_step = per_step;
    const struct kvs_rt_rec r_ = kvs_rt_get(t, best), *r = &r_;
    const char *call = kvs_intern_str(&t->strings, r->name);
    int32_t bs = steps->n ? kvs_step_at(steps, r->ts) : -1;
    struct kvs_finding fd = {0};
    fd.id = "host_blocking";
    fd.group = -1;
    fd.gpu_ms_per_step = per_step;
    fd.severity = per_step >= 0.3 * step_ms ? KVS_SEV_HIGH : KVS_SEV_WARN;
    struct kvs_fig_host_blocking fig = {
        .steps = steps->n > 0,
        .blocked_ms = per_step,
        .step_ms = step_ms,
        .call = call,
        .kind = best_kind,
        .main_kind = main_kind,
        .call_ms = (double)r->dur / 1e6,
        .call_at_ms = (double)(r->ts - (bs >= 0 ? steps->v[bs].start : lo)) / 1e6,
        .call_idle_ms = (double)best_idle / 1e6,
        .call_step = bs >= 0 ? steps->v[bs].index : -1,
        .corr = (long long)r->corr,
        .calls = ncalls,
        .windows_with = with,
        .windows = nwin,
    };
    KVS_TRY(kvs_figures_host_blocking(ar, &fig, &fd));
    KVS_TRY(kvs_phrase_host_blocking(ar, &fig, &fd));
    return kvs_finding_push(out, &fd);
}
