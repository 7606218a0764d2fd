/* reader.c — the document around traceEvents: header fields (small, parsed
 * with cJSON), the events array (event.c), the end of input, truncation.
 * Private to reader/; see kvscope/reader.h. */
#include "kvscope/reader.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "reader_impl.h"

#define KVS_READ_BUFSIZE ((size_t)1 << 20)
#define KVS_HEADER_MAX ((size_t)1 << 20) /* a header value kept and parsed with cJSON */
/* "kvscope.engine" is a few hundred bytes: one far larger is not the
 * engine's, and is skipped unparsed */
#define KVS_ENGINE_META_MAX ((size_t)4096)

// ----------------------------------------------------------------------------
// header fields

/* false when memory ran out */
static bool read_device_properties(struct kvs_trace_data *t, const cJSON *arr)
{
    if (!cJSON_IsArray(arr))
        return true;
    int idx = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, arr)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(d, "id");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(d, "name");
        /* compared as a double first: converting one out of int's range is undefined */
        double di = cJSON_IsNumber(id) ? id->valuedouble : idx;
        idx++;
        if (!(di >= 0 && di < KVS_MAX_DEVICES) || !cJSON_IsString(name))
            continue;
        int i = (int)di;
        if (t->device_names[i])
            continue;
        t->device_names[i] = strdup(name->valuestring);
        if (!t->device_names[i])
            return false;
    }
    return true;
}

static void read_distributed_info(struct kvs_trace_data *t, const cJSON *o)
{
    const cJSON *rank = cJSON_GetObjectItemCaseSensitive(o, "rank");
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(o, "world_size");
    /* numbers outside int's range are not ranks (and must not be converted) */
    if (cJSON_IsNumber(rank) && rank->valuedouble >= 0 && rank->valuedouble <= INT_MAX)
        t->rank = (int)rank->valuedouble;
    if (cJSON_IsNumber(ws) && ws->valuedouble >= 0 && ws->valuedouble <= INT_MAX)
        t->world_size = (int)ws->valuedouble;
}

/* kvscope's own metadata object: any numeric member whose name mentions
 * "dropped" counts dropped records (the capture writes one such field). */
static void read_kvscope_meta(struct kvs_trace_data *t, const cJSON *o)
{
    t->has_kvscope_meta = true;
    const cJSON *rank = cJSON_GetObjectItemCaseSensitive(o, "rank");
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(o, "world_size");
    /* distributedInfo wins; numbers outside int's range are no ranks */
    if (t->rank < 0 && cJSON_IsNumber(rank) && rank->valuedouble >= 0 && rank->valuedouble <= INT_MAX)
        t->rank = (int)rank->valuedouble;
    if (t->world_size <= 0 && cJSON_IsNumber(ws) && ws->valuedouble > 0 && ws->valuedouble <= INT_MAX)
        t->world_size = (int)ws->valuedouble;
    const cJSON *m;
    cJSON_ArrayForEach(m, o)
    {
        if (m->string && strstr(m->string, "dropped") && cJSON_IsNumber(m) && m->valuedouble > 0) {
            /* saturating: a count past 2^63 is nonsense, but must not be undefined */
            double room = (double)(UINT64_MAX - t->dropped_records);
            t->dropped_records = m->valuedouble < room ? t->dropped_records + (uint64_t)m->valuedouble
                                                       : UINT64_MAX;
        }
    }
}

/* Whether every escape in JSON text is one cJSON decodes: the scanner skips
 * header strings without decoding them, so a bad escape (one JSON does not
 * have, as "\-", or a bad \u escape: a lone surrogate, say) is the one
 * thing it accepts that cJSON refuses. */
static bool escapes_ok(const char *p, size_t n)
{
    const char *end = p + n;
    int low_needed = 0; /* after a high surrogate */
    for (; p < end; p++) {
        if (*p != '\\') {
            if (low_needed && *p)
                return false;
            continue;
        }
        if (++p >= end)
            return false;
        if (*p != 'u') {
            if (low_needed || !strchr("\"\\/bfnrt", *p) || !*p)
                return false;
            continue;
        }
        unsigned v = 0;
        for (int i = 1; i <= 4; i++) {
            char c = p + i < end ? p[i] : 0;
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0)
                return false;
            v = v * 16 + (unsigned)d;
        }
        p += 4;
        bool high = v >= 0xD800 && v <= 0xDBFF, low = v >= 0xDC00 && v <= 0xDFFF;
        if (low_needed != low)
            return false;
        low_needed = high;
    }
    return !low_needed;
}

/* an integer member in [0, 2^53), else 0 (unknown) */
static int64_t engine_int(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    return d >= 0 && d < 9007199254740992.0 && d == (double)(int64_t)d ? (int64_t)d : 0;
}

