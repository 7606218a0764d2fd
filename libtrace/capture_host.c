/* capture_host.c — what happens on the program's own threads: NVTX ranges
 * (push/pop, start/end, any domain; from CUPTI's NVTX callbacks) and kvscope
 * ops (from the annotation hooks, or from NVTX ranges in domain "kvscope"
 * whose message carries the shapes). Each becomes a host record; an op also
 * gives every CUDA call it makes, and the GPU work they launch, its
 * "External id": the calls kvscope records by callback (capture_api.c) ask
 * kvs_capture_current_op; for the calls CUPTI records itself (runtime-all,
 * driver-all) the op pushes a CUPTI external correlation id (kind CUSTOM0).
 *
 * Per-thread state: a stack of open ranges in thread-local storage. Frames
 * remember which capture (gen) made their record, so a frame left open by
 * a capture that was freed is popped without touching freed memory.
 *
 * CUDA graphs: a node created on a thread (inside a stream capture, or by
 * cudaGraphAdd*Node) is remembered with the innermost open op's External id
 * and the thread and time, so the writer gives the kernels each replay runs
 * for it that op and the ranges open at the time. While this thread holds a
 * stream capture open, ops and ranges are recorded even when the capture
 * window is closed: programs capture their graphs in a warm-up, before the
 * window, and replay them inside it.
 */
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <generated_nvtx_meta.h>

#include "capture_internal.h"

#define MAX_DEPTH 128
#define MAX_OPEN_STARTS 65536
#define MAX_OP_TENSORS 32

struct frame {
    struct kvs_trace_rec *rec; /* NULL: not recorded (not running, or store full) */
    uint64_t gen;
    uint64_t domain;           /* NVTX domain handle, 0 = default, KVS_HOOK_DOMAIN */
    int ext_pushed;
};

#define MAX_GRAPH_NODES (1u << 22)

static _Thread_local struct {
    int depth; /* may exceed MAX_DEPTH: those frames are counted, not kept */
    struct frame f[MAX_DEPTH];
} t_stack;

static _Thread_local int t_stream_captures; /* stream captures this thread holds open */

int kvs_capture_host_init(struct kvs_trace *t)
{
    if (pthread_mutex_init(&t->nvtx_mu, NULL) != 0)
        return -1;
    if (pthread_mutex_init(&t->graph_mu, NULL) != 0) {
        pthread_mutex_destroy(&t->nvtx_mu);
        return -1;
    }
    if (kvs_map_init(&t->reg_strings, 64) != 0 || kvs_map_init(&t->open_ranges, 64) != 0 ||
        kvs_map_init(&t->graph_node_of, 64) != 0)
        return -1;
    return 0;
}

void kvs_capture_host_free(struct kvs_trace *t)
{
    kvs_map_free(&t->reg_strings);
    kvs_map_free(&t->open_ranges);
    kvs_map_free(&t->graph_node_of);
    free(t->graph_nodes);
    pthread_mutex_destroy(&t->graph_mu);
    pthread_mutex_destroy(&t->nvtx_mu);
}

/* Ops and ranges are recorded inside the window, and outside it while this
 * thread captures a graph. */
static int recording(struct kvs_trace *t)
{
    return atomic_load_explicit(&t->running, memory_order_acquire) || t_stream_captures > 0;
}

static const char *domain_name(struct kvs_trace *t, uint64_t handle)
{
    if (handle == 0 || handle == KVS_HOOK_DOMAIN || handle == KVS_TORCH_DOMAIN)
        return NULL;
    const char *name = NULL;
    pthread_mutex_lock(&t->nvtx_mu);
    for (int i = 0; i < t->ndomains && !name; i++)
        if (t->domain_handle[i] == handle)
            name = t->domain_name[i];
    pthread_mutex_unlock(&t->nvtx_mu);
    return name ? name : "(unnamed domain)";
}

/* A record for a range/op starting now, or NULL when not recording. top:
 * what PyTorch's hook says of an op (its shape text, sequence number), or
 * NULL. */
