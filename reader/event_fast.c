/* event_fast.c — the usual traceEvents entry in one pass over the buffer.
 *
 * event.c reads an event token by token through the streaming scanner, which
 * checks for the buffer's end, a refill and a sticky error at every
 * whitespace byte, key and value: ~5,000 instructions for a 360-byte Kineto
 * event (docs/log/2026-12-03-reader-speed.md). Nearly every event lies whole
 * in the 1 MiB buffer and holds nothing unusual, so this reads it with plain
 * pointers into [p, end) — the NUL sentinel at end stops every loop — and
 * gives up, changing nothing, at the first thing it does not take:
 *
 *   the buffer's end before the event's '}'; an escape in a key or in a
 *   string that is kept (cat, name, ph, a string pid/tid); a string id or
 *   number in quotes where an integer is read ("stream": "0x7"); an exponent
 *   or more than 18 integer digits in a number that is read; nesting deeper
 *   than FAST_DEPTH; a string or number longer than the scanner's limits; an
 *   Input Dims rank over KVS_READ_MAX_RANK; and anything malformed.
 *
 * Then event.c reads the event from the same byte, so errors, limits and
 * their offsets are the general path's, and the two agree by construction on
 * everything this accepts: it takes the same keys (the last of a repeated
 * one wins), skips what event.c skips with the same grammar (strings not
 * decoded, numbers by JSON's grammar, literals whole) and keeps the same
 * texts, pointing into the buffer (no refill happens while it runs).
 * Private to reader/.
 */
#include <string.h>

#include "digits.h"
#include "reader_impl.h"

/* deeper than this, the general path skips (it allows KVS_SCAN_MAX_DEPTH) */
#define FAST_DEPTH 32

static inline bool is_digit(char c)
{
    return (unsigned)(c - '0') <= 9;
}

/* one of 0-9 - + . e E: a bit of a 64-bit set, from '+' (0x2B) to 'e' (0x65) */
static inline bool is_num_char(char c)
{
    const uint64_t set = (1ull << ('+' - '+')) | (1ull << ('-' - '+')) | (1ull << ('.' - '+')) |
                         (0x3FFull << ('0' - '+')) | (1ull << ('E' - '+')) | (1ull << ('e' - '+'));
    unsigned d = (unsigned)(unsigned char)c - '+';
    return d < 64 && ((set >> d) & 1);
}

/* Past whitespace (Kineto writes ", " between members and indents lines) */
static inline const char *ws(const char *p)
{
    return kvs_skip_ws(p);
}

/* At a '"': the closing quote of a string without a backslash, or NULL. */
static inline const char *plain_string_end(const char *p, const char *end)
{
#if defined(__SSE2__)
    /* keys and most kept strings are shorter than 16 bytes: their end is in
     * the first block (which may read into the buffer's padding) */
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 1));
    unsigned m = (unsigned)_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
    if (m) {
        const char *q = p + 1 + __builtin_ctz(m);
        return q < end && *q == '"' ? q : NULL;
    }
#endif
    const char *q = kvs_find_quote_or_backslash(p + 1, end);
    if (q >= end || *q != '"' || (size_t)(q - (p + 1)) > KVS_SCAN_MAX_STRING)
        return NULL;
    return q;
}

/* At a '"': past the string, escapes skipped undecoded (as skip_string). */
static inline const char *skip_string(const char *p, const char *end)
{
    p++;
    for (;;) {
        const char *q = kvs_find_quote_or_backslash(p, end);
        if (q >= end)
            return NULL;
        if (*q == '"')
            return q + 1;
        if (q + 1 >= end)
            return NULL;
        p = q + 2; /* a backslash escapes the next byte */
    }
}

/* Past a run of digits at q that kvs_digit_run found to be k long (16: it may
 * go on). */
static inline const char *past_digits(const char *q, unsigned k)
{
    q += k;
    if (k == 16)
        while (is_digit(*q))
            q++;
    return q;
}

