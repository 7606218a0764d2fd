/* reports/render_json.c — the kvscope.report/1 document: exactly the keys of
 * docs/report-json.md, in that order, for other tools to read.
 *
 *   kvscope report TRACE --format json
 *
 * Null rules: a number that is not finite is null; peak_gbps and efficiency
 * are null when the device peak is unknown; match is null when nothing
 * matched; a finding's bytes_per_step is null when it moves no bytes (the
 * struct's 0 = not applicable); a string the trace did not provide is null.
 */
#include <string.h>

#include "compare_impl.h"
#include "multirank_impl.h"

/* dims and dtypes of n tensors, each array on one line */
static void write_dims(struct kvs_jw *w, int n, const struct kvs_dims *dims)
{
    kvs_jw_arr_compact(w);
    for (int i = 0; dims && i < n; i++) {
        kvs_jw_arr_compact(w);
        for (int k = 0; k < dims[i].rank && k < 8; k++)
            kvs_jw_int(w, dims[i].d[k]);
        kvs_jw_arr_end(w);
    }
    kvs_jw_arr_end(w);
}

static void write_dtypes(struct kvs_jw *w, int n, const char *const *dtypes)
{
    kvs_jw_arr_compact(w);
    for (int i = 0; dtypes && i < n; i++)
        kvs_jw_str(w, dtypes[i] ? dtypes[i] : "");
    kvs_jw_arr_end(w);
}

static void write_match(struct kvs_jw *w, const struct kvs_group *g)
{
    if (!g->has_match) {
        kvs_jw_null(w);
        return;
    }
    const struct kvs_match *m = &g->match;
    kvs_jw_obj(w);
    kvs_jw_key(w, "label");
    kvs_jw_str(w, m->label);
    kvs_jw_key(w, "capacity_tokens");
    kvs_jw_int_or_null(w, m->capacity_tokens, m->capacity_tokens > 0);
    kvs_jw_key(w, "row_dim");
    kvs_jw_int_or_null(w, m->row_dim, m->row_dim > 0);
    kvs_jw_key(w, "per_layer");
    kvs_jw_bool(w, m->per_layer);
    kvs_jw_obj_end(w);
}

void kvs_json_write_categories(struct kvs_jw *w, const double *ms)
{
    kvs_jw_obj(w);
    for (int c = 0; c < KVS_CAT_COUNT_; c++) {
        kvs_jw_key(w, kvs_cat_label(c));
        kvs_jw_num(w, ms[c]);
    }
    kvs_jw_obj_end(w);
}

void kvs_json_write_step_figures(struct kvs_jw *w, int64_t count, double mean_ms,
                                 double gpu_ms_per_step, double gpu_busy_fraction)
{
    kvs_jw_key(w, "count");
    kvs_jw_int(w, count);
    kvs_jw_key(w, "mean_ms");
    kvs_jw_num(w, mean_ms);
    kvs_jw_key(w, "gpu_ms_per_step");
    kvs_jw_num(w, gpu_ms_per_step);
    kvs_jw_key(w, "gpu_busy_fraction");
    kvs_jw_num(w, gpu_busy_fraction);
}

static void write_kind(struct kvs_jw *w, const struct kvs_step_kind_stat *k)
{
    bool used = k->count > k->outliers;
    kvs_jw_obj(w);
    kvs_jw_key(w, "kind");
    kvs_jw_str(w, kvs_step_kind_name(k->kind));
    kvs_jw_key(w, "count");
    kvs_jw_int(w, k->count);
    kvs_jw_key(w, "outliers");
    kvs_jw_int(w, k->outliers);
    kvs_jw_key(w, "mean_ms");
    kvs_jw_num_or_null(w, k->mean_ms, used);
    kvs_jw_key(w, "gpu_ms_per_step");
    kvs_jw_num_or_null(w, k->gpu_ms_per_step, used);
    kvs_jw_key(w, "gpu_busy_fraction");
    kvs_jw_num_or_null(w, k->busy_fraction, used);
    kvs_jw_key(w, "batch");
    kvs_jw_num_or_null(w, k->batch, k->batch > 0);
    kvs_jw_key(w, "tokens_per_step");
    kvs_jw_num_or_null(w, k->tokens_per_step, k->tokens_per_step > 0);
    kvs_jw_key(w, "tokens_per_s");
    kvs_jw_num_or_null(w, k->tokens_per_s, k->tokens_per_s > 0);
    kvs_jw_obj_end(w);
}

