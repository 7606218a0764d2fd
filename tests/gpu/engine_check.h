/* tests/gpu/engine_check.h — what the engine's gpu tests share: the
 * normalized error of two logit sets, a run of the CPU reference decode
 * (engine/reference.c), and the seed whose reference decode is furthest
 * from a tie (so a comparison measures kernel error, not tie-breaking).
 *
 * defines: struct kvs_eng_case, kvs_nerr, kvs_eng_reference, kvs_eng_clear_seed,
 *          KVS_ENG_ROUTE_MARGIN, KVS_ENG_ARGMAX_MARGIN
 */
#ifndef KVSCOPE_TEST_ENGINE_CHECK_H
#define KVSCOPE_TEST_ENGINE_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "kvs_test.h"
#include "kvscope/engine.h"
#include "reference.h"

/* One decode run: model, sequences, steps, pool. */
struct kvs_eng_case {
    const struct kvs_model_config *model;
    int batch;
    const int64_t *context; /* [batch] */
    int steps;
    int64_t capacity;
};

static inline double kvs_nerr(const float *a, const float *b, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i]))
            return INFINITY;
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return den > 0.0 ? sqrt(num / den) : INFINITY;
}

/* The reference's logits [steps, batch, vocab] and tokens [steps, batch],
 * with the smallest margins over the run in *worst. 1 on success. */
static inline int kvs_eng_reference(const struct kvs_eng_case *k, uint64_t seed, float *logits,
                                    int32_t *tokens, struct kvs_ref_margins *worst)
{
    struct kvs_ref_params p = {k->batch, k->context, k->steps, k->capacity, seed, 0, 1};
    struct kvs_ref *r = NULL;
    if (kvs_ref_create(k->model, &p, &r, NULL) != KVS_STATUS_OK)
        return 0;
    worst->route = worst->argmax = INFINITY;
    for (int s = 0; s < k->steps; s++) {
        struct kvs_ref_margins m;
        if (kvs_ref_step(r, logits + (size_t)s * k->batch * k->model->vocab,
                         tokens + (size_t)s * k->batch, &m) != KVS_STATUS_OK) {
            kvs_ref_free(r);
            return 0;
        }
        worst->route = fminf(worst->route, m.route);
        worst->argmax = fminf(worst->argmax, m.argmax);
    }
    kvs_ref_free(r);
    return 1;
}

/* The seed among 1..32 whose reference decode is furthest from a tie; its
 * margins must clear these (a few times the CPU/GPU difference of the
 * router keys and logits). Leaves that seed's reference in logits/tokens. */
#define KVS_ENG_ROUTE_MARGIN 3e-3
#define KVS_ENG_ARGMAX_MARGIN 1.5e-2
static inline uint64_t kvs_eng_clear_seed(const struct kvs_eng_case *k, float *logits,
                                          int32_t *tokens)
{
    uint64_t best = 0;
    double best_score = 0.0;
    for (uint64_t seed = 1; seed <= 32; seed++) {
        struct kvs_ref_margins m;
        if (!kvs_eng_reference(k, seed, logits, tokens, &m))
            KVS_TEST_SETUP_FAILED("the CPU reference failed");
        double score = fmin(m.route / KVS_ENG_ROUTE_MARGIN, m.argmax / KVS_ENG_ARGMAX_MARGIN);
        if (score > best_score) {
            best_score = score;
            best = seed;
        }
    }
    if (best_score < 1.0)
        KVS_TEST_SETUP_FAILED("no seed in 1..32 is clear of ties");
    struct kvs_ref_margins m;
    if (!kvs_eng_reference(k, best, logits, tokens, &m))
        KVS_TEST_SETUP_FAILED("the CPU reference failed");
    fprintf(stderr, "seed %llu: route margin %.4f, argmax margin %.4f\n", (unsigned long long)best,
            m.route, m.argmax);
    return best;
}

#endif /* KVSCOPE_TEST_ENGINE_CHECK_H */
