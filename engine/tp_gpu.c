/* engine/tp_gpu.c — tensor parallelism over NCCL (kvscope/engine_tp.h): one
 * process, one thread per GPU, each thread owning its rank's engine (device,
 * stream, cuBLAS handles, buffers), the ranks joined by the all-reduces in
 * the decode step (engine/gpu_step.c).
 *
 *   kvscope engine --tp 4 --kv-path full-cast
 *   meson test -C build --suite gpu test_engine_tp
 *
 * The controlling thread hands each job (create, step, read results, quit)
 * to the rank threads and waits for all of them: a step's all-reduces need
 * every rank to enqueue its step, which their threads do concurrently.
 * Communicators come from ncclCommInitAll on the controlling thread (one
 * call: no rank can be left waiting in a bootstrap another rank never
 * reached); each rank thread destroys its own at the end, after its
 * stream is idle, before its engine's resources go.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
/* nccl.h declares a few functions without (void) (ncclResetDebugInit) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "kvscope/check.h"
#include "kvscope/engine_gpu.h"
#include "kvscope/engine_tp.h"

enum job { JOB_CREATE = 1, JOB_STEP, JOB_LOGITS, JOB_TOKENS, JOB_QUIT };

struct rank {
    struct kvs_engine_tp *t;
    int rank;
    pthread_t thread;
    uint32_t tid;
    struct kvs_engine_params p;
    struct kvs_engine *e;
    struct kvs_engine_step_info info;
};

struct kvs_engine_tp {
    int world, started;
    struct kvs_logger lg;
    ncclComm_t comms[KVS_TP_MAX_WORLD];
    int comms_made, aborted;
    struct rank *r;

    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;        /* bumped for each job */
    enum job job;
    int target;          /* the rank a job is for; -1: every rank */
    void *arg;           /* the job's host buffer */
    int pending;         /* ranks still on the job */
    enum kvs_status st;  /* the first failure of the job */
};

// ----------------------------------------------------------------------------
// rank threads

static enum kvs_status run(struct rank *r, enum job job, void *arg)
{
    struct kvs_engine_tp *t = r->t;
    switch (job) {
    case JOB_CREATE:
        KVS_CUDA_TRY(&t->lg, cudaSetDevice(r->rank));
        return kvs_engine_create(&r->p, &r->e);
    case JOB_STEP:
        return kvs_engine_step(r->e, &r->info);
    case JOB_LOGITS:
        return kvs_engine_logits(r->e, arg);
    case JOB_TOKENS:
        return kvs_engine_tokens(r->e, arg);
    case JOB_QUIT:
        /* the stream is idle (every step synchronised). The captured graph
         * goes first: it holds NCCL's plan for the all-reduces in it, and
         * ncclCommFinalize waits for that plan's release (with the graph
         * still alive it waited forever: tp 2 --graph on two H200s,
         * 2026-11-29). Then the communicator, then the engine's stream and
         * buffers. */
        kvs_engine_drop_graph(r->e);
        if (t->comms_made && !t->aborted) {
            KVS_NCCL_STATUS(&t->lg, ncclCommFinalize(t->comms[r->rank]));
            KVS_NCCL_STATUS(&t->lg, ncclCommDestroy(t->comms[r->rank]));
        }
        kvs_engine_free(r->e);
        r->e = NULL;
        return KVS_STATUS_OK;
    }
    return KVS_STATUS_INTERNAL;
}

