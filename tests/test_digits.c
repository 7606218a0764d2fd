/* tests/test_digits.c — the digit runs and values of reader/digits.h: the
 * SSE2 form (where built) and the portable form against a byte-by-byte
 * reference, on the same bytes.
 *
 *   meson test -C build test_digits          ./build/tests/test_digits [case...]
 *
 * Runs of 0..20 digits are placed at every offset of a 64-byte block,
 * followed by every kind of byte (a NUL sentinel, '.', 'e', '"', ',', bytes
 * just below '0' and above '9', bytes >= 0x80), with stale digits after a
 * NUL as the scanner's buffer has them past its end after a refill; then
 * random bytes. The values are checked against strtoull's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"
#include "kvs_test.h"

static unsigned run_ref(const char *q)
{
    unsigned n = 0;
    while (n < 16 && q[n] >= '0' && q[n] <= '9')
        n++;
    return n;
}

static uint64_t value_ref(const char *q, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(q[i] - '0');
    return v;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* a failed check always fails the test; only the first ten are printed */
static int failures;
#define CHECK_QUIET(cond, ...)                                                                    \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            if (failures++ < 10)                                                                  \
                KVS_CHECK_MSG(0, __VA_ARGS__);                                                    \
            else                                                                                  \
                kvs_test_failures_++;                                                             \
        }                                                                                         \
    } while (0)

/* every form at q against the reference; the values of the run too */
static void check_at(const char *q, const char *what)
{
    unsigned ref = run_ref(q);
    unsigned port = kvs_digit_run_portable(q);
    CHECK_QUIET(port == ref, "%s: portable run %u, reference %u", what, port, ref);
#if defined(__SSE2__)
    unsigned sse = kvs_digit_run_sse2(q);
    CHECK_QUIET(sse == ref, "%s: sse2 run %u, reference %u", what, sse, ref);
#endif
    CHECK_QUIET(kvs_digit_run(q) == ref, "%s: kvs_digit_run %u, reference %u", what, kvs_digit_run(q), ref);
    if (ref > 0) {
        uint64_t v16 = kvs_digits_value16(q, ref), want = value_ref(q, ref);
        CHECK_QUIET(v16 == want, "%s: value16 of %u digits %llu, want %llu", what, ref,
                    (unsigned long long)v16, (unsigned long long)want);
        for (unsigned n = 1; n <= ref && n <= 8; n++)
            CHECK_QUIET(kvs_digits_value8(q, n) == value_ref(q, n), "%s: value8 of %u digits", what, n);
    }
}

static void test_placed_runs(void)
{
    static const char after[] = {'\0', '.', 'e', 'E', '"', ',', ' ', ']', '}', '/', ':', '-', '+',
                                 (char)0x80, (char)0xFA, (char)0xFF, 'a', 0x1F};
    /* a 64-byte block, the run at every offset in it, 48 bytes of room after */
    char buf[64 + 64 + 32];
    int placed = 0;
    for (unsigned len = 0; len <= 20; len++)
        for (unsigned off = 0; off < 64; off++)
            for (size_t a = 0; a < sizeof after; a++) {
                memset(buf, 'x', sizeof buf);
                for (unsigned i = 0; i < len; i++)
                    buf[off + i] = (char)('0' + next_rand() % 10);
                buf[off + len] = after[a];
                /* past a NUL: stale digits, as after a refill's memmove */
                for (unsigned i = off + len + 1; i < off + len + 24; i++)
                    buf[i] = (char)('0' + next_rand() % 10);
                char what[96];
                snprintf(what, sizeof what, "run of %u at %u, then 0x%02x", len, off,
                         (unsigned char)after[a]);
                check_at(buf + off, what);
                /* and from inside the run (a fraction after its '.') */
                if (len > 1)
                    check_at(buf + off + len / 2, what);
                placed++;
            }
    printf("%d placed runs\n", placed);
}

static void test_random_bytes(void)
{
    /* bytes mostly digits, to make long runs, with every other byte between */
    char buf[4096 + 32];
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof buf; i++) {
            uint32_t r = next_rand();
            buf[i] = r % 8 ? (char)('0' + (r >> 8) % 10) : (char)(r >> 8);
        }
        for (size_t i = 0; i + 32 <= sizeof buf; i++)
            check_at(buf + i, "random bytes");
    }
}

static void test_values(void)
{
    /* every length 1..16 of the largest and of random numbers, against strtoull */
    for (unsigned n = 1; n <= 16; n++)
        for (int round = 0; round < 2000; round++) {
            char s[40];
            for (unsigned i = 0; i < n; i++)
                s[i] = round == 0 ? '9' : round == 1 ? '0' : (char)('0' + next_rand() % 10);
            s[n] = '\0';
            memset(s + n + 1, '7', 16);
            KVS_CHECK_EQ_INT(kvs_digit_run(s), n);
            unsigned long long want = strtoull(s, NULL, 10);
            CHECK_QUIET(kvs_digits_value16(s, n) == want, "value16(\"%s\") = %llu, want %llu", s,
                        (unsigned long long)kvs_digits_value16(s, n), want);
        }
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"placed_runs", test_placed_runs},
        {"random_bytes", test_random_bytes},
        {"values", test_values},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
