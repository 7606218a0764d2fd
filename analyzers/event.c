/* event.c — decode one traceEvents entry and keep what the analysis needs.
 *
 * The hot path of the reader: keys are matched by length and bytes, values
 * nobody reads (Concrete Inputs, strides, kernel occupancy, flow ids, ...)
 * are skipped without being decoded, and kept strings are interned. Spans
 * are stored as offsets from the scanner's mark (set at the event's '{'),
 * because a refill may move the buffer while the event is being read.
 * Private to analyzers/.
 */
#include <stdio.h>
#include <string.h>

#include "reader_impl.h"

enum ev_cat {
    CAT_NONE = 0,
    CAT_OP,
    CAT_USER,
    CAT_KERNEL,
    CAT_MEMCPY,
    CAT_MEMSET,
    CAT_RUNTIME,
    CAT_OTHER,
};

struct span {
    uint32_t off, len;
};

struct ev {
    char ph;
    bool has_cat, has_name, has_pid, has_tid, has_dims, has_types;
    bool has_ts, has_dur, has_device, has_stream;
    struct span cat, name, pid, tid, dims, types;
    int64_t ts, dur;
    int64_t ext, corr, bytes, device, stream;
};

#define dec kvs_dec_event

#define KEY(k, lit) ((k##_len) == sizeof(lit) - 1 && !memcmp((k), (lit), sizeof(lit) - 1))

static bool span_of(struct kvs_scan *s, struct span *sp)
{
    const char *str;
    size_t len;
    if (!kvs_scan_string(s, &str, &len))
        return false;
    if (len > UINT32_MAX || (size_t)(str - s->mark) > UINT32_MAX)
        return kvs_scan_fail(s, KVS_STATUS_LIMIT, "an event larger than 4 GiB");
    sp->off = (uint32_t)(str - s->mark);
    sp->len = (uint32_t)len;
    return true;
}

/* A number, or a string holding one ("stream": "0x0" reads as 0). */
static bool int_value(struct kvs_scan *s, int c, int64_t *out, bool *has)
{
    if (c == '"') {
        const char *str;
        size_t len;
        if (!kvs_scan_string(s, &str, &len))
            return false;
        char tmp[32];
        size_t n = len < sizeof tmp - 1 ? len : sizeof tmp - 1;
        memcpy(tmp, str, n);
        tmp[n] = 0;
        char *end;
        long long v = strtoll(tmp, &end, 0);
        if (end != tmp) {
            *out = v;
            if (has)
                *has = true;
        }
        return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        struct kvs_number num;
        if (!kvs_scan_number(s, &num))
            return false;
        *out = kvs_number_int(&num);
        if (has)
            *has = true;
        return true;
    }
    return kvs_scan_skip(s); /* null, lists, ...: not an id */
}

/* pid / tid: numbers or strings; kept as text for the thread key. */
static bool id_value(struct kvs_scan *s, int c, struct span *sp, bool *has)
{
    if (c == '"') {
        if (!span_of(s, sp))
            return false;
        *has = true;
        return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        struct kvs_number num;
        if (!kvs_scan_number(s, &num))
            return false;
        sp->off = (uint32_t)(num.text - s->mark);
        sp->len = (uint32_t)num.len;
        *has = true;
        return true;
    }
    return kvs_scan_skip(s);
}

static bool time_value(struct kvs_scan *s, int c, int64_t *out, bool *has)
{
    if (c == '-' || (c >= '0' && c <= '9')) {
        struct kvs_number num;
        if (!kvs_scan_number(s, &num))
            return false;
        *out = kvs_number_us_to_ns(&num);
        *has = true;
        return true;
    }
    return kvs_scan_skip(s); /* a time that is not a number is ignored */
}

static bool capture_span(struct kvs_scan *s, struct span *sp, bool *has)
{
    const char *start;
    size_t len;
    if (!kvs_scan_capture(s, &start, &len))
        return false;
    sp->off = (uint32_t)(start - s->mark);
    sp->len = (uint32_t)len;
    *has = true;
    return true;
}

