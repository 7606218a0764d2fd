/* tests/gpu/test_engine_tp.c — tensor parallelism of world size 1 on one
 * GPU: the NCCL path (kvs_engine_tp_create: a communicator of one, the rank
 * thread, the all-reduce calls) computes what the plain engine computes, for
 * every KV path, eagerly and as a CUDA graph; its capture is one rank's file
 * with Kineto's distributedInfo and an annotated all-reduce per sublayer;
 * more ranks than visible GPUs are refused before NCCL starts.
 *   meson test -C build --suite gpu test_engine_tp
 * Runs with one GPU; tests/gpu/test_engine_tp_multi.c needs two or more.
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine_tp_check.h"

enum { B = 4, STEPS = 4, CAP = 4096 };
static const int64_t CTX[B] = {0, 300, 77, 1029};
/* An all-reduce over one rank is the identity and each rank's weights are
 * the plain engine's bit for bit (engine/shard.h): only the events and the
 * extra calls differ, so the logits should agree to rounding at most. */
#define TOL_SAME 1e-3

static struct kvs_model_config tiny;
static char g_nvls_before[64]; /* NCCL_NVLS_ENABLE as main set it (0 unless the user had) */

static void test_world1_equals_plain(void)
{
    const struct kvs_eng_case k = {&tiny, B, CTX, STEPS, CAP};
    const size_t n = (size_t)STEPS * B * tiny.vocab;
    struct kvs_tp_test_out plain = kvs_tp_test_out_new(&k), tp = kvs_tp_test_out_new(&k);
    for (int path = 0; path < KVS_KV_PATH_COUNT_; path++) {
        KVS_REQUIRE(kvs_tp_test_run(&k, 5, (enum kvs_kv_path)path, 0, 0, NULL, &plain));
        for (int graph = 0; graph < 2; graph++) {
            KVS_REQUIRE(kvs_tp_test_run(&k, 5, (enum kvs_kv_path)path, graph, 1, NULL, &tp));
            double err = kvs_nerr(tp.logits, plain.logits, n);
            fprintf(stderr, "%s%s: tp 1 vs plain %.3g\n", kvs_kv_path_name((enum kvs_kv_path)path),
                    graph ? " (graph)" : "", err);
            KVS_CHECK_MSG(err < TOL_SAME, "%s graph %d: %.3g",
                          kvs_kv_path_name((enum kvs_kv_path)path), graph, err);
            KVS_CHECK(memcmp(tp.tokens, plain.tokens, STEPS * B * 4) == 0);
            KVS_CHECK(tp.allreduce_ms >= 0.0);
        }
    }
    /* the engine library leaves the environment as the program set it */
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    KVS_CHECK(nvls && !strcmp(nvls, g_nvls_before));
    kvs_tp_test_out_free(&plain);
    kvs_tp_test_out_free(&tp);
}

static void test_world1_trace(void)
{
    const struct kvs_eng_case k = {&tiny, B, CTX, STEPS, CAP};
    kvs_tp_test_trace_ranks(&k, 1);
}

static struct {
    char text[4096];
} g_log;

static void capture(void *user, enum kvs_log_level level, const char *message)
{
    (void)user;
    (void)level;
    size_t at = strlen(g_log.text);
    snprintf(g_log.text + at, sizeof g_log.text - at, "%s\n", message);
}

static void test_refuses_more_ranks_than_gpus(void)
{
    int gpus = 0;
    KVS_REQUIRE(kvs_engine_gpu_count(&gpus, NULL, NULL) == KVS_STATUS_OK && gpus >= 1);
    int world = 1;
    while (world <= gpus)
        world *= 2; /* a power of two: it divides GLM-5's 64 heads */
    struct kvs_engine_params p;
    kvs_engine_params_init(&p);
    p.kernels = *kvs_test_opts(); /* KVS_PDL=0 etc. from the environment */
    KVS_REQUIRE(kvs_model_config_load("glm5", &p.model, NULL) == KVS_STATUS_OK);
    p.log.fn = capture;
    struct kvs_engine_tp *t = NULL;
    KVS_CHECK_EQ_INT(kvs_engine_tp_create(&p, world, &t), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(t == NULL);
    KVS_CHECK_MSG(strstr(g_log.text, "visible GPUs") != NULL, "log: %s", g_log.text);
    /* a world that does not divide the heads is refused by the plan */
    g_log.text[0] = '\0';
    KVS_CHECK_EQ_INT(kvs_engine_tp_create(&p, 3, &t), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_MSG(strstr(g_log.text, "heads") != NULL, "log: %s", g_log.text);
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    kvs_tp_test_nvls_off();
    snprintf(g_nvls_before, sizeof g_nvls_before, "%s", getenv("NCCL_NVLS_ENABLE"));
    if (kvs_model_config_load("tiny", &tiny, NULL) != KVS_STATUS_OK)
        KVS_TEST_SETUP_FAILED("the tiny config does not load");
    static const struct kvs_test tests[] = {
        {"world1_equals_plain", test_world1_equals_plain},
        {"world1_trace", test_world1_trace},
        {"refuses_more_ranks_than_gpus", test_refuses_more_ranks_than_gpus},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