/* At a number's first byte: past it when it is one by JSON's grammar and the
 * next byte cannot continue it (kvs_scan_number reads the longest run of
 * number characters, and rejects "01", "1.2.3", "1-2"), else NULL. Digit runs
 * are found 16 bytes at a time (digits.h). */
static const char *skip_number_any(const char *p, const char *end)
{
    const char *q = p + (*p == '-');
    unsigned k = kvs_digit_run(q);
    if (k == 0)
        return NULL;
    /* a leading 0 is the whole integer part: a digit after it ends the
     * check below (is_num_char) */
    q = *q == '0' ? q + 1 : past_digits(q, k);
    if (*q == '.') {
        q++;
        unsigned f = kvs_digit_run(q);
        if (f == 0)
            return NULL;
        q = past_digits(q, f);
    }
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-')
            q++;
        if (!is_digit(*q))
            return NULL;
        while (is_digit(*q))
            q++;
    }
    if (q >= end || is_num_char(*q) || q - p > KVS_SCAN_MAX_NUMBER)
        return NULL;
    return q;
}

/* A number with no exponent and at most 18 integer digits (so no overflow
 * anywhere kvs_number_* would take another path): its parts, as
 * kvs_scan_number fills them. */
struct fnum {
    bool neg;
    uint64_t ip, frac;
    int fd;
};

static inline const char *read_number(const char *p, const char *end, struct fnum *n)
{
    const char *q = p;
    n->neg = *q == '-';
    q += n->neg;
    unsigned k = kvs_digit_run(q);
    if (k == 0 || (*q == '0' && k > 1))
        return NULL;
    const char *d0 = q;
    uint64_t v = kvs_digits_value16(q, k);
    q += k;
    if (k == 16)
        while (is_digit(*q)) /* wraps past 19 digits: refused below */
            v = v * 10 + (uint64_t)(*q++ - '0');
    if (q - d0 > 18)
        return NULL;
    n->ip = v;
    n->frac = 0;
    n->fd = 0;
    if (*q == '.') {
        q++;
        unsigned f = kvs_digit_run(q);
        if (f == 0)
            return NULL;
        /* the first 9 fraction digits, as kvs_scan_number keeps them */
        n->fd = f < 9 ? (int)f : 9;
        n->frac = f <= 8 ? kvs_digits_value8(q, f) : kvs_digits_value8(q, 8) * 10 + (uint64_t)(q[8] - '0');
        q = past_digits(q, f);
    }
    if (q >= end || is_num_char(*q) || q - p > KVS_SCAN_MAX_NUMBER)
        return NULL;
    return q;
}

/* kvs_number_us_to_ns for such a number; false where it would take the
 * floating-point path */
static inline bool fnum_us_to_ns(const struct fnum *n, int64_t *out)
{
    if (n->ip > (uint64_t)INT64_MAX / 1000 - 1)
        return false;
    static const uint64_t p10[] = {1000, 100, 10, 1};
    int64_t sub;
    if (n->fd <= 3) {
        sub = (int64_t)(n->frac * p10[n->fd]);
    } else {
        uint64_t div = 1;
        for (int i = 3; i < n->fd; i++)
            div *= 10;
        sub = (int64_t)((n->frac + div / 2) / div);
    }
    int64_t v = (int64_t)n->ip * 1000 + sub;
    *out = n->neg ? -v : v;
    return true;
}

/* The bytes that end a value in Kineto's layout: ',' ']' '}' ' '. */
static inline bool is_value_end(char c)
{
    unsigned d = (unsigned char)c;
    return d == ',' || d == ' ' || (d | 0x20) == '}'; /* ']' is 0x5D, '}' 0x7D */
}

/* At a number's first byte: past it when it is the usual kind -- at most 15
 * integer and 15 fraction digits, no exponent, a value end after it -- else
 * NULL, and skip_number (which accepts all of these, with the same end)
 * decides. One digit run a part, no loops. */
