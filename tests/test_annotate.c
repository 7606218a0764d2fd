/* tests/test_annotate.c — the annotation API without a GPU: the NVTX op
 * message round-trips shapes exactly, malformed messages are refused, and
 * the capture hooks receive every call while installed and none after
 * removal (also with another thread annotating meanwhile).
 *   meson test -C build test_annotate
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "annotate_internal.h"
#include "kvs_test.h"
#include "kvscope/annotate.h"

// ----------------------------------------------------------------------------
// op message

static void test_message_roundtrip(void)
{
    struct kvs_tensor_desc in[3] = {
        {3, {495552, 1, 576}, "c10::BFloat16"},
        {3, {495552, 1, 576}, "c10::Float8_e4m3fn"},
        {0, {0}, "Scalar"},
    };
    char msg[512];
    KVS_REQUIRE(kvs_op_message_format(msg, sizeof msg, "aten::copy_", 3, in) == 1);
    KVS_CHECK_EQ_STR(msg, "aten::copy_ {dims=[[495552,1,576],[495552,1,576],[]] "
                          "types=[c10::BFloat16,c10::Float8_e4m3fn,Scalar]}");
    struct kvs_tensor_desc out[4];
    char dt[128];
    size_t name_len = 0;
    int n = -1;
    KVS_REQUIRE(kvs_op_message_parse(msg, &name_len, out, 4, &n, dt, sizeof dt) == 1);
    KVS_CHECK_EQ_INT(name_len, strlen("aten::copy_"));
    KVS_REQUIRE(n == 3);
    for (int i = 0; i < 3; i++) {
        KVS_CHECK_EQ_INT(out[i].rank, in[i].rank);
        for (int d = 0; d < in[i].rank; d++)
            KVS_CHECK_EQ_INT(out[i].dims[d], in[i].dims[d]);
        KVS_CHECK_EQ_STR(out[i].dtype, in[i].dtype);
    }
}

static void test_message_edge_cases(void)
{
    struct kvs_tensor_desc out[2];
    char dt[64];
    size_t name_len;
    int n;
    /* a plain name: 0 tensors, whole string is the name */
    KVS_CHECK(kvs_op_message_parse("layer_3", &name_len, out, 2, &n, dt, sizeof dt) == 1);
    KVS_CHECK_EQ_INT(n, 0);
    KVS_CHECK_EQ_INT(name_len, 7);
    /* the marker inside the name: the last one counts */
    KVS_CHECK(kvs_op_message_parse("a {dims=[x] {dims=[[-1,2]] types=[]}", &name_len, out, 2, &n,
                                   dt, sizeof dt) == 1);
    KVS_CHECK_EQ_INT(n, 1);
    KVS_CHECK_EQ_INT(name_len, strlen("a {dims=[x]"));
    KVS_CHECK_EQ_INT(out[0].dims[0], -1);
    KVS_CHECK_EQ_STR(out[0].dtype, "");
    /* huge dims survive */
    KVS_CHECK(kvs_op_message_parse("x {dims=[[9223372036854775807]] types=[int]}", &name_len, out,
                                   2, &n, dt, sizeof dt) == 1);
    KVS_CHECK_EQ_INT(out[0].dims[0], INT64_MAX);
    /* malformed suffixes are refused */
    const char *bad[] = {
        "x {dims=[[1,2] types=[a]}",     "x {dims=[[1,,2]] types=[a]}",
        "x {dims=[[1]] types=[a,b]}",    "x {dims=[[1],[2]] types=[a]}",
        "x {dims=[[1]] types=[a]",       "x {dims=[[1]] types=[a]} trailing",
        "x {dims=[[a]] types=[a]}",      "x {dims=[[1,2,3,4,5,6,7,8,9]] types=[a]}",
        "x {dims=[[1],[2],[3]] types=[a,b,c]}", /* more tensors than room */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        KVS_CHECK_MSG(kvs_op_message_parse(bad[i], &name_len, out, 2, &n, dt, sizeof dt) == 0,
                      "accepted '%s'", bad[i]);
    /* dtype storage too small is refused, not overflowed */
    KVS_CHECK(kvs_op_message_parse("x {dims=[[1]] types=[c10::BFloat16]}", &name_len, out, 2, &n,
                                   dt, 5) == 0);
}

