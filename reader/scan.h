/* scan.h — a streaming JSON scanner: tokens out of a bounded buffer.
 *
 * defines: struct kvs_scan, struct kvs_number, kvs_scan_init, kvs_scan_free,
 *          kvs_scan_peek, kvs_scan_expect, kvs_scan_string, kvs_scan_number,
 *          kvs_scan_skip, kvs_scan_capture, kvs_scan_capture_max, kvs_scan_fail,
 *          kvs_scan_offset,
 *          kvs_scan_set_mark, kvs_scan_clear_mark, struct kvs_scan_members,
 *          kvs_scan_member, kvs_scan_member_value
 *
 * The scanner never builds a document tree. The caller walks the grammar
 * (peek, expect, string, number, skip) and keeps what it wants. Memory is
 * one buffer that grows only when a single kept span (the current event, a
 * string, a captured value) is larger than it.
 *
 * Pointers into the buffer: bytes from the mark on stay in the buffer while
 * the mark is set, but may move when the buffer is refilled; offsets from
 * the mark (ptr - s->mark) stay valid until kvs_scan_clear_mark(). Without
 * a mark a returned pointer is valid only until the next scanner call.
 * The mark is the caller's: the scanner's own tokens (a number, literal or
 * string that crosses a refill) are held from the cursor, which a refill
 * always keeps, so a bounded capture may drop its mark in the middle of
 * any value (kvs_scan_capture_max).
 *
 * Errors are sticky: the first one sets s->status (KVS_STATUS_PARSE for
 * malformed input, KVS_STATUS_TRUNCATED when the input ended inside a value,
 * KVS_STATUS_IO, KVS_STATUS_LIMIT, KVS_STATUS_NO_MEMORY), s->err_offset (the
 * byte offset in the uncompressed input) and s->err (what was expected);
 * every later call fails fast. Strings that are skipped are not decoded, so
 * bad escapes inside them go unnoticed; strings that are read are decoded
 * (\uXXXX to UTF-8, surrogate pairs joined) and checked.
 * Private to reader/.
 */
#ifndef KVS_READER_SCAN_H
#define KVS_READER_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kvscope/base.h"
#include "source.h"

#define KVS_SCAN_EOF (-1)
#define KVS_SCAN_ERROR (-2)

/* limits that keep hostile input bounded (docs/reliability.md); each one hit
 * is KVS_STATUS_LIMIT at the byte offset where the value starts */
#define KVS_SCAN_MAX_DEPTH 512
#define KVS_SCAN_MAX_KEEP ((size_t)1 << 30)   /* largest single span kept contiguous */
#define KVS_SCAN_MAX_NUMBER 4096              /* characters in one number */
#define KVS_SCAN_MAX_STRING ((size_t)1 << 20) /* raw bytes between the quotes of a string read */

struct kvs_scan;
typedef void (*kvs_scan_refill_fn)(void *user, const struct kvs_scan *s);

/* bytes allocated after the buffer's capacity: a NUL sentinel after the data,
 * and room for 16-byte loads that start before `end` and run past it */
#define KVS_SCAN_PAD 64

struct kvs_scan {
    char *buf;             /* cap + KVS_SCAN_PAD bytes; *end is a NUL sentinel */
    size_t cap;
    char *p;               /* cursor */
    char *end;             /* end of valid bytes */
    char *mark;            /* keep from here on refill, or NULL */
    size_t mark_max;       /* kvs_scan_capture_max: drop the mark past this many bytes */
    bool mark_over;        /* ... and it was dropped */
    uint64_t base;         /* input offset of buf[0] */
    bool eof;              /* the source has no more bytes */
    struct kvs_source *src;
    const struct kvs_logger *log;
    kvs_scan_refill_fn on_refill;  /* after a refill read more bytes (progress) */
    void *refill_user;
    /* before a refill moves the buffer's bytes: every pointer into the buffer
     * the caller holds outside the mark dies, so copy what is still needed */
    void (*before_move)(void *user, struct kvs_scan *s);
    void *move_user;
    /* the first error */
    bool src_failed;       /* it came from the source (which logged it: corrupt gzip, I/O) */
    enum kvs_status status;
    uint64_t err_offset;
    char err[192];
};

