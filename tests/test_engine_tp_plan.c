/* tests/test_engine_tp_plan.c — the tensor-parallel sharding plan, no GPU:
 * which heads, intermediate rows and tensor elements each rank owns for
 * 1, 2, 4 and 8 ranks; rank counts that do not divide the model refused;
 * the ranks' slices of every weight tensor of the tiny model partition the
 * full tensor (split ones) or copy it (replicated ones), value for value;
 * the per-rank memory plan is what the per-rank tensors take.
 *   meson test -C build test_engine_tp_plan
 */
#include <stdlib.h>
#include <string.h>

#include "kvs_test.h"
#include "kvscope/engine.h"
#include "kvscope/engine_tp.h"
#include "model.h"
#include "ops.h"
#include "shard.h"
#include "synth.h"

static struct kvs_model_config glm5, tiny;

static const struct kvs_logger quiet = {NULL, NULL, KVS_LOG_ERROR + 1};

static void test_slices_glm5(void)
{
    static const int worlds[] = {1, 2, 4, 8};
    for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
        int N = worlds[w];
        struct kvs_tp_plan p;
        KVS_REQUIRE(kvs_tp_plan_init(&glm5, N, &p, NULL) == KVS_STATUS_OK);
        KVS_CHECK_EQ_INT(p.world, N);
        KVS_CHECK_EQ_INT(p.rank.heads, 64 / N);
        KVS_CHECK_EQ_INT(p.rank.moe_inter, 2048 / N);
        KVS_CHECK_EQ_INT(p.rank.inter, 12288 / N);
        /* what stays whole */
        KVS_CHECK_EQ_INT(p.rank.hidden, 6144);
        KVS_CHECK_EQ_INT(p.rank.kv_lora_rank, 512);
        KVS_CHECK_EQ_INT(p.rank.n_routed_experts, 256);
        KVS_CHECK_EQ_INT(p.rank.vocab, glm5.vocab);
        KVS_CHECK_EQ_INT(p.rank.layers, 78);
        /* heads: contiguous, disjoint, covering 0..63 in rank order */
        int next = 0, inext = 0, mnext = 0;
        for (int r = 0; r < N; r++) {
            int first, count;
            kvs_tp_rank_slice(&p, KVS_TP_HEADS, r, &first, &count);
            KVS_CHECK_EQ_INT(first, next);
            KVS_CHECK_EQ_INT(count, 64 / N);
            next = first + count;
            kvs_tp_rank_slice(&p, KVS_TP_INTER, r, &first, &count);
            KVS_CHECK_EQ_INT(first, inext);
            inext = first + count;
            kvs_tp_rank_slice(&p, KVS_TP_MOE_INTER, r, &first, &count);
            KVS_CHECK_EQ_INT(first, mnext);
            mnext = first + count;
        }
        KVS_CHECK_EQ_INT(next, 64);
        KVS_CHECK_EQ_INT(inext, 12288);
        KVS_CHECK_EQ_INT(mnext, 2048);
        char text[1024];
        size_t len = kvs_tp_plan_describe(&p, text, sizeof text);
        KVS_CHECK(len > 0 && len < sizeof text);
        KVS_CHECK(strstr(text, "KV pool") != NULL);
    }
}

