/* cli/engine_tp_run.c — `kvscope engine --tp N`: the decode engine
 * tensor-parallel over GPUs 0..N-1 (kvscope/engine_tp.h: one thread per GPU,
 * NCCL all-reduces), its per-step times (the slowest rank's), the time in
 * all-reduces and its share, per-rank figures, and with --trace one file per
 * rank (kvs_trace_write_part: the rank's device and thread, distributedInfo).
 *
 *   kvscope engine --tp 8 --kv-path full-cast --trace full.json.gz
 *   bench/engine_tp.sh build "$OUT"
 * The plan and the copy rate come first (cmd_engine.c); this file runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine_cli.h"
#include "kvscope/check.h"
#include "kvscope/engine_tp.h"
#ifdef KVS_ENGINE_HAVE_TRACE
#include "kvscope/trace.h"
#endif

struct series {
    int n, world;
    double *step;      /* [n] the slowest rank's step */
    double *kv;        /* [n] rank 0's KV preparation */
    double *rank_ms;   /* [world][n] */
    double *ar_ms;     /* [world][n] in all-reduces, waiting included */
    double active_sum;
};

static int series_init(struct series *s, int n, int world)
{
    s->n = n;
    s->world = world;
    s->active_sum = 0.0;
    s->step = calloc((size_t)n, sizeof(double));
    s->kv = calloc((size_t)n, sizeof(double));
    s->rank_ms = calloc((size_t)n * (size_t)world, sizeof(double));
    s->ar_ms = calloc((size_t)n * (size_t)world, sizeof(double));
    return s->step && s->kv && s->rank_ms && s->ar_ms ? 0 : -1;
}

static void series_free(struct series *s)
{
    free(s->step);
    free(s->kv);
    free(s->rank_ms);
    free(s->ar_ms);
}

#ifdef KVS_ENGINE_HAVE_TRACE
/* One file per rank out of the one capture (CUPTI records the process). */
static enum kvs_status write_ranks(const struct kvs_engine_opts *o, struct kvs_trace *tr,
                                   struct kvs_engine_tp *t, const char *path)
{
    const int W = kvs_engine_tp_world(t);
    for (int r = 0; r < W; r++) {
        char out[4096];
        if (kvs_trace_rank_path(path, r, W, out, sizeof out) != 0)
            return KVS_STATUS_INVALID_ARGUMENT;
        uint32_t tid = kvs_engine_tp_thread(t, r);
        struct kvs_trace_part part = {kvs_engine_tp_device(t, r), &tid, 1, r == 0, r, W, "nccl"};
        KVS_TRY(kvs_engine_cli_write_trace(o, tr, out, &part));
        printf("trace: %s (rank %d of %d, GPU %d; steps are ProfilerStep#N ranges)\n", out, r, W,
               part.device);
    }
    return KVS_STATUS_OK;
}
#endif