static void *rank_main(void *arg)
{
    struct rank *r = arg;
    struct kvs_engine_tp *t = r->t;
    uint64_t seen = 0;
    pthread_mutex_lock(&t->mu);
    r->tid = (uint32_t)syscall(SYS_gettid);
    for (;;) {
        while (t->gen == seen)
            pthread_cond_wait(&t->go, &t->mu);
        seen = t->gen;
        enum job job = t->job;
        void *job_arg = t->arg;
        int mine = t->target < 0 || t->target == r->rank;
        pthread_mutex_unlock(&t->mu);
        enum kvs_status st = mine ? run(r, job, job_arg) : KVS_STATUS_OK;
        pthread_mutex_lock(&t->mu);
        if (mine) {
            if (st != KVS_STATUS_OK && t->st == KVS_STATUS_OK)
                t->st = st;
            t->pending--;
            pthread_cond_broadcast(&t->done);
        }
        if (job == JOB_QUIT)
            break;
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* A rank failed mid-step while others still wait: the others may be inside
 * an all-reduce the failed rank never joins. Abort every communicator (that
 * ends NCCL's kernels) so they return; the engine cannot step again. */
static void abort_comms(struct kvs_engine_tp *t)
{
    kvs_log(&t->lg, KVS_LOG_ERROR, "tensor parallel: a rank failed during a step; aborting the "
                                   "NCCL communicators so that the other ranks return");
    for (int i = 0; i < t->world; i++)
        KVS_NCCL_STATUS(&t->lg, ncclCommAbort(t->comms[i]));
}

/* Hand `job` to rank `target` (-1: all) and wait for it. */
static enum kvs_status run_job(struct kvs_engine_tp *t, enum job job, int target, void *arg)
{
    pthread_mutex_lock(&t->mu);
    t->job = job;
    t->target = target;
    t->arg = arg;
    t->pending = target < 0 ? t->started : 1;
    t->st = KVS_STATUS_OK;
    t->gen++;
    pthread_cond_broadcast(&t->go);
    while (t->pending > 0) {
        if (job == JOB_STEP && t->st != KVS_STATUS_OK && !t->aborted) {
            /* give the others a few seconds to finish enqueuing their step */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 5;
            while (t->pending > 0 && pthread_cond_timedwait(&t->done, &t->mu, &until) == 0) {
            }
            if (t->pending > 0) {
                t->aborted = 1;
                pthread_mutex_unlock(&t->mu);
                abort_comms(t);
                pthread_mutex_lock(&t->mu);
            }
            continue;
        }
        pthread_cond_wait(&t->done, &t->mu);
    }
    enum kvs_status st = t->st;
    if (t->aborted && st == KVS_STATUS_OK)
        st = KVS_STATUS_NCCL;
    pthread_mutex_unlock(&t->mu);
    return st;
}

// ----------------------------------------------------------------------------
// create, free

enum kvs_status kvs_engine_gpu_count(int *count, const char *vis, const struct kvs_logger *lg)
{
    *count = 0;
    cudaError_t err = cudaGetDeviceCount(count);
    if (err != cudaSuccess) {
        *count = 0;
        /* CUDA says "driver version is insufficient" also where no driver
         * is installed at all (cudaDriverGetVersion then gives 0): say which,
         * in words a user can act on */
        int drv = 0, rt = 0;
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rt);
        if (err == cudaErrorInsufficientDriver && drv == 0)
            kvs_log(lg, KVS_LOG_ERROR, "no NVIDIA driver is installed");
        else if (err == cudaErrorInsufficientDriver)
            kvs_log(lg, KVS_LOG_ERROR, "the NVIDIA driver supports CUDA %d.%d, older than the "
                                       "CUDA %d.%d runtime kvscope was built with: update the "
                                       "driver", drv / 1000, drv % 1000 / 10, rt / 1000,
                    rt % 1000 / 10);
        else if (err == cudaErrorNoDevice && vis)
            kvs_log(lg, KVS_LOG_ERROR, "no GPU is visible with CUDA_VISIBLE_DEVICES=%s", vis);
        else if (err == cudaErrorNoDevice)
            kvs_log(lg, KVS_LOG_ERROR, "the NVIDIA driver sees no GPU");
        else
            kvs_log(lg, KVS_LOG_ERROR, "no CUDA device is visible: %s", cudaGetErrorString(err));
        return KVS_STATUS_CUDA;
    }
    return KVS_STATUS_OK;
}

void kvs_engine_tp_free(struct kvs_engine_tp *t)
{
    if (!t)
        return;
    if (t->started) {
        run_job(t, JOB_QUIT, -1, NULL);
        for (int i = 0; i < t->started; i++)
            pthread_join(t->r[i].thread, NULL);
    } else if (t->comms_made && !t->aborted) {
        for (int i = 0; i < t->world; i++)
            ncclCommDestroy(t->comms[i]);
    }
    pthread_cond_destroy(&t->go);
    pthread_cond_destroy(&t->done);
    pthread_mutex_destroy(&t->mu);
    free(t->r);
    free(t);
}

enum kvs_status kvs_engine_tp_create(const struct kvs_engine_params *p, int world,
                                     struct kvs_engine_tp **out)
{
    if (!p || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    struct kvs_tp_plan plan;
    KVS_TRY(kvs_tp_plan_init(&p->model, world, &plan, &p->log));
    int gpus = 0;
    KVS_TRY(kvs_engine_gpu_count(&gpus, p->visible_devices, &p->log));
    if (world > gpus) {
        kvs_log(&p->log, KVS_LOG_ERROR,
                "tensor parallel over %d GPUs needs %d visible GPUs; this process sees %d "
                "(CUDA_VISIBLE_DEVICES decides which)",
                world, world, gpus);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    struct kvs_engine_tp *t = calloc(1, sizeof *t);
    if (!t)
        return KVS_STATUS_NO_MEMORY;
    t->world = world;
    t->lg = p->log;
    t->r = calloc((size_t)world, sizeof *t->r);
    if (!t->r || pthread_mutex_init(&t->mu, NULL) || pthread_cond_init(&t->go, NULL) ||
        pthread_cond_init(&t->done, NULL)) {
        free(t->r);
        free(t);
        return KVS_STATUS_NO_MEMORY;
    }
    /* NCCL reads NCCL_NVLS_ENABLE here: the program has set it (the
     * library writes no environment; kvscope/engine_gpu.h) */
    int devs[KVS_TP_MAX_WORLD];
    for (int i = 0; i < world; i++)
        devs[i] = i;
    enum kvs_status st = KVS_NCCL_STATUS(&t->lg, ncclCommInitAll(t->comms, world, devs));
    t->comms_made = st == KVS_STATUS_OK;
    for (int i = 0; st == KVS_STATUS_OK && i < world; i++) {
        struct rank *r = &t->r[i];
        r->t = t;
        r->rank = i;
        r->p = *p;
        r->p.tp_world = world;
        r->p.tp_rank = i;
        r->p.tp_comm = t->comms[i];
        if (pthread_create(&r->thread, NULL, rank_main, r) != 0) {
            kvs_log(&t->lg, KVS_LOG_ERROR, "tensor parallel: cannot start rank %d's thread", i);
            st = KVS_STATUS_NO_MEMORY;
            break;
        }
        t->started++;
    }
    /* every rank builds its engine at once (weights filled in parallel) */
    if (st == KVS_STATUS_OK)
        st = run_job(t, JOB_CREATE, -1, NULL);
    if (st != KVS_STATUS_OK) {
        kvs_engine_tp_free(t);
        return st;
    }
    *out = t;
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// steps and results

enum kvs_status kvs_engine_tp_step(struct kvs_engine_tp *t, struct kvs_engine_step_info *info)
{
    if (!t || t->aborted)
        return KVS_STATUS_INVALID_ARGUMENT;
    enum kvs_status st = run_job(t, JOB_STEP, -1, NULL);
    for (int i = 0; info && i < t->world; i++)
        info[i] = t->r[i].info;
    return st;
}

enum kvs_status kvs_engine_tp_logits(struct kvs_engine_tp *t, int rank, float *host)
{
    if (!t || !host || rank < 0 || rank >= t->world)
        return KVS_STATUS_INVALID_ARGUMENT;
    return run_job(t, JOB_LOGITS, rank, host);
}

enum kvs_status kvs_engine_tp_tokens(struct kvs_engine_tp *t, int rank, int32_t *host)
{
    if (!t || !host || rank < 0 || rank >= t->world)
        return KVS_STATUS_INVALID_ARGUMENT;
    return run_job(t, JOB_TOKENS, rank, host);
}

int kvs_engine_tp_world(const struct kvs_engine_tp *t)
{
    return t->world;
}

int kvs_engine_tp_device(const struct kvs_engine_tp *t, int rank)
{
    return rank >= 0 && rank < t->world ? rank : -1;
}

uint32_t kvs_engine_tp_thread(const struct kvs_engine_tp *t, int rank)
{
    return rank >= 0 && rank < t->world ? t->r[rank].tid : 0;
}

const struct kvs_engine *kvs_engine_tp_engine(const struct kvs_engine_tp *t, int rank)
{
    return rank >= 0 && rank < t->world ? t->r[rank].e : NULL;
}