static void write_step(struct kvs_jw *w, const struct kvs_step *s)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "index");
    kvs_jw_int(w, s->index);
    kvs_jw_key(w, "name");
    kvs_jw_str(w, s->name);
    kvs_jw_key(w, "kind");
    kvs_jw_str(w, kvs_step_kind_name(s->kind));
    kvs_jw_key(w, "batch");
    kvs_jw_int_or_null(w, s->batch, s->batch > 0);
    kvs_jw_key(w, "tokens");
    kvs_jw_int_or_null(w, s->tokens, s->tokens > 0);
    kvs_jw_key(w, "wall_ms");
    kvs_jw_num(w, s->wall_ms);
    kvs_jw_key(w, "gpu_span_ms");
    kvs_jw_num(w, s->gpu_span_ms);
    kvs_jw_key(w, "time_ms");
    kvs_jw_num(w, s->time_ms);
    kvs_jw_key(w, "gpu_busy_ms");
    kvs_jw_num(w, s->gpu_busy_ms);
    kvs_jw_key(w, "gpu_busy_fraction");
    kvs_jw_num(w, s->busy_fraction);
    kvs_jw_key(w, "idle_ms");
    kvs_jw_num(w, s->idle_ms);
    kvs_jw_key(w, "outlier");
    kvs_jw_str(w, s->outlier);
    kvs_jw_key(w, "category_ms");
    kvs_json_write_categories(w, s->category_ms);
    kvs_jw_obj_end(w);
}

static void write_group(struct kvs_jw *w, const struct kvs_group *g, bool have_peak)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "op");
    kvs_jw_str(w, g->op);
    kvs_jw_key(w, "kernel");
    kvs_jw_str(w, g->kernel);
    kvs_jw_key(w, "dims");
    write_dims(w, g->ntensors, g->tensor_dims);
    kvs_jw_key(w, "dtypes");
    write_dtypes(w, g->ntensors, g->tensor_dtypes);
    kvs_jw_key(w, "calls");
    kvs_jw_int(w, g->calls);
    kvs_jw_key(w, "calls_per_step");
    kvs_jw_num(w, g->calls_per_step);
    kvs_jw_key(w, "gpu_ms");
    kvs_jw_num(w, g->gpu_ms);
    kvs_jw_key(w, "gpu_fraction");
    kvs_jw_num(w, g->gpu_fraction);
    kvs_jw_key(w, "bytes_per_call");
    kvs_jw_int(w, g->bytes_per_call);
    kvs_jw_key(w, "sized_from");
    kvs_jw_str(w, g->sized_from);
    kvs_jw_key(w, "bytes_bound");
    kvs_jw_str(w, g->bytes_bound < 0 ? "at_least" : g->bytes_bound > 0 ? "at_most" : "exact");
    kvs_jw_key(w, "launch_elements");
    kvs_jw_int_pair_or_null(w, g->launch_elements_min, g->launch_elements_max,
                            g->launch_elements_max > 0);
    kvs_jw_key(w, "achieved_gbps");
    kvs_jw_num(w, g->achieved_gbps);
    kvs_jw_key(w, "efficiency");
    kvs_jw_num_or_null(w, g->efficiency, have_peak && !g->host_link);
    kvs_jw_key(w, "match");
    write_match(w, g);
    kvs_jw_obj_end(w);
}