static enum kvs_status run_steps(const struct kvs_engine_opts *o, struct kvs_engine_tp *t,
                                 void *trace, struct series *s)
{
    const int W = s->world;
    struct kvs_engine_step_info info[KVS_TP_MAX_WORLD];
    if (!o->quiet)
        printf("%6s %10s %10s %12s %14s %10s\n", "step", "ms", "tokens/s", "kv-prep ms",
               "all-reduce ms", "active");
    for (int i = 0; i < o->warmup + o->steps; i++) {
        int timed = i >= o->warmup;
#ifdef KVS_ENGINE_HAVE_TRACE
        if (trace && i == o->warmup)
            KVS_TRY(kvs_trace_start(trace));
#else
        (void)trace;
#endif
        KVS_TRY(kvs_engine_tp_step(t, info));
        double slowest = 0.0;
        for (int r = 0; r < W; r++)
            slowest = info[r].ms > slowest ? info[r].ms : slowest;
        if (!o->quiet)
            printf("%5s%d %10.3f %10.1f %12.3f %14.3f %10lld%s\n", timed ? "" : "w", info[0].step,
                   slowest, (double)o->batch * 1000.0 / slowest, info[0].kv_ms,
                   info[0].allreduce_ms, (long long)info[0].active, info[0].graph ? "  graph" : "");
        if (!timed)
            continue;
        int k = i - (int)o->warmup;
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

/* The run's figures with a rank's share of the model (its bytes per step). */
static void figures(const struct kvs_engine_opts *o, const struct kvs_engine_params *p,
                    struct series *s, int resident, double copy, struct kvs_engine_cli_figures *f)
{
    struct kvs_tp_plan tp;
    kvs_tp_plan_init(&p->model, s->world, &tp, NULL); /* checked before the run */
    kvs_engine_cli_figures(o, p, &tp.rank, s->step, s->kv, s->n, s->active_sum, resident, copy, f);
}

static void summary(const struct kvs_engine_opts *o, const struct kvs_engine_params *p,
                    struct series *s, const struct kvs_engine_cli_figures *fp, double copy)
{
    const int W = s->world, n = s->n;
    const struct kvs_engine_cli_figures f = *fp;
    const double step_ms = f.step_ms, kv_ms = f.kv_ms, roof_ms = f.roof_ms;
    printf("summary over %d timed steps (median), tensor parallel over %d GPUs:\n", n, W);
    printf("  step (slowest rank)           %10.3f ms\n", step_ms);
    printf("  tokens/s                      %10.1f\n", f.tokens_per_s);
    kvs_engine_cli_print_bytes("bytes moved per step, a rank", &f.sb);
    printf("  roofline (a rank's bytes / copy rate) %7.3f ms\n", roof_ms);
    printf("  of roofline                   %10.1f %%\n", 100.0 * roof_ms / step_ms);
    if (o->path != KVS_KV_PATH_FP8_DIRECT && !o->graph)
        printf("  KV prep (cast) share of step  %10.1f %%  (%.3f ms on rank 0, CUDA events)\n",
               100.0 * kv_ms / step_ms, kv_ms);
    double ar_sum = 0.0, slow = 0.0;
    int slow_rank = 0;
    for (int r = 0; r < W; r++) {
        double rm = kvs_engine_cli_median(s->rank_ms + (size_t)r * n, n);
        double am = kvs_engine_cli_median(s->ar_ms + (size_t)r * n, n);
        ar_sum += am;
        if (rm > slow) {
            slow = rm;
            slow_rank = r;
        }
        if (!o->graph)
            printf("  rank %-2d (GPU %d)               %10.3f ms, all-reduce %.3f ms (%.1f %%)\n",
                   r, r, rm, am, 100.0 * am / rm);
        else
            printf("  rank %-2d (GPU %d)               %10.3f ms\n", r, r, rm);
    }
    double ar_ms = o->graph ? -1.0 : ar_sum / W;
    if (!o->graph)
        printf("  all-reduce share of step      %10.1f %%  (%.3f ms, mean over ranks; waiting for "
               "the slowest rank included)\n",
               100.0 * ar_ms / step_ms, ar_ms);
    printf("result: config=%s path=%s batch=%lld context=%lld steps=%d graph=%d tp=%d "
           "step_ms=%.4f tokens_per_s=%.2f bytes_per_step=%.6g roofline_ms=%.4f "
           "roofline_pct=%.2f kv_ms=%.4f kv_share_pct=%.2f allreduce_ms=%.4f "
           "allreduce_share_pct=%.2f slowest_rank=%d copy_gbps=%.1f\n",
           p->model.name, kvs_kv_path_name(p->path), o->batch, o->context, n, o->graph, W,
           step_ms, f.tokens_per_s, f.sb.total, roof_ms, 100.0 * roof_ms / step_ms, kv_ms,
           o->graph ? -1.0 : 100.0 * kv_ms / step_ms, ar_ms,
           o->graph ? -1.0 : 100.0 * ar_ms / step_ms, slow_rank, copy);
}

int kvs_engine_cli_run_tp(const struct kvs_engine_opts *o, const struct kvs_engine_params *p,
                          double copy)
{
    const int W = (int)o->tp;
    void *trace = NULL;
#ifdef KVS_ENGINE_HAVE_TRACE
    struct kvs_trace *tr = NULL;
    if (o->trace) {
        struct kvs_trace_config tc;
        kvs_trace_config_init(&tc);
        if (kvs_trace_create(&tc, &tr) != KVS_STATUS_OK)
            return KVS_EXIT_FAILURE;
        trace = tr;
    }
#endif
    struct kvs_engine_tp *t = NULL;
    enum kvs_status st = kvs_engine_tp_create(p, W, &t);
    if (st == KVS_STATUS_OK) {
        const char *nvls = getenv("NCCL_NVLS_ENABLE");
        printf("tensor parallel: %d rank%s on GPUs 0..%d, one thread each, NCCL all-reduce "
               "(NCCL_NVLS_ENABLE=%s)\n",
               W, W == 1 ? "" : "s", W - 1, nvls ? nvls : "unset");
        fflush(stdout);
    }
    struct series s = {0};
    if (st == KVS_STATUS_OK && series_init(&s, (int)o->steps, W) != 0)
        st = KVS_STATUS_NO_MEMORY;
    if (st == KVS_STATUS_OK)
        st = run_steps(o, t, trace, &s);
    int resident = t ? kvs_engine_expert_map(kvs_engine_tp_engine(t, 0))->resident : 0;
    struct kvs_engine_cli_figures f;
    if (st == KVS_STATUS_OK)
        figures(o, p, &s, resident, copy, &f);
#ifdef KVS_ENGINE_HAVE_TRACE
    if (tr && st == KVS_STATUS_OK) {
        st = kvs_trace_stop(tr);
        /* every rank's file gets the run's facts (bytes: a rank's share) */
        if (st == KVS_STATUS_OK)
            st = kvs_engine_cli_trace_facts(o, p, &f, s.n, copy, tr);
        if (st == KVS_STATUS_OK)
            st = write_ranks(o, tr, t, o->trace);
    }
    kvs_trace_free(tr);
#endif
    kvs_engine_tp_free(t);
    if (st != KVS_STATUS_OK) {
        series_free(&s);
        fprintf(stderr, "kvscope engine: %s\n", kvs_status_str(st));
        return st == KVS_STATUS_INVALID_ARGUMENT ? KVS_EXIT_USAGE : KVS_EXIT_FAILURE;
    }
    summary(o, p, &s, &f, copy);
    series_free(&s);
    return KVS_EXIT_OK;
}