/* Rank 3 of 8 on GLM-5, tensor by tensor: the offsets of its slices. */
static void test_rank3_of_8(void)
{
    struct kvs_tp_plan p;
    KVS_REQUIRE(kvs_tp_plan_init(&glm5, 8, &p, NULL) == KVS_STATUS_OK);
    int64_t n = kvs_model_weights(&glm5, 8, NULL, 0);
    struct kvs_wdesc *d = malloc((size_t)n * sizeof *d);
    KVS_REQUIRE(d);
    kvs_model_weights(&glm5, 8, d, n);
    int seen = 0;
    for (int64_t i = 0; i < n; i++) {
        if (d[i].layer != 5) /* a MoE layer */
            continue;
        struct kvs_wdesc m;
        struct kvs_shard s;
        kvs_tp_shard(&p, 3, &d[i], &m, &s);
        KVS_CHECK(m.id == d[i].id && m.amp == d[i].amp && m.kind == d[i].kind);
        switch (d[i].kind) {
        case KVS_W_Q_B_NOPE: /* heads 24..31: rows 24*192 .. 32*192 */
            KVS_CHECK_EQ_INT(m.rows, 8 * 192);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 0, 0, 0), 24 * 192 * 2048LL);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 0, m.rows - 1, 2047), 32 * 192 * 2048LL - 1);
            seen++;
            break;
        case KVS_W_Q_B_ROPE:
            KVS_CHECK_EQ_INT(m.rows, 8 * 64);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 0, 0, 0), 24 * 64 * 2048LL);
            seen++;
            break;
        case KVS_W_UK: /* heads 24..31 of [64, 512, 192] */
            KVS_CHECK_EQ_INT(m.count, 8);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 0, 0, 0), 24LL * 512 * 192);
            seen++;
            break;
        case KVS_W_UV:
            KVS_CHECK_EQ_INT(m.count, 8);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 7, 255, 511), 32LL * 256 * 512 - 1);
            seen++;
            break;
        case KVS_W_O: /* [6144, 64*256]: columns 24*256 .. 32*256 of every row */
            KVS_CHECK_EQ_INT(m.rows, 6144);
            KVS_CHECK_EQ_INT(m.cols, 8 * 256);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 0, 1, 0), 16384LL + 24 * 256);
            seen++;
            break;
        case KVS_W_EXP_GATE_UP: /* 9 experts x [2*2048, 6144]: gate rows 768..1023, up 2816..3071 */
            KVS_CHECK_EQ_INT(m.count, 9);
            KVS_CHECK_EQ_INT(m.rows, 2 * 256);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 0, 0, 0), 768LL * 6144);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 0, 255, 0), 1023LL * 6144);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 0, 256, 0), (2048LL + 768) * 6144);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 2, 511, 6143), (2 * 4096LL + 2048 + 1023) * 6144 + 6143);
            seen++;
            break;
        case KVS_W_EXP_DOWN: /* 9 x [6144, 2048]: columns 768..1023 */
            KVS_CHECK_EQ_INT(m.cols, 256);
            KVS_CHECK_EQ_INT(kvs_shard_index(&s, 1, 2, 0), (6144LL + 2) * 2048 + 768);
            seen++;
            break;
        case KVS_W_Q_A:
        case KVS_W_KV_A_LAT:
        case KVS_W_KV_A_ROPE:
        case KVS_W_ROUTER:
        case KVS_W_ROUTER_BIAS:
        case KVS_W_ATTN_NORM:
            KVS_CHECK(kvs_shard_is_whole(&m, &s));
            KVS_CHECK_EQ_INT(kvs_wdesc_bytes(&m), kvs_wdesc_bytes(&d[i]));
            seen++;
            break;
        default:
            break;
        }
    }
    KVS_CHECK_EQ_INT(seen, 13);
    free(d);
}

