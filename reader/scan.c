/* scan.c — the streaming JSON scanner (see scan.h): buffer refills, strings
 * with escapes, numbers, skipping and capturing values. Private to reader/. */
#include "scan.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kvs_status kvs_scan_init(struct kvs_scan *s, struct kvs_source *src,
                              const struct kvs_logger *lg, size_t bufsize)
{
    memset(s, 0, sizeof *s);
    if (bufsize < 64)
        bufsize = 64;
    s->buf = calloc(1, bufsize + KVS_SCAN_PAD);
    if (!s->buf)
        return KVS_STATUS_NO_MEMORY;
    s->cap = bufsize;
    s->p = s->end = s->buf;
    *s->end = 0;
    s->src = src;
    s->log = lg;
    s->status = KVS_STATUS_OK;
    return KVS_STATUS_OK;
}

void kvs_scan_free(struct kvs_scan *s)
{
    free(s->buf);
    s->buf = s->p = s->end = s->mark = NULL;
}

static void describe_byte(char *out, size_t n, const struct kvs_scan *s)
{
    if (s->p >= s->end) {
        snprintf(out, n, "end of input");
        return;
    }
    unsigned char c = (unsigned char)*s->p;
    if (c >= 0x20 && c < 0x7f)
        snprintf(out, n, "'%c'", c);
    else
        snprintf(out, n, "byte 0x%02x", c);
}

bool kvs_scan_fail(struct kvs_scan *s, enum kvs_status st, const char *fmt, ...)
{
    if (s->status != KVS_STATUS_OK)
        return false;
    s->status = st;
    s->err_offset = kvs_scan_offset(s);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return false;
}

/* "expected X, found Y" at the cursor; TRUNCATED when the input is over. */
static bool fail_expected(struct kvs_scan *s, const char *what)
{
    char found[32];
    describe_byte(found, sizeof found, s);
    if (s->p >= s->end && s->eof)
        return kvs_scan_fail(s, KVS_STATUS_TRUNCATED, "input ended where %s was expected", what);
    return kvs_scan_fail(s, KVS_STATUS_PARSE, "expected %s, found %s", what, found);
}

bool kvs_scan_refill(struct kvs_scan *s)
{
    if (s->status != KVS_STATUS_OK || s->eof)
        return false;
    if (s->before_move) {
        s->before_move(s->move_user, s);
        if (s->status != KVS_STATUS_OK)
            return false;
    }
    if (s->mark && s->mark_max && (size_t)(s->p - s->mark) > s->mark_max) {
        s->mark = NULL; /* a bounded capture ran past its bound: keep nothing */
        s->mark_over = true;
    }
    char *keep = s->mark ? s->mark : s->p;
    size_t shift = (size_t)(keep - s->buf);
    if (shift > 0) {
        size_t n = (size_t)(s->end - keep);
        memmove(s->buf, keep, n);
        s->p -= shift;
        if (s->mark)
            s->mark -= shift;
        s->end -= shift;
        s->base += shift;
    }
    if ((size_t)(s->end - s->buf) == s->cap) {
        if (s->cap >= KVS_SCAN_MAX_KEEP)
            return kvs_scan_fail(s, KVS_STATUS_LIMIT,
                                 "a single value is larger than %zu bytes", KVS_SCAN_MAX_KEEP);
        size_t ncap = s->cap * 2;
        char *nb = realloc(s->buf, ncap + KVS_SCAN_PAD);
        if (!nb)
            return kvs_scan_fail(s, KVS_STATUS_NO_MEMORY, "out of memory growing the read buffer");
        /* block loads may read past the data: keep those bytes defined */
        memset(nb + s->cap + KVS_SCAN_PAD, 0, ncap - s->cap);
        s->p = nb + (s->p - s->buf);
        if (s->mark)
            s->mark = nb + (s->mark - s->buf);
        s->end = nb + (s->end - s->buf);
        s->buf = nb;
        s->cap = ncap;
    }
    size_t got = 0;
    enum kvs_status st =
        kvs_source_read(s->src, s->end, s->cap - (size_t)(s->end - s->buf), &got);
    if (st != KVS_STATUS_OK) {
        /* a failed read (a corrupt gzip stream) may have written past end
         * (zlib's output before it found the fault): put the sentinel back,
         * or peek would read on past the data */
        *s->end = 0;
        s->src_failed = s->status == KVS_STATUS_OK;
        return kvs_scan_fail(s, st, "reading the input failed");
    }
    if (got == 0) {
        s->eof = true;
        *s->end = 0;
        return false;
    }
    s->end += got;
    *s->end = 0;
    if (s->on_refill)
        s->on_refill(s->refill_user, s);
    return true;
}

