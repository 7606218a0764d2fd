/* analyzers/gate.c — kvs_gate_compare(): a comparison judged as a CI gate
 * (`kvscope compare BASE NEW --fail-on regression [--threshold PCT]`). NEW
 * fails when
 *   - its GPU time or wall time per step rose, or its tokens/s fell, by more
 *     than the threshold and beyond the step-to-step noise (the steps of
 *     both traces are the samples: kvs_shift_estimate, analyzers/shift.c;
 *     with too few steps for an interval the threshold alone decides, and
 *     the check says so);
 *   - it has a finding of severity high that BASE lacks;
 *   - a copy/cast role that takes at least 1% of its GPU time per step moves
 *     more bytes per step than in BASE by more than the threshold (or is
 *     new).
 * Every check carries its figures and a sentence; the renderers lay them
 * out. docs/analysis.md, "The gate"; tests/test_gate.c, tests/test_gate.py.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/compare.h"
#include "kvscope/gate.h"
#include "kvscope/kernel_name.h"
#include "kvscope/units.h"

#define OP_WIDTH 60 /* columns of an op's name in a check's sentence */

struct gb {
    struct kvs_gate *g;
    bool oom;
};

const char *kvs_gate_kind_name(enum kvs_gate_kind k)
{
    switch (k) {
    case KVS_GATE_GPU_TIME: return "gpu_time";
    case KVS_GATE_WALL_TIME: return "wall_time";
    case KVS_GATE_TOKENS: return "tokens_per_s";
    case KVS_GATE_FINDING: return "finding";
    case KVS_GATE_COPY_BYTES: return "copy_bytes";
    }
    return "?";
}

const char *kvs_gate_result_name(enum kvs_gate_result r)
{
    switch (r) {
    case KVS_GATE_PASS: return "pass";
    case KVS_GATE_FAIL: return "fail";
    case KVS_GATE_SKIPPED: return "skipped";
    }
    return "?";
}

