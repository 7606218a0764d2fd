/* keep.c — turn a decoded event into retained records: intern its strings,
 * resolve its thread, pair 'B'/'E' events per thread, and append ops,
 * runtime calls, GPU activities and ranges to struct kvs_trace_data.
 * Private to reader/; event.c decodes, this keeps. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_impl.h"

bool kvs_reader_limit_at(struct kvs_scan *s, uint64_t off, const char *fmt, ...)
{
    if (s->status != KVS_STATUS_OK)
        return false;
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kvs_scan_fail(s, KVS_STATUS_LIMIT, "%s", msg);
    s->err_offset = off;
    return false;
}

// ----------------------------------------------------------------------------
// keeping

/* the records' sizes, which set the reader's memory per event kept */

static bool oom(struct kvs_reader *r)
{
    return kvs_scan_fail(&r->scan, KVS_STATUS_NO_MEMORY, "out of memory keeping trace records");
}

static bool intern_text(struct kvs_reader *r, const struct kvs_text *tx, bool has, uint32_t *id)
{
    if (!has) {
        *id = 0;
        return true;
    }
    *id = kvs_intern_id(&r->t->strings, tx->p, tx->len);
    return *id != KVS_INTERN_NONE || oom(r);
}

/* whether a string value contains needle (runtime call names are short) */
static bool text_has(const struct kvs_text *tx, bool has, const char *needle)
{
    size_t n = strlen(needle);
    if (!has || tx->len < n)
        return false;
    const char *s = tx->p;
    for (size_t i = 0; i + n <= tx->len; i++)
        if (s[i] == needle[0] && !memcmp(s + i, needle, n))
            return true;
    return false;
}

static bool thread_of(struct kvs_reader *r, const struct kvs_ev *e, uint32_t *id)
{
    char key[160];
    size_t n = 0;
    if (e->has_pid) {
        size_t l = e->pid.len < 70 ? e->pid.len : 70;
        memcpy(key, e->pid.p, l);
        n = l;
    }
    key[n++] = '\x1f';
    if (e->has_tid) {
        size_t l = e->tid.len < 70 ? e->tid.len : 70;
        memcpy(key + n, e->tid.p, l);
        n += l;
    }
    if (r->has_last_thread && n == r->last_tkey_len && !memcmp(key, r->last_tkey, n)) {
        *id = r->last_thread;
        return true;
    }
    *id = kvs_intern_id(&r->t->threads, key, n);
    if (*id == KVS_INTERN_NONE)
        return oom(r);
    if (*id >= KVS_READ_MAX_THREADS)
        return kvs_reader_limit_at(&r->scan, r->ev_off, "more than 2^30 threads (pid, tid pairs)");
    memcpy(r->last_tkey, key, n);
    r->last_tkey_len = n;
    r->last_thread = *id;
    r->has_last_thread = true;
    return true;
}

/* What the analysis asks of a runtime call's name, once per name: bit 2 a
 * graph launch, bit 4 a kernel launch; 0 when memory ran out. */
static uint8_t runtime_name_flags(struct kvs_reader *r, uint32_t name, const struct kvs_ev *e)
{
    if (name >= r->rt_name_cap) {
        size_t nc = r->rt_name_cap ? r->rt_name_cap : 1024;
        while (nc <= name)
            nc *= 2;
        uint8_t *p = realloc(r->rt_name, nc);
        if (!p)
            return 0;
        memset(p + r->rt_name_cap, 0, nc - r->rt_name_cap);
        r->rt_name = p;
        r->rt_name_cap = nc;
    }
    if (!r->rt_name[name]) {
        uint8_t f = 1;
        if (text_has(&e->name, e->has_name, "GraphLaunch"))
            f |= 2;
        if (text_has(&e->name, e->has_name, "LaunchKernel") ||
            text_has(&e->name, e->has_name, "LaunchCooperativeKernel"))
            f |= 4;
        r->rt_name[name] = f;
    }
    return r->rt_name[name];
}

static bool shape_of(struct kvs_reader *r, const struct kvs_ev *e, uint32_t *id)
{
    if (!e->has_dims && !e->has_types) {
        *id = 0;
        return true;
    }
    size_t need = (size_t)e->dims.len + e->types.len + 1;
    if (e->dims_over || e->types_over || need > KVS_READ_MAX_SHAPE) {
        r->t->shapes_cut++;
        *id = 0;
        return true;
    }
    if (need > r->scratch_cap) {
        size_t nc = need * 2;
        char *p = realloc(r->scratch, nc);
        if (!p)
            return oom(r);
        r->scratch = p;
        r->scratch_cap = nc;
    }
    char *w = r->scratch;
    if (e->has_dims) {
        memcpy(w, e->dims.p, e->dims.len);
        w += e->dims.len;
    }
    *w++ = '\x1f';
    if (e->has_types) {
        memcpy(w, e->types.p, e->types.len);
        w += e->types.len;
    }
    *id = kvs_intern_id(&r->t->strings, r->scratch, (size_t)(w - r->scratch));
    return *id != KVS_INTERN_NONE || oom(r);
}

