/* findings.c — the ranked findings (see findings.h). Private to analyzers/. */
#include "findings.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "kvscope/kernel_name.h"
#include "dtypes.h"
#include "gemm_bound.h"
#include "group_figs.h"
#include "host_blocking.h"
#include "host_op.h"
#include "kv_read.h"
#include "match.h"
#include "steps.h"

#define LOW_EFFICIENCY 0.5     /* below this fraction of peak a group is flagged */
#define GOOD_EFFICIENCY 0.8    /* what a good copy/cast kernel reaches */
#define HIGH_SAVING_SHARE 0.1  /* of GPU busy time: a group's saving this large is high severity */
#define SPARSE_LAUNCH_US 100.0 /* idle GPU time per GPU activity above which the idle time is
                                  CPU work between launches: a launch costs ~5-20 us, an eager
                                  framework op ~10-50 us (the MLA traces: 24 us) */
#define MEMORY_BOUND_BYTES ((int64_t)32 << 20) /* per call: big enough to stream at full rate */

static int push(struct kvs_finding **v, size_t *n, size_t *cap, struct kvs_finding f)
{
    return KVS_VEC_PUSH(*v, *n, *cap, f);
}

static int full_buffer(struct kvs_ctx *c, size_t gi, struct kvs_finding **v, size_t *n, size_t *cap)
{
    const struct kvs_group_acc *g = &c->groups[gi];
    const char *opname = kvs_intern_str(&c->t.strings, g->op_name);
    /* an indexed write touches the rows its index names, not the buffer; a
     * copy that keeps the dtype reads the buffer as an attention over it
     * does: kv_full_buffer_read's (kv_read.c), with the ops reading it */
    if (!g->has_match || g->match.capacity_tokens <= 0 || g->bytes_per_call <= 0 ||
        !kvs_op_is_copy(opname) || kvs_op_is_indexed_write(opname) || kvs_findings_keeps_dtype(g))
        return 0;
    struct kvs_group_figs f;
    kvs_group_figures(c, g, &f);
    if (f.calls_per_step < 1 || f.gpu_ms_per_step <= 0)
        return 0;
    double tokens = (double)g->match.capacity_tokens;
    double bytes_step = (double)g->bytes_per_call * f.calls_per_step;
    double needed = g->active_tokens > 0 ? bytes_step * (double)g->active_tokens / tokens : 0;
    double saving = needed > 0 ? f.gpu_ms_per_step * (1.0 - needed / bytes_step) : f.gpu_ms_per_step;
    double busy = kvs_findings_step_busy_ms(c);
    const char *what = kvs_findings_is_cast(&g->shape_info) ? "casts" : "copies";
    const char *atleast = g->bytes_bound < 0 ? "at least " : "";
    char b1[32], b2[32], b3[32];
    char layer[96] = "";
    if (g->match.per_layer)
        snprintf(layer, sizeof layer, " (once per layer, %d layers%s)", c->layers,
                 c->layers_inferred ? " counted from layer ranges" : "");
    struct kvs_finding fd = {0};
    fd.id = "kv_full_buffer_cast";
    fd.gpus = kvs_gpus_of(c, g->devices);
    fd.severity = (busy > 0 && saving >= HIGH_SAVING_SHARE * busy) || f.gpu_fraction >= 0.2 ? KVS_SEV_HIGH : KVS_SEV_WARN;
    fd.gpu_ms_per_step = saving;
    fd.bytes_per_step = bytes_step;
    fd.needed_bytes_per_step = needed;
    fd.group = (int)gi;
    fd.capacity_tokens = g->match.capacity_tokens;
    fd.active_tokens = g->active_tokens;
    const char **ops = kvs_arena_alloc(&c->arena, sizeof *ops);
    if (ops && (ops[0] = kvs_findings_group_desc(c, g)) != NULL) {
        fd.ops = ops;
        fd.nops = 1;
    }
    const char *op = kvs_findings_group_name(c, g);
    if (needed > 0)
        fd.message = kvs_arena_printf(
            &c->arena,
            "%s %s the whole KV buffer (%.0f tokens) %.1f times per step%s: %s%s per step moved "
            "where the %lld active tokens need %s; %.2f ms of GPU time per step, about %.2f ms "
            "recoverable",
            op, what, tokens, f.calls_per_step, layer, atleast, kvs_findings_human_bytes(b1, sizeof b1, bytes_step),
            (long long)g->active_tokens, kvs_findings_human_bytes(b2, sizeof b2, needed), f.gpu_ms_per_step, saving);
    else
        fd.message = kvs_arena_printf(
            &c->arena,
            "%s %s the whole KV buffer (%.0f tokens) %.1f times per step%s: %s%s per step moved; "
            "%.2f ms of GPU time per step (the active token count is unknown: pass the capacity "
            "and context to size the saving)",
            op, what, tokens, f.calls_per_step, layer, atleast, kvs_findings_human_bytes(b1, sizeof b1, bytes_step),
            f.gpu_ms_per_step);
    fd.evidence = kvs_arena_printf(
        &c->arena,
        "group %s: %lld calls (%.1f per step), %s%s per call (read + written%s), %.3f ms per call, "
        "%.0f GB/s; %s%s; %.1f%% of GPU busy time",
        kvs_findings_group_desc(c, g), (long long)g->calls, f.calls_per_step, atleast,
        kvs_findings_human_bytes(b3, sizeof b3, (double)g->bytes_per_call),
        g->bytes_bound < 0 ? "; the source dtype is not in the kernel's name: 1 byte per element "
                             "counted, give --kv-dtype"
                           : "",
        g->gpu_calls ? (double)g->gpu_ns / 1e6 / (double)g->gpu_calls : 0.0, f.achieved_gbps,
        g->match.label ? g->match.label : "",
        g->active_tokens > 0 ? kvs_arena_printf(&c->arena, "; %lld active tokens seen with the same rows",
                                                (long long)g->active_tokens)
                             : "",
        100.0 * f.gpu_fraction);
    size_t src_len = 2;
    const char *src = "KV";
    if (g->shape_info.n > 1 && g->shape_info.dtype_len[1] > 0)
        src = kvs_dtype_short(g->shape_info.dtype[1], g->shape_info.dtype_len[1], &src_len);
    fd.fix = kvs_arena_printf(
        &c->arena,
        "Gather the active tokens first, then %s only them (index_select/gather on the pool, then "
        "the cast)%s. Better: an attention kernel that reads the %.*s cache directly removes the "
        "%s entirely (%.2f ms per step).",
        kvs_findings_is_cast(&g->shape_info) ? "cast" : "copy",
        needed > 0 ? kvs_arena_printf(&c->arena, ": %lld of %.0f tokens, %.2f%% of the bytes",
                                      (long long)g->active_tokens, tokens, 100.0 * needed / bytes_step)
                   : "",
        (int)src_len, src,
        kvs_findings_is_cast(&g->shape_info) ? "cast" : "copy", f.gpu_ms_per_step);
    if (!fd.message || !fd.evidence || !fd.fix)
        return -1;
    return push(v, n, cap, fd);
}