static inline const char *lean_number(const char *p)
{
    const char *q = p + (*p == '-');
    unsigned k = kvs_digit_run(q);
    if (k - 1 >= 15 || (*q == '0' && k > 1))
        return NULL;
    q += k;
    if (*q == '.') {
        unsigned f = kvs_digit_run(q + 1);
        if (f - 1 >= 15)
            return NULL;
        q += 1 + f;
    }
    return is_value_end(*q) ? q : NULL;
}

/* At a number's first byte: past it, or NULL (the usual kind without a call) */
static inline const char *skip_number(const char *p, const char *end)
{
    const char *q = lean_number(p);
    return q ? q : skip_number_any(p, end);
}

/* At a '"': past a string whose closing quote comes before any backslash,
 * else NULL (skip_string decides) */
static inline const char *lean_string(const char *p, const char *end)
{
    const char *q = kvs_find_quote_or_backslash(p + 1, end);
    return q < end && *q == '"' ? q + 1 : NULL;
}

/* At '[': past an array of the kind Kineto writes in args ("Input Dims":
 * [[1, 2048], []], "Concrete Inputs": ["", "6"], "grid": [2, 1, 1]): arrays,
 * strings without escapes and lean_number's numbers, each value followed by
 * ']' or ',' (one space after it allowed), nesting at most FAST_DEPTH. NULL
 * on anything else, and skip_container decides from the same byte: what this
 * accepts is valid JSON that it accepts too, with the same end, so the
 * general path's verdict is unchanged. Arrays only, so the depth is a count:
 * no stack, no check of what closes what. */
static const char *lean_array(const char *p, const char *end)
{
    int depth = 0;
    for (;;) {
        /* at a value's first byte */
        if (*p == '[') {
            if (++depth > FAST_DEPTH)
                return NULL;
            p++;
            if (*p != ']')
                continue;
            p++;
            depth--;
        } else if (*p == '"') {
            if (!(p = lean_string(p, end)))
                return NULL;
        } else if (!(p = lean_number(p))) {
            return NULL;
        }
        /* after a value */
        for (;;) {
            if (depth == 0)
                return p;
            if (*p == ',') {
                p += 1 + (p[1] == ' ');
                break;
            }
            if (*p != ']')
                return NULL;
            p++;
            depth--;
        }
    }
}

static const char *skip_value(const char *p, const char *end);

/* At '{' or '[': past the container, validated as kvs_scan_skip does. */
static const char *skip_container(const char *p, const char *end)
{
    char stack[FAST_DEPTH];
    int depth = 0;
    for (;;) {
        /* at a value's first byte */
        char c = *p;
        if (c == '{' || c == '[') {
            if (depth == FAST_DEPTH)
                return NULL;
            stack[depth++] = c;
            p = ws(p + 1);
            if (*p == (c == '{' ? '}' : ']')) {
                p++;
                depth--;
            } else {
                if (c == '{') {
                    if (*p != '"' || !(p = skip_string(p, end)))
                        return NULL;
                    p = ws(p);
                    if (*p != ':')
                        return NULL;
                    p = ws(p + 1);
                }
                continue;
            }
        } else if (c == '"') {
            if (!(p = skip_string(p, end)))
                return NULL;
        } else if (c == '-' || is_digit(c)) {
            if (!(p = skip_number(p, end)))
                return NULL;
        } else {
            if (!(p = skip_value(p, end))) /* literals */
                return NULL;
        }
        /* after a value */
        for (;;) {
            if (depth == 0)
                return p;
            char top = stack[depth - 1];
            if (p[0] == ',' && p[1] == ' ' && (unsigned char)p[2] > ' ') {
                p += 2; /* Kineto's ", " */
            } else if (*(p = ws(p)) == ',') {
                p = ws(p + 1);
            } else if (*p == (top == '{' ? '}' : ']')) {
                p++;
                depth--;
                continue;
            } else {
                return NULL;
            }
            if (top == '{') {
                if (*p != '"' || !(p = skip_string(p, end)))
                    return NULL;
                p = ws(p);
                if (*p != ':')
                    return NULL;
                p = ws(p + 1);
            }
            break;
        }
    }
}

