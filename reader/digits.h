/* digits.h — runs of ASCII digits and their values, 16 and 8 bytes at a
 * time, for the one-pass event path (event_fast.c): a Kineto timestamp
 * "5091211322205.042" is a 13-digit run, a '.', a 3-digit run.
 *
 * defines: kvs_digit_run, kvs_digit_run_portable, kvs_digit_run_sse2,
 *          kvs_digits_value8, kvs_digits_value16
 *
 * kvs_digit_run is the SSE2 form where the compiler targets SSE2 (every
 * x86-64) and the portable form (8 bytes a word, little-endian; a byte
 * loop otherwise) elsewhere; both are always defined where they can be, so
 * tests/test_digits.c holds them to each other on the same bytes.
 *
 * Each reads 16 bytes from q, whatever the run's length: the scanner's
 * buffer has KVS_SCAN_PAD bytes after its capacity, and a run stops at the
 * NUL sentinel at its end, so a run never reaches past the data, though the
 * load may. Private to reader/.
 */
#ifndef KVS_READER_DIGITS_H
#define KVS_READER_DIGITS_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define KVS_DIGITS_LE 1
#else
#define KVS_DIGITS_LE 0
#endif

/* The count of leading digits of q[0..16): 0..16 (16: all are, go on). */
static inline unsigned kvs_digit_run_portable(const char *q)
{
#if KVS_DIGITS_LE
    for (unsigned at = 0; at < 16; at += 8) {
        uint64_t x;
        memcpy(&x, q + at, 8);
        /* a byte is a digit iff it is 0x3_ and adding 6 keeps it 0x3_; bytes
         * below the first non-digit are digits, which carry nothing into it,
         * so the lowest nonzero byte of t is exactly the first non-digit */
        uint64_t t = ((x & 0xF0F0F0F0F0F0F0F0ull) |
                      (((x + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ^
                     0x3333333333333333ull;
        if (t)
            return at + ((unsigned)__builtin_ctzll(t) >> 3);
    }
    return 16;
#else
    unsigned n = 0;
    while (n < 16 && (unsigned)(q[n] - '0') <= 9)
        n++;
    return n;
#endif
}

#if defined(__SSE2__)
static inline unsigned kvs_digit_run_sse2(const char *q)
{
    __m128i v = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)q), _mm_set1_epi8('0'));
    /* unsigned v <= 9: min(v, 9) == v */
    __m128i d = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(9)), v);
    unsigned m = ~(unsigned)_mm_movemask_epi8(d) | 0x10000u;
    return (unsigned)__builtin_ctz(m);
}
#define kvs_digit_run kvs_digit_run_sse2
#else
#define kvs_digit_run kvs_digit_run_portable
#endif

/* The value of the n digits q[0..n), 1 <= n <= 8 (reads 8 bytes). */
static inline uint64_t kvs_digits_value8(const char *q, unsigned n)
{
#if KVS_DIGITS_LE
    uint64_t x;
    memcpy(&x, q, 8);
    /* the digits to 0..9 (a borrow runs only upward, into the bytes past n,
     * which the shift drops); then shifted up so that the 8 - n bytes below
     * them are zeros: leading zero digits of an 8-digit number, which
     * simdjson's eight-digit multiply then converts */
    x -= 0x3030303030303030ull;
    x <<= 8 * (8 - n);
    x = (x * 10) + (x >> 8);
    x = (((x & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
         (((x >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
    return (uint32_t)x;
#else
    uint64_t r = 0;
    for (unsigned i = 0; i < n; i++)
        r = r * 10 + (uint64_t)(q[i] - '0');
    return r;
#endif
}

/* The value of the n digits q[0..n), 1 <= n <= 16 (reads 16 bytes). */
static inline uint64_t kvs_digits_value16(const char *q, unsigned n)
{
    static const uint64_t p10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    if (n <= 8)
        return kvs_digits_value8(q, n);
    uint64_t hi = kvs_digits_value8(q, 8);
    return hi * p10[n - 8] + kvs_digits_value8(q + 8, n - 8);
}

#endif