/* a positive finite number member (bytes, GB/s, ms), else 0 (unknown) */
static double engine_num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    double d = cJSON_IsNumber(v) ? v->valuedouble : 0;
    return d > 0 && d < 1e30 ? d : 0;
}

static void engine_str(char *dst, size_t size, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    dst[0] = 0;
    if (cJSON_IsString(v) && strlen(v->valuestring) < size)
        strcpy(dst, v->valuestring);
}

/* kvscope's engine's facts about its run (docs/report-json.md,
 * "kvscope.engine"); unknown members are ignored, a missing one is unknown */
static void read_engine_meta(struct kvs_reader *r, const cJSON *o)
{
    struct kvs_engine_rec *e = &r->t->engine;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(o, "schema");
    if (!cJSON_IsObject(o) || !cJSON_IsString(schema) || strcmp(schema->valuestring, "kvscope.engine/1")) {
        kvs_log(r->opt->log, KVS_LOG_WARN,
                "header field \"kvscope.engine\" is not a kvscope.engine/1 object: ignored");
        return;
    }
    memset(e, 0, sizeof *e);
    e->present = true;
    engine_str(e->config, sizeof e->config, o, "config");
    engine_str(e->kv_path, sizeof e->kv_path, o, "kv_path");
    e->batch = engine_int(o, "batch");
    e->context = engine_int(o, "context");
    e->kv_capacity = engine_int(o, "kv_capacity");
    e->layers = engine_int(o, "layers");
    e->tp = engine_int(o, "tp");
    e->steps = engine_int(o, "steps");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "graph");
    e->graph = cJSON_IsBool(g) ? cJSON_IsTrue(g) : -1;
    e->bytes_per_step = engine_num(o, "bytes_per_step");
    e->weight_bytes_per_step = engine_num(o, "weight_bytes_per_step");
    e->kv_bytes_per_step = engine_num(o, "kv_bytes_per_step");
    e->copy_gbps = engine_num(o, "copy_gbps");
    e->step_ms = engine_num(o, "step_ms");
}

static bool header_value(struct kvs_reader *r, const char *key)
{
    struct kvs_scan *s = &r->scan;
    const char *text;
    size_t len;
    bool over;
    /* a header needs a few fields: what is kept, and the tree cJSON builds
     * of it, stay bounded however large the value is */
    size_t max = !strcmp(key, "kvscope.engine") ? KVS_ENGINE_META_MAX : KVS_HEADER_MAX;
    if (!kvs_scan_capture_max(s, max, &text, &len, &over))
        return false;
    if (over) {
        kvs_log(r->opt->log, KVS_LOG_WARN,
                "header field \"%s\" is over %zu KiB: skipped, not read (see docs/reliability.md)",
                key, max >> 10);
        return true;
    }
    cJSON *v = cJSON_ParseWithLength(text, len);
    if (!v) {
        /* the scanner validated it: cJSON refuses only a bad escape, or ran
         * out of memory */
        if (!escapes_ok(text, len)) {
            kvs_log(r->opt->log, KVS_LOG_WARN,
                    "header field \"%s\" holds an escape JSON does not have: ignored", key);
            return true;
        }
        return kvs_scan_fail(s, KVS_STATUS_NO_MEMORY, "out of memory parsing the header field \"%s\"",
                             key);
    }
    bool ok = true;
    if (!strcmp(key, "deviceProperties"))
        ok = read_device_properties(r->t, v);
    else if (!strcmp(key, "distributedInfo"))
        read_distributed_info(r->t, v);
    else if (!strcmp(key, "kvscope"))
        read_kvscope_meta(r->t, v);
    else if (!strcmp(key, "kvscope.engine"))
        read_engine_meta(r, v);
    cJSON_Delete(v);
    return ok || kvs_scan_fail(s, KVS_STATUS_NO_MEMORY, "out of memory keeping device names");
}