/* At a value's first byte (after whitespace): past it, or NULL. */
static const char *skip_value(const char *p, const char *end)
{
    switch (*p) {
    case '"': return skip_string(p, end);
    case '{': return skip_container(p, end);
    case '[': {
        const char *q = lean_array(p, end);
        return q ? q : skip_container(p, end);
    }
    case 't': return end - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
    case 'f': return end - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
    case 'n': return end - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
    default: return *p == '-' || is_digit(*p) ? skip_number(p, end) : NULL;
    }
}

static inline void set_text(struct kvs_text *out, const char *text, size_t n)
{
    out->p = text;
    out->len = (uint32_t)n;
    out->in_scan = true;
}

/* event.c's int_value: a number (truncated), or a non-string skipped */
static inline const char *int_value(const char *p, const char *end, int64_t *out, bool *has)
{
    if (*p == '"')
        return NULL; /* strtoll's base-0 reading of a string: the general path */
    if (*p == '-' || is_digit(*p)) {
        struct fnum n;
        const char *q = read_number(p, end, &n);
        if (!q)
            return NULL;
        *out = n.neg ? -(int64_t)n.ip : (int64_t)n.ip;
        if (has)
            *has = true;
        return q;
    }
    return skip_value(p, end);
}

/* event.c's id_value: a string's text or a number's token, kept as text */
static inline const char *id_value(const char *p, const char *end, struct kvs_text *out, bool *has)
{
    if (*p == '"') {
        const char *q = plain_string_end(p, end);
        if (!q)
            return NULL;
        set_text(out, p + 1, (size_t)(q - (p + 1)));
        *has = true;
        return q + 1;
    }
    if (*p == '-' || is_digit(*p)) {
        const char *q = skip_number(p, end);
        if (!q)
            return NULL;
        set_text(out, p, (size_t)(q - p));
        *has = true;
        return q;
    }
    return skip_value(p, end);
}

/* event.c's string_value: a string's text; any other value skipped, and
 * the field then has none */
static inline const char *string_value(const char *p, const char *end, struct kvs_text *out, bool *has)
{
    if (*p == '"') {
        const char *q = plain_string_end(p, end);
        if (!q)
            return NULL;
        set_text(out, p + 1, (size_t)(q - (p + 1)));
        *has = true;
        return q + 1;
    }
    *has = false;
    return skip_value(p, end);
}

/* event.c's time_value: a number in us as ns; anything else skipped */
static inline const char *time_value(const char *p, const char *end, int64_t *out, bool *has)
{
    if (*p == '-' || is_digit(*p)) {
        struct fnum n;
        const char *q = read_number(p, end, &n);
        if (!q || !fnum_us_to_ns(&n, out))
            return NULL;
        *has = true;
        return q;
    }
    return skip_value(p, end);
}

/* event.c's capture_text: the value's raw text, kept up to KVS_READ_MAX_SHAPE */
static inline const char *capture_text(const char *p, const char *end, struct kvs_text *out,
                                       bool *has, bool *over)
{
    const char *q = skip_value(p, end);
    if (!q)
        return NULL;
    *has = true;
    *over = (size_t)(q - p) > KVS_READ_MAX_SHAPE;
    if (*over)
        *out = (struct kvs_text){0};
    else
        set_text(out, p, (size_t)(q - p));
    return q;
}

/* At an object member's opening quote: its key (*k, *k_len, without the
 * quotes; keys hold no escapes on this path) and, past the colon, its value's
 * first byte; NULL on anything else. Kineto writes "key": value. */
static inline const char *member_value(const char *p, const char *end, const char **k,
                                       size_t *k_len)
{
    if (*p != '"')
        return NULL;
    const char *kq = plain_string_end(p, end);
    if (!kq)
        return NULL;
    *k = p + 1;
    *k_len = (size_t)(kq - *k);
    if (kq[1] == ':' && kq[2] == ' ' && (unsigned char)kq[3] > ' ')
        return kq + 3;
    p = ws(kq + 1);
    return *p == ':' ? ws(p + 1) : NULL;
}