static struct kvs_trace_rec *record(struct kvs_trace *t, enum kvs_trace_rec_kind kind,
                                    const char *name, uint64_t domain, int nt,
                                    const struct kvs_tensor_desc *tens,
                                    const struct kvs_torch_op *top, uint64_t *ext)
{
    struct kvs_trace_rec r = {.kind = kind, .start_ns = kvs_now_ns(), .end_ns = KVS_HOST_OPEN,
                              .name = name};
    r.u.host.pid = t->pid;
    r.u.host.tid = kvs_gettid();
    r.u.host.external_id = *ext = atomic_fetch_add(&t->next_external_id, 1);
    r.u.host.domain = kind == KVS_TREC_RANGE ? domain_name(t, domain) : NULL;
    r.u.host.ntensors = nt;
    r.u.host.tensors = tens;
    if (top) {
        r.u.host.input_dims = top->input_dims;
        r.u.host.input_types = top->input_types;
        r.u.host.has_sequence = top->sequence_nr >= 0;
        r.u.host.sequence_nr = top->sequence_nr;
        r.u.host.fwd_tid = top->fwd_tid;
    }
    return kvs_host_store_add(&t->host, &r);
}

static void push(struct kvs_trace *t, enum kvs_trace_rec_kind kind, const char *name,
                 uint64_t domain, int nt, const struct kvs_tensor_desc *tens,
                 const struct kvs_torch_op *top)
{
    int d = t_stack.depth++;
    int running = recording(t);
    if (d >= MAX_DEPTH) {
        if (running)
            atomic_fetch_add(&t->host_overflow, 1);
        return;
    }
    struct frame *f = &t_stack.f[d];
    *f = (struct frame){NULL, t->gen, domain, 0};
    if (!running)
        return;
    int64_t t0 = kvs_now_ns();
    uint64_t ext = 0;
    f->rec = record(t, kind, name, domain, nt, tens, top, &ext);
    /* CUPTI's external correlation, for API calls CUPTI records itself (the
     * calls kvscope records by callback carry the op's id already) */
    if (kind == KVS_TREC_OP && (t->kinds_on & KVS_TRACE_EXTERNAL_CORRELATION) && t->ext_by_cupti)
        f->ext_pushed = cuptiActivityPushExternalCorrelationId(
                            CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, ext) == CUPTI_SUCCESS;
    atomic_fetch_add(&t->callback_ns, (unsigned long long)(kvs_now_ns() - t0));
}

static void pop(struct kvs_trace *t, uint64_t domain)
{
    if (t_stack.depth == 0)
        return; /* a pop whose push came before this thread was watched */
    if (t_stack.depth > MAX_DEPTH) {
        t_stack.depth--;
        return;
    }
    int i = t_stack.depth - 1;
    while (i >= 0 && t_stack.f[i].domain != domain)
        i--; /* NVTX pops the innermost range of the same domain */
    if (i < 0)
        return;
    struct frame f = t_stack.f[i];
    memmove(&t_stack.f[i], &t_stack.f[i + 1], (size_t)(t_stack.depth - 1 - i) * sizeof f);
    t_stack.depth--;
    if (f.ext_pushed) {
        uint64_t last = 0;
        cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
    }
    if (f.rec && f.gen == t->gen)
        kvs_host_store_close(f.rec, kvs_now_ns());
}

// ----------------------------------------------------------------------------
// the annotation hooks (a capture in the same module as the annotations)

static void hook_op_begin(void *user, const char *name, int n, const struct kvs_tensor_desc *t)
{
    push(user, KVS_TREC_OP, name, KVS_HOOK_DOMAIN, n, t, NULL);
}
static void hook_op_end(void *user) { pop(user, KVS_HOOK_DOMAIN); }
static void hook_range_begin(void *user, const char *name)
{
    push(user, KVS_TREC_RANGE, name, 0, 0, NULL, NULL);
}
static void hook_range_end(void *user) { pop(user, 0); }

