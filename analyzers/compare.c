/* analyzers/compare.c — kvs_compare(): two analyses (before and after a fix)
 * into one comparison: step figures side by side, copy/cast groups paired by
 * role (the full-buffer cast [131072,1,576] before and the active-token cast
 * [1024,1,576] after share a role), findings resolved and new by id, and a
 * verdict in plain words that explains why GPU time and wall time moved by
 * different amounts.
 *
 *   kvscope compare BEFORE AFTER [--batch B]
 *
 * Tested in tests/test_compare.c (synthetic analyses) and
 * tests/test_compare_mla.sh (the two real MLA traces).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/compare.h"
#include "kvscope/kernel_name.h"
#include "kvscope/units.h"

struct builder {
    struct kvs_comparison *c;
    bool oom;
    bool loose; /* a trace without dtypes (an Nsight Systems emit_nvtx profile): roles pair without them */
};

static char *dup_or_null(struct builder *b, const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        b->oom = true;
    return d;
}

static void verdict(struct builder *b, char *s)
{
    kvs_strv_push(&b->oom, &b->c->verdict, &b->c->nverdict, s);
}

double kvs_cmp_rel(double before, double after)
{
    if (!isfinite(before) || !isfinite(after) || before == 0)
        return NAN;
    return (after - before) / before;
}

// ----------------------------------------------------------------------------
// steps and groups

static void fill_steps(struct builder *b, struct kvs_cmp_steps *s, const struct kvs_analysis *a,
                       int batch)
{
    s->path = dup_or_null(b, a->trace.path);
    s->device = dup_or_null(b, a->trace.device);
    s->peak_gbps = a->trace.peak_gbps > 0 ? a->trace.peak_gbps : 0;
    s->count = a->steps.count;
    s->mean_ms = a->steps.mean_ms;
    s->gpu_ms_per_step = a->steps.gpu_ms_per_step;
    s->gpu_busy_fraction = a->steps.gpu_busy_fraction;
    s->wall_min_ms = s->wall_max_ms = NAN;
    for (size_t i = 0; a->step && i < a->nstep; i++) {
        double w = a->step[i].wall_ms;
        if (!isfinite(w))
            continue;
        if (!(w >= s->wall_min_ms))
            s->wall_min_ms = w;
        if (!(w <= s->wall_max_ms))
            s->wall_max_ms = w;
    }
    if (batch > 0 && a->steps.count > 0 && a->steps.mean_ms > 0)
        s->tokens_per_s = batch * 1000.0 / a->steps.mean_ms;
    else
        s->tokens_per_s = a->steps.tokens_per_s > 0 ? a->steps.tokens_per_s : 0;
}

/* a group whose op recorded dims but no dtypes (an Nsight Systems emit_nvtx
 * range, or Input Dims alone): its tensors' dtypes are "" and its bytes unknown */
static bool untyped(const struct kvs_group *g)
{
    return g->ntensors > 0 && g->tensor_dtypes && g->tensor_dtypes[0] && !*g->tensor_dtypes[0];
}

static bool any_untyped(const struct kvs_analysis *a)
{
    for (size_t i = 0; a->groups && i < a->ngroup; i++)
        if (untyped(&a->groups[i]))
            return true;
    return false;
}

/* "cast BFloat16<-Float8_e4m3fn [*,1,576]" and "copy ?<-? [*,1,576]" (no
 * dtypes recorded) as "copy/cast [*,1,576]": the role without its kind and
 * dtype pair (match.c writes "<kind> <dtype chain> <rows>", the rows being
 * "rows of ..." or "[...]"), or NULL when the role is not of that form */
static char *role_without_dtypes(struct builder *b, const char *r)
{
    if (strncmp(r, "cast ", 5) && strncmp(r, "copy ", 5))
        return NULL;
    const char *rows = strstr(r + 4, " rows of "), *dims = strstr(r + 4, " [");
    if (!rows || (dims && dims < rows))
        rows = dims;
    return rows ? kvs_fmt_dup(&b->oom, "copy/cast%s", rows) : NULL;
}

