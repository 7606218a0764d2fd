/* tests/test_base.c — status strings, the logger, and the check-failure path.
 *   meson test -C build test_base */
#include <string.h>

#include "kvs_test.h"
#include "kvscope/base.h"
#include "kvscope/check.h"

struct captured {
    int calls;
    enum kvs_log_level level;
    char text[2048];
};

static void capture(void *user, enum kvs_log_level level, const char *message)
{
    struct captured *c = user;
    c->calls++;
    c->level = level;
    snprintf(c->text, sizeof c->text, "%s", message);
}

static void test_status_strings(void)
{
    for (int s = 0; s < KVS_STATUS_COUNT_; s++) {
        const char *a = kvs_status_str((enum kvs_status)s);
        KVS_REQUIRE(a != NULL);
        KVS_CHECK_MSG(strcmp(a, "unknown status") != 0, "status %d has no description", s);
        for (int t = 0; t < s; t++)
            KVS_CHECK_MSG(strcmp(a, kvs_status_str((enum kvs_status)t)) != 0,
                          "statuses %d and %d share \"%s\"", s, t, a);
    }
    KVS_CHECK_EQ_STR(kvs_status_str(KVS_STATUS_COUNT_), "unknown status");
    KVS_CHECK_EQ_STR(kvs_status_str((enum kvs_status)-5), "unknown status");
    KVS_CHECK_EQ_STR(kvs_status_str(KVS_STATUS_OK), "ok");
}

static void test_logger_levels(void)
{
    struct captured c = {0};
    struct kvs_logger lg = {capture, &c, KVS_LOG_WARN};
    kvs_log(&lg, KVS_LOG_INFO, "dropped %d", 1);
    KVS_CHECK_EQ_INT(c.calls, 0);
    kvs_log(&lg, KVS_LOG_ERROR, "kept %d of %s", 2, "three");
    KVS_CHECK_EQ_INT(c.calls, 1);
    KVS_CHECK_EQ_INT(c.level, KVS_LOG_ERROR);
    KVS_CHECK_EQ_STR(c.text, "kept 2 of three");

    /* zero-initialised min_level means INFO and up: DEBUG is filtered */
    struct kvs_logger lg0 = {capture, &c, 0};
    kvs_log(&lg0, KVS_LOG_DEBUG, "hidden");
    KVS_CHECK_EQ_INT(c.calls, 1);
    kvs_log(&lg0, KVS_LOG_INFO, "shown");
    KVS_CHECK_EQ_INT(c.calls, 2);
}

static void test_logger_truncates(void)
{
    struct captured c = {0};
    struct kvs_logger lg = {capture, &c, KVS_LOG_DEBUG};
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    kvs_log(&lg, KVS_LOG_INFO, "%s", big);
    size_t n = strlen(c.text);
    KVS_CHECK(n > 1000 && n < 1024);
    KVS_CHECK(strcmp(c.text + n - 3, "...") == 0);
}

static void test_check_fail(void)
{
    struct captured c = {0};
    struct kvs_logger lg = {capture, &c, KVS_LOG_INFO};
    enum kvs_status st =
        kvs_check_fail(&lg, KVS_STATUS_CUDA, "CUDA", 2, "out of memory", "cudaMalloc(&p, n)",
                       "engine/pool.c", 42);
    KVS_CHECK_EQ_INT(st, KVS_STATUS_CUDA);
    KVS_CHECK_EQ_INT(c.level, KVS_LOG_ERROR);
    KVS_CHECK_EQ_STR(c.text, "CUDA error 2 (out of memory) at engine/pool.c:42: cudaMalloc(&p, n)");
}

static enum kvs_status passes_through(enum kvs_status inner, int *reached_end)
{
    KVS_TRY(inner);
    *reached_end = 1;
    return KVS_STATUS_OK;
}

static void test_try_propagates(void)
{
    int end = 0;
    KVS_CHECK_EQ_INT(passes_through(KVS_STATUS_PARSE, &end), KVS_STATUS_PARSE);
    KVS_CHECK_EQ_INT(end, 0);
    KVS_CHECK_EQ_INT(passes_through(KVS_STATUS_OK, &end), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(end, 1);
}

static void test_version_matches_build(void)
{
    KVS_CHECK_EQ_STR(KVS_VERSION, KVS_BUILD_VERSION);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"status_strings", test_status_strings},
        {"logger_levels", test_logger_levels},
        {"logger_truncates", test_logger_truncates},
        {"check_fail", test_check_fail},
        {"try_propagates", test_try_propagates},
        {"version_matches_build", test_version_matches_build},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
