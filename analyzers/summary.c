/* analyzers/summary.c — kvs_summarize(): the closing summary of a baseline
 * against its fixes ("IN SHORT"): the bottleneck, what each fix saved, each
 * trace's whole step against the roofline.
 *
 *   kvscope compare BEFORE AFTER [AFTER...]      (the summary closes the text)
 *
 * The sentences keep the figures' precision the main job's summary has
 * always printed (%.4g ms, bytes to 2 decimals), so ./run.sh's numbers do
 * not move. Tested in tests/test_demo.py (the
 * bundled engine traces, against their raw JSON and logs) and
 * tests/test_compare.c (synthetic analyses).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/compare.h"
#include "kvscope/kernel_name.h" // defines: kvs_short_op
#include "kvscope/units.h"

static const char *dtype_short(const char *t)
{
    return t && !strncmp(t, "c10::", 5) ? t + 5 : t ? t : "?";
}

/* the engine's KV path, else the trace's file name without .json[.gz] */
static char *path_name(bool *oom, const struct kvs_analysis *a)
{
    if (a->engine.kv_path)
        return kvs_fmt_dup(oom, "%s", a->engine.kv_path);
    const char *p = a->trace.path ? a->trace.path : "?";
    const char *slash = strrchr(p, '/');
    p = slash ? slash + 1 : p;
    size_t n = strlen(p);
    static const char *const ext[] = {".json.gz", ".json", ".gz", ".sqlite"};
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t e = strlen(ext[i]);
        if (n > e && !strcmp(p + n - e, ext[i])) {
            n -= e;
            break;
        }
    }
    return kvs_fmt_dup(oom, "%.*s", (int)n, p);
}

/* what the engine's fixes do, by KV path */
static const char *path_what(const char *name)
{
    if (!strcmp(name, "fp8-direct"))
        return "attention reads the FP8 pool";
    if (!strcmp(name, "active-cast"))
        return "gather the active rows, then cast them";
    return NULL;
}

static char *bottleneck(bool *oom, const struct kvs_analysis *a)
{
    const struct kvs_group *g = NULL;
    for (size_t i = 0; a->groups && i < a->ngroup; i++) {
        const struct kvs_group *x = &a->groups[i];
        if (x->has_match && x->match.capacity_tokens && (!g || x->gpu_ms > g->gpu_ms))
            g = x;
    }
    if (!g)
        return kvs_fmt_dup(oom, "none found: the unfixed trace has no full-buffer KV cast");
    char dims[256] = "[]", b1[KVS_FMT_BUF], b2[KVS_FMT_BUF], eff[160], op[96];
    if (g->ntensors > 0 && g->tensor_dims) {
        size_t n = 0;
        n += (size_t)snprintf(dims + n, sizeof dims - n, "[");
        for (int k = 0; k < g->tensor_dims[0].rank && k < 8 && n < sizeof dims - 24; k++)
            n += (size_t)snprintf(dims + n, sizeof dims - n, "%s%lld", k ? "," : "",
                                  (long long)g->tensor_dims[0].d[k]);
        snprintf(dims + n, sizeof dims - n, "]");
    }
    const char *to = g->ntensors > 0 && g->tensor_dtypes ? g->tensor_dtypes[0] : NULL;
    const char *from = g->ntensors > 1 && g->tensor_dtypes ? g->tensor_dtypes[1] : NULL;
    if (a->trace.peak_gbps > 0)
        snprintf(eff, sizeof eff, "%.1f%% of the %s's %.0f GB/s HBM peak", 100 * g->efficiency,
                 a->trace.device ? a->trace.device : "this GPU", a->trace.peak_gbps);
    else
        snprintf(eff, sizeof eff, "HBM peak unknown");
    double calls = kvs_finite_or0(g->calls_per_step);
    return kvs_fmt_dup(oom,
                       "%s %s %s<-%s casts the WHOLE preallocated KV pool (%s = %s) %.0f times per "
                       "step%s: %s per call (read + written), %s per step, %.1f%% of the GPU time, "
                       "at %.0f GB/s = %s.",
                       g->op ? kvs_short_op(op, sizeof op, g->op, 72) : "?", dims, dtype_short(to),
                       dtype_short(from), dims,
                       g->match.label ? g->match.label : "?", calls,
                       g->match.per_layer ? " (once per layer)" : "",
                       kvs_fmt_bytes2(b1, (double)g->bytes_per_call),
                       kvs_fmt_bytes2(b2, (double)g->bytes_per_call * calls),
                       100 * g->gpu_fraction, g->achieved_gbps, eff);
}