/* The role a group pairs by; groups without one pair by op and dtypes. */
static char *role_of(struct builder *b, const struct kvs_group *g)
{
    if (g->role && *g->role && b->loose) {
        char *r = role_without_dtypes(b, g->role);
        if (r)
            return r;
    }
    if (g->role && *g->role)
        return dup_or_null(b, g->role);
    char types[256];
    return kvs_fmt_dup(&b->oom, "%s|%s", g->op ? g->op : "?",
                       kvs_short_dtypes(types, sizeof types, g));
}

/* the group's dims and dtypes, copied out of the analysis */
static void copy_tensors(struct builder *b, struct kvs_cmp_side *s, const struct kvs_group *g)
{
    int n = g->tensor_dims && g->tensor_dtypes && g->ntensors > 0 ? g->ntensors : 0;
    if (n == 0)
        return;
    s->tensor_dims = malloc((size_t)n * sizeof *s->tensor_dims);
    s->tensor_dtypes = calloc((size_t)n, sizeof *s->tensor_dtypes);
    if (!s->tensor_dims || !s->tensor_dtypes) {
        b->oom = true;
        return;
    }
    s->ntensors = n;
    memcpy(s->tensor_dims, g->tensor_dims, (size_t)n * sizeof *s->tensor_dims);
    for (int i = 0; i < n; i++)
        s->tensor_dtypes[i] = dup_or_null(b, g->tensor_dtypes[i] ? g->tensor_dtypes[i] : "");
}

#define KVS_VERDICT_OP_WIDTH 72 /* columns of a kernel's name in the verdict, as in findings */
/* wall time saved over GPU time saved: within [LOW, HIGH] the two fell
 * together (the saved work was on the critical path); below, part of it
 * overlapped other work; above, CPU-side work went too */
#define WALL_SHARE_LOW 0.8
#define WALL_SHARE_HIGH 1.25

static void add_to_side(struct builder *b, struct kvs_cmp_side *s, const struct kvs_group *g,
                        double peak)
{
    double bytes = (double)g->bytes_per_call * kvs_finite_or0(g->calls_per_step);
    if (!s->present) {
        char buf[256];
        s->present = true;
        s->ngroups = 1;
        s->op = dup_or_null(b, g->op);
        copy_tensors(b, s, g);
        s->dims_short = dup_or_null(b, kvs_short_dims(buf, sizeof buf, g));
        s->dtypes_short = dup_or_null(b, kvs_short_dtypes(buf, sizeof buf, g));
        s->match = g->has_match ? dup_or_null(b, g->match.label) : NULL;
        s->calls_per_step = g->calls_per_step;
        s->gpu_ms_per_step = g->gpu_ms_per_step;
        s->bytes_per_step = bytes;
        s->bytes_known = g->bytes_per_call > 0;
        s->achieved_gbps = s->bytes_known ? g->achieved_gbps : NAN;
        s->efficiency = peak > 0 && !g->host_link && s->bytes_known ? g->efficiency : NAN;
        return;
    }
    /* several groups of one trace share the role: sum them, and the rate of
     * the sum is its bytes over its time */
    s->ngroups++;
    s->calls_per_step += g->calls_per_step;
    s->gpu_ms_per_step += g->gpu_ms_per_step;
    s->bytes_per_step += bytes;
    s->bytes_known = s->bytes_known && g->bytes_per_call > 0;
    s->achieved_gbps = s->gpu_ms_per_step > 0 && s->bytes_known
                           ? s->bytes_per_step / (s->gpu_ms_per_step * 1e6)
                           : NAN;
    s->efficiency = peak > 0 && isfinite(s->efficiency) && !g->host_link && s->bytes_known
                        ? s->achieved_gbps / peak
                        : NAN;
}

static struct kvs_cmp_group *find_or_add_role(struct builder *b, char *role)
{
    struct kvs_comparison *c = b->c;
    if (!role)
        return NULL;
    for (size_t i = 0; i < c->ngroup; i++) {
        if (!strcmp(c->groups[i].role, role)) {
            free(role);
            return &c->groups[i];
        }
    }
    struct kvs_cmp_group *g = realloc(c->groups, (c->ngroup + 1) * sizeof *g);
    if (!g) {
        free(role);
        b->oom = true;
        return NULL;
    }
    c->groups = g;
    g = &c->groups[c->ngroup++];
    memset(g, 0, sizeof *g);
    g->role = role;
    return g;
}

