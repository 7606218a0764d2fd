/* writer.c — plain trace records -> Kineto-compatible Chrome-trace JSON
 * (kvscope/trace_writer.h). No CUDA here: tests/test_trace_writer.c feeds it
 * synthetic records and checks the output with Python's json module.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "kvscope/trace.h"
#include "kvscope/trace_writer.h"
#include "writer_internal.h"

void kvs_trace_meta_init(struct kvs_trace_meta *meta)
{
    memset(meta, 0, sizeof *meta);
    meta->rank = -1;
}

// ----------------------------------------------------------------------------
// indices built once per write

struct index {
    struct kvs_map ext_of;    /* correlation -> external id */
    struct kvs_map api_of;    /* correlation -> index of the runtime/driver record */
    struct kvs_map launched;  /* correlations that have GPU work */
    struct kvs_map dev_of_ctx;/* context -> device */
    struct kvs_map streams;   /* device << 32 | stream, GPU tracks seen */
    struct kvs_map threads;   /* pid << 32 | tid, CPU tracks seen */
    struct kvs_map node_of;   /* graph node id -> index of its KVS_TREC_GRAPH_NODE record */
    const struct kvs_trace_rec *recs;
    struct kvs_gpu_span *spans;
    size_t nspans;
    uint64_t kernels_without_call; /* kernels_without_launch() */
};

static int is_gpu(enum kvs_trace_rec_kind k)
{
    return k == KVS_TREC_KERNEL || k == KVS_TREC_MEMCPY || k == KVS_TREC_MEMSET;
}

static void index_free(struct index *x)
{
    kvs_map_free(&x->ext_of);
    kvs_map_free(&x->api_of);
    kvs_map_free(&x->launched);
    kvs_map_free(&x->dev_of_ctx);
    kvs_map_free(&x->streams);
    kvs_map_free(&x->threads);
    kvs_map_free(&x->node_of);
    free(x->spans);
}

/* The API calls were recorded (meta.activities names runtime or driver
 * calls): the kernels whose launch call is not in these records — not tied
 * to their launch thread, op or range — counted (the trace's
 * kvscope.kernels_without_call) and said. A runtime that launched through
 * a call kvscope does not record would show here. */
static void kernels_without_launch(struct index *x, const struct kvs_trace_meta *m, size_t n,
                                   const struct kvs_logger *lg)
{
    if (!(m->activities & (KVS_TRACE_RUNTIME | KVS_TRACE_RUNTIME_ALL | KVS_TRACE_DRIVER |
                           KVS_TRACE_DRIVER_ALL)))
        return;
    size_t nkernels = 0, unlinked = 0;
    for (size_t i = 0; i < n; i++)
        if (x->recs[i].kind == KVS_TREC_KERNEL) {
            nkernels++;
            unlinked += !kvs_map_get(&x->api_of, x->recs[i].correlation, NULL);
        }
    x->kernels_without_call = unlinked;
    if (nkernels && !x->api_of.n) /* on the H200 a way of asking CUPTI for some calls only once recorded none */
        kvs_log(lg, KVS_LOG_WARN,
                "CUPTI recorded %zu kernels but no CUDA API call although asked to: the "
                "trace cannot tie kernels to their launches (steps, flows, ranges on the "
                "GPU); try --activities all",
                nkernels);
    else if (unlinked)
        kvs_log(lg, KVS_LOG_WARN,
                "%zu of %zu kernels have no launch call in the trace (kvscope.kernels_without_call): "
                "they are not tied to their launch thread, op or range; calls dropped for the "
                "memory budget, a launch API left out of --activities, or a CUDA that launched "
                "through a call kvscope does not record (try --activities all)",
                unlinked, nkernels);
}

