/* host_op.c — idle GPU time that names its cause, when the cause is one
 * framework op's own CPU time: the CPU is inside the op, not launching, not
 * waiting in a blocking call, and the GPU has nothing to run (cuDNN building
 * an attention plan for every new KV length, a Python-side loop inside an
 * op, a compile). The host_op_bound finding (host_op.h; docs/analysis.md).
 * Private to analyzers/.
 */
#include "host_op.h"

#include <stdlib.h>
#include <string.h>

#include "host_blocking.h"
#include "kvscope/check.h"
#include "figures.h"
#include "phrase.h"
#include "steps.h"

#define MIN_STEP_FRACTION 0.20  /* of the step: below this, no finding */
#define MIN_MS_PER_STEP 0.5
#define MIN_MS_PER_CALL 0.5     /* fewer: the op is many short launch gaps, gpu_idle's */
#define INNER_SHARE 0.9         /* a nested name holding this much of the best's time is named instead */

/* The op calls host_op_bound counts: a positive duration, not captured, a
 * piece inside a step (or the trace's GPU span without steps) */
static bool op_piece(const struct kvs_trace_data *t, const struct kvs_step_table *steps, size_t i, int64_t lo,
                     int64_t hi, int32_t *step, int64_t *a, int64_t *b)
{
    int64_t dur = kvs_op_dur(t, i);
    if (dur <= 0 || kvs_op_captured(t, i))
        return false;
    *step = kvs_clip_to_step(steps, kvs_op_ts(t, i), dur, lo, hi, a, b);
    return *step >= 0 && *b > *a && kvs_op_name_at(t, i) < t->strings.n;
}

/* ops[x] before ops[y]: by start, then file order. A piece's clipped start
 * is its op's start (inside its step) or the span's start for those before
 * it: the same order, up to ties, which change no sum below. */
static bool op_before(const struct kvs_trace_data *ops, uint32_t x, uint32_t y)
{
    int64_t tx = kvs_op_ts(ops, x), ty = kvs_op_ts(ops, y);
    return tx < ty || (tx == ty && x < y);
}

static void sift_down(const struct kvs_trace_data *ops, uint32_t *v, size_t r, size_t n)
{
    for (;;) {
        size_t ch = 2 * r + 1;
        if (ch >= n)
            return;
        if (ch + 1 < n && op_before(ops, v[ch], v[ch + 1]))
            ch++;
        if (!op_before(ops, v[r], v[ch]))
            return;
        uint32_t tmp = v[r];
        v[r] = v[ch];
        v[ch] = tmp;
        r = ch;
    }
}

/* Heapsort v[0..n) by op_before: in place (qsort's merge sort would copy
 * the array), and the keys define one order, whichever sort makes it. */
static void sort_by_start(const struct kvs_trace_data *ops, uint32_t *v, size_t n)
{
    for (size_t k = n / 2; k > 0; k--)
        sift_down(ops, v, k - 1, n);
    for (size_t end = n; end > 1; end--) {
        uint32_t tmp = v[0];
        v[0] = v[end - 1];
        v[end - 1] = tmp;
        sift_down(ops, v, 0, end - 1);
    }
}

struct name_acc {
    uint32_t name;
    int64_t idle, dur, calls;
    int64_t end; /* of the union of its calls' pieces so far */
    size_t steps_with;
    int32_t last_step;
};

/* a runtime call whose time is not an op's own: a blocking call
 * (host_blocking's), or a graph launch (launch time, gpu_idle's; a replay's
 * copies of its captured ops carry the launch's time) */
static bool explained(const struct kvs_trace_data *t, size_t i, uint8_t *by_name)
{
    const struct kvs_rt_rec r_ = kvs_rt_get(t, i), *r = &r_;
    if (!r->name || r->dur <= 0)
        return false;
    const char *nm = kvs_intern_str(&t->strings, r->name);
    /* what the name alone says, once a name (by_name[name]: bit 0 asked; 1 explained at any
     * duration; 2 at some durations, so asked again with this one) */
    uint8_t *k = &by_name[r->name];
    if (!*k)
        *k = (uint8_t)(1 | (kvs_host_blocking_call(nm, 0) || strstr(nm, "GraphLaunch") ? 2 : 0) |
                       (kvs_host_blocking_call(nm, INT64_MAX) ? 4 : 0));
    return (*k & 2) || ((*k & 4) && kvs_host_blocking_call(nm, r->dur));
}

/* The union of its name's calls' pieces so far, op i's piece added
 * (overlapping calls of one name, on several threads or a graph replay's
 * copies of one op sharing its launch, count once): calls come in order of
 * start within their name. */
struct pieces {
    const struct kvs_trace_data *t;
    const struct kvs_step_table *steps;
    int64_t lo, hi;
    const struct kvs_ival *u;
    size_t m;
    struct name_acc *acc;
    uint32_t *slot; /* by name: its acc index, UINT32_MAX before its first call */
    size_t nacc;
    size_t hint; /* kvs_ival_covered_at's: the calls come mostly in order of start */
};

