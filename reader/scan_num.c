/* scan_num.c — numbers for the streaming JSON scanner (see scan.h):
 * validation by the JSON grammar, the integer and fraction digits kept as
 * integers, and exact microsecond -> nanosecond conversion for timestamps.
 * Private to reader/. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"

static const unsigned char num_char[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['-'] = 1, ['+'] = 1, ['.'] = 1, ['e'] = 1, ['E'] = 1,
};

/* One message and offset (the number's start) whichever path finds it. */
static bool fail_too_long(struct kvs_scan *s)
{
    return kvs_scan_fail(s, KVS_STATUS_LIMIT, "a number longer than %d characters",
                         KVS_SCAN_MAX_NUMBER);
}

/* Make [p, end of the number token) contiguous; returns its length, or -1.
 * Offsets are from the cursor, which stays at the number's first byte: a
 * refill keeps [p, end) whatever the mark does (a bounded capture drops its
 * mark mid-value). */
static ptrdiff_t number_extent(struct kvs_scan *s)
{
    size_t i = 0;
    for (;;) {
        const char *q = s->p + i;
        while (num_char[(unsigned char)*q])
            q++;
        i = (size_t)(q - s->p);
        if (q < s->end || s->eof)
            break;
        if (i > KVS_SCAN_MAX_NUMBER) {
            fail_too_long(s); /* reported where the number starts */
            break;
        }
        if (!kvs_scan_refill(s))
            break; /* end of input: the token ends here */
    }
    if (s->status != KVS_STATUS_OK)
        return -1;
    return (ptrdiff_t)i;
}

/* Validate and decode the token t[0..n). A token that is a valid prefix of
 * a number but ends with the input ("12.", "-", "1e") is truncation; any
 * other fault is a malformed number. */
static bool parse_number(struct kvs_scan *s, const char *t, size_t n, struct kvs_number *out)
{
    memset(out, 0, sizeof *out);
    if (n > KVS_SCAN_MAX_NUMBER)
        return fail_too_long(s);
    out->text = t;
    out->len = n;
    out->is_integer = true;
    size_t i = 0;
    if (i < n && t[i] == '-') {
        out->negative = true;
        i++;
    }
    if (i >= n || t[i] < '0' || t[i] > '9')
        goto bad;
    if (t[i] == '0' && i + 1 < n && t[i + 1] >= '0' && t[i + 1] <= '9') {
        i++;
        goto bad; /* no leading zeros */
    }
    int digits = 0;
    uint64_t v = 0;
    while (i < n && t[i] >= '0' && t[i] <= '9') {
        v = v * 10 + (uint64_t)(t[i] - '0');
        digits++;
        i++;
    }
    out->int_part = v;
    out->overflow = digits > 19;
    if (i < n && t[i] == '.') {
        out->is_integer = false;
        i++;
        if (i >= n || t[i] < '0' || t[i] > '9')
            goto bad;
        while (i < n && t[i] >= '0' && t[i] <= '9') {
            if (out->frac_digits < 9) {
                out->frac = out->frac * 10 + (uint64_t)(t[i] - '0');
                out->frac_digits++;
            }
            i++;
        }
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        out->is_integer = false;
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        if (i >= n || t[i] < '0' || t[i] > '9')
            goto bad;
        while (i < n && t[i] >= '0' && t[i] <= '9')
            i++;
    }
    if (i != n)
        goto bad;
    return true;
bad:
    if (i >= n && t + n == s->end && s->eof)
        return kvs_scan_fail(s, KVS_STATUS_TRUNCATED, "input ended inside a number");
    return kvs_scan_fail(s, KVS_STATUS_PARSE, "malformed number '%.*s'", (int)(n > 40 ? 40 : n), t);
}

/* The common number: digits, an optional fraction, no exponent, whole in
 * the buffer. One pass; anything else returns false for the general path. */
