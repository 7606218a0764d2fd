/* findings.c — the ranked findings (see findings.h). Private to analyzers/. */
#include "findings.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "kvscope/check.h"
#include "kvscope/kernel_name.h"
#include "dtypes.h"
#include "gemm_bound.h"
#include "group_figs.h"
#include "host_blocking.h"
#include "host_op.h"
#include "kv_read.h"
#include "match.h"
#include "figures.h"
#include "phrase.h"
#include "steps.h"

#define LOW_EFFICIENCY 0.5     /* below this fraction of peak a group is flagged */
#define GOOD_EFFICIENCY 0.8    /* what a good copy/cast kernel reaches */
#define HIGH_SAVING_SHARE 0.1  /* of GPU busy time: a group's saving this large is high severity */
#define SPARSE_LAUNCH_US 100.0 /* idle GPU time per GPU activity above which the idle time is
                                  CPU work between launches: a launch costs ~5-20 us, an eager
                                  framework op ~10-50 us (the MLA traces: 24 us) */
#define MEMORY_BOUND_BYTES ((int64_t)32 << 20) /* per call: big enough to stream at full rate */

/* kv_full_buffer_cast of group gi; reads the groups, steps, device, model
 * facts and the step's GPUs */
static enum kvs_status full_buffer(const struct kvs_stage_in *in, size_t gi, struct kvs_arena *ar,
                                   struct kvs_finding_list *out)
{
    const struct kvs_group_acc *g = &in->groups->v[gi];
    const char *opname = kvs_intern_str(&in->t->strings, g->op_name);
    /* an indexed write touches the rows its index names, not the buffer; a
     * copy that keeps the dtype reads the buffer as an attention over it
     * does: kv_full_buffer_read's (kv_read.c), with the ops reading it */
    if (!g->has_match || g->match.capacity_tokens <= 0 || g->bytes_per_call <= 0 ||
        !kvs_op_is_copy(opname) || kvs_op_is_indexed_write(opname) || kvs_findings_keeps_dtype(g))
        return KVS_STATUS_OK;
    struct kvs_group_figs f;
    kvs_group_figures(in->steps, in->dev, g, &f);
    if (f.calls_per_step < 1 || f.gpu_ms_per_step <= 0)
        return KVS_STATUS_OK;
    double tokens = (double)g->match.capacity_tokens;
    double bytes_step = (double)g->bytes_per_call * f.calls_per_step;
    double needed = g->active_tokens > 0 ? bytes_step * (double)g->active_tokens / tokens : 0;
    double saving = needed > 0 ? f.gpu_ms_per_step * (1.0 - needed / bytes_step) : f.gpu_ms_per_step;
    double busy = kvs_findings_step_busy_ms(in->steps);
    struct kvs_finding fd = {0};
    fd.id = "kv_full_buffer_cast";
    fd.gpus = kvs_gpus_of(in->gpus, g->devices);
    fd.severity = (busy > 0 && saving >= HIGH_SAVING_SHARE * busy) || f.gpu_fraction >= 0.2 ? KVS_SEV_HIGH : KVS_SEV_WARN;
    fd.gpu_ms_per_step = saving;
    fd.bytes_per_step = bytes_step;
    fd.needed_bytes_per_step = needed;
    fd.group = (int)gi;
    fd.capacity_tokens = g->match.capacity_tokens;
    fd.active_tokens = g->active_tokens;
    const char **ops = kvs_arena_alloc(ar, sizeof *ops);
    if (ops && (ops[0] = kvs_findings_group_desc(ar, &in->t->strings, g)) != NULL) {
        fd.ops = ops;
        fd.nops = 1;
    }
    struct kvs_fig_full_buffer fig = {
        .op = kvs_findings_group_name(ar, &in->t->strings, g),
        .group = kvs_findings_group_desc(ar, &in->t->strings, g),
        .label = g->match.label,
        .cast = kvs_findings_is_cast(&g->shape_info),
        .at_least = g->bytes_bound < 0,
        .per_layer = g->match.per_layer,
        .layers = in->mf->layers,
        .layers_inferred = in->mf->layers_inferred,
        .tokens = tokens,
        .calls_per_step = f.calls_per_step,
        .bytes_per_step = bytes_step,
        .needed_bytes_per_step = needed,
        .gpu_ms_per_step = f.gpu_ms_per_step,
        .saving_ms = saving,
        .ms_per_call = g->gpu_calls ? (double)g->gpu_ns / 1e6 / (double)g->gpu_calls : 0.0,
        .achieved_gbps = f.achieved_gbps,
        .gpu_fraction = f.gpu_fraction,
        .active_tokens = g->active_tokens,
        .calls = g->calls,
        .bytes_per_call = g->bytes_per_call,
        .src = "KV",
        .src_len = 2,
    };
    if (g->shape_info.n > 1 && g->shape_info.dtype_len[1] > 0)
        fig.src = kvs_dtype_short(g->shape_info.dtype[1], g->shape_info.dtype_len[1], &fig.src_len);
    KVS_TRY(kvs_figures_full_buffer(ar, &fig, &fd));
    KVS_TRY(kvs_phrase_full_buffer(ar, &fig, &fd));
    return kvs_finding_push(out, &fd);
}

