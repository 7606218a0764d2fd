/* analysis.c — kvs_analyze_file / kvs_analyze_memory: read, link, group, match, measure, find;
 * then lay the result out as struct kvs_analysis (kvscope/analysis.h).
 *
 *   struct kvs_analysis *a;
 *   kvs_analyze_file("trace.json.gz", &opt, &a); ... kvs_analysis_free(a);
 */
#include "kvscope/analysis.h"
#include "kvscope/rank_summary.h"
#include "kvscope/units.h" /* kvs_finite_or0 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify.h"
#include "tables.h"
#include "devices.h"
#include "dtypes.h"
#include "analysis_impl.h"
#include "analyze_input.h"
#include "findings.h"
#include "graph_capture.h"
#include "kvscope/check.h"
#include "groups.h"
#include "launch_size.h"
#include "link.h"
#include "match.h"
#include "roofline.h"
#include "steps.h"


/* The records and the stages' tables of one analysis, held here while the
 * stages run (run_stages): each stage is called with const pointers to what
 * it reads and a pointer to the table it fills, so no stage sees this
 * struct; the result is laid out from it (build_result), then it is freed.
 * The arena holds the analysis' strings and lists and moves to the result. */
struct tables {
    struct kvs_trace_data t;
    const struct kvs_analysis_options *opt;

    /* link (op, launch, graph), classify (cat, family, kfamily), steps (step) */
    struct kvs_activity_table act;
    struct kvs_families families; /* classify */

    /* steps (steps.c); the step's GPUs (count_devices) */
    struct kvs_step_table steps;
    struct kvs_gpu_set gpus;

    /* groups (groups.c, then match.c's roles and matches) */
    struct kvs_group_table groups;

    /* the roofline table of every op group (roofline.c), by GPU time */
    struct kvs_op_table ops;

    /* the model (given), and what the trace says of it (match.c) */
    bool have_model;
    struct kvs_model model;      /* valid when have_model */
    struct kvs_model_facts mf;

    /* the device's peaks (pick_device) */
    struct kvs_peaks dev;

    /* the result being built */
    struct kvs_arena arena;
};

void kvs_analysis_options_init(struct kvs_analysis_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->log = kvs_logger_stderr();
}

void kvs_analysis_free(struct kvs_analysis *a)
{
    if (!a)
        return;
    struct kvs_analysis_impl *impl = (struct kvs_analysis_impl *)a;
    kvs_arena_free(&impl->arena);
    kvs_intern_free(&impl->strings);
    free(impl);
}

static void ctx_free(struct tables *c)
{
    kvs_trace_data_free(&c->t);
    free(c->act.v);
    free(c->act.launch);
    free(c->steps.v);
    free(c->steps.busy_ns);
    free(c->steps.gpu_first);
    free(c->steps.gpu_last);
    free(c->steps.cat_ns);
    free(c->steps.comm_ns);
    free(c->steps.compute_ns);
    free(c->groups.v);
    free(c->ops.v);
    kvs_arena_free(&c->arena);
}

// ----------------------------------------------------------------------------
// device

static const char *trace_device(const struct kvs_trace_data *t)
{
    double ns[KVS_MAX_DEVICES] = {0};
    for (size_t i = 0; i < t->gpus.n; i++)
        if (kvs_gpu_get(t, i).device >= 0 && kvs_gpu_get(t, i).device < KVS_MAX_DEVICES)
            ns[kvs_gpu_get(t, i).device] += (double)kvs_gpu_get(t, i).dur;
    int best = -1;
    for (int d = 0; d < KVS_MAX_DEVICES; d++)
        if (t->device_names[d] && (best < 0 || ns[d] > ns[best]))
            best = d;
    return best >= 0 ? t->device_names[best] : NULL;
}

