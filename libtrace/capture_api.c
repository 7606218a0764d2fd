/* capture_api.c — the CUDA API calls of the default `runtime` and `driver`
 * activities (the calls kvs_trace_api_recorded names: launches, copies,
 * memsets, synchronizations, graph launches and captures), recorded by CUPTI
 * callbacks on exactly those calls into per-thread chunks, instead of
 * CUPTI's RUNTIME/DRIVER activity records.
 *
 * Why (bench/cupti_cost.cu measures it in one process; docs/capture.md): turning
 * CUPTI's RUNTIME kind on costs every runtime call of the program, recorded
 * or not — PyTorch makes five cudaGetDevice and a cudaGetLastError around
 * each launch — and asking it for chosen calls costs about as much as the
 * whole kind. A callback enabled on a call costs only that call, and what
 * it keeps here is 32 bytes: the correlation id (the one CUPTI gives the
 * call's GPU work), enter and exit times on the trace's clock, the call.
 *
 * Kernel launches, the hot call: every launch, the runtime's too, goes
 * through the driver's launch call (cudaLaunchKernel makes cuLaunchKernel,
 * with the same correlation id: 160,000 of 160,000 on the H200, CUDA 13),
 * and each callback costs CUPTI ~100 ns more than the handler's own work
 * (bench/cupti_cost.cu: callbacks on the runtime's and the driver's calls
 * +1,099 ns a launch over no callback's +659, on the driver's alone +809).
 * So while the driver's calls are recorded by callback (the default), a
 * runtime kernel launch (kvs_trace_api_kernel_launch) gets no callback: it
 * is in the trace as the driver launch it makes (cuLaunchKernel, category
 * cuda_driver). With `runtime` asked for without `driver` it is recorded as
 * itself; `runtime-all` records every runtime call through CUPTI.
 *
 * Each thread writes its own chunk (no lock on the way; a lock only to get
 * a new chunk). A driver call made inside a recorded runtime call (the
 * runtime's own cuMemcpyAsync under cudaMemcpyAsync) is not a record of
 * its own — CUPTI's activity API does not list it either — but a link from
 * its correlation id to the runtime call's, so GPU work that carries the
 * inner id still finds its call (on the H200, CUDA 13, the inner call has
 * the outer one's id: nothing to link). Each record also keeps the External
 * id of the op open on the thread (kvs_capture_current_op), as CUPTI's
 * external correlation would: the writer gets a KVS_TREC_EXTERNAL_ID link
 * for it, so GPU work carries its op's id. Memory is bounded: a budget of
 * its own as large as the CUPTI buffers' (--buffer-mb x --max-buffers,
 * allocated as used); beyond it calls are dropped and counted in the
 * trace's dropped_records. The chunks are read after the capture stopped
 * (kvs_capture_api_collect).
 */
#include <stdlib.h>
#include <string.h>

#include "capture_internal.h"

#define API_CHUNK_RECS 2040 /* ~64 KiB a chunk */
#define API_DEPTH 8         /* recorded calls open at once on one thread */

struct api_rec {
    int64_t start_ns, end_ns;
    uint64_t ext;      /* the External id of the op open on the thread at the call; 0 none */
    uint32_t corr;
    uint32_t alias_of; /* != 0: not a call; corr is an inner driver call of this runtime call */
    uint16_t cbid;
    uint8_t driver;
    uint8_t pad;
    uint32_t gen;      /* the CUPTI attachment it was recorded under (kvs_trace.attach_gen) */
};

struct kvs_api_chunk {
    struct kvs_api_chunk *next;
    uint32_t tid;
    _Atomic uint32_t n; /* records written: released by the owner, read after stop */
    struct api_rec r[API_CHUNK_RECS];
};

struct open_call {
    int64_t t0;
    uint32_t corr;
    uint16_t cbid;
    uint8_t driver;
};

static _Thread_local struct {
    uint64_t gen;    /* the capture this state belongs to */
    unsigned window; /* and its window (kvs_capture_api_enable's count) */
    struct kvs_api_chunk *c;
    int full; /* no chunk to be had: drop without asking again */
    int depth;
    struct open_call open[API_DEPTH];
} t_api;

void kvs_capture_api_init(struct kvs_trace *t)
{
    pthread_mutex_init(&t->api_mu, NULL);
    size_t budget = t->cfg.buffer_bytes * (size_t)t->cfg.max_buffers;
    t->api_max_chunks = budget / sizeof(struct kvs_api_chunk);
    if (t->api_max_chunks < 1)
        t->api_max_chunks = 1;
}

void kvs_capture_api_free(struct kvs_trace *t)
{
    struct kvs_api_chunk *c = t->api_chunks;
    while (c) {
        struct kvs_api_chunk *next = c->next;
        free(c);
        c = next;
    }
    t->api_chunks = NULL;
    for (int d = 0; d < 2; d++)
        free(t->api_want[d]);
    pthread_mutex_destroy(&t->api_mu);
}