static void test_refusals(void)
{
    struct kvs_tp_plan p;
    /* 64 heads: 3, 5, 6, 7 do not divide them; 0 and too many are out of range */
    static const int bad[] = {0, -1, 3, 5, 6, 7, 128, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        KVS_CHECK_MSG(kvs_tp_plan_init(&glm5, bad[i], &p, &quiet) == KVS_STATUS_INVALID_ARGUMENT,
                      "world %d accepted for glm5", bad[i]);
    /* the tiny model has 4 heads: 8 ranks are refused, 1, 2, 4 taken */
    KVS_CHECK(kvs_tp_plan_init(&tiny, 8, &p, &quiet) == KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(kvs_tp_plan_init(&tiny, 4, &p, NULL) == KVS_STATUS_OK);
    /* divides the heads but not an intermediate size */
    struct kvs_model_config odd = glm5;
    odd.moe_inter = 2050;
    KVS_CHECK(kvs_tp_plan_init(&odd, 4, &p, &quiet) == KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK(kvs_tp_plan_init(&odd, 2, &p, NULL) == KVS_STATUS_OK);
    odd = glm5;
    odd.inter = 12290;
    KVS_CHECK(kvs_tp_plan_init(&odd, 4, &p, &quiet) == KVS_STATUS_INVALID_ARGUMENT);
}

/* Every element of every tiny tensor: split tensors are covered once over
 * the ranks, replicated ones once per rank; the CPU shard fill gives the
 * full tensor's value at the mapped index. */
static void test_slices_partition_tiny(void)
{
    static const int worlds[] = {1, 2, 4};
    int64_t n = kvs_model_weights(&tiny, 0 + 2, NULL, 0);
    struct kvs_wdesc *d = malloc((size_t)n * sizeof *d);
    KVS_REQUIRE(d);
    kvs_model_weights(&tiny, 2, d, n);
    for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
        const int N = worlds[w];
        struct kvs_tp_plan p;
        KVS_REQUIRE(kvs_tp_plan_init(&tiny, N, &p, NULL) == KVS_STATUS_OK);
        int split = 0;
        for (int64_t t = 0; t < n; t++) {
            if (d[t].elem_bytes != 2)
                continue; /* the float router bias: replicated, checked below by bytes */
            int64_t full_n = kvs_wdesc_elems(&d[t]);
            uint16_t *full = malloc((size_t)full_n * 2), *part = malloc((size_t)full_n * 2);
            unsigned char *hits = calloc((size_t)full_n, 1);
            KVS_REQUIRE(full && part && hits);
            uint64_t key = kvs_synth_key(7, d[t].id);
            kvs_eng_cpu_fill_bf16(full, (uint64_t)full_n, key, d[t].amp, d[t].offset);
            int whole = 1, bad_value = 0, out_of_range = 0;
            for (int r = 0; r < N; r++) {
                struct kvs_wdesc m;
                struct kvs_shard s;
                kvs_tp_shard(&p, r, &d[t], &m, &s);
                whole &= kvs_shard_is_whole(&m, &s);
                kvs_eng_cpu_fill_bf16_shard(part, &m, &s, key);
                int64_t at = 0;
                for (int64_t k = 0; k < m.count; k++)
                    for (int64_t i = 0; i < m.rows; i++)
                        for (int64_t j = 0; j < m.cols; j++, at++) {
                            int64_t g = kvs_shard_index(&s, k, i, j);
                            if (g < 0 || g >= full_n) {
                                out_of_range++;
                                continue;
                            }
                            hits[g]++;
                            bad_value += part[at] != full[g];
                        }
            }
            int want = whole ? N : 1;
            int64_t wrong_cover = 0;
            for (int64_t g = 0; g < full_n; g++)
                wrong_cover += hits[g] != want;
            split += !whole;
            KVS_CHECK_MSG(!out_of_range && !bad_value && !wrong_cover,
                          "tp %d, %s of layer %d: %d out of range, %d values differ, %lld "
                          "elements not covered %d time(s)",
                          N, kvs_wkind_name(d[t].kind), d[t].layer, out_of_range, bad_value,
                          (long long)wrong_cover, want);
            free(full);
            free(part);
            free(hits);
        }
        /* per layer: q_b (2), W_UK, W_UV, o_proj, and two MLP tensors */
        KVS_CHECK_EQ_INT(split, N == 1 ? 0 : 7 * tiny.layers);
    }
    free(d);
}

/* The rank's memory plan is what its tensors take (the GPU engine checks
 * the same sum when it places them), and the shares add up. */
static void test_rank_plan(void)
{
    static const int worlds[] = {1, 2, 4, 8};
    for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
        const int N = worlds[w];
        struct kvs_tp_plan p;
        KVS_REQUIRE(kvs_tp_plan_init(&glm5, N, &p, NULL) == KVS_STATUS_OK);
        struct kvs_run_shape s = {0};
        s.path = KVS_KV_PATH_FULL_CAST;
        s.batch = 1;
        s.context_tokens = s.max_context = 4096;
        s.steps = 8;
        s.kv_capacity = 495552;
        struct kvs_mem_plan full, rank;
        KVS_REQUIRE(kvs_mem_plan_compute(&glm5, &s, &full, NULL) == KVS_STATUS_OK);
        KVS_REQUIRE(kvs_mem_plan_compute(&p.rank, &s, &rank, NULL) == KVS_STATUS_OK);
        int64_t n = kvs_model_weights(&glm5, rank.resident_experts, NULL, 0);
        struct kvs_wdesc *d = malloc((size_t)n * sizeof *d);
        KVS_REQUIRE(d);
        kvs_model_weights(&glm5, rank.resident_experts, d, n);
        uint64_t placed = 0;
        for (int64_t i = 0; i < n; i++) {
            struct kvs_wdesc m;
            struct kvs_shard sh;
            kvs_tp_shard(&p, N - 1, &d[i], &m, &sh);
            placed += (kvs_wdesc_bytes(&m) + 255u) & ~(uint64_t)255u;
        }
        free(d);
        KVS_CHECK_EQ_INT(placed, rank.weights);
        /* the KV pool and its full-cast scratch are whole on every rank */
        KVS_CHECK_EQ_INT(rank.kv_pool, full.kv_pool);
        KVS_CHECK_EQ_INT(rank.kv_scratch, full.kv_scratch);
        KVS_CHECK_EQ_INT(rank.embedding, full.embedding);
        KVS_CHECK_EQ_INT(rank.lm_head, full.lm_head);
        /* experts split N ways (sizes divide evenly, 256-aligned) */
        KVS_CHECK_EQ_INT(rank.moe_experts * (uint64_t)N, full.moe_experts);
        KVS_CHECK(rank.attention < full.attention || N == 1);
        fprintf(stderr, "tp %d: %.2f GB weights and %.2f GB KV per rank (tp 1: %.2f GB weights)\n",
                N, rank.weights / 1e9, rank.kv_pool / 1e9, full.weights / 1e9);
    }
}

int main(int argc, char **argv)
{
    if (kvs_model_config_load("glm5", &glm5, NULL) != KVS_STATUS_OK ||
        kvs_model_config_load("tiny", &tiny, NULL) != KVS_STATUS_OK)
        KVS_TEST_SETUP_FAILED("bundled configs do not load");
    static const struct kvs_test tests[] = {
        {"slices_glm5", test_slices_glm5},
        {"rank3_of_8", test_rank3_of_8},
        {"refusals", test_refusals},
        {"slices_partition_tiny", test_slices_partition_tiny},
        {"rank_plan", test_rank_plan},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
