/* groups.c — build the copy/cast groups (see groups.h). Private to analyzers/. */
#include "groups.h"

#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "key_acc.h"
#include "launch_size.h"
#include "steps.h"
#include "kvscope/reader.h"

/* bytes an activity moves through device memory: a device-to-device copy
 * reads and writes its `bytes`; host<->device copies and memsets touch
 * device memory once */
static int64_t activity_bytes(const struct kvs_trace_data *t, const struct kvs_gpu_rec *g)
{
    if (g->kind == KVS_GPU_KERNEL || g->bytes <= 0)
        return 0;
    if (g->kind == KVS_GPU_MEMCPY) {
        const char *n = kvs_intern_str(&t->strings, g->name);
        if (strstr(n, "DtoD") || strstr(n, "Device -> Device") || strstr(n, "PtoP"))
            return 2 * g->bytes;
    }
    return g->bytes;
}

/* a copy with one end in host memory ("Memcpy HtoD (Pinned -> Device)",
 * "Memcpy DtoH (Device -> Pageable)"): the host link (PCIe, NVLink-C2C)
 * bounds its rate, not HBM */
static bool is_host_copy(const struct kvs_trace_data *t, const struct kvs_gpu_rec *g)
{
    if (g->kind != KVS_GPU_MEMCPY)
        return false;
    const char *n = kvs_intern_str(&t->strings, g->name);
    return strstr(n, "HtoD") || strstr(n, "DtoH") || strstr(n, "HtoH") || strstr(n, "HtoA") ||
           strstr(n, "AtoH") || strstr(n, "Host") || strstr(n, "Pinned") || strstr(n, "Pageable");
}

static int cmp_group(const void *a, const void *b)
{
    const struct kvs_group_acc *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns > y->gpu_ns ? -1 : 1;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    if (x->op_name != y->op_name)
        return x->op_name < y->op_name ? -1 : 1;
    return x->shape < y->shape ? -1 : x->shape > y->shape;
}

/* bytes a call moves by its op's dims and dtypes; -1 when they do not say */
static int64_t shape_bytes(const struct kvs_trace_data *t, const struct kvs_group_acc *g)
{
    const struct kvs_shape *s = &g->shape_info;
    if (s->n == 0 || s->more)
        return -1;
    const char *op = kvs_intern_str(&t->strings, g->op_name);
    if (!kvs_op_is_copy(op))
        return -1; /* a copy kernel inside another op: the op's shapes do not describe it */
    /* an indexed write (index_copy_(self, index, source), ...) reads its
     * index and source and writes the source's bytes into self: self's own
     * dims, often a whole KV pool, are not touched */
    bool indexed = kvs_op_is_indexed_write(op);
    if (indexed && s->n < 2)
        return -1;
    int64_t sum = 0;
    for (int i = indexed ? 1 : 0; i < s->n; i++) {
        if (s->bytes[i] < 0)
            return -1;
        sum += s->bytes[i];
    }
    if (indexed)
        return sum + s->bytes[s->n - 1];
    /* copy_(dst, src) and kvscope's casts list every tensor they touch once;
     * a one-tensor copy (clone, contiguous, to) writes as much as it reads */
    return s->n >= 2 ? sum : 2 * sum;
}

static void bytes_per_call(const struct kvs_trace_data *t, struct kvs_group_acc *g)
{
    g->bytes_per_call = -1;
    if (!g->bare && g->shape) {
        const char *key = kvs_intern_str(&t->strings, g->shape);
        kvs_shape_parse(key, kvs_intern_len(&t->strings, g->shape), &g->shape_info);
    }
    if (g->activity_bytes > 0 && g->byte_calls > 0 && g->gpu_calls > 0) {
        /* every call a memcpy/memset, most of the time theirs: their `bytes`
         * say it. Some calls ran a kernel instead (aten::copy_ of a strided
         * view: HTA's trace_diff has 18 DtoD memcpys and 6 copy kernels of
         * [1024,58272] f32), or the kernels took most of the time (a
         * torch.compile region's memsets beside its copy kernels): those
         * kernels moved bytes too, which the memcpy/memset bytes do not
         * count; the dims say what each call moves, else nothing does. */
        bool bytes_cover = g->byte_calls == g->gpu_calls && 2 * g->byte_ns >= g->gpu_ns;
        if (bytes_cover) {
            g->bytes_per_call = g->activity_bytes / g->gpu_calls;
            g->sized_from = "activity bytes";
            return;
        }
        int64_t by_shape = shape_bytes(t, g);
        g->bytes_per_call = by_shape > 0                ? by_shape
                          : 2 * g->byte_ns >= g->gpu_ns ? g->activity_bytes / g->byte_calls
                                                        : -1;
        g->sized_from = by_shape > 0 ? "dims" : g->bytes_per_call > 0 ? "activity bytes" : NULL;
        return;
    }
    g->bytes_per_call = shape_bytes(t, g);
    g->sized_from = g->bytes_per_call > 0 ? "dims" : NULL;
}

