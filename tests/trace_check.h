/* tests/trace_check.h — run tests/check_trace.py (Python's json module) on a
 * trace and hand its summary back as cJSON, for the capture's unit and gpu
 * tests.
 *
 * defines: kvs_check_trace, kvs_check_trace_valid, kvs_summary_array,
 *          kvs_summary_int
 *
 * kvs_check_trace returns the script's exit code (0 valid, 1 problems,
 * 2 unparsable), or -1 when python3 or the script cannot be run (callers
 * skip then), and *summary (cJSON_Delete it) when it printed one.
 */
#ifndef KVSCOPE_TRACE_CHECK_H
#define KVSCOPE_TRACE_CHECK_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kvs_test.h"

static inline int kvs_check_trace(const char *trace, cJSON **summary)
{
    *summary = NULL;
    const char *root = getenv("KVS_SOURCE_ROOT");
    if (!root)
        return -1;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/check_trace.py' '%s'", root, trace);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t cap = 1 << 16, len = 0;
    char *buf = (char *)malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 1024) {
            char *b2 = (char *)realloc(buf, cap * 2);
            if (!b2) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b2;
            cap *= 2;
        }
    }
    int st = pclose(p);
    if (!buf)
        return -1;
    buf[len] = '\0';
    *summary = cJSON_Parse(buf);
    free(buf);
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 127)
        return -1;
    return WEXITSTATUS(st);
}

/* The test's check that the script finds `trace` valid (exit 0), and its
 * summary in *summary (cJSON_Delete it). *summary is NULL when the test is
 * skipped (no python3: counted as a skip) or the script printed no summary
 * (a failure): the caller returns then. */
static inline void kvs_check_trace_valid(const char *trace, cJSON **summary)
{
    int rc = kvs_check_trace(trace, summary);
    if (rc < 0) {
        cJSON_Delete(*summary);
        *summary = NULL;
        KVS_TEST_SKIP("python3 not available to run tests/check_trace.py");
    }
    KVS_CHECK_MSG(rc == 0, "tests/check_trace.py %s: exit %d", trace, rc);
    KVS_REQUIRE(*summary);
}

static inline cJSON *kvs_summary_array(const cJSON *summary, const char *key)
{
    cJSON *a = cJSON_GetObjectItemCaseSensitive(summary, key);
    return cJSON_IsArray(a) ? a : NULL;
}

/* An integer member (numbers only), or dflt. */
static inline long long kvs_summary_int(const cJSON *obj, const char *key, long long dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : dflt;
}

#endif /* KVSCOPE_TRACE_CHECK_H */