static struct kvs_api_chunk *new_chunk(struct kvs_trace *t)
{
    struct kvs_api_chunk *c = NULL;
    pthread_mutex_lock(&t->api_mu);
    if (t->api_nchunks < t->api_max_chunks && (c = malloc(sizeof *c)) != NULL) {
        c->next = t->api_chunks;
        c->tid = kvs_gettid();
        atomic_store_explicit(&c->n, 0, memory_order_relaxed);
        t->api_chunks = c;
        t->api_nchunks++;
    }
    pthread_mutex_unlock(&t->api_mu);
    return c;
}

static void keep(struct kvs_trace *t, const struct api_rec *r)
{
    struct kvs_api_chunk *c = t_api.c;
    uint32_t n = c ? atomic_load_explicit(&c->n, memory_order_relaxed) : API_CHUNK_RECS;
    if (n == API_CHUNK_RECS) {
        c = t_api.full ? NULL : new_chunk(t);
        t_api.c = c;
        if (!c) {
            t_api.full = 1;
            atomic_fetch_add(&t->api_dropped, 1);
            return;
        }
        n = 0;
    }
    c->r[n] = *r;
    atomic_store_explicit(&c->n, n + 1, memory_order_release);
}

void kvs_capture_api_callback(struct kvs_trace *t, int driver, CUpti_CallbackId cbid,
                              const CUpti_CallbackData *cd)
{
    if (!atomic_load_explicit(&t->api_on[driver], memory_order_relaxed))
        return;
    unsigned window = atomic_load_explicit(&t->api_window, memory_order_relaxed);
    if (t_api.gen != t->gen) { /* a new capture: nothing of the last one is ours */
        memset(&t_api, 0, sizeof t_api);
        t_api.gen = t->gen;
        t_api.window = window;
    } else if (t_api.window != window) {
        /* a new window: calls open before it are not ours; the thread's
         * chunk is, and fills on (a program that opens a window per step
         * would otherwise spend the budget on part-filled chunks) */
        t_api.depth = 0;
        t_api.full = 0;
        t_api.window = window;
    }
    if (cd->callbackSite == CUPTI_API_ENTER) {
        /* a driver call inside a recorded runtime call (the runtime's own
         * cuLaunchKernel): no record, and no clock read; its exit finds no
         * open call of its own. With an id of its own it is a link. */
        int top = t_api.depth - 1;
        if (driver && top >= 0 && top < API_DEPTH && !t_api.open[top].driver) {
            if (cd->correlationId != t_api.open[top].corr) {
                struct api_rec link = {0};
                link.corr = cd->correlationId;
                link.alias_of = t_api.open[top].corr;
                link.driver = 1;
                link.gen = atomic_load_explicit(&t->attach_gen, memory_order_relaxed);
                keep(t, &link);
            }
            return;
        }
        if (t_api.depth < API_DEPTH)
            t_api.open[t_api.depth] =
                (struct open_call){kvs_now_ns(), cd->correlationId, (uint16_t)cbid, (uint8_t)driver};
        t_api.depth++;
        return;
    }
    if (t_api.depth > API_DEPTH) { /* a call beyond the depth kept: lost, counted */
        t_api.depth--;
        atomic_fetch_add(&t->api_dropped, 1);
        return;
    }
    /* the innermost open call that this exit ends (an exit whose entry came
     * before recording began ends none) */
    int i = t_api.depth - 1;
    while (i >= 0 && !(t_api.open[i].cbid == cbid && t_api.open[i].driver == driver &&
                       t_api.open[i].corr == cd->correlationId))
        i--;
    if (i < 0)
        return;
    int64_t now = kvs_now_ns();
    t_api.depth = i;
    uint64_t ext = atomic_load_explicit(&t->api_ext, memory_order_relaxed) ? kvs_capture_current_op(t) : 0;
    struct api_rec r = {t_api.open[i].t0, now, ext, cd->correlationId, 0,
                        (uint16_t)cbid, (uint8_t)driver, 0,
                        atomic_load_explicit(&t->attach_gen, memory_order_relaxed)};
    keep(t, &r);
}

int kvs_capture_api_wanted(const struct kvs_trace *t, int driver, CUpti_CallbackId cbid)
{
    size_t lim = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    if (!t->api_want[driver] || cbid >= lim)
        return 0;
    uint8_t w = t->api_want[driver][cbid];
    return w == KVS_API_RECORDED ||
           (w == KVS_API_BY_DRIVER &&
            !atomic_load_explicit(&t->api_launch_by_driver, memory_order_relaxed));
}

const uint8_t *kvs_capture_api_calls(struct kvs_trace *t, int driver)
{
    if (!t->api_want[driver]) { /* chosen once by CUPTI's names */
        CUpti_CallbackDomain dom = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
        uint32_t lim = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
        uint8_t *want = calloc(lim, 1);
        if (!want)
            return NULL;
        for (uint32_t cbid = 1; cbid < lim; cbid++) {
            const char *nm = NULL;
            if (cuptiGetCallbackName(dom, cbid, &nm) == CUPTI_SUCCESS && nm)
                want[cbid] = !kvs_trace_api_recorded(nm)              ? KVS_API_LEFT_OUT
                             : !driver && kvs_trace_api_kernel_launch(nm) ? KVS_API_BY_DRIVER
                                                                          : KVS_API_RECORDED;
        }
        t->api_want[driver] = want;
    }
    return t->api_want[driver];
}