void kvs_capture_hooks_init(struct kvs_trace *t)
{
    t->hooks = (struct kvs_annot_hooks){hook_op_begin, hook_op_end, hook_range_begin,
                                        hook_range_end, t};
}

// ----------------------------------------------------------------------------
// ops from PyTorch's dispatcher (libtrace/torch/: kvs_torch_ops.h)

static _Atomic(struct kvs_trace *) g_torch;

/* The hook's switch (kvs_torch_ops.set_switch) and what it was last told;
 * stream captures open on every thread (t_stream_captures is this one's). */
static void (*g_torch_switch)(int on);
static int g_torch_told = -1;
static pthread_mutex_t g_torch_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_captures_open;

static struct kvs_trace *torch_trace(void)
{
    return atomic_load_explicit(&g_torch, memory_order_acquire);
}

void kvs_capture_torch_update(void)
{
    pthread_mutex_lock(&g_torch_mu); /* told in the order the changes happened */
    struct kvs_trace *t = torch_trace();
    int on = t && (atomic_load(&t->running) || atomic_load(&g_captures_open) > 0);
    if (g_torch_switch && on != g_torch_told) {
        g_torch_told = on;
        g_torch_switch(on);
    }
    pthread_mutex_unlock(&g_torch_mu);
}

void kvs_capture_torch_attach(struct kvs_trace *t)
{
    atomic_store(&g_torch, t);
    kvs_capture_torch_update();
}

static void torch_set_switch(void (*fn)(int on))
{
    pthread_mutex_lock(&g_torch_mu);
    g_torch_switch = fn;
    g_torch_told = -1;
    pthread_mutex_unlock(&g_torch_mu);
    kvs_capture_torch_update();
}

static int torch_recording(void)
{
    struct kvs_trace *t = torch_trace();
    return t && recording(t);
}

/* The hook calls op_begin only after recording() said yes, and op_end only
 * for those: a window that closes in between leaves a frame without a
 * record, popped as any other. A capture attached in between pops nothing
 * (no frame of the domain). */
static void torch_op_begin(const struct kvs_torch_op *op)
{
    struct kvs_trace *t = torch_trace();
    if (!t || !op)
        return;
    push(t, op->kind == KVS_TORCH_OP_RANGE ? KVS_TREC_RANGE : KVS_TREC_OP,
         op->name ? op->name : "", KVS_TORCH_DOMAIN, 0, NULL, op);
}

static void torch_op_end(void)
{
    struct kvs_trace *t = torch_trace();
    if (t)
        pop(t, KVS_TORCH_DOMAIN);
}

const struct kvs_torch_ops *kvs_capture_torch_ops(void)
{
    static const struct kvs_torch_ops ops = {KVS_TORCH_OPS_ABI, sizeof ops, torch_recording,
                                             torch_op_begin, torch_op_end, torch_set_switch};
    return &ops;
}

// ----------------------------------------------------------------------------
// NVTX