/* A JSON number as text plus what a caller usually wants from it. */
struct kvs_number {
    const char *text;      /* the token (valid like any unmarked pointer) */
    size_t len;
    bool negative;
    bool is_integer;       /* no fraction, no exponent */
    bool overflow;         /* the integer part has more than 19 digits */
    uint64_t int_part;     /* |integer part| (mod 2^64 when overflowing) */
    uint64_t frac;         /* the first 9 fraction digits as an integer */
    int frac_digits;       /* how many of those (0..9) */
};

enum kvs_status kvs_scan_init(struct kvs_scan *s, struct kvs_source *src,
                              const struct kvs_logger *lg, size_t bufsize);
void kvs_scan_free(struct kvs_scan *s);

/* Record an error at the cursor (if none yet); always returns false. */
bool kvs_scan_fail(struct kvs_scan *s, enum kvs_status st, const char *fmt, ...)
    KVS_PRINTF(3, 4);

/* Get more bytes, keeping [mark or p, end). Returns false at the end of input
 * (s->eof) or on an error. */
bool kvs_scan_refill(struct kvs_scan *s);

static inline uint64_t kvs_scan_offset(const struct kvs_scan *s)
{
    return s->base + (uint64_t)(s->p - s->buf);
}

static inline void kvs_scan_set_mark(struct kvs_scan *s) { s->mark = s->p; }
static inline void kvs_scan_clear_mark(struct kvs_scan *s) { s->mark = NULL; }

/* Skip whitespace; the next byte (not consumed), KVS_SCAN_EOF at the end of
 * input, KVS_SCAN_ERROR after an error. */
static inline int kvs_scan_peek(struct kvs_scan *s)
{
    for (;;) {
        unsigned char c = (unsigned char)*s->p;
        if (c > ' ')
            return c;
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            s->p++;
            continue;
        }
        if (s->p < s->end)
            return c; /* a control byte or NUL inside the input: the caller rejects it */
        if (s->status != KVS_STATUS_OK)
            return KVS_SCAN_ERROR;
        if (!kvs_scan_refill(s))
            return s->status != KVS_STATUS_OK ? KVS_SCAN_ERROR : KVS_SCAN_EOF;
    }
}

/* Past the whitespace at p, for readers of plain pointers into the buffer:
 * one byte is checked alone, a run 16 at a time (the blocks may read into
 * the buffer's padding; the NUL sentinel at end stops the run). */
static inline const char *kvs_skip_ws(const char *p)
{
#define KVS_IS_WS_(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')
    if ((unsigned char)*p > ' ' || !KVS_IS_WS_(*p)) /* every whitespace byte is <= ' ' */
        return p;
    if ((unsigned char)p[1] > ' ' || !KVS_IS_WS_(p[1]))
        return p + 1;
#if defined(__SSE2__)
    const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
                  tab = _mm_set1_epi8('\t');
    for (p += 2;; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i w = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
                                 _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tab)));
        unsigned m = (unsigned)_mm_movemask_epi8(w) ^ 0xFFFFu;
        if (m)
            return p + __builtin_ctz(m);
    }
#else
    p += 2;
    while (KVS_IS_WS_(*p))
        p++;
    return p;
#endif
#undef KVS_IS_WS_
}

bool kvs_scan_expect_slow(struct kvs_scan *s, char c, const char *what);

/* Consume `c` after whitespace, or fail with "expected <what>". */
static inline bool kvs_scan_expect(struct kvs_scan *s, char c, const char *what)
{
    if (*s->p == c && s->p < s->end) { /* the usual case: no whitespace before it */
        s->p++;
        return true;
    }
    return kvs_scan_expect_slow(s, c, what);
}

/* The first '"' or '\\' in [p, end), or end. Reads whole 16-byte blocks,
 * which may run past end into the buffer's padding (KVS_SCAN_PAD). */
static inline const char *kvs_find_quote_or_backslash(const char *p, const char *end)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
    for (; p < end; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bs)));
        if (m) {
            const char *q = p + __builtin_ctz(m);
            return q < end ? q : end;
        }
    }
    return end;
#else
    /* eight bytes at a time: a byte equal to c makes (x ^ c*0x01..) have a zero byte */
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    for (; p < end; p += 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t a = x ^ (ones * '"'), b = x ^ (ones * '\\');
        uint64_t z = ((a - ones) & ~a & highs) | ((b - ones) & ~b & highs);
        if (z) {
            const char *q = p + (__builtin_ctzll(z) >> 3);
            return q < end ? q : end;
        }
    }
    return end;
