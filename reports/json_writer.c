/* reports/json_writer.c — a small streaming JSON writer for the report and
 * compare documents: keys in the order written (the schema's order), strings
 * escaped per RFC 8259 (control characters as \u00XX, invalid UTF-8 replaced
 * by U+FFFD so the output is always valid JSON), numbers that read back
 * exactly, and never NaN or infinity (null instead).
 *
 * Tested through tests/test_report_json.c (parsed back with cJSON).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_impl.h"

void kvs_jw_init(struct kvs_jw *w, FILE *f)
{
    memset(w, 0, sizeof *w);
    w->f = f;
}

static void indent(struct kvs_jw *w)
{
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->f);
}

/* Separator and indentation before a value or a key. */
static void before_item(struct kvs_jw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth == 0)
        return;
    if (w->need_comma[w->depth])
        fputc(',', w->f);
    if (w->compact[w->depth]) {
        if (w->need_comma[w->depth])
            fputc(' ', w->f);
    } else {
        indent(w);
    }
    w->need_comma[w->depth] = true;
}

void kvs_jw_sep(struct kvs_jw *w) { before_item(w); }

static void open_container(struct kvs_jw *w, char c, bool compact)
{
    before_item(w);
    fputc(c, w->f);
    bool parent_compact = w->depth > 0 && w->compact[w->depth];
    if (w->depth + 1 < KVS_JW_MAX_DEPTH)
        w->depth++;
    w->need_comma[w->depth] = false;
    w->compact[w->depth] = compact || parent_compact;
}

static void close_container(struct kvs_jw *w, char c)
{
    bool had_items = w->need_comma[w->depth];
    bool compact = w->compact[w->depth];
    if (w->depth > 0)
        w->depth--;
    if (had_items && !compact)
        indent(w);
    fputc(c, w->f);
    if (w->depth == 0)
        fputc('\n', w->f);
}

void kvs_jw_obj(struct kvs_jw *w) { open_container(w, '{', false); }
void kvs_jw_obj_end(struct kvs_jw *w) { close_container(w, '}'); }
void kvs_jw_arr(struct kvs_jw *w) { open_container(w, '[', false); }
void kvs_jw_arr_compact(struct kvs_jw *w) { open_container(w, '[', true); }
void kvs_jw_arr_end(struct kvs_jw *w) { close_container(w, ']'); }

static void put_escaped(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            s++;
        } else if (c < 0x20 || c == 0x7F) {
            switch (c) {
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            case '\t': fputs("\\t", f); break;
            case '\b': fputs("\\b", f); break;
            case '\f': fputs("\\f", f); break;
            default: fprintf(f, "\\u%04x", c); break;
            }
            s++;
        } else if (c < 0x80) {
            fputc((int)c, f);
            s++;
        } else {
            size_t n = kvs_utf8_len(s);
            if (n == 0) {
                fputs("\\ufffd", f);
                s++;
            } else {
                fwrite(s, 1, n, f);
                s += n;
            }
        }
    }
    fputc('"', f);
}

void kvs_jw_key(struct kvs_jw *w, const char *key)
{
    before_item(w);
    put_escaped(w->f, key);
    fputs(": ", w->f);
    w->after_key = true;
}

void kvs_jw_str(struct kvs_jw *w, const char *s)
{
    before_item(w);
    if (s)
        put_escaped(w->f, s);
    else
        fputs("null", w->f);
}

void kvs_jw_obj_schema(struct kvs_jw *w, const char *schema)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "schema");
    kvs_jw_str(w, schema);
}

void kvs_fmt_double_exact(char *buf, size_t size, double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

void kvs_jw_num(struct kvs_jw *w, double v)
{
    before_item(w);
    if (!isfinite(v)) {
        fputs("null", w->f);
        return;
    }
    if (v == 0)
        v = 0; /* no "-0" */
    char buf[40];
    kvs_fmt_double_exact(buf, sizeof buf, v);
    fputs(buf, w->f);
}

void kvs_jw_int(struct kvs_jw *w, int64_t v)
{
    before_item(w);
    fprintf(w->f, "%lld", (long long)v);
}

void kvs_jw_bool(struct kvs_jw *w, bool v)
{
    before_item(w);
    fputs(v ? "true" : "false", w->f);
}

void kvs_jw_null(struct kvs_jw *w)
{
    before_item(w);
    fputs("null", w->f);
}

void kvs_jw_num_or_null(struct kvs_jw *w, double v, bool known)
{
    if (known)
        kvs_jw_num(w, v);
    else
        kvs_jw_null(w);
}

void kvs_jw_int_or_null(struct kvs_jw *w, int64_t v, bool known)
{
    if (known)
        kvs_jw_int(w, v);
    else
        kvs_jw_null(w);
}

void kvs_jw_bool_or_null(struct kvs_jw *w, bool v, bool known)
{
    if (known)
        kvs_jw_bool(w, v);
    else
        kvs_jw_null(w);
}

void kvs_jw_int_pair_or_null(struct kvs_jw *w, int64_t a, int64_t b, bool known)
{
    if (!known) {
        kvs_jw_null(w);
        return;
    }
    kvs_jw_arr_compact(w);
    kvs_jw_int(w, a);
    kvs_jw_int(w, b);
    kvs_jw_arr_end(w);
}

void kvs_jw_strs(struct kvs_jw *w, char *const *v, size_t n, bool compact)
{
    if (compact)
        kvs_jw_arr_compact(w);
    else
        kvs_jw_arr(w);
    for (size_t i = 0; i < n; i++)
        kvs_jw_str(w, v[i]);
    kvs_jw_arr_end(w);
}