static int low_efficiency(struct kvs_ctx *c, size_t gi, struct kvs_finding **v, size_t *n, size_t *cap)
{
    const struct kvs_group_acc *g = &c->groups[gi];
    if (c->peak_gbps <= 0 || g->bytes_per_call < MEMORY_BOUND_BYTES)
        return 0; /* small copies are bound by launch latency, not bandwidth */
    if (g->bytes_bound < 0)
        return 0; /* bytes only known from below: so is the rate, which proves nothing low */
    struct kvs_group_figs f;
    kvs_group_figures(c, g, &f);
    double busy = kvs_findings_step_busy_ms(c);
    if (f.efficiency <= 0 || f.efficiency >= LOW_EFFICIENCY)
        return 0;
    if (f.gpu_ms_per_step < 0.02 || (busy > 0 && f.gpu_ms_per_step < 0.01 * busy))
        return 0; /* too small to matter */
    double saving = f.gpu_ms_per_step * (1.0 - f.efficiency / GOOD_EFFICIENCY);
    struct kvs_finding fd = {0};
    fd.id = "low_bandwidth_efficiency";
    fd.gpus = kvs_gpus_of(c, g->devices);
    fd.severity = busy > 0 && saving >= HIGH_SAVING_SHARE * busy ? KVS_SEV_HIGH : KVS_SEV_WARN;
    fd.gpu_ms_per_step = saving;
    fd.bytes_per_step = (double)g->bytes_per_call * f.calls_per_step;
    fd.group = (int)gi;
    char copy[96] = "";
    if (c->copy_gbps > 0)
        snprintf(copy, sizeof copy, ", %.0f%% of the %.0f GB/s copy rate measured on it",
                 100.0 * f.achieved_gbps / c->copy_gbps, c->copy_gbps);
    fd.message = kvs_arena_printf(
        &c->arena,
        "%s moves memory at %.0f GB/s, %.0f%% of the %s's %.0f GB/s peak%s: %.2f ms per step, "
        "about %.2f ms recoverable at %.0f%% of peak",
        kvs_findings_group_name(c, g), f.achieved_gbps, 100.0 * f.efficiency,
        c->device ? c->device : "device", c->peak_gbps, copy, f.gpu_ms_per_step, saving,
        100.0 * GOOD_EFFICIENCY);
    /* the kernel's short name: a C++ name runs to hundreds of characters
     * (the group's `kernel` keeps the full one) */
    char kernel[KVS_EVIDENCE_KERNEL_WIDTH + 1];
    kvs_short_kernel(kernel, sizeof kernel,
                     g->top_kernel ? kvs_intern_str(&c->t.strings, g->top_kernel) : "?",
                     KVS_EVIDENCE_KERNEL_WIDTH);
    fd.evidence = kvs_arena_printf(&c->arena,
                                   "group %s: %lld GPU calls, %lld bytes per call (read + written), "
                                   "%.3f ms of GPU time per call, kernel %s",
                                   kvs_findings_group_desc(c, g), (long long)g->gpu_calls, (long long)g->bytes_per_call,
                                   g->gpu_calls ? (double)g->gpu_ns / 1e6 / (double)g->gpu_calls : 0.0,
                                   kernel);
    /* the advice follows the op's dtypes: FP8 conversion advice only where
     * an FP8 tensor is converted, a cast's only where dtypes differ */
    bool fp8 = false;
    for (int k = 0; k < g->shape_info.n; k++)
        for (size_t i = 0; i + 6 <= g->shape_info.dtype_len[k] && !fp8; i++)
            fp8 = !memcmp(g->shape_info.dtype[k] + i, "Float8", 6);
    bool cast = kvs_findings_is_cast(&g->shape_info);
    bool repeat = g->shape_info.rank[0] == 5 && g->shape_info.dims[0][2] > 1; /* [B,Hkv,n_rep,S,D] */
    fd.fix = kvs_arena_strdup(
        &c->arena,
        g->full_read && repeat
            ? "This copy moves a whole preallocated KV buffer every step (kv_full_buffer_read): a faster copy "
              "is not the fix. It is repeat_kv's copy of the KV heads to every query head ([B,Hkv,n_rep,S,D]): "
              "scaled_dot_product_attention(..., enable_gqa=True) reads the KV heads as cached, no copy."
        : g->full_read
            ? "This copy moves a whole preallocated KV buffer every step (kv_full_buffer_read): a faster copy "
              "is not the fix. Copy only the active tokens, or not at all (a kernel that reads the cache as "
              "stored; MLA: absorbed attention over the cached latent)."
        : fp8 && cast ? "A memory-bound cast should run near the copy rate: use a vectorized kernel (16-byte "
                      "loads and stores; convert FP8 in pairs, e.g. cvt e4m3x2 -> f16x2 -> bf16), fuse "
                      "the conversion into the consumer, or avoid the cast."
        : cast ? "A memory-bound cast should run near the copy rate: use a vectorized kernel (16-byte "
                 "loads and stores), fuse the conversion into the consumer, or avoid the cast."
               : "A memory-bound copy should run near the copy rate: avoid it (a transpose or "
                 ".contiguous() the consumer could read strided, a copy a view would do), fuse it "
                 "into its producer or consumer, or use a vectorized copy (16-byte loads and stores).");
    if (!fd.message || !fd.evidence || !fd.fix)
        return -1;
    return push(v, n, cap, fd);
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
    if (!t->ngpus)
        return 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < t->ngpus; i++) {
        if (t->gpus[i].ts < lo)
            lo = t->gpus[i].ts;
        if (t->gpus[i].ts + t->gpus[i].dur > hi)
            hi = t->gpus[i].ts + t->gpus[i].dur;
    }
    return (double)(hi - lo) / 1e6;
}

