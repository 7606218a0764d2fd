/* group_figs.c — one copy/cast group's figures and words, shared by the
 * findings, the KV-read findings, the roofline table and the result (see
 * group_figs.h). Private to analyzers/. */
#include "group_figs.h"

#include <stdio.h>
#include <string.h>

#include "dtypes.h"
#include "match.h"

void kvs_group_figures(const struct kvs_step_table *steps, const struct kvs_peaks *dev,
                          const struct kvs_group_acc *g, struct kvs_group_figs *f)
{
    memset(f, 0, sizeof *f);
    f->calls_per_step = steps->n ? (double)g->calls_in_steps / (double)steps->n : (double)g->calls;
    f->gpu_ms = (double)g->gpu_ns / 1e6;
    f->gpu_ms_per_step = steps->n ? (double)g->gpu_ns_in_steps / 1e6 / (double)steps->n : f->gpu_ms;
    /* of the GPU's busy time: the group's own busy time (its activities
     * overlapping on several streams count once), so never above 1 */
    f->gpu_fraction = steps->trace_busy_ns > 0 ? (double)g->gpu_busy_ns / steps->trace_busy_ns : 0;
    if (g->bytes_per_call > 0 && g->gpu_ns > 0)
        f->achieved_gbps = (double)g->bytes_per_call * (double)g->gpu_calls / (double)g->gpu_ns;
    /* mostly host<->device copies: the host link bounds them, not the HBM
     * peak, so they get no efficiency against it (and no finding) */
    f->host_link = g->host_ns > 0 && 2 * g->host_ns >= g->gpu_ns;
    if (dev->peak_gbps > 0 && !f->host_link)
        f->efficiency = f->achieved_gbps / dev->peak_gbps;
}

double kvs_findings_step_busy_ms(const struct kvs_step_table *steps)
{
    if (!steps->n)
        return steps->trace_busy_ns / 1e6;
    double s = 0;
    for (size_t i = 0; i < steps->n; i++)
        s += steps->busy_ns[i];
    return s / 1e6 / (double)steps->n;
}

bool kvs_findings_is_cast(const struct kvs_shape *s)
{
    for (int i = 1; i < s->n; i++) {
        size_t a, b;
        const char *x = kvs_dtype_short(s->dtype[0], s->dtype_len[0], &a);
        const char *y = kvs_dtype_short(s->dtype[i], s->dtype_len[i], &b);
        if (a != b || memcmp(x, y, a))
            return true;
    }
    return false;
}

bool kvs_findings_keeps_dtype(const struct kvs_group_acc *g)
{
    const struct kvs_shape *s = &g->shape_info;
    if (g->launch_sized || s->n == 0)
        return false;
    for (int i = 0; i < s->n && i < 2; i++)
        if (s->bits[i] <= 0)
            return false; /* dims without dtypes (an emit_nvtx range): it may cast */
    return !kvs_findings_is_cast(s);
}

enum kvs_status kvs_finding_push(struct kvs_finding_list *l, const struct kvs_finding *f)
{
    return KVS_VEC_PUSH(l->v, l->n, l->cap, *f) < 0 ? KVS_STATUS_NO_MEMORY : KVS_STATUS_OK;
}