static double group_weight(const struct kvs_cmp_group *g)
{
    return fmax(g->before.present ? kvs_finite_or0(g->before.gpu_ms_per_step) : 0,
                g->after.present ? kvs_finite_or0(g->after.gpu_ms_per_step) : 0);
}

static int cmp_groups(const void *x, const void *y)
{
    const struct kvs_cmp_group *a = x, *b = y;
    double wa = group_weight(a), wb = group_weight(b);
    if (wa != wb)
        return wa > wb ? -1 : 1;
    return strcmp(a->role, b->role);
}

static struct kvs_cmp_change change_of(double before, double after)
{
    struct kvs_cmp_change ch = {kvs_finite_or0(after) - kvs_finite_or0(before),
                                kvs_cmp_rel(before, after)};
    return ch;
}

static void group_changes(struct kvs_cmp_group *g)
{
    const struct kvs_cmp_side *x = &g->before, *y = &g->after;
    g->gpu_ms_per_step = change_of(x->present ? x->gpu_ms_per_step : 0,
                                   y->present ? y->gpu_ms_per_step : 0);
    g->bytes_per_step = change_of(x->present ? x->bytes_per_step : 0,
                                  y->present ? y->bytes_per_step : 0);
    if ((x->present && !x->bytes_known) || (y->present && !y->bytes_known))
        g->bytes_per_step.diff = g->bytes_per_step.rel = NAN; /* no change of an unknown */
    g->efficiency_diff = x->present && y->present ? y->efficiency - x->efficiency : NAN;
}

static void step_changes(struct kvs_comparison *c)
{
    const struct kvs_cmp_steps *x = &c->before, *y = &c->after;
    c->change.mean_ms = change_of(x->mean_ms, y->mean_ms);
    c->change.gpu_ms_per_step = change_of(x->gpu_ms_per_step, y->gpu_ms_per_step);
    c->change.gpu_busy_fraction = change_of(x->gpu_busy_fraction, y->gpu_busy_fraction);
    c->change.tokens_per_s = change_of(x->tokens_per_s, y->tokens_per_s);
}