/* one op group of the roofline table: unknown figures are null */
static void write_op(struct kvs_jw *w, const struct kvs_op_roofline *o)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "op");
    kvs_jw_str(w, o->op);
    kvs_jw_key(w, "family");
    kvs_jw_str(w, o->family);
    kvs_jw_key(w, "kernel");
    kvs_jw_str(w, o->kernel);
    kvs_jw_key(w, "dims");
    write_dims(w, o->ntensors, o->tensor_dims);
    kvs_jw_key(w, "dtypes");
    write_dtypes(w, o->ntensors, o->tensor_dtypes);
    kvs_jw_key(w, "calls");
    kvs_jw_int(w, o->calls);
    kvs_jw_key(w, "calls_per_step");
    kvs_jw_num(w, o->calls_per_step);
    kvs_jw_key(w, "gpu_ms");
    kvs_jw_num(w, o->gpu_ms);
    kvs_jw_key(w, "gpu_ms_per_step");
    kvs_jw_num(w, o->gpu_ms_per_step);
    kvs_jw_key(w, "gpu_fraction");
    kvs_jw_num(w, o->gpu_fraction);
    kvs_jw_key(w, "us_per_call");
    kvs_jw_num(w, o->us_per_call);
    kvs_jw_key(w, "bytes_per_call");
    kvs_jw_num_or_null(w, o->bytes_per_call, o->bytes_per_call > 0);
    kvs_jw_key(w, "flops_per_call");
    kvs_jw_num_or_null(w, o->flops_per_call, o->flops_per_call >= 0);
    kvs_jw_key(w, "sized_from");
    kvs_jw_str(w, o->sized_from);
    kvs_jw_key(w, "precision");
    kvs_jw_str(w, o->precision);
    kvs_jw_key(w, "achieved_gbps");
    kvs_jw_num(w, o->achieved_gbps); /* NAN -> null */
    kvs_jw_key(w, "achieved_tflops");
    kvs_jw_num(w, o->achieved_tflops);
    kvs_jw_key(w, "intensity");
    kvs_jw_num(w, o->intensity);
    kvs_jw_key(w, "peak_tflops");
    kvs_jw_num_or_null(w, o->peak_tflops, o->peak_tflops > 0);
    kvs_jw_key(w, "bound");
    kvs_jw_str(w, o->bound);
    kvs_jw_key(w, "roof_fraction");
    kvs_jw_num(w, o->roof_fraction);
    kvs_jw_obj_end(w);
}

enum kvs_status kvs_render_json_report(FILE *out, const struct kvs_analysis *a,
                                       const struct kvs_render_options *opt)
{
    (void)opt;
    struct kvs_jw w;
    kvs_jw_init(&w, out);
    kvs_json_write_report(&w, a);
    return KVS_STATUS_OK;
}

/* kvscope.engine as read: null for other traces; unknown members null */
static void write_engine(struct kvs_jw *w, const struct kvs_engine_info *e)
{
    if (!e->present) {
        kvs_jw_null(w);
        return;
    }
    kvs_jw_obj(w);
    kvs_jw_key(w, "config");
    kvs_jw_str(w, e->config);
    kvs_jw_key(w, "kv_path");
    kvs_jw_str(w, e->kv_path);
    const struct {
        const char *key;
        int64_t v;
    } ints[] = {{"batch", e->batch},   {"context", e->context}, {"kv_capacity", e->kv_capacity},
                {"layers", e->layers}, {"tp", e->tp},           {"graph", 0},
                {"steps", e->steps}}; /* the object's own order */
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        kvs_jw_key(w, ints[i].key);
        if (strcmp(ints[i].key, "graph"))
            kvs_jw_int_or_null(w, ints[i].v, ints[i].v > 0);
        else
            kvs_jw_bool_or_null(w, e->graph, e->graph >= 0);
    }
    const struct {
        const char *key;
        double v;
    } nums[] = {{"bytes_per_step", e->bytes_per_step},
                {"weight_bytes_per_step", e->weight_bytes_per_step},
                {"kv_bytes_per_step", e->kv_bytes_per_step},
                {"copy_gbps", e->copy_gbps},
                {"step_ms", e->step_ms}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        kvs_jw_key(w, nums[i].key);
        kvs_jw_num_or_null(w, nums[i].v, nums[i].v > 0);
    }
    kvs_jw_obj_end(w);
}