/* 1: a step name, 0: not, -1: out of memory */
static int is_step_op(struct kvs_reader *r, uint32_t name)
{
    if (name >= r->step_name_cap) {
        size_t nc = r->step_name_cap ? r->step_name_cap : 1024;
        while (nc <= name)
            nc *= 2;
        uint8_t *p = realloc(r->step_name, nc);
        if (!p)
            return -1;
        memset(p + r->step_name_cap, 0, nc - r->step_name_cap);
        r->step_name = p;
        r->step_name_cap = nc;
    }
    if (!r->step_name[name]) {
        const char *s = kvs_intern_str(&r->t->strings, name);
        bool yes = r->opt->is_step_name ? r->opt->is_step_name(r->opt->step_user, s)
                                        : !strncmp(s, "ProfilerStep#", 13);
        r->step_name[name] = yes ? 1 : 2;
    }
    return r->step_name[name] == 1;
}

/* Limits hit by the current event are reported where the event starts. */
static bool ts_within_limits(struct kvs_reader *r, int64_t ts)
{
    return (ts >= KVS_READ_TS_MIN && ts <= KVS_READ_TS_MAX) ||
           kvs_reader_limit_at(&r->scan, r->ev_off,
                               "an event at %lld ns, outside the times a trace can hold ([-2^60, 2^62] ns)",
                               (long long)ts);
}

static bool emit(struct kvs_reader *r, const struct kvs_dec_event *d)
{
    struct kvs_trace_data *t = r->t;
    /* ts was checked when the event was read; d->dur >= 0 */
    if (d->dur > KVS_READ_MAX_TOTAL - r->kept_ns)
        return kvs_reader_limit_at(&r->scan, r->ev_off,
                                   "an event lasting %lld ns takes the events' total time past 2^60 ns",
                                   (long long)d->dur);
    r->kept_ns += d->dur;
    int64_t bytes = d->bytes > 0 ? d->bytes : 0;
    if (bytes > KVS_READ_MAX_TOTAL - r->kept_bytes)
        return kvs_reader_limit_at(&r->scan, r->ev_off,
                                   "a copy of %lld bytes takes the copies' total past 2^60 bytes",
                                   (long long)d->bytes);
    r->kept_bytes += bytes;
    switch (d->cat) {
    case KVS_EV_OP: {
        bool added;
        uint32_t *k = kvs_u64map_put(&t->opkey_map, kvs_pair_key(d->name, d->shape), &added);
        if (!k)
            return oom(r);
        if (added) {
            struct kvs_opkey ok = {d->name, d->shape};
            if (KVS_VEC_PUSH(t->opkeys, t->nopkeys, t->opkeys_cap, ok) < 0)
                return oom(r);
            *k = (uint32_t)t->nopkeys; /* index + 1 */
        }
        struct kvs_op_rec o = {d->ts, d->dur, d->ext, *k - 1, d->thread, 0};
        if (t->ops_ext_sorted && (d->ext <= 0 || (t->ops.n && d->ext <= kvs_op_ext(t, t->ops.n - 1))))
            t->ops_ext_sorted = false;
        t->n_ops++;
        if (kvs_op_push(t, &o) < 0)
            return oom(r);
        int step = is_step_op(r, d->name);
        if (step < 0)
            return oom(r);
        if (step) {
            struct kvs_range_rec g = {d->ts, d->dur, d->name, d->thread};
            if (KVS_VEC_PUSH(t->ranges, t->nranges, t->ranges_cap, g) < 0)
                return oom(r);
        }
        return true;
    }
    case KVS_EV_USER: {
        struct kvs_range_rec g = {d->ts, d->dur, d->name, d->thread};
        return KVS_VEC_PUSH(t->ranges, t->nranges, t->ranges_cap, g) == 0 || oom(r);
    }
    case KVS_EV_KERNEL:
    case KVS_EV_MEMCPY:
    case KVS_EV_MEMSET: {
        uint8_t kind = d->cat == KVS_EV_KERNEL   ? KVS_GPU_KERNEL
                     : d->cat == KVS_EV_MEMCPY ? KVS_GPU_MEMCPY
                                            : KVS_GPU_MEMSET;
        if (kind == KVS_GPU_KERNEL)
            t->n_kernels++;
        else if (kind == KVS_GPU_MEMCPY)
            t->n_memcpys++;
        else
            t->n_memsets++;
        if (d->name >= KVS_READ_MAX_GPU_NAME)
            return kvs_reader_limit_at(&r->scan, r->ev_off, "more than 2^29 distinct names and shapes");
        struct kvs_gpu_rec g = {.ts = d->ts, .dur = d->dur, .ext = d->ext, .corr = d->corr,
                                .bytes = d->bytes, .grid_blocks = d->grid_blocks, .name = d->name,
                                .kind = kind, .graph_node = d->graph_node, .device = d->device,
                                .stream = d->stream, .block_threads = d->block_threads};
        return kvs_gpu_push(t, &g) == 0 || oom(r);
    }
    case KVS_EV_RUNTIME: {
        t->n_runtime++;
        if (d->corr == 0 && d->ext == 0)
            return true;
        struct kvs_rt_rec rt = {.ts = d->ts, .dur = d->dur, .corr = d->corr, .ext = d->ext,
                                .name = d->name, .thread = d->thread,
                                .graph_launch = d->graph_launch, .kernel_launch = d->kernel_launch};
        return kvs_rt_push(t, &rt) == 0 || oom(r);
    }
    default:
        return true;
    }
}