/* low_bandwidth_efficiency of group gi; reads the groups, steps, device
 * and the step's GPUs, and whether kv_full_buffer_read counted the group
 * as a copy of a whole buffer */
static enum kvs_status low_efficiency(const struct kvs_stage_in *in, size_t gi, bool full_read,
                                      struct kvs_arena *ar, struct kvs_finding_list *out)
{
    const struct kvs_group_acc *g = &in->groups->v[gi];
    if (in->dev->peak_gbps <= 0 || g->bytes_per_call < MEMORY_BOUND_BYTES)
        return KVS_STATUS_OK; /* small copies are bound by launch latency, not bandwidth */
    if (g->bytes_bound < 0)
        return KVS_STATUS_OK; /* bytes only known from below: so is the rate, which proves nothing low */
    struct kvs_group_figs f;
    kvs_group_figures(in->steps, in->dev, g, &f);
    double busy = kvs_findings_step_busy_ms(in->steps);
    if (f.efficiency <= 0 || f.efficiency >= LOW_EFFICIENCY)
        return KVS_STATUS_OK;
    if (f.gpu_ms_per_step < 0.02 || (busy > 0 && f.gpu_ms_per_step < 0.01 * busy))
        return KVS_STATUS_OK; /* too small to matter */
    double saving = f.gpu_ms_per_step * (1.0 - f.efficiency / GOOD_EFFICIENCY);
    struct kvs_finding fd = {0};
    fd.id = "low_bandwidth_efficiency";
    fd.gpus = kvs_gpus_of(in->gpus, g->devices);
    fd.severity = busy > 0 && saving >= HIGH_SAVING_SHARE * busy ? KVS_SEV_HIGH : KVS_SEV_WARN;
    fd.gpu_ms_per_step = saving;
    fd.bytes_per_step = (double)g->bytes_per_call * f.calls_per_step;
    fd.group = (int)gi;
    bool fp8 = false; /* an FP8 tensor among the op's */
    for (int k = 0; k < g->shape_info.n; k++)
        for (size_t i = 0; i + 6 <= g->shape_info.dtype_len[k] && !fp8; i++)
            fp8 = !memcmp(g->shape_info.dtype[k] + i, "Float8", 6);
    struct kvs_fig_low_efficiency fig = {
        .op = kvs_findings_group_name(ar, &in->t->strings, g),
        .group = kvs_findings_group_desc(ar, &in->t->strings, g),
        .kernel = g->top_kernel ? kvs_intern_str(&in->t->strings, g->top_kernel) : NULL,
        .device = in->dev->name,
        .achieved_gbps = f.achieved_gbps,
        .efficiency = f.efficiency,
        .peak_gbps = in->dev->peak_gbps,
        .copy_gbps = in->dev->copy_gbps > 0 ? in->dev->copy_gbps : 0,
        .gpu_ms_per_step = f.gpu_ms_per_step,
        .saving_ms = saving,
        .good_efficiency = GOOD_EFFICIENCY,
        .ms_per_call = g->gpu_calls ? (double)g->gpu_ns / 1e6 / (double)g->gpu_calls : 0.0,
        .gpu_calls = g->gpu_calls,
        .bytes_per_call = g->bytes_per_call,
        .full_read = full_read,
        .repeat_kv = g->shape_info.rank[0] == 5 && g->shape_info.dims[0][2] > 1, /* [B,Hkv,n_rep,S,D] */
        .fp8 = fp8,
        .cast = kvs_findings_is_cast(&g->shape_info),
    };
    KVS_TRY(kvs_figures_low_efficiency(ar, &fig, &fd));
    KVS_TRY(kvs_phrase_low_efficiency(ar, &fig, &fd));
    return kvs_finding_push(out, &fd);
}

