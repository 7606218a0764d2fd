/* tests/test_ival.c — kvs_ival_covered and kvs_ival_covered_at
 * (analyzers/host_blocking.c) against a plain sum over the intervals: the
 * time merged intervals cover inside [a, b), for queries in order of a (as
 * host_op and host_blocking ask, the hint carried from call to call), out of
 * order, and at the intervals' own ends; seeds printed.
 *
 *   meson test -C build test_ival
 */
#include <stdio.h>
#include <stdlib.h>

#include "host_blocking.h"
#include "kvs_test.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next_u64(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t below(int64_t n)
{
    return n > 0 ? (int64_t)(next_u64() % (uint64_t)n) : 0;
}

/* the time [a0, b0) and [a, b) share */
static int64_t overlap(int64_t a0, int64_t b0, int64_t a, int64_t b)
{
    int64_t lo = a0 > a ? a0 : a, hi = b0 < b ? b0 : b;
    return hi > lo ? hi - lo : 0;
}

/* m merged intervals (gaps of 1.. between them, lengths 0..) into v and
 * plain[] (a copy kept as it is); the span they cover */
static int64_t make(struct kvs_ival *v, struct kvs_ival *plain, size_t m)
{
    int64_t t = below(50);
    for (size_t i = 0; i < m; i++) {
        t += 1 + below(i % 7 == 0 ? 200 : 20);
        int64_t len = below(i % 5 == 0 ? 0 : 40);
        v[i] = plain[i] = (struct kvs_ival){t, t + len};
        t += len;
    }
    return t + 50;
}

static int64_t brute(const struct kvs_ival *plain, size_t m, int64_t a, int64_t b)
{
    int64_t s = 0;
    for (size_t i = 0; b > a && i < m; i++)
        s += overlap(plain[i].a, plain[i].b, a, b);
    return s;
}

static void test_against_sums(void)
{
    static struct kvs_ival v[400], plain[400];
    size_t checked = 0;
    for (int round = 0; round < 200; round++) {
        uint64_t seed = rng;
        size_t m = (size_t)below(399) + 1;
        int64_t span = make(v, plain, m);
        kvs_ival_index(v, m);
        size_t hint = 0;
        int64_t a = -20;
        for (int q = 0; q < 300; q++) {
            /* in order of a mostly; now and then back, or at an interval's edge */
            int kind = (int)below(10);
            if (kind == 0)
                a = below(span) - 10;
            else if (kind == 1)
                a = plain[below((int64_t)m)].a;
            else if (kind == 2)
                a = plain[below((int64_t)m)].b;
            else
                a += below(60);
            int64_t b = a + (below(4) == 0 ? 0 : below(kind == 3 ? 2000 : 80));
            int64_t want = brute(plain, m, a, b);
            int64_t got = kvs_ival_covered_at(v, m, a, b, &hint);
            int64_t got0 = kvs_ival_covered(v, m, a, b);
            KVS_CHECK_MSG(got == want && got0 == want,
                          "seed %llu, %zu intervals, [%lld, %lld): covered_at %lld, covered %lld, sum %lld",
                          (unsigned long long)seed, m, (long long)a, (long long)b, (long long)got,
                          (long long)got0, (long long)want);
            checked++;
        }
    }
    printf("# %zu queries\n", checked);
}

static void test_hint_out_of_range(void)
{
    struct kvs_ival v[4] = {{10, 20}, {30, 40}, {50, 60}};
    kvs_ival_index(v, 3);
    size_t hint = 3; /* past the last interval that starts by a */
    KVS_CHECK_EQ_INT(kvs_ival_covered_at(v, 3, 0, 100, &hint), 30);
    hint = 99; /* not one kvs_ival_covered_at gave: searched from the start */
    KVS_CHECK_EQ_INT(kvs_ival_covered_at(v, 3, 15, 35, &hint), 10);
    KVS_CHECK_EQ_INT(kvs_ival_covered_at(v, 3, 55, 58, &hint), 3);
    KVS_CHECK_EQ_INT(kvs_ival_covered_at(v, 3, 12, 13, &hint), 1); /* back again */
    KVS_CHECK_EQ_INT(kvs_ival_covered_at(v, 0, 12, 13, &hint), 0);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"against_sums", test_against_sums},
        {"hint_out_of_range", test_hint_out_of_range},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
