/* gemm_bound.c — the gemm_memory_bound finding (see gemm_bound.h).
 * Private to analyzers/. */
#include "gemm_bound.h"

#include <string.h>

#include "kvscope/check.h"
#include "figures.h"
#include "phrase.h"

/* a decode GEMM the bandwidth roof bounds */
static bool small_m_memory_bound(const struct kvs_op_acc *o)
{
    return o->cost.family == KVS_OPF_MATMUL && o->cost.rows > 0 &&
           o->cost.rows <= KVS_GEMM_SMALL_M && o->cost.weight_bytes > 0 && o->bound &&
           !strcmp(o->bound, "memory");
}

static double per_step(const struct kvs_step_table *steps, int64_t in_steps, int64_t all)
{
    return steps->n ? (double)in_steps / (double)steps->n : (double)all;
}

enum kvs_status kvs_gemm_bound(const struct kvs_stage_in *in, struct kvs_arena *ar, struct kvs_finding_list *out)
{
    if (in->dev->peak_gbps <= 0 || !in->ops->n)
        return KVS_STATUS_OK;
    double ms = 0, bytes = 0, weights = 0, max_rows = 0, max_intensity = 0, ncalls = 0;
    size_t count = 0, top[3] = {0, 0, 0}, ntop = 0;
    uint64_t devices = 0;
    for (size_t i = 0; i < in->ops->n; i++) { /* ops are by GPU time: the first are the largest */
        const struct kvs_op_acc *o = &in->ops->v[i];
        if (!small_m_memory_bound(o))
            continue;
        double calls = per_step(in->steps, o->calls_in_steps, o->calls);
        ms += per_step(in->steps, o->gpu_ns_in_steps, o->gpu_ns) / 1e6;
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
    if (in->steps->n) {
        for (size_t i = 0; i < in->steps->n; i++)
            busy += in->steps->busy_ns[i];
        busy /= 1e6 * (double)in->steps->n;
    } else {
        busy = in->steps->trace_busy_ns / 1e6;
    }
    if (!count || ms < 0.02 || (busy > 0 && ms < 0.1 * busy))
        return KVS_STATUS_OK;
    const struct kvs_op_acc *big = &in->ops->v[top[0]];
    double gbps = ms > 0 ? bytes / (ms * 1e6) : 0;
    double ridge = big->peak_tflops > 0 ? big->peak_tflops * 1e3 / in->dev->peak_gbps : 0;
    struct kvs_finding fd = {0};
    fd.id = "gemm_memory_bound";
    fd.gpus = kvs_gpus_of(in->gpus, devices);
    fd.severity = busy > 0 && ms >= 0.5 * busy ? KVS_SEV_HIGH : busy > 0 && ms >= 0.2 * busy ? KVS_SEV_WARN
                                                                                          : KVS_SEV_INFO;
    /* half the weight bytes, moved at the rate they move now */
    double saving = bytes > 0 ? ms * weights / bytes / 2 : 0;
    fd.gpu_ms_per_step = saving;
    fd.bytes_per_step = bytes;
    fd.group = -1;
    struct kvs_fig_gemm_bound fig = {
        .shapes = count,
        .calls_per_step = ncalls,
        .max_rows = max_rows,
        .ms = ms,
        .busy_ms = busy,
        .weight_bytes = weights,
        .achieved_gbps = gbps,
        .peak_gbps = in->dev->peak_gbps,
        .max_intensity = max_intensity,
        .ridge = ridge,
        .saving_ms = saving,
        .device = in->dev->name,
        .precision = big->cost.precision,
        .ntop = ntop,
    };
    for (size_t k = 0; k < ntop; k++) {
        const struct kvs_op_acc *o = &in->ops->v[top[k]];
        fig.top[k] = (struct kvs_fig_gemm_op){
            .op = kvs_intern_str(&in->t->strings, o->op_name),
            .rows = o->cost.rows,
            .weight_bytes = o->cost.weight_bytes,
            .calls_per_step = per_step(in->steps, o->calls_in_steps, o->calls),
            .ms_per_step = per_step(in->steps, o->gpu_ns_in_steps, o->gpu_ns) / 1e6,
            .achieved_gbps = o->achieved_gbps,
            .roof_fraction = o->roof_fraction,
        };
    }
    KVS_TRY(kvs_figures_gemm_bound(ar, &fig, &fd));
    KVS_TRY(kvs_phrase_gemm_bound(ar, &fig, &fd));
    return kvs_finding_push(out, &fd);
}