static void write_roofline(struct kvs_jw *w, const struct kvs_step_roofline *r)
{
    if (!r->known) {
        kvs_jw_null(w);
        return;
    }
    kvs_jw_obj(w);
    kvs_jw_key(w, "bytes_per_step");
    kvs_jw_num(w, r->bytes_per_step);
    kvs_jw_key(w, "step_ms");
    kvs_jw_num(w, r->step_ms);
    kvs_jw_key(w, "step_source");
    kvs_jw_str(w, r->step_source);
    kvs_jw_key(w, "achieved_gbps");
    kvs_jw_num(w, r->achieved_gbps);
    kvs_jw_key(w, "peak_fraction");
    kvs_jw_num(w, r->peak_fraction); /* NAN (unknown peak) -> null */
    kvs_jw_key(w, "copy_gbps");
    kvs_jw_num_or_null(w, r->copy_gbps, r->copy_gbps > 0);
    kvs_jw_key(w, "copy_fraction");
    kvs_jw_num(w, r->copy_fraction);
    kvs_jw_obj_end(w);
}

/* the trace: where it came from, its device */
static void write_trace(struct kvs_jw *w, const struct kvs_analysis *a)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "path");
    kvs_jw_str(w, a->trace.path);
    kvs_jw_key(w, "bytes");
    kvs_jw_int(w, (int64_t)a->trace.bytes);
    kvs_jw_key(w, "events");
    kvs_jw_int(w, (int64_t)a->trace.events);
    kvs_jw_key(w, "device");
    kvs_jw_str(w, a->trace.device);
    kvs_jw_key(w, "peak_gbps");
    kvs_jw_num_or_null(w, a->trace.peak_gbps, a->trace.peak_gbps > 0);
    kvs_jw_key(w, "graph_launched");
    kvs_jw_int(w, (int64_t)a->trace.graph_launched);
    kvs_jw_key(w, "capture_aligned");
    kvs_jw_int(w, (int64_t)a->trace.capture_aligned);
    kvs_jw_key(w, "with_stack");
    kvs_jw_bool(w, a->trace.with_stack);
    kvs_jw_key(w, "peak_bf16_tflops");
    kvs_jw_num_or_null(w, a->trace.peak_bf16_tflops, a->trace.peak_bf16_tflops > 0);
    kvs_jw_key(w, "peak_fp8_tflops");
    kvs_jw_num_or_null(w, a->trace.peak_fp8_tflops, a->trace.peak_fp8_tflops > 0);
    kvs_jw_obj_end(w);

}

/* the steps: their time, categories, kinds, each step, the families */
static void write_steps(struct kvs_jw *w, const struct kvs_analysis *a)
{
    kvs_jw_obj(w);
    kvs_json_write_step_figures(w, a->steps.count, a->steps.mean_ms, a->steps.gpu_ms_per_step,
                                a->steps.gpu_busy_fraction);
    kvs_jw_key(w, "source");
    kvs_jw_str(w, a->steps.source);
    kvs_jw_key(w, "mean_time_ms");
    kvs_jw_num(w, a->steps.mean_time_ms);
    kvs_jw_key(w, "tokens_per_s");
    kvs_jw_num_or_null(w, a->steps.tokens_per_s, a->steps.tokens_per_s > 0);
    kvs_jw_key(w, "category_ms");
    kvs_json_write_categories(w, a->category_ms);
    kvs_jw_key(w, "by_kind");
    kvs_jw_arr(w);
    for (size_t i = 0; a->kinds && i < a->nkind; i++)
        write_kind(w, &a->kinds[i]);
    kvs_jw_arr_end(w);
    kvs_jw_key(w, "items");
    kvs_jw_arr(w);
    for (size_t i = 0; a->step && i < a->nstep; i++)
        write_step(w, &a->step[i]);
    kvs_jw_arr_end(w);
    kvs_jw_key(w, "by_family"); /* family -> GPU ms per step, largest first */
    kvs_jw_obj(w);
    for (size_t i = 0; a->families && i < a->nfamily; i++) {
        kvs_jw_key(w, a->families[i].family);
        kvs_jw_num(w, a->families[i].gpu_ms_per_step);
    }
    kvs_jw_obj_end(w);
    kvs_jw_obj_end(w);

}