static enum kvs_status pick_device(const struct kvs_trace_data *t, const struct kvs_analysis_options *o,
                                   struct kvs_arena *ar, struct kvs_peaks *dev)
{
    const struct kvs_logger *log = &o->log;
    const char *name = o->device ? o->device : trace_device(t);
    dev->name = name ? kvs_arena_strdup(ar, name) : NULL;
    dev->source = "unknown";
    if (name) {
        struct kvs_device_info info;
        bool found;
        enum kvs_status st = kvs_device_lookup(name, log, &info, &found);
        if (st != KVS_STATUS_OK)
            return st;
        if (found) {
            dev->peak_gbps = info.peak_gbps;
            dev->copy_gbps = info.copy_gbps;
            dev->bf16_tflops = info.bf16_tflops;
            dev->fp8_tflops = info.fp8_tflops;
            dev->source = "device table";
            if (o->device)
                dev->name = kvs_arena_strdup(ar, info.name);
        } else if (o->peak_gbps <= 0) {
            char names[600];
            kvs_device_names(names, sizeof names);
            kvs_log(log, KVS_LOG_WARN,
                    "device \"%s\" is not in the device table (%s): efficiency is not computed; "
                    "give the peak with --peak-gbps",
                    name, names);
        }
    } else if (o->peak_gbps <= 0 && t->gpus.n) {
        kvs_log(log, KVS_LOG_WARN,
                "the trace names no device: efficiency is not computed; give --device or --peak-gbps");
    }
    if (o->peak_gbps > 0) {
        dev->peak_gbps = o->peak_gbps;
        dev->source = "--peak-gbps";
    }
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// the result

/* kvscope.engine as the analysis keeps it; false when memory ran out */
static bool copy_engine(struct kvs_analysis_impl *impl, const struct kvs_engine_rec *e)
{
    struct kvs_engine_info *o = &impl->pub.engine;
    o->present = e->present;
    o->graph = e->present ? e->graph : -1;
    if (!e->present)
        return true;
    o->config = e->config[0] ? kvs_arena_strdup(&impl->arena, e->config) : NULL;
    o->kv_path = e->kv_path[0] ? kvs_arena_strdup(&impl->arena, e->kv_path) : NULL;
    o->batch = e->batch, o->context = e->context, o->kv_capacity = e->kv_capacity;
    o->layers = e->layers, o->tp = e->tp, o->steps = e->steps;
    o->bytes_per_step = e->bytes_per_step;
    o->weight_bytes_per_step = e->weight_bytes_per_step;
    o->kv_bytes_per_step = e->kv_bytes_per_step;
    o->copy_gbps = e->copy_gbps;
    o->step_ms = e->step_ms;
    return (!e->config[0] || o->config) && (!e->kv_path[0] || o->kv_path);
}

/* The whole step against the roofline (docs/analysis.md, "Whole-step
 * roofline"): the engine's bytes per step over the step time the trace
 * measured (its mean step), or the engine's own median without steps. */
static void step_roofline(struct kvs_analysis *a)
{
    const struct kvs_engine_info *e = &a->engine;
    struct kvs_step_roofline *r = &a->roofline;
    memset(r, 0, sizeof *r);
    r->peak_fraction = r->copy_fraction = NAN;
    if (!e->present || !(e->bytes_per_step > 0))
        return;
    if (a->steps.count > 0 && a->steps.mean_ms > 0) {
        r->step_ms = a->steps.mean_ms;
        r->step_source = "trace";
    } else if (e->step_ms > 0) {
        r->step_ms = e->step_ms;
        r->step_source = "engine";
    } else {
        return;
    }
    r->known = true;
    r->bytes_per_step = e->bytes_per_step;
    r->achieved_gbps = e->bytes_per_step / (r->step_ms * 1e6);
    if (a->trace.peak_gbps > 0)
        r->peak_fraction = r->achieved_gbps / a->trace.peak_gbps;
    r->copy_gbps = e->copy_gbps > 0 ? e->copy_gbps : a->trace.copy_gbps > 0 ? a->trace.copy_gbps : 0;
    if (r->copy_gbps > 0)
        r->copy_fraction = r->achieved_gbps / r->copy_gbps;
}

/* a shape's tensors as the result keeps them; false when memory ran out */
static bool layout_tensors(struct kvs_arena *ar, const struct kvs_shape *s,
                           const struct kvs_dims **dims, const char *const **dtypes)
{
    struct kvs_dims *td = kvs_arena_alloc(ar, (size_t)(s->n ? s->n : 1) * sizeof *td);
    const char **tt = kvs_arena_alloc(ar, (size_t)(s->n ? s->n : 1) * sizeof *tt);
    if (!td || !tt)
        return false;
    for (int k = 0; k < s->n; k++) {
        td[k].rank = s->rank[k] < 8 ? s->rank[k] : 8;
        memcpy(td[k].d, s->dims[k], sizeof(int64_t) * (size_t)td[k].rank);
        char *dt = kvs_arena_alloc(ar, s->dtype_len[k] + 1);
        if (!dt)
            return false;
        memcpy(dt, s->dtype[k], s->dtype_len[k]);
        tt[k] = dt;
    }
    *dims = td;
    *dtypes = tt;
    return true;
}

/* the roofline table (roofline.c) as the result keeps it */
static enum kvs_status build_ops(struct tables *c, struct kvs_analysis_impl *impl)
{
    struct kvs_arena *ar = &impl->arena;
    struct kvs_op_roofline *out = kvs_arena_alloc(ar, (c->ops.n ? c->ops.n : 1) * sizeof *out);
    if (!out)
        return KVS_STATUS_NO_MEMORY;
    double steps = c->steps.n ? (double)c->steps.n : 1;
    for (size_t i = 0; i < c->ops.n; i++) {
        const struct kvs_op_acc *a = &c->ops.v[i];
        struct kvs_op_roofline *o = &out[i];
        o->op = kvs_intern_str(&impl->strings, a->op_name);
        o->family = kvs_op_family_name(a->cost.family);
        o->kernel = a->top_kernel ? kvs_intern_str(&impl->strings, a->top_kernel) : NULL;
        o->ntensors = a->shape_info.n;
        if (!layout_tensors(ar, &a->shape_info, &o->tensor_dims, &o->tensor_dtypes))
            return KVS_STATUS_NO_MEMORY;
        o->calls = a->calls;
        o->calls_per_step = (double)(c->steps.n ? a->calls_in_steps : a->calls) / steps;
        o->gpu_ms = (double)a->gpu_ns / 1e6;
        o->gpu_ms_per_step = (double)(c->steps.n ? a->gpu_ns_in_steps : a->gpu_ns) / 1e6 / steps;
        o->gpu_fraction = c->steps.trace_busy_ns > 0 ? (double)a->gpu_busy_ns / c->steps.trace_busy_ns : 0;
        o->us_per_call = a->calls > 0 ? (double)a->gpu_ns / 1e3 / (double)a->calls : 0;
        o->bytes_per_call = a->cost.bytes > 0 ? a->cost.bytes : -1;
        o->flops_per_call = a->cost.flops;
        o->sized_from = a->sized_from;
        o->precision = a->cost.precision;
        o->achieved_gbps = a->achieved_gbps;
        o->achieved_tflops = a->achieved_tflops;
        o->intensity = a->intensity;
        o->peak_tflops = a->peak_tflops;
        o->bound = a->bound;
        o->roof_fraction = a->roof_fraction;
    }
    impl->pub.ops = out;
    impl->pub.nop = c->ops.n;
    return KVS_STATUS_OK;
}

static enum kvs_status build_groups(struct tables *c, struct kvs_analysis_impl *impl)
{
    struct kvs_analysis *a = &impl->pub;
    struct kvs_arena *ar = &impl->arena;
    struct kvs_group *gs = kvs_arena_alloc(ar, (c->groups.n ? c->groups.n : 1) * sizeof *gs);
    if (!gs)
        return KVS_STATUS_NO_MEMORY;
    for (size_t i = 0; i < c->groups.n; i++) {
        const struct kvs_group_acc *g = &c->groups.v[i];
        struct kvs_group *o = &gs[i];
        const struct kvs_shape *s = &g->shape_info;
        struct kvs_group_figs f;
        kvs_group_figures(&c->steps, &c->dev, g, &f);
        o->op = kvs_intern_str(&impl->strings, g->op_name);
        o->kernel = g->top_kernel ? kvs_intern_str(&impl->strings, g->top_kernel) : NULL;
        o->ntensors = s->n;
        if (!layout_tensors(ar, s, &o->tensor_dims, &o->tensor_dtypes))
            return KVS_STATUS_NO_MEMORY;
        o->role = kvs_arena_strdup(ar, g->role ? g->role : o->op);
        o->calls = g->calls;
        o->calls_per_step = f.calls_per_step;
        o->gpu_ms = f.gpu_ms;
        o->gpu_ms_per_step = f.gpu_ms_per_step;
        o->gpu_fraction = f.gpu_fraction;
        o->bytes_per_call = g->bytes_per_call > 0 ? g->bytes_per_call : 0;
        o->sized_from = g->bytes_per_call > 0 ? g->sized_from : NULL;
        o->bytes_bound = g->bytes_per_call > 0 ? g->bytes_bound : 0;
        o->launch_elements_min = g->launch_sized ? g->launch_lo : 0;
        o->launch_elements_max = g->launch_sized ? g->launch_hi : 0;
        o->achieved_gbps = f.achieved_gbps;
        o->efficiency = f.efficiency;
        o->host_link = f.host_link;
        /* not clamped: shown, and said to be over the peak */
        o->over_peak = c->dev.peak_gbps > 0 && !f.host_link && o->bytes_per_call > 0 &&
                       f.efficiency > 1.0005;
        o->has_match = g->has_match;
        if (g->has_match) {
            o->match = g->match;
            o->match.label = kvs_arena_strdup(ar, g->match.label);
        }
    }
    a->groups = gs;
    a->ngroup = c->groups.n;
    return KVS_STATUS_OK;
}

struct kstat {
    uint32_t name;
    int64_t calls, ns, busy_ns;
    uint8_t cat, family;
};

static int cmp_kstat(const void *x, const void *y)
{
    const struct kstat *a = x, *b = y;
    if (a->ns != b->ns)
        return a->ns > b->ns ? -1 : 1;
    return a->name < b->name ? -1 : a->name > b->name;
}

static enum kvs_status build_kernels(struct tables *c, struct kvs_analysis_impl *impl)
{
    const struct kvs_trace_data *t = &c->t;
    uint32_t nstr = kvs_intern_count(&impl->strings); /* the names moved to the result */
    uint32_t *slot = calloc(nstr ? nstr : 1, sizeof *slot); /* name -> index + 1 */
    struct kstat *ks = NULL;
    size_t n = 0, cap = 0;
    if (!slot)
        return KVS_STATUS_NO_MEMORY;
    struct kvs_kiv_list iv = {0};
    int64_t *busy = NULL;
    if (kvs_kiv_reserve(&iv, t->gpus.n ? t->gpus.n : 1) < 0) {
        free(slot);
        return KVS_STATUS_NO_MEMORY;
    }
    for (size_t i = 0; i < t->gpus.n; i++) {
        const struct kvs_gpu_rec g_ = kvs_gpu_get(t, i), *g = &g_;
        if (!slot[g->name]) {
            struct kstat k = {g->name, 0, 0, 0, c->act.v[i].cat, c->act.v[i].kfamily};
            if (KVS_VEC_PUSH(ks, n, cap, k) < 0) {
                free(slot);
                free(ks);
                kvs_kiv_free(&iv);
                return KVS_STATUS_NO_MEMORY;
            }
            slot[g->name] = (uint32_t)n;
        }
        struct kstat *k = &ks[slot[g->name] - 1];
        k->calls++;
        k->ns += g->dur;
        if (kvs_kiv_add(&iv, slot[g->name] - 1, g->device, g->ts, g->ts + g->dur) < 0) {
            free(slot);
            free(ks);
            kvs_kiv_free(&iv);
            return KVS_STATUS_NO_MEMORY;
        }
    }
    free(slot);
    /* a kernel's share of busy time: its own union (one kernel running on
     * several streams at once counts once) */
    busy = calloc(n ? n : 1, sizeof *busy);
    if (!busy) {
        free(ks);
        kvs_kiv_free(&iv);
        return KVS_STATUS_NO_MEMORY;
    }
    kvs_kiv_busy(&iv, busy);
    kvs_kiv_free(&iv);
    for (size_t i = 0; i < n; i++)
        ks[i].busy_ns = busy[i];
    free(busy);
    if (n)
        qsort(ks, n, sizeof *ks, cmp_kstat);
    struct kvs_kernel_stat *out = kvs_arena_alloc(&impl->arena, (n ? n : 1) * sizeof *out);
    if (!out) {
        free(ks);
        return KVS_STATUS_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        out[i].name = kvs_intern_str(&impl->strings, ks[i].name);
        out[i].calls = ks[i].calls;
        out[i].gpu_ms = (double)ks[i].ns / 1e6;
        out[i].gpu_fraction = c->steps.trace_busy_ns > 0 ? (double)ks[i].busy_ns / c->steps.trace_busy_ns : 0;
        out[i].category = (enum kvs_category)ks[i].cat;
        out[i].family = c->families.fam[ks[i].family].name;
    }
    free(ks);
    impl->pub.kernels = out;
    impl->pub.nkernel = n;
    return KVS_STATUS_OK;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Marks steps whose time is over OUTLIER_RATIO x the median of their kind
 * (kinds of 3+ steps): the first of its kind is called a warm-up. */
#define OUTLIER_RATIO 1.5
static enum kvs_status mark_outliers(struct kvs_step *st, size_t n)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return KVS_STATUS_NO_MEMORY;
    for (int kind = 0; kind < KVS_STEP_KIND_COUNT_; kind++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if ((int)st[i].kind == kind)
                v[m++] = st[i].time_ms;
        if (m < 3)
            continue;
        qsort(v, m, sizeof *v, cmp_double);
        double median = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
        bool first = true;
        for (size_t i = 0; i < n; i++) {
            if ((int)st[i].kind != kind)
                continue;
            if (st[i].time_ms > OUTLIER_RATIO * median)
                st[i].outlier = first ? "warm-up" : "outlier";
            first = false;
        }
    }
    free(v);
    return KVS_STATUS_OK;
}

/* busy ms of devices x time ms, at most 1: the work of stray devices (not
 * counted, see count_devices) stays in busy and must not push it past the
 * whole */
static double busy_share(double busy_ms, double time_ms, int devices)
{
    double f = busy_ms / (time_ms * devices);
    return f < 1.0 ? f : 1.0;
}

static enum kvs_status build_kinds(struct tables *c, struct kvs_analysis_impl *impl)
{
    struct kvs_analysis *a = &impl->pub;
    struct kvs_step_kind_stat acc[KVS_STEP_KIND_COUNT_];
    double tok_time[KVS_STEP_KIND_COUNT_] = {0}, batch_n[KVS_STEP_KIND_COUNT_] = {0};
    double tok_n[KVS_STEP_KIND_COUNT_] = {0};
    memset(acc, 0, sizeof acc);
    for (size_t i = 0; i < a->nstep; i++) {
        const struct kvs_step *s = &a->step[i];
        struct kvs_step_kind_stat *k = &acc[s->kind];
        k->kind = s->kind;
        k->count++;
        if (s->outlier) {
            k->outliers++;
            continue;
        }
        k->mean_ms += s->time_ms;
        k->gpu_ms_per_step += s->gpu_busy_ms;
        if (s->batch > 0) {
            k->batch += (double)s->batch;
            batch_n[s->kind]++;
        }
        if (s->tokens > 0) {
            k->tokens_per_step += (double)s->tokens;
            tok_n[s->kind]++;
            tok_time[s->kind] += s->time_ms;
        }
    }
    size_t n = 0;
    for (int i = 0; i < KVS_STEP_KIND_COUNT_; i++)
        n += acc[i].count > 0;
    struct kvs_step_kind_stat *out = kvs_arena_alloc(&impl->arena, (n ? n : 1) * sizeof *out);
    if (!out)
        return KVS_STATUS_NO_MEMORY;
    n = 0;
    for (int i = 0; i < KVS_STEP_KIND_COUNT_; i++) {
        struct kvs_step_kind_stat *k = &acc[i];
        if (!k->count)
            continue;
        double used = (double)(k->count - k->outliers);
        if (used > 0) {
            double tokens = k->tokens_per_step;
            k->mean_ms /= used;
            k->gpu_ms_per_step /= used;
            k->busy_fraction = k->mean_ms > 0 ? busy_share(k->gpu_ms_per_step, k->mean_ms, c->gpus.n) : 0;
            k->batch = batch_n[i] > 0 ? k->batch / batch_n[i] : 0;
            k->tokens_per_step = tok_n[i] > 0 ? tokens / tok_n[i] : 0;
            k->tokens_per_s = tok_time[i] > 0 ? tokens * 1000.0 / tok_time[i] : 0;
        }
        out[n++] = *k;
    }
    a->kinds = out;
    a->nkind = n;
    for (size_t i = 0; i < n; i++)
        a->steps.outliers += out[i].outliers;
    return KVS_STATUS_OK;
}

static enum kvs_status build_steps(struct tables *c, struct kvs_analysis_impl *impl)
{
    struct kvs_analysis *a = &impl->pub;
    struct kvs_step *st = kvs_arena_alloc(&impl->arena, (c->steps.n ? c->steps.n : 1) * sizeof *st);
    if (!st)
        return KVS_STATUS_NO_MEMORY;
    double wall = 0, time = 0, busy = 0, comm = 0, compute = 0, tokens = 0, token_time = 0;
    bool all_tokens = c->steps.n > 0;
    for (size_t i = 0; i < c->steps.n; i++) {
        const struct kvs_step_win *w = &c->steps.v[i];
        st[i].index = w->index;
        st[i].name = kvs_intern_str(&impl->strings, w->name);
        st[i].kind = w->desc.kind;
        st[i].batch = w->desc.batch;
        st[i].tokens = w->desc.tokens;
        st[i].start_us = (double)w->start / 1e3;
        st[i].wall_ms = (double)(w->end - w->start) / 1e6;
        st[i].gpu_span_ms = c->steps.gpu_last[i] > c->steps.gpu_first[i]
                                ? (double)(c->steps.gpu_last[i] - c->steps.gpu_first[i]) / 1e6
                                : 0;
        st[i].time_ms = st[i].gpu_span_ms > st[i].wall_ms ? st[i].gpu_span_ms : st[i].wall_ms;
        st[i].gpu_busy_ms = c->steps.busy_ns[i] / 1e6;
        st[i].comm_busy_ms = c->steps.comm_ns[i] / 1e6;
        st[i].compute_busy_ms = c->steps.compute_ns[i] / 1e6;
        st[i].exposed_comm_ms = fmax(0, st[i].gpu_busy_ms - st[i].compute_busy_ms);
        st[i].end_us = st[i].start_us + st[i].time_ms * 1e3;
        comm += st[i].comm_busy_ms;
        compute += st[i].compute_busy_ms;
        st[i].busy_fraction = st[i].time_ms > 0 ? busy_share(st[i].gpu_busy_ms, st[i].time_ms, c->gpus.n) : 0;
        /* of the step's time, as busy_fraction and gpu_idle take it: a graph
         * step whose GPU work outlasts its CPU range idles in it too */
        st[i].idle_ms = fmax(0, st[i].time_ms * c->gpus.n - st[i].gpu_busy_ms);
        for (int k = 0; k < KVS_CAT_COUNT_; k++)
            st[i].category_ms[k] = c->steps.cat_ns[i][k] / 1e6;
        wall += st[i].wall_ms;
        time += st[i].time_ms;
        busy += st[i].gpu_busy_ms;
        if (st[i].tokens > 0) {
            tokens += (double)st[i].tokens;
            token_time += st[i].time_ms;
        } else {
            all_tokens = false;
        }
    }
    enum kvs_status rc = mark_outliers(st, c->steps.n);
    if (rc != KVS_STATUS_OK)
        return rc;
    a->step = st;
    a->nstep = c->steps.n;
    a->steps.count = (int64_t)c->steps.n;
    a->steps.source = c->steps.source;
    if (c->steps.n) {
        a->steps.mean_ms = wall / (double)c->steps.n;
        a->steps.mean_time_ms = time / (double)c->steps.n;
        a->steps.gpu_ms_per_step = busy / (double)c->steps.n;
        a->steps.gpu_busy_fraction =
            a->steps.mean_time_ms > 0 ? busy_share(a->steps.gpu_ms_per_step, a->steps.mean_time_ms, c->gpus.n) : 0;
        a->steps.total_gpu_ms = busy;
        /* the GPU work outlasts the CPU ranges (it runs behind the CPU) */
        a->steps.gpu_lags = a->steps.mean_time_ms > a->steps.mean_ms * 1.001;
        /* the trace's own token counts win over --batch */
        if (all_tokens && token_time > 0)
            a->steps.tokens_per_s = tokens * 1000.0 / token_time;
        else if (c->opt->batch > 0 && a->steps.mean_time_ms > 0)
            a->steps.tokens_per_s = c->opt->batch * 1000.0 / a->steps.mean_time_ms;
        a->steps.comm_ms_per_step = comm / (double)c->steps.n;
        a->steps.compute_ms_per_step = compute / (double)c->steps.n;
    } else {
        a->steps.total_gpu_ms = c->steps.trace_busy_ns / 1e6;
        busy = c->steps.trace_busy_ns / 1e6;
        a->steps.comm_ms_per_step = c->steps.trace_comm_ns / 1e6;
        a->steps.compute_ms_per_step = c->steps.trace_compute_ns / 1e6;
    }
    /* inclusion-exclusion: what both unions cover (never below 0 by rounding) */
    double both = a->steps.comm_ms_per_step + a->steps.compute_ms_per_step -
                  (c->steps.n ? busy / (double)c->steps.n : busy);
    a->steps.overlap_ms_per_step = both > 0 && a->steps.comm_ms_per_step > 0 ? both : 0;
    double cat_sum = 0;
    for (int k = 0; k < KVS_CAT_COUNT_; k++) {
        a->category_ms[k] = c->steps.trace_cat_ns[k] / 1e6;
        cat_sum += kvs_finite_or0(a->category_ms[k]);
    }
    for (int k = 0; k < KVS_CAT_COUNT_ && cat_sum > 0; k++)
        a->category_share[k] = kvs_finite_or0(a->category_ms[k]) / cat_sum;
    return build_kinds(c, impl);
}

static int cmp_collective(const void *x, const void *y)
{
    const struct kvs_collective *a = x, *b = y;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    return (a->start_us > b->start_us) - (a->start_us < b->start_us);
}

/* The communication kernels each step launched, by step then start: what
 * kvs_multirank() matches across ranks (the k-th collective of a step on
 * every rank) to see which rank arrives last. None without steps. */
static enum kvs_status build_collectives(struct tables *c, struct kvs_analysis_impl *impl)
{
    const struct kvs_trace_data *t = &c->t;
    size_t n = 0;
    for (size_t i = 0; c->steps.n && i < t->gpus.n; i++)
        n += c->act.v[i].cat == KVS_CAT_COMM && c->act.v[i].step >= 0;
    if (!n)
        return KVS_STATUS_OK;
    struct kvs_collective *v = kvs_arena_alloc(&impl->arena, n * sizeof *v);
    if (!v)
        return KVS_STATUS_NO_MEMORY;
    n = 0;
    for (size_t i = 0; i < t->gpus.n; i++) {
        const struct kvs_gpu_rec g_ = kvs_gpu_get(t, i), *g = &g_;
        if (c->act.v[i].cat != KVS_CAT_COMM || c->act.v[i].step < 0)
            continue;
        v[n++] = (struct kvs_collective){c->act.v[i].step, kvs_intern_str(&impl->strings, g->name),
                                         (double)g->ts / 1e3, (double)g->dur / 1e6, 0};
    }
    qsort(v, n, sizeof *v, cmp_collective);
    /* their distinct names (a few: one a kind of collective), first use first */
    const char **names = kvs_arena_alloc(&impl->arena, n * sizeof *names);
    if (!names)
        return KVS_STATUS_NO_MEMORY;
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < nn && names[k] != v[i].name) /* interned: one pointer a name */
            k++;
        if (k == nn)
            names[nn++] = v[i].name;
        v[i].name_index = (int32_t)k;
    }
    impl->pub.collectives = v;
    impl->pub.ncollective = n;
    impl->pub.collective_names = names;
    impl->pub.ncollective_name = nn;
    return KVS_STATUS_OK;
}

