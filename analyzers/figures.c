/* figures.c — a finding's figures as named fields (see figures.h).
 * Private to analyzers/. */
#include "figures.h"

#include <string.h>

#include "kvscope/check.h"

#define MAX_FIGURES 32 /* the most any figures struct has */

/* the figures of one object while they are added */
struct figs {
    struct kvs_figure v[MAX_FIGURES];
    size_t n;
};

static struct kvs_figure *add(struct figs *b, const char *name, enum kvs_figure_kind kind)
{
    struct kvs_figure *f = &b->v[b->n < MAX_FIGURES ? b->n++ : MAX_FIGURES - 1];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->kind = kind;
    return f;
}

static void num(struct figs *b, const char *name, double x)
{
    add(b, name, KVS_FIGURE_NUMBER)->number = x;
}

static void integer(struct figs *b, const char *name, int64_t x)
{
    add(b, name, KVS_FIGURE_INTEGER)->integer = x;
}

static void flag(struct figs *b, const char *name, bool x)
{
    add(b, name, KVS_FIGURE_BOOL)->integer = x;
}

static void str(struct figs *b, const char *name, const char *x)
{
    add(b, name, KVS_FIGURE_STRING)->string = x;
}

static void list(struct figs *b, const char *name, const struct kvs_figures *v, size_t n)
{
    struct kvs_figure *f = add(b, name, KVS_FIGURE_LIST);
    f->list = v;
    f->nlist = n;
}

/* b's figures into the arena as *out */
static enum kvs_status keep(struct kvs_arena *ar, const struct figs *b, struct kvs_figures *out)
{
    struct kvs_figure *v = kvs_arena_alloc(ar, (b->n ? b->n : 1) * sizeof *v);
    if (!v)
        return KVS_STATUS_NO_MEMORY;
    memcpy(v, b->v, b->n * sizeof *v);
    out->v = v;
    out->n = b->n;
    return KVS_STATUS_OK;
}

/* n bytes of s as a string of the arena (NULL when out of memory) */
static const char *span(struct kvs_arena *ar, const char *s, size_t n)
{
    char *r = kvs_arena_alloc(ar, n + 1);
    if (r)
        memcpy(r, s, n);
    return r;
}

static const char *wait_kind_name(enum kvs_wait_kind k)
{
    static const char *const names[KVS_WAIT_KIND_COUNT_] = {"none", "sync", "memcpy", "memset", "async_copy"};
    return (unsigned)k < KVS_WAIT_KIND_COUNT_ ? names[k] : "none";
}

static const char *active_from_name(enum kvs_active_from k)
{
    static const char *const names[KVS_ACTIVE_FROM_COUNT_] = {NULL, "context_option", "engine_context",
                                                              "seen_keys", "seen_rows"};
    return (unsigned)k < KVS_ACTIVE_FROM_COUNT_ ? names[k] : NULL;
}

// ----------------------------------------------------------------------------
// one per finding

enum kvs_status kvs_figures_full_buffer(struct kvs_arena *ar, const struct kvs_fig_full_buffer *f,
                                        struct kvs_finding *fd)
{
    struct figs b = {.n = 0};
    str(&b, "op", f->op);
    str(&b, "group", f->group);
    str(&b, "label", f->label);
    flag(&b, "cast", f->cast);
    flag(&b, "at_least", f->at_least);
    flag(&b, "per_layer", f->per_layer);
    integer(&b, "layers", f->layers);
    flag(&b, "layers_inferred", f->layers_inferred);
    num(&b, "tokens", f->tokens);
    num(&b, "calls_per_step", f->calls_per_step);
    num(&b, "bytes_per_step", f->bytes_per_step);
    num(&b, "needed_bytes_per_step", f->needed_bytes_per_step);
    num(&b, "gpu_ms_per_step", f->gpu_ms_per_step);
    num(&b, "saving_ms", f->saving_ms);
    num(&b, "ms_per_call", f->ms_per_call);
    num(&b, "achieved_gbps", f->achieved_gbps);
    num(&b, "gpu_fraction", f->gpu_fraction);
    integer(&b, "active_tokens", f->active_tokens);
    integer(&b, "calls", f->calls);
    integer(&b, "bytes_per_call", f->bytes_per_call);
    const char *src = span(ar, f->src, f->src_len);
    if (!src)
        return KVS_STATUS_NO_MEMORY;
    str(&b, "src", src);
    return keep(ar, &b, &fd->figures);
}

