/* engine/run.c — kvs_engine_run (kvscope/engine_run.h): the measured run of
 * the decode engine, one GPU or tensor-parallel, written once for
 * `kvscope engine` and `kvscope engine --tp N` (cli/cmd_engine.c prints):
 * warm-up, timed steps, medians, the byte model's bytes per step and the
 * roofline. Runs wherever `kvscope engine` does (examples/1_capture_engine.sh,
 * bench/engine.sh, bench/engine_tp.sh on a GPU); its bytes are
 * kvs_step_bytes_compute's (tests/test_engine_plan.c). */
#include <stdlib.h>
#include <string.h>

#include "kvscope/check.h"
#include "kvscope/engine_run.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double kvs_engine_median(double *v, int n)
{
    if (n < 1)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct series {
    int n, world;
    double *step;    /* [n] the slowest rank's step */
    double *kv;      /* [n] rank 0's KV preparation */
    double *rank_ms; /* [world][n] */
    double *ar_ms;   /* [world][n] in all-reduces, waiting included */
    double active_sum;
};

static enum kvs_status series_init(struct series *s, int n, int world)
{
    s->n = n;
    s->world = world;
    s->active_sum = 0.0;
    s->step = calloc((size_t)n, sizeof(double));
    s->kv = calloc((size_t)n, sizeof(double));
    s->rank_ms = calloc((size_t)n * (size_t)world, sizeof(double));
    s->ar_ms = calloc((size_t)n * (size_t)world, sizeof(double));
    return s->step && s->kv && s->rank_ms && s->ar_ms ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

static void series_free(struct series *s)
{
    free(s->step);
    free(s->kv);
    free(s->rank_ms);
    free(s->ar_ms);
}

/* the steps, one engine (e) or the ranks (t) */
static enum kvs_status run_steps(struct kvs_engine *e, struct kvs_engine_tp *t, int warmup,
                                 const struct kvs_engine_run_hooks *h, struct series *s)
{
    const int W = s->world;
    struct kvs_engine_step_info info[KVS_TP_MAX_WORLD];
    for (int i = 0; i < warmup + s->n; i++) {
        int timed = i >= warmup;
        if (i == warmup && h && h->timed_begin)
            KVS_TRY(h->timed_begin(h->user));
        KVS_TRY(t ? kvs_engine_tp_step(t, info) : kvs_engine_step(e, info));
        double slowest = 0.0;
        for (int r = 0; r < W; r++)
            slowest = info[r].ms > slowest ? info[r].ms : slowest;
        if (h && h->step) {
            struct kvs_engine_run_step rs = {i, timed, W, info, slowest};
            h->step(h->user, &rs);
        }
        if (!timed)
            continue;
        int k = i - warmup;
        s->step[k] = slowest;
        s->kv[k] = info[0].kv_ms;
        for (int r = 0; r < W; r++) {
            s->rank_ms[(size_t)r * s->n + k] = info[r].ms;
            s->ar_ms[(size_t)r * s->n + k] = info[r].allreduce_ms;
        }
        s->active_sum += (double)info[0].active;
    }
    return KVS_STATUS_OK;
}

static void figures(const struct kvs_engine_params *p, const struct kvs_model_config *model,
                    struct series *s, double copy_gbps, struct kvs_engine_run_summary *out)
{
    const int n = s->n;
    out->step_ms = kvs_engine_median(s->step, n);
    out->kv_ms = kvs_engine_median(s->kv, n);
    long long routed = (long long)p->batch * p->model.topk < out->resident
                           ? (long long)p->batch * p->model.topk
                           : out->resident;
    kvs_step_bytes_compute(model, p->path, p->batch, (int64_t)(s->active_sum / n), p->kv_capacity,
                           (int)routed, &out->bytes);
    out->copy_gbps = copy_gbps;
    out->roof_ms = out->bytes.total / (copy_gbps * 1e6);
    out->tokens_per_s = (double)p->batch * 1000.0 / out->step_ms;
    out->roof_pct = 100.0 * out->roof_ms / out->step_ms;
    out->kv_share_pct = p->graph ? -1.0 : 100.0 * out->kv_ms / out->step_ms;
    double ar_sum = 0.0, slow = 0.0;
    for (int r = 0; r < s->world; r++) {
        out->rank_ms[r] = kvs_engine_median(s->rank_ms + (size_t)r * n, n);
        out->rank_allreduce_ms[r] = kvs_engine_median(s->ar_ms + (size_t)r * n, n);
        ar_sum += out->rank_allreduce_ms[r];
        if (out->rank_ms[r] > slow) {
            slow = out->rank_ms[r];
            out->slowest_rank = r;
        }
    }
    out->allreduce_ms = p->graph ? -1.0 : ar_sum / s->world;
    out->allreduce_share_pct = p->graph ? -1.0 : 100.0 * out->allreduce_ms / out->step_ms;
}

enum kvs_status kvs_engine_run(const struct kvs_engine_params *p, int warmup, int steps, int world,
                               double copy_gbps, const struct kvs_engine_run_hooks *hooks,
                               struct kvs_engine_run_summary *out)
{
    if (!p || !out || warmup < 0 || steps < 1 || world < 0 || world > KVS_TP_MAX_WORLD ||
        !(copy_gbps > 0.0))
        return KVS_STATUS_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    const int W = world > 0 ? world : 1;
    out->steps = steps;
    out->world = W;
    struct kvs_engine *e = NULL;
    struct kvs_engine_tp *t = NULL;
    enum kvs_status st = world > 0 ? kvs_engine_tp_create(p, world, &t) : kvs_engine_create(p, &e);
    if (st != KVS_STATUS_OK)
        return st;
    if (hooks && hooks->ready)
        hooks->ready(hooks->user, W);
    struct series s = {0};
    st = series_init(&s, steps, W);
    if (st == KVS_STATUS_OK)
        st = run_steps(e, t, warmup, hooks, &s);
    if (st == KVS_STATUS_OK && hooks && hooks->timed_end)
        st = hooks->timed_end(hooks->user);
    const struct kvs_engine *e0 = t ? kvs_engine_tp_engine(t, 0) : e;
    out->resident = kvs_engine_expert_map(e0)->resident;
    for (int r = 0; t && r < W; r++) {
        out->rank_tid[r] = kvs_engine_tp_thread(t, r);
        out->rank_device[r] = kvs_engine_tp_device(t, r);
    }
    if (st == KVS_STATUS_OK) {
        struct kvs_tp_plan tp;
        st = kvs_tp_plan_init(&p->model, W, &tp, &p->log);
        if (st == KVS_STATUS_OK)
            figures(p, world > 0 ? &tp.rank : &p->model, &s, copy_gbps, out);
    }
    series_free(&s);
    kvs_engine_tp_free(t);
    kvs_engine_free(e);
    return st;
}
