/* capture_internal.h — the capture's state (struct kvs_trace), shared by
 * capture.c (CUPTI lifecycle, buffers, writing) and capture_host.c (NVTX
 * ranges and kvscope ops recorded on the calling threads), plus the few
 * entry points the injection library (inject.c) needs beyond kvscope/trace.h.
 *
 * defines: struct kvs_trace, kvs_capture_*, kvs_now_ns, kvs_gettid,
 *          kvs_demangle, KVS_HOOK_DOMAIN, KVS_TORCH_DOMAIN
 */
#ifndef KVSCOPE_CAPTURE_INTERNAL_H
#define KVSCOPE_CAPTURE_INTERNAL_H

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "annotate_internal.h"
#include "kvscope/trace.h"
#include "store.h"
#include "torch/kvs_torch_ops.h"
#include "writer_internal.h"

/* The NVTX-domain keys of ops that arrive through the hooks (no NVTX) and
 * from PyTorch's dispatcher (kvs_capture_torch_ops). */
#define KVS_HOOK_DOMAIN UINT64_MAX
#define KVS_TORCH_DOMAIN (UINT64_MAX - 1)

#define KVS_MAX_DOMAINS 64
#define KVS_MAX_DEVICES 64

struct kvs_trace {
    struct kvs_trace_config cfg;
    struct kvs_logger lg;
    char process_name[64];
    uint32_t pid;
    uint64_t gen;                    /* this capture's number in the process */
    CUpti_SubscriberHandle sub;
    int64_t clock_offset_ns;         /* CUPTI clock - CLOCK_MONOTONIC; 0 with our callback */
    int64_t base_time_ns;            /* CLOCK_REALTIME - CLOCK_MONOTONIC at create */
    const char *window;              /* "api", "all", "cudaProfilerStart" */
    struct kvs_trace_extra extra[KVS_TRACE_MAX_EXTRA]; /* kvs_trace_set_extra: owned copies */
    int nextra;

    struct kvs_pool pool;
    struct kvs_host_store host;

    atomic_int running;
    atomic_int watch_profiler;       /* start/stop follow cudaProfilerStart/Stop */
    int64_t window_start_ns, window_end_ns;
    unsigned kinds_on;               /* KVS_TRACE_* bits actually enabled */
    unsigned kinds_recorded;         /* kinds_on of every window so far: the trace says these */
    int api_fallback_said[2];        /* the fallback to every call was logged */
    int api_by_callback[2];          /* this window records the chosen calls by callback */
    int ext_by_cupti;                /* CUPTI records API calls: ops push external ids to it */
    atomic_ullong next_external_id;
    atomic_ullong cupti_dropped;
    atomic_ullong callback_ns;
    atomic_ullong host_overflow;     /* frames beyond the nesting limit */
    uint64_t flush_ns;

    struct kvs_annot_hooks hooks;

    /* NVTX state: domain names, registered strings, open start/end ranges */
    pthread_mutex_t nvtx_mu;
    uint64_t domain_handle[KVS_MAX_DOMAINS];
    const char *domain_name[KVS_MAX_DOMAINS]; /* interned in host store bytes */
    int ndomains;
    struct kvs_map reg_strings;      /* nvtxStringHandle_t -> interned name */
    struct kvs_map open_ranges;      /* nvtxRangeId_t -> stored record */

    /* devices, queried through the driver while it is alive (start, a new
     * context, or write) and kept: at exit the driver may be torn down */
    pthread_mutex_t dev_mu;
    struct kvs_trace_device *devices; /* KVS_MAX_DEVICES */
    int ndevices;
    void (*on_context)(void *user);   /* called on CUPTI's context-created callback */
    void *on_context_user;
    void (*on_attach)(void *user);    /* called once CUPTI is attached again after a detach */
    void *on_attach_user;

    /* CUDA graph nodes and what was open when each was created (capture_host.c) */
    pthread_mutex_t graph_mu;
    struct kvs_map graph_node_of;     /* CUPTI graph node id -> index + 1 into graph_nodes */
    struct kvs_trace_rec *graph_nodes; /* KVS_TREC_GRAPH_NODE records, one per node id */
    size_t ngraph_nodes, graph_nodes_cap;

