/* tests/kvs_test.h — the small harness every kvscope test uses.
 *
 * defines: KVS_CHECK, KVS_CHECK_MSG, KVS_CHECK_EQ_INT, KVS_CHECK_EQ_STR,
 *          KVS_CHECK_NEAR, KVS_REQUIRE, KVS_TEST_SKIP, KVS_TEST_SETUP_FAILED,
 *          struct kvs_test, kvs_test_main, kvs_test_shared_path
 *
 * A test file lists its cases and calls kvs_test_main:
 *
 *   static void test_parse(void) { KVS_CHECK_EQ_INT(parse("1"), 1); }
 *   int main(int argc, char **argv) {
 *       static const struct kvs_test tests[] = {{"parse", test_parse}, {0}};
 *       return kvs_test_main(argc, argv, tests);
 *   }
 *
 * `./test_x NAME...` runs only the named cases. Exit 0 when every check held,
 * 1 when one failed, 77 (meson: skipped) when a case called KVS_TEST_SKIP
 * and nothing failed, 99 (meson: setup error) for KVS_TEST_SETUP_FAILED.
 */
#ifndef KVSCOPE_TEST_H
#define KVSCOPE_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KVS_TEST_EXIT_SKIP 77
#define KVS_TEST_EXIT_SETUP 99

static int kvs_test_failures_;
static int kvs_test_skips_;

#define KVS_CHECK_MSG(cond, ...)                                                                  \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fputc('\n', stderr);                                                                  \
            kvs_test_failures_++;                                                                 \
        }                                                                                         \
    } while (0)

#define KVS_CHECK(cond) KVS_CHECK_MSG(cond, "false")

#define KVS_CHECK_EQ_INT(a, b)                                                                    \
    do {                                                                                          \
        long long kvs_a_ = (long long)(a), kvs_b_ = (long long)(b);                               \
        KVS_CHECK_MSG(kvs_a_ == kvs_b_, "%s = %lld, %s = %lld", #a, kvs_a_, #b, kvs_b_);          \
    } while (0)

#define KVS_CHECK_EQ_STR(a, b)                                                                    \
    do {                                                                                          \
        const char *kvs_a_ = (a), *kvs_b_ = (b);                                                  \
        KVS_CHECK_MSG(kvs_a_ && kvs_b_ && strcmp(kvs_a_, kvs_b_) == 0, "\"%s\" != \"%s\"",         \
                      kvs_a_ ? kvs_a_ : "(null)", kvs_b_ ? kvs_b_ : "(null)");                    \
    } while (0)

/* |a - b| <= tol; NaN never passes. */
#define KVS_CHECK_NEAR(a, b, tol)                                                                 \
    do {                                                                                          \
        double kvs_a_ = (double)(a), kvs_b_ = (double)(b), kvs_t_ = (double)(tol);                \
        KVS_CHECK_MSG(fabs(kvs_a_ - kvs_b_) <= kvs_t_, "%s = %.9g, %s = %.9g, tolerance %.3g", #a, \
                      kvs_a_, #b, kvs_b_, kvs_t_);                                                \
    } while (0)

/* Check, and leave the current test case (a void function) when it fails. */
#define KVS_REQUIRE(cond)                                                                         \
    do {                                                                                          \
        int kvs_before_ = kvs_test_failures_;                                                     \
        KVS_CHECK(cond);                                                                          \
        if (kvs_test_failures_ != kvs_before_)                                                    \
            return;                                                                               \
    } while (0)

/* Leave the current case as skipped, saying why. */
#define KVS_TEST_SKIP(...)                                                                        \
    do {                                                                                          \
        fprintf(stderr, "skip: ");                                                                \
        fprintf(stderr, __VA_ARGS__);                                                             \
        fputc('\n', stderr);                                                                      \
        kvs_test_skips_++;                                                                        \
        return;                                                                                   \
    } while (0)

/* The environment is broken (not the code under test): stop with 99. */
#define KVS_TEST_SETUP_FAILED(...)                                                                \
    do {                                                                                          \
        fprintf(stderr, "setup failed: ");                                                        \
        fprintf(stderr, __VA_ARGS__);                                                             \
        fputc('\n', stderr);                                                                      \
        exit(KVS_TEST_EXIT_SETUP);                                                                \
    } while (0)

struct kvs_test {
    const char *name;
    void (*fn)(void);
};

static inline int kvs_test_main(int argc, char **argv, const struct kvs_test *tests)
{
    int ran = 0;
    for (const struct kvs_test *t = tests; t->name; t++) {
        if (argc > 1) {
            int wanted = 0;
            for (int i = 1; i < argc; i++)
                wanted |= strcmp(argv[i], t->name) == 0;
            if (!wanted)
                continue;
        }
        int f0 = kvs_test_failures_, s0 = kvs_test_skips_;
        t->fn();
        ran++;
        fprintf(stderr, "%s %s\n",
                kvs_test_failures_ != f0 ? "FAIL"
                : kvs_test_skips_ != s0  ? "skip"
                                         : "ok  ",
                t->name);
    }
    if (ran == 0) {
        fprintf(stderr, "no test case matched\n");
        return KVS_TEST_EXIT_SETUP;
    }
    if (kvs_test_failures_)
        return 1;
    return kvs_test_skips_ == ran ? KVS_TEST_EXIT_SKIP : 0;
}

/* Path of `rel` under the read-only ../shared folder (KVS_SHARED_DIR, set by
 * meson test), written into buf. Returns NULL when the folder is absent. */
static inline const char *kvs_test_shared_path(char *buf, size_t size, const char *rel)
{
    const char *dir = getenv("KVS_SHARED_DIR");
    if (!dir || !*dir)
        return NULL;
    int n = snprintf(buf, size, "%s/%s", dir, rel);
    if (n < 0 || (size_t)n >= size)
        return NULL;
    FILE *f = fopen(buf, "rb");
    if (!f)
        return NULL;
    fclose(f);
    return buf;
}

/* A deterministic generator for test inputs (splitmix64): seed it from the
 * case so a failure reproduces, and from the clock where fresh draws matter. */
static inline uint64_t kvs_test_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif /* KVSCOPE_TEST_H */
