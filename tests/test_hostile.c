/* tests/test_hostile.c — hostile and odd inputs through the public analysis
 * API: every finding of the fuzzers (tests/fuzz/) gets a case here, run by
 * the unit suite (and under ASan/UBSan/LSan in the sanitizer build of
 * .ci/run, where most of these bugs show).
 *
 *   meson test -C build test_hostile     ./build/tests/test_hostile [case...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer_test_util.h"
#include "kvs_test.h"
#include "kvscope/analysis.h"

static struct kvs_log_capture cap;

/* Analyse `text` (written to a temp file); the status, *out set on success. */
static enum kvs_status analyze_text(const char *text, size_t n, struct kvs_analysis **out)
{
    char path[512];
    kvs_tmp_write(path, sizeof path, text, n, ".json");
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log = kvs_capture_logger(&cap);
    *out = NULL;
    enum kvs_status st = kvs_analyze_file(path, &opt, out);
    unlink(path);
    return st;
}

/* groups.c sorted its (NULL, 0) group array: UBSan "null pointer passed as
 * argument 1" on HTA traces with no copy/cast work (triton_example, ...). */
static void test_no_copy_groups(void)
{
    static const char trace[] =
        "{\"traceEvents\": ["
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,"
        "\"ts\":10,\"dur\":5,\"args\":{\"External id\":1}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_kernel\",\"pid\":0,\"tid\":7,"
        "\"ts\":12,\"dur\":2,\"args\":{\"External id\":1,\"device\":0,\"stream\":7}}]}";
    struct kvs_analysis *a;
    KVS_REQUIRE(analyze_text(trace, sizeof trace - 1, &a) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(a->ngroup, 0);
    KVS_CHECK_EQ_INT(a->nkernel, 1);
    KVS_CHECK_EQ_INT(a->trace.events, 2);
    kvs_analysis_free(a);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"no_copy_groups", test_no_copy_groups},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
