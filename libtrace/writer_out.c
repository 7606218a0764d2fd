/* writer_out.c — the writer's output: a buffered sink over stdio or zlib,
 * JSON string escaping (always valid UTF-8 out), and number formatting
 * (timestamps exact from integer ns, doubles shortest round-trip).
 * Tested in tests/test_trace_writer.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "writer_internal.h"

// ----------------------------------------------------------------------------
// numbers

size_t kvs_trace_format_us(int64_t ns, char *buf)
{
    /* The magnitude as unsigned so that INT64_MIN has one too. */
    uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    int n = snprintf(buf, KVS_TRACE_US_BUF, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", mag / 1000,
                     (unsigned)(mag % 1000));
    return n > 0 ? (size_t)n : 0;
}

void kvs_out_us(struct kvs_out *o, int64_t ns)
{
    char b[KVS_TRACE_US_BUF];
    kvs_out_write(o, b, kvs_trace_format_us(ns, b));
}

void kvs_out_double(struct kvs_out *o, double v)
{
    if (!isfinite(v))
        v = 0;
    char b[40];
    /* the shortest of %.15g..%.17g that reads back to the same double */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v)
            break;
    }
    kvs_out_str(o, b);
}

// ----------------------------------------------------------------------------
// JSON strings

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
    unsigned c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if (n > avail)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0; /* overlong, out of range, or a surrogate */
    return n;
}

size_t kvs_json_escape(char *dst, const char *src, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c == '"' || c == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)c;
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            const char *named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
            if (named) {
                memcpy(dst + o, named, 2);
                o += 2;
            } else {
                memcpy(dst + o, "\\u00", 4);
                dst[o + 4] = hex[c >> 4];
                dst[o + 5] = hex[c & 15];
                o += 6;
            }
            i++;
        } else if (c < 0x80) {
            dst[o++] = (char)c;
            i++;
        } else {
            size_t k = utf8_len(s + i, n - i);
            if (k == 0) {
                memcpy(dst + o, "\xEF\xBF\xBD", 3); /* U+FFFD for one bad byte */
                o += 3;
                i++;
            } else {
                memcpy(dst + o, s + i, k);
                o += k;
                i += k;
            }
        }
    }
    return o;
}

int kvs_json_shape_ok(const char *s)
{
    if (!s || *s != '[')
        return 0;
    int depth = 0;
    char last = 0; /* the last character that was not a space */
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (c == ' ')
            continue;
        if (last && depth == 0)
            return 0; /* text after the closing bracket */
        /* a value may come first in an array or after a comma */
        int value_here = !last || last == '[' || last == ',';
        if (c == '[') {
            if (!value_here || ++depth > 16)
                return 0;
        } else if (c == ']') {
            if (last == ',')
                return 0; /* "[1, ]" */
            depth--;
        } else if (c == ',') {
            if (value_here)
                return 0;
        } else if (!value_here) {
            return 0;
        } else if (c == '"') {
            for (p++; *p != '"'; p++)
                if (!*p || *p == '\\' || (unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
                    return 0; /* ASCII only: dtype names are */
            c = '"';
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            p += c == '-';
            if (*p < '0' || *p > '9')
                return 0;
            while (p[1] >= '0' && p[1] <= '9')
                p++;
            c = '0';
        } else {
            return 0;
        }
        last = c;
    }
    return last && depth == 0;
}

void kvs_out_json_string(struct kvs_out *o, const char *s)
{
    if (!s)
        s = "";
    kvs_out_write(o, "\"", 1);
    size_t n = strlen(s);
    char tmp[6 * 256];
    /* in pieces of 256 input bytes; a piece may end inside a UTF-8 sequence,
     * so cut before a lead byte when there is one close to the end */
    while (n > 0) {
        size_t take = n < 256 ? n : 256;
        if (take < n) {
            size_t back = 0;
            while (back < 3 && back < take && ((unsigned char)s[take - back] & 0xC0) == 0x80)
                back++;
            if (back < take && ((unsigned char)s[take - back] & 0xC0) != 0x80)
                take -= back;
        }
        kvs_out_write(o, tmp, kvs_json_escape(tmp, s, take));
        s += take;
        n -= take;
    }
    kvs_out_write(o, "\"", 1);
}

// ----------------------------------------------------------------------------
// the sink

void kvs_out_init(struct kvs_out *o, FILE *file, void *gz)
{
    o->file = file;
    o->gz = gz;
    o->failed = 0;
    o->err = 0;
    o->len = 0;
}

static void drain(struct kvs_out *o)
{
    if (o->failed || o->len == 0) {
        o->len = 0;
        return;
    }
    if (o->gz) {
        int w = gzwrite((gzFile)o->gz, o->buf, (unsigned)o->len);
        if (w <= 0 || (size_t)w != o->len) {
            int zerr = 0;
            gzerror((gzFile)o->gz, &zerr);
            o->failed = 1;
            o->err = zerr == Z_ERRNO ? errno : 0;
        }
    } else if (fwrite(o->buf, 1, o->len, o->file) != o->len) {
        o->failed = 1;
        o->err = errno;
    }
    o->len = 0;
}

void kvs_out_write(struct kvs_out *o, const char *s, size_t n)
{
    while (n > 0) {
        if (o->len == sizeof o->buf)
            drain(o);
        size_t room = sizeof o->buf - o->len;
        size_t take = n < room ? n : room;
        memcpy(o->buf + o->len, s, take);
        o->len += take;
        s += take;
        n -= take;
    }
}

void kvs_out_str(struct kvs_out *o, const char *s)
{
    kvs_out_write(o, s, strlen(s));
}

void kvs_out_fmt(struct kvs_out *o, const char *fmt, ...)
{
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    kvs_out_write(o, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

int kvs_out_flush(struct kvs_out *o)
{
    drain(o);
    if (!o->failed && o->file && fflush(o->file) != 0) {
        o->failed = 1;
        o->err = errno;
    }
    return o->failed ? -1 : 0;
}