#endif
}

bool kvs_scan_string_slow(struct kvs_scan *s, const char **out, size_t *len);

/* At a '"': read and decode the string. *out/len: the decoded bytes (not
 * NUL-terminated; decoded in place in the buffer). */
static inline bool kvs_scan_string(struct kvs_scan *s, const char **out, size_t *len)
{
    /* most strings have no escapes and end inside the buffer: one pass finds
     * the quote; anything else (an escape, the buffer's end, no string at
     * all) takes the general path */
    if (*s->p == '"') {
        const char *q = kvs_find_quote_or_backslash(s->p + 1, s->end);
        /* past the length limit: the general path reports it */
        if (q < s->end && *q == '"' && (size_t)(q - (s->p + 1)) <= KVS_SCAN_MAX_STRING) {
            *out = s->p + 1;
            *len = (size_t)(q - (s->p + 1));
            s->p = (char *)q + 1;
            return true;
        }
    }
    return kvs_scan_string_slow(s, out, len);
}

/* Walking an object's members, once its '{' is consumed:
 *
 *     struct kvs_scan_members m = {.key = "a string key in X",
 *                                  .colon = "':' after a key in X", .next = "',' or '}' in X"};
 *     const char *k; size_t k_len; int c;
 *     while (kvs_scan_member(s, &m, &k, &k_len)) {
 *         ...look at k: it may move at the next scanner call...
 *         if (!kvs_scan_member_value(s, &m, &c)) return false;
 *         ...read or skip the value that starts with c; return false on failure...
 *     }
 *     return m.ok;
 *
 * The strings say what was expected when the input is malformed. */
struct kvs_scan_members {
    const char *key, *colon, *next;
    bool started; /* a member was read */
    bool ok;      /* after the walk: the object closed with '}' */
};

/* The next member's key; false at the object's '}' (m->ok) or on an error. */
static inline bool kvs_scan_member(struct kvs_scan *s, struct kvs_scan_members *m, const char **k,
                                   size_t *k_len)
{
    int c = kvs_scan_peek(s);
    if (c == '}') { /* an empty object, or the end after a member */
        s->p++;
        m->ok = true;
        return false;
    }
    if (m->started) {
        if (c != ',') {
            m->ok = c == KVS_SCAN_ERROR ? false : kvs_scan_expect(s, '}', m->next);
            return false;
        }
        s->p++;
        c = kvs_scan_peek(s);
    }
    m->started = true;
    m->ok = false;
    if (c != '"') {
        if (c != KVS_SCAN_ERROR)
            kvs_scan_expect(s, '"', m->key);
        return false;
    }
    return kvs_scan_string(s, k, k_len);
}

/* The ':' after a member's key; *c (unless c is NULL): the first byte of its
 * value, as from kvs_scan_peek. */
static inline bool kvs_scan_member_value(struct kvs_scan *s, const struct kvs_scan_members *m, int *c)
{
    if (!kvs_scan_expect(s, ':', m->colon))
        return false;
    if (c)
        *c = kvs_scan_peek(s);
    return true;
}

/* At a number's first byte: read it. */
bool kvs_scan_number(struct kvs_scan *s, struct kvs_number *out);

/* Skip one value of any type (validating its structure). */
bool kvs_scan_skip(struct kvs_scan *s);

/* Skip one value and return its raw text [*start, *start+*len) (needs the
 * mark set, or sets a temporary one; the text is valid like a string's). */
bool kvs_scan_capture(struct kvs_scan *s, const char **start, size_t *len);

/* kvs_scan_capture for a value read with no mark set (a top-level field),
 * keeping at most max bytes: a larger value is skipped (still validated)
 * without being kept, so memory stays about max + the buffer; then *over is
 * true and *len 0. The text is valid until the next scanner call. */
bool kvs_scan_capture_max(struct kvs_scan *s, size_t max, const char **start, size_t *len,
                          bool *over);

/* ns from a timestamp number in microseconds ("5091211322205.042" or
 * "1665536373729077" or "1.6e15"): exact for up to 9 fraction digits. */
int64_t kvs_number_us_to_ns(const struct kvs_number *n);

/* The value as a signed 64-bit integer (fractions truncated, saturated). */
int64_t kvs_number_int(const struct kvs_number *n);

double kvs_number_double(const struct kvs_number *n);

#endif