/* Whether p starts with the slot's text (reads 32 bytes: the buffer's
 * padding; the NUL sentinel at end matches no slot, none holding a NUL). */
static inline bool key_is(const char *p, const struct kvs_key_slot *ks)
{
#if defined(__SSE2__)
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    __m128i la = _mm_loadu_si128((const __m128i *)(const void *)ks->lit);
    __m128i lb = _mm_loadu_si128((const __m128i *)(const void *)(ks->lit + 16));
    uint32_t m = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a, la)) |
                 (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, lb)) << 16;
    return (m & ks->mask) == ks->mask;
#else
    return !memcmp(p, ks->lit, ks->len);
#endif
}

/* After a miss: the slot of the key just read at p ("key": then its value at
 * v), learnt as the one after *state in class cls; KVS_KEY_LOST when its text
 * is not "key": with one space, is over 32 bytes or the slots are full. */
static unsigned key_learn(struct kvs_key_guess *kg, unsigned cls, unsigned state, const char *p,
                          size_t k_len, const char *v, int which)
{
    size_t len = k_len + 4;
    /* a key with a NUL byte is not learnt: the NUL sentinel at the buffer's
     * end, and the stale bytes after it, could then pass for it */
    if (v != p + len || len > 32 || p[len - 2] != ':' || p[len - 1] != ' ' || memchr(p, 0, len))
        return KVS_KEY_LOST;
    unsigned s = 1;
    while (s <= kg->n && (kg->slot[s].len != len || memcmp(kg->slot[s].lit, p, len)))
        s++;
    if (s > kg->n) {
        if (kg->n == KVS_KEY_SLOTS)
            return KVS_KEY_LOST;
        s = ++kg->n;
        struct kvs_key_slot *ks = &kg->slot[s];
        memset(ks->lit, 0, sizeof ks->lit);
        memcpy(ks->lit, p, len);
        ks->len = (uint8_t)len;
        ks->mask = len == 32 ? UINT32_MAX : ((uint32_t)1 << len) - 1;
        ks->which = (int8_t)which;
    }
    if (state != KVS_KEY_LOST) {
        uint8_t *nx = kg->next[cls][state];
        if (nx[0] != s && nx[1] != s) {
            nx[1] = nx[0];
            nx[0] = (uint8_t)s;
        }
    }
    return s;
}

/* At a member's opening quote: its value's first byte, *which its key's
 * number (kvs_args_key's when args, else kvs_event_key's); NULL on anything
 * member_value does not take. The guessed keys are tried first. */
static inline const char *member_key(struct kvs_key_guess *kg, unsigned cls, unsigned *state,
                                     const char *p, const char *end, int *which, bool args)
{
    const uint8_t *nx = kg->next[cls][*state];
    unsigned s = nx[0];
    if (!s || !key_is(p, &kg->slot[s])) {
        s = nx[1];
        if (!s || !key_is(p, &kg->slot[s])) {
            const char *k;
            size_t k_len;
            const char *v = member_value(p, end, &k, &k_len);
            if (!v)
                return NULL;
            *which = args ? kvs_args_key(k, k_len) : kvs_event_key(k, k_len);
            *state = key_learn(kg, cls, *state, p, k_len, v, *which);
            return v;
        }
    }
    *state = s;
    *which = kg->slot[s].which;
    p += kg->slot[s].len;
    return (unsigned char)*p > ' ' ? p : ws(p);
}

/* Past a member's value: at the next member's quote (*more = 1) or past the
 * object's '}' (*more = 0); NULL on anything else. Kineto writes ", " between
 * members. */
static inline const char *member_next(const char *p, int *more)
{
    *more = 1;
    if (p[0] == ',' && p[1] == ' ' && p[2] == '"')
        return p + 2;
    p = ws(p);
    if (*p == '}') {
        *more = 0;
        return p + 1;
    }
    return *p == ',' ? ws(p + 1) : NULL;
}

// ----------------------------------------------------------------------------
// guessed values

/* The guesses' class once an event's cat is known: its ph and cat, as far as
 * cat's first and last bytes and length tell (a cpu_op's members and values
 * follow each other otherwise than a kernel's) */