static inline bool fast_number(struct kvs_scan *s, struct kvs_number *out)
{
    const char *p = s->p, *start = p;
    bool neg = *p == '-';
    p += neg;
    if ((unsigned)(*p - '0') > 9 || (*p == '0' && (unsigned)(p[1] - '0') <= 9))
        return false;
    uint64_t v = 0;
    int digits = 0;
    while ((unsigned)(*p - '0') <= 9) {
        v = v * 10 + (uint64_t)(*p - '0');
        p++;
        digits++;
    }
    uint64_t frac = 0;
    int fd = 0;
    bool integer = true;
    if (*p == '.') {
        integer = false;
        p++;
        if ((unsigned)(*p - '0') > 9)
            return false;
        while ((unsigned)(*p - '0') <= 9) {
            if (fd < 9) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                fd++;
            }
            p++;
        }
    }
    /* an exponent, another sign or dot, the buffer's end, or a number past
     * the length limit: general path */
    if (num_char[(unsigned char)*p] || p >= s->end || digits > 19 ||
        p - start > KVS_SCAN_MAX_NUMBER)
        return false;
    out->text = start;
    out->len = (size_t)(p - start);
    out->negative = neg;
    out->is_integer = integer;
    out->overflow = false;
    out->int_part = v;
    out->frac = frac;
    out->frac_digits = fd;
    s->p = (char *)p;
    return true;
}

bool kvs_scan_number(struct kvs_scan *s, struct kvs_number *out)
{
    if (fast_number(s, out))
        return true;
    /* the token is usually whole in the buffer: the sentinel NUL stops the
     * scan at the end of data, and only a token touching the end needs a
     * refill */
    const char *q = s->p;
    while (num_char[(unsigned char)*q])
        q++;
    if (q < s->end || s->eof) {
        size_t n = (size_t)(q - s->p);
        if (n == 0)
            return kvs_scan_fail(s, KVS_STATUS_PARSE, "expected a number");
        if (!parse_number(s, s->p, n, out))
            return false;
        s->p += n;
        return true;
    }
    ptrdiff_t n = number_extent(s);
    if (n < 0)
        return false;
    if (n == 0)
        return kvs_scan_fail(s, KVS_STATUS_PARSE, "expected a number");
    const char *t = s->p;
    if (!parse_number(s, t, (size_t)n, out))
        return false;
    s->p += n;
    return true;
}

int64_t kvs_number_us_to_ns(const struct kvs_number *n)
{
    bool has_exp = false;
    for (size_t i = 0; i < n->len; i++)
        if (n->text[i] == 'e' || n->text[i] == 'E')
            has_exp = true;
    if (has_exp || n->overflow || n->int_part > (uint64_t)INT64_MAX / 1000 - 1) {
        double us = kvs_number_double(n);
        double ns = us * 1000.0;
        if (!(ns < 9.2e18 && ns > -9.2e18))
            return ns > 0 ? INT64_MAX : INT64_MIN;
        return (int64_t)llround(ns);
    }
    uint64_t frac = n->frac;
    int d = n->frac_digits;
    int64_t sub; /* fraction in ns, rounded half up */
    if (d <= 3) {
        static const uint64_t p10[] = {1000, 100, 10, 1};
        sub = (int64_t)(frac * p10[d]);
    } else {
        uint64_t div = 1;
        for (int i = 3; i < d; i++)
            div *= 10;
        sub = (int64_t)((frac + div / 2) / div);
    }
    int64_t v = (int64_t)n->int_part * 1000 + sub;
    return n->negative ? -v : v;
}

int64_t kvs_number_int(const struct kvs_number *n)
{
    if (n->overflow || n->int_part > (uint64_t)INT64_MAX) {
        if (n->is_integer && !n->negative)
            return (int64_t)n->int_part; /* ids beyond 2^63: keep the bits, they only match */
        return n->negative ? INT64_MIN : INT64_MAX;
    }
    bool has_exp = false;
    for (size_t i = 0; i < n->len; i++)
        if (n->text[i] == 'e' || n->text[i] == 'E')
            has_exp = true;
    if (has_exp) {
        double d = kvs_number_double(n);
        if (!(d < 9.2e18 && d > -9.2e18))
            return d > 0 ? INT64_MAX : INT64_MIN;
        return (int64_t)d;
    }
    int64_t v = (int64_t)n->int_part;
    return n->negative ? -v : v;
}

double kvs_number_double(const struct kvs_number *n)
{
    char tmp[128];
    size_t len = n->len < sizeof tmp - 1 ? n->len : sizeof tmp - 1;
    memcpy(tmp, n->text, len);
    tmp[len] = 0;
    return strtod(tmp, NULL);
}

