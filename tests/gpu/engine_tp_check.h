/* tests/gpu/engine_tp_check.h — what the tensor-parallel gpu tests share:
 * a decode run on the one-GPU engine or the tensor-parallel driver (any
 * world size), optionally captured with one trace file per rank, and the
 * checks every rank's trace must pass.
 *
 * defines: struct kvs_tp_test_out, kvs_tp_test_out_new, kvs_tp_test_out_free,
 *          kvs_tp_test_run, kvs_tp_test_check_trace, kvs_tp_test_trace_ranks,
 *          kvs_tp_test_nvls_off
 */
#ifndef KVSCOPE_TEST_ENGINE_TP_CHECK_H
#define KVSCOPE_TEST_ENGINE_TP_CHECK_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_check.h"
#include "kvs_test_gpu.h"
#include "kvs_test_opts.h"
#include "kvscope/engine_gpu.h"
#include "kvscope/engine_tp.h"
#include "kvscope/trace.h"
#include "trace_check.h"

/* NVLink multicast off before any communicator, as kvscope engine does
 * (cli/cmd_engine.c): NCCL reads NCCL_NVLS_ENABLE, and the engine library
 * writes no environment. A value the user set is kept. Call first in main. */
static inline void kvs_tp_test_nvls_off(void)
{
    setenv("NCCL_NVLS_ENABLE", "0", 0);
}

struct kvs_tp_test_out {
    float *logits;        /* [steps, batch, vocab]: rank 0's */
    int32_t *tokens;      /* [steps, batch] */
    int ranks_differ;     /* steps where another rank's logits differ from rank 0's */
    double allreduce_ms;  /* summed over steps and ranks */
};

/* Room for a run of k (kvs_tp_test_out_free releases it). */
static inline struct kvs_tp_test_out kvs_tp_test_out_new(const struct kvs_eng_case *k)
{
    const size_t n = (size_t)k->steps * k->batch;
    struct kvs_tp_test_out o = {(float *)malloc(n * k->model->vocab * sizeof(float)),
                                (int32_t *)malloc(n * sizeof(int32_t)), 0, 0.0};
    return o;
}

static inline void kvs_tp_test_out_free(struct kvs_tp_test_out *o)
{
    free(o->logits);
    free(o->tokens);
}

/* world 0: the one-GPU engine (kvs_engine_create); world >= 1: the
 * tensor-parallel driver. trace: NULL, or a path with one %d for the rank.
 * 1 when every step ran. */
static inline int kvs_tp_test_run(const struct kvs_eng_case *k, uint64_t seed,
                                  enum kvs_kv_path path, int graph, int world, const char *trace,
                                  struct kvs_tp_test_out *o)
{
    const size_t V = (size_t)k->batch * k->model->vocab;
    struct kvs_engine_params p;
    kvs_engine_params_init(&p);
    p.kernels = *kvs_test_opts(); /* KVS_PDL=0 etc. from the environment */
    p.model = *k->model;
    p.path = path;
    p.batch = k->batch;
    p.context = k->context;
    p.steps = k->steps;
    p.kv_capacity = k->capacity;
    p.seed = seed;
    p.graph = graph;
    p.scatter = 1;
    struct kvs_trace *tr = NULL;
    if (trace) {
        struct kvs_trace_config tc;
        kvs_trace_config_init(&tc);
        if (kvs_trace_create(&tc, &tr) != KVS_STATUS_OK)
            return 0;
    }
    struct kvs_engine *e = NULL;
    struct kvs_engine_tp *t = NULL;
    int ok = world == 0 ? kvs_engine_create(&p, &e) == KVS_STATUS_OK
                        : kvs_engine_tp_create(&p, world, &t) == KVS_STATUS_OK;
    if (ok && tr)
        ok = kvs_trace_start(tr) == KVS_STATUS_OK;
    float *other = (float *)malloc(V * sizeof *other);
    struct kvs_engine_step_info info[KVS_TP_MAX_WORLD];
    o->ranks_differ = 0;
    o->allreduce_ms = 0.0;
    for (int s = 0; ok && s < k->steps; s++) {
        float *lg = o->logits + (size_t)s * V;
        int32_t *tk = o->tokens + (size_t)s * k->batch;
        if (world == 0) {
            ok = kvs_engine_step(e, info) == KVS_STATUS_OK &&
                 kvs_engine_logits(e, lg) == KVS_STATUS_OK &&
                 kvs_engine_tokens(e, tk) == KVS_STATUS_OK;
            continue;
        }
        ok = kvs_engine_tp_step(t, info) == KVS_STATUS_OK &&
             kvs_engine_tp_logits(t, 0, lg) == KVS_STATUS_OK &&
             kvs_engine_tp_tokens(t, 0, tk) == KVS_STATUS_OK;
        for (int r = 0; ok && r < world; r++) {
            ok = info[r].step == s && info[r].ms > 0.0 && info[r].graph == graph;
            o->allreduce_ms += info[r].allreduce_ms;
            if (r > 0 && ok) {
                ok = kvs_engine_tp_logits(t, r, other) == KVS_STATUS_OK;
                o->ranks_differ += memcmp(other, lg, V * sizeof *lg) != 0;
            }
        }
    }
    free(other);
    if (tr) {
        ok = ok && kvs_trace_stop(tr) == KVS_STATUS_OK;
        for (int r = 0; ok && r < (world ? world : 1); r++) {
            char path_r[512];
            snprintf(path_r, sizeof path_r, trace, r);
            uint32_t tid = t ? kvs_engine_tp_thread(t, r) : 0;
            struct kvs_trace_part part = {world ? r : -1, &tid, t ? 1 : 0, r == 0,
                                          world ? r : -1, world, "nccl"};
            ok = kvs_trace_write_part(tr, path_r, &part) == KVS_STATUS_OK;
        }
    }
    kvs_engine_free(e);
    kvs_engine_tp_free(t);
    kvs_trace_free(tr);
    return ok;
}