static inline unsigned cat_class(char ph, const struct kvs_text *cat)
{
    if (!cat->len)
        return (unsigned char)ph % KVS_KEY_CLASSES;
    return ((unsigned char)ph + (unsigned char)cat->p[0] + (unsigned char)cat->p[cat->len - 1] * 7u +
            cat->len * 13u) % KVS_KEY_CLASSES;
}

/* what reading a learnt value gave */
enum { VG_SKIP = 1, VG_STR, VG_TOK, VG_NUM, VG_PH, VG_TEXT, VG_LAUNCH };

static inline struct kvs_val_guess *val_guess(struct kvs_key_guess *kg, unsigned cls, unsigned slot)
{
    return &kg->val[(slot * 8u + cls) % KVS_VAL_GUESSES];
}

/* Whether the value at p is the one learnt for this key and class (its
 * bytes, and the byte after it, within the buffer) */
static inline bool val_is(const char *p, const char *end, const struct kvs_val_guess *vg,
                          unsigned cls, unsigned slot)
{
    if (vg->slot != slot || vg->cls != cls || p + vg->len > end)
        return false;
#if defined(__SSE2__)
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)vg->text);
    return ((uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a, b)) & vg->mask) == vg->mask;
#else
    return !memcmp(p, vg->text, vg->len);
#endif
}

/* Learn the value read at [v, q) as key slot's in class cls, if it is at
 * most 15 bytes and ',' or '}' follows it. */
static inline void val_learn(struct kvs_val_guess *vg, unsigned cls, unsigned slot, const char *v,
                             const char *q, int kind, int64_t num, char ph)
{
    size_t len = (size_t)(q - v) + 1;
    if (len > 16 || (*q != ',' && *q != '}'))
        return;
    memcpy(vg->text, v, 16); /* the bytes past len are masked off (the buffer's padding) */
    vg->mask = ((uint32_t)1 << len) - 1;
    vg->len = (uint8_t)len;
    vg->slot = (uint8_t)slot;
    vg->cls = (uint8_t)cls;
    vg->kind = (uint8_t)kind;
    vg->num = num;
    vg->ph = ph;
}

static inline bool starts_number(char c)
{
    return c == '-' || is_digit(c);
}

/* An event member's value read at [v, q): learnt as what it gave */
static inline void ev_learn(struct kvs_val_guess *vg, unsigned cls, unsigned slot, int which,
                            const char *v, const char *q, const struct kvs_ev *e)
{
    switch (which) {
    case 1: if (*v == '"') val_learn(vg, cls, slot, v, q, VG_PH, 0, e->ph); break;
    case 2: if (starts_number(*v)) val_learn(vg, cls, slot, v, q, VG_NUM, e->ts, 0); break;
    case 4: if (starts_number(*v)) val_learn(vg, cls, slot, v, q, VG_NUM, e->dur, 0); break;
    case 3:
    case 7: if (*v == '"') val_learn(vg, cls, slot, v, q, VG_STR, 0, 0); break;
    case 5:
    case 6:
        if (*v == '"')
            val_learn(vg, cls, slot, v, q, VG_STR, 0, 0);
        else if (starts_number(*v))
            val_learn(vg, cls, slot, v, q, VG_TOK, 0, 0);
        break;
    case 8: break;
    default: val_learn(vg, cls, slot, v, q, VG_SKIP, 0, 0); break;
    }
}

