/* roofline.c — the per-op roofline table (see roofline.h). Private to
 * analyzers/. */
#include "roofline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "group_figs.h"
#include "key_acc.h"
#include "steps.h"
#include "kvscope/reader.h"

static int cmp_op(const void *a, const void *b)
{
    const struct kvs_op_acc *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns > y->gpu_ns ? -1 : 1;
    if (x->op_name != y->op_name)
        return x->op_name < y->op_name ? -1 : 1;
    return x->shape < y->shape ? -1 : x->shape > y->shape;
}

/* a copy's bytes are its copy/cast group's (dims, activity bytes or
 * launches: groups.c); a host<->device copy has no HBM roof */
static void copy_bytes(const struct kvs_stage_in *in, const struct kvs_u64map *by_key,
                       struct kvs_op_acc *o, bool *host_link)
{
    const uint32_t *v = kvs_u64map_get(by_key, kvs_pair_key(o->op_name, o->shape));
    if (!v || !*v)
        return;
    const struct kvs_group_acc *g = &in->groups->v[*v - 1];
    if (g->bytes_per_call <= 0)
        return;
    o->cost.bytes = (double)g->bytes_per_call;
    o->sized_from = g->sized_from;
    struct kvs_group_figs f;
    kvs_group_figures(in->steps, in->dev, g, &f);
    *host_link = f.host_link;
}

static void figures(const struct kvs_peaks *dev, struct kvs_op_acc *o, bool host_link)
{
    o->achieved_gbps = o->achieved_tflops = o->intensity = o->roof_fraction = NAN;
    o->peak_tflops = 0;
    o->bound = NULL;
    if (o->gpu_ns <= 0 || o->calls <= 0)
        return;
    double ns_per_call = (double)o->gpu_ns / (double)o->calls;
    bool bytes = o->cost.bytes > 0, flops = o->cost.flops >= 0;
    if (bytes)
        o->achieved_gbps = o->cost.bytes / ns_per_call; /* bytes per ns = GB/s */
    if (flops)
        o->achieved_tflops = o->cost.flops / ns_per_call / 1e3;
    if (bytes && flops)
        o->intensity = o->cost.flops / o->cost.bytes;
    const char *p = o->cost.precision;
    if (p && !strcmp(p, "fp8"))
        o->peak_tflops = dev->fp8_tflops;
    else if (p && (!strcmp(p, "bf16") || !strcmp(p, "fp16")))
        o->peak_tflops = dev->bf16_tflops;
    if (!bytes || host_link || dev->peak_gbps <= 0)
        return;
    bool defined = o->cost.family == KVS_OPF_MATMUL || o->cost.family == KVS_OPF_ATTENTION;
    if (!defined) { /* bytes only: the bandwidth roof bounds it */
        if (o->cost.family == KVS_OPF_UNKNOWN)
            return;
        o->bound = "memory";
        o->roof_fraction = o->achieved_gbps / dev->peak_gbps;
        return;
    }
    if (!flops || o->peak_tflops <= 0)
        return;
    /* the roof at this intensity: min(compute peak, intensity x bandwidth) */
    double ridge = o->peak_tflops * 1e3 / dev->peak_gbps; /* FLOP per byte */
    double roof = o->intensity < ridge ? o->intensity * dev->peak_gbps / 1e3 : o->peak_tflops;
    o->bound = o->intensity < ridge ? "memory" : "compute";
    o->roof_fraction = roof > 0 ? o->achieved_tflops / roof : NAN;
}