static int cmp_family(const void *x, const void *y)
{
    const struct kvs_family_stat *a = x, *b = y;
    if (a->gpu_ms != b->gpu_ms)
        return a->gpu_ms > b->gpu_ms ? -1 : 1;
    return strcmp(a->family, b->family);
}

/* GPU time by kernel family, of the work the steps launched (the whole
 * trace without steps) */
static enum kvs_status build_families(struct tables *c, struct kvs_analysis_impl *impl)
{
    const struct kvs_families *fs = &c->families;
    struct kvs_family_stat acc[KVS_MAX_FAMILIES];
    memset(acc, 0, sizeof acc);
    for (size_t i = 0; i < c->t.gpus.n; i++) {
        if (c->steps.n && c->act.v[i].step < 0)
            continue;
        struct kvs_family_stat *f = &acc[c->act.v[i].family];
        f->activities++;
        f->gpu_ms += (double)kvs_gpu_get(&c->t, i).dur / 1e6;
    }
    struct kvs_family_stat *out = kvs_arena_alloc(&impl->arena, (fs->n ? fs->n : 1) * sizeof *out);
    if (!out)
        return KVS_STATUS_NO_MEMORY;
    size_t n = 0;
    for (size_t k = 0; k < fs->n; k++) {
        if (!acc[k].activities)
            continue;
        out[n] = acc[k];
        out[n].family = fs->fam[k].name;
        out[n].category = (enum kvs_category)fs->fam[k].category;
        out[n].gpu_ms_per_step = c->steps.n ? acc[k].gpu_ms / (double)c->steps.n : acc[k].gpu_ms;
        n++;
    }
    if (n)
        qsort(out, n, sizeof *out, cmp_family);
    impl->pub.families = out;
    impl->pub.nfamily = n;
    return KVS_STATUS_OK;
}