static int index_build(struct index *x, const struct kvs_trace_rec *recs, size_t n)
{
    memset(x, 0, sizeof *x);
    x->recs = recs;
    size_t next = 0, napi = 0, ngpu = 0, nnode = 0;
    for (size_t i = 0; i < n; i++) {
        next += recs[i].kind == KVS_TREC_EXTERNAL_ID;
        nnode += recs[i].kind == KVS_TREC_GRAPH_NODE;
        napi += recs[i].kind == KVS_TREC_RUNTIME || recs[i].kind == KVS_TREC_DRIVER;
        ngpu += is_gpu(recs[i].kind);
    }
    if (kvs_map_init(&x->ext_of, next) || kvs_map_init(&x->api_of, napi) ||
        kvs_map_init(&x->launched, ngpu) || kvs_map_init(&x->dev_of_ctx, 8) ||
        kvs_map_init(&x->streams, 16) || kvs_map_init(&x->threads, 16) ||
        kvs_map_init(&x->node_of, nnode))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct kvs_trace_rec *r = &recs[i];
        int rc = 0;
        switch (r->kind) {
        case KVS_TREC_EXTERNAL_ID:
            rc = kvs_map_put(&x->ext_of, r->correlation, r->u.external_id);
            break;
        case KVS_TREC_RUNTIME:
        case KVS_TREC_DRIVER:
            if (r->correlation)
                rc = kvs_map_put(&x->api_of, r->correlation, i);
            rc |= kvs_map_put(&x->threads, (uint64_t)r->u.api.pid << 32 | r->u.api.tid, 1);
            break;
        case KVS_TREC_KERNEL:
        case KVS_TREC_MEMCPY:
        case KVS_TREC_MEMSET:
            /* the first: a graph launch runs many, and a flow has one end */
            if (r->correlation && !kvs_map_get(&x->launched, r->correlation, NULL))
                rc = kvs_map_put(&x->launched, r->correlation, i);
            rc |= kvs_map_put(&x->dev_of_ctx, r->u.gpu.context, r->u.gpu.device);
            rc |= kvs_map_put(&x->streams, (uint64_t)r->u.gpu.device << 32 | r->u.gpu.stream, 1);
            break;
        case KVS_TREC_RANGE:
        case KVS_TREC_OP:
            rc = kvs_map_put(&x->threads, (uint64_t)r->u.host.pid << 32 | r->u.host.tid, 1);
            break;
        case KVS_TREC_GRAPH_NODE:
            if (r->u.node.node_id)
                rc = kvs_map_put(&x->node_of, r->u.node.node_id, i);
            break;
        default:
            break;
        }
        if (rc)
            return -1;
    }
    return kvs_project_ranges(recs, n, &x->api_of, &x->node_of, &x->spans, &x->nspans);
}

// ----------------------------------------------------------------------------
// events

static const struct kvs_trace_device *device_by_id(const struct kvs_trace_meta *m, uint32_t id)
{
    for (int i = 0; i < m->ndevices; i++)
        if (m->devices[i].id == (int)id)
            return &m->devices[i];
    return NULL;
}

/* "ph": "X" event head up to and including "dur". */
static void x_head(struct kvs_out *o, const char *cat, const char *name, int64_t pid, int64_t tid,
                   int64_t start, int64_t end)
{
    kvs_out_fmt(o, "  {\"ph\": \"X\", \"cat\": \"%s\", \"name\": ", cat);
    kvs_out_json_string(o, name);
    kvs_out_fmt(o, ", \"pid\": %lld, \"tid\": %lld, \"ts\": ", (long long)pid, (long long)tid);
    kvs_out_us(o, start);
    kvs_out_str(o, ", \"dur\": ");
    kvs_out_us(o, end > start ? end - start : 0);
}

static void ext_arg(struct kvs_out *o, const struct index *x, uint32_t correlation)
{
    uint64_t ext;
    if (correlation && kvs_map_get(&x->ext_of, correlation, &ext))
        kvs_out_fmt(o, "\"External id\": %llu, ", (unsigned long long)ext);
}

/* Work a graph replays: the op its node was created under, when one was
 * open, rather than whatever encloses the graph launch. */
static void gpu_ext_arg(struct kvs_out *o, const struct index *x, const struct kvs_trace_rec *r)
{
    uint64_t at;
    if (r->u.gpu.graph_node_id && kvs_map_get(&x->node_of, r->u.gpu.graph_node_id, &at) &&
        x->recs[at].u.node.external_id) {
        kvs_out_fmt(o, "\"External id\": %llu, ",
                    (unsigned long long)x->recs[at].u.node.external_id);
        return;
    }
    ext_arg(o, x, r->correlation);
}