static bool parse_document(struct kvs_reader *r)
{
    struct kvs_scan *s = &r->scan;
    int c = kvs_scan_peek(s);
    const unsigned char *b = (const unsigned char *)s->p;
    size_t have = (size_t)(s->end - s->p);
    if (c == 0xEF && have >= 3 && b[1] == 0xBB && b[2] == 0xBF) {
        s->p += 3; /* a UTF-8 byte-order mark (Windows editors write one) */
        c = kvs_scan_peek(s);
    } else if (have >= 2 && ((b[0] == 0xFF && b[1] == 0xFE) || (b[0] == 0xFE && b[1] == 0xFF) ||
                             (b[0] == 0 && (b[1] == '{' || b[1] == '[')) ||
                             ((b[0] == '{' || b[0] == '[') && b[1] == 0))) {
        return kvs_scan_fail(s, KVS_STATUS_PARSE,
                             "the trace is UTF-16 text; kvscope reads UTF-8 JSON (convert it: "
                             "iconv -f UTF-16 -t UTF-8)");
    } else if (have >= 16 && !memcmp(b, "SQLite format 3", 16)) {
        /* a file name is sniffed and read by nsys.c; stdin or a .gz is not a file SQLite can open */
        return kvs_scan_fail(s, KVS_STATUS_PARSE,
                             "this is an SQLite database (an Nsight Systems export?), which cannot be read "
                             "from stdin or through gzip: give the uncompressed .sqlite file's name");
    }
    if (c == KVS_SCAN_EOF)
        return true; /* empty input: the caller says so */
    if (c == '[')
        return kvs_reader_events(r); /* JSON Array Format */
    if (c != '{')
        return c == KVS_SCAN_ERROR ? false
                                   : kvs_scan_expect(s, '{', "'{' or '[' at the start of a trace");
    s->p++;
    struct kvs_scan_members m = {.key = "a string key",
                                 .colon = "':' after a key",
                                 .next = "',' or '}' after a top-level field"};
    const char *k;
    size_t klen;
    while (kvs_scan_member(s, &m, &k, &klen)) {
        char key[40];
        size_t n = klen < sizeof key - 1 ? klen : sizeof key - 1;
        memcpy(key, k, n);
        key[n] = 0;
        if (klen >= sizeof key)
            key[0] = 0; /* long keys are none of ours */
        if (!kvs_scan_member_value(s, &m, NULL))
            return false;
        bool ok;
        if (!strcmp(key, "traceEvents") && r->events_seen) {
            /* JSON leaves a repeated key's meaning open; summing both would
             * count work twice, and Python's json keeps the last: read the
             * first one only, and say so */
            kvs_log(r->opt->log, KVS_LOG_WARN,
                    "the trace has a second \"traceEvents\" array (at byte %llu): skipped, only "
                    "the first is read (Python's json.load would keep the last)",
                    (unsigned long long)kvs_scan_offset(s));
            ok = kvs_scan_skip(s);
        } else if (!strcmp(key, "traceEvents")) {
            r->events_seen = true;
            ok = kvs_reader_events(r);
        } else if (!strcmp(key, "deviceProperties") || !strcmp(key, "distributedInfo") ||
                   !strcmp(key, "kvscope") || !strcmp(key, "kvscope.engine")) {
            ok = header_value(r, key);
        } else if (!strcmp(key, "with_stack")) { /* 1 or true: Python stacks were recorded */
            r->t->has_kineto_meta = true;
            int ch = kvs_scan_peek(s);
            if (ch == 't') {
                r->t->with_stack = true;
                ok = kvs_scan_skip(s);
            } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
                struct kvs_number num;
                ok = kvs_scan_number(s, &num);
                r->t->with_stack = ok && (num.int_part || num.frac);
            } else {
                ok = kvs_scan_skip(s);
            }
        } else {
            if (!strcmp(key, "schemaVersion") || !strcmp(key, "traceName") ||
                !strcmp(key, "displayTimeUnit") || !strcmp(key, "baseTimeNanoseconds"))
                r->t->has_kineto_meta = true;
            ok = kvs_scan_skip(s);
        }
        if (!ok)
            return false;
    }
    return m.ok;
}

static void on_refill(void *user, const struct kvs_scan *s)
{
    struct kvs_reader *r = user;
    if (!r->opt->progress)
        return;
    /* gzip: compressed bytes of the file size; plain files: JSON bytes */
    uint64_t done = r->total_bytes ? kvs_source_consumed(r->src) : s->base + (uint64_t)(s->end - s->buf);
    r->opt->progress(r->opt->progress_user, done, r->total_bytes);
}