/* the result's tables, one from each of the stages' */
static enum kvs_status build_tables(struct tables *c, struct kvs_analysis_impl *impl)
{
    KVS_TRY(build_steps(c, impl));
    KVS_TRY(build_groups(c, impl));
    KVS_TRY(build_kernels(c, impl));
    KVS_TRY(build_families(c, impl));
    KVS_TRY(build_ops(c, impl));
    return build_collectives(c, impl);
}

static enum kvs_status build_result(struct tables *c, const char *path, struct kvs_analysis **out)
{
    struct kvs_analysis_impl *impl = calloc(1, sizeof *impl);
    if (!impl)
        return KVS_STATUS_NO_MEMORY;
    /* the result keeps the interned names; the records go */
    impl->strings = c->t.strings;
    memset(&c->t.strings, 0, sizeof c->t.strings);
    /* strings built during the analysis move over with their arena */
    impl->arena = c->arena;
    memset(&c->arena, 0, sizeof c->arena);

    struct kvs_analysis *a = &impl->pub;
    struct kvs_trace_info *ti = &a->trace;
    const struct kvs_trace_data *t = &c->t;
    enum kvs_status st = KVS_STATUS_NO_MEMORY;
    ti->path = kvs_arena_strdup(&impl->arena, path);
    ti->bytes = t->bytes;
    ti->events = t->events;
    ti->truncated = t->truncated;
    ti->device = c->dev.name;
    ti->peak_gbps = c->dev.peak_gbps;
    ti->peak_source = c->dev.source;
    ti->copy_gbps = c->dev.copy_gbps;
    ti->peak_bf16_tflops = c->dev.bf16_tflops;
    ti->peak_fp8_tflops = c->dev.fp8_tflops;
    ti->producer = t->from_nsys          ? "nsight-systems"
                 : t->has_kvscope_meta ? "kvscope"
                 : (t->has_kineto_meta || t->n_ops) ? "pytorch-kineto"
                                                    : "unknown";
    ti->rank = t->rank;
    ti->world_size = t->world_size;
    ti->ops = t->n_ops;
    ti->kernels = t->n_kernels;
    ti->memcpys = t->n_memcpys;
    ti->memsets = t->n_memsets;
    ti->gpu_devices = t->gpus.n ? c->gpus.n : 0;
    ti->gpu_unlinked = c->act.unlinked;
    ti->graph_launched = c->act.graph_launched;
    ti->capture_aligned = c->act.capture_aligned;
    ti->dropped_records = t->dropped_records;
    ti->with_stack = t->with_stack;
    a->model = c->have_model ? kvs_arena_strdup(&impl->arena, c->model.name) : NULL;
    a->num_layers = c->have_model ? c->model.layers : 0;
    if (!ti->path)
        goto fail;
    if ((st = build_tables(c, impl)) != KVS_STATUS_OK)
        goto fail;
    if (!copy_engine(impl, &t->engine)) {
        st = KVS_STATUS_NO_MEMORY;
        goto fail;
    }
    step_roofline(a);
    /* findings were written into the arena that now belongs to impl; their
     * strings point there and into the interned names */
    *out = a;
    return KVS_STATUS_OK;
fail:
    kvs_analysis_free(a);
    return st;
}