static const char *wide_to_utf8(const wchar_t *w, char *buf, size_t n)
{
    size_t o = 0;
    for (; w && *w && o + 5 < n; w++) {
        uint32_t c = (uint32_t)*w;
        if (c >= 0x110000 || (c >= 0xD800 && c <= 0xDFFF))
            c = 0xFFFD;
        if (c < 0x80) {
            buf[o++] = (char)c;
        } else if (c < 0x800) {
            buf[o++] = (char)(0xC0 | c >> 6);
            buf[o++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            buf[o++] = (char)(0xE0 | c >> 12);
            buf[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            buf[o++] = (char)(0x80 | (c & 0x3F));
        } else {
            buf[o++] = (char)(0xF0 | c >> 18);
            buf[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
            buf[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            buf[o++] = (char)(0x80 | (c & 0x3F));
        }
    }
    buf[o] = '\0';
    return buf;
}

static const char *attr_message(struct kvs_trace *t, const nvtxEventAttributes_t *a, char *buf,
                                size_t n)
{
    if (!a)
        return "";
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
        return wide_to_utf8(a->message.unicode, buf, n);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
        uint64_t v = 0;
        pthread_mutex_lock(&t->nvtx_mu);
        int ok = kvs_map_get(&t->reg_strings, (uint64_t)(uintptr_t)a->message.registered, &v);
        pthread_mutex_unlock(&t->nvtx_mu);
        return ok ? (const char *)(uintptr_t)v : "(registered string)";
    }
    default:
        return "";
    }
}

static int is_op(const nvtxEventAttributes_t *a)
{
    return a && a->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 &&
           a->payload.ullValue == KVS_OP_NVTX_MAGIC;
}

/* An NVTX range in any domain; an op when it carries kvscope's magic. */
static void push_attr(struct kvs_trace *t, uint64_t domain, const nvtxEventAttributes_t *a)
{
    char buf[2048];
    const char *msg = attr_message(t, a, buf, sizeof buf);
    if (!is_op(a)) {
        push(t, KVS_TREC_RANGE, msg, domain, 0, NULL, NULL);
        return;
    }
    struct kvs_tensor_desc tens[MAX_OP_TENSORS];
    char dtypes[1024], name[512];
    size_t name_len = 0;
    int nt = 0;
    if (!kvs_op_message_parse(msg, &name_len, tens, MAX_OP_TENSORS, &nt, dtypes, sizeof dtypes))
        nt = 0; /* shapes lost, the op is kept under its whole message */
    if (name_len >= sizeof name)
        name_len = sizeof name - 1;
    memcpy(name, msg, name_len);
    name[name_len] = '\0';
    push(t, KVS_TREC_OP, name, domain, nt, tens, NULL);
}

/* Start/end ranges may end on another thread: kept in a map by range id.
 * Without an id (CUPTI gave no return value) the range is still recorded
 * and ends with the capture window. */
static void start_range(struct kvs_trace *t, uint64_t domain, const char *msg, const void *ret)
{
    if (!recording(t))
        return;
    uint64_t ext;
    if (!ret) {
        record(t, KVS_TREC_RANGE, msg, domain, 0, NULL, NULL, &ext);
        return;
    }
    uint64_t id = *(const nvtxRangeId_t *)ret;
    pthread_mutex_lock(&t->nvtx_mu);
    int full = t->open_ranges.n >= MAX_OPEN_STARTS;
    pthread_mutex_unlock(&t->nvtx_mu);
    if (full) {
        atomic_fetch_add(&t->host_overflow, 1);
        return;
    }
    struct kvs_trace_rec *r = record(t, KVS_TREC_RANGE, msg, domain, 0, NULL, NULL, &ext);
    if (!r)
        return;
    pthread_mutex_lock(&t->nvtx_mu);
    kvs_map_put(&t->open_ranges, id, (uint64_t)(uintptr_t)r);
    pthread_mutex_unlock(&t->nvtx_mu);
}

static void end_range(struct kvs_trace *t, nvtxRangeId_t id)
{
    uint64_t v = 0;
    pthread_mutex_lock(&t->nvtx_mu);
    int ok = kvs_map_get(&t->open_ranges, id, &v) && v;
    if (ok)
        kvs_map_put(&t->open_ranges, id, 0);
    pthread_mutex_unlock(&t->nvtx_mu);
    if (ok)
        kvs_host_store_close((struct kvs_trace_rec *)(uintptr_t)v, kvs_now_ns());
}

static void add_domain(struct kvs_trace *t, const char *name, const void *ret)
{
    if (!ret)
        return;
    uint64_t h = (uint64_t)(uintptr_t)*(const nvtxDomainHandle_t *)ret;
    const char *copy = kvs_host_store_intern(&t->host, name ? name : "");
    pthread_mutex_lock(&t->nvtx_mu);
    if (h && copy && t->ndomains < KVS_MAX_DOMAINS) {
        t->domain_handle[t->ndomains] = h;
        t->domain_name[t->ndomains++] = copy;
    }
    pthread_mutex_unlock(&t->nvtx_mu);
}

static void add_string(struct kvs_trace *t, const char *s, const void *ret)
{
    if (!ret)
        return;
    uint64_t h = (uint64_t)(uintptr_t)*(const nvtxStringHandle_t *)ret;
    const char *copy = kvs_host_store_intern(&t->host, s ? s : "");
    pthread_mutex_lock(&t->nvtx_mu);
    if (copy)
        kvs_map_put(&t->reg_strings, h, (uint64_t)(uintptr_t)copy);
    pthread_mutex_unlock(&t->nvtx_mu);
}

void kvs_capture_nvtx(struct kvs_trace *t, CUpti_CallbackId cbid, const CUpti_NvtxData *d)
{
    const void *p = d->functionParams;
    char buf[2048];
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
        push(t, KVS_TREC_RANGE, ((const nvtxRangePushA_params *)p)->message, 0, 0, NULL, NULL);
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
        push(t, KVS_TREC_RANGE,
             wide_to_utf8(((const nvtxRangePushW_params *)p)->message, buf, sizeof buf), 0, 0,
             NULL, NULL);
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        push_attr(t, 0, ((const nvtxRangePushEx_params *)p)->eventAttrib);
        break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
        pop(t, 0);
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
        const nvtxDomainRangePushEx_params *q = p;
        push_attr(t, (uint64_t)(uintptr_t)q->domain, q->core.eventAttrib);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        pop(t, (uint64_t)(uintptr_t)((const nvtxDomainRangePop_params *)p)->domain);
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
        start_range(t, 0, ((const nvtxRangeStartA_params *)p)->message, d->functionReturnValue);
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
        start_range(t, 0, wide_to_utf8(((const nvtxRangeStartW_params *)p)->message, buf,
                                       sizeof buf),
                    d->functionReturnValue);
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        start_range(t, 0,
                    attr_message(t, ((const nvtxRangeStartEx_params *)p)->eventAttrib, buf,
                                 sizeof buf),
                    d->functionReturnValue);
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
        const nvtxDomainRangeStartEx_params *q = p;
        start_range(t, (uint64_t)(uintptr_t)q->domain,
                    attr_message(t, q->core.eventAttrib, buf, sizeof buf),
                    d->functionReturnValue);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
        end_range(t, ((const nvtxRangeEnd_params *)p)->id);
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
        end_range(t, ((const nvtxDomainRangeEnd_params *)p)->core.id);
        break;
    case CUPTI_CBID_NVTX_nvtxDomainCreateA:
        add_domain(t, ((const nvtxDomainCreateA_params *)p)->name, d->functionReturnValue);
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
        add_string(t, ((const nvtxDomainRegisterStringA_params *)p)->string,
                   d->functionReturnValue);
        break;
    default:
        break; /* marks, naming, sync: not recorded */
    }
}

// ----------------------------------------------------------------------------
// CUDA graph nodes

int kvs_capture_stream_capture_cbid(int driver, CUpti_CallbackId cbid)
{
    if (driver) {
        switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
        case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
        case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
        case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
        case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
        case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
            return 1;
        case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
        case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz:
            return 0;
        default:
            return -1;
        }
    }
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030:
        return 1;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000:
        return 0;
    default:
        return -1;
    }
}