/* no dims and no activity bytes size the group: its launches may (dims
 * without dtypes, an Nsight Systems emit_nvtx range, size nothing either) */
static void size_from_launches(const struct kvs_launch_facts *lf, struct kvs_group_acc *g)
{
    bool untyped = g->shape_info.n > 0 && g->shape_info.bits[0] == 0;
    if (g->bytes_per_call < 0 && g->activity_bytes == 0 && (g->shape_info.n == 0 || untyped)) {
        kvs_launch_size_group(lf, g);
        if (g->launch_sized && g->bytes_per_call > 0)
            g->sized_from = "launch";
    }
}

/* The groups while they are built, and what they are built from. */
struct building {
    const struct kvs_stage_in *in;
    const struct kvs_launch_facts *lf;
    struct kvs_group_acc *acc;
    size_t nacc, acc_cap;
    struct kvs_kiv_list iv; /* the groups' activities, for their busy time */
    struct kvs_u64map bare_groups, step_seen, bare_steps;
    struct kvs_kernel_time ktime; /* per (group, kernel) time */
    uint8_t *seen;                /* ops whose first activity was counted */
    uint8_t *byte_seen;           /* ops whose work had a memcpy/memset's bytes */
    uint32_t *group_of_key;       /* op key -> group + 1 */
    uint8_t *key_is_copy;         /* op key -> 1 + whether its op is a copy */
    struct kvs_launch_cache *lcache;
};

/* Whether activity i is copy/cast work a group takes: all the work of a
 * copy/cast op, and copy/cast work under any other op or none. */
static bool joins(struct building *b, size_t i)
{
    const struct kvs_trace_data *t = b->in->t;
    uint32_t op = b->in->act->v[i].op;
    if (op == KVS_NO_OP)
        return b->in->act->v[i].cat == KVS_CAT_COPY_CAST;
    uint32_t key = kvs_op_key(t, op);
    if (!b->key_is_copy[key])
        b->key_is_copy[key] = (uint8_t)(1 + kvs_op_is_copy(kvs_intern_str(&t->strings, t->opkeys[key].name)));
    return b->key_is_copy[key] == 2 || b->in->act->v[i].cat == KVS_CAT_COPY_CAST;
}

/* GPU activity i into its group: time, bytes, devices, calls, kernels. */
static enum kvs_status add_activity(struct building *b, size_t i)
{
    const struct kvs_trace_data *t = b->in->t;
    const struct kvs_gpu_rec g_ = kvs_gpu_get(t, i), *g = &g_;
    uint32_t op = b->in->act->v[i].op;
    bool bare = op == KVS_NO_OP, added;
    /* the group an activity joins: its op's key, or a bare group named
     * after the activity; a group index + 1 in *slot, 0 when it joins
     * none yet */
    uint32_t name, shape;
    uint32_t *slot = kvs_key_slot(t, op, g, b->group_of_key, &b->bare_groups, &added, &name, &shape);
    if (!slot)
        return KVS_STATUS_NO_MEMORY;
    if (added) {
        struct kvs_group_acc a;
        memset(&a, 0, sizeof a);
        a.op_name = name;
        a.shape = shape;
        a.bare = bare;
        if (KVS_VEC_PUSH(b->acc, b->nacc, b->acc_cap, a) < 0)
            return KVS_STATUS_NO_MEMORY;
        *slot = (uint32_t)b->nacc; /* index + 1 */
    }
    uint32_t gi = *slot - 1;
    struct kvs_group_acc *a = &b->acc[gi];
    if (kvs_kiv_add(&b->iv, gi, g->device, g->ts, g->ts + g->dur) < 0)
        return KVS_STATUS_NO_MEMORY;
    a->gpu_ns += g->dur;
    a->activities++;
    a->devices |= kvs_device_bit(g->device);
    int64_t moved = activity_bytes(t, g);
    a->activity_bytes += moved;
    if (moved > 0)
        a->byte_ns += g->dur;
    if (moved > 0 && bare) {
        a->byte_calls++;
    } else if (moved > 0 && kvs_op_first_seen(b->byte_seen, op)) {
        a->byte_calls++;
    }
    if (is_host_copy(t, g))
        a->host_ns += g->dur;
    if (kvs_launch_acc_add(&b->lcache, b->lf, &a->launch, g) < 0)
        return KVS_STATUS_NO_MEMORY;
    if (b->in->act->v[i].step >= 0)
        a->gpu_ns_in_steps += g->dur;
    if (bare) {
        a->gpu_calls++;
        a->calls++;
        if (b->in->act->v[i].step >= 0) {
            a->calls_in_steps++;
            if (!kvs_u64map_put(&b->bare_steps, kvs_pair_key(gi, (uint32_t)b->in->act->v[i].step), &added))
                return KVS_STATUS_NO_MEMORY;
        }
    } else if (kvs_op_first_seen(b->seen, op)) {
        a->gpu_calls++;
    }
    return kvs_kernel_time_add(&b->ktime, gi, g->name, g->dur) < 0 ? KVS_STATUS_NO_MEMORY : KVS_STATUS_OK;
}