static char *fix_sentence(bool *oom, const char *name, const struct kvs_comparison *c)
{
    const struct kvs_cmp_steps *b = &c->before, *a = &c->after;
    double saved = b->gpu_ms_per_step - a->gpu_ms_per_step;
    double moved = 0;
    for (size_t i = 0; i < c->ngroup; i++)
        moved -= c->groups[i].bytes_per_step.diff;
    char tokens[96] = "", mv[KVS_FMT_BUF], resolved[512] = "";
    if (b->tokens_per_s > 0 && a->tokens_per_s > 0)
        snprintf(tokens, sizeof tokens, "; %.1f -> %.1f tokens/s (x%.2f)", b->tokens_per_s,
                 a->tokens_per_s, a->tokens_per_s / b->tokens_per_s);
    size_t n = 0;
    for (size_t i = 0; i < c->nresolved && n < sizeof resolved - 80; i++)
        n += (size_t)snprintf(resolved + n, sizeof resolved - n, "%s%s", i ? ", " : "", c->resolved[i]);
    const char *what = path_what(name);
    char head[160];
    if (what)
        snprintf(head, sizeof head, "%s (%s)", name, what);
    else
        snprintf(head, sizeof head, "%s", name);
    return kvs_fmt_dup(oom,
                       "%s: GPU time per step %.4g -> %.4g ms (%s%.4g ms, %s%.1f%%); wall time per "
                       "step %.4g -> %.4g ms (%s%.1f%%)%s; %s %s copy/cast traffic per step. "
                       "Resolved: %s.",
                       head, b->gpu_ms_per_step, a->gpu_ms_per_step, saved >= 0 ? "-" : "+",
                       fabs(saved), saved >= 0 ? "-" : "+",
                       b->gpu_ms_per_step ? 100 * fabs(saved) / b->gpu_ms_per_step : 0.0,
                       b->mean_ms, a->mean_ms, b->mean_ms >= a->mean_ms ? "-" : "+",
                       b->mean_ms ? 100 * fabs(b->mean_ms - a->mean_ms) / b->mean_ms : 0.0, tokens,
                       kvs_fmt_bytes2(mv, fabs(moved)), moved >= 0 ? "less" : "more",
                       n ? resolved : "nothing");
}

static void add_path(bool *oom, struct kvs_summary *s, const struct kvs_analysis *a, double copy)
{
    const struct kvs_step_roofline *r = &a->roofline;
    if (!r->known)
        return;
    struct kvs_summary_path *p = &s->paths[s->npath];
    p->name = path_name(oom, a);
    if (!p->name)
        return;
    s->npath++;
    p->step_ms = r->step_ms;
    p->bytes_per_step = r->bytes_per_step;
    p->achieved_gbps = r->achieved_gbps;
    p->peak_fraction = r->peak_fraction;
    p->copy_fraction = copy > 0 ? r->achieved_gbps / copy : NAN;
}

enum kvs_status kvs_summarize(const struct kvs_analysis *before, const struct kvs_analysis *const *after,
                              const struct kvs_comparison *const *cmp, size_t n,
                              struct kvs_summary **out)
{
    if (!out)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!before || !after || !cmp || n == 0 || n > 1024)
        return KVS_STATUS_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (!after[i] || !cmp[i])
            return KVS_STATUS_INVALID_ARGUMENT;
    struct kvs_summary *s = calloc(1, sizeof *s);
    if (!s)
        return KVS_STATUS_NO_MEMORY;
    bool oom = false;
    s->bottleneck = bottleneck(&oom, before);
    for (size_t i = 0; i < n; i++) {
        char *name = path_name(&oom, after[i]);
        if (name)
            kvs_strv_push(&oom, &s->fixes, &s->nfix, fix_sentence(&oom, name, cmp[i]));
        free(name);
    }
    s->paths = calloc(n + 1, sizeof *s->paths);
    oom = oom || !s->paths;
    /* every row against one copy rate: the first row's (the baseline's, as
     * the engine measured it before its run) */
    const struct kvs_analysis *first = before->roofline.known ? before : NULL;
    for (size_t i = 0; !first && i < n; i++)
        first = after[i]->roofline.known ? after[i] : NULL;
    double copy = first ? first->roofline.copy_gbps : 0;
    if (s->paths) {
        add_path(&oom, s, before, copy);
        for (size_t i = 0; i < n; i++)
            add_path(&oom, s, after[i], copy);
    }
    char peak[48] = "unknown for this device", rate[64] = "unknown";
    if (before->trace.peak_gbps > 0)
        snprintf(peak, sizeof peak, "%.0f GB/s", before->trace.peak_gbps);
    if (copy > 0)
        snprintf(rate, sizeof rate, "%.0f GB/s", copy);
    if (s->npath)
        s->roofline = kvs_fmt_dup(&oom,
                                  "bytes moved per step (engine model: weights read + KV traffic) "
                                  "over the step time the trace measured; 100%% would be a step at "
                                  "the HBM peak (%s) or at the device-to-device copy rate measured "
                                  "by the engine (%s).",
                                  peak, rate);
    else
        s->roofline = kvs_fmt_dup(&oom, "(no kvscope.engine facts in the traces: bytes per step "
                                        "unknown)");
    if (oom || !s->bottleneck || !s->roofline || s->nfix != n) {
        kvs_summary_free(s);
        return KVS_STATUS_NO_MEMORY;
    }
    *out = s;
    return KVS_STATUS_OK;
}

void kvs_summary_free(struct kvs_summary *s)
{
    if (!s)
        return;
    free(s->bottleneck);
    for (size_t i = 0; i < s->nfix; i++)
        free(s->fixes[i]);
    free(s->fixes);
    free(s->roofline);
    for (size_t i = 0; s->paths && i < s->npath; i++)
        free(s->paths[i].name);
    free(s->paths);
    free(s);
}