    /* API calls recorded by callback (capture_api.c) */
    pthread_mutex_t api_mu;
    struct kvs_api_chunk *api_chunks; /* every thread's, newest first */
    size_t api_nchunks, api_max_chunks;
    uint8_t *api_want[2];            /* [runtime, driver][cbid]: KVS_API_* (kvs_capture_api_calls) */
    atomic_int api_on[2];            /* callbacks recording now */
    atomic_int api_ext;              /* they keep the op's External id (extcorr asked) */
    atomic_uint api_window;          /* bumped at each enable: stale open calls are dropped */
    atomic_int api_launch_by_driver; /* this window: runtime kernel launches (KVS_API_BY_DRIVER)
                                      * recorded by the driver launch each makes */
    int launches_by_driver;          /* some window did (the trace's kvscope.runtime_launches) */
    atomic_ullong api_dropped;       /* calls beyond the budget or the nesting depth */

    /* CUPTI detached between cudaProfilerStart windows (capture.c): a
     * thread of the capture's own finalizes CUPTI once a window has been
     * closed a while and subscribes again at once to what opens the next */
    int detach;                      /* KVS_CAPTURE_DETACH: 0 off (the default), 1 at an API
                                      * call's exit, 2 on the detacher thread ("thread") */
    atomic_int fin_req;              /* 1: the next API exit callback finalizes CUPTI */
    atomic_int fin_done;             /* it did (2: and its callback has returned) */
    int fin_result;                  /* what cuptiFinalize returned there */
    atomic_int fin_canceled;         /* a cudaProfilerStart came first: not finalized */
    atomic_int det_state;            /* 0 attached, 1 detaching: callbacks leave at once */
    atomic_uint attach_gen;          /* attachments after the first: records carry it */
    atomic_llong closed_at_ns;       /* the last window's close, while none is open; 0 else */
    atomic_int start_missed;         /* a cuProfilerStart came while detaching */
    int det_thread, det_stop, det_asked;
    pthread_t det_tid;
    pthread_mutex_t det_mu;
    pthread_cond_t det_cv;
    unsigned detaches;               /* done so far */
    atomic_uint windows_missed;      /* a stop without its start: the start came while detached */

    /* names made at write time */
    struct kvs_map demangled;        /* CUPTI name pointer -> malloc'd demangled name */
    char **api_names[2];             /* [runtime, driver][cbid] -> name without _vNNNN */
};

int64_t kvs_now_ns(void);            /* CLOCK_MONOTONIC */
uint32_t kvs_gettid(void);           /* system thread id, cached per thread */

/* Demangle a C++ name (malloc'd), or NULL if it is not one. */
char *kvs_demangle(const char *mangled);

/* capture_host.c: the NVTX callback (CUPTI_CB_DOMAIN_NVTX) and the hooks. */
void kvs_capture_nvtx(struct kvs_trace *t, CUpti_CallbackId cbid, const CUpti_NvtxData *d);
/* capture_host.c: a graph node created (CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
 * on the creating thread: what is open there is the node's context) or
 * cloned (_CLONED, at instantiation: the clone gets its original's). */
void kvs_capture_graph_node(struct kvs_trace *t, CUpti_CallbackId cbid, const CUpti_ResourceData *d);
/* capture_host.c: this thread begins (begin = 1, at the call's exit when it
 * succeeded) or ends (0, at the call's entry) a stream capture. While one is
 * open, ops and ranges are recorded even outside the capture window: the
 * graph's replays inside the window are given them. */
void kvs_capture_stream_capture(int begin);
/* Stream captures open on every thread now. */
int kvs_capture_streams_open(void);
/* Runtime/driver callback ids of the stream-capture calls above: 1 begin,
 * 0 end, -1 neither. */
int kvs_capture_stream_capture_cbid(int driver, CUpti_CallbackId cbid);
void kvs_capture_hooks_init(struct kvs_trace *t);
/* capture_host.c: the External id of the innermost op open on this thread
 * (0: none), for the API calls recorded by callback. */
uint64_t kvs_capture_current_op(const struct kvs_trace *t);
/* capture_host.c: PyTorch's ops (libtrace/torch/kvs_torch_ops.h). The
 * table the hook inside the program calls; it records into the capture
 * attached (NULL: none, every op is left out). Attach once the capture has
 * started and keep it alive while the program runs. */