enum kvs_status kvs_figures_low_efficiency(struct kvs_arena *ar, const struct kvs_fig_low_efficiency *f,
                                           struct kvs_finding *fd)
{
    struct figs b = {.n = 0};
    str(&b, "op", f->op);
    str(&b, "group", f->group);
    str(&b, "kernel", f->kernel);
    str(&b, "device", f->device);
    num(&b, "achieved_gbps", f->achieved_gbps);
    num(&b, "efficiency", f->efficiency);
    num(&b, "peak_gbps", f->peak_gbps);
    num(&b, "copy_gbps", f->copy_gbps);
    num(&b, "gpu_ms_per_step", f->gpu_ms_per_step);
    num(&b, "saving_ms", f->saving_ms);
    num(&b, "good_efficiency", f->good_efficiency);
    num(&b, "ms_per_call", f->ms_per_call);
    integer(&b, "gpu_calls", f->gpu_calls);
    integer(&b, "bytes_per_call", f->bytes_per_call);
    flag(&b, "full_read", f->full_read);
    flag(&b, "repeat_kv", f->repeat_kv);
    flag(&b, "fp8", f->fp8);
    flag(&b, "cast", f->cast);
    return keep(ar, &b, &fd->figures);
}

enum kvs_status kvs_figures_gpu_idle(struct kvs_arena *ar, const struct kvs_fig_gpu_idle *f,
                                     struct kvs_finding *fd)
{
    struct figs b = {.n = 0};
    integer(&b, "gpus", f->gpus);
    flag(&b, "steps", f->steps);
    flag(&b, "sparse", f->sparse);
    flag(&b, "graphs", f->graphs);
    flag(&b, "with_stack", f->with_stack);
    num(&b, "busy_fraction", f->busy_fraction);
    num(&b, "busy_ms", f->busy_ms);
    num(&b, "wall_ms", f->wall_ms);
    num(&b, "idle_ms", f->idle_ms);
    num(&b, "launches_per_step", f->launches_per_step);
    num(&b, "idle_us_per_launch", f->idle_us_per_launch);
    num(&b, "us_per_launch", f->us_per_launch);
    num(&b, "median_us", f->median_us);
    num(&b, "host_wait_ms", f->host_wait_ms);
    num(&b, "in_op_ms", f->in_op_ms);
    integer(&b, "graphed", (int64_t)f->graphed);
    integer(&b, "activities", (int64_t)f->activities);
    integer(&b, "trace_activities", (int64_t)f->trace_activities);
    return keep(ar, &b, &fd->figures);
}

enum kvs_status kvs_figures_exposed_comm(struct kvs_arena *ar, const struct kvs_fig_exposed_comm *f,
                                         struct kvs_finding *fd)
{
    struct figs b = {.n = 0};
    integer(&b, "gpus", f->gpus);
    flag(&b, "steps", f->steps);
    num(&b, "exposed_ms", f->exposed_ms);
    num(&b, "comm_ms", f->comm_ms);
    num(&b, "wall_ms", f->wall_ms);
    return keep(ar, &b, &fd->figures);
}

enum kvs_status kvs_figures_host_blocking(struct kvs_arena *ar, const struct kvs_fig_host_blocking *f,
                                          struct kvs_finding *fd)
{
    struct figs b = {.n = 0};
    flag(&b, "steps", f->steps);
    num(&b, "blocked_ms", f->blocked_ms);
    num(&b, "step_ms", f->step_ms);
    str(&b, "call", f->call);
    str(&b, "kind", wait_kind_name(f->kind));
    str(&b, "main_kind", wait_kind_name(f->main_kind));
    num(&b, "call_ms", f->call_ms);
    num(&b, "call_at_ms", f->call_at_ms);
    num(&b, "call_idle_ms", f->call_idle_ms);
    integer(&b, "call_step", f->call_step);
    integer(&b, "corr", f->corr);
    integer(&b, "calls", (int64_t)f->calls);
    integer(&b, "windows_with", (int64_t)f->windows_with);
    integer(&b, "windows", (int64_t)f->windows);
    return keep(ar, &b, &fd->figures);
}