static void flow(struct kvs_out *o, const char *ph, uint32_t id, int64_t pid, int64_t tid,
                 int64_t ts)
{
    kvs_out_fmt(o, ",\n  {\"ph\": \"%s\", \"id\": %u, \"pid\": %lld, \"tid\": %lld, \"ts\": ", ph,
                id, (long long)pid, (long long)tid);
    kvs_out_us(o, ts);
    kvs_out_str(o, ", \"cat\": \"ac2g\", \"name\": \"ac2g\"");
    if (ph[0] == 'f')
        kvs_out_str(o, ", \"bp\": \"e\"");
    kvs_out_str(o, "}");
}

static void write_gpu(struct kvs_out *o, const struct kvs_trace_meta *m, const struct index *x,
                      const struct kvs_trace_rec *r)
{
    const struct kvs_trace_gpu *g = &r->u.gpu;
    char name[160];
    const char *nm = r->name;
    const char *cat = r->kind == KVS_TREC_KERNEL ? "kernel"
                      : r->kind == KVS_TREC_MEMCPY ? "gpu_memcpy"
                                                   : "gpu_memset";
    if (!nm && r->kind == KVS_TREC_MEMCPY) {
        snprintf(name, sizeof name, "Memcpy %s (%s -> %s)", g->copy_kind ? g->copy_kind : "?",
                 g->src_kind ? g->src_kind : "Unknown", g->dst_kind ? g->dst_kind : "Unknown");
        nm = name;
    } else if (!nm && r->kind == KVS_TREC_MEMSET) {
        snprintf(name, sizeof name, "Memset (%s)", g->dst_kind ? g->dst_kind : "Unknown");
        nm = name;
    }
    x_head(o, cat, nm, g->device, g->stream, r->start_ns, r->end_ns);
    kvs_out_str(o, ", \"args\": {");
    gpu_ext_arg(o, x, r);
    if (r->kind == KVS_TREC_KERNEL)
        kvs_out_str(o, "\"queued\": 0, ");
    kvs_out_fmt(o, "\"device\": %u, \"context\": %u, \"stream\": %u, \"correlation\": %u", g->device,
                g->context, g->stream, r->correlation);
    if (g->graph_node_id) /* Kineto's keys */
        kvs_out_fmt(o, ", \"graph id\": %u, \"graph node id\": %llu", g->graph_id,
                    (unsigned long long)g->graph_node_id);
    if (r->kind == KVS_TREC_KERNEL) {
        kvs_out_fmt(o, ", \"registers per thread\": %u, \"shared memory\": %d", g->registers,
                    g->shared_mem);
        const struct kvs_trace_device *d = device_by_id(m, g->device);
        if (d && d->num_sms > 0) {
            double blocks = (double)g->grid[0] * g->grid[1] * g->grid[2];
            long threads = (long)g->block[0] * g->block[1] * g->block[2];
            int warp = d->warp_size > 0 ? d->warp_size : 32;
            double warps = blocks * (double)((threads + warp - 1) / warp);
            kvs_out_fmt(o, ", \"blocks per SM\": %.6f, \"warps per SM\": %.6f",
                        blocks / d->num_sms, warps / d->num_sms);
        }
        kvs_out_fmt(o, ", \"grid\": [%d, %d, %d], \"block\": [%d, %d, %d]", g->grid[0], g->grid[1],
                    g->grid[2], g->block[0], g->block[1], g->block[2]);
    } else {
        int64_t dur = r->end_ns - r->start_ns;
        kvs_out_fmt(o, ", \"bytes\": %llu, \"memory bandwidth (GB/s)\": ",
                    (unsigned long long)g->bytes);
        kvs_out_double(o, dur > 0 ? (double)g->bytes / (double)dur : 0.0); /* bytes/ns = GB/s */
    }
    kvs_out_str(o, "}}");
    uint64_t api, first;
    if (r->correlation && kvs_map_get(&x->api_of, r->correlation, &api) &&
        kvs_map_get(&x->launched, r->correlation, &first) && x->recs + first == r)
        flow(o, "f", r->correlation, g->device, g->stream, r->start_ns);
}

static void write_api(struct kvs_out *o, const struct index *x, const struct kvs_trace_rec *r)
{
    const struct kvs_trace_api *a = &r->u.api;
    x_head(o, r->kind == KVS_TREC_RUNTIME ? "cuda_runtime" : "cuda_driver", r->name, a->pid, a->tid,
           r->start_ns, r->end_ns);
    kvs_out_str(o, ", \"args\": {");
    ext_arg(o, x, r->correlation);
    kvs_out_fmt(o, "\"cbid\": %u, \"correlation\": %u}}", a->cbid, r->correlation);
    if (r->correlation && kvs_map_get(&x->launched, r->correlation, NULL))
        flow(o, "s", r->correlation, a->pid, a->tid, r->start_ns);
}