static void add_piece_at(struct pieces *p, size_t i, uint32_t nm, int32_t s, int64_t a, int64_t e)
{
    if (p->slot[nm] == UINT32_MAX) {
        p->slot[nm] = (uint32_t)p->nacc;
        p->acc[p->nacc++] = (struct name_acc){.name = nm, .last_step = -1, .end = INT64_MIN};
    }
    struct name_acc *x = &p->acc[p->slot[nm]];
    if (a < x->end)
        a = x->end;
    if (e > a)
        x->idle += (e - a) - kvs_ival_covered_at(p->u, p->m, a, e, &p->hint);
    if (e > x->end)
        x->end = e;
    x->dur += kvs_op_dur(p->t, i);
    x->calls++;
    if (x->last_step != s) {
        x->steps_with++;
        x->last_step = s;
    }
}

/* the same, op i's piece found here (the calls in order of name, then start) */
static void add_piece(struct pieces *p, size_t i)
{
    int32_t s;
    int64_t a, e;
    op_piece(p->t, p->steps, i, p->lo, p->hi, &s, &a, &e);
    add_piece_at(p, i, kvs_op_name_at(p->t, i), s, a, e);
}

/* Which ops have a piece (bit i of has[]) and how many of each name
 * (first[name + 1]); true when each name's calls are in order of start in
 * the file, so that the file's order is the name's order of calls (op_before
 * breaks ties by file order): then their pieces are added to p as they come
 * (false: p holds some, to be cleared). last[] (strings.n + 1) is scratch. */
static bool mark_pieces(struct pieces *p, uint8_t *has, uint32_t *first, int64_t *last)
{
    const struct kvs_trace_data *t = p->t;
    int32_t s;
    int64_t a, e;
    bool in_order = true;
    for (size_t nm = 0; nm <= t->strings.n; nm++)
        last[nm] = INT64_MIN;
    for (size_t i = 0; i < t->ops.n; i++)
        if (op_piece(t, p->steps, i, p->lo, p->hi, &s, &a, &e)) {
            uint32_t nm = kvs_op_name_at(t, i);
            int64_t ts = kvs_op_ts(t, i);
            first[nm + 1]++;
            has[i / 8] |= (uint8_t)(1u << (i % 8));
            in_order &= ts >= last[nm];
            last[nm] = ts;
            if (in_order)
                add_piece_at(p, i, nm, s, a, e);
        }
    return in_order;
}

/* When some name's calls are not in order of start: the op calls with a
 * piece in order of name, then start, into ord (a counting sort by name,
 * then each name's calls by start: 4 bytes a call); their count. first[] as
 * mark_pieces left it. */
static size_t calls_by_name(const struct kvs_trace_data *t, const uint8_t *has, uint32_t *ord, uint32_t *first)
{
    for (size_t nm = 0; nm <= t->strings.n; nm++)
        first[nm + 1] += first[nm];
    size_t np = first[t->strings.n];
    for (size_t i = 0; i < t->ops.n; i++)
        if (has[i / 8] >> (i % 8) & 1)
            ord[first[kvs_op_name_at(t, i)]++] = (uint32_t)i;
    /* first[nm] is now where the next name's calls start */
    for (size_t nm = 0, at = 0; nm < t->strings.n; at = first[nm], nm++) {
        size_t calls = first[nm] - at;
        int64_t prev = calls ? kvs_op_ts(t, ord[at]) : 0;
        for (size_t j = 1; j < calls; j++) { /* op_before(ord[at + j], ord[at + j - 1]): ord rises */
            int64_t ts = kvs_op_ts(t, ord[at + j]);
            if (ts < prev) {
                sort_by_start(t, ord + at, calls);
                break;
            }
            prev = ts;
        }
    }
    return np;
}

static int cmp_acc_name(const void *x, const void *y)
{
    const struct name_acc *p = x, *q = y;
    return p->name < q->name ? -1 : p->name > q->name;
}

/* The intervals that explain idle host time already: GPU work, and blocking
 * calls (malloc'ed, *n of them; NULL when memory ran out) */
static struct kvs_ival *explained_ivals(const struct kvs_trace_data *t, size_t *n)
{
    size_t nu = t->gpus.n;
    uint8_t *by_name = calloc(t->strings.n + 1, 1); /* explained()'s, by call name */
    if (!by_name)
        return NULL;
    for (size_t i = 0; i < t->rts.n; i++)
        nu += explained(t, i, by_name);
    struct kvs_ival *u = malloc((nu + 1) * sizeof *u); /* + 1: kvs_ival_index's */
    size_t k = 0;
    for (size_t i = 0; u && i < t->gpus.n; i++)
        u[k++] = (struct kvs_ival){kvs_gpu_get(t, i).ts, kvs_gpu_get(t, i).ts + kvs_gpu_get(t, i).dur};
    for (size_t i = 0; u && i < t->rts.n; i++)
        if (explained(t, i, by_name))
            u[k++] = (struct kvs_ival){kvs_rt_get(t, i).ts, kvs_rt_get(t, i).ts + kvs_rt_get(t, i).dur};
    free(by_name);
    *n = k;
    return u;
}