int kvs_capture_api_enable(struct kvs_trace *t, int driver, int on)
{
    CUpti_CallbackDomain dom = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    uint32_t lim = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    const uint8_t *want = kvs_capture_api_calls(t, driver);
    if (!want)
        return -1;
    if (!on)
        atomic_store(&t->api_on[driver], 0);
    int refused = 0;
    for (uint32_t cbid = 1; cbid < lim; cbid++) {
        if (want[cbid] != KVS_API_RECORDED && want[cbid] != KVS_API_BY_DRIVER)
            continue;
        if (on && want[cbid] == KVS_API_BY_DRIVER && atomic_load(&t->api_launch_by_driver))
            continue; /* its driver launch is recorded */
        /* the driver's stream-capture calls keep their callback: graphs are
         * followed outside the window too (capture.c follow_graphs); the
         * runtime's make them, so outside a window no runtime call has one */
        if (!on && driver && kvs_capture_stream_capture_cbid(driver, cbid) >= 0)
            continue;
        refused += cuptiEnableCallback((uint32_t)on, t->sub, dom, cbid) != CUPTI_SUCCESS;
    }
    if (on && !refused) {
        atomic_fetch_add(&t->api_window, 1);
        atomic_store(&t->api_on[driver], 1);
    }
    return refused ? -1 : 0;
}

size_t kvs_capture_api_count(struct kvs_trace *t)
{
    size_t n = 0;
    pthread_mutex_lock(&t->api_mu);
    for (struct kvs_api_chunk *c = t->api_chunks; c; c = c->next) {
        uint32_t k = atomic_load_explicit(&c->n, memory_order_acquire);
        for (uint32_t i = 0; i < k; i++) /* a call, or a link; a call in an op: both */
            n += c->r[i].alias_of ? 0 : 1 + (c->r[i].ext != 0);
    }
    pthread_mutex_unlock(&t->api_mu);
    return n;
}

void kvs_capture_api_corr_range(struct kvs_trace *t, uint32_t ngen, uint32_t *lo, uint32_t *hi)
{
    for (uint32_t g = 0; g < ngen; g++) {
        lo[g] = UINT32_MAX;
        hi[g] = 0;
    }
    pthread_mutex_lock(&t->api_mu);
    for (struct kvs_api_chunk *c = t->api_chunks; c; c = c->next) {
        uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++) {
            const struct api_rec *r = &c->r[i];
            if (r->gen >= ngen || !r->corr)
                continue;
            if (r->corr < lo[r->gen])
                lo[r->gen] = r->corr;
            if (r->corr > hi[r->gen])
                hi[r->gen] = r->corr;
        }
    }
    pthread_mutex_unlock(&t->api_mu);
}

size_t kvs_capture_api_collect(struct kvs_trace *t, struct kvs_trace_rec *out, size_t cap,
                               const char *(*name)(void *, int, uint32_t),
                               struct kvs_map *alias, int *failed, const uint32_t *off,
                               uint32_t ngen)
{
    size_t k = 0;
    pthread_mutex_lock(&t->api_mu);
    for (struct kvs_api_chunk *c = t->api_chunks; c; c = c->next) {
        uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++) {
            struct api_rec rr = c->r[i];
            const struct api_rec *r = &rr;
            if (off && rr.gen < ngen && off[rr.gen]) { /* ids CUPTI gave again after a detach */
                rr.corr += off[rr.gen];
                if (rr.alias_of)
                    rr.alias_of += off[rr.gen];
            }
            if (r->alias_of) {
                if (alias && kvs_map_put(alias, r->corr, r->alias_of) != 0 && failed)
                    *failed = 1;
                continue;
            }
            if (k + 1 + (r->ext != 0) > cap)
                break;
            if (r->ext) { /* the op's id on the call and its work */
                struct kvs_trace_rec *x = &out[k++];
                memset(x, 0, sizeof *x);
                x->kind = KVS_TREC_EXTERNAL_ID;
                x->correlation = r->corr;
                x->u.external_id = r->ext;
            }
            struct kvs_trace_rec *o = &out[k++];
            memset(o, 0, sizeof *o);
            o->kind = r->driver ? KVS_TREC_DRIVER : KVS_TREC_RUNTIME;
            o->correlation = r->corr;
            o->start_ns = r->start_ns;
            o->end_ns = r->end_ns;
            o->name = name ? name(t, r->driver, r->cbid) : NULL;
            if (!o->name)
                o->name = r->driver ? "cuda driver call" : "cuda runtime call";
            o->u.api.pid = t->pid;
            o->u.api.tid = c->tid;
            o->u.api.cbid = r->cbid;
        }
    }
    pthread_mutex_unlock(&t->api_mu);
    return k;
}