static void write_sync(struct kvs_out *o, const struct index *x, const struct kvs_trace_rec *r)
{
    const struct kvs_trace_sync *s = &r->u.sync;
    uint64_t dev = 0;
    kvs_map_get(&x->dev_of_ctx, s->context, &dev);
    x_head(o, "cuda_sync", r->name, (int64_t)dev, s->stream, r->start_ns, r->end_ns);
    kvs_out_str(o, ", \"args\": {");
    ext_arg(o, x, r->correlation);
    kvs_out_str(o, "\"cuda_sync_kind\": ");
    kvs_out_json_string(o, r->name);
    if (s->event_id >= 0)
        kvs_out_fmt(o, ", \"wait_on_cuda_event_id\": %d", s->event_id);
    kvs_out_fmt(o, ", \"stream\": %d, \"correlation\": %u, \"device\": %llu, \"context\": %u}}",
                s->stream, r->correlation, (unsigned long long)dev, s->context);
}

static void write_host(struct kvs_out *o, const struct kvs_trace_rec *r)
{
    const struct kvs_trace_host *h = &r->u.host;
    x_head(o, r->kind == KVS_TREC_OP ? "cpu_op" : "user_annotation", r->name, h->pid, h->tid,
           r->start_ns, r->end_ns);
    kvs_out_fmt(o, ", \"args\": {\"External id\": %llu", (unsigned long long)h->external_id);
    if (h->domain) {
        kvs_out_str(o, ", \"domain\": ");
        kvs_out_json_string(o, h->domain);
    }
    if (r->kind == KVS_TREC_OP && h->has_sequence)
        kvs_out_fmt(o, ", \"Sequence number\": %lld, \"Fwd thread id\": %lld",
                    (long long)h->sequence_nr, (long long)h->fwd_tid);
    if (r->kind == KVS_TREC_OP && kvs_json_shape_ok(h->input_dims) &&
        kvs_json_shape_ok(h->input_types)) {
        /* PyTorch's own text (any other is written as no shapes) */
        kvs_out_str(o, ", \"Input type\": ");
        kvs_out_str(o, h->input_types);
        kvs_out_str(o, ", \"Input Dims\": ");
        kvs_out_str(o, h->input_dims);
    } else if (r->kind == KVS_TREC_OP) {
        kvs_out_str(o, ", \"Input type\": [");
        for (int i = 0; i < h->ntensors; i++) {
            if (i)
                kvs_out_str(o, ", ");
            kvs_out_json_string(o, h->tensors[i].dtype);
        }
        kvs_out_str(o, "], \"Input Dims\": [");
        for (int i = 0; i < h->ntensors; i++) {
            const struct kvs_tensor_desc *t = &h->tensors[i];
            int rank = t->rank < 0 ? 0 : t->rank > KVS_TENSOR_MAX_RANK ? KVS_TENSOR_MAX_RANK : t->rank;
            kvs_out_str(o, i ? ", [" : "[");
            for (int d = 0; d < rank; d++)
                kvs_out_fmt(o, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
            kvs_out_str(o, "]");
        }
        kvs_out_str(o, "]");
    }
    kvs_out_str(o, "}}");
}

/* One traceEvents entry (plus its flow) per record but EXTERNAL_ID. */
static void write_rec(struct kvs_out *o, const struct kvs_trace_meta *m, const struct index *x,
                     const struct kvs_trace_rec *r)
{
    switch (r->kind) {
    case KVS_TREC_KERNEL:
    case KVS_TREC_MEMCPY:
    case KVS_TREC_MEMSET:
        write_gpu(o, m, x, r);
        break;
    case KVS_TREC_RUNTIME:
    case KVS_TREC_DRIVER:
        write_api(o, x, r);
        break;
    case KVS_TREC_SYNC:
        write_sync(o, x, r);
        break;
    case KVS_TREC_OVERHEAD:
        x_head(o, "overhead", r->name, -1, 0, r->start_ns, r->end_ns);
        kvs_out_str(o, "}");
        break;
    case KVS_TREC_RANGE:
    case KVS_TREC_OP:
        write_host(o, r);
        break;
    case KVS_TREC_EXTERNAL_ID:
    case KVS_TREC_GRAPH_NODE:
        break;
    }
}

// ----------------------------------------------------------------------------
// metadata: the header object, the kvscope object, process/thread names

static void write_devices(struct kvs_out *o, const struct kvs_trace_meta *m)
{
    kvs_out_str(o, "  \"deviceProperties\": [");
    for (int i = 0; i < m->ndevices; i++) {
        const struct kvs_trace_device *d = &m->devices[i];
        kvs_out_fmt(o, "%s\n    {\"id\": %d, \"name\": ", i ? "," : "", d->id);
        kvs_out_json_string(o, d->name);
        kvs_out_fmt(o,
                    ", \"totalGlobalMem\": %llu, \"computeMajor\": %d, \"computeMinor\": %d, "
                    "\"maxThreadsPerBlock\": %d, \"maxThreadsPerMultiprocessor\": %d, "
                    "\"regsPerBlock\": %d, \"warpSize\": %d, \"sharedMemPerBlock\": %d, "
                    "\"numSms\": %d, ",
                    (unsigned long long)d->total_global_mem, d->compute_major, d->compute_minor,
                    d->max_threads_per_block, d->max_threads_per_mp, d->regs_per_block,
                    d->warp_size, d->shared_mem_per_block, d->num_sms);
        kvs_out_fmt(o,
                    "\"regsPerMultiprocessor\": %d, \"sharedMemPerBlockOptin\": %d, "
                    "\"sharedMemPerMultiprocessor\": %d}",
                    d->regs_per_mp, d->shared_mem_per_block_optin, d->shared_mem_per_mp);
    }
    kvs_out_str(o, m->ndevices ? "\n  ],\n" : "],\n");
}

static void write_kvscope(struct kvs_out *o, const struct kvs_trace_meta *m, size_t nrecs,
                          uint64_t kernels_without_call)
{
    const struct kvs_trace_stats *s = &m->stats;
    kvs_out_fmt(o, "  \"kvscope\": {\"tool\": \"kvscope capture\", \"version\": \"%s\", \"window\": ",
                KVS_VERSION);
    kvs_out_json_string(o, m->window ? m->window : "all");
    kvs_out_str(o, ", \"window_start_us\": ");
    kvs_out_us(o, m->window_start_ns);
    kvs_out_str(o, ", \"window_end_us\": ");
    kvs_out_us(o, m->window_end_ns);
    kvs_out_fmt(o, ", \"rank\": %d, \"world_size\": %d", m->rank, m->world_size);
    if (m->activities) {
        char list[256];
        kvs_trace_activities_str(m->activities, list, sizeof list);
        kvs_out_str(o, ",\n    \"activities\": [");
        for (char *p = list, *q; *p; p = *q ? q + 1 : q) {
            q = p + strcspn(p, ",");
            kvs_out_fmt(o, "%s\"%.*s\"", p == list ? "" : ", ", (int)(q - p), p);
        }
        kvs_out_str(o, "]");
    }
    if (m->runtime_launches) {
        kvs_out_str(o, ", \"runtime_launches\": ");
        kvs_out_json_string(o, m->runtime_launches);
    }
    kvs_out_fmt(o,
                ",\n    \"records\": %llu, \"dropped_records\": %llu, "
                "\"buffer_requests_denied\": %llu, \"host_records\": %llu, \"host_dropped\": %llu, "
                "\"kernels_without_call\": %llu",
                (unsigned long long)nrecs, (unsigned long long)s->dropped_records,
                (unsigned long long)s->buffer_requests_denied, (unsigned long long)s->host_records,
                (unsigned long long)s->host_dropped, (unsigned long long)kernels_without_call);
    kvs_out_fmt(o, ",\n    \"buffers_used\": %u, \"buffers_max\": %u, \"buffer_bytes\": %llu",
                s->buffers_used, s->buffers_max, (unsigned long long)s->buffer_bytes);
    kvs_out_fmt(o,
                ",\n    \"overhead_ns\": {\"callbacks\": %llu, \"cupti\": %llu, \"flush\": %llu}},\n",
                (unsigned long long)s->callback_ns, (unsigned long long)s->cupti_overhead_ns,
                (unsigned long long)s->flush_ns);
}

/* The writer's own top-level keys: a caller's object may not take one. */
static const char *const own_keys[] = {
    "schemaVersion", "deviceProperties", "distributedInfo", "cupti_version",
    "cuda_driver_version", "cuda_runtime_version", "kvscope", "displayTimeUnit",
    "baseTimeNanoseconds", "traceEvents", "traceName",
};

/* One JSON object whose brackets pair up and whose strings close, nothing
 * after it (nesting deeper than 64 is refused). */
static int balanced_object(const char *s)
{
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
        s++;
    if (*s != '{')
        return 0;
    char open[64];
    int depth = 0, in_str = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (in_str) {
            if (c == '\\' && s[1])
                s++;
            else if (c == '"')
                in_str = 0;
            else if (c < 0x20)
                return 0;
            continue;
        }
        if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (depth == (int)sizeof open)
                return 0;
            open[depth++] = (char)c;
        } else if (c == '}' || c == ']') {
            if (depth == 0 || open[depth - 1] != (c == '}' ? '{' : '['))
                return 0;
            if (--depth == 0) {
                s++;
                break;
            }
        }
    }
    if (depth != 0 || in_str)
        return 0;
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
        s++;
    return *s == '\0';
}