enum kvs_status kvs_figures_host_op(struct kvs_arena *ar, const struct kvs_fig_host_op *f,
                                    struct kvs_finding *fd)
{
    struct figs b = {.n = 0};
    flag(&b, "steps", f->steps);
    str(&b, "op", f->op);
    num(&b, "idle_ms", f->idle_ms);
    num(&b, "step_ms", f->step_ms);
    num(&b, "idle_ms_per_call", f->idle_ms_per_call);
    num(&b, "cpu_ms_per_call", f->cpu_ms_per_call);
    integer(&b, "calls", f->calls);
    integer(&b, "windows_with", (int64_t)f->windows_with);
    integer(&b, "windows", (int64_t)f->windows);
    return keep(ar, &b, &fd->figures);
}

enum kvs_status kvs_figures_gemm_bound(struct kvs_arena *ar, const struct kvs_fig_gemm_bound *f,
                                       struct kvs_finding *fd)
{
    struct kvs_figures *top = kvs_arena_alloc(ar, (f->ntop ? f->ntop : 1) * sizeof *top);
    if (!top)
        return KVS_STATUS_NO_MEMORY;
    for (size_t i = 0; i < f->ntop; i++) {
        const struct kvs_fig_gemm_op *o = &f->top[i];
        struct figs t = {.n = 0};
        str(&t, "op", o->op);
        num(&t, "rows", o->rows);
        num(&t, "weight_bytes", o->weight_bytes);
        num(&t, "calls_per_step", o->calls_per_step);
        num(&t, "ms_per_step", o->ms_per_step);
        num(&t, "achieved_gbps", o->achieved_gbps);
        num(&t, "roof_fraction", o->roof_fraction);
        KVS_TRY(keep(ar, &t, &top[i]));
    }
    struct figs b = {.n = 0};
    integer(&b, "shapes", (int64_t)f->shapes);
    num(&b, "calls_per_step", f->calls_per_step);
    num(&b, "max_rows", f->max_rows);
    num(&b, "ms", f->ms);
    num(&b, "busy_ms", f->busy_ms);
    num(&b, "weight_bytes", f->weight_bytes);
    num(&b, "achieved_gbps", f->achieved_gbps);
    num(&b, "peak_gbps", f->peak_gbps);
    num(&b, "max_intensity", f->max_intensity);
    num(&b, "ridge", f->ridge);
    num(&b, "saving_ms", f->saving_ms);
    str(&b, "device", f->device);
    str(&b, "precision", f->precision);
    list(&b, "top", top, f->ntop);
    return keep(ar, &b, &fd->figures);
}

enum kvs_status kvs_figures_full_read(struct kvs_arena *ar, const struct kvs_fig_full_read *f,
                                      struct kvs_finding *fd)
{
    struct kvs_figures *rd = kvs_arena_alloc(ar, (f->nreaders ? f->nreaders : 1) * sizeof *rd);
    if (!rd)
        return KVS_STATUS_NO_MEMORY;
    for (size_t i = 0; i < f->nreaders; i++) {
        const struct kvs_fig_reader *r = &f->readers[i];
        struct figs t = {.n = 0};
        str(&t, "desc", r->desc);
        str(&t, "op", r->op);
        num(&t, "calls_per_step", r->calls_per_step);
        num(&t, "bytes_per_step", r->bytes_per_step);
        num(&t, "ms_per_call", r->ms_per_call);
        num(&t, "gbps", r->gbps);
        KVS_TRY(keep(ar, &t, &rd[i]));
    }
    struct figs b = {.n = 0};
    list(&b, "readers", rd, f->nreaders);
    integer(&b, "capacity", f->capacity);
    integer(&b, "active", f->active);
    flag(&b, "mixed", f->mixed);
    str(&b, "active_from", active_from_name(f->active_from));
    num(&b, "bytes_per_step", f->bytes_per_step);
    num(&b, "needed_bytes_per_step", f->needed_bytes_per_step);
    num(&b, "gpu_ms_per_step", f->gpu_ms_per_step);
    num(&b, "saving_ms", f->saving_ms);
    num(&b, "busy_ms", f->busy_ms);
    flag(&b, "capacity_given", f->capacity_given);
    flag(&b, "capacity_attention", f->capacity_attention);
    integer(&b, "capacity_steps", f->capacity_steps);
    integer(&b, "steps", (int64_t)f->steps);
    flag(&b, "any_attention", f->any_attention);
    flag(&b, "any_copy", f->any_copy);
    flag(&b, "any_repeat", f->any_repeat);
    flag(&b, "any_expand", f->any_expand);
    return keep(ar, &b, &fd->figures);
}