/* the k-th smallest of v[0..n) (quickselect; reorders v) */
static int64_t kth_smallest(int64_t *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                int64_t tmp = v[i];
                v[i] = v[j];
                v[j] = tmp;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* first GPU activity's start to the last one's end; 0 without any */
static double gpu_span_ms(const struct kvs_trace_data *t)
{
    if (!t->gpus.n)
        return 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < t->gpus.n; i++) {
        if (kvs_gpu_get(t, i).ts < lo)
            lo = kvs_gpu_get(t, i).ts;
        if (kvs_gpu_get(t, i).ts + kvs_gpu_get(t, i).dur > hi)
            hi = kvs_gpu_get(t, i).ts + kvs_gpu_get(t, i).dur;
    }
    return (double)(hi - lo) / 1e6;
}

/* the mean step time and GPU busy time (ms), over the traced span without steps */
static void step_times(const struct kvs_stage_in *in, double *wall_ms, double *busy_ms)
{
    if (in->steps->n) {
        double w = 0;
        for (size_t i = 0; i < in->steps->n; i++) /* the GPU work's span when it outlasts the CPU range */
            w += (double)kvs_step_time_ns(in->steps, i);
        *wall_ms = w / 1e6 / (double)in->steps->n;
        *busy_ms = kvs_findings_step_busy_ms(in->steps);
    } else {
        *wall_ms = gpu_span_ms(in->t);
        *busy_ms = in->steps->trace_busy_ns / 1e6;
    }
}

/* the GPU activities the idle time is spread over: how many (in steps), how
 * many a graph launch started, their median length */
static enum kvs_status launches(const struct kvs_stage_in *in, size_t *acts, size_t *graphed, double *median_us)
{
    const struct kvs_trace_data *t = in->t;
    int64_t *durs = malloc(t->gpus.n * sizeof *durs);
    if (!durs)
        return KVS_STATUS_NO_MEMORY;
    *acts = *graphed = 0;
    for (size_t i = 0; i < t->gpus.n; i++)
        if (!in->steps->n || in->act->v[i].step >= 0) {
            durs[(*acts)++] = kvs_gpu_get(t, i).dur;
            *graphed += in->act->v[i].graph ? 1 : 0;
        }
    *median_us = *acts ? (double)kth_smallest(durs, *acts, *acts / 2) / 1e3 : 0;
    free(durs);
    return KVS_STATUS_OK;
}

/* gpu_idle, less the host-wait and in-op time the host findings took;
 * reads the records, activities, steps and the step's GPUs */