static bool parse_args(struct kvs_scan *s, struct ev *e)
{
    int c = kvs_scan_peek(s);
    if (c != '{')
        return kvs_scan_skip(s); /* args that are not an object carry nothing we read */
    s->p++;
    c = kvs_scan_peek(s);
    if (c == '}') {
        s->p++;
        return true;
    }
    for (;;) {
        if (c != '"')
            return c == KVS_SCAN_ERROR ? false : kvs_scan_expect(s, '"', "a string key in args");
        const char *k;
        size_t k_len;
        if (!kvs_scan_string(s, &k, &k_len))
            return false;
        /* decide before the next scanner call: k may move on a refill */
        int which = 0;
        switch (k_len) {
        case 5: which = KEY(k, "bytes") ? 1 : 0; break;
        case 6: which = KEY(k, "device") ? 2 : KEY(k, "stream") ? 3 : 0; break;
        case 10: which = KEY(k, "Input Dims") ? 4 : KEY(k, "Input type") ? 5 : 0; break;
        case 11:
            which = KEY(k, "External id") || KEY(k, "external id") ? 6
                  : KEY(k, "correlation")                          ? 7
                                                                   : 0;
            break;
        default: break;
        }
        if (!kvs_scan_expect(s, ':', "':' after a key in args"))
            return false;
        c = kvs_scan_peek(s);
        bool ok;
        switch (which) {
        case 1: ok = int_value(s, c, &e->bytes, NULL); break;
        case 2: ok = int_value(s, c, &e->device, &e->has_device); break;
        case 3: ok = int_value(s, c, &e->stream, &e->has_stream); break;
        case 4: ok = capture_span(s, &e->dims, &e->has_dims); break;
        case 5: ok = capture_span(s, &e->types, &e->has_types); break;
        case 6: ok = int_value(s, c, &e->ext, NULL); break;
        case 7: ok = int_value(s, c, &e->corr, NULL); break;
        default: ok = kvs_scan_skip(s); break;
        }
        if (!ok)
            return false;
        c = kvs_scan_peek(s);
        if (c == ',') {
            s->p++;
            c = kvs_scan_peek(s);
            continue;
        }
        if (c == '}') {
            s->p++;
            return true;
        }
        return c == KVS_SCAN_ERROR ? false : kvs_scan_expect(s, '}', "',' or '}' in args");
    }
}

static uint8_t classify_cat(const char *k, size_t k_len)
{
    switch (k_len) {
    case 6:
        if (KEY(k, "cpu_op")) return CAT_OP;
        if (KEY(k, "kernel") || KEY(k, "Kernel")) return CAT_KERNEL;
        if (KEY(k, "Memcpy")) return CAT_MEMCPY;
        if (KEY(k, "Memset")) return CAT_MEMSET;
        if (KEY(k, "Driver")) return CAT_RUNTIME;
        break;
    case 7:
        if (KEY(k, "Runtime")) return CAT_RUNTIME;
        break;
    case 8:
        if (KEY(k, "Operator") || KEY(k, "operator")) return CAT_OP;
        break;
    case 10:
        if (KEY(k, "gpu_memcpy")) return CAT_MEMCPY;
        if (KEY(k, "gpu_memset")) return CAT_MEMSET;
        break;
    case 11:
        if (KEY(k, "cuda_driver")) return CAT_RUNTIME;
        if (KEY(k, "hip_runtime")) return CAT_RUNTIME;
        break;
    case 12:
        if (KEY(k, "cuda_runtime")) return CAT_RUNTIME;
        break;
    case 15:
        if (KEY(k, "user_annotation")) return CAT_USER;
        break;
    default: break;
    }
    return CAT_OTHER;
}

// ----------------------------------------------------------------------------
// keeping

static bool oom(struct kvs_reader *r)
{
    return kvs_scan_fail(&r->scan, KVS_STATUS_NO_MEMORY, "out of memory keeping trace records");
}

static bool intern_span(struct kvs_reader *r, const struct span *sp, bool has, uint32_t *id)
{
    if (!has) {
        *id = 0;
        return true;
    }
    *id = kvs_intern_id(&r->t->strings, r->scan.mark + sp->off, sp->len);
    return *id != KVS_INTERN_NONE || oom(r);
}

static bool thread_of(struct kvs_reader *r, const struct ev *e, uint32_t *id)
{
    char key[160];
    size_t n = 0;
    if (e->has_pid) {
        size_t l = e->pid.len < 70 ? e->pid.len : 70;
        memcpy(key, r->scan.mark + e->pid.off, l);
        n = l;
    }
    key[n++] = '\x1f';
    if (e->has_tid) {
        size_t l = e->tid.len < 70 ? e->tid.len : 70;
        memcpy(key + n, r->scan.mark + e->tid.off, l);
        n += l;
    }
    *id = kvs_intern_id(&r->t->threads, key, n);
    return *id != KVS_INTERN_NONE || oom(r);
}

static bool shape_of(struct kvs_reader *r, const struct ev *e, uint32_t *id)
{
    if (!e->has_dims && !e->has_types) {
        *id = 0;
        return true;
    }
    size_t need = (size_t)e->dims.len + e->types.len + 1;
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
        memcpy(w, r->scan.mark + e->dims.off, e->dims.len);
        w += e->dims.len;
    }
    *w++ = '\x1f';
    if (e->has_types) {
        memcpy(w, r->scan.mark + e->types.off, e->types.len);
        w += e->types.len;
    }
    *id = kvs_intern_id(&r->t->strings, r->scratch, (size_t)(w - r->scratch));
    return *id != KVS_INTERN_NONE || oom(r);
}