static void test_message_too_long(void)
{
    struct kvs_tensor_desc t = {1, {123456789}, "c10::BFloat16"};
    char small[24];
    KVS_CHECK(kvs_op_message_format(small, sizeof small, "aten::copy_", 1, &t) == 0);
    KVS_CHECK_EQ_STR(small, "aten::copy_");
    char tiny[4];
    KVS_CHECK(kvs_op_message_format(tiny, sizeof tiny, "aten::copy_", 1, &t) == 0);
    KVS_CHECK_EQ_INT(strlen(tiny), 3);
}

// ----------------------------------------------------------------------------
// hooks

struct seen {
    atomic_int op_begin, op_end, range_begin, range_end;
    char last_name[64];
    int last_n;
    int64_t last_dim0;
};

static void h_op_begin(void *user, const char *name, int n, const struct kvs_tensor_desc *t)
{
    struct seen *s = user;
    atomic_fetch_add(&s->op_begin, 1);
    snprintf(s->last_name, sizeof s->last_name, "%s", name);
    s->last_n = n;
    s->last_dim0 = n > 0 ? t[0].dims[0] : -1;
}
static void h_op_end(void *user) { atomic_fetch_add(&((struct seen *)user)->op_end, 1); }
static void h_range_begin(void *user, const char *name)
{
    struct seen *s = user;
    atomic_fetch_add(&s->range_begin, 1);
    snprintf(s->last_name, sizeof s->last_name, "%s", name);
}
static void h_range_end(void *user) { atomic_fetch_add(&((struct seen *)user)->range_end, 1); }

static void test_hooks_receive_calls(void)
{
    static struct seen s;
    struct kvs_annot_hooks h = {h_op_begin, h_op_end, h_range_begin, h_range_end, &s};
    kvs_annot_set_hooks(&h);
    struct kvs_tensor_desc t = {2, {7, 3}, "float"};
    kvs_range_begin("step_0");
    KVS_CHECK_EQ_STR(s.last_name, "step_0");
    kvs_op_begin("kvs::cast", 1, &t);
    KVS_CHECK_EQ_STR(s.last_name, "kvs::cast");
    KVS_CHECK_EQ_INT(s.last_n, 1);
    KVS_CHECK_EQ_INT(s.last_dim0, 7);
    kvs_op_end();
    kvs_range_end();
    kvs_op_begin(NULL, -3, &t); /* tolerated: empty name, no tensors */
    KVS_CHECK_EQ_INT(s.last_n, 0);
    kvs_op_end();
    kvs_annot_set_hooks(NULL);
    kvs_range_begin("after");
    kvs_range_end();
    kvs_op_begin("after", 1, &t);
    kvs_op_end();
    KVS_CHECK_EQ_INT(atomic_load(&s.op_begin), 2);
    KVS_CHECK_EQ_INT(atomic_load(&s.op_end), 2);
    KVS_CHECK_EQ_INT(atomic_load(&s.range_begin), 1);
    KVS_CHECK_EQ_INT(atomic_load(&s.range_end), 1);
}

static atomic_int g_stop;

static void *annotating_thread(void *arg)
{
    (void)arg;
    struct kvs_tensor_desc t = {1, {1}, "float"};
    while (!atomic_load(&g_stop)) {
        kvs_op_begin("spin", 1, &t);
        kvs_op_end();
    }
    return NULL;
}

static void test_hooks_removal_drains(void)
{
    static struct seen s;
    struct kvs_annot_hooks h = {h_op_begin, h_op_end, h_range_begin, h_range_end, &s};
    pthread_t th;
    atomic_store(&g_stop, 0);
    KVS_REQUIRE(pthread_create(&th, NULL, annotating_thread, NULL) == 0);
    int rounds_with_calls = 0;
    for (int round = 0; round < 50; round++) {
        int before = atomic_load(&s.op_begin);
        kvs_annot_set_hooks(&h);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        kvs_annot_set_hooks(NULL);
        int at_removal = atomic_load(&s.op_begin);
        rounds_with_calls += at_removal > before;
        nanosleep(&ts, NULL);
        KVS_CHECK_EQ_INT(atomic_load(&s.op_begin), at_removal);
    }
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);
    KVS_CHECK_MSG(rounds_with_calls > 0, "the other thread never reached the hooks");
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"message_roundtrip", test_message_roundtrip},
        {"message_edge_cases", test_message_edge_cases},
        {"message_too_long", test_message_too_long},
        {"hooks_receive_calls", test_hooks_receive_calls},
        {"hooks_removal_drains", test_hooks_removal_drains},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