enum kvs_status kvs_roofline_build(const struct kvs_stage_in *in, struct kvs_op_table *out)
{
    const struct kvs_trace_data *t = in->t;
    enum kvs_status st = KVS_STATUS_NO_MEMORY;
    struct kvs_u64map bare = {0}, groups = {0};
    struct kvs_kernel_time ktime = {0}; /* per (op group, kernel) time */
    struct kvs_top_kernel *top = NULL;
    struct kvs_op_acc *acc = NULL;
    size_t nacc = 0, cap = 0;
    struct kvs_kiv_list iv = {0};
    int64_t *busy = NULL;
    uint32_t *of_key = calloc(t->nopkeys ? t->nopkeys : 1, sizeof *of_key);
    uint8_t *seen = calloc(t->ops.n / 8 + 1, 1);
    bool added;
    if (kvs_kiv_reserve(&iv, t->gpus.n ? t->gpus.n : 1) < 0 || !of_key || !seen)
        goto out;
    for (size_t i = 0; i < t->gpus.n; i++) {
        const struct kvs_gpu_rec g_ = kvs_gpu_get(t, i), *g = &g_;
        uint32_t op = in->act->v[i].op;
        uint32_t name, shape;
        uint32_t *slot = kvs_key_slot(t, op, g, of_key, &bare, &added, &name, &shape);
        if (!slot)
            goto out;
        if (added) {
            struct kvs_op_acc a;
            memset(&a, 0, sizeof a);
            a.bare = op == KVS_NO_OP;
            a.op_name = name;
            a.shape = shape;
            if (KVS_VEC_PUSH(acc, nacc, cap, a) < 0)
                goto out;
            *slot = (uint32_t)nacc;
        }
        uint32_t k = *slot - 1;
        struct kvs_op_acc *a = &acc[k];
        a->gpu_ns += g->dur;
        a->devices |= kvs_device_bit(g->device);
        bool first = a->bare || kvs_op_first_seen(seen, op); /* a call counts once */
        a->calls += first;
        if (in->act->v[i].step >= 0) {
            a->gpu_ns_in_steps += g->dur;
            a->calls_in_steps += first;
        }
        if (kvs_kiv_add(&iv, k, g->device, g->ts, g->ts + g->dur) < 0)
            goto out;
        if (kvs_kernel_time_add(&ktime, k, g->name, g->dur) < 0)
            goto out;
    }
    busy = calloc(nacc ? nacc : 1, sizeof *busy);
    top = calloc(nacc ? nacc : 1, sizeof *top);
    if (!busy || !top)
        goto out;
    kvs_kiv_busy(&iv, busy);
    kvs_kernel_time_top(&ktime, top, nacc);
    for (size_t gi = 0; gi < in->groups->n; gi++) {
        uint32_t *v = kvs_u64map_put(&groups, kvs_pair_key(in->groups->v[gi].op_name, in->groups->v[gi].shape), &added);
        if (!v)
            goto out;
        *v = (uint32_t)gi + 1;
    }
    for (size_t k = 0; k < nacc; k++) {
        struct kvs_op_acc *a = &acc[k];
        a->gpu_busy_ns = busy[k];
        a->top_kernel = top[k].name; /* the kernel with the most time in each */
        a->top_kernel_ns = top[k].ns;
        if (a->shape)
            kvs_shape_parse(kvs_intern_str(&t->strings, a->shape), kvs_intern_len(&t->strings, a->shape),
                            &a->shape_info);
        const char *name = kvs_intern_str(&t->strings, a->op_name);
        kvs_op_cost_of(a->bare ? NULL : name, a->shape ? &a->shape_info : NULL, &a->cost);
        bool host_link = false;
        /* a copy op, or bare work a copy/cast group holds (memcpy, memset, copy kernels) */
        if (a->cost.family == KVS_OPF_COPY || a->bare) {
            copy_bytes(in, &groups, a, &host_link);
            if (a->bare && a->cost.bytes > 0)
                a->cost.family = KVS_OPF_COPY;
        } else if (a->cost.bytes > 0 || a->cost.flops >= 0) {
            a->sized_from = "dims";
        }
        figures(in->dev, a, host_link);
    }
    if (nacc)
        qsort(acc, nacc, sizeof *acc, cmp_op);
    out->v = acc;
    out->n = nacc;
    acc = NULL;
    st = KVS_STATUS_OK;
out:
    free(acc);
    kvs_kiv_free(&iv);
    free(busy);
    free(top);
    free(of_key);
    free(seen);
    kvs_u64map_free(&bare);
    kvs_kernel_time_free(&ktime);
    kvs_u64map_free(&groups);
    return st;
}