/* The devices counted as the step's GPUs (at least 1; -1: no memory): one
 * process may drive several (a model split over GPUs with
 * device_map="auto"), and busy time summed over them is a fraction of
 * devices x the step, not of the step alone. A device counts only when it
 * runs kernels in most steps (more than half; any, without steps) and for
 * at least KVS_DEVICE_MIN_SHARE of the busiest device's kernel time: a
 * memset or a copy on another device id, a kernel now and then, or a 1 us
 * kernel a step must not make a second GPU that idles the whole step.
 * Those left out are said, with what they ran. */
struct dev_stat {
    int32_t device;
    int64_t ns, kernel_ns;
    int64_t kernels, copies, memsets;
    int64_t kernel_steps;         /* steps in which it ran a kernel; -1 once counted */
};

struct dev_step {
    int32_t device;
    int32_t step;
};

static int cmp_dev_step(const void *a, const void *b)
{
    const struct dev_step *x = a, *y = b;
    if (x->device != y->device)
        return (x->device > y->device) - (x->device < y->device);
    return (x->step > y->step) - (x->step < y->step);
}

static struct dev_stat *dev_find(struct dev_stat *v, size_t n, int32_t device)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].device == device)
            return &v[i];
    return NULL;
}

/* what a device left out ran, into what[*wl..) */
static void stray_words(char *what, size_t size, size_t *wl, const struct dev_stat *d, size_t nsteps)
{
    char ran[160];
    size_t rl = 0;
    ran[0] = 0;
    if (d->kernels)
        rl += (size_t)snprintf(ran + rl, sizeof ran - rl, "%lld kernel%s", (long long)d->kernels,
                               d->kernels == 1 ? "" : "s");
    if (d->kernels && nsteps && rl < sizeof ran)
        rl += (size_t)snprintf(ran + rl, sizeof ran - rl, " in %lld of %zu steps", (long long)d->kernel_steps,
                               nsteps);
    if (d->copies && rl < sizeof ran)
        rl += (size_t)snprintf(ran + rl, sizeof ran - rl, "%s%lld cop%s", rl ? ", " : "", (long long)d->copies,
                               d->copies == 1 ? "y" : "ies");
    if (d->memsets && rl < sizeof ran)
        snprintf(ran + rl, sizeof ran - rl, "%s%lld memset%s", rl ? ", " : "", (long long)d->memsets,
                 d->memsets == 1 ? "" : "s");
    if (*wl < size - 1)
        *wl += (size_t)snprintf(what + *wl, size - *wl, "%sdevice %d: %s", *wl ? "; " : "", (int)d->device, ran);
    if (*wl >= size)
        *wl = size - 1;
}

