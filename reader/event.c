/* event.c — decode traceEvents entries; keep.c keeps what the analysis needs.
 *
 * The hot path of the reader: keys are matched by length and bytes, values
 * nobody reads (Concrete Inputs, strides, kernel occupancy, flow ids, ...)
 * are skipped without being decoded, streaming across refills whatever their
 * size. The fields that are kept point into the scanner's buffer and are
 * copied out only when a refill would move them (struct kvs_text), so the
 * buffer holds one value at a time, never the event: an event's memory is
 * what it keeps (Input Dims and Input type at most KVS_READ_MAX_SHAPE each;
 * larger ones are skipped and counted), not what it carries. Private to
 * reader/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_impl.h"

#define KEY(k, lit) ((k##_len) == sizeof(lit) - 1 && !memcmp((k), (lit), sizeof(lit) - 1))

/* Copy text[0..n) (in the scanner's buffer) into field f's buffer. */
static bool keep_text(struct kvs_reader *r, enum kvs_ev_field f, const char *text, size_t n,
                      struct kvs_text *out)
{
    struct kvs_textbuf *b = &r->fields[f];
    if (n > b->cap) {
        size_t nc = b->cap * 2 > n ? b->cap * 2 : n < 256 ? 256 : n;
        char *p = realloc(b->p, nc);
        if (!p)
            return kvs_scan_fail(&r->scan, KVS_STATUS_NO_MEMORY, "out of memory keeping trace records");
        b->p = p;
        b->cap = nc;
    }
    if (n)
        memcpy(b->p, text, n);
    out->p = b->p;
    out->len = (uint32_t)n; /* n <= KVS_SCAN_MAX_STRING or KVS_READ_MAX_SHAPE */
    out->in_scan = false;
    return true;
}

/* text[0..n) in the scanner's buffer: kept there until a refill moves it */
static void set_text(struct kvs_text *out, const char *text, size_t n)
{
    out->p = text;
    out->len = (uint32_t)n; /* n <= KVS_SCAN_MAX_STRING or KVS_READ_MAX_SHAPE */
    out->in_scan = true;
}

void kvs_reader_before_move(void *user, struct kvs_scan *s)
{
    (void)s;
    struct kvs_reader *r = user;
    struct kvs_ev *e = r->cur;
    if (!e)
        return;
    struct kvs_text *tx[KVS_F_COUNT_] = {
        [KVS_F_CAT] = &e->cat, [KVS_F_NAME] = &e->name, [KVS_F_PID] = &e->pid,
        [KVS_F_TID] = &e->tid, [KVS_F_DIMS] = &e->dims, [KVS_F_TYPES] = &e->types,
    };
    for (int f = 0; f < KVS_F_COUNT_; f++)
        if (tx[f]->in_scan && !keep_text(r, (enum kvs_ev_field)f, tx[f]->p, tx[f]->len, tx[f]))
            return;
}

void kvs_reader_free_fields(struct kvs_reader *r)
{
    for (int f = 0; f < KVS_F_COUNT_; f++) {
        free(r->fields[f].p);
        r->fields[f] = (struct kvs_textbuf){0};
    }
}

static bool text_of(struct kvs_reader *r, struct kvs_text *out)
{
    const char *str;
    size_t len;
    if (!kvs_scan_string(&r->scan, &str, &len))
        return false;
    set_text(out, str, len);
    return true;
}

