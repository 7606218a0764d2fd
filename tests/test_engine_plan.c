/* tests/test_engine_plan.c — the engine's memory plan, bytes per step, KV slot
 * allocator, sequences and expert mapping.
 *   meson test -C build test_engine_plan */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <math.h>

#include "kvs_test.h"
#include "kvscope/engine.h"

static struct kvs_model_config load(const char *name)
{
    struct kvs_model_config c;
    if (kvs_model_config_load(name, &c, NULL) != KVS_STATUS_OK)
        KVS_TEST_SETUP_FAILED("bundled config %s does not load", name);
    return c;
}

static struct kvs_run_shape shape(enum kvs_kv_path path, int batch, int64_t ctx, int steps,
                                  int64_t cap)
{
    struct kvs_run_shape s = {0};
    s.path = path;
    s.batch = batch;
    s.context_tokens = ctx * batch;
    s.max_context = ctx;
    s.steps = steps;
    s.kv_capacity = cap;
    return s;
}

// ----------------------------------------------------------------------------
// memory plan

static void test_mem_plan_glm5(void)
{
    struct kvs_model_config c = load("glm5");
    struct kvs_run_shape s = shape(KVS_KV_PATH_FULL_CAST, 1, 4096, 16, 495552);
    struct kvs_mem_plan p;
    KVS_REQUIRE(kvs_mem_plan_compute(&c, &s, &p, NULL) == KVS_STATUS_OK);

    /* parameter counts written out from the architecture, independently of
     * the engine's tensor table */
    const double h = 6144, H = 64, L = 78, q = 2048, lat = 512, rope = 64, nope = 192, v = 256;
    double attn = q * h + H * (nope + rope) * q + (lat + rope) * h + H * lat * nope +
                  H * v * lat + h * H * v;
    double dense = 3 * 3 * h * 12288;
    double experts = 75 * 9 * 3 * h * 2048; /* 8 resident routed + 1 shared */
    double routers = 75 * 256 * h;          /* + the float bias below */
    double norms = L * (2 * h + q + lat) + h;
    double weights = 2 * (2 * 154880 * h + L * attn + dense + experts + routers + norms) +
                     75 * 256 * 4;
    double slack = 256.0 * (double)p.tensors; /* each tensor 256-aligned */
    KVS_CHECK_NEAR((double)p.weights, weights, slack);
    KVS_CHECK_NEAR((double)p.attention, 2 * L * attn, slack);
    KVS_CHECK_NEAR((double)p.moe_experts, 2 * experts, slack);
    KVS_CHECK_EQ_INT(p.embedding, 154880ull * 6144 * 2);
    KVS_CHECK_EQ_INT(p.resident_experts, 8);
    /* the sizing guide's ~80 GB of weights and ~22 GB of pool */
    KVS_CHECK(p.weights > 78e9 && p.weights < 84e9);
    KVS_CHECK_EQ_INT(p.kv_pool, 78ull * 495552 * 576);
    KVS_CHECK_EQ_INT(p.kv_scratch, 495552ull * 576 * 2); /* 570.9 MB: one layer's full cast */
    KVS_CHECK_EQ_INT(p.bytes_per_capacity_token, 78 * 576 + 1152);
    KVS_CHECK_EQ_INT(p.active_bound, 4096 + 16);
    KVS_CHECK(p.total == p.weights + p.kv_pool + p.kv_scratch + p.kv_index + p.activations +
                             p.workspace);
    KVS_CHECK(p.total < 139ull << 30); /* fits the H200 */

    /* the other paths: no full-pool scratch */
    s.path = KVS_KV_PATH_ACTIVE_CAST;
    struct kvs_mem_plan a;
    KVS_REQUIRE(kvs_mem_plan_compute(&c, &s, &a, NULL) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(a.kv_scratch, (uint64_t)((4096 + 16) * 1152 + 255) / 256 * 256);
    KVS_CHECK_EQ_INT(a.weights, p.weights);
    s.path = KVS_KV_PATH_FP8_DIRECT;
    KVS_REQUIRE(kvs_mem_plan_compute(&c, &s, &a, NULL) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(a.kv_scratch, 0);
    KVS_CHECK_EQ_INT(a.bytes_per_capacity_token, 78 * 576);

    char text[4096];
    size_t n = kvs_mem_plan_format(&p, &c, &s, text, sizeof text);
    KVS_CHECK(n > 0 && n < sizeof text);
    KVS_CHECK(strstr(text, "KV pool") && strstr(text, "22.26 GB"));
    KVS_CHECK(strstr(text, "total"));
    /* truncation is safe and says how much it wanted */
    char small[16];
    KVS_CHECK_EQ_INT(kvs_mem_plan_format(&p, &c, &s, small, sizeof small), n);
    KVS_CHECK_EQ_INT(strlen(small), sizeof small - 1);
}

static void test_mem_plan_max_capacity(void)
{
    struct kvs_model_config c = load("glm5");
    for (int path = 0; path < KVS_KV_PATH_COUNT_; path++) {
        struct kvs_run_shape s = shape((enum kvs_kv_path)path, 8, 4096, 32, 495552);
        struct kvs_mem_plan p;
        KVS_REQUIRE(kvs_mem_plan_compute(&c, &s, &p, NULL) == KVS_STATUS_OK);
        /* budgets below, at and above the plan */
        uint64_t budgets[] = {p.total - (5ull << 30), p.total, p.total + (3ull << 30)};
        for (int i = 0; i < 3; i++) {
            int64_t m = kvs_mem_plan_max_capacity(&p, s.kv_capacity, budgets[i]);
            KVS_REQUIRE(m > 0);
            KVS_CHECK_EQ_INT(m % 64, 0);
            struct kvs_run_shape t = s;
            struct kvs_mem_plan q;
            t.kv_capacity = m;
            KVS_REQUIRE(kvs_mem_plan_compute(&c, &t, &q, NULL) == KVS_STATUS_OK);
            KVS_CHECK_MSG(q.total <= budgets[i], "path %d: capacity %lld needs %llu > %llu", path,
                          (long long)m, (unsigned long long)q.total,
                          (unsigned long long)budgets[i]);
            t.kv_capacity = m + 128;
            KVS_REQUIRE(kvs_mem_plan_compute(&c, &t, &q, NULL) == KVS_STATUS_OK);
            KVS_CHECK_MSG(q.total > budgets[i], "path %d: %lld more would still fit", path,
                          (long long)t.kv_capacity);
        }
        /* a budget below the fixed part fits no pool at all */
        KVS_CHECK_EQ_INT(kvs_mem_plan_max_capacity(&p, s.kv_capacity, p.weights / 2), 0);
    }
}

static void test_mem_plan_errors(void)
{
    struct kvs_model_config c = load("glm5");
    struct kvs_mem_plan p;
    /* 64 x 32K tokens do not fit the default capacity */
    struct kvs_run_shape s = shape(KVS_KV_PATH_FP8_DIRECT, 64, 32768, 8, 495552);
    KVS_CHECK_EQ_INT(kvs_mem_plan_compute(&c, &s, &p, NULL), KVS_STATUS_INVALID_ARGUMENT);
    s = shape(KVS_KV_PATH_FP8_DIRECT, 0, 1, 1, 1024);
    KVS_CHECK_EQ_INT(kvs_mem_plan_compute(&c, &s, &p, NULL), KVS_STATUS_INVALID_ARGUMENT);
    s = shape(KVS_KV_PATH_FP8_DIRECT, 1, 1, 1, 1024);
    s.resident_experts = 7; /* fewer than top-k */
    KVS_CHECK_EQ_INT(kvs_mem_plan_compute(&c, &s, &p, NULL), KVS_STATUS_INVALID_ARGUMENT);
    s.resident_experts = 257;
    KVS_CHECK_EQ_INT(kvs_mem_plan_compute(&c, &s, &p, NULL), KVS_STATUS_INVALID_ARGUMENT);
    s.resident_experts = 256; /* every expert resident: 8 x the expert bytes of 32 resident */
    struct kvs_mem_plan all, some;
    KVS_REQUIRE(kvs_mem_plan_compute(&c, &s, &all, NULL) == KVS_STATUS_OK);
    s.resident_experts = 32;
    KVS_REQUIRE(kvs_mem_plan_compute(&c, &s, &some, NULL) == KVS_STATUS_OK);
    KVS_CHECK_NEAR((double)all.moe_experts / (double)some.moe_experts, 257.0 / 33.0, 1e-6);
}

// ----------------------------------------------------------------------------
// bytes per step

static void test_step_bytes(void)
{
    struct kvs_model_config c = load("glm5");
    struct kvs_step_bytes f, a, d;
    const int64_t cap = 495552, active = 4097;
    kvs_step_bytes_compute(&c, KVS_KV_PATH_FULL_CAST, 1, active, cap, 8, &f);
    kvs_step_bytes_compute(&c, KVS_KV_PATH_ACTIVE_CAST, 1, active, cap, 8, &a);
    kvs_step_bytes_compute(&c, KVS_KV_PATH_FP8_DIRECT, 1, active, cap, 8, &d);
    /* the seed's figure: 78 x (285.4 MB read + 570.9 MB written) = 66.8 GB a step */
    KVS_CHECK_NEAR(f.kv_cast, 78.0 * 495552 * 576 * 3, 1.0);
    KVS_CHECK_NEAR(f.kv_cast / 1e9, 66.8, 0.05);
    KVS_CHECK_EQ_INT(d.kv_cast, 0);
    KVS_CHECK_NEAR(d.kv_attention, 78.0 * active * 576, 1.0);
    KVS_CHECK_NEAR(a.kv_attention, 2 * d.kv_attention, 1.0);
    KVS_CHECK_NEAR(f.weights, d.weights, 0.5);
    KVS_CHECK(f.total > a.total && a.total > d.total);
    /* weights read at batch 1 are the plan's weights less the unused
     * embedding rows (experts: 8 of 8 resident read) */
    struct kvs_run_shape s = shape(KVS_KV_PATH_FP8_DIRECT, 1, 4096, 1, cap);
    struct kvs_mem_plan p;
    KVS_REQUIRE(kvs_mem_plan_compute(&c, &s, &p, NULL) == KVS_STATUS_OK);
    double unread = (double)p.embedding - 6144.0 * 2;
    KVS_CHECK_NEAR(d.weights, (double)p.weights - unread, 256.0 * (double)p.tensors);
    /* more routed experts read -> more bytes, exactly one expert each */
    struct kvs_step_bytes more;
    kvs_step_bytes_compute(&c, KVS_KV_PATH_FP8_DIRECT, 1, active, cap, 9, &more);
    KVS_CHECK_NEAR(more.weights - d.weights, 75.0 * 3 * 6144 * 2048 * 2, 1.0);
}

// ----------------------------------------------------------------------------
// slots and sequences

static void test_slots(void)
{
    struct kvs_slots *s = NULL;
    KVS_CHECK_EQ_INT(kvs_slots_init(&s, 0), KVS_STATUS_INVALID_ARGUMENT);
    KVS_REQUIRE(kvs_slots_init(&s, 100) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(kvs_slots_capacity(s), 100);
    int32_t a[100], b[100];
    KVS_REQUIRE(kvs_slots_alloc(s, 10, a) == KVS_STATUS_OK);
    for (int i = 0; i < 10; i++)
        KVS_CHECK_EQ_INT(a[i], i); /* a fresh pool hands out 0, 1, 2, ... */
    KVS_CHECK_EQ_INT(kvs_slots_available(s), 90);
    KVS_CHECK_EQ_INT(kvs_slots_alloc(s, 91, b), KVS_STATUS_LIMIT);
    KVS_CHECK_EQ_INT(kvs_slots_available(s), 90); /* nothing taken */

    /* release 3, 5, 7: reused first, most recent first */
    int32_t back[] = {3, 5, 7};
    KVS_REQUIRE(kvs_slots_release(s, 3, back) == KVS_STATUS_OK);
    KVS_REQUIRE(kvs_slots_alloc(s, 4, b) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(b[0], 7);
    KVS_CHECK_EQ_INT(b[1], 5);
    KVS_CHECK_EQ_INT(b[2], 3);
    KVS_CHECK_EQ_INT(b[3], 10);

    /* double free, out of range, and a list naming one slot twice change nothing */
    int32_t twice[] = {10, 10};
    int32_t bad[] = {0, 100};
    int32_t freed[] = {0};
    KVS_CHECK_EQ_INT(kvs_slots_release(s, 2, twice), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_slots_release(s, 2, bad), KVS_STATUS_INVALID_ARGUMENT);
    int64_t avail = kvs_slots_available(s);
    KVS_REQUIRE(kvs_slots_release(s, 1, freed) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(kvs_slots_release(s, 1, freed), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_slots_available(s), avail + 1);
    int32_t ten[] = {10};
    KVS_CHECK_EQ_INT(kvs_slots_release(s, 1, ten), KVS_STATUS_OK); /* still allocated before */

    /* everything out, everything back: every slot exactly once */
    int64_t rest = kvs_slots_available(s);
    int32_t *all = malloc((size_t)rest * sizeof *all);
    KVS_REQUIRE(kvs_slots_alloc(s, rest, all) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(kvs_slots_available(s), 0);
    KVS_CHECK_EQ_INT(kvs_slots_alloc(s, 1, b), KVS_STATUS_LIMIT);
    free(all);
    kvs_slots_free_all(s);
}

static void test_seqs(void)
{
    struct kvs_slots *s = NULL;
    KVS_REQUIRE(kvs_slots_init(&s, 64) == KVS_STATUS_OK);
    /* scatter the free list: take 10, give back the even ones */
    int32_t first[10];
    KVS_REQUIRE(kvs_slots_alloc(s, 10, first) == KVS_STATUS_OK);
    for (int i = 0; i < 10; i += 2)
        KVS_REQUIRE(kvs_slots_release(s, 1, &first[i]) == KVS_STATUS_OK);

    struct kvs_seqs q;
    int64_t ctx[3] = {4, 0, 7};
    KVS_REQUIRE(kvs_seqs_init(&q, s, 3, ctx, 2) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(q.max_len, 9);
    KVS_CHECK_EQ_INT(kvs_seqs_tokens(&q), 11);
    int32_t ns[3], pos[3];
    KVS_REQUIRE(kvs_seqs_append(&q, s, ns, pos) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(pos[0], 4);
    KVS_CHECK_EQ_INT(pos[1], 0);
    KVS_CHECK_EQ_INT(pos[2], 7);
    KVS_REQUIRE(kvs_seqs_append(&q, s, ns, pos) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(kvs_seqs_append(&q, s, ns, pos), KVS_STATUS_LIMIT); /* seq 2 is full */
    KVS_CHECK_EQ_INT(kvs_seqs_tokens(&q), 17);

    int32_t start[4], tok[17];
    kvs_seqs_csr(&q, start, tok);
    KVS_CHECK_EQ_INT(start[0], 0);
    KVS_CHECK_EQ_INT(start[1], 6);
    KVS_CHECK_EQ_INT(start[2], 8);
    KVS_CHECK_EQ_INT(start[3], 17);
    /* the slots are distinct and allocated; the scattered ones came first */
    int seen[64] = {0};
    for (int i = 0; i < 17; i++) {
        KVS_REQUIRE(tok[i] >= 0 && tok[i] < 64);
        KVS_CHECK_MSG(!seen[tok[i]], "slot %d twice", tok[i]);
        seen[tok[i]] = 1;
    }
    KVS_CHECK_EQ_INT(tok[0], 8); /* LIFO: the last even slot given back */
    KVS_CHECK_EQ_INT(kvs_slots_available(s), 64 - 5 - 17);
    kvs_seqs_free(&q, s);
    KVS_CHECK_EQ_INT(kvs_slots_available(s), 64 - 5);

    int64_t huge[1] = {60};
    KVS_CHECK_EQ_INT(kvs_seqs_init(&q, s, 1, huge, 0), KVS_STATUS_LIMIT);
    kvs_slots_free_all(s);
}

// ----------------------------------------------------------------------------
// experts

static void test_expert_map(void)
{
    struct kvs_model_config c = load("glm5");
    struct kvs_expert_map m;
    KVS_REQUIRE(kvs_expert_map_init(&c, 0, &m) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(m.resident, 8);
    KVS_CHECK_EQ_INT(m.shared, 1);
    KVS_CHECK_EQ_INT(kvs_expert_map_init(&c, 7, &m), KVS_STATUS_INVALID_ARGUMENT);

    uint64_t rng = 7;
    for (int resident = 8; resident <= 256; resident *= 2) {
        KVS_REQUIRE(kvs_expert_map_init(&c, resident, &m) == KVS_STATUS_OK);
        for (int trial = 0; trial < 2000; trial++) {
            int32_t logical[8], res[8], again[8];
            /* 8 distinct logical experts; every third trial all collide mod 8 */
            for (int k = 0; k < 8; k++) {
                int32_t e;
                int dup;
                do {
                    e = trial % 3 == 0 ? (int32_t)(8 * (kvs_test_rand(&rng) % 32))
                                       : (int32_t)(kvs_test_rand(&rng) % 256);
                    dup = 0;
                    for (int j = 0; j < k; j++)
                        dup |= logical[j] == e;
                } while (dup);
                logical[k] = e;
            }
            KVS_REQUIRE(kvs_expert_map_token(&m, logical, res) == KVS_STATUS_OK);
            KVS_REQUIRE(kvs_expert_map_token(&m, logical, again) == KVS_STATUS_OK);
            KVS_CHECK(memcmp(res, again, sizeof res) == 0);
            for (int k = 0; k < 8; k++) {
                KVS_CHECK(res[k] >= 0 && res[k] < resident);
                for (int j = 0; j < k; j++)
                    KVS_CHECK_MSG(res[j] != res[k], "resident %d: choices %d and %d share %d",
                                  resident, j, k, res[k]);
                if (resident == 256)
                    KVS_CHECK_EQ_INT(res[k], logical[k]); /* identity */
            }
        }
    }
    int32_t bad[8] = {0, 1, 2, 3, 4, 5, 6, 256}, out[8];
    KVS_CHECK_EQ_INT(kvs_expert_map_token(&m, bad, out), KVS_STATUS_INVALID_ARGUMENT);

    KVS_CHECK_NEAR(kvs_expected_distinct_experts(256, 8, 1), 8.0, 1e-9);
    KVS_CHECK_NEAR(kvs_expected_distinct_experts(256, 8, 10000), 256.0, 1e-6);
    double d8 = kvs_expected_distinct_experts(256, 8, 8);
    KVS_CHECK(d8 > 57.0 && d8 < 58.0); /* 256 (1 - (31/32)^8) = 57.4 */
}

static void test_expert_map_describe(void)
{
    struct kvs_model_config c = load("glm5");
    struct kvs_expert_map m;
    KVS_REQUIRE(kvs_expert_map_init(&c, 0, &m) == KVS_STATUS_OK);
    char text[2048];
    kvs_expert_map_describe(&m, &c, 1, text, sizeof text);
    KVS_CHECK(strstr(text, "256 logical") && strstr(text, "8 resident"));
    KVS_CHECK_MSG(strstr(text, "unchanged"), "batch 1 reads the real model's bytes: %s", text);
    kvs_expert_map_describe(&m, &c, 64, text, sizeof text);
    KVS_CHECK_MSG(strstr(text, "understated"), "batch 64 reads fewer experts: %s", text);
    KVS_CHECK(strstr(text, "222.")); /* 256 (1 - (31/32)^64) = 222.4 */
    KVS_REQUIRE(kvs_expert_map_init(&c, 256, &m) == KVS_STATUS_OK);
    kvs_expert_map_describe(&m, &c, 64, text, sizeof text);
    KVS_CHECK(strstr(text, "identity"));
}

/* The "kvscope.engine" object: every key of the agreed schema, integers as
 * integers, the byte model's figures for GLM-5 full-cast at batch 1 x 4096
 * (the bug: 78 layers each casting the whole 495552-row pool), copy_gbps
 * null when not measured, a config path with a quote kept valid JSON. */
static void test_facts_json(void)
{
    struct kvs_model_config c = load("glm5");
    struct kvs_engine_run_facts f = {0};
    f.config = "glm5", f.path = KVS_KV_PATH_FULL_CAST, f.batch = 1, f.context = 4096;
    f.kv_capacity = 495552, f.layers = c.layers, f.tp = 1, f.steps = 4;
    kvs_step_bytes_compute(&c, f.path, 1, 4097, f.kv_capacity, c.topk, &f.bytes);
    f.copy_gbps = 4227.1, f.step_ms = 96.67;
    char buf[1024];
    size_t n = kvs_engine_run_facts_json(&f, buf, sizeof buf);
    KVS_REQUIRE(n < sizeof buf);
    cJSON *o = cJSON_Parse(buf);
    KVS_REQUIRE(cJSON_IsObject(o));
    static const char *const keys[] = {"schema",
                                       "config",
                                       "kv_path",
                                       "batch",
                                       "context",
                                       "kv_capacity",
                                       "layers",
                                       "tp",
                                       "graph",
                                       "steps",
                                       "bytes_per_step",
                                       "weight_bytes_per_step",
                                       "kv_bytes_per_step",
                                       "copy_gbps",
                                       "step_ms"};
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(o), (int)(sizeof keys / sizeof keys[0]));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        KVS_CHECK_MSG(cJSON_GetObjectItemCaseSensitive(o, keys[i]) != NULL, "no %s", keys[i]);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(o, "schema")->valuestring,
                     "kvscope.engine/1");
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(o, "kv_path")->valuestring, "full-cast");
    KVS_CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(o, "layers")->valueint, 78);
    KVS_CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(o, "kv_capacity")->valueint, 495552);
    KVS_CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "graph")));
    /* integers in the text, no decimals or exponent */
    KVS_CHECK(strstr(buf, "\"batch\": 1,") && strstr(buf, "\"context\": 4096,"));
    char want[64];
    snprintf(want, sizeof want, "\"bytes_per_step\": %.0f,", f.bytes.total);
    KVS_CHECK_MSG(strstr(buf, want) != NULL, "%s not in %s", want, buf);
    double total = cJSON_GetObjectItemCaseSensitive(o, "bytes_per_step")->valuedouble;
    double w = cJSON_GetObjectItemCaseSensitive(o, "weight_bytes_per_step")->valuedouble;
    double kv = cJSON_GetObjectItemCaseSensitive(o, "kv_bytes_per_step")->valuedouble;
    KVS_CHECK_NEAR(total, w + kv, 2.0);
    /* the cast alone: 78 x 495552 x 576 x (1 read + 2 written) = 66.8 GB */
    KVS_CHECK_NEAR(f.bytes.kv_cast, 78.0 * 495552 * 576 * 3, 1.0);
    KVS_CHECK(kv > f.bytes.kv_cast && kv < 67.5e9); /* + attention over 4097 rows, new rows */
    KVS_CHECK(total > 147.3e9 && total < 147.4e9);  /* + 80.2 GB of weights read */
    KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(o, "copy_gbps")->valuedouble, 4227.1, 1e-9);
    KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(o, "step_ms")->valuedouble, 96.67, 1e-9);
    cJSON_Delete(o);

    f.copy_gbps = 0.0, f.config = "/tmp/my \"model\"/config.json", f.graph = 1, f.tp = 8;
    n = kvs_engine_run_facts_json(&f, buf, sizeof buf);
    o = cJSON_Parse(buf);
    KVS_REQUIRE(o);
    KVS_CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "copy_gbps")));
    KVS_CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "graph")));
    KVS_CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(o, "tp")->valueint, 8);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(o, "config")->valuestring,
                     "/tmp/my \"model\"/config.json");
    cJSON_Delete(o);
    char small[16];
    KVS_CHECK_EQ_INT(kvs_engine_run_facts_json(&f, small, sizeof small), n);
    KVS_CHECK_EQ_INT(strlen(small), sizeof small - 1);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"mem_plan_glm5", test_mem_plan_glm5},
        {"facts_json", test_facts_json},
        {"mem_plan_max_capacity", test_mem_plan_max_capacity},
        {"mem_plan_errors", test_mem_plan_errors},
        {"step_bytes", test_step_bytes},
        {"slots", test_slots},
        {"seqs", test_seqs},
        {"expert_map", test_expert_map},
        {"expert_map_describe", test_expert_map_describe},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