static int64_t text_int(const struct kvs_text *tx, bool has)
{
    if (!has || tx->len == 0 || tx->len > 30)
        return 0;
    char tmp[32];
    memcpy(tmp, tx->p, tx->len);
    tmp[tx->len] = 0;
    return strtoll(tmp, NULL, 10);
}

static bool resolve(struct kvs_reader *r, const struct kvs_ev *e, uint8_t cat, struct kvs_dec_event *d)
{
    memset(d, 0, sizeof *d);
    d->cat = cat;
    d->ts = e->ts;
    d->dur = e->dur > 0 ? e->dur : 0;
    d->ext = e->ext;
    d->corr = e->corr;
    d->bytes = e->bytes;
    bool gpu = cat == KVS_EV_KERNEL || cat == KVS_EV_MEMCPY || cat == KVS_EV_MEMSET;
    if (!intern_text(r, &e->name, e->has_name, &d->name))
        return false;
    if (cat == KVS_EV_RUNTIME) { /* what the analysis asks of a call's name, once */
        uint8_t f = runtime_name_flags(r, d->name, e);
        if (!f)
            return oom(r);
        d->graph_launch = f & 2;
        d->kernel_launch = f & 4;
    }
    if (cat == KVS_EV_OP && !shape_of(r, e, &d->shape))
        return false;
    if (!gpu && !thread_of(r, e, &d->thread))
        return false;
    if (gpu) {
        d->device = (int32_t)(e->has_device ? e->device : text_int(&e->pid, e->has_pid));
        d->stream = (int32_t)(e->has_stream ? e->stream : text_int(&e->tid, e->has_tid));
        d->grid_blocks = e->grid_blocks;
        d->block_threads = (int32_t)e->block_threads;
        d->graph_node = e->graph_node != 0;
    }
    return true;
}

static struct kvs_thread_stack *stack_of(struct kvs_reader *r, uint32_t thread)
{
    if (thread >= r->nstacks) {
        size_t n = r->nstacks ? r->nstacks * 2 : 16;
        while (n <= thread)
            n *= 2;
        struct kvs_thread_stack *p = realloc(r->stacks, n * sizeof *p);
        if (!p)
            return NULL;
        memset(p + r->nstacks, 0, (n - r->nstacks) * sizeof *p);
        r->stacks = p;
        r->nstacks = n;
    }
    return &r->stacks[thread];
}

void kvs_reader_free_stacks(struct kvs_reader *r)
{
    for (size_t i = 0; i < r->nstacks; i++)
        free(r->stacks[i].v);
    free(r->stacks);
    r->stacks = NULL;
    r->nstacks = 0;
}

/* 'B' opens a range on its thread, 'E' closes the innermost one. */
static bool begin_end(struct kvs_reader *r, const struct kvs_ev *e, uint8_t cat)
{
    uint32_t thread;
    if (!thread_of(r, e, &thread))
        return false;
    struct kvs_thread_stack *st = stack_of(r, thread);
    if (!st)
        return oom(r);
    if (e->ph == 'B') {
        struct kvs_dec_event d;
        if (!resolve(r, e, cat, &d))
            return false;
        d.thread = thread;
        return KVS_VEC_PUSH(st->v, st->n, st->cap, d) == 0 || oom(r);
    }
    if (st->n == 0) {
        r->t->unmatched_end++;
        return true;
    }
    struct kvs_dec_event d = st->v[--st->n];
    d.dur = e->ts > d.ts ? e->ts - d.ts : 0; /* both within the ts limits: no overflow */
    if (d.cat == KVS_EV_NONE && cat != KVS_EV_NONE) {
        d.cat = cat; /* "cat" given on the 'E' only */
    }
    if (!d.ext)
        d.ext = e->ext;
    if (!d.corr)
        d.corr = e->corr;
    return emit(r, &d);
}

bool kvs_keep_event(struct kvs_reader *r, const struct kvs_ev *e, uint8_t cat)
{
    if (e->ph == 'X') {
        if (cat == KVS_EV_NONE || cat == KVS_EV_OTHER)
            return true;
        if (!ts_within_limits(r, e->ts))
            return false;
        struct kvs_dec_event d;
        return resolve(r, e, cat, &d) && emit(r, &d);
    }
    if (e->ph == 'B' || e->ph == 'E') {
        return ts_within_limits(r, e->ts) && begin_end(r, e, cat);
    }
    return true; /* i, I, s, t, f, M, C, b, e, n, ...: counted, not kept */
}

