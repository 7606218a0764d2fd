/* group_figs.c — one copy/cast group's figures and words, shared by the
 * findings, the KV-read findings, the roofline table and the result (see
 * group_figs.h). Private to analyzers/. */
#include "group_figs.h"

#include <stdio.h>
#include <string.h>

#include "dtypes.h"
#include "kvscope/kernel_name.h"
#include "match.h"

void kvs_group_figures(const struct kvs_ctx *c, const struct kvs_group_acc *g,
                       struct kvs_group_figs *f)
{
    memset(f, 0, sizeof *f);
    f->calls_per_step = kvs_group_calls_per_step(c, g);
    f->gpu_ms = (double)g->gpu_ns / 1e6;
    f->gpu_ms_per_step = c->nsteps ? (double)g->gpu_ns_in_steps / 1e6 / (double)c->nsteps : f->gpu_ms;
    /* of the GPU's busy time: the group's own busy time (its activities
     * overlapping on several streams count once), so never above 1 */
    f->gpu_fraction = c->trace_busy_ns > 0 ? (double)g->gpu_busy_ns / c->trace_busy_ns : 0;
    if (g->bytes_per_call > 0 && g->gpu_ns > 0)
        f->achieved_gbps = (double)g->bytes_per_call * (double)g->gpu_calls / (double)g->gpu_ns;
    /* mostly host<->device copies: the host link bounds them, not the HBM
     * peak, so they get no efficiency against it (and no finding) */
    f->host_link = g->host_ns > 0 && 2 * g->host_ns >= g->gpu_ns;
    if (c->peak_gbps > 0 && !f->host_link)
        f->efficiency = f->achieved_gbps / c->peak_gbps;
}

double kvs_findings_step_busy_ms(const struct kvs_ctx *c)
{
    if (!c->nsteps)
        return c->trace_busy_ns / 1e6;
    double s = 0;
    for (size_t i = 0; i < c->nsteps; i++)
        s += c->step_busy_ns[i];
    return s / 1e6 / (double)c->nsteps;
}

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
const char *kvs_findings_group_name(struct kvs_ctx *c, const struct kvs_group_acc *g)
{
    const char *op = kvs_intern_str(&c->t.strings, g->op_name);
    if (!g->bare)
        return op;
    char buf[KVS_EVIDENCE_KERNEL_WIDTH + 1];
    kvs_short_kernel(buf, sizeof buf, op, KVS_EVIDENCE_KERNEL_WIDTH);
    const char *r = kvs_arena_strdup(&c->arena, buf);
    return r ? r : op;
}

const char *kvs_findings_group_desc(struct kvs_ctx *c, const struct kvs_group_acc *g)
{
    const char *op = kvs_findings_group_name(c, g);
    const struct kvs_shape *s = &g->shape_info;
    if (g->launch_sized && s->n > 0) {
        size_t a, b;
        const char *x = kvs_dtype_short(s->dtype[0], s->dtype_len[0], &a);
        const char *y = kvs_dtype_short(s->dtype[1], s->dtype_len[1], &b);
        return kvs_arena_printf(&c->arena, "%s [%lld x %lld elements, from grid x block] %.*s<-%.*s", op,
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
    return kvs_arena_printf(&c->arena, "%s [%s] %s", op, dims, types);
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