static struct kvs_gate_check *add_check(struct gb *b, enum kvs_gate_kind kind, const char *what)
{
    struct kvs_gate *g = b->g;
    struct kvs_gate_check *c = realloc(g->checks, (g->ncheck + 1) * sizeof *c);
    char *w = strdup(what ? what : "?");
    if (!c || !w) {
        if (c)
            g->checks = c;
        free(w);
        b->oom = true;
        return NULL;
    }
    g->checks = c;
    c = &g->checks[g->ncheck++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->what = w;
    c->before = c->after = c->change_pct = NAN;
    c->low_pct = c->high_pct = c->confidence = NAN;
    c->significant = -1;
    return c;
}

// ----------------------------------------------------------------------------
// step time and tokens/s: sampled

enum figure { FIG_GPU, FIG_WALL, FIG_TOKENS };

/* One value per step (one for the whole trace: GPU time without step
 * markers); NULL with *n = 0 when the figure is unknown. */
static double *samples(struct gb *b, const struct kvs_analysis *a, enum figure fig, int batch,
                       size_t *n)
{
    *n = 0;
    size_t ns = a->step ? a->nstep : 0;
    bool tokens = ns > 0;
    for (size_t i = 0; i < ns; i++)
        tokens = tokens && a->step[i].tokens > 0;
    if (ns == 0 && fig != FIG_GPU)
        return NULL;
    if (fig == FIG_TOKENS && batch <= 0 && !tokens)
        return NULL;
    double *v = malloc((ns ? ns : 1) * sizeof *v);
    if (!v) {
        b->oom = true;
        return NULL;
    }
    if (ns == 0) {
        v[0] = a->steps.total_gpu_ms;
        *n = 1;
        return v;
    }
    for (size_t i = 0; i < ns; i++) {
        const struct kvs_step *s = &a->step[i];
        switch (fig) {
        case FIG_GPU: v[i] = s->gpu_busy_ms; break;
        case FIG_WALL: v[i] = s->wall_ms; break;
        case FIG_TOKENS:
            /* as compare's table: --batch over the wall time wins, else the
             * trace's own token counts over the step's time */
            if (batch > 0)
                v[i] = s->wall_ms > 0 ? batch * 1000.0 / s->wall_ms : NAN;
            else
                v[i] = s->time_ms > 0 ? (double)s->tokens * 1000.0 / s->time_ms : NAN;
            break;
        }
    }
    *n = ns;
    return v;
}

/* "24.71" and "94.19 ms": the unit after the second figure only */
static const char *value_text(char *buf, double v, const char *unit, bool with_unit)
{
    char n[KVS_FMT_BUF];
    bool tokens = unit && !strcmp(unit, "tokens/s");
    snprintf(buf, 64, "%s%s", tokens ? kvs_fmt_count(n, v) : kvs_fmt_ms(n, v),
             !with_unit ? "" : tokens ? " tokens/s" : " ms");
    return buf;
}

static const char *bound_text(char *buf, double pct)
{
    snprintf(buf, KVS_FMT_BUF, "%+.1f", pct);
    if (!strcmp(buf, "-0.0") || !strcmp(buf, "+0.0"))
        strcpy(buf, "0.0");
    return buf;
}

/* why the threshold alone decides */
static const char *unjudged_text(char *buf, size_t size, const struct kvs_gate_check *c,
                                 bool whole_trace)
{
    if (whole_trace)
        snprintf(buf, size, "significance cannot be judged from whole-trace totals");
    else if (c->nbefore == 1 && c->nafter == 1)
        snprintf(buf, size, "significance cannot be judged from one step per trace");
    else
        snprintf(buf, size,
                 "significance cannot be judged from %zu and %zu steps (too few for a %.0f%% "
                 "interval)",
                 c->nbefore, c->nafter, KVS_GATE_LEVEL * 100);
    return buf;
}

static void sampled_message(struct gb *b, struct kvs_gate_check *c, int worse, bool whole_trace,
                            double threshold)
{
    char v1[64], v2[64], desc[64], chg[KVS_FMT_BUF], lo[KVS_FMT_BUF], hi[KVS_FMT_BUF],
        iv[128] = "", why[160], concl[320];
    value_text(v1, c->before, c->unit, false);
    value_text(v2, c->after, c->unit, true);
    if (whole_trace)
        snprintf(desc, sizeof desc, "whole trace, no step markers");
    else if (c->nbefore == 1 && c->nafter == 1)
        snprintf(desc, sizeof desc, "one step each");
    else
        snprintf(desc, sizeof desc, "medians of %zu and %zu steps", c->nbefore, c->nafter);
    kvs_fmt_signed_pct(chg, c->change_pct / 100);
    if (c->has_interval)
        snprintf(iv, sizeof iv, " [%s, %s], %.0f%%", bound_text(lo, c->low_pct),
                 bound_text(hi, c->high_pct), KVS_GATE_LEVEL * 100);
    unjudged_text(why, sizeof why, c, whole_trace);
    double bad = worse * c->change_pct;
    bool zero = !strcmp(chg, "0.0%");
    if (c->result == KVS_GATE_FAIL && c->significant == 1)
        snprintf(concl, sizeof concl,
                 "worse by more than the %g%% threshold, beyond the step-to-step noise", threshold);
    else if (c->result == KVS_GATE_FAIL)
        snprintf(concl, sizeof concl,
                 "worse by more than the %g%% threshold; %s, so the threshold alone decides",
                 threshold, why);
    else if (zero)
        snprintf(concl, sizeof concl, "no change%s%s", c->significant < 0 ? "; " : "",
                 c->significant < 0 ? why : "");
    else if (bad > threshold)
        snprintf(concl, sizeof concl,
                 "not significant: inside the step-to-step noise, so not a regression");
    else if (bad > 0)
        snprintf(concl, sizeof concl, "within the %g%% threshold%s%s", threshold,
                 c->significant == 1   ? " (beyond the noise, but small)"
                 : c->significant == 0 ? " (and not significant)"
                                       : "; ",
                 c->significant < 0 ? why : "");
    else
        snprintf(concl, sizeof concl, "better%s%s",
                 c->significant == 1   ? ", beyond the step-to-step noise"
                 : c->significant == 0 ? " (not significant)"
                                       : "; ",
                 c->significant < 0 ? why : "");
    c->message = kvs_fmt_dup(&b->oom, "%s: %s -> %s (%s), %s%s: %s.", c->what, v1, v2, desc, chg,
                             iv, concl);
}

static void skip(struct gb *b, struct kvs_gate_check *c, const char *why)
{
    c->result = KVS_GATE_SKIPPED;
    c->message = kvs_fmt_dup(&b->oom, "%s%s: not checked: %s.",
                             c->kind == KVS_GATE_COPY_BYTES ? "copy/cast role " : "", c->what, why);
}

/* worse: +1 when a rise is worse (time), -1 when a fall is (tokens/s) */
static void sampled_check(struct gb *b, enum kvs_gate_kind kind, enum figure fig, int worse,
                          const struct kvs_comparison *cmp, const struct kvs_analysis *before,
                          const struct kvs_analysis *after, double threshold)
{
    static const char *const what[] = {"GPU time per step", "wall time per step", "tokens/s"};
    static const char *const unit[] = {"ms", "ms", "tokens/s"};
    bool whole = before->steps.count == 0 && after->steps.count == 0;
    struct kvs_gate_check *c = add_check(b, kind, whole && fig == FIG_GPU ? "GPU time" : what[fig]);
    if (!c)
        return;
    c->unit = unit[fig];
    if ((before->steps.count == 0) != (after->steps.count == 0)) {
        skip(b, c, before->steps.count == 0
                       ? "BASE has no step markers (its figures are whole-trace totals), NEW has"
                       : "NEW has no step markers (its figures are whole-trace totals), BASE has");
        return;
    }
    if (whole && fig != FIG_GPU) {
        skip(b, c, "neither trace has step markers");
        return;
    }
    size_t m = 0, n = 0;
    double *x = samples(b, before, fig, cmp->batch, &m);
    double *y = samples(b, after, fig, cmp->batch, &n);
    struct kvs_shift s;
    enum kvs_status st = x && y ? kvs_shift_estimate(x, m, y, n, KVS_GATE_LEVEL, &s)
                                : KVS_STATUS_INVALID_ARGUMENT;
    free(x);
    free(y);
    if (st == KVS_STATUS_NO_MEMORY || b->oom) {
        b->oom = true;
        return;
    }
    if (st != KVS_STATUS_OK) {
        skip(b, c, fig == FIG_TOKENS ? "tokens/s is unknown (give --batch, or steps that name "
                                       "their tokens)"
                                     : "no finite value in a trace");
        return;
    }
    c->nbefore = s.nbefore;
    c->nafter = s.nafter;
    c->before = s.median_before;
    c->after = s.median_after;
    if (!(s.median_before > 0)) {
        skip(b, c, "BASE's median is 0, so no relative change can be given");
        return;
    }
    c->change_pct = 100 * s.shift / s.median_before;
    if (s.has_interval) {
        c->has_interval = true;
        c->low_pct = 100 * s.low / s.median_before;
        c->high_pct = 100 * s.high / s.median_before;
        c->confidence = s.confidence;
        c->significant = s.low > 0 || s.high < 0;
    }
    bool over = worse * c->change_pct > threshold;
    c->result = over && c->significant != 0 ? KVS_GATE_FAIL : KVS_GATE_PASS;
    sampled_message(b, c, worse, whole, threshold);
}

// ----------------------------------------------------------------------------
// findings

static const struct kvs_finding *find_id(const struct kvs_analysis *a, const char *id)
{
    for (size_t i = 0; a->findings && i < a->nfinding; i++)
        if (a->findings[i].id && !strcmp(a->findings[i].id, id))
            return &a->findings[i];
    return NULL;
}

static bool in_list(char *const *ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] && !strcmp(ids[i], id))
            return true;
    return false;
}