static int gpu_idle(struct kvs_ctx *c, struct kvs_finding **v, size_t *n, size_t *cap,
                    double blocked_ms, double in_op_ms)
{
    const struct kvs_trace_data *t = &c->t;
    if (!t->ngpus)
        return 0;
    double wall_ms, busy_ms;
    size_t acts = 0;
    if (c->nsteps) {
        double w = 0;
        for (size_t i = 0; i < c->nsteps; i++) /* the GPU work's span when it outlasts the CPU range */
            w += (double)kvs_step_time_ns(c, i);
        wall_ms = w / 1e6 / (double)c->nsteps;
        busy_ms = kvs_findings_step_busy_ms(c);
    } else {
        wall_ms = gpu_span_ms(t);
        busy_ms = c->trace_busy_ns / 1e6;
    }
    /* busy is summed over the devices: of devices x the step (a model split
     * over 2 GPUs, each busy 90%, is 180% of the step, and idle neither) */
    const int nd = c->ndevices; /* at least 1 (count_devices) */
    /* a graph capture (SGLang's and vLLM's capture traces): the captured
     * kernels are not run, so an idle GPU says nothing about launches */
    if (kvs_trace_has_capture(t))
        return 0;
    /* the time the host sat in blocking calls is host_blocking's, the time
     * inside one op's CPU side host_op_bound's: what is left is the launch
     * side's */
    double host_ms = blocked_ms;
    blocked_ms += in_op_ms;
    double cap_ms = (wall_ms - blocked_ms) * nd;
    if (wall_ms <= 0 || cap_ms <= 0 || busy_ms / cap_ms >= KVS_LAUNCH_BOUND_BUSY)
        return 0;
    int64_t *durs = malloc(t->ngpus * sizeof *durs);
    if (!durs)
        return -1;
    size_t graphed = 0; /* of those, started by a CUDA/HIP graph launch */
    for (size_t i = 0; i < t->ngpus; i++)
        if (!c->nsteps || c->gpu_step[i] >= 0) {
            durs[acts++] = t->gpus[i].dur;
            graphed += c->gpu_graph[i];
        }
    double median_us = 0;
    if (acts)
        median_us = (double)kth_smallest(durs, acts, acts / 2) / 1e3;
    free(durs);
    double per_step = c->nsteps ? (double)acts / (double)c->nsteps : (double)acts;
    double frac = busy_ms / cap_ms, idle_ms = cap_ms - busy_ms;
    wall_ms -= blocked_ms; /* the step less its host-wait, from here on */
    char who[32], of[48];
    if (nd > 1) {
        snprintf(who, sizeof who, "The %d GPUs are", nd);
        snprintf(of, sizeof of, "%d x %.2f", nd, wall_ms);
    } else {
        snprintf(who, sizeof who, "The GPU is");
        snprintf(of, sizeof of, "%.2f", wall_ms);
    }
    struct kvs_finding fd = {0};
    fd.id = "gpu_idle";
    fd.gpus = nd;
    fd.severity = frac < 0.3 ? KVS_SEV_HIGH : KVS_SEV_WARN;
    fd.gpu_ms_per_step = idle_ms;
    fd.group = -1;
    double us_per_launch = per_step > 0 ? wall_ms * 1e3 / per_step : 0.0;
    /* few launches for the idle time: were launching the CPU's only work, the
     * GPU would idle less than a launch's cost per launch; no graph or fusion
     * removes the rest, the CPU is busy with something else between them */
    double idle_us_per_launch = per_step > 0 ? idle_ms * 1e3 / per_step : 0.0;
    bool sparse = per_step <= 0 || idle_us_per_launch > SPARSE_LAUNCH_US;
    char why[128];
    if (per_step > 0)
        snprintf(why, sizeof why, "%s %.0f us per launch, far more than a launch costs (~5-20 us)",
                 nd > 1 ? "they idle" : "it idles", idle_us_per_launch);
    else /* GPU work in the trace, none of it inside the steps */
        snprintf(why, sizeof why, "no GPU activity falls inside the steps");
    if (sparse)
        fd.message = kvs_arena_printf(
            &c->arena,
            "%s busy %.0f%% of %s (%.2f of %s ms) and %s on the CPU, but not on "
            "kernel launches: %s, so CPU-side work between launches (Python, data loading, host "
            "synchronisation, compilation) sets the pace; %.2f ms %s is idle",
            who, 100.0 * frac, c->nsteps ? "each step" : "the traced span", busy_ms, of,
            nd > 1 ? "wait" : "waits", why, idle_ms, c->nsteps ? "per step" : "of the span");
    else if (c->nsteps)
        fd.message = kvs_arena_printf(
            &c->arena,
            "%s busy %.0f%% of each step (%.2f of %s ms): the CPU side (kernel launches, "
            "framework overhead, synchronisation) sets the pace, so faster kernels alone will not "
            "shorten the step; %.2f ms per step is idle",
            who, 100.0 * frac, busy_ms, of, idle_ms);
    else
        fd.message = kvs_arena_printf(
            &c->arena,
            "%s busy %.0f%% of the traced span (%.2f of %s ms, first to last GPU "
            "activity): the CPU side sets the pace, so faster kernels alone will not shorten the "
            "run; %.2f ms of the span is idle",
            who, 100.0 * frac, busy_ms, of, idle_ms);
    bool graphs = acts && 2 * graphed >= acts; /* already graph-launched: no graph advice */
    char host[200] = "";
    int hl = 0;
    if (host_ms > 0)
        hl = snprintf(host, sizeof host, "; %.2f ms %s of host-wait in blocking calls not counted (host_blocking)",
                      host_ms, c->nsteps ? "per step" : "of the span");
    if (in_op_ms > 0 && hl >= 0 && (size_t)hl < sizeof host)
        snprintf(host + hl, sizeof host - (size_t)hl, "; %.2f ms %s inside one op's CPU side not counted (host_op_bound)",
                 in_op_ms, c->nsteps ? "per step" : "of the span");
    if (per_step > 0)
        fd.evidence = kvs_arena_printf(&c->arena,
                                       "%.0f GPU activities %s, median %.1f us each; one launch per "
                                       "%.1f us of %s%s%s%s",
                                       per_step, c->nsteps ? "per step" : "in the span", median_us,
                                       us_per_launch, c->nsteps ? "step time" : "the span",
                                       graphs ? kvs_arena_printf(&c->arena, "; %zu of %zu launched from CUDA graphs",
                                                                 graphed, acts)
                                              : "",
                                       host,
                                       c->t.with_stack ? "; recorded with with_stack: the profiler's "
                                                         "Python stack capture inflates CPU time"
                                                       : "");
    else
        fd.evidence = kvs_arena_printf(&c->arena, "none of the trace's %zu GPU activities runs inside a step",
                                       t->ngpus);
    fd.fix = kvs_arena_strdup(
        &c->arena,
        graphs ? "The step's GPU work is already launched from CUDA graphs: the gaps are between "
                 "them (host work between graph launches, piecewise graphs split at attention, "
                 "eager ops outside the graph): move that host work off the step, capture more of "
                 "the step in one graph, batch more sequences per step."
        : sparse ? "Find the CPU work in the gaps between GPU activities (the trace's CPU ops there): "
                 "move data loading and preprocessing off the step, avoid host synchronisation "
                 "(.item(), .cpu(), blocking copies), warm up compiled kernels before profiling; "
                 "CUDA graphs help only once the step is dense with launches."
               : "Cut launch overhead: capture the decode step in a CUDA graph "
                 "(torch.cuda.CUDAGraph, torch.compile mode=\"reduce-overhead\"), fuse "
                 "small kernels, batch more sequences per step.");
    if (!fd.message || !fd.evidence || !fd.fix)
        return -1;
    return push(v, n, cap, fd);
}

