/* reports/report_tables.c — the rows of the report's tables (copy/cast
 * groups, top kernels, steps), built from the analysis once and printed by
 * the text, markdown and HTML renderers alike. Formatting only: every number
 * shown is a field of the analysis.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "table.h"

static void set_note(struct kvs_table *t, size_t shown, size_t total, const char *what)
{
    if (total <= shown)
        return;
    snprintf(t->note_buf, sizeof t->note_buf, "... %zu more %s not shown (all are in --format json)",
             total - shown, what);
    t->note = t->note_buf;
}

bool kvs_table_groups(struct kvs_table *t, const struct kvs_analysis *a, size_t max_rows)
{
    static const char *const hdr[] = {"op", "dims", "dtypes", "calls/step", "ms/step", "% GPU",
                                      "bytes/call", "GB/s", "% peak", "matched"};
    static const enum kvs_col kind[] = {KVS_COL_CODE, KVS_COL_CODE, KVS_COL_TEXT, KVS_COL_NUM,
                                        KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM,
                                        KVS_COL_NUM, KVS_COL_TEXT};
    kvs_table_init(t, 10, hdr, kind);
    bool over_peak = false;
    size_t n = a->groups ? a->ngroup : 0;
    for (size_t i = 0; i < n && i < max_rows; i++) {
        const struct kvs_group *g = &a->groups[i];
        char op[40], dims[160], dtypes[160], cut[160], cps[KVS_FMT_BUF], ms[KVS_FMT_BUF], frac[KVS_FMT_BUF],
            bpc[KVS_FMT_BUF], gbps[KVS_FMT_BUF], eff[KVS_FMT_BUF], match[320];
        kvs_short_op(op, sizeof op, g->op, 28);
        kvs_truncate(dims, sizeof dims, kvs_short_dims(cut, sizeof cut, g), KVS_DIMS_WIDTH);
        kvs_truncate(dtypes, sizeof dtypes, kvs_short_dtypes(cut, sizeof cut, g), KVS_DTYPES_WIDTH);
        kvs_fmt_count(cps, g->calls_per_step);
        kvs_fmt_ms(ms, g->gpu_ms_per_step);
        kvs_fmt_pct(frac, g->gpu_fraction);
        kvs_fmt_bytes(bpc, (double)g->bytes_per_call);
        if (g->bytes_bound) { /* sized from a launch: at least / at most */
            char b[KVS_FMT_BUF];
            memcpy(b, bpc, sizeof b);
            snprintf(bpc, sizeof bpc, "%s%.*s", g->bytes_bound < 0 ? ">=" : "<=", (int)sizeof b - 3, b);
        }
        kvs_fmt_gbps(gbps, g->achieved_gbps);
        char *unit = strstr(gbps, " GB/s"); /* the column header carries the unit */
        if (unit)
            *unit = 0;
        if (g->host_link) /* the HBM peak does not bound a host<->device copy */
            strcpy(eff, "host");
        else if (a->trace.peak_gbps > 0)
            kvs_fmt_pct(eff, g->efficiency);
        else
            strcpy(eff, "-");
        if (g->bytes_per_call <= 0) /* bytes unknown (no sizes recorded): no rate either */
            strcpy(bpc, "-"), strcpy(gbps, "-"), strcpy(eff, "-");
        if (g->has_match && g->match.label)
            snprintf(match, sizeof match, "%s%s", g->match.label,
                     g->match.inferred && !strstr(g->match.label, "inferred") ? " (inferred)" : "");
        else
            strcpy(match, "-");
        const char *row[] = {op, dims, dtypes, cps, ms, frac, bpc, gbps, eff, match};
        kvs_table_add(t, row);
        over_peak = over_peak || g->over_peak;
    }
    set_note(t, max_rows, n, "groups");
    /* not clamped (kvs_group.over_peak): a reader is told, rather than shown 100% */
    if (over_peak) {
        size_t len = t->note ? strlen(t->note_buf) : 0;
        snprintf(t->note_buf + len, sizeof t->note_buf - len,
                 "%s%% peak over 100%%: the bytes came from the L2 cache (a copy that fits in it), "
                 "or the device's peak is wrong (--device, --peak-gbps)",
                 len ? "; " : "");
        t->note = t->note_buf;
    }
    return !t->failed;
}