enum kvs_status kvs_host_op_bound(const struct kvs_trace_data *t, const struct kvs_step_table *steps,
                                  struct kvs_arena *ar, struct kvs_finding_list *out, double *ms_per_step)
{
    *ms_per_step = 0;
    if (!t->gpus.n || !t->ops.n || kvs_trace_has_capture(t))
        return KVS_STATUS_OK;
    size_t nwin = steps->n ? steps->n : 1;
    size_t k = 0;
    struct kvs_ival *u = explained_ivals(t, &k);
    struct name_acc *acc = calloc(t->nopkeys ? t->nopkeys : 1, sizeof *acc); /* by op name, via its key */
    uint32_t *slot = malloc((t->strings.n + 1) * sizeof *slot);
    uint32_t *first = calloc(t->strings.n + 2, sizeof *first); /* by name: its calls, then where they start */
    int64_t *last = malloc((t->strings.n + 1) * sizeof *last);
    uint8_t *has = calloc(t->ops.n / 8 + 1, 1); /* which ops have a piece */
    if (!u || !acc || !slot || !first || !last || !has) {
        free(u);
        free(acc);
        free(slot);
        free(first);
        free(last);
        free(has);
        return KVS_STATUS_NO_MEMORY;
    }
    size_t m = kvs_ival_merge(u, k);
    int64_t lo = u[0].a, hi = u[m - 1].b; /* without steps: the trace's GPU span */
    kvs_ival_index(u, m);
    for (size_t i = 0; i <= t->strings.n; i++)
        slot[i] = UINT32_MAX;
    struct pieces p = {t, steps, lo, hi, u, m, acc, slot, 0, 0};
    /* each name's calls in file order (the usual trace): added in one pass, no ord */
    bool in_order = mark_pieces(&p, has, first, last);
    free(last);
    bool no_memory = false;
    if (!in_order) { /* the calls in order of name, then start (calls_by_name), from none */
        for (size_t i = 0; i <= t->strings.n; i++)
            slot[i] = UINT32_MAX;
        p.nacc = 0;
        uint32_t *ord = malloc((t->ops.n ? t->ops.n : 1) * sizeof *ord);
        no_memory = !ord;
        size_t np = ord ? calls_by_name(t, has, ord, first) : 0;
        for (size_t i = 0; i < np; i++)
            add_piece(&p, ord[i]);
        free(ord);
    }
    free(has);
    free(first);
    free(u);
    free(slot);
    if (no_memory) {
        free(acc);
        return KVS_STATUS_NO_MEMORY;
    }
    size_t nacc = p.nacc;
    qsort(acc, nacc, sizeof *acc, cmp_acc_name); /* by name, as calls_by_name orders them */
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < nacc; i++)
        if (best == SIZE_MAX || acc[i].idle > acc[best].idle)
            best = i;
    /* an op and the backend calls nested in it hold the same idle time: name
     * the innermost (shortest total time) of those holding nearly as much */
    for (size_t i = 0; best != SIZE_MAX && i < nacc; i++)
        if ((double)acc[i].idle >= INNER_SHARE * (double)acc[best].idle && acc[i].dur < acc[best].dur)
            best = i;
    double step_ms = kvs_window_ms(steps, lo, hi);
    if (best == SIZE_MAX || step_ms <= 0) {
        free(acc);
        return KVS_STATUS_OK;
    }
    struct name_acc b = acc[best];
    free(acc);
    double per_step = (double)b.idle / 1e6 / (double)nwin;
    double per_call = (double)b.idle / 1e6 / (double)b.calls;
    if (per_step < MIN_STEP_FRACTION * step_ms || per_step < MIN_MS_PER_STEP || per_call < MIN_MS_PER_CALL)
        return KVS_STATUS_OK;
    *ms_per_step = per_step;
    const char *op = kvs_intern_str(&t->strings, b.name);
    struct kvs_finding fd = {0};
    fd.id = "host_op_bound";
    fd.group = -1;
    fd.gpu_ms_per_step = per_step;
    fd.severity = per_step >= 0.3 * step_ms ? KVS_SEV_HIGH : KVS_SEV_WARN;
    struct kvs_fig_host_op fig = {
        .steps = steps->n > 0,
        .op = op,
        .idle_ms = per_step,
        .step_ms = step_ms,
        .idle_ms_per_call = per_call,
        .cpu_ms_per_call = (double)b.dur / 1e6 / (double)b.calls,
        .calls = b.calls,
        .windows_with = b.steps_with,
        .windows = nwin,
    };
    KVS_TRY(kvs_figures_host_op(ar, &fig, &fd));
    KVS_TRY(kvs_phrase_host_op(ar, &fig, &fd));
    return kvs_finding_push(out, &fd);
}