/* the kernels by GPU time */
static void write_kernels(struct kvs_jw *w, const struct kvs_analysis *a)
{
    kvs_jw_arr(w);
    for (size_t i = 0; a->kernels && i < a->nkernel; i++) {
        const struct kvs_kernel_stat *k = &a->kernels[i];
        kvs_jw_obj(w);
        kvs_jw_key(w, "name");
        kvs_jw_str(w, k->name);
        kvs_jw_key(w, "calls");
        kvs_jw_int(w, k->calls);
        kvs_jw_key(w, "gpu_ms");
        kvs_jw_num(w, k->gpu_ms);
        kvs_jw_key(w, "gpu_fraction");
        kvs_jw_num(w, k->gpu_fraction);
        kvs_jw_key(w, "category");
        kvs_jw_str(w, kvs_cat_label(k->category));
        kvs_jw_key(w, "family");
        kvs_jw_str(w, k->family);
        kvs_jw_obj_end(w);
    }
    kvs_jw_arr_end(w);

}

/* a finding's figures as one object, by name (a list: an array of objects) */
static void write_figures(struct kvs_jw *w, const struct kvs_figures *fs)
{
    kvs_jw_obj(w);
    for (size_t i = 0; fs->v && i < fs->n; i++) {
        const struct kvs_figure *f = &fs->v[i];
        kvs_jw_key(w, f->name);
        switch (f->kind) {
        case KVS_FIGURE_NUMBER:
            kvs_jw_num(w, f->number);
            break;
        case KVS_FIGURE_INTEGER:
            kvs_jw_int(w, f->integer);
            break;
        case KVS_FIGURE_BOOL:
            kvs_jw_bool(w, f->integer != 0);
            break;
        case KVS_FIGURE_STRING:
            kvs_jw_str(w, f->string);
            break;
        case KVS_FIGURE_LIST:
            kvs_jw_arr(w);
            for (size_t k = 0; f->list && k < f->nlist; k++)
                write_figures(w, &f->list[k]);
            kvs_jw_arr_end(w);
            break;
        }
    }
    kvs_jw_obj_end(w);
}

/* the findings, ranked */
static void write_findings(struct kvs_jw *w, const struct kvs_analysis *a)
{
    kvs_jw_arr(w);
    for (size_t i = 0; a->findings && i < a->nfinding; i++) {
        const struct kvs_finding *f = &a->findings[i];
        kvs_jw_obj(w);
        kvs_jw_key(w, "id");
        kvs_jw_str(w, f->id);
        kvs_jw_key(w, "severity");
        kvs_jw_str(w, kvs_severity_name(f->severity));
        kvs_jw_key(w, "message");
        kvs_jw_str(w, f->message);
        kvs_jw_key(w, "gpu_ms_per_step");
        kvs_jw_num(w, f->gpu_ms_per_step);
        kvs_jw_key(w, "bytes_per_step"); /* the struct's 0 means "not applicable" */
        kvs_jw_num_or_null(w, f->bytes_per_step, f->bytes_per_step > 0);
        kvs_jw_key(w, "evidence");
        kvs_jw_str(w, f->evidence);
        kvs_jw_key(w, "fix");
        kvs_jw_str(w, f->fix);
        if (f->capacity_tokens > 0) { /* the full-buffer findings' own figures */
            kvs_jw_key(w, "capacity_tokens");
            kvs_jw_int(w, f->capacity_tokens);
            kvs_jw_key(w, "active_tokens");
            kvs_jw_int_or_null(w, f->active_tokens, f->active_tokens > 0);
            kvs_jw_key(w, "needed_bytes_per_step");
            kvs_jw_num_or_null(w, f->needed_bytes_per_step, f->needed_bytes_per_step > 0);
            kvs_jw_key(w, "ops");
            kvs_jw_strs(w, (char *const *)f->ops, f->nops, false);
        }
        kvs_jw_key(w, "gpus");
        kvs_jw_int(w, f->gpus > 0 ? f->gpus : 1);
        kvs_jw_key(w, "figures");
        write_figures(w, &f->figures);
        kvs_jw_obj_end(w);
    }
    kvs_jw_arr_end(w);

}