const struct kvs_torch_ops *kvs_capture_torch_ops(void);
void kvs_capture_torch_attach(struct kvs_trace *t);
/* Tell the hook's switch whether ops can be recorded now: after the
 * attached capture's running changed (capture.c's enable/disable_kinds;
 * stream captures tell it themselves). */
void kvs_capture_torch_update(void);
int kvs_capture_host_init(struct kvs_trace *t);  /* 0 ok */
void kvs_capture_host_free(struct kvs_trace *t);

/* capture_api.c: the default runtime/driver calls, recorded by callbacks.
 * enable (on = 1) turns the callbacks of every call kvs_trace_api_recorded
 * names on (0: off, but the stream-capture calls'); -1 if CUPTI refused one
 * (then nothing of that API is recorded this way). callback: from
 * on_callback for a call wanted() says is recorded. collect: the records
 * (name from name(t, driver, cbid)), and into alias the inner driver calls'
 * correlation ids -> their runtime call's. */
void kvs_capture_api_init(struct kvs_trace *t);
void kvs_capture_api_free(struct kvs_trace *t);
int kvs_capture_api_enable(struct kvs_trace *t, int driver, int on);
/* Every call id of the API: KVS_API_RECORDED (kvs_trace_api_recorded names
 * it), KVS_API_BY_DRIVER (a recorded runtime call that launches kernels,
 * kvs_trace_api_kernel_launch: no callback of its own while the driver's
 * calls are recorded by callback, api_launch_by_driver — the driver launch
 * it makes is recorded instead), KVS_API_LEFT_OUT, or 0 (no such call in
 * this CUPTI); chosen once. NULL without memory. The activity-record
 * fallback turns the left-out ones off. */
enum { KVS_API_RECORDED = 1, KVS_API_LEFT_OUT = 2, KVS_API_BY_DRIVER = 3 };
const uint8_t *kvs_capture_api_calls(struct kvs_trace *t, int driver);
int kvs_capture_api_wanted(const struct kvs_trace *t, int driver, CUpti_CallbackId cbid);
void kvs_capture_api_callback(struct kvs_trace *t, int driver, CUpti_CallbackId cbid,
                              const CUpti_CallbackData *cd);
size_t kvs_capture_api_count(struct kvs_trace *t);
/* off (NULL: none): per attachment (attach_gen), added to every correlation
 * id of a call recorded then; ngen entries. */
size_t kvs_capture_api_collect(struct kvs_trace *t, struct kvs_trace_rec *out, size_t cap,
                               const char *(*name)(void *, int, uint32_t), struct kvs_map *alias,
                               int *failed, const uint32_t *off, uint32_t ngen);
/* The smallest and largest correlation id of the calls recorded under each
 * attachment g < ngen (lo[g] = UINT32_MAX, hi[g] = 0 where none). */
void kvs_capture_api_corr_range(struct kvs_trace *t, uint32_t ngen, uint32_t *lo, uint32_t *hi);

/* For inject.c: begin/end recording whenever the program calls
 * cudaProfilerStart/cudaProfilerStop instead of now. */
enum kvs_status kvs_capture_follow_profiler_api(struct kvs_trace *t, const char *window_name);
/* Query and keep the properties of every device (through the driver, which
 * is looked up at run time). init_driver: call cuInit first; else fail
 * until the program has initialised CUDA. Returns how many, -1 without a
 * driver. Never from inside a CUDA or CUPTI callback. */
int kvs_capture_query_devices(struct kvs_trace *t, int init_driver);

/* fn(user) runs inside CUPTI's callbacks when a CUDA context is created and
 * when CUPTI asks for a buffer while the devices are unknown: it must only
 * hand work to another thread (e.g. kvs_capture_query_devices). */
void kvs_capture_on_context(struct kvs_trace *t, void (*fn)(void *), void *user);

/* fn(user) runs on the capture's detacher thread (no CUDA or CUPTI
 * callback) each time CUPTI has been attached again after a detach between
 * windows, before a window can open (inject.c: NVTX handed to CUPTI again). */
void kvs_capture_on_attach(struct kvs_trace *t, void (*fn)(void *), void *user);

/* Start without touching the CUDA driver (safe inside InitializeInjection). */
enum kvs_status kvs_capture_start_quiet(struct kvs_trace *t, const char *window_name);

#endif /* KVSCOPE_CAPTURE_INTERNAL_H */