static void pair_groups(struct builder *b, const struct kvs_analysis *before,
                        const struct kvs_analysis *after)
{
    for (int side = 0; side < 2; side++) {
        const struct kvs_analysis *a = side ? after : before;
        for (size_t i = 0; a->groups && i < a->ngroup && !b->oom; i++) {
            struct kvs_cmp_group *g = find_or_add_role(b, role_of(b, &a->groups[i]));
            if (g)
                add_to_side(b, side ? &g->after : &g->before, &a->groups[i], a->trace.peak_gbps);
        }
    }
    for (size_t i = 0; i < b->c->ngroup; i++)
        group_changes(&b->c->groups[i]);
    if (b->c->ngroup > 1)
        qsort(b->c->groups, b->c->ngroup, sizeof *b->c->groups, cmp_groups);
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

/* findings that need a copy's bytes, which a trace without dtypes lacks */
static bool needs_bytes(const char *id)
{
    return !strcmp(id, "kv_full_buffer_cast") || !strcmp(id, "low_bandwidth_efficiency");
}

/* Ids of `from` absent from `other` (first occurrence of each id). A finding
 * that needs bytes, absent from a trace without dtypes, is not evidence of
 * anything: the verdict says so and it is neither resolved nor new. */
static void diff_findings(struct builder *b, const struct kvs_analysis *from,
                          const struct kvs_analysis *other, char ***ids, char ***msgs, size_t *n,
                          char ***kept, size_t *nkept)
{
    for (size_t i = 0; from->findings && i < from->nfinding; i++) {
        const struct kvs_finding *f = &from->findings[i];
        if (!f->id || find_id(from, f->id) != f)
            continue; /* unnamed, or a repeat of an id already seen */
        if (!find_id(other, f->id) && needs_bytes(f->id) && any_untyped(other)) {
            verdict(b, kvs_fmt_dup(&b->oom,
                                   "Not judged: %s (%s: %s): %s records op dims but no dtypes (an "
                                   "Nsight Systems emit_nvtx profile), so its copies have no bytes and "
                                   "this finding cannot be found in it; compare two traces that both "
                                   "carry dtypes",
                                   f->id, kept ? "before" : "after", f->message ? f->message : "",
                                   kept ? "AFTER" : "BEFORE"));
            continue;
        }
        if (!find_id(other, f->id)) {
            size_t before = *n;
            kvs_strv_push(&b->oom, ids, n, dup_or_null(b, f->id));
            if (*n > before) { /* keep the two arrays the same length */
                size_t m = before;
                kvs_strv_push(&b->oom, msgs, &m, dup_or_null(b, f->message ? f->message : ""));
                if (m == before) {
                    free((*ids)[--*n]);
                }
            }
        } else if (kept) {
            kvs_strv_push(&b->oom, kept, nkept, dup_or_null(b, f->id));
        }
    }
}

// ----------------------------------------------------------------------------
// the verdict

/* "GPU time per step fell 33.2% (43.29 -> 28.90 ms)"; no percentage where
 * it means nothing: "did not change (1.000 -> 1.000 ms)", and from zero
 * (a CPU-only trace before) "rose (0.000 -> 0.002 ms)", never "did not
 * change 0.0%" for a time that moved */
static const char *change_phrase(char *buf, size_t n, const char *what, double x, double y)
{
    char a[KVS_FMT_BUF], b[KVS_FMT_BUF];
    kvs_fmt_ms(a, x);
    kvs_fmt_ms(b, y);
    double rel = kvs_cmp_rel(x, y);
    if (isfinite(rel) && fabs(rel) >= 0.0005)
        snprintf(buf, n, "%s %s %.1f%% (%s -> %s ms)", what, rel < 0 ? "fell" : "rose",
                 fabs(rel) * 100, a, b);
    else if (isfinite(rel) || !strcmp(a, b) || !isfinite(x) || !isfinite(y))
        snprintf(buf, n, "%s did not change (%s -> %s ms)", what, a, b);
    else
        snprintf(buf, n, "%s %s (%s -> %s ms)", what, y < x ? "fell" : "rose", a, b);
    return buf;
}

static void verdict_findings(struct builder *b)
{
    struct kvs_comparison *c = b->c;
    for (size_t i = 0; i < c->nresolved; i++)
        verdict(b, kvs_fmt_dup(&b->oom, "Resolved: %s (before: %s)", c->resolved[i],
                               c->resolved_msg[i]));
    for (size_t i = 0; i < c->nnew; i++)
        verdict(b, kvs_fmt_dup(&b->oom, "New: %s (after: %s)", c->new_ids[i], c->new_msg[i]));
    if (c->nresolved == 0 && c->nnew == 0)
        verdict(b, kvs_fmt_dup(&b->oom, c->nkept ? "No finding was resolved and none is new."
                                                 : "Neither trace has a finding."));
}

static void verdict_largest_group(struct builder *b)
{
    struct kvs_comparison *c = b->c;
    const struct kvs_cmp_group *best = NULL;
    double best_d = 0;
    for (size_t i = 0; i < c->ngroup; i++) {
        const struct kvs_cmp_group *g = &c->groups[i];
        double d = fabs(kvs_finite_or0(g->after.gpu_ms_per_step) -
                        kvs_finite_or0(g->before.gpu_ms_per_step));
        if (d > best_d) {
            best_d = d;
            best = g;
        }
    }
    if (!best || best_d < 0.001)
        return;
    const struct kvs_cmp_side *x = &best->before, *y = &best->after;
    const struct kvs_cmp_side *any = x->present ? x : y;
    char m1[KVS_FMT_BUF], m2[KVS_FMT_BUF], b1[KVS_FMT_BUF], b2[KVS_FMT_BUF], p[KVS_FMT_BUF];
    char o1[KVS_VERDICT_OP_WIDTH + 1], o2[KVS_VERDICT_OP_WIDTH + 1];
    /* a group of GPU work no op launched is named by its kernel: shortened
     * as every table and finding does; unknown bytes say so, never "0 B" */
    const char *bx = x->bytes_known ? kvs_fmt_bytes(b1, x->bytes_per_step) : "unknown bytes";
    const char *by = y->bytes_known ? kvs_fmt_bytes(b2, y->bytes_per_step) : "unknown bytes";
    const char *ba = any->bytes_known ? kvs_fmt_bytes(b1, any->bytes_per_step) : "unknown bytes";
    if (x->present && y->present && x->op && y->op && strcmp(x->op, y->op)) {
        /* paired by role across op names (the engine's cast_fp8_to_bf16 and
         * gather_cast_fp8_to_bf16): name both, or the after side reads as
         * the before op run on fewer rows */
        verdict(b,
                kvs_fmt_dup(
                    &b->oom,
                    "Largest change in copy/cast work: %s %s -> %s %s (%s): %s -> %s ms/step of GPU "
                    "time (%s), %s -> %s moved per step.",
                    kvs_short_op(o1, sizeof o1, x->op, KVS_VERDICT_OP_WIDTH), x->dims_short,
                    kvs_short_op(o2, sizeof o2, y->op, KVS_VERDICT_OP_WIDTH), y->dims_short,
                    any->dtypes_short, kvs_fmt_ms(m1, x->gpu_ms_per_step),
                    kvs_fmt_ms(m2, y->gpu_ms_per_step),
                    kvs_fmt_signed_pct(p, kvs_cmp_rel(x->gpu_ms_per_step, y->gpu_ms_per_step)), bx, by));
    } else if (x->present && y->present) {
        verdict(b,
                kvs_fmt_dup(
                    &b->oom,
                    "Largest change in copy/cast work: %s (%s) %s -> %s: %s -> %s ms/step of GPU "
                    "time (%s), %s -> %s moved per step.",
                    any->op ? kvs_short_op(o1, sizeof o1, any->op, KVS_VERDICT_OP_WIDTH) : "?",
                    any->dtypes_short, x->dims_short, y->dims_short,
                    kvs_fmt_ms(m1, x->gpu_ms_per_step), kvs_fmt_ms(m2, y->gpu_ms_per_step),
                    kvs_fmt_signed_pct(p, kvs_cmp_rel(x->gpu_ms_per_step, y->gpu_ms_per_step)), bx, by));
    } else {
        verdict(b,
                kvs_fmt_dup(
                    &b->oom, "Copy/cast work %s: %s (%s) %s, %s ms/step of GPU time, %s per step.",
                    x->present ? "gone after the fix" : "new after the fix",
                    any->op ? kvs_short_op(o1, sizeof o1, any->op, KVS_VERDICT_OP_WIDTH) : "?",
                    any->dtypes_short, any->dims_short, kvs_fmt_ms(m1, any->gpu_ms_per_step), ba));
    }
}

/* Why wall time moved as it did against the GPU time saved. */
static void verdict_saving(struct builder *b, double saved_gpu, double saved_wall)
{
    const struct kvs_cmp_steps *x = &b->c->before, *y = &b->c->after;
    char p1[KVS_FMT_BUF], s1[KVS_FMT_BUF], s2[KVS_FMT_BUF], f1[KVS_FMT_BUF], f2[KVS_FMT_BUF];
    bool launch_bound = y->gpu_busy_fraction < KVS_LAUNCH_BOUND_BUSY;
    kvs_fmt_ms(s1, saved_wall);
    kvs_fmt_ms(s2, saved_gpu);
    kvs_fmt_pct(f1, x->gpu_busy_fraction);
    kvs_fmt_pct(f2, y->gpu_busy_fraction);
    char *why = NULL;
    if (saved_gpu > 0.001) {
        double share = saved_wall / saved_gpu;
        kvs_fmt_pct(p1, share);
        if (saved_wall <= 0 && launch_bound)
            why = kvs_fmt_dup(
                &b->oom,
                "Wall time did not fall although the GPU saved %s ms per step: the step "
                "is launch-bound (the GPU is busy only %s of the step after the fix, %s "
                "before), so the CPU issuing kernels, not the GPU, sets the step's "
                "length.",
                s2, f2, f1);
        else if (saved_wall <= 0)
            why = kvs_fmt_dup(
                &b->oom,
                "Wall time did not fall although the GPU saved %s ms per step: the saved "
                "GPU work was not on the step's critical path (GPU busy %s of the step "
                "before, %s after).",
                s2, f1, f2);
        else if (share < WALL_SHARE_LOW && launch_bound)
            why =
                kvs_fmt_dup(&b->oom,
                            "Wall time fell less than GPU time because the step is launch-bound: "
                            "the GPU is busy only %s of the step after the fix (%s before), so the "
                            "CPU issuing kernels, not the GPU, sets the step's length; %s of the "
                            "%s ms of GPU time saved per step came off the wall time (%s).",
                            f2, f1, s1, s2, p1);
        else if (share < WALL_SHARE_LOW)
            why =
                kvs_fmt_dup(&b->oom,
                            "Wall time fell less than GPU time: %s of the %s ms of GPU time saved "
                            "per step came off the wall time (%s); the rest overlapped with other "
                            "work (GPU busy %s of the step before, %s after).",
                            s1, s2, p1, f1, f2);
        else if (share <= WALL_SHARE_HIGH)
            why = kvs_fmt_dup(&b->oom,
                              "Wall time fell by about as much as GPU time (%s of %s ms per step): "
                              "the saved GPU work was on the step's critical path.",
                              s1, s2);
        else if (launch_bound)
            why =
                kvs_fmt_dup(&b->oom,
                            "Wall time fell more than GPU time (%s vs %s ms per step): the step is "
                            "launch-bound, so its length follows the CPU side, which the change "
                            "also shortened (fewer or cheaper ops and launches).",
                            s1, s2);
        else
            why =
                kvs_fmt_dup(&b->oom,
                            "Wall time fell more than GPU time (%s vs %s ms per step): the change "
                            "also removed CPU-side work such as kernel launches or host "
                            "synchronisation.",
                            s1, s2);
        verdict(b, why);
        if (launch_bound && saved_wall > 0 && share >= WALL_SHARE_LOW && share <= WALL_SHARE_HIGH)
            verdict(b, kvs_fmt_dup(
                           &b->oom,
                           "The step is still launch-bound (GPU busy %s): CUDA graphs or fewer, "
                           "larger kernels would shorten it further.",
                           f2));
    } else if (saved_gpu < -0.001) {
        verdict(b, kvs_fmt_dup(
                       &b->oom,
                       "GPU time per step rose by %s ms: the after trace does more GPU work per "
                       "step (wall time changed by %s ms).",
                       kvs_fmt_ms(s2, -saved_gpu), kvs_fmt_ms(s1, -saved_wall)));
    }
}

/* What the figures cannot say: a change within the steps' spread, the
 * throughput, traces without steps or from different devices. */
static void verdict_notes(struct builder *b, double saved_wall)
{
    struct kvs_comparison *c = b->c;
    const struct kvs_cmp_steps *x = &c->before, *y = &c->after;
    char g1[KVS_FMT_BUF], g2[KVS_FMT_BUF], p2[KVS_FMT_BUF], s1[KVS_FMT_BUF];
    /* a wall-time change smaller than the steps' own spread is not a measurement */
    double spread = fmax(kvs_finite_or0(x->wall_max_ms - x->wall_min_ms),
                         kvs_finite_or0(y->wall_max_ms - y->wall_min_ms));
    if (x->count > 0 && y->count > 0 && saved_wall != 0 && fabs(saved_wall) < 0.5 * spread) {
        char a1[KVS_FMT_BUF], a2[KVS_FMT_BUF], c1[KVS_FMT_BUF], c2[KVS_FMT_BUF];
        verdict(b,
                kvs_fmt_dup(&b->oom,
                            "The change in mean wall time (%s ms) is within the step-to-step "
                            "variation (before %s to %s ms, after %s to %s ms): profile more steps "
                            "to measure it.",
                            kvs_fmt_ms(s1, -saved_wall), kvs_fmt_ms(a1, x->wall_min_ms),
                            kvs_fmt_ms(a2, x->wall_max_ms), kvs_fmt_ms(c1, y->wall_min_ms),
                            kvs_fmt_ms(c2, y->wall_max_ms)));
    }

    if (x->tokens_per_s > 0 && y->tokens_per_s > 0) {
        char batch[48] = "";
        if (c->batch > 0)
            snprintf(batch, sizeof batch, " at batch %d", c->batch);
        verdict(b,
                kvs_fmt_dup(&b->oom, "Throughput: %s -> %s tokens/s (%s)%s.",
                            kvs_fmt_count(g1, x->tokens_per_s), kvs_fmt_count(g2, y->tokens_per_s),
                            kvs_fmt_signed_pct(p2, kvs_cmp_rel(x->tokens_per_s, y->tokens_per_s)),
                            batch));
    }
    if (x->count == 0 || y->count == 0)
        verdict(b, kvs_fmt_dup(
                       &b->oom,
                       "Caution: the %s trace has no step markers, so its figures are whole-trace "
                       "totals, not per step.",
                       x->count == 0 ? "before" : "after"));
    if (x->device && y->device && strcmp(x->device, y->device))
        verdict(b,
                kvs_fmt_dup(&b->oom, "Caution: the traces come from different devices (%s vs %s).",
                            x->device, y->device));
}

static void verdict_time(struct builder *b)
{
    struct kvs_comparison *c = b->c;
    const struct kvs_cmp_steps *x = &c->before, *y = &c->after;
    const char *per = x->count > 0 && y->count > 0 ? "per step" : "(whole trace)";
    char gw[48], ww[48], gs[160], ws[160];
    snprintf(gw, sizeof gw, "GPU time %s", per);
    snprintf(ww, sizeof ww, "wall time %s", per);
    verdict(b, kvs_fmt_dup(&b->oom, "%s and %s.",
                           change_phrase(gs, sizeof gs, gw, x->gpu_ms_per_step, y->gpu_ms_per_step),
                           change_phrase(ws, sizeof ws, ww, x->mean_ms, y->mean_ms)));

    double saved_gpu = kvs_finite_or0(x->gpu_ms_per_step) - kvs_finite_or0(y->gpu_ms_per_step);
    double saved_wall = kvs_finite_or0(x->mean_ms) - kvs_finite_or0(y->mean_ms);
    verdict_saving(b, saved_gpu, saved_wall);
    verdict_notes(b, saved_wall);
}

// ----------------------------------------------------------------------------
// entry points

enum kvs_status kvs_compare(const struct kvs_analysis *before, const struct kvs_analysis *after,
                            int batch, struct kvs_comparison **out)
{
    if (!out)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!before || !after || batch < 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    struct kvs_comparison *c = calloc(1, sizeof *c);
    if (!c)
        return KVS_STATUS_NO_MEMORY;
    struct builder b = {c, false, any_untyped(before) || any_untyped(after)};
    c->batch = batch;
    fill_steps(&b, &c->before, before, batch);
    fill_steps(&b, &c->after, after, batch);
    step_changes(c);
    pair_groups(&b, before, after);
    diff_findings(&b, before, after, &c->resolved, &c->resolved_msg, &c->nresolved, &c->kept,
                  &c->nkept);
    diff_findings(&b, after, before, &c->new_ids, &c->new_msg, &c->nnew, NULL, NULL);
    verdict_findings(&b);
    verdict_largest_group(&b);
    verdict_time(&b);
    if (b.oom) {
        kvs_comparison_free(c);
        return KVS_STATUS_NO_MEMORY;
    }
    *out = c;
    return KVS_STATUS_OK;
}

static void free_side(struct kvs_cmp_side *s)
{
    free(s->op);
    for (int i = 0; s->tensor_dtypes && i < s->ntensors; i++)
        free(s->tensor_dtypes[i]);
    free(s->tensor_dims);
    free(s->tensor_dtypes);
    free(s->dims_short);
    free(s->dtypes_short);
    free(s->match);
}

static void free_strings(char **a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(a[i]);
    free(a);
}

void kvs_comparison_free(struct kvs_comparison *c)
{
    if (!c)
        return;
    free(c->before.path);
    free(c->before.device);
    free(c->after.path);
    free(c->after.device);
    for (size_t i = 0; i < c->ngroup; i++) {
        free(c->groups[i].role);
        free_side(&c->groups[i].before);
        free_side(&c->groups[i].after);
    }
    free(c->groups);
    free_strings(c->resolved, c->nresolved);
    free_strings(c->resolved_msg, c->nresolved);
    free_strings(c->new_ids, c->nnew);
    free_strings(c->new_msg, c->nnew);
    free_strings(c->kept, c->nkept);
    free_strings(c->verdict, c->nverdict);
    kvs_gate_free(c->gate);
    free(c);
}