/* A string's text; a value of any other type is skipped. */
static bool string_value(struct kvs_reader *r, int c, struct kvs_text *out, bool *has)
{
    bool ok = c == '"' ? text_of(r, out) : kvs_scan_skip(&r->scan);
    *has = ok && c == '"';
    return ok;
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
static bool id_value(struct kvs_reader *r, int c, struct kvs_text *out, bool *has)
{
    struct kvs_scan *s = &r->scan;
    if (c == '"') {
        if (!text_of(r, out))
            return false;
        *has = true;
        return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        struct kvs_number num;
        if (!kvs_scan_number(s, &num))
            return false;
        set_text(out, num.text, num.len);
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

/* Input Dims / Input type: the raw text, kept when it is at most
 * KVS_READ_MAX_SHAPE; a larger one is skipped (streamed, never held) and
 * *over said, so the op has no shape (keep.c counts it). */
static bool capture_text(struct kvs_reader *r, struct kvs_text *out, bool *has, bool *over)
{
    const char *start;
    size_t len;
    if (!kvs_scan_capture_max(&r->scan, KVS_READ_MAX_SHAPE, &start, &len, over))
        return false;
    *has = true;
    if (*over) {
        *out = (struct kvs_text){0};
        return true;
    }
    set_text(out, start, len);
    return true;
}

/* Input Dims: no flat list (a tensor's dims) longer than KVS_READ_MAX_RANK.
 * Lists holding lists (tensor lists) are not ranks and are not counted.
 * False with *list_off (the offending list's offset in t) and *rank. */
bool kvs_dims_rank_ok(const char *text, size_t len, size_t *list_off, size_t *rank)
{
    const char *p = text, *end = p + len, *list = NULL;
    int depth = 0;
    size_t items = 0;
    bool nested = false, item = false;
    for (; p < end; p++) {
        char c = *p;
        if (c == '"') { /* a string entry: skip it, escapes included */
            for (p++; p < end && *p != '"'; p++)
                p += *p == '\\';
            item = true;
        } else if (c == '[' || c == '{') {
            if (++depth == 2) {
                list = p;
                items = 0;
                nested = item = false;
            } else if (depth > 2) {
                nested = true;
            }
        } else if (c == ']' || c == '}') {
            if (depth == 2 && !nested && items + item > KVS_READ_MAX_RANK) {
                *list_off = (size_t)(list - text);
                *rank = items + item;
                return false;
            }
            depth--;
        } else if (depth == 2 && c == ',') {
            items++;
            item = false;
        } else if (depth == 2 && c != ' ' && c != '\n' && c != '\t' && c != '\r') {
            item = true;
        }
    }
    return true;
}

/* off: the input offset of the text's first byte. */
static bool dims_within_limits(struct kvs_scan *s, const struct kvs_text *t, uint64_t off)
{
    size_t at, rank;
    if (kvs_dims_rank_ok(t->p, t->len, &at, &rank))
        return true;
    return kvs_reader_limit_at(s, off + (uint64_t)at, "a tensor of rank %zu in Input Dims (more than %d)",
                               rank, KVS_READ_MAX_RANK);
}


/* "grid": [x, y, z] / "block": [x, y, z] -> x*y*z; anything else (or a
 * product that is not a sensible launch: a dim <= 0, above 2^31) leaves 0.
 * text[0..len): the list's raw text, its '[' first. */
void kvs_launch_dims_of(const char *text, size_t len, int64_t *out)
{
    int64_t prod = 1;
    int dims = 0;
    const char *p = text + 1, *end = text + len;
    while (p < end && dims < 4) {
        while (p < end && (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t' || *p == '\r'))
            p++;
        if (p >= end || *p == ']')
            break;
        const char *q = p;
        long long v = 0;
        if ((unsigned)(*p - '0') <= 9) {
            /* strtoll's reading of a digit run, without its set-up; past
             * 2^31 the value no longer matters, only that it is too big */
            for (; q < end && (unsigned)(*q - '0') <= 9; q++)
                if (v <= ((int64_t)1 << 31))
                    v = v * 10 + (*q - '0');
        } else {
            char *e;
            v = strtoll(p, &e, 10);
            q = e;
        }
        if (q == p || v <= 0 || v > ((int64_t)1 << 31))
            return;
        if (__builtin_mul_overflow(prod, (int64_t)v, &prod))
            return;
        dims++;
        p = q;
    }
    *out = dims >= 1 && dims <= 3 ? prod : 0;
}

static bool launch_dims_value(struct kvs_scan *s, int c, int64_t *out)
{
    if (c != '[')
        return kvs_scan_skip(s);
    const char *start;
    size_t len;
    bool over;
    if (!kvs_scan_capture_max(s, LAUNCH_DIMS_MAX, &start, &len, &over))
        return false;
    if (!over)
        kvs_launch_dims_of(start, len, out);
    return true;
}

static bool parse_args(struct kvs_reader *r, struct kvs_ev *e)
{
    struct kvs_scan *s = &r->scan;
    if (kvs_scan_peek(s) != '{')
        return kvs_scan_skip(s); /* args that are not an object carry nothing we read */
    s->p++;
    struct kvs_scan_members m = {.key = "a string key in args",
                                 .colon = "':' after a key in args",
                                 .next = "',' or '}' in args"};
    const char *k;
    size_t k_len;
    while (kvs_scan_member(s, &m, &k, &k_len)) {
        /* decide before the next scanner call: k may move on a refill */
        int which = kvs_args_key(k, k_len);
        int c;
        if (!kvs_scan_member_value(s, &m, &c))
            return false;
        bool ok;
        switch (which) {
        case 1: ok = int_value(s, c, &e->bytes, NULL); break;
        case 2: ok = int_value(s, c, &e->device, &e->has_device); break;
        case 3: ok = int_value(s, c, &e->stream, &e->has_stream); break;
        case 4: {
            uint64_t off = kvs_scan_offset(s); /* the value's first byte (peeked) */
            ok = capture_text(r, &e->dims, &e->has_dims, &e->dims_over) &&
                 (e->dims_over || dims_within_limits(s, &e->dims, off));
            break;
        }
        case 5: ok = capture_text(r, &e->types, &e->has_types, &e->types_over); break;
        case 6: ok = int_value(s, c, &e->ext, NULL); break;
        case 7: ok = int_value(s, c, &e->corr, NULL); break;
        case 8: ok = launch_dims_value(s, c, &e->grid_blocks); break;
        case 9: ok = launch_dims_value(s, c, &e->block_threads); break;
        case 10: ok = int_value(s, c, &e->graph_node, NULL); break;
        default: ok = kvs_scan_skip(s); break;
        }
        if (!ok)
            return false;
    }
    return m.ok;
}

static uint8_t classify_cat(const char *k, size_t k_len)
{
    switch (k_len) {
    case 6:
        if (KEY(k, "cpu_op")) return KVS_EV_OP;
        if (KEY(k, "kernel") || KEY(k, "Kernel")) return KVS_EV_KERNEL;
        if (KEY(k, "Memcpy")) return KVS_EV_MEMCPY;
        if (KEY(k, "Memset")) return KVS_EV_MEMSET;
        if (KEY(k, "Driver")) return KVS_EV_RUNTIME;
        break;
    case 7:
        if (KEY(k, "Runtime")) return KVS_EV_RUNTIME;
        break;
    case 8:
        if (KEY(k, "Operator") || KEY(k, "operator")) return KVS_EV_OP;
        break;
    case 10:
        if (KEY(k, "gpu_memcpy")) return KVS_EV_MEMCPY;
        if (KEY(k, "gpu_memset")) return KVS_EV_MEMSET;
        break;
    case 11:
        if (KEY(k, "cuda_driver")) return KVS_EV_RUNTIME;
        if (KEY(k, "hip_runtime")) return KVS_EV_RUNTIME;
        break;
    case 12:
        if (KEY(k, "cuda_runtime")) return KVS_EV_RUNTIME;
        break;
    case 15:
        if (KEY(k, "user_annotation")) return KVS_EV_USER;
        break;
    default: break;
    }
    return KVS_EV_OTHER;
}

/* One event object, at its '{'. */
static bool parse_event(struct kvs_reader *r)
{
    struct kvs_scan *s = &r->scan;
    if (*s->p != '{')
        return kvs_scan_expect(s, '{', "an event object");
    struct kvs_ev e;
    r->cur = &e; /* its texts are copied out if a refill comes before its end */
    if (!r->opt->general_path_only && kvs_event_fast(r, &e))
        goto keep; /* the usual event, whole in the buffer (event_fast.c) */
    s->p++;
    kvs_ev_clear(&e);
    struct kvs_scan_members m = {.key = "a string key in an event",
                                 .colon = "':' after a key in an event",
                                 .next = "',' or '}' in an event"};
    const char *k;
    size_t k_len;
    while (kvs_scan_member(s, &m, &k, &k_len)) {
        int which = kvs_event_key(k, k_len);
        int c;
        if (!kvs_scan_member_value(s, &m, &c))
            return false;
        bool ok;
        switch (which) {
        case 1:
            if (c == '"') {
                const char *str;
                size_t len;
                ok = kvs_scan_string(s, &str, &len);
                if (ok)
                    e.ph = len ? str[0] : 0;
            } else {
                ok = kvs_scan_skip(s);
            }
            break;
        case 2: ok = time_value(s, c, &e.ts, &e.has_ts); break;
        case 3: ok = string_value(r, c, &e.cat, &e.has_cat); break;
        case 4: ok = time_value(s, c, &e.dur, &e.has_dur); break;
        case 5: ok = id_value(r, c, &e.pid, &e.has_pid); break;
        case 6: ok = id_value(r, c, &e.tid, &e.has_tid); break;
        case 7: ok = string_value(r, c, &e.name, &e.has_name); break;
        case 8: ok = parse_args(r, &e); break;
        default: ok = kvs_scan_skip(s); break;
        }
        if (!ok)
            return false;
    }
    if (!m.ok)
        return false;
keep:;
    uint8_t cat = KVS_EV_NONE;
    if (e.has_cat)
        cat = classify_cat(e.cat.p, e.cat.len);
    return kvs_keep_event(r, &e, cat);
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
        r->ev_off = kvs_scan_offset(s);
        bool ok = parse_event(r);
        r->cur = NULL;
        if (!ok)
            return false;
        r->t->events++;
        /* the usual ",\n  {" between events in one step, where it lies
         * whole in the buffer; else the peeks below */
        if (*s->p == ',') {
            const char *q = kvs_skip_ws(s->p + 1);
            if (*q == '{' && q < s->end) {
                s->p = (char *)q;
                c = '{';
                continue;
            }
        }
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
