/* phrase.c — the words of every finding and the names sentences use, from
 * the figures the detectors computed (see phrase.h). The only file of
 * analyzers/ that writes English into the arena (tests/test_code_rules.py
 * holds it to that). Private to analyzers/. */
#include "phrase.h"

#include <stdio.h>
#include <string.h>

#include "dtypes.h"
#include "kvscope/kernel_name.h"
#include "kvscope/units.h"

#define KVS_EVIDENCE_KERNEL_WIDTH 72 /* columns of a kernel's name in a sentence */
#define MAX_READERS_LISTED 8         /* ops kv_full_buffer_read names in its message; its ops list has them all */

static enum kvs_status done(const struct kvs_finding *fd)
{
    return fd->message && fd->evidence && fd->fix ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

// ----------------------------------------------------------------------------
// the words findings share

const char *kvs_findings_human_bytes(char *buf, size_t n, double b)
{
    if (b >= 1e9)
        snprintf(buf, n, "%.2f GB", b / 1e9);
    else if (b >= 1e6)
        snprintf(buf, n, "%.1f MB", b / 1e6);
    else if (b >= 1e3)
        snprintf(buf, n, "%.1f kB", b / 1e3);
    else
        snprintf(buf, n, "%.0f B", b);
    return buf;
}

/* a group's name in a sentence: its op, or for an activity no op launched
 * the kernel's short name (a C++ name runs to hundreds of characters) */
const char *kvs_findings_group_name(struct kvs_arena *ar, const struct kvs_intern *strings,
                                    const struct kvs_group_acc *g)
{
    const char *op = kvs_intern_str(strings, g->op_name);
    if (!g->bare)
        return op;
    char buf[KVS_EVIDENCE_KERNEL_WIDTH + 1];
    kvs_short_kernel(buf, sizeof buf, op, KVS_EVIDENCE_KERNEL_WIDTH);
    const char *r = kvs_arena_strdup(ar, buf);
    return r ? r : op;
}

const char *kvs_findings_group_desc(struct kvs_arena *ar, const struct kvs_intern *strings,
                                    const struct kvs_group_acc *g)
{
    const char *op = kvs_findings_group_name(ar, strings, g);
    const struct kvs_shape *s = &g->shape_info;
    if (g->launch_sized && s->n > 0) {
        size_t a, b;
        const char *x = kvs_dtype_short(s->dtype[0], s->dtype_len[0], &a);
        const char *y = kvs_dtype_short(s->dtype[1], s->dtype_len[1], &b);
        return kvs_arena_printf(ar, "%s [%lld x %lld elements, from grid x block] %.*s<-%.*s", op,
                                (long long)s->dims[0][0], (long long)s->dims[0][1], (int)a, x,
                                b ? (int)b : 1, b ? y : "?");
    }
    if (g->bare || s->n == 0)
        return op;
    char dims[200];
    size_t n = 0;
    for (int k = 0; k < s->n && n < sizeof dims - 40; k++) {
        n += (size_t)snprintf(dims + n, sizeof dims - n, "%s[", k ? "," : "");
        int rank = s->rank[k] < KVS_SHAPE_MAX_RANK ? s->rank[k] : KVS_SHAPE_MAX_RANK;
        for (int i = 0; i < rank && n < sizeof dims - 24; i++)
            n += (size_t)snprintf(dims + n, sizeof dims - n, "%s%lld", i ? "," : "", (long long)s->dims[k][i]);
        n += (size_t)snprintf(dims + n, sizeof dims - n, "]");
    }
    char types[200];
    size_t m = 0;
    types[0] = 0;
    for (int k = 0; k < s->n && m < sizeof types - 40; k++) {
        size_t l;
        const char *d = kvs_dtype_short(s->dtype[k], s->dtype_len[k], &l);
        m += (size_t)snprintf(types + m, sizeof types - m, "%s%.*s", k ? "<-" : "", (int)(l > 32 ? 32 : l), d);
    }
    return kvs_arena_printf(ar, "%s [%s] %s", op, dims, types);
}

// ----------------------------------------------------------------------------
// kv_full_buffer_cast, low_bandwidth_efficiency

enum kvs_status kvs_phrase_full_buffer(struct kvs_arena *ar, const struct kvs_fig_full_buffer *f,
                                       struct kvs_finding *fd)
{
    const char *what = f->cast ? "casts" : "copies";
    const char *atleast = f->at_least ? "at least " : "";
    char b1[32], b2[32], b3[32];
    char layer[96] = "";
    if (f->per_layer)
        snprintf(layer, sizeof layer, " (once per layer, %d layers%s)", f->layers,
                 f->layers_inferred ? " counted from layer ranges" : "");
    double needed = f->needed_bytes_per_step, bytes_step = f->bytes_per_step;
    if (needed > 0)
        fd->message = kvs_arena_printf(
            ar,
            "%s %s the whole KV buffer (%.0f tokens) %.1f times per step%s: %s%s per step moved "
            "where the %lld active tokens need %s; %.2f ms of GPU time per step, about %.2f ms "
            "recoverable",
            f->op, what, f->tokens, f->calls_per_step, layer, atleast, kvs_findings_human_bytes(b1, sizeof b1, bytes_step),
            (long long)f->active_tokens, kvs_findings_human_bytes(b2, sizeof b2, needed), f->gpu_ms_per_step,
            f->saving_ms);
    else
        fd->message = kvs_arena_printf(
            ar,
            "%s %s the whole KV buffer (%.0f tokens) %.1f times per step%s: %s%s per step moved; "
            "%.2f ms of GPU time per step (the active token count is unknown: pass the capacity "
            "and context to size the saving)",
            f->op, what, f->tokens, f->calls_per_step, layer, atleast, kvs_findings_human_bytes(b1, sizeof b1, bytes_step),
            f->gpu_ms_per_step);
    fd->evidence = kvs_arena_printf(
        ar,
        "group %s: %lld calls (%.1f per step), %s%s per call (read + written%s), %.3f ms per call, "
        "%.0f GB/s; %s%s; %.1f%% of GPU busy time",
        f->group, (long long)f->calls, f->calls_per_step, atleast,
        kvs_findings_human_bytes(b3, sizeof b3, (double)f->bytes_per_call),
        f->at_least ? "; the source dtype is not in the kernel's name: 1 byte per element "
                      "counted, give --kv-dtype"
                    : "",
        f->ms_per_call, f->achieved_gbps, f->label ? f->label : "",
        f->active_tokens > 0 ? kvs_arena_printf(ar, "; %lld active tokens seen with the same rows",
                                                (long long)f->active_tokens)
                             : "",
        100.0 * f->gpu_fraction);
    fd->fix = kvs_arena_printf(
        ar,
        "Gather the active tokens first, then %s only them (index_select/gather on the pool, then "
        "the cast)%s. Better: an attention kernel that reads the %.*s cache directly removes the "
        "%s entirely (%.2f ms per step).",
        f->cast ? "cast" : "copy",
        needed > 0 ? kvs_arena_printf(ar, ": %lld of %.0f tokens, %.2f%% of the bytes",
                                      (long long)f->active_tokens, f->tokens, 100.0 * needed / bytes_step)
                   : "",
        (int)f->src_len, f->src, f->cast ? "cast" : "copy", f->gpu_ms_per_step);
    return done(fd);
}

static const char *low_efficiency_fix(const struct kvs_fig_low_efficiency *f)
{
    return f->full_read && f->repeat_kv
               ? "This copy moves a whole preallocated KV buffer every step (kv_full_buffer_read): a faster copy "
                 "is not the fix. It is repeat_kv's copy of the KV heads to every query head ([B,Hkv,n_rep,S,D]): "
                 "scaled_dot_product_attention(..., enable_gqa=True) reads the KV heads as cached, no copy."
           : f->full_read
               ? "This copy moves a whole preallocated KV buffer every step (kv_full_buffer_read): a faster copy "
                 "is not the fix. Copy only the active tokens, or not at all (a kernel that reads the cache as "
                 "stored; MLA: absorbed attention over the cached latent)."
           : f->fp8 && f->cast ? "A memory-bound cast should run near the copy rate: use a vectorized kernel (16-byte "
                                 "loads and stores; convert FP8 in pairs, e.g. cvt e4m3x2 -> f16x2 -> bf16), fuse "
                                 "the conversion into the consumer, or avoid the cast."
           : f->cast ? "A memory-bound cast should run near the copy rate: use a vectorized kernel (16-byte "
                       "loads and stores), fuse the conversion into the consumer, or avoid the cast."
                     : "A memory-bound copy should run near the copy rate: avoid it (a transpose or "
                       ".contiguous() the consumer could read strided, a copy a view would do), fuse it "
                       "into its producer or consumer, or use a vectorized copy (16-byte loads and stores).";
}

enum kvs_status kvs_phrase_low_efficiency(struct kvs_arena *ar, const struct kvs_fig_low_efficiency *f,
                                          struct kvs_finding *fd)
{
    char copy[96] = "";
    if (f->copy_gbps > 0)
        snprintf(copy, sizeof copy, ", %.0f%% of the %.0f GB/s copy rate measured on it",
                 100.0 * f->achieved_gbps / f->copy_gbps, f->copy_gbps);
    fd->message = kvs_arena_printf(
        ar,
        "%s moves memory at %.0f GB/s, %.0f%% of the %s's %.0f GB/s peak%s: %.2f ms per step, "
        "about %.2f ms recoverable at %.0f%% of peak",
        f->op, f->achieved_gbps, 100.0 * f->efficiency, f->device ? f->device : "device", f->peak_gbps,
        copy, f->gpu_ms_per_step, f->saving_ms, 100.0 * f->good_efficiency);
    /* the kernel's short name: a C++ name runs to hundreds of characters
     * (the group's `kernel` keeps the full one) */
    char kernel[KVS_EVIDENCE_KERNEL_WIDTH + 1];
    kvs_short_kernel(kernel, sizeof kernel, f->kernel ? f->kernel : "?", KVS_EVIDENCE_KERNEL_WIDTH);
    fd->evidence = kvs_arena_printf(ar,
                                    "group %s: %lld GPU calls, %lld bytes per call (read + written), "
                                    "%.3f ms of GPU time per call, kernel %s",
                                    f->group, (long long)f->gpu_calls, (long long)f->bytes_per_call,
                                    f->ms_per_call, kernel);
    /* the advice follows the op's dtypes: FP8 conversion advice only where
     * an FP8 tensor is converted, a cast's only where dtypes differ */
    fd->fix = kvs_arena_strdup(ar, low_efficiency_fix(f));
    return done(fd);
}

// ----------------------------------------------------------------------------
// gpu_idle, exposed_comm

static const char *gpu_idle_message(struct kvs_arena *ar, const struct kvs_fig_gpu_idle *f)
{
    const int nd = f->gpus;
    char who[32], of[48];
    if (nd > 1) {
        snprintf(who, sizeof who, "The %d GPUs are", nd);
        snprintf(of, sizeof of, "%d x %.2f", nd, f->wall_ms);
    } else {
        snprintf(who, sizeof who, "The GPU is");
        snprintf(of, sizeof of, "%.2f", f->wall_ms);
    }
    char why[128];
    if (f->launches_per_step > 0)
        snprintf(why, sizeof why, "%s %.0f us per launch, far more than a launch costs (~5-20 us)",
                 nd > 1 ? "they idle" : "it idles", f->idle_us_per_launch);
    else /* GPU work in the trace, none of it inside the steps */
        snprintf(why, sizeof why, "no GPU activity falls inside the steps");
    double pct = 100.0 * f->busy_fraction;
    if (f->sparse)
        return kvs_arena_printf(
            ar,
            "%s busy %.0f%% of %s (%.2f of %s ms) and %s on the CPU, but not on "
            "kernel launches: %s, so CPU-side work between launches (Python, data loading, host "
            "synchronisation, compilation) sets the pace; %.2f ms %s is idle",
            who, pct, f->steps ? "each step" : "the traced span", f->busy_ms, of,
            nd > 1 ? "wait" : "waits", why, f->idle_ms, f->steps ? "per step" : "of the span");
    if (f->steps)
        return kvs_arena_printf(
            ar,
            "%s busy %.0f%% of each step (%.2f of %s ms): the CPU side (kernel launches, "
            "framework overhead, synchronisation) sets the pace, so faster kernels alone will not "
            "shorten the step; %.2f ms per step is idle",
            who, pct, f->busy_ms, of, f->idle_ms);
    return kvs_arena_printf(
        ar,
        "%s busy %.0f%% of the traced span (%.2f of %s ms, first to last GPU "
        "activity): the CPU side sets the pace, so faster kernels alone will not shorten the "
        "run; %.2f ms of the span is idle",
        who, pct, f->busy_ms, of, f->idle_ms);
}

static const char *gpu_idle_evidence(struct kvs_arena *ar, const struct kvs_fig_gpu_idle *f)
{
    if (f->launches_per_step <= 0)
        return kvs_arena_printf(ar, "none of the trace's %zu GPU activities runs inside a step",
                                f->trace_activities);
    char host[200] = "";
    int hl = 0;
    if (f->host_wait_ms > 0)
        hl = snprintf(host, sizeof host, "; %.2f ms %s of host-wait in blocking calls not counted (host_blocking)",
                      f->host_wait_ms, f->steps ? "per step" : "of the span");
    if (f->in_op_ms > 0 && hl >= 0 && (size_t)hl < sizeof host)
        snprintf(host + hl, sizeof host - (size_t)hl, "; %.2f ms %s inside one op's CPU side not counted (host_op_bound)",
                 f->in_op_ms, f->steps ? "per step" : "of the span");
    return kvs_arena_printf(ar,
                            "%.0f GPU activities %s, median %.1f us each; one launch per "
                            "%.1f us of %s%s%s%s",
                            f->launches_per_step, f->steps ? "per step" : "in the span", f->median_us,
                            f->us_per_launch, f->steps ? "step time" : "the span",
                            f->graphs ? kvs_arena_printf(ar, "; %zu of %zu launched from CUDA graphs",
                                                         f->graphed, f->activities)
                                      : "",
                            host,
                            f->with_stack ? "; recorded with with_stack: the profiler's "
                                            "Python stack capture inflates CPU time"
                                          : "");
}

enum kvs_status kvs_phrase_gpu_idle(struct kvs_arena *ar, const struct kvs_fig_gpu_idle *f,
                                    struct kvs_finding *fd)
{
    fd->message = gpu_idle_message(ar, f);
    fd->evidence = gpu_idle_evidence(ar, f);
    fd->fix = kvs_arena_strdup(
        ar,
        f->graphs ? "The step's GPU work is already launched from CUDA graphs: the gaps are between "
                    "them (host work between graph launches, piecewise graphs split at attention, "
                    "eager ops outside the graph): move that host work off the step, capture more of "
                    "the step in one graph, batch more sequences per step."
        : f->sparse ? "Find the CPU work in the gaps between GPU activities (the trace's CPU ops there): "
                      "move data loading and preprocessing off the step, avoid host synchronisation "
                      "(.item(), .cpu(), blocking copies), warm up compiled kernels before profiling; "
                      "CUDA graphs help only once the step is dense with launches."
                    : "Cut launch overhead: capture the decode step in a CUDA graph "
                      "(torch.cuda.CUDAGraph, torch.compile mode=\"reduce-overhead\"), fuse "
                      "small kernels, batch more sequences per step.");
    return done(fd);
}

enum kvs_status kvs_phrase_exposed_comm(struct kvs_arena *ar, const struct kvs_fig_exposed_comm *f,
                                        struct kvs_finding *fd)
{
    const char *per = f->steps ? "per step" : "of the span";
    const int nd = f->gpus;
    fd->message = kvs_arena_printf(
        ar,
        "Communication runs with nothing beside it for %.2f ms %s (%.0f%% of %s%.2f ms): the GPU "
        "waits in (or for) its collectives instead of computing",
        f->exposed_ms, per, 100.0 * f->exposed_ms / (f->wall_ms * nd),
        nd > 1 ? kvs_arena_printf(ar, "%d x ", nd) : "", f->wall_ms);
    fd->evidence = kvs_arena_printf(ar,
                                    "communication kernels %.2f ms %s, %.2f ms of it overlapped by "
                                    "other GPU work",
                                    f->comm_ms, per,
                                    f->comm_ms - f->exposed_ms > 0 ? f->comm_ms - f->exposed_ms : 0.0);
    fd->fix = kvs_arena_strdup(
        ar,
        "Overlap the collectives with computation (run them on their own stream beside independent "
        "work, split the step so the next layer's GEMMs run during the all-reduce, fuse the "
        "all-reduce into the GEMM); with several ranks, check which rank the others wait for "
        "(kvscope report RANK0 RANK1 ...).");
    return done(fd);
}

// ----------------------------------------------------------------------------
// host_blocking, host_op_bound

static const char *what_of(enum kvs_wait_kind k)
{
    switch (k) {
    case KVS_WAIT_SYNC: return "a synchronize";
    case KVS_WAIT_MEMCPY: return "a synchronous copy";
    case KVS_WAIT_MEMSET: return "a synchronous memset";
    case KVS_WAIT_ASYNC_COPY: return "an async copy that blocked the host: pageable host memory";
    case KVS_WAIT_NONE:
    case KVS_WAIT_KIND_COUNT_: break;
    }
    return "a call";
}

static const char *wait_fix(enum kvs_wait_kind k)
{
    if (k == KVS_WAIT_SYNC)
        return "Take the synchronisation out of the step (torch.cuda.synchronize(), "
               "stream/event synchronize): wait only where the host needs a result, and launch the "
               "next step's work before waiting for this one's.";
    if (k == KVS_WAIT_ASYNC_COPY)
        return "An async copy blocks the host when the host side is pageable memory: pin it "
               "(DataLoader(pin_memory=True), tensor.pin_memory()) and copy with non_blocking=True; "
               "for a read of a GPU value (.item(), .tolist(), .cpu()) keep it on the GPU or read it "
               "a step later.";
    if (k == KVS_WAIT_MEMSET)
        return "Use an asynchronous memset on the step's stream (cudaMemsetAsync, tensor.zero_()) "
               "instead of a synchronous one.";
    return "Keep the value on the GPU: no .item(), .tolist() or .cpu() of a GPU tensor on the step's "
           "critical path (each waits for all queued work, then copies); where the host needs it, "
           "copy into pinned memory with non_blocking=True and read it a step later, or overlap "
           "the copy with the next step's launches.";
}

enum kvs_status kvs_phrase_host_blocking(struct kvs_arena *ar, const struct kvs_fig_host_blocking *f,
                                         struct kvs_finding *fd)
{
    fd->message = kvs_arena_printf(
        ar,
        "The CPU waits in blocking calls while the GPU has nothing to run: %.2f ms %s (%.0f%% of "
        "the %.2f ms %s), most of it in %s (%s, %.2f ms)",
        f->blocked_ms, f->steps ? "per step" : "of the span", 100.0 * f->blocked_ms / f->step_ms, f->step_ms,
        f->steps ? "step" : "span", f->call, what_of(f->kind), f->call_ms);
    char where[64] = "";
    if (f->call_step >= 0)
        snprintf(where, sizeof where, " in step #%lld", (long long)f->call_step);
    fd->evidence = kvs_arena_printf(
        ar,
        "%zu blocking calls over the GPU's idle time in %zu of %zu %s; the largest: %s%s at "
        "+%.3f ms, %.3f ms in the call, %.3f ms of it with the GPU idle (correlation %lld)",
        f->calls, f->windows_with, f->windows, f->steps ? "steps" : "spans", f->call, where,
        f->call_at_ms, f->call_ms, f->call_idle_ms, f->corr);
    fd->fix = kvs_arena_strdup(ar, wait_fix(f->main_kind));
    return done(fd);
}

static const char *host_op_fix(const char *op)
{
    if (strstr(op, "cudnn") && (strstr(op, "attention") || strstr(op, "sdpa")))
        return "cuDNN's attention builds an execution plan on the CPU for every new shape, and a "
               "cache that grows by a token each step makes every decode step a new shape: pick "
               "another SDPA backend for decode (with torch.nn.attention.sdpa_kernel("
               "SDPBackend.FLASH_ATTENTION) or EFFICIENT_ATTENTION), or keep the shapes fixed (a "
               "static cache attended over its active length, lengths padded to buckets).";
    if (strstr(op, "DataLoader") || strstr(op, "dataloader"))
        return "The step waits for its input: load data in worker processes "
               "(DataLoader(num_workers=N, pin_memory=True), persistent_workers=True) so the next "
               "batch is ready when the step starts, and copy it with non_blocking=True.";
    if (strstr(op, "Compiled") || strstr(op, "compile") || strstr(op, "dynamo"))
        return "Time inside a compiled region with no GPU work is compilation or guard failures: "
               "check for recompiles (TORCH_LOGS=recompiles), mark dynamic dims "
               "(torch._dynamo.mark_dynamic) or pad shapes to buckets.";
    return "The op's CPU side, not its kernels, sets the pace: see what it does on the host "
           "(torch.profiler with_stack, py-spy), cache what it computes per call, or replace it "
           "with an op whose host side is cheap; a CUDA graph of the step removes the host side "
           "only if the op is capturable.";
}

enum kvs_status kvs_phrase_host_op(struct kvs_arena *ar, const struct kvs_fig_host_op *f,
                                   struct kvs_finding *fd)
{
    const char *unit = f->steps ? "step" : "span";
    fd->message = kvs_arena_printf(
        ar,
        "The CPU spends %.2f ms per %s inside %s while the GPU has nothing to run (%.0f%% of the "
        "%.2f ms %s): %.2f ms a call on the host, not launches and not a blocking call, so the "
        "op's CPU side sets the pace",
        f->idle_ms, unit, f->op, 100.0 * f->idle_ms / f->step_ms, f->step_ms, unit, f->idle_ms_per_call);
    fd->evidence = kvs_arena_printf(
        ar,
        "%lld calls of %s in %zu of %zu %ss (%.1f per %s), %.3f ms of CPU time per call, %.3f ms "
        "of it with no GPU activity and no blocking runtime call",
        (long long)f->calls, f->op, f->windows_with, f->windows, unit,
        (double)f->calls / (double)f->windows, unit, f->cpu_ms_per_call, f->idle_ms_per_call);
    fd->fix = kvs_arena_strdup(ar, host_op_fix(f->op));
    return done(fd);
}

// ----------------------------------------------------------------------------
// gemm_memory_bound

/* the weights in fewer bytes: what comes after the precision they have */
static const char *lower_precision(const char *p)
{
    if (p && !strcmp(p, "fp8"))
        return "INT4/FP4 weight-only quantization (half of FP8's bytes)";
    if (p && !strcmp(p, "fp32"))
        return "BF16 weights (half of FP32's bytes), then FP8";
    return "FP8 weights (half of BF16's bytes; the H100/H200/B200 tensor cores take them "
           "directly), or INT4 weight-only quantization (a quarter)";
}

static const char *gemm_evidence(struct kvs_arena *ar, const struct kvs_fig_gemm_bound *f)
{
    char parts[3][300];
    for (size_t k = 0; k < f->ntop; k++) {
        const struct kvs_fig_gemm_op *o = &f->top[k];
        char op[48];
        kvs_short_op(op, sizeof op, o->op, 32);
        char w[KVS_FMT_BUF];
        snprintf(parts[k], sizeof parts[k], "%s M=%.0f (%s of weights a call): %.1f calls/step, "
                 "%.3f ms/step, %.0f GB/s, %.0f%% of the memory roof",
                 op, o->rows, kvs_fmt_bytes(w, o->weight_bytes), o->calls_per_step, o->ms_per_step,
                 o->achieved_gbps, 100.0 * o->roof_fraction);
    }
    size_t ntop = f->ntop;
    return kvs_arena_printf(ar, "largest: %s%s%s%s%s (per-op roofline, --format json ops)",
                            parts[0], ntop > 1 ? "; " : "", ntop > 1 ? parts[1] : "",
                            ntop > 2 ? "; " : "", ntop > 2 ? parts[2] : "");
}

enum kvs_status kvs_phrase_gemm_bound(struct kvs_arena *ar, const struct kvs_fig_gemm_bound *f,
                                      struct kvs_finding *fd)
{
    const size_t count = f->shapes;
    const double ms = f->ms, busy = f->busy_ms, max_rows = f->max_rows, gbps = f->achieved_gbps;
    const char *prec = f->precision ? f->precision : "their";
    char wb[KVS_FMT_BUF];
    fd->message = kvs_arena_printf(
        ar,
        "%zu GEMM shape%s (%.0f calls per step) with at most %.0f row%s (decode tokens) against a "
        "weight %s bound by memory "
        "bandwidth: %.2f ms per step (%.0f%% of GPU busy time), reading %s of %s weights per "
        "step at %.0f GB/s, %.0f%% of the %s's %.0f GB/s peak; their arithmetic intensity is at most "
        "%.1f FLOP/byte%s",
        count, count > 1 ? "s" : "", f->calls_per_step, max_rows, max_rows > 1 ? "s" : "", count > 1 ? "are" : "is", ms,
        busy > 0 ? 100.0 * ms / busy : 100.0, kvs_fmt_bytes(wb, f->weight_bytes), prec, gbps,
        100.0 * gbps / f->peak_gbps, f->device ? f->device : "device", f->peak_gbps, f->max_intensity,
        f->ridge > 0 ? kvs_arena_printf(ar, ", far below the %.0f FLOP/byte at which its %s "
                                            "tensor cores would be the limit", f->ridge, prec)
                     : "");
    fd->evidence = gemm_evidence(ar, f);
    fd->fix = kvs_arena_printf(
        ar,
        "At M = %.0f a GEMM reads each weight once for %.0f token%s: bytes, not arithmetic, set its "
        "time, so a vectorized or faster-math kernel is not the fix. What moves it: more tokens per "
        "weight read (batch more sequences per decode step: the same weight bytes serve every "
        "sequence in the batch, up to about M = %.0f before compute is the limit; or speculative "
        "decoding, several tokens verified per step); fewer weight bytes: %s, about %.2f ms per "
        "step saved if half the weight bytes move at today's rate; and fusing the projections that "
        "share an input (q/k/v, gate/up) into one GEMM%s.",
        max_rows, max_rows, max_rows > 1 ? "s" : "", f->ridge > 0 ? f->ridge : 200.0,
        lower_precision(f->precision), f->saving_ms,
        gbps < 0.5 * f->peak_gbps
            ? kvs_arena_printf(ar, ". At %.0f%% of the peak with %.1f MB a call on average, "
                                   "launch latency and ramp-up weigh too: fused projections "
                                   "and CUDA graphs help these most",
                               100.0 * gbps / f->peak_gbps, f->weight_bytes / 1e6 / (double)count)
            : "");
    return done(fd);
}

// ----------------------------------------------------------------------------
// kv_full_buffer_read

static const char *dims_text(struct kvs_arena *ar, const int64_t *d, int rank)
{
    char buf[160];
    size_t n = 0;
    buf[n++] = '[';
    for (int i = 0; i < rank && i < KVS_SHAPE_MAX_RANK && n < sizeof buf - 24; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%lld", i ? "," : "", (long long)d[i]);
    snprintf(buf + n, sizeof buf - n, "]");
    return kvs_arena_strdup(ar, buf);
}

const char *kvs_phrase_attention_desc(struct kvs_arena *ar, const char *op, const int64_t *keys,
                                      const int64_t *values, int64_t queries)
{
    return kvs_arena_printf(ar, "%s (keys %s, values %s, queries %lld)", op, dims_text(ar, keys, 4),
                            dims_text(ar, values, 4), (long long)queries);
}

const char *kvs_phrase_gemm_desc(struct kvs_arena *ar, const char *op, const struct kvs_shape *s)
{
    return kvs_arena_printf(ar, "%s %s x %s (a GEMM over every slot)", op,
                            dims_text(ar, s->dims[0], s->rank[0]),
                            s->n > 1 ? dims_text(ar, s->dims[1], s->rank[1]) : "?");
}

/* where the capacity comes from, for the evidence */
const char *kvs_phrase_active_from(enum kvs_active_from from)
{
    static const char *const words[KVS_ACTIVE_FROM_COUNT_] = {
        NULL, "--context", "the trace's kvscope.engine context",
        "the largest token count seen along the keys' sequence dim",
        "the largest token count seen with the same rows"};
    return (unsigned)from < KVS_ACTIVE_FROM_COUNT_ ? words[from] : NULL;
}

static const char *capacity_from(struct kvs_arena *ar, const struct kvs_fig_full_read *f)
{
    double share = f->active > 0 ? (double)f->active / (double)f->capacity : 0;
    if (f->capacity_given)
        return "the capacity given (--kv-capacity)";
    if (f->capacity_attention && share > 0)
        return kvs_arena_printf(ar,
                                "the capacity inferred: the keys' sequence dim is %lld in %lld of %zu steps "
                                "and no other length of it is seen, %.1fx the active tokens",
                                (long long)f->capacity, (long long)f->capacity_steps, f->steps, 1.0 / share);
    if (f->capacity_attention)
        return kvs_arena_printf(ar,
                                "the capacity inferred: the keys' sequence dim stays %lld over %lld of %zu "
                                "decode steps, where a cache that grows adds a token a step; the trace "
                                "records nothing that counts the active tokens",
                                (long long)f->capacity, (long long)f->capacity_steps, f->steps);
    return "the capacity inferred by shape matching (the copy/cast groups' match)";
}

static const char *full_read_message(struct kvs_arena *ar, const struct kvs_fig_full_read *f)
{
    const size_t nr = f->nreaders;
    char b1[32], b2[32];
    char list[1024];
    size_t ln = 0;
    list[0] = 0;
    for (size_t i = 0; i < nr; i++) {
        const struct kvs_fig_reader *r = &f->readers[i];
        if (i < MAX_READERS_LISTED && ln < sizeof list - 1)
            ln += (size_t)snprintf(list + ln, sizeof list - ln, "%s%s %.1f times per step", i ? "; " : "",
                                   r->desc ? r->desc : "?", r->calls_per_step);
        if (ln >= sizeof list)
            ln = sizeof list - 1;
    }
    if (nr > MAX_READERS_LISTED && ln < sizeof list - 1)
        snprintf(list + ln, sizeof list - ln, "; and %zu more", nr - MAX_READERS_LISTED);
    if (f->active > 0)
        return kvs_arena_printf(
            ar,
            "%zu %s the whole KV buffer (%lld tokens) every step where %s%lld tokens are active: %s; "
            "%s read per step where the active tokens need %s; %.2f ms of GPU time per step, "
            "about %.2f ms recoverable",
            nr, nr == 1 ? "op reads" : "ops read", (long long)f->capacity, f->mixed ? "up to " : "",
            (long long)f->active, list, kvs_findings_human_bytes(b1, sizeof b1, f->bytes_per_step),
            kvs_findings_human_bytes(b2, sizeof b2, f->needed_bytes_per_step), f->gpu_ms_per_step,
            f->saving_ms);
    return kvs_arena_printf(
        ar,
        "%zu %s the whole KV buffer (%lld tokens) every step: %s; %s read per step; %.2f ms "
        "of GPU time per step (the active token count is unknown: give --context to size the "
        "saving)",
        nr, nr == 1 ? "op reads" : "ops read", (long long)f->capacity, list,
        kvs_findings_human_bytes(b1, sizeof b1, f->bytes_per_step), f->gpu_ms_per_step);
}

static const char *full_read_evidence(struct kvs_arena *ar, const struct kvs_fig_full_read *f)
{
    char b3[32];
    char evid[2048];
    size_t en = 0;
    evid[0] = 0;
    for (size_t i = 0; i < f->nreaders && en < sizeof evid - 1; i++) {
        const struct kvs_fig_reader *r = &f->readers[i];
        en += (size_t)snprintf(evid + en, sizeof evid - en, "%s%s: %s per step, %.3f ms per call, %.0f GB/s",
                               i ? "; " : "", r->op, kvs_findings_human_bytes(b3, sizeof b3, r->bytes_per_step),
                               r->ms_per_call, r->gbps);
        if (en >= sizeof evid)
            en = sizeof evid - 1;
    }
    const int64_t active = f->active;
    return kvs_arena_printf(
        ar, "%s; active tokens %s%s%s; bytes are an attention's tensors and output (the keys' and "
        "values' scale with the tokens) and a copy's read + written; %.1f%% of the step's GPU busy time",
        capacity_from(ar, f), active > 0 ? kvs_arena_printf(ar, "%lld from ", (long long)active) : "unknown",
        active > 0 && kvs_phrase_active_from(f->active_from) ? kvs_phrase_active_from(f->active_from) : "",
        kvs_arena_printf(ar, "; %s", evid),
        f->busy_ms > 0 ? 100.0 * f->gpu_ms_per_step / f->busy_ms : 0.0);
}

static const char *full_read_fix(struct kvs_arena *ar, const struct kvs_fig_full_read *f)
{
    double share = f->active > 0 ? (double)f->active / (double)f->capacity : 0;
    const char *need = f->active > 0 ? kvs_arena_printf(ar, " (%lld of %lld tokens, %.1f%% of the bytes)",
                                                        (long long)f->active, (long long)f->capacity,
                                                        100.0 * share)
                                     : "";
    return kvs_arena_printf(
        ar, "%s%s",
        f->any_attention ? kvs_arena_printf(ar,
                                            "Attend over the active length only%s: slice the cache before the "
                                            "attention (key[:, :, :n], value[:, :, :n] for [B,H,S,D]), or use a "
                                            "kernel that takes the sequence lengths (flash_attn_with_kvcache's "
                                            "cache_seqlens, a varlen or paged attention such as FlashInfer's), or "
                                            "a cache that grows with the sequence (Hugging Face DynamicCache).%s",
                                            need, f->any_copy ? " " : "")
                         : "",
        f->any_copy ? kvs_arena_printf(ar,
                                       "%s the whole cache%s:%s%s",
                                       f->any_attention ? "Do not copy" : "Copy only the active tokens, not",
                                       f->any_attention ? "" : need,
                                       f->any_repeat ? " repeat_kv's copy of the KV heads to every query head (GQA, "
                                                       "[B,Hkv,n_rep,S,D]) goes with scaled_dot_product_attention(..., "
                                                       "enable_gqa=True) or a kernel that reads the KV heads as cached."
                                                     : "",
                                       f->any_expand ? " a per-head expand or .contiguous() of the cache goes with a kernel "
                                                       "that reads the cache as stored (MLA: absorbed attention over the "
                                                       "cached latent, e.g. FlashMLA), or slice to the active tokens "
                                                       "before the copy."
                                                     : "")
                    : "");
}

enum kvs_status kvs_phrase_full_read(struct kvs_arena *ar, const struct kvs_fig_full_read *f,
                                     struct kvs_finding *fd)
{
    fd->message = full_read_message(ar, f);
    fd->evidence = full_read_evidence(ar, f);
    fd->fix = full_read_fix(ar, f);
    return done(fd);
}

// ----------------------------------------------------------------------------
// per GPU; the names of copy/cast groups

enum kvs_status kvs_phrase_per_gpu(struct kvs_arena *ar, bool steps, bool capped, struct kvs_finding *fd)
{
    const char *unit = steps ? "a step" : "of the span";
    if (fd->gpus > 1)
        fd->message = kvs_arena_printf(ar, "%s; per GPU: %.2f ms %s (%d GPUs share it)%s", fd->message,
                                       fd->gpu_ms_per_step, unit, fd->gpus,
                                       capped ? ", at most the step's time" : "");
    else
        fd->message = kvs_arena_printf(ar, "%s; at most the step's time: %.2f ms %s", fd->message,
                                       fd->gpu_ms_per_step, unit);
    return fd->message ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

/* "BFloat16<-Float8_e4m3fn": the first two tensors' dtypes (for copy_ and
 * casts: destination <- source); index lists and the like after them are
 * left out so that a gather-then-cast pairs with a plain cast */
static char *dtype_chain(struct kvs_arena *a, const struct kvs_shape *s)
{
    char buf[256];
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < s->n && i < 2 && n < sizeof buf - 40; i++) {
        size_t l;
        const char *d = kvs_dtype_short(s->dtype[i], s->dtype_len[i], &l);
        if (l > 32)
            l = 32;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%.*s", i ? "<-" : "", (int)l, d);
    }
    return kvs_arena_strdup(a, buf);
}

const char *kvs_phrase_role(struct kvs_arena *ar, const char *kind, const struct kvs_shape *s,
                            const char *row_meaning)
{
    const char *chain = dtype_chain(ar, s);
    if (row_meaning)
        return kvs_arena_printf(ar, "%s %s rows of %s", kind, chain ? chain : "", row_meaning);
    char pat[160];
    size_t n = 0;
    int rank = s->rank[0] < KVS_SHAPE_MAX_RANK ? s->rank[0] : KVS_SHAPE_MAX_RANK;
    pat[n++] = '[';
    for (int i = 0; i < rank && n < sizeof pat - 24; i++) {
        if (i == 0 && rank >= 2)
            n += (size_t)snprintf(pat + n, sizeof pat - n, "*");
        else
            n += (size_t)snprintf(pat + n, sizeof pat - n, "%s%lld", i ? "," : "", (long long)s->dims[0][i]);
    }
    snprintf(pat + n, sizeof pat - n, "]");
    /* the token count is left out (the '*'), so the full-buffer cast and the
     * active-token cast of the same rows pair up in compare */
    return kvs_arena_printf(ar, "%s %s %s", kind, chain ? chain : "", pat);
}

const char *kvs_phrase_row_meaning(struct kvs_arena *ar, enum kvs_row_kind k, const struct kvs_model *m)
{
    switch (k) {
    case KVS_ROW_LATENT_ROPE:
        return kvs_arena_printf(ar, "kv_lora_rank %lld + qk_rope_head_dim %lld", (long long)m->kv_lora_rank,
                                (long long)m->qk_rope_head_dim);
    case KVS_ROW_LATENT:
        return kvs_arena_printf(ar, "kv_lora_rank %lld", (long long)m->kv_lora_rank);
    case KVS_ROW_INDEXER:
        return kvs_arena_printf(ar, "index_head_dim %lld (sparse-attention indexer keys)",
                                (long long)m->index_head_dim);
    case KVS_ROW_KV_HEADS:
        return kvs_arena_printf(ar, "num_key_value_heads %lld x head_dim %lld", (long long)m->kv_heads,
                                (long long)m->head_dim);
    case KVS_ROW_K_AND_V:
        return kvs_arena_printf(ar, "K and V x num_key_value_heads %lld x head_dim %lld",
                                (long long)m->kv_heads, (long long)m->head_dim);
    case KVS_ROW_NONE:
        break;
    }
    return NULL;
}

const char *kvs_phrase_match_label(struct kvs_arena *ar, enum kvs_token_dim tokens,
                                   const char *row_meaning, int64_t row)
{
    const char *tok = tokens == KVS_TOKENS_CAPACITY   ? "KV capacity (tokens)"
                      : tokens == KVS_TOKENS_INFERRED ? "preallocated buffer (tokens, inferred)"
                                                      : "tokens";
    if (row_meaning)
        return kvs_arena_printf(ar, "%s x %s", tok, row_meaning);
    return kvs_arena_printf(ar, "%s x row %lld", tok, (long long)row);
}