static void finding_checks(struct gb *b, const struct kvs_comparison *cmp,
                           const struct kvs_analysis *before, const struct kvs_analysis *after)
{
    size_t nhigh = 0;
    for (size_t i = 0; after->findings && i < after->nfinding && !b->oom; i++) {
        const struct kvs_finding *f = &after->findings[i];
        if (!f->id || f->severity != KVS_SEV_HIGH || find_id(after, f->id) != f)
            continue; /* unnamed, lower, or a repeat of an id already checked */
        nhigh++;
        struct kvs_gate_check *c = add_check(b, KVS_GATE_FINDING, f->id);
        if (!c)
            return;
        c->unit = "ms";
        c->after = f->gpu_ms_per_step;
        const char *msg = f->message ? f->message : "";
        size_t len = strlen(msg);
        if (in_list(cmp->new_ids, cmp->nnew, f->id)) {
            c->result = KVS_GATE_FAIL;
            /* the finding's own sentence, with one full stop */
            c->message = kvs_fmt_dup(&b->oom, "%s: new in NEW, of severity high: %s%s", f->id, msg,
                                     len && msg[len - 1] == '.' ? "" : ".");
        } else if (find_id(before, f->id)) {
            c->result = KVS_GATE_PASS;
            c->message = kvs_fmt_dup(&b->oom, "%s: of severity high in NEW, but BASE has it too: not new.",
                                     f->id);
        } else {
            /* neither new nor kept: the comparison could not judge it (a
             * trace without dtypes; its verdict says why) */
            skip(b, c, "BASE records no dtypes, so this finding cannot be looked for in it");
        }
    }
    if (nhigh == 0 && !b->oom) {
        struct kvs_gate_check *c = add_check(b, KVS_GATE_FINDING, "high-severity findings");
        if (c)
            c->message = kvs_fmt_dup(&b->oom, "high-severity findings: NEW has none.");
    }
}