enum kvs_status kvs_trace_check_extra(const struct kvs_trace_extra *extra, int n,
                                      const struct kvs_logger *lg)
{
    if (n < 0 || (n > 0 && !extra)) {
        kvs_log(lg, KVS_LOG_ERROR, "trace writer: %d extra objects and no array of them", n);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    for (int i = 0; i < n; i++) {
        const struct kvs_trace_extra *e = &extra[i];
        if (!e->key || !*e->key) {
            kvs_log(lg, KVS_LOG_ERROR, "trace writer: extra object %d has no key", i);
            return KVS_STATUS_INVALID_ARGUMENT;
        }
        for (size_t k = 0; k < sizeof own_keys / sizeof own_keys[0]; k++)
            if (!strcmp(e->key, own_keys[k])) {
                kvs_log(lg, KVS_LOG_ERROR, "trace writer: \"%s\" is the writer's own key",
                        e->key);
                return KVS_STATUS_INVALID_ARGUMENT;
            }
        for (int j = 0; j < i; j++)
            if (!strcmp(e->key, extra[j].key)) {
                kvs_log(lg, KVS_LOG_ERROR, "trace writer: extra key \"%s\" given twice", e->key);
                return KVS_STATUS_INVALID_ARGUMENT;
            }
        if (!e->json || !balanced_object(e->json)) {
            kvs_log(lg, KVS_LOG_ERROR, "trace writer: extra \"%s\" is not one JSON object",
                    e->key);
            return KVS_STATUS_INVALID_ARGUMENT;
        }
    }
    return KVS_STATUS_OK;
}

static void write_extras(struct kvs_out *o, const struct kvs_trace_meta *m)
{
    for (int i = 0; i < m->nextra; i++) {
        kvs_out_str(o, "  ");
        kvs_out_json_string(o, m->extra[i].key);
        kvs_out_str(o, ": ");
        kvs_out_str(o, m->extra[i].json);
        kvs_out_str(o, ",\n");
    }
}

static void meta_event(struct kvs_out *o, const char *what, int64_t pid, int64_t tid, int64_t ts,
                       const char *key, const char *sval, long long ival)
{
    kvs_out_fmt(o, ",\n  {\"name\": \"%s\", \"ph\": \"M\", \"ts\": ", what);
    kvs_out_us(o, ts);
    kvs_out_fmt(o, ", \"pid\": %lld, \"tid\": %lld, \"args\": {\"%s\": ", (long long)pid,
                (long long)tid, key);
    if (sval)
        kvs_out_json_string(o, sval);
    else
        kvs_out_fmt(o, "%lld", ival);
    kvs_out_str(o, "}}");
}

static void write_names(struct kvs_out *o, const struct kvs_trace_meta *m, const struct index *x)
{
    const char *pname = m->process_name ? m->process_name : "process";
    int64_t ts = m->window_start_ns;
    char buf[192];
    meta_event(o, "process_name", m->pid, 0, ts, "name", pname, 0);
    meta_event(o, "process_labels", m->pid, 0, ts, "labels", "CPU", 0);
    meta_event(o, "process_sort_index", m->pid, 0, ts, "sort_index", NULL, m->pid);
    /* GPUs: one process per device seen, one thread per stream */
    struct kvs_map devs;
    if (kvs_map_init(&devs, 8) != 0)
        return;
    for (size_t i = 0; i < x->streams.cap; i++) {
        if (!x->streams.used[i])
            continue;
        uint32_t dev = (uint32_t)(x->streams.keys[i] >> 32);
        uint32_t stream = (uint32_t)x->streams.keys[i];
        if (!kvs_map_get(&devs, dev, NULL)) {
            kvs_map_put(&devs, dev, 1);
            meta_event(o, "process_name", dev, 0, ts, "name", pname, 0);
            snprintf(buf, sizeof buf, "GPU %u", dev);
            meta_event(o, "process_labels", dev, 0, ts, "labels", buf, 0);
            meta_event(o, "process_sort_index", dev, 0, ts, "sort_index", NULL, 5000000LL + dev);
        }
        snprintf(buf, sizeof buf, "stream %u ", stream); /* Kineto's spelling, space included */
        meta_event(o, "thread_name", dev, stream, ts, "name", buf, 0);
        meta_event(o, "thread_sort_index", dev, stream, ts, "sort_index", NULL, stream);
    }
    kvs_map_free(&devs);
    for (size_t i = 0; i < x->threads.cap; i++) {
        if (!x->threads.used[i])
            continue;
        uint32_t pid = (uint32_t)(x->threads.keys[i] >> 32), tid = (uint32_t)x->threads.keys[i];
        snprintf(buf, sizeof buf, "thread %u (%.100s)", tid, pname);
        meta_event(o, "thread_name", pid, tid, ts, "name", buf, 0);
        meta_event(o, "thread_sort_index", pid, tid, ts, "sort_index", NULL, tid);
    }
}

static void write_doc(struct kvs_out *o, const struct kvs_trace_meta *m,
                      const struct kvs_trace_rec *recs, size_t n, const struct index *x)
{
    kvs_out_str(o, "{\n  \"schemaVersion\": 1,\n");
    write_devices(o, m);
    if (m->rank >= 0) {
        /* Kineto's key and field names (torch.distributed fills them) */
        kvs_out_str(o, "  \"distributedInfo\": {");
        if (m->backend) {
            kvs_out_str(o, "\"backend\": ");
            kvs_out_json_string(o, m->backend);
            kvs_out_str(o, ", ");
        }
        kvs_out_fmt(o, "\"rank\": %d, \"world_size\": %d},\n", m->rank, m->world_size);
    }
    if (m->cupti_version)
        kvs_out_fmt(o, "  \"cupti_version\": %d,\n", m->cupti_version);
    if (m->cuda_driver_version)
        kvs_out_fmt(o, "  \"cuda_driver_version\": %d,\n", m->cuda_driver_version);
    if (m->cuda_runtime_version)
        kvs_out_fmt(o, "  \"cuda_runtime_version\": %d,\n", m->cuda_runtime_version);
    write_kvscope(o, m, n, x->kernels_without_call);
    write_extras(o, m);
    kvs_out_fmt(o, "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %lld,\n",
                (long long)m->base_time_ns);
    kvs_out_str(o, "  \"traceEvents\": [\n");
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].kind == KVS_TREC_EXTERNAL_ID || recs[i].kind == KVS_TREC_GRAPH_NODE)
            continue; /* a link, not an event */
        if (!first)
            kvs_out_str(o, ",\n");
        write_rec(o, m, x, &recs[i]);
        first = 0;
    }
    for (size_t i = 0; i < x->nspans; i++) {
        const struct kvs_gpu_span *s = &x->spans[i];
        const struct kvs_trace_rec *r = &recs[s->range];
        if (!first)
            kvs_out_str(o, ",\n");
        first = 0;
        x_head(o, "gpu_user_annotation", r->name, s->device, s->stream, s->start_ns, s->end_ns);
        kvs_out_fmt(o, ", \"args\": {\"External id\": %llu}}",
                    (unsigned long long)r->u.host.external_id);
    }
    if (first) /* metadata events below each start with ",\n": give them something to follow */
        kvs_out_str(o, "  {\"name\": \"kvscope: no events recorded\", \"ph\": \"i\", \"s\": \"g\", "
                       "\"pid\": 0, \"tid\": 0, \"ts\": 0.000}");
    write_names(o, m, x);
    kvs_out_str(o, "\n  ]");
    if (m->trace_name) {
        kvs_out_str(o, ",\n  \"traceName\": ");
        kvs_out_json_string(o, m->trace_name);
    }
    kvs_out_str(o, "\n}\n");
}

