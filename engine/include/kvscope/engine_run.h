/* kvscope/engine_run.h — one driver for a measured engine run, on one GPU or
 * tensor-parallel over N (kvscope engine's run loop): create the engine(s),
 * warm up, time the steps, take the medians and the run's figures (bytes
 * per step by the byte model, the roofline at a copy rate), and free. The
 * caller prints: hooks see the run start, each step, and the window of
 * timed steps (where a capture starts and stops). CUDA builds only; the
 * header is plain C.
 *
 * defines: struct kvs_engine_run_hooks, struct kvs_engine_run_step,
 *          struct kvs_engine_run_summary, kvs_engine_run, kvs_engine_median
 *
 *   struct kvs_engine_run_summary s;
 *   KVS_TRY(kvs_engine_run(&p, 2, 16, 0, copy_gbps, NULL, &s));  // p from kvs_engine_params_init
 *   printf("%.3f ms, %.1f tokens/s\n", s.step_ms, s.tokens_per_s);
 */
#ifndef KVSCOPE_ENGINE_RUN_H
#define KVSCOPE_ENGINE_RUN_H

#include <stdint.h>

#include "kvscope/base.h"
#include "kvscope/engine.h"
#include "kvscope/engine_gpu.h"
#include "kvscope/engine_tp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One step as the hooks see it: info[world] (rank 0 first), the slowest
 * rank's ms (the step's time), and whether it is timed (not warm-up). */
struct kvs_engine_run_step {
    int index; /* 0-based, warm-up included */
    int timed;
    int world;
    const struct kvs_engine_step_info *info; /* [world] */
    double slowest_ms;
};

/* Any hook may be NULL. A hook returning a status other than OK ends the
 * run with it (the engines are freed). */
struct kvs_engine_run_hooks {
    void *user;
    /* the engine(s) exist, no step has run */
    void (*ready)(void *user, int world);
    /* just before the first timed step (a capture starts here) */
    enum kvs_status (*timed_begin)(void *user);
    void (*step)(void *user, const struct kvs_engine_run_step *s);
    /* after the last step, before the engines are freed (a capture stops
     * here, so their teardown is not recorded) */
    enum kvs_status (*timed_end)(void *user);
};

struct kvs_engine_run_summary {
    int steps, world;
    int resident;                /* routed experts resident per MoE layer */
    double step_ms;              /* median of the slowest rank's step */
    double kv_ms;                /* median KV preparation (rank 0) */
    double tokens_per_s;         /* batch * 1000 / step_ms */
    struct kvs_step_bytes bytes; /* per step by the byte model (a rank's share with world > 1)
                                    at the mean active tokens */
    double copy_gbps, roof_ms;   /* bytes.total / copy rate */
    double roof_pct;             /* 100 roof_ms / step_ms: how near the roofline the step is */
    /* 100 kv_ms / step_ms; -1 for a CUDA-graph run (p->graph: no events
     * inside the graph time the KV preparation) */
    double kv_share_pct;
    /* the all-reduce's median time, the mean over ranks (waiting for the
     * slowest rank included), and its share of the step; -1 for a
     * CUDA-graph run; 0 on one GPU */
    double allreduce_ms, allreduce_share_pct;
    int slowest_rank;            /* the rank of the largest median step */
    /* world > 1: each rank's median step and all-reduce time, and the
     * thread and device each rank ran on (for a capture's per-rank files) */
    double rank_ms[KVS_TP_MAX_WORLD], rank_allreduce_ms[KVS_TP_MAX_WORLD];
    uint32_t rank_tid[KVS_TP_MAX_WORLD];
    int rank_device[KVS_TP_MAX_WORLD];
};

/* Runs warmup + steps decode steps of p (p->steps must make room for them)
 * on one GPU (world 0: kvs_engine_create, no NCCL) or tensor-parallel over
 * GPUs 0..world-1 (world >= 1: kvs_engine_tp_create; 1 is a communicator of
 * one), and fills *out (out->world: 1 for one GPU). copy_gbps > 0 is the roofline's
 * copy rate. Errors are the engine's (KVS_STATUS_INVALID_ARGUMENT for a
 * split or world that cannot run) or a hook's. */
KVS_API enum kvs_status kvs_engine_run(const struct kvs_engine_params *p, int warmup, int steps,
                                       int world, double copy_gbps,
                                       const struct kvs_engine_run_hooks *hooks,
                                       struct kvs_engine_run_summary *out);

/* The median of v[n] (sorts v). */
KVS_API double kvs_engine_median(double *v, int n);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ENGINE_RUN_H */