/* The step's GPUs into *gpus, the strays said. */
static enum kvs_status count_devices(const struct kvs_trace_data *t, const struct kvs_activity_table *act,
                                     const struct kvs_step_table *steps, const struct kvs_logger *log,
                                     const char *path, struct kvs_gpu_set *gpus)
{
    gpus->bits = 0;
    gpus->n = 1;
    if (!t->gpus.n)
        return KVS_STATUS_OK;
    /* more device ids than this (a hostile trace): the rest count as strays */
    const size_t cap = t->gpus.n < KVS_MAX_DEVICES * 4 ? t->gpus.n : KVS_MAX_DEVICES * 4;
    struct dev_stat *d = calloc(cap, sizeof *d);
    struct dev_step *ks = malloc(t->gpus.n * sizeof *ks);
    if (!d || !ks) {
        free(d);
        free(ks);
        return KVS_STATUS_NO_MEMORY;
    }
    size_t nd = 0, nks = 0;
    for (size_t i = 0; i < t->gpus.n; i++) {
        const struct kvs_gpu_rec g_ = kvs_gpu_get(t, i), *g = &g_;
        struct dev_stat *e = dev_find(d, nd, g->device);
        if (!e && nd == cap)
            continue;
        if (!e) {
            e = &d[nd++];
            e->device = g->device;
        }
        e->ns += g->dur; /* at most 2^60 in all (the reader's limit) */
        if (g->kind == KVS_GPU_KERNEL) {
            e->kernels++;
            e->kernel_ns += g->dur;
            if (steps->n && act->v[i].step >= 0)
                ks[nks++] = (struct dev_step){g->device, act->v[i].step};
        } else if (g->kind == KVS_GPU_MEMCPY) {
            e->copies++;
        } else {
            e->memsets++;
        }
    }
    qsort(ks, nks, sizeof *ks, cmp_dev_step);
    for (size_t i = 0; i < nks; i++) {
        struct dev_stat *e = i == 0 || ks[i].device != ks[i - 1].device || ks[i].step != ks[i - 1].step
                                 ? dev_find(d, nd, ks[i].device)
                                 : NULL;
        if (e)
            e->kernel_steps++;
    }
    free(ks);
    int64_t top = 0;
    size_t busiest = 0;
    for (size_t i = 0; i < nd; i++) {
        top = d[i].kernel_ns > top ? d[i].kernel_ns : top;
        busiest = d[i].ns > d[busiest].ns ? i : busiest;
    }
    int counted = 0, stray = 0;
    for (size_t i = 0; i < nd; i++) {
        bool counts = d[i].kernels > 0 && (double)d[i].kernel_ns >= KVS_DEVICE_MIN_SHARE * (double)top &&
                      (!steps->n || 2 * d[i].kernel_steps > (int64_t)steps->n);
        d[i].kernel_steps = counts ? -1 : d[i].kernel_steps >= 0 ? d[i].kernel_steps : 0; /* -1: counted */
        counted += counts;
    }
    if (!counted) { /* copies only, say: the busiest device is the step's */
        d[busiest].kernel_steps = -1;
        counted = 1;
    }
    int64_t stray_ns = 0;
    char what[512] = "";
    size_t wl = 0;
    for (size_t i = 0; i < nd; i++) {
        if (d[i].kernel_steps < 0) {
            gpus->bits |= kvs_device_bit(d[i].device);
            continue;
        }
        stray_ns += d[i].ns;
        if (stray++ < 3)
            stray_words(what, sizeof what, &wl, &d[i], steps->n);
    }
    if (stray > 0)
        kvs_log(log, KVS_LOG_WARN,
                "%s: %d stray device id%s, not counted as GPUs of the step (busy fraction, idle "
                "time, per-GPU figures): %s%s; a GPU of the step runs kernels %sfor at least %.0f%% "
                "of the busiest device's kernel time; their work (%.3f ms) stays in the GPU time",
                path, stray, stray > 1 ? "s" : "", what, stray > 3 ? "; ..." : "",
                steps->n ? "in most steps and " : "", 100.0 * KVS_DEVICE_MIN_SHARE, (double)stray_ns / 1e6);
    free(d);
    gpus->n = counted;
    return KVS_STATUS_OK;
}

/* The options' own errors, said before any input is read; the step regex
 * and the model are checked by kvs_analyze_input as it sets them up. */