// ----------------------------------------------------------------------------
// entry points

static enum kvs_status write_to(struct kvs_out *o, const struct kvs_trace_meta *m,
                                const struct kvs_trace_rec *recs, size_t n,
                                const struct kvs_logger *lg)
{
    struct index x;
    if (index_build(&x, recs, n) != 0) {
        index_free(&x);
        kvs_log(lg, KVS_LOG_ERROR, "trace writer: out of memory indexing %zu records", n);
        return KVS_STATUS_NO_MEMORY;
    }
    kernels_without_launch(&x, m, n, lg);
    write_doc(o, m, recs, n, &x);
    index_free(&x);
    return KVS_STATUS_OK;
}

enum kvs_status kvs_trace_write_json_stream(const struct kvs_trace_meta *meta,
                                            const struct kvs_trace_rec *recs, size_t nrecs,
                                            FILE *out, const struct kvs_logger *lg)
{
    enum kvs_status bad = kvs_trace_check_extra(meta->extra, meta->nextra, lg);
    if (bad != KVS_STATUS_OK)
        return bad;
    struct kvs_out *o = malloc(sizeof *o);
    if (!o)
        return KVS_STATUS_NO_MEMORY;
    kvs_out_init(o, out, NULL);
    enum kvs_status st = write_to(o, meta, recs, nrecs, lg);
    if (kvs_out_flush(o) != 0 && st == KVS_STATUS_OK) {
        kvs_log(lg, KVS_LOG_ERROR, "trace writer: write failed: %s", strerror(o->err));
        st = KVS_STATUS_IO;
    }
    free(o);
    return st;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

enum kvs_status kvs_trace_write_json(const struct kvs_trace_meta *meta,
                                     const struct kvs_trace_rec *recs, size_t nrecs,
                                     const char *path, const struct kvs_logger *lg)
{
    if (!path || !*path)
        return KVS_STATUS_INVALID_ARGUMENT;
    enum kvs_status bad = kvs_trace_check_extra(meta->extra, meta->nextra, lg);
    if (bad != KVS_STATUS_OK)
        return bad;
    if (strcmp(path, "-") == 0)
        return kvs_trace_write_json_stream(meta, recs, nrecs, stdout, lg);
    size_t plen = strlen(path) + 32;
    char *tmp = malloc(plen);
    struct kvs_out *o = malloc(sizeof *o);
    if (!tmp || !o) {
        free(tmp);
        free(o);
        return KVS_STATUS_NO_MEMORY;
    }
    snprintf(tmp, plen, "%s.tmp%ld", path, (long)getpid());
    int gz = ends_with(path, ".gz");
    FILE *f = NULL;
    gzFile z = NULL;
    if (gz)
        z = gzopen(tmp, "wb1");
    else
        f = fopen(tmp, "wb");
    if (!f && !z) {
        kvs_log(lg, KVS_LOG_ERROR, "cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        free(o);
        return KVS_STATUS_IO;
    }
    kvs_out_init(o, f, z);
    enum kvs_status st = write_to(o, meta, recs, nrecs, lg);
    int failed = kvs_out_flush(o) != 0;
    int err = o->err;
    if (z) {
        int zr = gzclose(z);
        if (!failed && zr != Z_OK) {
            failed = 1;
            err = zr == Z_ERRNO ? errno : EIO;
        }
    } else if (fclose(f) != 0 && !failed) {
        failed = 1;
        err = errno;
    }
    if (st == KVS_STATUS_OK && failed) {
        kvs_log(lg, KVS_LOG_ERROR, "writing %s failed: %s", path, err ? strerror(err) : "zlib error");
        st = KVS_STATUS_IO;
    }
    if (st == KVS_STATUS_OK && rename(tmp, path) != 0) {
        kvs_log(lg, KVS_LOG_ERROR, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        st = KVS_STATUS_IO;
    }
    if (st != KVS_STATUS_OK)
        unlink(tmp);
    free(tmp);
    free(o);
    return st;
}
