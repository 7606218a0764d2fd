/* tests/gpu/test_engine_tp_multi.c — tensor parallelism over 2 and 4 GPUs
 * (as many as are visible; exits 77 with fewer than 2): for every KV path
 * the logits match the CPU reference of the whole model and the one-GPU
 * engine, the greedy tokens are identical, every rank ends with the same
 * logits bit for bit; a CUDA-graph run agrees with an eager one; a capture
 * gives one file per rank, each with its own device's kernels, NCCL's
 * all-reduce kernels inside kvs::all_reduce ops, and distributedInfo.
 *   meson test -C build --suite gpu test_engine_tp_multi
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine_tp_check.h"

enum { B = 4, STEPS = 4, CAP = 4096 };
static const int64_t CTX[B] = {0, 300, 77, 1029};
/* The ranks' partial sums meet in a BF16 all-reduce: o_proj and the MLPs'
 * outputs are rounded once per rank and summed in NCCL's order, where one
 * GPU rounds the whole sum once; the greedy tokens must be identical (the
 * seed is chosen clear of ties). Measured on two H200s (2026-11-29, seed 29, 4 steps): tp 2 vs the
 * reference 0.015-0.021 (fp8-direct's last step 0.0206), tp 2 vs one GPU
 * 0.017 for every path; one GPU alone is 0.010-0.016 off the reference. The
 * bound against the reference is the sum of the two measured parts
 * (|tp - ref| <= |tp - one| + |one - ref|), rounded: 3e-2. A second call
 * measured fp8-direct's step 0 at 0.0331 (0.0212 off one GPU) on the same
 * inputs: that moving error is a race to find (docs/engine.md), not a
 * tolerance to widen. */
#define TOL_REF 3e-2
#define TOL_ONE_GPU 2e-2
#define TOL_GRAPH 1e-3

static struct kvs_model_config tiny;
static int g_gpus;

static void test_matches_reference(void)
{
    const struct kvs_eng_case k = {&tiny, B, CTX, STEPS, CAP};
    const size_t n = (size_t)STEPS * B * tiny.vocab, V = (size_t)B * tiny.vocab;
    float *ref = malloc(n * 4);
    int32_t *rt = malloc(STEPS * B * 4);
    uint64_t seed = kvs_eng_clear_seed(&k, ref, rt);
    struct kvs_tp_test_out one = kvs_tp_test_out_new(&k), tp = kvs_tp_test_out_new(&k);
    for (int world = 2; world <= 4 && world <= g_gpus; world *= 2) {
        for (int path = 0; path < KVS_KV_PATH_COUNT_; path++) {
            const char *pn = kvs_kv_path_name((enum kvs_kv_path)path);
            KVS_REQUIRE(kvs_tp_test_run(&k, seed, (enum kvs_kv_path)path, 0, 0, NULL, &one));
            KVS_REQUIRE(kvs_tp_test_run(&k, seed, (enum kvs_kv_path)path, 0, world, NULL, &tp));
            for (int s = 0; s < STEPS; s++) {
                double err = kvs_nerr(tp.logits + s * V, ref + s * V, V);
                fprintf(stderr, "tp %d %s step %d: vs reference %.3g\n", world, pn, s, err);
                KVS_CHECK_MSG(err < TOL_REF, "tp %d %s step %d: %.3g", world, pn, s, err);
            }
            double err = kvs_nerr(tp.logits, one.logits, n);
            fprintf(stderr, "tp %d %s: vs one GPU %.3g, all-reduce %.3f ms in all\n", world, pn,
                    err, tp.allreduce_ms);
            KVS_CHECK_MSG(err < TOL_ONE_GPU, "tp %d %s vs one GPU: %.3g", world, pn, err);
            KVS_CHECK_MSG(memcmp(tp.tokens, rt, STEPS * B * 4) == 0, "tp %d %s: tokens", world, pn);
            KVS_CHECK_EQ_INT(tp.ranks_differ, 0);
            KVS_CHECK(tp.allreduce_ms > 0.0);
        }
    }
    free(ref);
    free(rt);
    kvs_tp_test_out_free(&one);
    kvs_tp_test_out_free(&tp);
}

static void test_graph_matches_eager(void)
{
    const struct kvs_eng_case k = {&tiny, B, CTX, STEPS, CAP};
    const size_t n = (size_t)STEPS * B * tiny.vocab;
    struct kvs_tp_test_out eager = kvs_tp_test_out_new(&k), graph = kvs_tp_test_out_new(&k);
    KVS_REQUIRE(kvs_tp_test_run(&k, 3, KVS_KV_PATH_ACTIVE_CAST, 0, 2, NULL, &eager));
    KVS_REQUIRE(kvs_tp_test_run(&k, 3, KVS_KV_PATH_ACTIVE_CAST, 1, 2, NULL, &graph));
    double err = kvs_nerr(graph.logits, eager.logits, n);
    KVS_CHECK_MSG(err < TOL_GRAPH, "tp 2 graph vs eager %.3g", err);
    KVS_CHECK(memcmp(graph.tokens, eager.tokens, STEPS * B * 4) == 0);
    KVS_CHECK_EQ_INT(graph.ranks_differ, 0);
    kvs_tp_test_out_free(&eager);
    kvs_tp_test_out_free(&graph);
}

static void test_trace_per_rank(void)
{
    const struct kvs_eng_case k = {&tiny, B, CTX, STEPS, CAP};
    kvs_tp_test_trace_ranks(&k, 2);
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    kvs_tp_test_nvls_off();
    if (kvs_engine_gpu_count(&g_gpus, NULL, NULL) != KVS_STATUS_OK || g_gpus < 2) {
        fprintf(stderr, "skip: tensor parallel needs 2 or more GPUs; %d visible\n", g_gpus);
        return KVS_TEST_EXIT_SKIP;
    }
    if (kvs_model_config_load("tiny", &tiny, NULL) != KVS_STATUS_OK)
        KVS_TEST_SETUP_FAILED("the tiny config does not load");
    static const struct kvs_test tests[] = {
        {"matches_reference", test_matches_reference},
        {"graph_matches_eager", test_graph_matches_eager},
        {"trace_per_rank", test_trace_per_rank},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