static enum kvs_status options_check(const struct kvs_analysis_options *opt)
{
    if (opt->kv_capacity < 0 || opt->context < 0 || opt->peak_gbps < 0 || opt->batch < 0) {
        kvs_log(&opt->log, KVS_LOG_ERROR, "kvs_analyze: invalid arguments");
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    if (opt->kv_dtype && !kvs_kv_dtype_name(opt->kv_dtype)) {
        kvs_log(&opt->log, KVS_LOG_ERROR,
                "KV dtype '%s' is not one kvscope knows: fp8 (e4m3), e5m2, bf16, fp16, fp32, or a "
                "PyTorch name (float8_e4m3fn, bfloat16, ...)",
                opt->kv_dtype);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    return KVS_STATUS_OK;
}

enum kvs_status kvs_analysis_options_check(const struct kvs_analysis_options *opt)
{
    enum kvs_status st = options_check(opt);
    if (st != KVS_STATUS_OK)
        return st;
    struct kvs_step_matcher sm;
    if ((st = kvs_step_matcher_init(&sm, opt->step_regex, &opt->log)) != KVS_STATUS_OK)
        return st;
    kvs_step_matcher_free(&sm);
    /* a model given as a path is read by the analysis alone (a pipe can
     * be read once); a bundled name or a config already read is checked */
    struct kvs_model model;
    if (opt->model_config)
        st = kvs_model_from_config(opt->model_config, opt->model, &opt->log, &model);
    else if (opt->model && access(opt->model, F_OK) != 0)
        st = kvs_model_load(opt->model, &opt->log, &model);
    return st;
}

/* The step matcher and the model, before any input is read. */
static enum kvs_status setup(struct tables *c, const struct kvs_analyze_input *in,
                             struct kvs_step_matcher *sm)
{
    const struct kvs_analysis_options *opt = c->opt;
    KVS_TRY(kvs_step_matcher_init(sm, opt->step_regex, &c->opt->log));
    if (in->model) {
        c->model = *in->model;
        c->have_model = true;
    } else if (opt->model_config || opt->model) {
        enum kvs_status st = opt->model_config
                                 ? kvs_model_from_config(opt->model_config, opt->model, &c->opt->log, &c->model)
                                 : kvs_model_load(opt->model, &c->opt->log, &c->model);
        if (st != KVS_STATUS_OK) {
            kvs_step_matcher_free(sm);
            return st;
        }
        c->have_model = true;
    }
    return KVS_STATUS_OK;
}

/* Why an input that read gave no events (KVS_STATUS_EMPTY, said). */
static enum kvs_status say_empty(const struct tables *c, const struct kvs_analyze_input *in,
                                 enum kvs_status read_st)
{
    const char *path = in->path;
    if (c->t.from_nsys) /* the nsys reader said which tables were absent */
        return KVS_STATUS_EMPTY;
    char schema[64] = "";
    if (!in->in_memory && kvs_kvscope_doc_sniff(path, schema, sizeof schema) == KVS_STATUS_OK && schema[0]) {
        kvs_log(&c->opt->log, KVS_LOG_ERROR,
                "%s: a kvscope JSON document (%s), not a trace: kvscope report reads a rank's "
                "report (kvscope.report/1) as that rank's summary, for the view across ranks; "
                "everything else needs the trace",
                path, schema);
        return KVS_STATUS_EMPTY;
    }
    kvs_log(&c->opt->log, KVS_LOG_ERROR,
            c->t.bytes == 0 ? "%s: the file is empty: no trace to analyse"
            : read_st == KVS_STATUS_TRUNCATED
                ? "%s: the trace ended before its first complete event: nothing to analyse"
                : "%s: the trace has no events (traceEvents is empty or missing)",
            path);
    return KVS_STATUS_EMPTY;
}

/* The records of the input into c->t; *read_st: OK or TRUNCATED. */
static enum kvs_status read_input(struct tables *c, const struct kvs_analyze_input *in,
                                  const struct kvs_read_opts *ro, enum kvs_status *read_st)
{
    struct kvs_read_input ri = {in->path, in->data, in->len, in->in_memory};
    KVS_TRY(kvs_read_any(&ri, ro, &c->t, read_st));
    if (*read_st != KVS_STATUS_OK && *read_st != KVS_STATUS_TRUNCATED)
        return *read_st;
    return c->t.events == 0 ? say_empty(c, in, *read_st) : KVS_STATUS_OK;
}

/* --graph-capture: the capture's records read (no progress of their own)
 * and given to the replay's kernels */
static enum kvs_status merge_capture(const char *path, const struct kvs_read_opts *ro, struct kvs_trace_data *t,
                                     struct kvs_activity_table *act)
{
    struct kvs_trace_data cap;
    memset(&cap, 0, sizeof cap);
    struct kvs_read_opts cro = *ro;
    cro.progress = NULL;
    enum kvs_status st = kvs_read_trace(path, &cro, &cap);
    if (st == KVS_STATUS_OK || st == KVS_STATUS_TRUNCATED)
        st = kvs_graph_capture_merge(t, &cap, path, ro->log, act);
    kvs_trace_data_free(&cap);
    return st;
}

/* What the trace lacks that a reader of the report should know: steps,
 * shapes of graph-launched work, the GPU side. */
static void say_gaps(const struct kvs_stage_in *in, const struct kvs_logger *log, const char *path)
{
    const struct kvs_analysis_options *opt = in->opt;
    if (!in->steps->n)
        kvs_log(log, KVS_LOG_INFO,
                "%s: no step markers (vLLM/SGLang step ranges, ProfilerStep#N or step ranges%s): figures are trace totals", path,
                opt->step_regex ? ", or --step-regex matches" : "");
    if (in->act->graph_launched) {
        size_t sized = 0;
        for (size_t i = 0; i < in->groups->n; i++)
            sized += in->groups->v[i].launch_sized;
        if (in->act->graph_node_ops && !in->act->capture_aligned)
            kvs_log(log, KVS_LOG_INFO,
                    "%s: %llu of %zu GPU activities were launched from CUDA graphs; %llu of them "
                    "carry the op (shapes, dtypes) their graph node was captured under",
                    path, (unsigned long long)in->act->graph_launched, in->t->gpus.n,
                    (unsigned long long)in->act->graph_node_ops);
        else if (in->act->capture_aligned)
            kvs_log(log, KVS_LOG_INFO,
                    "%s: %llu of %zu GPU activities were launched from CUDA graphs; %llu of them "
                    "have the ops (shapes, dtypes, External ids) they were captured under",
                    path, (unsigned long long)in->act->graph_launched, in->t->gpus.n,
                    (unsigned long long)in->act->capture_aligned);
        else if (sized)
            kvs_log(log, KVS_LOG_WARN,
                    "%s: %llu of %zu GPU activities were launched from CUDA graphs: PyTorch records "
                    "no op shapes for a graph's kernels; %zu copy/cast groups were sized from their "
                    "launches instead (grid x block and the kernel's name; docs/analysis.md says "
                    "the bounds)",
                    path, (unsigned long long)in->act->graph_launched, in->t->gpus.n, sized);
        else
            kvs_log(log, KVS_LOG_WARN,
                    "%s: %llu of %zu GPU activities were launched from CUDA graphs: PyTorch records "
                    "no op shapes for a graph's kernels, so their copies and casts are neither sized "
                    "nor matched to the KV cache (profile an eager step for that, e.g. vLLM "
                    "--enforce-eager)",
                    path, (unsigned long long)in->act->graph_launched, in->t->gpus.n);
    }
    if (!in->steps->n && opt->batch > 0) /* asked for, and not silently left out */
        kvs_log(log, KVS_LOG_WARN,
                "%s: --batch %d gives no tokens/s without step markers (ProfilerStep#N, step "
                "ranges or --step-regex)",
                path, opt->batch);
    if (in->t->gpus.n == 0 && in->t->n_runtime > 0) /* launches, but no GPU side: a profiler set-up slip */
        kvs_log(log, KVS_LOG_WARN,
                "%s: no GPU activity (kernels, copies, memsets) although the trace has %llu "
                "CUDA/HIP runtime calls: the profiler did not record the GPU side (torch.profiler: "
                "add ProfilerActivity.CUDA to activities), so nothing on the GPU can be judged",
                path, (unsigned long long)in->t->n_runtime);
    else if (in->t->gpus.n == 0)
        kvs_log(log, KVS_LOG_INFO,
                "%s: no CUDA/ROCm GPU activity in the trace: a CPU-only trace, or another "
                "accelerator's (MTIA) whose device events kvscope does not analyse",
                path);
}

/* The stages in order, from the records to the ranked findings: each
 * reads what the ones before it filled (docs/conventions.md, "The analysis'
 * stages"). */
static enum kvs_status run_stages(struct tables *c, struct kvs_step_matcher *sm,
                                  const struct kvs_read_opts *ro, const char *path,
                                  struct kvs_finding **findings, size_t *nfind)
{
    /* what the stages read, read-only; each table filled once its stage ran */
    const struct kvs_stage_in in = {&c->t, c->opt, &c->act, &c->steps, &c->groups, &c->dev, &c->mf, &c->gpus, &c->ops};
    const struct kvs_model *model = c->have_model ? &c->model : NULL;
    const struct kvs_launch_facts lf = {&c->t.strings, model, c->opt->kv_capacity, c->opt->kv_dtype};
    const struct kvs_logger *log = &c->opt->log;
    KVS_TRY(kvs_link(&c->t, log, &c->act));
    if (c->opt->graph_capture)
        KVS_TRY(merge_capture(c->opt->graph_capture, ro, &c->t, &c->act));
    KVS_TRY(kvs_families_bundled(&c->families, &c->arena, log));
    KVS_TRY(kvs_categorize(&c->t, &c->families, &c->act));
    KVS_TRY(kvs_steps_find(&c->t, sm, log, &c->steps));
    KVS_TRY(kvs_steps_measure(&c->t, &c->act, &c->steps));
    KVS_TRY(kvs_groups_build(&in, &lf, &c->groups));
    KVS_TRY(pick_device(&c->t, c->opt, &c->arena, &c->dev));
    KVS_TRY(kvs_match_groups(&in, model, c->opt->kv_capacity, &c->arena, &c->groups, &c->mf));
    say_gaps(&in, log, path);
    KVS_TRY(count_devices(&c->t, &c->act, &c->steps, log, path, &c->gpus));
    KVS_TRY(kvs_roofline_build(&in, &c->ops));
    return kvs_findings_build(&in, &c->arena, findings, nfind);
}

/* The result from the stages' state, with the findings. */
static enum kvs_status finish(struct tables *c, const char *path, struct kvs_finding *findings, size_t nfind,
                              struct kvs_analysis **out)
{
    KVS_TRY(build_result(c, path, out));
    if (((struct kvs_analysis_impl *)*out)->arena.failed) {
        /* a string or table of the result could not be allocated: the stages
         * carry on past a NULL from the arena, the analysis does not */
        kvs_analysis_free(*out);
        *out = NULL;
        return KVS_STATUS_NO_MEMORY;
    }
    (*out)->findings = findings;
    (*out)->nfinding = nfind;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_analyze_input(const struct kvs_analyze_input *in,
                                  const struct kvs_analysis_options *opt, struct kvs_analysis **out)
{
    if (!out)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    struct kvs_analysis_options defaults;
    if (!opt) {
        kvs_analysis_options_init(&defaults);
        opt = &defaults;
    }
    const char *path = in ? in->path : NULL;
    if (!path || (in->in_memory && !in->data && in->len)) {
        kvs_log(&opt->log, KVS_LOG_ERROR, "kvs_analyze: invalid arguments");
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    KVS_TRY(options_check(opt));
    struct tables c;
    memset(&c, 0, sizeof c);
    c.opt = opt;
    struct kvs_step_matcher sm;
    KVS_TRY(setup(&c, in, &sm));
    struct kvs_read_opts ro = {0};
    ro.log = &opt->log;
    ro.progress = opt->progress;
    ro.progress_user = opt->progress_user;
    ro.is_step_name = kvs_step_matcher_is_op_step;
    ro.step_user = &sm;
    ro.bufsize = in->read_bufsize;
    ro.source_chunk = in->source_chunk;
    enum kvs_status read_st = KVS_STATUS_OK;
    struct kvs_finding *findings = NULL;
    size_t nfind = 0;
    enum kvs_status st = read_input(&c, in, &ro, &read_st);
    if (st == KVS_STATUS_OK)
        st = run_stages(&c, &sm, &ro, path, &findings, &nfind);
    if (st == KVS_STATUS_OK)
        st = finish(&c, path, findings, nfind, out);
    if (st == KVS_STATUS_OK)
        st = read_st; /* OK, or TRUNCATED with a result */
    kvs_step_matcher_free(&sm);
    ctx_free(&c);
    return st;
}

enum kvs_status kvs_analyze_file(const char *path, const struct kvs_analysis_options *opt,
                                 struct kvs_analysis **out)
{
    struct kvs_analyze_input in = {0};
    in.path = path;
    return kvs_analyze_input(&in, opt, out);
}

enum kvs_status kvs_analyze_memory(const void *data, size_t len, const char *name,
                                   const struct kvs_analysis_options *opt, struct kvs_analysis **out)
{
    struct kvs_analyze_input in = {0};
    in.path = name ? name : "(memory)";
    in.data = data;
    in.len = len;
    in.in_memory = true;
    return kvs_analyze_input(&in, opt, out);
}