bool kvs_scan_expect_slow(struct kvs_scan *s, char c, const char *what)
{
    int b = kvs_scan_peek(s);
    if (b == (unsigned char)c) {
        s->p++;
        return true;
    }
    if (b == KVS_SCAN_ERROR)
        return false;
    return fail_expected(s, what);
}

// ----------------------------------------------------------------------------
// strings

static bool fail_long_string(struct kvs_scan *s)
{
    /* the cursor is still at the opening quote, however far the scan got */
    return kvs_scan_fail(s, KVS_STATUS_LIMIT, "a string longer than %zu bytes",
                         KVS_SCAN_MAX_STRING);
}

/* Find the closing quote of the string whose opening quote is at the
 * cursor. Offsets are from the cursor, which stays at the quote: a refill
 * keeps [p, end) whatever the mark does (a bounded capture drops its mark
 * mid-value), so the string stays whole. Returns the offset of the closing
 * quote, or -1 (error recorded). */
static ptrdiff_t find_close_quote(struct kvs_scan *s)
{
    size_t search = 1;
    for (;;) {
        char *lo = s->p + 1;
        char *q = memchr(s->p + search, '"', (size_t)(s->end - (s->p + search)));
        if (!q) {
            /* checked before each refill, so a long string cut by the end
             * of input is the same LIMIT whatever the buffer size */
            if ((size_t)(s->end - lo) > KVS_SCAN_MAX_STRING) {
                fail_long_string(s);
                return -1;
            }
            search = (size_t)(s->end - s->p);
            if (!kvs_scan_refill(s)) {
                if (s->status == KVS_STATUS_OK) {
                    s->p = s->end;
                    kvs_scan_fail(s, KVS_STATUS_TRUNCATED, "input ended inside a string");
                }
                return -1;
            }
            continue;
        }
        char *b = q;
        while (b > lo && b[-1] == '\\')
            b--;
        if (((q - b) & 1) == 0)
            return q - s->p;
        search = (size_t)(q + 1 - s->p);
    }
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int read_hex4(const char *r, const char *end)
{
    if (end - r < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval((unsigned char)r[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static char *put_utf8(char *w, uint32_t cp)
{
    if (cp < 0x80) {
        *w++ = (char)cp;
    } else if (cp < 0x800) {
        *w++ = (char)(0xC0 | (cp >> 6));
        *w++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *w++ = (char)(0xE0 | (cp >> 12));
        *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *w++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *w++ = (char)(0xF0 | (cp >> 18));
        *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *w++ = (char)(0x80 | (cp & 0x3F));
    }
    return w;
}

/* Decode escapes of [str, end) in place; returns the new end or NULL with
 * *bad set to the offending byte. Decoding never lengthens: "\u00e9" (6 bytes)
 * becomes 2 bytes, a surrogate pair (12) becomes 4. */
static char *unescape(char *str, char *end, const char **bad)
{
    char *r = str, *w = str;
    while (r < end) {
        char *bs = memchr(r, '\\', (size_t)(end - r));
        if (!bs) {
            memmove(w, r, (size_t)(end - r));
            w += end - r;
            break;
        }
        if (bs > r) {
            memmove(w, r, (size_t)(bs - r));
            w += bs - r;
        }
        r = bs + 1;
        if (r >= end) {
            *bad = bs;
            return NULL;
        }
        switch (*r) {
        case '"': case '\\': case '/': *w++ = *r++; break;
        case 'b': *w++ = '\b'; r++; break;
        case 'f': *w++ = '\f'; r++; break;
        case 'n': *w++ = '\n'; r++; break;
        case 'r': *w++ = '\r'; r++; break;
        case 't': *w++ = '\t'; r++; break;
        case 'u': {
            int cp = read_hex4(r + 1, end);
            if (cp < 0) {
                *bad = bs;
                return NULL;
            }
            r += 5;
            uint32_t c = (uint32_t)cp;
            if (c >= 0xD800 && c <= 0xDBFF && end - r >= 6 && r[0] == '\\' && r[1] == 'u') {
                int lo = read_hex4(r + 2, end);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    c = 0x10000 + ((c - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                    r += 6;
                }
            }
            if (c >= 0xD800 && c <= 0xDFFF)
                c = 0xFFFD; /* a lone surrogate has no UTF-8 form */
            w = put_utf8(w, c);
            break;
        }
        default:
            *bad = bs;
            return NULL;
        }
    }
    return w;
}

bool kvs_scan_string_slow(struct kvs_scan *s, const char **out, size_t *len)
{
    if (*s->p != '"')
        return fail_expected(s, "a string");
    ptrdiff_t q = find_close_quote(s);
    if (q < 0)
        return false;
    char *str = s->p + 1, *qe = s->p + q;
    char *e = qe;
    if ((size_t)(qe - str) > KVS_SCAN_MAX_STRING)
        return fail_long_string(s);
    if (memchr(str, '\\', (size_t)(qe - str))) {
        const char *bad = NULL;
        e = unescape(str, qe, &bad);
        if (!e) {
            s->p = (char *)bad;
            return kvs_scan_fail(s, KVS_STATUS_PARSE,
                                 "invalid escape in a string (expected one of \\\" \\\\ \\/ \\b \\f "
                                 "\\n \\r \\t \\uXXXX)");
        }
    }
    s->p = qe + 1;
    *out = str;
    *len = (size_t)(e - str);
    return true;
}

/* Skip a string without decoding it; no mark needed. */
static bool skip_string(struct kvs_scan *s)
{
    {
        const char *q = kvs_find_quote_or_backslash(s->p + 1, s->end);
        if (q < s->end && *q == '"') {
            s->p = (char *)q + 1;
            return true;
        }
    }
    char *r = s->p + 1; /* after the opening quote */
    char *lo = r;       /* no backslash run reaches before this */
    for (;;) {
        char *q = memchr(r, '"', (size_t)(s->end - r));
        if (!q) {
            /* keep a trailing run of backslashes: it decides the next quote */
            char *b = s->end;
            while (b > lo && b[-1] == '\\')
                b--;
            s->p = b;
            size_t keep = (size_t)(s->end - b);
            if (!kvs_scan_refill(s)) {
                if (s->status == KVS_STATUS_OK)
                    kvs_scan_fail(s, KVS_STATUS_TRUNCATED, "input ended inside a string");
                return false;
            }
            lo = s->p;
            r = s->p + keep;
            continue;
        }
        char *b = q;
        while (b > lo && b[-1] == '\\')
            b--;
        if (((q - b) & 1) == 0) {
            s->p = q + 1;
            return true;
        }
        r = q + 1;
    }
}

// ----------------------------------------------------------------------------
// skipping and capturing

static bool skip_literal(struct kvs_scan *s)
{
    const char *word = *s->p == 't' ? "true" : *s->p == 'f' ? "false" : "null";
    size_t n = strlen(word);
    /* the cursor stays at the literal's first byte: a refill keeps it */
    while ((size_t)(s->end - s->p) < n && !s->eof)
        if (!kvs_scan_refill(s))
            break;
    if (s->status != KVS_STATUS_OK)
        return false;
    if ((size_t)(s->end - s->p) < n) {
        if (!memcmp(s->p, word, (size_t)(s->end - s->p)))
            return kvs_scan_fail(s, KVS_STATUS_TRUNCATED, "input ended inside '%s'", word);
        return kvs_scan_fail(s, KVS_STATUS_PARSE, "expected a value ('%s'?)", word);
    }
    if (memcmp(s->p, word, n))
        return kvs_scan_fail(s, KVS_STATUS_PARSE, "expected a value ('%s'?)", word);
    s->p += n;
    return true;
}

bool kvs_scan_skip(struct kvs_scan *s)
{
    unsigned char stack[KVS_SCAN_MAX_DEPTH]; /* '{' or '[' */
    int depth = 0;
    int c;
    for (;;) {
        /* a value */
        c = kvs_scan_peek(s);
        switch (c) {
        case '{':
        case '[':
            if (depth == KVS_SCAN_MAX_DEPTH)
                return kvs_scan_fail(s, KVS_STATUS_LIMIT, "nesting deeper than %d levels",
                                     KVS_SCAN_MAX_DEPTH);
            s->p++;
            stack[depth++] = (unsigned char)c;
            {
                int d = kvs_scan_peek(s);
                if (d == (c == '{' ? '}' : ']')) {
                    s->p++;
                    depth--;
                    break;
                }
                if (c == '{') {
                    if (d != '"')
                        return d == KVS_SCAN_ERROR ? false : fail_expected(s, "a string key or '}'");
                    if (!skip_string(s) || !kvs_scan_expect(s, ':', "':' after an object key"))
                        return false;
                }
            }
            continue; /* the first member's value */
        case '"':
            if (!skip_string(s))
                return false;
            break;
        case 't':
        case 'f':
        case 'n':
            if (!skip_literal(s))
                return false;
            break;
        case KVS_SCAN_ERROR:
            return false;
        default:
            if (c == '-' || (c >= '0' && c <= '9')) {
                /* plain integers and decimals inside the buffer are checked
                 * here without decoding; the rest (exponents, leading zeros,
                 * the buffer's end, errors) go through kvs_scan_number */
                const char *q = s->p + (c == '-');
                bool simple = *q >= '0' && *q <= '9' && !(*q == '0' && q[1] >= '0' && q[1] <= '9');
                while (*q >= '0' && *q <= '9')
                    q++;
                if (*q == '.') {
                    q++;
                    simple = simple && *q >= '0' && *q <= '9';
                    while (*q >= '0' && *q <= '9')
                        q++;
                }
                if (simple && *q != 'e' && *q != 'E' && *q != '.' && *q != '-' && *q != '+' &&
                    q < s->end && q - s->p <= KVS_SCAN_MAX_NUMBER) {
                    s->p = (char *)q;
                    break;
                }
                struct kvs_number num;
                if (!kvs_scan_number(s, &num))
                    return false;
                break;
            }
            return fail_expected(s, "a value");
        }
        /* after a value */
        for (;;) {
            if (depth == 0)
                return true;
            c = kvs_scan_peek(s);
            unsigned char top = stack[depth - 1];
            if (c == ',') {
                s->p++;
                if (top == '{') {
                    int d = kvs_scan_peek(s);
                    if (d != '"')
                        return d == KVS_SCAN_ERROR ? false : fail_expected(s, "a string key");
                    if (!skip_string(s) || !kvs_scan_expect(s, ':', "':' after an object key"))
                        return false;
                }
                break; /* next value */
            }
            if ((top == '{' && c == '}') || (top == '[' && c == ']')) {
                s->p++;
                depth--;
                continue;
            }
            if (c == KVS_SCAN_ERROR)
                return false;
            return fail_expected(s, top == '{' ? "',' or '}' in an object" : "',' or ']' in an array");
        }
    }
}

bool kvs_scan_capture(struct kvs_scan *s, const char **start, size_t *len)
{
    if (kvs_scan_peek(s) < 0) {
        if (s->status == KVS_STATUS_OK)
            fail_expected(s, "a value");
        return false;
    }
    bool tmp = s->mark == NULL;
    if (tmp)
        s->mark = s->p;
    size_t at = (size_t)(s->p - s->mark);
    bool ok = kvs_scan_skip(s);
    *start = s->mark + at;
    *len = (size_t)(s->p - *start);
    if (tmp)
        s->mark = NULL;
    return ok;
}

bool kvs_scan_capture_max(struct kvs_scan *s, size_t max, const char **start, size_t *len,
                          bool *over)
{
    *over = false;
    *len = 0;
    if (s->mark) /* inside a kept span already: nothing to bound */
        return kvs_scan_capture(s, start, len);
    if (kvs_scan_peek(s) < 0) {
        if (s->status == KVS_STATUS_OK)
            fail_expected(s, "a value");
        return false;
    }
    s->mark = s->p;
    s->mark_max = max ? max : 1;
    s->mark_over = false;
    bool ok = kvs_scan_skip(s);
    *over = s->mark_over || (s->mark && (size_t)(s->p - s->mark) > max);
    if (!*over && s->mark) {
        *start = s->mark;
        *len = (size_t)(s->p - s->mark);
    }
    s->mark = NULL;
    s->mark_max = 0;
    s->mark_over = false;
    return ok;
}