// ----------------------------------------------------------------------------
// copy/cast roles: bytes per step

static void role_checks(struct gb *b, const struct kvs_comparison *cmp,
                        const struct kvs_analysis *after, double threshold)
{
    double busy = after->steps.count > 0 ? after->steps.gpu_ms_per_step : after->steps.total_gpu_ms;
    for (size_t i = 0; i < cmp->ngroup && !b->oom; i++) {
        const struct kvs_cmp_group *g = &cmp->groups[i];
        const struct kvs_cmp_side *x = &g->before, *y = &g->after;
        if (!y->present)
            continue; /* gone in NEW: no more bytes than before */
        if (!(busy > 0) || !(y->gpu_ms_per_step >= KVS_GATE_ROLE_MIN_SHARE * busy)) {
            b->g->roles_unchecked++;
            continue;
        }
        struct kvs_gate_check *c = add_check(b, KVS_GATE_COPY_BYTES, g->role);
        if (!c)
            return;
        c->unit = "B";
        char op[OP_WIDTH + 1], b1[KVS_FMT_BUF], b2[KVS_FMT_BUF], ms[KVS_FMT_BUF], sh[KVS_FMT_BUF],
            chg[KVS_FMT_BUF], who[OP_WIDTH + 160];
        kvs_short_op(op, sizeof op, y->op ? y->op : "?", OP_WIDTH);
        /* "aten::copy_ [131072,1,576] x2"; a memcpy no op launched is its own role: no repeat */
        const char *dims = y->dims_short && strcmp(y->dims_short, "-") ? y->dims_short : "";
        snprintf(who, sizeof who, "%s%s%s", y->op && strcmp(y->op, g->role) ? op : "",
                 *dims && y->op && strcmp(y->op, g->role) ? " " : "", dims);
        if (!y->bytes_known || (x->present && !x->bytes_known)) {
            skip(b, c, "its bytes per step are unknown (no shapes recorded, and its launch does not "
                       "size it)");
            continue;
        }
        c->after = y->bytes_per_step;
        if (!x->present || !(x->bytes_per_step > 0)) {
            c->before = 0;
            c->result = KVS_GATE_FAIL;
            c->message = kvs_fmt_dup(
                &b->oom,
                "copy/cast role %s: new in NEW: %s%smoves %s per step in %s ms of GPU time per step "
                "(%s of NEW's), none in BASE.",
                g->role, who, *who ? " " : "", kvs_fmt_bytes(b2, c->after),
                kvs_fmt_ms(ms, y->gpu_ms_per_step), kvs_fmt_pct(sh, y->gpu_ms_per_step / busy));
            continue;
        }
        c->before = x->bytes_per_step;
        c->change_pct = 100 * (c->after - c->before) / c->before;
        kvs_fmt_signed_pct(chg, c->change_pct / 100);
        bool over = c->change_pct > threshold;
        c->result = over ? KVS_GATE_FAIL : KVS_GATE_PASS;
        char concl[80];
        if (over)
            snprintf(concl, sizeof concl, "more bytes by more than the %g%% threshold", threshold);
        else
            snprintf(concl, sizeof concl, "%s",
                     c->change_pct > 0 ? "within the threshold"
                     : c->change_pct < 0 ? "fewer bytes" : "no change");
        c->message = kvs_fmt_dup(&b->oom, "copy/cast role %s%s%s%s: %s -> %s per step (%s): %s.",
                                 g->role, *who ? " (" : "", who, *who ? ")" : "",
                                 kvs_fmt_bytes(b1, c->before), kvs_fmt_bytes(b2, c->after), chg,
                                 concl);
    }
}