static enum kvs_status gpu_idle(const struct kvs_stage_in *in, double blocked_ms, double in_op_ms,
                                struct kvs_arena *ar, struct kvs_finding_list *out)
{
    const struct kvs_trace_data *t = in->t;
    if (!t->gpus.n)
        return KVS_STATUS_OK;
    double wall_ms, busy_ms;
    step_times(in, &wall_ms, &busy_ms);
    /* busy is summed over the devices: of devices x the step (a model split
     * over 2 GPUs, each busy 90%, is 180% of the step, and idle neither) */
    const int nd = in->gpus->n; /* at least 1 (count_devices) */
    /* a graph capture (SGLang's and vLLM's capture traces): the captured
     * kernels are not run, so an idle GPU says nothing about launches */
    if (kvs_trace_has_capture(t))
        return KVS_STATUS_OK;
    /* the time the host sat in blocking calls is host_blocking's, the time
     * inside one op's CPU side host_op_bound's: what is left is the launch
     * side's */
    double host_ms = blocked_ms;
    blocked_ms += in_op_ms;
    double cap_ms = (wall_ms - blocked_ms) * nd;
    if (wall_ms <= 0 || cap_ms <= 0 || busy_ms / cap_ms >= KVS_LAUNCH_BOUND_BUSY)
        return KVS_STATUS_OK;
    size_t acts, graphed; /* of those, started by a CUDA/HIP graph launch */
    double median_us;
    KVS_TRY(launches(in, &acts, &graphed, &median_us));
    double per_step = in->steps->n ? (double)acts / (double)in->steps->n : (double)acts;
    double frac = busy_ms / cap_ms, idle_ms = cap_ms - busy_ms;
    wall_ms -= blocked_ms; /* the step less its host-wait, from here on */
    struct kvs_finding fd = {0};
    fd.id = "gpu_idle";
    fd.gpus = nd;
    fd.severity = frac < 0.3 ? KVS_SEV_HIGH : KVS_SEV_WARN;
    fd.gpu_ms_per_step = idle_ms;
    fd.group = -1;
    /* few launches for the idle time: were launching the CPU's only work, the
     * GPU would idle less than a launch's cost per launch; no graph or fusion
     * removes the rest, the CPU is busy with something else between them */
    double idle_us_per_launch = per_step > 0 ? idle_ms * 1e3 / per_step : 0.0;
    struct kvs_fig_gpu_idle fig = {
        .gpus = nd,
        .steps = in->steps->n > 0,
        .sparse = per_step <= 0 || idle_us_per_launch > SPARSE_LAUNCH_US,
        .graphs = acts && 2 * graphed >= acts, /* already graph-launched: no graph advice */
        .with_stack = in->t->with_stack,
        .busy_fraction = frac,
        .busy_ms = busy_ms,
        .wall_ms = wall_ms,
        .idle_ms = idle_ms,
        .launches_per_step = per_step,
        .idle_us_per_launch = idle_us_per_launch,
        .us_per_launch = per_step > 0 ? wall_ms * 1e3 / per_step : 0.0,
        .median_us = median_us,
        .host_wait_ms = host_ms,
        .in_op_ms = in_op_ms,
        .graphed = graphed,
        .activities = acts,
        .trace_activities = t->gpus.n,
    };
    KVS_TRY(kvs_figures_gpu_idle(ar, &fig, &fd));
    KVS_TRY(kvs_phrase_gpu_idle(ar, &fig, &fd));
    return kvs_finding_push(out, &fd);
}

/* Communication with nothing beside it: the time collectives (the
 * communication families: NCCL/RCCL, DeepEP, NVSHMEM, all-reduce kernels)
 * run while no other GPU work does — busy less the union of the rest, per
 * step. Worth a finding when it is KVS_EXPOSED_COMM_SHARE or more of the
 * step: the rank waits in (or for) its collectives. */
static enum kvs_status exposed_comm(const struct kvs_stage_in *in, struct kvs_arena *ar,
                                    struct kvs_finding_list *out)
{
    const struct kvs_trace_data *t = in->t;
    if (!t->gpus.n)
        return KVS_STATUS_OK;
    double comm_ms = 0, exposed_ms = 0, wall_ms = 0;
    if (in->steps->n) {
        for (size_t i = 0; i < in->steps->n; i++) {
            double e = in->steps->busy_ns[i] - in->steps->compute_ns[i];
            exposed_ms += e > 0 ? e : 0;
            comm_ms += in->steps->comm_ns[i];
            wall_ms += (double)kvs_step_time_ns(in->steps, i);
        }
        exposed_ms /= 1e6 * (double)in->steps->n;
        comm_ms /= 1e6 * (double)in->steps->n;
        wall_ms /= 1e6 * (double)in->steps->n;
    } else {
        wall_ms = gpu_span_ms(t);
        double e = in->steps->trace_busy_ns - in->steps->trace_compute_ns;
        exposed_ms = e > 0 ? e / 1e6 : 0;
        comm_ms = in->steps->trace_comm_ns / 1e6;
    }
    const int nd = in->gpus->n;
    if (comm_ms <= 0 || wall_ms <= 0 || exposed_ms < KVS_EXPOSED_COMM_SHARE * wall_ms * nd)
        return KVS_STATUS_OK;
    struct kvs_finding fd = {0};
    fd.id = "exposed_comm";
    fd.gpus = nd;
    fd.severity = exposed_ms >= 0.5 * wall_ms * nd ? KVS_SEV_HIGH : KVS_SEV_WARN;
    fd.gpu_ms_per_step = exposed_ms;
    fd.group = -1;
    struct kvs_fig_exposed_comm fig = {nd, in->steps->n > 0, exposed_ms, comm_ms, wall_ms};
    KVS_TRY(kvs_figures_exposed_comm(ar, &fig, &fd));
    KVS_TRY(kvs_phrase_exposed_comm(ar, &fig, &fd));
    return kvs_finding_push(out, &fd);
}