/* a count of FLOPs with its unit: "25.2 MFLOP", "51.6 GFLOP" */
static void fmt_flops(char *buf, double v)
{
    static const char *const unit[] = {"", "k", "M", "G", "T", "P"};
    int u = 0;
    while (v >= 1000 && u < 5)
        v /= 1000, u++;
    snprintf(buf, KVS_FMT_BUF, u ? "%.1f %sFLOP" : "%.0f FLOP", v, unit[u]);
}

/* a rate or ratio with 3 significant digits ("1.68", "610", "0.0301") */
static void fmt_sig(char *buf, double v)
{
    snprintf(buf, KVS_FMT_BUF, v >= 100 ? "%.0f" : "%.3g", v);
}

void kvs_roofs_line(char *buf, size_t size, const struct kvs_analysis *a)
{
    char bw[KVS_FMT_BUF] = "unknown", bf[KVS_FMT_BUF] = "unknown", f8[KVS_FMT_BUF] = "unknown";
    if (a->trace.peak_gbps > 0)
        snprintf(bw, sizeof bw, "%.0f GB/s", a->trace.peak_gbps);
    if (a->trace.peak_bf16_tflops > 0)
        snprintf(bf, sizeof bf, "%g TFLOP/s", a->trace.peak_bf16_tflops);
    if (a->trace.peak_fp8_tflops > 0)
        snprintf(f8, sizeof f8, "%g TFLOP/s", a->trace.peak_fp8_tflops);
    snprintf(buf, size, "roofs on %s: HBM %s, dense BF16 %s, FP8 %s; unknown: no formula for the op",
             a->trace.device ? a->trace.device : "an unknown device", bw, bf, f8);
}

bool kvs_table_ops(struct kvs_table *t, const struct kvs_analysis *a, size_t max_rows)
{
    static const char *const hdr[] = {"op", "family", "dims", "calls/step", "us/call", "bytes/call",
                                      "FLOPs/call", "GB/s", "TFLOP/s", "FLOP/B", "bound", "% roof"};
    static const enum kvs_col kind[] = {KVS_COL_CODE, KVS_COL_TEXT, KVS_COL_CODE, KVS_COL_NUM,
                                        KVS_COL_NUM,  KVS_COL_NUM,  KVS_COL_NUM,  KVS_COL_NUM,
                                        KVS_COL_NUM,  KVS_COL_NUM,  KVS_COL_TEXT, KVS_COL_NUM};
    kvs_table_init(t, 12, hdr, kind);
    size_t n = a->ops ? a->nop : 0;
    for (size_t i = 0; i < n && i < max_rows; i++) {
        const struct kvs_op_roofline *o = &a->ops[i];
        char op[40], dims[160], cut[160], cps[KVS_FMT_BUF], us[KVS_FMT_BUF], b[KVS_FMT_BUF],
            fl[KVS_FMT_BUF], gbps[KVS_FMT_BUF], tf[KVS_FMT_BUF], in[KVS_FMT_BUF], roof[KVS_FMT_BUF];
        struct kvs_group shape = {0}; /* the dims as the groups table shortens them */
        shape.ntensors = o->ntensors;
        shape.tensor_dims = o->tensor_dims;
        kvs_short_op(op, sizeof op, o->op, 28);
        kvs_truncate(dims, sizeof dims, kvs_short_dims(cut, sizeof cut, &shape), KVS_DIMS_WIDTH);
        kvs_fmt_count(cps, o->calls_per_step);
        snprintf(us, sizeof us, "%.1f", o->us_per_call);
        /* unknown: no formula (or shapes that do not fit it); "-": not defined for the family */
        const char *unk = o->family ? "-" : "unknown";
        if (o->bytes_per_call > 0)
            kvs_fmt_bytes(b, o->bytes_per_call);
        else
            snprintf(b, sizeof b, "unknown");
        if (o->flops_per_call >= 0)
            fmt_flops(fl, o->flops_per_call);
        else
            snprintf(fl, sizeof fl, "%s", o->family && (!strcmp(o->family, "matmul") ||
                                                        !strcmp(o->family, "attention"))
                                              ? "unknown" : unk);
        if (isfinite(o->achieved_gbps))
            fmt_sig(gbps, o->achieved_gbps);
        else
            snprintf(gbps, sizeof gbps, "-");
        if (isfinite(o->achieved_tflops))
            fmt_sig(tf, o->achieved_tflops);
        else
            snprintf(tf, sizeof tf, "-");
        if (isfinite(o->intensity))
            fmt_sig(in, o->intensity);
        else
            snprintf(in, sizeof in, "-");
        if (isfinite(o->roof_fraction))
            kvs_fmt_pct(roof, o->roof_fraction);
        else
            snprintf(roof, sizeof roof, "-");
        const char *row[] = {op, o->family ? o->family : "unknown", dims, cps, us, b, fl, gbps, tf, in,
                             o->bound ? o->bound : "-", roof};
        kvs_table_add(t, row);
    }
    set_note(t, max_rows, n, "op groups");
    return !t->failed;
}