/* calls: every op call with a group's key; and in how many steps (a
 * preallocated buffer is touched in every step, a live token count is
 * not: [4099,1,576] in one step, [4100,1,576] in the next) */
static enum kvs_status count_calls(struct building *b)
{
    const struct kvs_trace_data *t = b->in->t;
    bool added;
    for (size_t k = 0; b->nacc && k < t->ops.n; k++) {
        uint32_t v = b->group_of_key[kvs_op_key(t, k)];
        if (!v || kvs_op_captured(t, k))
            continue;
        struct kvs_group_acc *a = &b->acc[v - 1];
        a->calls++;
        int32_t step = b->in->steps->n ? kvs_step_at(b->in->steps, kvs_op_ts(t, k)) : -1;
        if (step < 0)
            continue;
        a->calls_in_steps++;
        uint32_t *sv = kvs_u64map_put(&b->step_seen, kvs_pair_key(v - 1, (uint32_t)step), &added);
        if (!sv)
            return KVS_STATUS_NO_MEMORY;
        if (added)
            a->steps_with_calls++;
    }
    for (size_t j = 0; j < b->bare_steps.cap; j++) /* bare groups: their activities' steps */
        if (b->bare_steps.vals[j])
            b->acc[(uint32_t)(b->bare_steps.keys[j] >> 32)].steps_with_calls++;
    return KVS_STATUS_OK;
}

/* each group's busy time, top kernel and bytes per call */
static enum kvs_status finish_groups(struct building *b)
{
    const size_t nacc = b->nacc;
    int64_t *busy = calloc(nacc ? nacc : 1, sizeof *busy);
    struct kvs_top_kernel *top = calloc(nacc ? nacc : 1, sizeof *top);
    if (!busy || !top) {
        free(busy);
        free(top);
        return KVS_STATUS_NO_MEMORY;
    }
    kvs_kiv_busy(&b->iv, busy);
    kvs_kernel_time_top(&b->ktime, top, nacc);
    for (size_t gi = 0; gi < nacc; gi++) {
        b->acc[gi].gpu_busy_ns = busy[gi];
        b->acc[gi].top_kernel = top[gi].name;
        b->acc[gi].top_kernel_ns = top[gi].ns;
        bytes_per_call(b->in->t, &b->acc[gi]);
        size_from_launches(b->lf, &b->acc[gi]);
    }
    free(busy);
    free(top);
    if (nacc) /* acc is NULL when no group formed: qsort's pointer must not be */
        qsort(b->acc, nacc, sizeof *b->acc, cmp_group);
    return KVS_STATUS_OK;
}

enum kvs_status kvs_groups_build(const struct kvs_stage_in *in, const struct kvs_launch_facts *lf,
                                 struct kvs_group_table *out)
{
    const struct kvs_trace_data *t = in->t;
    struct building b = {.in = in, .lf = lf};
    b.seen = calloc(t->ops.n / 8 + 1, 1);
    b.byte_seen = calloc(t->ops.n / 8 + 1, 1);
    b.group_of_key = calloc(t->nopkeys ? t->nopkeys : 1, sizeof *b.group_of_key);
    b.key_is_copy = calloc(t->nopkeys ? t->nopkeys : 1, 1);
    enum kvs_status st = b.seen && b.byte_seen && b.group_of_key && b.key_is_copy ? KVS_STATUS_OK
                                                                                  : KVS_STATUS_NO_MEMORY;
    for (size_t i = 0; i < t->gpus.n && st == KVS_STATUS_OK; i++)
        if (joins(&b, i))
            st = add_activity(&b, i);
    if (st == KVS_STATUS_OK)
        st = count_calls(&b);
    if (st == KVS_STATUS_OK)
        st = finish_groups(&b);
    if (st == KVS_STATUS_OK) {
        out->v = b.acc;
        out->n = b.nacc;
        b.acc = NULL;
    }
    free(b.acc);
    kvs_kiv_free(&b.iv);
    free(b.seen);
    free(b.byte_seen);
    free(b.group_of_key);
    free(b.key_is_copy);
    kvs_launch_cache_free(b.lcache);
    kvs_u64map_free(&b.bare_groups);
    kvs_kernel_time_free(&b.ktime);
    kvs_u64map_free(&b.step_seen);
    kvs_u64map_free(&b.bare_steps);
    return st;
}