/* Read the document from src (closed here, whatever the outcome). */
static enum kvs_status read_source(struct kvs_source *src, uint64_t total_bytes, const char *path,
                                   const struct kvs_read_opts *opt, struct kvs_trace_data *t)
{
    struct kvs_reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.opt = opt;
    r.src = src;
    r.total_bytes = total_bytes;
    enum kvs_status st =
        kvs_scan_init(&r.scan, r.src, opt->log, opt->bufsize ? opt->bufsize : KVS_READ_BUFSIZE);
    if (st != KVS_STATUS_OK) {
        kvs_source_close(r.src);
        return st;
    }
    r.scan.on_refill = on_refill;
    r.scan.refill_user = &r;
    r.scan.before_move = kvs_reader_before_move;
    r.scan.move_user = &r;

    bool ok = parse_document(&r);
    if (ok) {
        int c = kvs_scan_peek(&r.scan);
        if (c >= 0)
            ok = kvs_scan_fail(&r.scan, KVS_STATUS_PARSE,
                               "expected the end of input after the trace, found more data");
        else
            ok = c == KVS_SCAN_EOF;
    }
    struct kvs_scan *s = &r.scan;
    size_t open_b = 0; /* said only for a trace read to its end (or its cut) */
    bool whole = ok || s->status == KVS_STATUS_TRUNCATED;
    for (size_t i = 0; whole && i < r.nstacks; i++)
        open_b += r.stacks[i].n;
    if (open_b)
        kvs_log(opt->log, KVS_LOG_WARN,
                "%s: %zu 'B' %s no matching 'E' by the end of the trace: not kept (a step or op "
                "marked that way is missing)",
                path, open_b, open_b == 1 ? "event has" : "events have");
    if (whole && t->unmatched_end)
        kvs_log(opt->log, KVS_LOG_WARN, "%s: %llu 'E' %s no open 'B' on its thread: ignored",
                path, (unsigned long long)t->unmatched_end,
                t->unmatched_end == 1 ? "event closes" : "events close");
    if (t->shapes_cut)
        kvs_log(opt->log, KVS_LOG_WARN,
                "%s: %llu ops carry Input Dims + Input type over %zu KiB: their shapes were not "
                "kept (they match no KV dims; see docs/reliability.md)",
                path, (unsigned long long)t->shapes_cut, KVS_READ_MAX_SHAPE >> 10);
    t->bytes = s->eof || !ok ? s->base + (uint64_t)(s->end - s->buf) : kvs_scan_offset(s);
    if (ok) {
        st = KVS_STATUS_OK;
        if (kvs_source_gzip_cut(r.src)) {
            t->truncated = true;
            st = KVS_STATUS_TRUNCATED;
            kvs_log(opt->log, KVS_LOG_WARN,
                    "%s: the gzip stream is cut short, although the JSON inside is complete", path);
        }
    } else if (s->status == KVS_STATUS_TRUNCATED) {
        t->truncated = true;
        st = KVS_STATUS_TRUNCATED;
        kvs_log(opt->log, KVS_LOG_WARN,
                "%s: the trace is truncated (%s at byte %llu): analysing the %llu complete events "
                "read from %llu bytes",
                path, s->err, (unsigned long long)s->err_offset, (unsigned long long)t->events,
                (unsigned long long)t->bytes);
    } else {
        st = s->status;
        if (s->src_failed && (st == KVS_STATUS_PARSE || st == KVS_STATUS_IO))
            ; /* the source said why (corrupt gzip data near byte N): one line, not two */
        else if (st == KVS_STATUS_PARSE)
            kvs_log(opt->log, KVS_LOG_ERROR, "%s: malformed trace at byte %llu: %s", path,
                    (unsigned long long)s->err_offset, s->err);
        else if (st == KVS_STATUS_LIMIT)
            kvs_log(opt->log, KVS_LOG_ERROR,
                    "%s: the trace exceeds a limit at byte %llu: %s (see docs/reliability.md)", path,
                    (unsigned long long)s->err_offset, s->err);
        else if (st != KVS_STATUS_IO)
            kvs_log(opt->log, KVS_LOG_ERROR, "%s: %s (at byte %llu)", path, s->err,
                    (unsigned long long)s->err_offset);
    }
    kvs_reader_free_stacks(&r);
    kvs_reader_free_fields(&r);
    free(r.step_name);
    free(r.rt_name);
    free(r.scratch);
    kvs_scan_free(&r.scan);
    kvs_source_close(r.src);
    return st;
}

enum kvs_status kvs_read_trace(const char *path, const struct kvs_read_opts *opt,
                               struct kvs_trace_data *t)
{
    struct kvs_read_opts defaults = {0};
    if (!opt)
        opt = &defaults;
    if (!kvs_trace_data_init(t))
        return KVS_STATUS_NO_MEMORY;
    struct kvs_source *src;
    uint64_t total = 0;
    enum kvs_status st = kvs_source_open(path, opt->log, &src, &total);
    if (st != KVS_STATUS_OK)
        return st;
    return read_source(src, total, path, opt, t);
}

enum kvs_status kvs_read_trace_memory(const void *data, size_t len, const char *name,
                                      const struct kvs_read_opts *opt, struct kvs_trace_data *t)
{
    struct kvs_read_opts defaults = {0};
    if (!opt)
        opt = &defaults;
    if (!name)
        name = "(memory)";
    if (!kvs_trace_data_init(t))
        return KVS_STATUS_NO_MEMORY;
    struct kvs_source *src;
    enum kvs_status st = kvs_source_open_memory(data, len, name, opt->source_chunk, opt->log, &src);
    if (st != KVS_STATUS_OK)
        return st;
    return read_source(src, 0, name, opt, t);
}