bool kvs_table_kernels(struct kvs_table *t, const struct kvs_analysis *a, size_t max_rows,
                       size_t name_width)
{
    static const char *const hdr[] = {"kernel", "calls", "GPU ms", "% GPU", "category", "family"};
    static const enum kvs_col kind[] = {KVS_COL_CODE, KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM,
                                        KVS_COL_TEXT, KVS_COL_TEXT};
    kvs_table_init(t, 6, hdr, kind);
    size_t n = a->kernels ? a->nkernel : 0;
    for (size_t i = 0; i < n && i < max_rows; i++) {
        const struct kvs_kernel_stat *k = &a->kernels[i];
        char name[512], calls[KVS_FMT_BUF], ms[KVS_FMT_BUF], frac[KVS_FMT_BUF];
        kvs_short_kernel(name, sizeof name, k->name, name_width);
        kvs_fmt_count(calls, (double)k->calls);
        kvs_fmt_ms(ms, k->gpu_ms);
        kvs_fmt_pct(frac, k->gpu_fraction);
        const char *row[] = {name, calls, ms, frac, kvs_cat_label((int)k->category),
                             k->family ? k->family : "-"};
        kvs_table_add(t, row);
    }
    set_note(t, max_rows, n, "kernels");
    return !t->failed;
}

static void add(char *buf, size_t size, const char *fmt, ...) KVS_PRINTF(3, 4);

bool kvs_table_steps(struct kvs_table *t, const struct kvs_analysis *a, size_t max_rows)
{
    static const char *const hdr[] = {"step", "wall ms", "GPU ms", "busy", "idle ms", "copy/cast",
                                      "GEMM", "attention", "comm", "other"};
    static const enum kvs_col kind[] = {KVS_COL_TEXT, KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM,
                                        KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM,
                                        KVS_COL_NUM, KVS_COL_NUM};
    kvs_table_init(t, 10, hdr, kind);
    size_t n = a->step ? a->nstep : 0;
    for (size_t i = 0; i < n && i < max_rows; i++) {
        const struct kvs_step *s = &a->step[i];
        char name[96], wall[KVS_FMT_BUF], gpu[KVS_FMT_BUF], busy[KVS_FMT_BUF], idle[KVS_FMT_BUF];
        char cat[KVS_CAT_COUNT_][KVS_FMT_BUF];
        if (s->kind != KVS_STEP_UNKNOWN) /* a serving engine's long range name says these */
            snprintf(name, sizeof name, "#%lld %s", (long long)s->index, kvs_step_kind_name(s->kind));
        else if (s->name && *s->name)
            snprintf(name, sizeof name, "%s", s->name);
        else
            snprintf(name, sizeof name, "#%lld", (long long)s->index);
        if (s->batch > 0)
            add(name, sizeof name, " bs=%lld", (long long)s->batch);
        if (s->tokens > 0 && s->tokens != s->batch)
            add(name, sizeof name, " toks=%lld", (long long)s->tokens);
        if (s->outlier)
            add(name, sizeof name, " (%s)", s->outlier);
        kvs_fmt_ms(wall, s->wall_ms);
        kvs_fmt_ms(gpu, s->gpu_busy_ms);
        kvs_fmt_pct(busy, s->busy_fraction);
        kvs_fmt_ms(idle, s->idle_ms);
        for (int c = 0; c < KVS_CAT_COUNT_; c++)
            kvs_fmt_ms(cat[c], s->category_ms[c]);
        const char *row[] = {name, wall, gpu, busy, idle, cat[KVS_CAT_COPY_CAST], cat[KVS_CAT_GEMM],
                             cat[KVS_CAT_ATTENTION], cat[KVS_CAT_COMM], cat[KVS_CAT_OTHER]};
        kvs_table_add(t, row);
    }
    if (n > max_rows) {
        snprintf(t->note_buf, sizeof t->note_buf, "... %zu more steps not shown", n - max_rows);
        t->note = t->note_buf;
    }
    return !t->failed;
}

// ----------------------------------------------------------------------------
// header facts