void kvs_json_write_report(struct kvs_jw *w, const struct kvs_analysis *a)
{
    bool have_peak = a->trace.peak_gbps > 0;
    kvs_jw_obj_schema(w, "kvscope.report/1");

    kvs_jw_key(w, "trace");
    write_trace(w, a);

    kvs_jw_key(w, "steps");
    write_steps(w, a);

    kvs_jw_key(w, "groups");
    kvs_jw_arr(w);
    for (size_t i = 0; a->groups && i < a->ngroup; i++)
        write_group(w, &a->groups[i], have_peak);
    kvs_jw_arr_end(w);

    kvs_jw_key(w, "kernels");
    write_kernels(w, a);

    kvs_jw_key(w, "findings");
    write_findings(w, a);

    kvs_jw_key(w, "engine");
    write_engine(w, &a->engine);
    kvs_jw_key(w, "roofline");
    write_roofline(w, &a->roofline);
    kvs_jw_key(w, "ops");
    kvs_jw_arr(w);
    for (size_t i = 0; a->ops && i < a->nop; i++)
        write_op(w, &a->ops[i]);
    kvs_jw_arr_end(w);
    kvs_jw_key(w, "rank");
    kvs_json_write_rank(w, a);
    kvs_jw_obj_end(w);
}

// ----------------------------------------------------------------------------
// kvscope.compare/1

static void write_cmp_steps(struct kvs_jw *w, const struct kvs_cmp_steps *s)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "path");
    kvs_jw_str(w, s->path);
    kvs_json_write_step_figures(w, s->count, s->mean_ms, s->gpu_ms_per_step, s->gpu_busy_fraction);
    kvs_jw_key(w, "tokens_per_s");
    kvs_jw_num_or_null(w, s->tokens_per_s, s->tokens_per_s > 0);
    kvs_jw_key(w, "wall_min_ms");
    kvs_jw_num(w, s->wall_min_ms);
    kvs_jw_key(w, "wall_max_ms");
    kvs_jw_num(w, s->wall_max_ms);
    kvs_jw_obj_end(w);
}

static void write_cmp_side(struct kvs_jw *w, const struct kvs_cmp_side *s)
{
    if (!s->present) {
        kvs_jw_null(w);
        return;
    }
    kvs_jw_obj(w);
    kvs_jw_key(w, "op");
    kvs_jw_str(w, s->op);
    kvs_jw_key(w, "dims");
    write_dims(w, s->ntensors, s->tensor_dims);
    kvs_jw_key(w, "dtypes");
    write_dtypes(w, s->ntensors, (const char *const *)s->tensor_dtypes);
    kvs_jw_key(w, "groups");
    kvs_jw_int(w, s->ngroups);
    kvs_jw_key(w, "calls_per_step");
    kvs_jw_num(w, s->calls_per_step);
    kvs_jw_key(w, "gpu_ms_per_step");
    kvs_jw_num(w, s->gpu_ms_per_step);
    kvs_jw_key(w, "bytes_per_step");
    kvs_jw_num_or_null(w, s->bytes_per_step, s->bytes_known);
    kvs_jw_key(w, "achieved_gbps");
    kvs_jw_num(w, s->achieved_gbps);
    kvs_jw_key(w, "efficiency");
    kvs_jw_num(w, s->efficiency); /* NAN (unknown peak) -> null */
    kvs_jw_obj_end(w);
}