/* ... and given again at p: what reading it gives */
static inline void ev_apply(const struct kvs_val_guess *vg, int which, const char *p,
                            struct kvs_ev *e, unsigned *cls)
{
    size_t n = vg->len - 1u; /* the value's bytes */
    switch (which) {
    case 1:
        e->ph = vg->ph;
        *cls = (unsigned char)e->ph % KVS_KEY_CLASSES;
        break;
    case 2: e->ts = vg->num; e->has_ts = true; break;
    case 4: e->dur = vg->num; e->has_dur = true; break;
    case 3:
        set_text(&e->cat, p + 1, n - 2);
        e->has_cat = true;
        *cls = cat_class(e->ph, &e->cat);
        break;
    case 7: set_text(&e->name, p + 1, n - 2); e->has_name = true; break;
    case 5:
        if (vg->kind == VG_STR)
            set_text(&e->pid, p + 1, n - 2);
        else
            set_text(&e->pid, p, n);
        e->has_pid = true;
        break;
    case 6:
        if (vg->kind == VG_STR)
            set_text(&e->tid, p + 1, n - 2);
        else
            set_text(&e->tid, p, n);
        e->has_tid = true;
        break;
    default: break;
    }
}

/* An args member's value read at [v, q): learnt as what it gave */
static inline void args_learn(struct kvs_val_guess *vg, unsigned cls, unsigned slot, int which,
                              const char *v, const char *q, const struct kvs_ev *e)
{
    int64_t num;
    switch (which) {
    case 1: num = e->bytes; break;
    case 2: num = e->device; break;
    case 3: num = e->stream; break;
    case 6: num = e->ext; break;
    case 7: num = e->corr; break;
    case 10: num = e->graph_node; break;
    case 4:
    case 5: val_learn(vg, cls, slot, v, q, VG_TEXT, 0, 0); return;
    case 8:
    case 9: val_learn(vg, cls, slot, v, q, VG_LAUNCH, 0, 0); return;
    default: val_learn(vg, cls, slot, v, q, VG_SKIP, 0, 0); return;
    }
    if (starts_number(*v))
        val_learn(vg, cls, slot, v, q, VG_NUM, num, 0);
}

/* ... and given again at p: what reading it gives */
static inline void args_apply(const struct kvs_val_guess *vg, int which, const char *p, struct kvs_ev *e)
{
    size_t n = vg->len - 1u;
    switch (which) {
    case 1: e->bytes = vg->num; break;
    case 2: e->device = vg->num; e->has_device = true; break;
    case 3: e->stream = vg->num; e->has_stream = true; break;
    case 6: e->ext = vg->num; break;
    case 7: e->corr = vg->num; break;
    case 10: e->graph_node = vg->num; break;
    case 4: set_text(&e->dims, p, n); e->has_dims = true; e->dims_over = false; break;
    case 5: set_text(&e->types, p, n); e->has_types = true; e->types_over = false; break;
    case 8:
    case 9:
        if (*p == '[')
            kvs_launch_dims_of(p, n, which == 8 ? &e->grid_blocks : &e->block_threads);
        break;
    default: break;
    }
}

/* At args' first byte: past it, its fields in e (event.c's parse_args). */
static const char *args_value(struct kvs_reader *r, const char *p, const char *end, struct kvs_ev *e)
{
    if (*p != '{')
        return skip_value(p, end);
    p = ws(p + 1);
    if (*p == '}')
        return p + 1;
    /* the guesses' class: the event's cat, as far as its first and last
     * bytes and length tell */
    unsigned cls = 0, state = 0;
    if (e->has_cat && e->cat.len)
        cls = ((unsigned char)e->cat.p[0] + (unsigned char)e->cat.p[e->cat.len - 1] * 7u +
               e->cat.len * 13u) % KVS_KEY_CLASSES;
    for (int more = 1; more;) {
        int which;
        if (!(p = member_key(&r->args_keys, cls, &state, p, end, &which, true)))
            return NULL;
        struct kvs_val_guess *vg = NULL;
        if (state != KVS_KEY_LOST) {
            vg = val_guess(&r->args_keys, cls, state);
            if (val_is(p, end, vg, cls, state)) {
                args_apply(vg, which, p, e);
                p += vg->len - 1;
                if (!(p = member_next(p, &more)))
                    return NULL;
                continue;
            }
        }
        const char *v = p;
        switch (which) {
        case 1: p = int_value(p, end, &e->bytes, NULL); break;
        case 2: p = int_value(p, end, &e->device, &e->has_device); break;
        case 3: p = int_value(p, end, &e->stream, &e->has_stream); break;
        case 4: {
            p = capture_text(p, end, &e->dims, &e->has_dims, &e->dims_over);
            /* a rank over the limit needs that many commas: short dims cannot */
            size_t at, rank;
            if (p && !e->dims_over && e->dims.len > 2 * KVS_READ_MAX_RANK &&
                !kvs_dims_rank_ok(e->dims.p, e->dims.len, &at, &rank))
                return NULL; /* the general path says where */
            break;
        }
        case 5: p = capture_text(p, end, &e->types, &e->has_types, &e->types_over); break;
        case 6: p = int_value(p, end, &e->ext, NULL); break;
        case 7: p = int_value(p, end, &e->corr, NULL); break;
        case 8:
        case 9:
            p = skip_value(p, end);
            if (p && *v == '[' && (size_t)(p - v) <= LAUNCH_DIMS_MAX)
                kvs_launch_dims_of(v, (size_t)(p - v), which == 8 ? &e->grid_blocks : &e->block_threads);
            break;
        case 10: p = int_value(p, end, &e->graph_node, NULL); break;
        default: p = *p == '-' || is_digit(*p) ? skip_number(p, end) : skip_value(p, end); break;
        }
        if (!p)
            return NULL;
        if (vg)
            args_learn(vg, cls, state, which, v, p, e);
        if (!(p = member_next(p, &more)))
            return NULL;
    }
    return p;
}