/* snprintf that appends at buf+strlen(buf) and never overruns. */
static void add(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* the device and its peaks */
static void fact_device(const struct kvs_analysis *a, char *value, size_t size)
{
    char b1[KVS_FMT_BUF], b2[KVS_FMT_BUF];
    const struct kvs_trace_info *t = &a->trace;
    add(value, size, "%s", t->device ? t->device : "unknown device");
    if (t->peak_gbps > 0)
        add(value, size, ", HBM peak %s (%s)", kvs_fmt_gbps(b1, t->peak_gbps),
            t->peak_source ? t->peak_source : "device table");
    else
        add(value, size, ", HBM peak unknown (give --device or --peak-gbps)");
    if (t->copy_gbps > 0)
        add(value, size, ", measured copy rate %s", kvs_fmt_gbps(b2, t->copy_gbps));
}

/* what the trace holds and how it was recorded */
static void fact_trace(const struct kvs_analysis *a, char *value, size_t size)
{
    char b1[KVS_FMT_BUF], b2[KVS_FMT_BUF], b3[KVS_FMT_BUF], b4[KVS_FMT_BUF];
    const struct kvs_trace_info *t = &a->trace;
    bool nsys = t->producer && !strcmp(t->producer, "nsight-systems");
    add(value, size, nsys ? "%s Nsight Systems export, %s rows (%s ops, %s kernels"
                                        : "%s of JSON, %s events (%s ops, %s kernels",
        kvs_fmt_bytes(b1, (double)t->bytes), kvs_fmt_count(b2, (double)t->events),
        kvs_fmt_count(b3, (double)t->ops), kvs_fmt_count(b4, (double)t->kernels));
    if (t->memcpys || t->memsets)
        add(value, size, ", %s memcpy, %s memset",
            kvs_fmt_count(b1, (double)t->memcpys), kvs_fmt_count(b2, (double)t->memsets));
    add(value, size, ")");
    if (t->gpu_unlinked)
        add(value, size, "; %s GPU activities linked to no op",
            kvs_fmt_count(b1, (double)t->gpu_unlinked));
    if (t->graph_launched)
        add(value, size, "; %s from CUDA graphs",
            kvs_fmt_count(b1, (double)t->graph_launched));
    if (t->capture_aligned)
        add(value, size, " (%s given their ops from the graph's capture)",
            kvs_fmt_count(b1, (double)t->capture_aligned));
    if (t->with_stack)
        add(value, size,
            "; recorded with with_stack (Python stacks): the profiler inflates CPU time, so "
            "host gaps read longer than they run");
    if (t->dropped_records)
        add(value, size, "; %s records dropped at capture",
            kvs_fmt_count(b1, (double)t->dropped_records));
}

/* the steps: how many, their time, GPU busy, tokens/s */
static void fact_steps(const struct kvs_analysis *a, char *value, size_t size)
{
    char b1[KVS_FMT_BUF], b2[KVS_FMT_BUF], b3[KVS_FMT_BUF], b4[KVS_FMT_BUF];
    const struct kvs_trace_info *t = &a->trace;
    const struct kvs_steps *s = &a->steps;
    if (s->count > 0) {
        char per[96];
        if (s->gpu_lags) /* the step takes as long as its GPU work */
            snprintf(per, sizeof per, "%s ms/step (GPU work; the CPU range is %s ms)",
                     kvs_fmt_ms(b1, s->mean_time_ms), kvs_fmt_ms(b4, s->mean_ms));
        else
            snprintf(per, sizeof per, "%s ms wall/step", kvs_fmt_ms(b1, s->mean_ms));
        if (t->gpu_devices > 1) /* busy summed over them: a share of each, on average */
            add(value, size,
                "%lld %s, %s, GPU busy %s ms/step over %d GPUs (%s of the step "
                "each, on average)",
                (long long)s->count, s->count == 1 ? "step" : "steps", per, kvs_fmt_ms(b2, s->gpu_ms_per_step),
                t->gpu_devices, kvs_fmt_pct(b3, s->gpu_busy_fraction));
        else
            add(value, size,
                "%lld %s, %s, GPU busy %s ms/step (%s of the step)",
                (long long)s->count, s->count == 1 ? "step" : "steps", per, kvs_fmt_ms(b2, s->gpu_ms_per_step),
                kvs_fmt_pct(b3, s->gpu_busy_fraction));
        if (s->tokens_per_s > 0)
            add(value, size, ", %s tokens/s", kvs_fmt_count(b4, s->tokens_per_s));
    } else {
        add(value, size,
            "no step markers found: figures are trace totals (GPU busy %s ms)",
            kvs_fmt_ms(b1, s->total_gpu_ms));
    }
}

/* steps of each kind apart, with the outliers left out */
static void fact_kinds(const struct kvs_analysis *a, char *value, size_t size)
{
    char b1[KVS_FMT_BUF], b2[KVS_FMT_BUF];
    for (size_t i = 0; i < a->nkind; i++) {
        const struct kvs_step_kind_stat *k = &a->kinds[i];
        add(value, size, "%s%s: %lld %s", i ? "; " : "", kvs_step_kind_name(k->kind),
            (long long)k->count, k->count == 1 ? "step" : "steps");
        if (k->count > k->outliers)
            add(value, size, ", %s ms/step, GPU busy %s", kvs_fmt_ms(b1, k->mean_ms),
                kvs_fmt_pct(b2, k->busy_fraction));
        if (k->batch > 0)
            add(value, size, ", batch %s", kvs_fmt_count(b1, k->batch));
        if (k->tokens_per_step > 0)
            add(value, size, ", %s tokens/step", kvs_fmt_count(b1, k->tokens_per_step));
        if (k->tokens_per_s > 0)
            add(value, size, ", %s tokens/s", kvs_fmt_count(b1, k->tokens_per_s));
        if (k->outliers)
            add(value, size, " (%lld left out:", (long long)k->outliers);
        for (size_t j = 0; k->outliers && j < a->nstep; j++) {
            const struct kvs_step *st = &a->step[j];
            if (st->kind == k->kind && st->outlier)
                add(value, size, " step %lld, %s, %s ms;", (long long)st->index,
                    st->outlier, kvs_fmt_ms(b1, st->time_ms));
        }
        if (k->outliers) {
            size_t len = strlen(value);
            if (len && value[len - 1] == ';')
                value[len - 1] = 0;
            add(value, size, ")");
        }
    }
}

/* the run facts kvscope's engine wrote into the trace */
static void fact_engine(const struct kvs_analysis *a, char *value, size_t size)
{
    char b1[KVS_FMT_BUF];
    const struct kvs_engine_info *e = &a->engine;
    add(value, size, "kvscope engine, %s", e->config ? e->config : "config unknown");
    if (e->kv_path)
        add(value, size, ", KV path %s", e->kv_path);
    if (e->batch > 0)
        add(value, size, ", batch %lld", (long long)e->batch);
    if (e->context > 0)
        add(value, size, ", context %s", kvs_fmt_count(b1, (double)e->context));
    if (e->kv_capacity > 0)
        add(value, size, ", KV capacity %s tokens",
            kvs_fmt_count(b1, (double)e->kv_capacity));
    if (e->layers > 0)
        add(value, size, ", %lld layers", (long long)e->layers);
    if (e->tp > 1)
        add(value, size, ", tensor parallel %lld", (long long)e->tp);
    if (e->graph >= 0)
        add(value, size, ", %s", e->graph ? "CUDA graph" : "eager");
    if (e->step_ms > 0)
        add(value, size, "; its median step %s ms", kvs_fmt_ms(b1, e->step_ms));
}

/* the whole step against the HBM roofline */
static void fact_roofline(const struct kvs_analysis *a, char *value, size_t size)
{
    char b1[KVS_FMT_BUF], b2[KVS_FMT_BUF];
    const struct kvs_engine_info *e = &a->engine;
    const struct kvs_step_roofline *r = &a->roofline;
    add(value, size, "whole step: %s moved per step (engine byte model",
        kvs_fmt_bytes(b1, r->bytes_per_step));
    if (e->weight_bytes_per_step > 0 && e->kv_bytes_per_step > 0)
        add(value, size, ": weights %s + KV %s",
            kvs_fmt_bytes(b1, e->weight_bytes_per_step), kvs_fmt_bytes(b2, e->kv_bytes_per_step));
    add(value, size, ") in %s ms (%s) = %s", kvs_fmt_ms(b1, r->step_ms),
        !strcmp(r->step_source, "trace") ? "the trace's mean step" : "the engine's median step",
        kvs_fmt_gbps(b2, r->achieved_gbps));
    if (isfinite(r->peak_fraction))
        add(value, size, ", %s of the HBM peak", kvs_fmt_pct(b1, r->peak_fraction));
    if (isfinite(r->copy_fraction))
        add(value, size, ", %s of the measured copy rate (%s)",
            kvs_fmt_pct(b1, r->copy_fraction), kvs_fmt_gbps(b2, r->copy_gbps));
}

/* facts[n], labelled, its value empty for the fact_* to fill */
static struct kvs_fact *fact(struct kvs_fact *x, const char *label)
{
    x->label = label;
    x->value[0] = 0;
    return x;
}

size_t kvs_report_facts(const struct kvs_analysis *a, struct kvs_fact facts[KVS_MAX_FACTS])
{
    char b1[KVS_FMT_BUF];
    const struct kvs_trace_info *t = &a->trace;
    const struct kvs_steps *s = &a->steps;
    size_t n = 0;
    struct kvs_fact *x;
    x = fact(&facts[n++], "device");
    fact_device(a, x->value, sizeof x->value);
    x = fact(&facts[n++], "trace");
    fact_trace(a, x->value, sizeof x->value);
    x = fact(&facts[n++], "steps");
    fact_steps(a, x->value, sizeof x->value);
    /* steps of each kind apart, when the trace says their kinds or a step
     * stands out (a decode step is not averaged with a prefill) */
    if (a->nkind && (a->nkind > 1 || a->kinds[0].kind != KVS_STEP_UNKNOWN || s->outliers)) {
        x = fact(&facts[n++], "by kind");
        fact_kinds(a, x->value, sizeof x->value);
    }
    if (a->model) {
        x = fact(&facts[n++], "model");
        add(x->value, sizeof x->value, "%s", a->model);
        if (a->num_layers > 0)
            add(x->value, sizeof x->value, " (%d layers)", a->num_layers);
    }
    if (a->engine.present) {
        x = fact(&facts[n++], "engine");
        fact_engine(a, x->value, sizeof x->value);
    }
    if (a->roofline.known) {
        x = fact(&facts[n++], "roofline");
        fact_roofline(a, x->value, sizeof x->value);
    }
    if (t->truncated) {
        x = fact(&facts[n++], "warning");
        add(x->value, sizeof x->value, "the trace ends early; this covers the %s events read",
            kvs_fmt_count(b1, (double)t->events));
    }
    return n;
}

// ----------------------------------------------------------------------------
// a finding's figures, GPU time by category

void kvs_finding_figures(const struct kvs_finding *x, struct kvs_finding_figures *out)
{
    char b1[KVS_FMT_BUF], b2[KVS_FMT_BUF];
    out->recoverable[0] = out->moves[0] = 0;
    /* gpu_idle's figure is time the GPU sat idle, not GPU time to recover */
    if (x->gpu_ms_per_step > 0 && x->id && !strcmp(x->id, "gpu_idle"))
        snprintf(out->recoverable, sizeof out->recoverable, "GPU idle %s ms/step",
                 kvs_fmt_ms(b1, x->gpu_ms_per_step));
    else if (x->gpu_ms_per_step > 0 && x->id && !strcmp(x->id, "host_blocking"))
        snprintf(out->recoverable, sizeof out->recoverable, "host-wait %s ms/step with the GPU idle",
                 kvs_fmt_ms(b1, x->gpu_ms_per_step));
    else if (x->gpu_ms_per_step > 0 && x->id && !strcmp(x->id, "host_op_bound"))
        snprintf(out->recoverable, sizeof out->recoverable, "host time %s ms/step with the GPU idle",
                 kvs_fmt_ms(b1, x->gpu_ms_per_step));
    else if (x->gpu_ms_per_step > 0)
        snprintf(out->recoverable, sizeof out->recoverable, "recoverable %s ms/step of GPU time",
                 kvs_fmt_ms(b1, x->gpu_ms_per_step));
    if (x->bytes_per_step > 0) {
        add(out->moves, sizeof out->moves, "moves %s/step", kvs_fmt_bytes(b1, x->bytes_per_step));
        if (x->needed_bytes_per_step > 0)
            add(out->moves, sizeof out->moves, " (needed: %s)",
                kvs_fmt_bytes(b2, x->needed_bytes_per_step));
    }
}

size_t kvs_category_parts(const struct kvs_analysis *a,
                          char parts[KVS_CAT_COUNT_][KVS_CAT_PART_BUF])
{
    size_t n = 0;
    for (int c = 0; c < KVS_CAT_COUNT_; c++) {
        char ms[KVS_FMT_BUF], pct[KVS_FMT_BUF];
        double v = kvs_finite_or0(a->category_ms[c]);
        if (v <= 0)
            continue;
        snprintf(parts[n++], KVS_CAT_PART_BUF, "%s %s ms (%s)", kvs_cat_label(c), kvs_fmt_ms(ms, v),
                 kvs_fmt_pct(pct, a->category_share[c]));
    }
    return n;
}