/* Communication with nothing beside it: the time collectives (the
 * communication families: NCCL/RCCL, DeepEP, NVSHMEM, all-reduce kernels)
 * run while no other GPU work does — busy less the union of the rest, per
 * step. Worth a finding when it is KVS_EXPOSED_COMM_SHARE or more of the
 * step: the rank waits in (or for) its collectives. */
static int exposed_comm(struct kvs_ctx *c, struct kvs_finding **v, size_t *n, size_t *cap)
{
    const struct kvs_trace_data *t = &c->t;
    if (!t->ngpus)
        return 0;
    double comm_ms = 0, exposed_ms = 0, wall_ms = 0;
    if (c->nsteps) {
        for (size_t i = 0; i < c->nsteps; i++) {
            double e = c->step_busy_ns[i] - c->step_compute_ns[i];
            exposed_ms += e > 0 ? e : 0;
            comm_ms += c->step_comm_ns[i];
            wall_ms += (double)kvs_step_time_ns(c, i);
        }
        exposed_ms /= 1e6 * (double)c->nsteps;
        comm_ms /= 1e6 * (double)c->nsteps;
        wall_ms /= 1e6 * (double)c->nsteps;
    } else {
        wall_ms = gpu_span_ms(t);
        double e = c->trace_busy_ns - c->trace_compute_ns;
        exposed_ms = e > 0 ? e / 1e6 : 0;
        comm_ms = c->trace_comm_ns / 1e6;
    }
    const int nd = c->ndevices;
    if (comm_ms <= 0 || wall_ms <= 0 || exposed_ms < KVS_EXPOSED_COMM_SHARE * wall_ms * nd)
        return 0;
    const char *per = c->nsteps ? "per step" : "of the span";
    struct kvs_finding fd = {0};
    fd.id = "exposed_comm";
    fd.gpus = nd;
    fd.severity = exposed_ms >= 0.5 * wall_ms * nd ? KVS_SEV_HIGH : KVS_SEV_WARN;
    fd.gpu_ms_per_step = exposed_ms;
    fd.group = -1;
    fd.message = kvs_arena_printf(
        &c->arena,
        "Communication runs with nothing beside it for %.2f ms %s (%.0f%% of %s%.2f ms): the GPU "
        "waits in (or for) its collectives instead of computing",
        exposed_ms, per, 100.0 * exposed_ms / (wall_ms * nd), nd > 1 ? kvs_arena_printf(&c->arena, "%d x ", nd) : "",
        wall_ms);
    fd.evidence = kvs_arena_printf(&c->arena,
                                   "communication kernels %.2f ms %s, %.2f ms of it overlapped by "
                                   "other GPU work",
                                   comm_ms, per, comm_ms - exposed_ms > 0 ? comm_ms - exposed_ms : 0.0);
    fd.fix = kvs_arena_strdup(
        &c->arena,
        "Overlap the collectives with computation (run them on their own stream beside independent "
        "work, split the step so the next layer's GEMMs run during the all-reduce, fuse the "
        "all-reduce into the GEMM); with several ranks, check which rank the others wait for "
        "(kvscope report RANK0 RANK1 ...).");
    if (!fd.message || !fd.evidence || !fd.fix)
        return -1;
    return push(v, n, cap, fd);
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
static int per_gpu(struct kvs_ctx *c, struct kvs_finding *v, size_t n)
{
    double step_ms;
    if (c->nsteps) {
        double w = 0;
        for (size_t i = 0; i < c->nsteps; i++)
            w += (double)kvs_step_time_ns(c, i);
        step_ms = w / 1e6 / (double)c->nsteps;
    } else {
        step_ms = gpu_span_ms(&c->t);
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
        const char *unit = c->nsteps ? "a step" : "of the span";
        if (f->gpus > 1)
            f->message = kvs_arena_printf(&c->arena, "%s; per GPU: %.2f ms %s (%d GPUs share it)%s",
                                          f->message, f->gpu_ms_per_step, unit, f->gpus,
                                          capped ? ", at most the step's time" : "");
        else
            f->message = kvs_arena_printf(&c->arena, "%s; at most the step's time: %.2f ms %s",
                                          f->message, f->gpu_ms_per_step, unit);
        if (!f->message)
            return -1;
    }
    return 0;
}

enum kvs_status kvs_findings_build(struct kvs_ctx *c, struct kvs_finding **out, size_t *nout)
{
    struct kvs_finding *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (size_t gi = 0; gi < c->ngroups && rc == 0; gi++)
        rc = full_buffer(c, gi, &v, &n, &cap);
    if (rc == 0)
        rc = kvs_kv_full_reads(c, &v, &n, &cap);
    for (size_t gi = 0; gi < c->ngroups && rc == 0; gi++)
        rc = low_efficiency(c, gi, &v, &n, &cap);
    double blocked = 0;
    if (rc == 0)
        rc = kvs_host_blocking(c, &v, &n, &cap, &blocked);
    double in_op = 0;
    if (rc == 0)
        rc = kvs_host_op_bound(c, &v, &n, &cap, &in_op);
    if (rc == 0)
        rc = gpu_idle(c, &v, &n, &cap, blocked, in_op);
    if (rc == 0)
        rc = exposed_comm(c, &v, &n, &cap);
    if (rc == 0)
        rc = kvs_gemm_bound(c, &v, &n, &cap);
    if (rc == 0)
        rc = per_gpu(c, v, n);
    if (rc != 0) {
        free(v);
        return KVS_STATUS_NO_MEMORY;
    }
    if (n)
        qsort(v, n, sizeof *v, cmp_finding);
    *out = NULL;
    *nout = n;
    if (n) {
        *out = kvs_arena_alloc(&c->arena, n * sizeof *v);
        if (!*out) {
            free(v);
            return KVS_STATUS_NO_MEMORY;
        }
        memcpy(*out, v, n * sizeof *v);
    }
    free(v);
    return KVS_STATUS_OK;
}