static bool is_step_op(struct kvs_reader *r, uint32_t name)
{
    if (name >= r->step_name_cap) {
        size_t nc = r->step_name_cap ? r->step_name_cap : 1024;
        while (nc <= name)
            nc *= 2;
        uint8_t *p = realloc(r->step_name, nc);
        if (!p)
            return false;
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

static bool emit(struct kvs_reader *r, const struct dec *d)
{
    struct kvs_trace_data *t = r->t;
    switch (d->cat) {
    case CAT_OP: {
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
        struct kvs_op_rec o = {d->ts, d->dur, d->ext, *k - 1, d->thread};
        if (t->ops_ext_sorted && (d->ext <= 0 || (t->nops && d->ext <= t->ops[t->nops - 1].ext)))
            t->ops_ext_sorted = false;
        t->n_ops++;
        if (KVS_VEC_PUSH(t->ops, t->nops, t->ops_cap, o) < 0)
            return oom(r);
        if (is_step_op(r, d->name)) {
            struct kvs_range_rec g = {d->ts, d->dur, d->name, d->thread};
            if (KVS_VEC_PUSH(t->ranges, t->nranges, t->ranges_cap, g) < 0)
                return oom(r);
        }
        return true;
    }
    case CAT_USER: {
        struct kvs_range_rec g = {d->ts, d->dur, d->name, d->thread};
        return KVS_VEC_PUSH(t->ranges, t->nranges, t->ranges_cap, g) == 0 || oom(r);
    }
    case CAT_KERNEL:
    case CAT_MEMCPY:
    case CAT_MEMSET: {
        uint8_t kind = d->cat == CAT_KERNEL   ? KVS_GPU_KERNEL
                     : d->cat == CAT_MEMCPY ? KVS_GPU_MEMCPY
                                            : KVS_GPU_MEMSET;
        if (kind == KVS_GPU_KERNEL)
            t->n_kernels++;
        else if (kind == KVS_GPU_MEMCPY)
            t->n_memcpys++;
        else
            t->n_memsets++;
        struct kvs_gpu_rec g = {d->ts,   d->dur,    d->ext,    d->corr, d->bytes,
                                d->name, d->device, d->stream, kind};
        return KVS_VEC_PUSH(t->gpus, t->ngpus, t->gpus_cap, g) == 0 || oom(r);
    }
    case CAT_RUNTIME: {
        t->n_runtime++;
        if (d->corr == 0 && d->ext == 0)
            return true;
        struct kvs_rt_rec rt = {d->ts, d->corr, d->ext, d->thread, d->name};
        return KVS_VEC_PUSH(t->rts, t->nrts, t->rts_cap, rt) == 0 || oom(r);
    }
    default:
        return true;
    }
}

static int64_t span_int(const struct kvs_reader *r, const struct span *sp, bool has)
{
    if (!has || sp->len == 0 || sp->len > 30)
        return 0;
    char tmp[32];
    memcpy(tmp, r->scan.mark + sp->off, sp->len);
    tmp[sp->len] = 0;
    return strtoll(tmp, NULL, 10);
}

static bool resolve(struct kvs_reader *r, const struct ev *e, uint8_t cat, struct dec *d)
{
    memset(d, 0, sizeof *d);
    d->cat = cat;
    d->ts = e->ts;
    d->dur = e->dur > 0 ? e->dur : 0;
    d->ext = e->ext;
    d->corr = e->corr;
    d->bytes = e->bytes;
    bool gpu = cat == CAT_KERNEL || cat == CAT_MEMCPY || cat == CAT_MEMSET;
    if (cat != CAT_RUNTIME && !intern_span(r, &e->name, e->has_name, &d->name))
        return false;
    if (cat == CAT_OP && !shape_of(r, e, &d->shape))
        return false;
    if (!gpu && !thread_of(r, e, &d->thread))
        return false;
    if (gpu) {
        d->device = (int32_t)(e->has_device ? e->device : span_int(r, &e->pid, e->has_pid));
        d->stream = (int32_t)(e->has_stream ? e->stream : span_int(r, &e->tid, e->has_tid));
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
static bool begin_end(struct kvs_reader *r, const struct ev *e, uint8_t cat)
{
    uint32_t thread;
    if (!thread_of(r, e, &thread))
        return false;
    struct kvs_thread_stack *st = stack_of(r, thread);
    if (!st)
        return oom(r);
    if (e->ph == 'B') {
        struct dec d;
        if (!resolve(r, e, cat, &d))
            return false;
        d.thread = thread;
        return KVS_VEC_PUSH(st->v, st->n, st->cap, d) == 0 || oom(r);
    }
    if (st->n == 0) {
        r->t->unmatched_end++;
        return true;
    }
    struct dec d = st->v[--st->n];
    d.dur = e->ts > d.ts ? e->ts - d.ts : 0;
    if (d.cat == CAT_NONE && cat != CAT_NONE) {
        d.cat = cat; /* "cat" given on the 'E' only */
    }
    if (!d.ext)
        d.ext = e->ext;
    if (!d.corr)
        d.corr = e->corr;
    return emit(r, &d);
}

static bool dispatch(struct kvs_reader *r, const struct ev *e)
{
    uint8_t cat = CAT_NONE;
    if (e->has_cat)
        cat = classify_cat(r->scan.mark + e->cat.off, e->cat.len);
    if (e->ph == 'X') {
        if (cat == CAT_NONE || cat == CAT_OTHER)
            return true;
        struct dec d;
        return resolve(r, e, cat, &d) && emit(r, &d);
    }
    if (e->ph == 'B' || e->ph == 'E') {
        return begin_end(r, e, cat);
    }
    return true; /* i, I, s, t, f, M, C, b, e, n, ...: counted, not kept */
}

/* One event object; the mark is at its '{'. */
static bool parse_event(struct kvs_reader *r)
{
    struct kvs_scan *s = &r->scan;
    if (*s->p != '{')
        return kvs_scan_expect(s, '{', "an event object");
    s->p++;
    struct ev e;
    memset(&e, 0, sizeof e);
    int c = kvs_scan_peek(s);
    if (c == '}') {
        s->p++;
        return true;
    }
    for (;;) {
        if (c != '"')
            return c == KVS_SCAN_ERROR ? false : kvs_scan_expect(s, '"', "a string key in an event");
        const char *k;
        size_t k_len;
        if (!kvs_scan_string(s, &k, &k_len))
            return false;
        int which = 0;
        switch (k_len) {
        case 2: which = KEY(k, "ph") ? 1 : KEY(k, "ts") ? 2 : 0; break;
        case 3:
            which = KEY(k, "cat") ? 3 : KEY(k, "dur") ? 4 : KEY(k, "pid") ? 5 : KEY(k, "tid") ? 6 : 0;
            break;
        case 4: which = KEY(k, "name") ? 7 : KEY(k, "args") ? 8 : 0; break;
        default: break;
        }
        if (!kvs_scan_expect(s, ':', "':' after a key in an event"))
            return false;
        c = kvs_scan_peek(s);
        bool ok;
        switch (which) {
        case 1: {
            struct span sp;
            ok = c == '"' ? span_of(s, &sp) : kvs_scan_skip(s);
            if (ok && c == '"')
                e.ph = sp.len ? s->mark[sp.off] : 0;
            break;
        }
        case 2: ok = time_value(s, c, &e.ts, &e.has_ts); break;
        case 3:
            ok = c == '"' ? span_of(s, &e.cat) : kvs_scan_skip(s);
            e.has_cat = ok && c == '"';
            break;
        case 4: ok = time_value(s, c, &e.dur, &e.has_dur); break;
        case 5: ok = id_value(s, c, &e.pid, &e.has_pid); break;
        case 6: ok = id_value(s, c, &e.tid, &e.has_tid); break;
        case 7:
            ok = c == '"' ? span_of(s, &e.name) : kvs_scan_skip(s);
            e.has_name = ok && c == '"';
            break;
        case 8: ok = parse_args(s, &e); break;
        default: ok = kvs_scan_skip(s); break;
        }
        if (!ok)
            return false;
        c = kvs_scan_peek(s);
        if (c == ',') {
            s->p++;
            c = kvs_scan_peek(s);
            continue;
        }
        if (c == '}') {
            s->p++;
            break;
        }
        return c == KVS_SCAN_ERROR ? false : kvs_scan_expect(s, '}', "',' or '}' in an event");
    }
    return dispatch(r, &e);
}

bool kvs_reader_events(struct kvs_reader *r)
{
    struct kvs_scan *s = &r->scan;
    if (!kvs_scan_expect(s, '[', "'[' (traceEvents must be an array)"))
        return false;
    int c = kvs_scan_peek(s);
    if (c == ']') {
        s->p++;
        return true;
    }
    for (;;) {
        if (c == KVS_SCAN_ERROR)
            return false;
        if (c == KVS_SCAN_EOF)
            return kvs_scan_fail(s, KVS_STATUS_TRUNCATED, "input ended inside traceEvents");
        kvs_scan_set_mark(s);
        bool ok = parse_event(r);
        kvs_scan_clear_mark(s);
        if (!ok)
            return false;
        r->t->events++;
        c = kvs_scan_peek(s);
        if (c == ',') {
            s->p++;
            c = kvs_scan_peek(s);
            continue;
        }
        if (c == ']') {
            s->p++;
            return true;
        }
        if (c == KVS_SCAN_ERROR)
            return false;
        return kvs_scan_expect(s, ']', "',' or ']' after an event");
    }
}