static int cmp_finding(const void *a, const void *b)
{
    const struct kvs_finding *x = a, *y = b;
    if (x->gpu_ms_per_step != y->gpu_ms_per_step)
        return x->gpu_ms_per_step > y->gpu_ms_per_step ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* Every figure per GPU and within the step: a culprit's GPU time summed over
 * the several GPUs it ran on (one process driving a model split over GPUs)
 * is divided by their number, and no figure exceeds the mean step time (the
 * traced span without steps) — a recoverable time longer than the step it
 * is recovered from would be a sum, not a saving. The message says so. */
static enum kvs_status per_gpu(const struct kvs_stage_in *in, struct kvs_arena *ar, struct kvs_finding *v, size_t n)
{
    double step_ms;
    if (in->steps->n) {
        double w = 0;
        for (size_t i = 0; i < in->steps->n; i++)
            w += (double)kvs_step_time_ns(in->steps, i);
        step_ms = w / 1e6 / (double)in->steps->n;
    } else {
        step_ms = gpu_span_ms(in->t);
    }
    for (size_t i = 0; i < n; i++) {
        struct kvs_finding *f = &v[i];
        if (f->gpus < 1)
            f->gpus = 1;
        double per = f->gpu_ms_per_step / f->gpus;
        bool capped = step_ms > 0 && per > step_ms;
        if (f->gpus == 1 && !capped)
            continue;
        f->gpu_ms_per_step = capped ? step_ms : per;
        KVS_TRY(kvs_phrase_per_gpu(ar, in->steps->n > 0, capped, f));
    }
    return KVS_STATUS_OK;
}

/* The detectors in order: host_blocking's and host_op_bound's time is left
 * out of gpu_idle's, kv_full_buffer_read's copies are named in
 * low_bandwidth_efficiency's fix. */
static enum kvs_status detect(const struct kvs_stage_in *in, struct kvs_arena *ar, bool *full_read,
                              struct kvs_finding_list *l)
{
    double blocked = 0, in_op = 0;
    for (size_t gi = 0; gi < in->groups->n; gi++)
        KVS_TRY(full_buffer(in, gi, ar, l));
    KVS_TRY(kvs_kv_full_reads(in, ar, l, full_read));
    for (size_t gi = 0; gi < in->groups->n; gi++)
        KVS_TRY(low_efficiency(in, gi, full_read[gi], ar, l));
    KVS_TRY(kvs_host_blocking(in->t, in->steps, ar, l, &blocked));
    KVS_TRY(kvs_host_op_bound(in->t, in->steps, ar, l, &in_op));
    KVS_TRY(gpu_idle(in, blocked, in_op, ar, l));
    KVS_TRY(exposed_comm(in, ar, l));
    KVS_TRY(kvs_gemm_bound(in, ar, l));
    return per_gpu(in, ar, l->v, l->n);
}

enum kvs_status kvs_findings_build(const struct kvs_stage_in *in, struct kvs_arena *ar, struct kvs_finding **out,
                                   size_t *nout)
{
    struct kvs_finding_list l = {0};
    *out = NULL;
    *nout = 0;
    bool *full_read = calloc(in->groups->n ? in->groups->n : 1, sizeof *full_read);
    enum kvs_status st = full_read ? detect(in, ar, full_read, &l) : KVS_STATUS_NO_MEMORY;
    free(full_read);
    if (st == KVS_STATUS_OK && l.n) {
        qsort(l.v, l.n, sizeof *l.v, cmp_finding);
        struct kvs_finding *v = kvs_arena_alloc(ar, l.n * sizeof *l.v);
        if (v) {
            memcpy(v, l.v, l.n * sizeof *l.v);
            *out = v;
            *nout = l.n;
        } else {
            st = KVS_STATUS_NO_MEMORY;
        }
    }
    free(l.v);
    return st;
}