/* The runtime's call and the driver's inside it may both be seen: each
 * counts, begins and ends alike, so the count returns to 0 either way. */
void kvs_capture_stream_capture(int begin)
{
    if (begin) {
        t_stream_captures++;
        atomic_fetch_add(&g_captures_open, 1);
    } else if (t_stream_captures > 0) {
        t_stream_captures--;
        atomic_fetch_sub(&g_captures_open, 1);
    } else {
        return;
    }
    kvs_capture_torch_update(); /* PyTorch's ops are recorded while a graph is captured */
}

int kvs_capture_streams_open(void)
{
    return atomic_load(&g_captures_open);
}

static void add_graph_node(struct kvs_trace *t, uint64_t id, const struct kvs_trace_rec *r)
{
    pthread_mutex_lock(&t->graph_mu);
    uint64_t at = 0;
    int known = kvs_map_get(&t->graph_node_of, id, &at);
    if (!known && t->ngraph_nodes >= MAX_GRAPH_NODES) {
        pthread_mutex_unlock(&t->graph_mu);
        atomic_fetch_add(&t->host_overflow, 1);
        return;
    }
    if (!known && t->ngraph_nodes == t->graph_nodes_cap) {
        size_t cap = t->graph_nodes_cap ? 2 * t->graph_nodes_cap : 256;
        struct kvs_trace_rec *v = realloc(t->graph_nodes, cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&t->graph_mu);
            atomic_fetch_add(&t->host_overflow, 1);
            return;
        }
        t->graph_nodes = v;
        t->graph_nodes_cap = cap;
    }
    struct kvs_trace_rec *slot = NULL;
    if (known)
        slot = &t->graph_nodes[at - 1]; /* an id reused after its node was destroyed */
    else if (kvs_map_put(&t->graph_node_of, id, t->ngraph_nodes + 1) == 0)
        slot = &t->graph_nodes[t->ngraph_nodes++];
    if (slot) {
        *slot = *r;
        slot->u.node.node_id = id;
    }
    pthread_mutex_unlock(&t->graph_mu);
    if (!slot)
        atomic_fetch_add(&t->host_overflow, 1);
}