static void write_compare(struct kvs_jw *w, const struct kvs_comparison *c)
{
    kvs_jw_obj_schema(w, "kvscope.compare/1");
    kvs_jw_key(w, "before");
    write_cmp_steps(w, &c->before);
    kvs_jw_key(w, "after");
    write_cmp_steps(w, &c->after);
    kvs_jw_key(w, "groups");
    kvs_jw_arr(w);
    for (size_t i = 0; i < c->ngroup; i++) {
        const struct kvs_cmp_group *g = &c->groups[i];
        kvs_jw_obj(w);
        kvs_jw_key(w, "role");
        kvs_jw_str(w, g->role);
        kvs_jw_key(w, "before");
        write_cmp_side(w, &g->before);
        kvs_jw_key(w, "after");
        write_cmp_side(w, &g->after);
        kvs_jw_key(w, "delta");
        kvs_jw_obj(w);
        kvs_jw_key(w, "gpu_ms_per_step");
        kvs_jw_num(w, g->gpu_ms_per_step.diff);
        kvs_jw_key(w, "bytes_per_step");
        kvs_jw_num(w, g->bytes_per_step.diff);
        kvs_jw_key(w, "efficiency");
        kvs_jw_num(w, g->efficiency_diff); /* NAN -> null */
        kvs_jw_obj_end(w);
        kvs_jw_obj_end(w);
    }
    kvs_jw_arr_end(w);
    kvs_jw_key(w, "resolved");
    kvs_jw_strs(w, c->resolved, c->nresolved, true);
    kvs_jw_key(w, "new");
    kvs_jw_strs(w, c->new_ids, c->nnew, true);
    kvs_jw_key(w, "verdict");
    kvs_jw_strs(w, c->verdict, c->nverdict, false);
    if (c->gate) { /* --fail-on regression only */
        kvs_jw_key(w, "gate");
        kvs_gate_put_json(w, c->gate);
    }
    kvs_jw_obj_end(w);
}

enum kvs_status kvs_render_json_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt)
{
    (void)opt;
    struct kvs_jw w;
    kvs_jw_init(&w, out);
    write_compare(&w, c);
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// kvscope.summary/1: a baseline's comparisons, then IN SHORT's sentences and
// roofline rows as kvs_summarize computed them

enum kvs_status kvs_render_json_compare_summary(FILE *out, const struct kvs_comparison *const *cmp,
                                                size_t n, const struct kvs_summary *s)
{
    struct kvs_jw w;
    kvs_jw_init(&w, out);
    kvs_jw_obj_schema(&w, "kvscope.summary/1");
    kvs_jw_key(&w, "comparisons");
    kvs_jw_arr(&w);
    for (size_t i = 0; i < n; i++)
        write_compare(&w, cmp[i]);
    kvs_jw_arr_end(&w);
    kvs_jw_key(&w, "summary");
    kvs_jw_obj(&w);
    kvs_jw_key(&w, "bottleneck");
    kvs_jw_str(&w, s->bottleneck);
    kvs_jw_key(&w, "fixes");
    kvs_jw_strs(&w, s->fixes, s->nfix, false);
    kvs_jw_key(&w, "roofline");
    kvs_jw_str(&w, s->roofline);
    kvs_jw_key(&w, "paths");
    kvs_jw_arr(&w);
    for (size_t i = 0; i < s->npath; i++) {
        const struct kvs_summary_path *p = &s->paths[i];
        kvs_jw_obj(&w);
        kvs_jw_key(&w, "name");
        kvs_jw_str(&w, p->name);
        kvs_jw_key(&w, "step_ms");
        kvs_jw_num(&w, p->step_ms);
        kvs_jw_key(&w, "bytes_per_step");
        kvs_jw_num(&w, p->bytes_per_step);
        kvs_jw_key(&w, "achieved_gbps");
        kvs_jw_num(&w, p->achieved_gbps);
        kvs_jw_key(&w, "peak_fraction");
        kvs_jw_num(&w, p->peak_fraction); /* NAN (unknown peak) -> null */
        kvs_jw_key(&w, "copy_fraction");
        kvs_jw_num(&w, p->copy_fraction);
        kvs_jw_obj_end(&w);
    }
    kvs_jw_arr_end(&w);
    kvs_jw_obj_end(&w);
    kvs_jw_obj_end(&w);
    return KVS_STATUS_OK;
}