// ----------------------------------------------------------------------------
// entry points

enum kvs_status kvs_gate_compare(struct kvs_comparison *c, const struct kvs_analysis *before,
                                 const struct kvs_analysis *after, double threshold_pct)
{
    if (!c || !before || !after || !(threshold_pct >= 0) || !isfinite(threshold_pct))
        return KVS_STATUS_INVALID_ARGUMENT;
    struct kvs_gate *g = calloc(1, sizeof *g);
    if (!g)
        return KVS_STATUS_NO_MEMORY;
    g->threshold_pct = threshold_pct;
    struct gb b = {g, false};
    sampled_check(&b, KVS_GATE_GPU_TIME, FIG_GPU, +1, c, before, after, threshold_pct);
    if (!b.oom)
        sampled_check(&b, KVS_GATE_WALL_TIME, FIG_WALL, +1, c, before, after, threshold_pct);
    if (!b.oom)
        sampled_check(&b, KVS_GATE_TOKENS, FIG_TOKENS, -1, c, before, after, threshold_pct);
    if (!b.oom)
        finding_checks(&b, c, before, after);
    if (!b.oom)
        role_checks(&b, c, after, threshold_pct);
    for (size_t i = 0; i < g->ncheck; i++) {
        if (!g->checks[i].message)
            b.oom = true;
        g->nreason += g->checks[i].result == KVS_GATE_FAIL;
    }
    if (b.oom) {
        kvs_gate_free(g);
        return KVS_STATUS_NO_MEMORY;
    }
    g->passed = g->nreason == 0;
    kvs_gate_free(c->gate);
    c->gate = g;
    return KVS_STATUS_OK;
}

void kvs_gate_free(struct kvs_gate *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->ncheck; i++) {
        free(g->checks[i].what);
        free(g->checks[i].message);
    }
    free(g->checks);
    free(g);
}