/* The External id of the innermost op of this capture open on this thread
 * (0: none); *open: whether any recorded range or op is open. */
static uint64_t innermost_op(const struct kvs_trace *t, int *open)
{
    int top = t_stack.depth < MAX_DEPTH ? t_stack.depth : MAX_DEPTH;
    for (int i = top - 1; i >= 0; i--) {
        const struct frame *f = &t_stack.f[i];
        if (!f->rec || f->gen != t->gen)
            continue;
        if (open)
            *open = 1;
        if (f->rec->kind == KVS_TREC_OP)
            return f->rec->u.host.external_id;
    }
    return 0;
}

uint64_t kvs_capture_current_op(const struct kvs_trace *t)
{
    return innermost_op(t, NULL);
}

void kvs_capture_graph_node(struct kvs_trace *t, CUpti_CallbackId cbid, const CUpti_ResourceData *d)
{
    const CUpti_GraphData *g = d ? d->resourceDescriptor : NULL;
    uint64_t id = 0;
    if (!g || !g->node || cuptiGetGraphNodeId(g->node, &id) != CUPTI_SUCCESS || !id)
        return;
    int64_t t0 = kvs_now_ns();
    if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
        uint64_t orig = 0, at = 0;
        if (!g->originalNode || cuptiGetGraphNodeId(g->originalNode, &orig) != CUPTI_SUCCESS)
            return;
        pthread_mutex_lock(&t->graph_mu);
        struct kvs_trace_rec r;
        int known = kvs_map_get(&t->graph_node_of, orig, &at);
        if (known)
            r = t->graph_nodes[at - 1];
        pthread_mutex_unlock(&t->graph_mu);
        if (known)
            add_graph_node(t, id, &r);
        atomic_fetch_add(&t->callback_ns, (unsigned long long)(kvs_now_ns() - t0));
        return;
    }
    /* the innermost op of this capture open on this thread, and whether any
     * recorded range is open (the ranges themselves are found at write time
     * from the thread and the time) */
    int open = 0;
    uint64_t ext = innermost_op(t, &open);
    if (open) {
        struct kvs_trace_rec r = {.kind = KVS_TREC_GRAPH_NODE, .start_ns = t0, .end_ns = t0};
        r.u.node.external_id = ext;
        r.u.node.pid = t->pid;
        r.u.node.tid = kvs_gettid();
        add_graph_node(t, id, &r);
    }
    atomic_fetch_add(&t->callback_ns, (unsigned long long)(kvs_now_ns() - t0));
}