bool kvs_event_fast(struct kvs_reader *r, struct kvs_ev *e)
{
    struct kvs_scan *s = &r->scan;
    const char *p = s->p, *end = s->end;
    if (*p != '{')
        return false;
    kvs_ev_clear(e);
    p = ws(p + 1);
    if (*p == '}') {
        s->p = (char *)p + 1;
        return true;
    }
    unsigned cls = 0, state = 0; /* the guesses' class: the event's ph, then its ph and cat */
    for (int more = 1; more;) {
        int which;
        if (!(p = member_key(&r->ev_keys, cls, &state, p, end, &which, false)))
            return false;
        struct kvs_val_guess *vg = NULL;
        unsigned vcls = cls; /* ph's value may change cls */
        if (state != KVS_KEY_LOST) {
            vg = val_guess(&r->ev_keys, cls, state);
            if (val_is(p, end, vg, cls, state)) {
                ev_apply(vg, which, p, e, &cls);
                p += vg->len - 1;
                if (!(p = member_next(p, &more)))
                    return false;
                continue;
            }
        }
        const char *v = p;
        switch (which) {
        case 1:
            if (p[0] == '"' && p[2] == '"' && p + 2 < end && p[1] != '"' && p[1] != '\\') {
                e->ph = p[1]; /* "X": a one-byte string, no search for its end */
                cls = (unsigned char)e->ph % KVS_KEY_CLASSES;
                p += 3;
            } else if (*p == '"') {
                const char *q = plain_string_end(p, end);
                if (!q)
                    return false;
                e->ph = q > p + 1 ? p[1] : 0;
                cls = (unsigned char)e->ph % KVS_KEY_CLASSES;
                p = q + 1;
            } else {
                p = skip_value(p, end);
            }
            break;
        case 2: p = time_value(p, end, &e->ts, &e->has_ts); break;
        case 3:
            p = string_value(p, end, &e->cat, &e->has_cat);
            if (p && e->has_cat)
                cls = cat_class(e->ph, &e->cat);
            break;
        case 4: p = time_value(p, end, &e->dur, &e->has_dur); break;
        case 5: p = id_value(p, end, &e->pid, &e->has_pid); break;
        case 6: p = id_value(p, end, &e->tid, &e->has_tid); break;
        case 7: p = string_value(p, end, &e->name, &e->has_name); break;
        case 8: p = args_value(r, p, end, e); break;
        default: p = skip_value(p, end); break;
        }
        if (!p)
            return false;
        if (vg)
            ev_learn(vg, vcls, state, which, v, p, e);
        if (!(p = member_next(p, &more)))
            return false;
    }
    s->p = (char *)p;
    return true;
}
