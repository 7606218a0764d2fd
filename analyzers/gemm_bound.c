/* gemm_bound.c — the gemm_memory_bound finding (see gemm_bound.h).
 * Private to analyzers/. */
#include "gemm_bound.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/kernel_name.h"
#include "kvscope/units.h"

/* a decode GEMM the bandwidth roof bounds */
static bool small_m_memory_bound(const struct kvs_op_acc *o)
{
    return o->cost.family == KVS_OPF_MATMUL && o->cost.rows > 0 &&
           o->cost.rows <= KVS_GEMM_SMALL_M && o->cost.weight_bytes > 0 && o->bound &&
           !strcmp(o->bound, "memory");
}

static double per_step(const struct kvs_ctx *c, int64_t in_steps, int64_t all)
{
    return c->nsteps ? (double)in_steps / (double)c->nsteps : (double)all;
}

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

int kvs_gemm_bound(struct kvs_ctx *c, struct kvs_finding **v, size_t *n, size_t *cap)
{
    if (c->peak_gbps <= 0 || !c->nops)
        return 0;
    double ms = 0, bytes = 0, weights = 0, max_rows = 0, max_intensity = 0, ncalls = 0;
    size_t count = 0, top[3] = {0, 0, 0}, ntop = 0;
    uint64_t devices = 0;
    for (size_t i = 0; i < c->nops; i++) { /* ops are by GPU time: the first are the largest */
        const struct kvs_op_acc *o = &c->ops[i];
        if (!small_m_memory_bound(o))
            continue;
        double calls = per_step(c, o->calls_in_steps, o->calls);
        ms += per_step(c, o->gpu_ns_in_steps, o->gpu_ns) / 1e6;
        ncalls += calls;
        devices |= o->devices;
        bytes += o->cost.bytes * calls;
        weights += o->cost.weight_bytes * calls;
        max_rows = o->cost.rows > max_rows ? o->cost.rows : max_rows;
        max_intensity = o->intensity > max_intensity ? o->intensity : max_intensity;
        if (ntop < 3)
            top[ntop++] = i;
        count++;
    }
    double busy = 0;
    if (c->nsteps) {
        for (size_t i = 0; i < c->nsteps; i++)
            busy += c->step_busy_ns[i];
        busy /= 1e6 * (double)c->nsteps;
    } else {
        busy = c->trace_busy_ns / 1e6;
    }
    if (!count || ms < 0.02 || (busy > 0 && ms < 0.1 * busy))
        return 0;
    const struct kvs_op_acc *big = &c->ops[top[0]];
    double gbps = ms > 0 ? bytes / (ms * 1e6) : 0;
    double ridge = big->peak_tflops > 0 ? big->peak_tflops * 1e3 / c->peak_gbps : 0;
    struct kvs_finding fd = {0};
    fd.id = "gemm_memory_bound";
    fd.gpus = kvs_gpus_of(c, devices);
    fd.severity = busy > 0 && ms >= 0.5 * busy ? KVS_SEV_HIGH : busy > 0 && ms >= 0.2 * busy ? KVS_SEV_WARN
                                                                                          : KVS_SEV_INFO;
    /* half the weight bytes, moved at the rate they move now */
    double saving = bytes > 0 ? ms * weights / bytes / 2 : 0;
    fd.gpu_ms_per_step = saving;
    fd.bytes_per_step = bytes;
    fd.group = -1;
    const char *prec = big->cost.precision ? big->cost.precision : "their";
    char wb[KVS_FMT_BUF];
    fd.message = kvs_arena_printf(
        &c->arena,
        "%zu GEMM shape%s (%.0f calls per step) with at most %.0f row%s (decode tokens) against a "
        "weight %s bound by memory "
        "bandwidth: %.2f ms per step (%.0f%% of GPU busy time), reading %s of %s weights per "
        "step at %.0f GB/s, %.0f%% of the %s's %.0f GB/s peak; their arithmetic intensity is at most "
        "%.1f FLOP/byte%s",
        count, count > 1 ? "s" : "", ncalls, max_rows, max_rows > 1 ? "s" : "", count > 1 ? "are" : "is", ms,
        busy > 0 ? 100.0 * ms / busy : 100.0, kvs_fmt_bytes(wb, weights), prec, gbps, 100.0 * gbps / c->peak_gbps,
        c->device ? c->device : "device", c->peak_gbps, max_intensity,
        ridge > 0 ? kvs_arena_printf(&c->arena, ", far below the %.0f FLOP/byte at which its %s "
                                                "tensor cores would be the limit", ridge, prec)
                  : "");
    char parts[3][300];
    for (size_t k = 0; k < ntop; k++) {
        const struct kvs_op_acc *o = &c->ops[top[k]];
        char op[48];
        kvs_short_op(op, sizeof op, kvs_intern_str(&c->t.strings, o->op_name), 32);
        char w[KVS_FMT_BUF];
        snprintf(parts[k], sizeof parts[k], "%s M=%.0f (%s of weights a call): %.1f calls/step, "
                 "%.3f ms/step, %.0f GB/s, %.0f%% of the memory roof",
                 op, o->cost.rows, kvs_fmt_bytes(w, o->cost.weight_bytes), per_step(c, o->calls_in_steps, o->calls),
                 per_step(c, o->gpu_ns_in_steps, o->gpu_ns) / 1e6, o->achieved_gbps,
                 100.0 * o->roof_fraction);
    }
    fd.evidence = kvs_arena_printf(&c->arena, "largest: %s%s%s%s%s (per-op roofline, --format json ops)",
                                   parts[0], ntop > 1 ? "; " : "", ntop > 1 ? parts[1] : "",
                                   ntop > 2 ? "; " : "", ntop > 2 ? parts[2] : "");
    fd.fix = kvs_arena_printf(
        &c->arena,
        "At M = %.0f a GEMM reads each weight once for %.0f token%s: bytes, not arithmetic, set its "
        "time, so a vectorized or faster-math kernel is not the fix. What moves it: more tokens per "
        "weight read (batch more sequences per decode step: the same weight bytes serve every "
        "sequence in the batch, up to about M = %.0f before compute is the limit; or speculative "
        "decoding, several tokens verified per step); fewer weight bytes: %s, about %.2f ms per "
        "step saved if half the weight bytes move at today's rate; and fusing the projections that "
        "share an input (q/k/v, gate/up) into one GEMM%s.",
        max_rows, max_rows, max_rows > 1 ? "s" : "", ridge > 0 ? ridge : 200.0,
        lower_precision(big->cost.precision), saving,
        gbps < 0.5 * c->peak_gbps
            ? kvs_arena_printf(&c->arena, ". At %.0f%% of the peak with %.1f MB a call on average, "
                                          "launch latency and ramp-up weigh too: fused projections "
                                          "and CUDA graphs help these most",
                               100.0 * gbps / c->peak_gbps, weights / 1e6 / (double)count)
            : "");
    if (!fd.message || !fd.evidence || !fd.fix)
        return -1;
    return KVS_VEC_PUSH(*v, *n, *cap, fd);
}