/* Rank `rank`'s file of a world-`world` capture of `steps` steps of model
 * `c`: valid JSON with Kineto's distributedInfo; every kernel on the rank's
 * device; one kvs::all_reduce op [batch, hidden] BF16 per sublayer per
 * step; with world > 1, NCCL's all-reduce kernels there under their own
 * names, each inside one of those ops (its External id). */
static inline void kvs_tp_test_check_trace(const char *path, int rank, int world,
                                           const struct kvs_model_config *c, int batch, int steps)
{
    cJSON *sum;
    kvs_check_trace_valid(path, &sum);
    if (!sum)
        return;
    const cJSON *di = cJSON_GetObjectItemCaseSensitive(sum, "distributedInfo");
    KVS_REQUIRE(cJSON_IsObject(di));
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(di, "backend");
    KVS_CHECK(cJSON_IsString(be) && !strcmp(be->valuestring, "nccl"));
    KVS_CHECK_EQ_INT(kvs_summary_int(di, "rank", -1), rank);
    KVS_CHECK_EQ_INT(kvs_summary_int(di, "world_size", -1), world);
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(sum, "kvscope");
    KVS_CHECK_EQ_INT(kvs_summary_int(kv, "rank", -1), rank);
    KVS_CHECK_EQ_INT(kvs_summary_int(kv, "world_size", -1), world);

    long long ar_ext[4096];
    int n_ar = 0, bad_dims = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, kvs_summary_array(sum, "ops"))
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (!cJSON_IsString(nm) || strcmp(nm->valuestring, "kvs::all_reduce"))
            continue;
        char *dims = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "dims"));
        char *types = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "types"));
        char want[64];
        snprintf(want, sizeof want, "[[%d,%d]]", batch, c->hidden);
        bad_dims += !dims || !types || strcmp(dims, want) || strcmp(types, "[\"c10::BFloat16\"]");
        free(dims);
        free(types);
        if (n_ar < 4096)
            ar_ext[n_ar] = kvs_summary_int(e, "ext", -1);
        n_ar++;
    }
    KVS_CHECK_EQ_INT(n_ar, 2 * c->layers * steps);
    KVS_CHECK_EQ_INT(bad_dims, 0);
    int kernels = 0, elsewhere = 0, nccl = 0, nccl_outside = 0;
    cJSON_ArrayForEach(e, kvs_summary_array(sum, "kernels"))
    {
        kernels++;
        elsewhere += kvs_summary_int(e, "pid", -1) != rank;
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (!cJSON_IsString(nm) || strncmp(nm->valuestring, "ncclDevKernel", 13))
            continue;
        nccl++;
        long long ext = kvs_summary_int(e, "ext", -2);
        int inside = 0;
        for (int i = 0; i < n_ar && i < 4096; i++)
            inside |= ar_ext[i] == ext;
        nccl_outside += !inside;
    }
    fprintf(stderr, "%s: %d kernels, %d NCCL kernels, %d all-reduce ops\n", path, kernels, nccl,
            n_ar);
    KVS_CHECK(kernels > 0);
    KVS_CHECK_EQ_INT(elsewhere, 0);
    if (world > 1) {
        KVS_CHECK(nccl >= 2 * c->layers * steps);
        KVS_CHECK_EQ_INT(nccl_outside, 0);
    }
    int step_ranges = 0;
    cJSON_ArrayForEach(e, kvs_summary_array(sum, "user_annotations"))
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        step_ranges += cJSON_IsString(nm) && !strncmp(nm->valuestring, "ProfilerStep#", 13);
    }
    KVS_CHECK_EQ_INT(step_ranges, steps);
    cJSON_Delete(sum);
}

/* A full-cast run of k over `world` ranks (seed 5) captured to one file per
 * rank; each file passes kvs_tp_test_check_trace and is removed. */
static inline void kvs_tp_test_trace_ranks(const struct kvs_eng_case *k, int world)
{
    struct kvs_tp_test_out o = kvs_tp_test_out_new(k);
    char tmpl[256], path[256];
    snprintf(tmpl, sizeof tmpl, "/tmp/kvs_tp%d_%d.rank%%d.json", world, (int)getpid());
    int ok = kvs_tp_test_run(k, 5, KVS_KV_PATH_FULL_CAST, 0, world, tmpl, &o);
    KVS_CHECK(ok);
    for (int r = 0; ok && r < world; r++) {
        snprintf(path, sizeof path, tmpl, r);
        kvs_tp_test_check_trace(path, r, world, k->model, k->batch, k->steps);
        unlink(path);
    }
    kvs_tp_test_out_free(&o);
}

#endif /* KVSCOPE_TEST_ENGINE_TP_CHECK_H */
