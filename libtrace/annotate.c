/* annotate.c — kvs_op_begin/end and kvs_range_begin/end (kvscope/annotate.h).
 *
 * Fast path first: with no capture hooks installed (the usual case) a call
 * costs one relaxed atomic load plus NVTX's own no-op; an op's shape message
 * is formatted only when an NVTX tool is attached (the "kvscope" domain
 * handle is non-NULL). With hooks installed (a capture running in this
 * module) calls go straight to the capture and skip NVTX, so nothing is
 * recorded twice. Builds without CUDA have no NVTX: only the hooks remain.
 */
#include "kvscope/annotate.h"

#include <sched.h>
#include <stdatomic.h>

#include "annotate_internal.h"

#ifdef KVS_HAVE_CUDA
#include <pthread.h>

#include <nvtx3/nvToolsExt.h>
#endif

// ----------------------------------------------------------------------------
// hooks

static _Atomic(const struct kvs_annot_hooks *) g_hooks;
static atomic_uint g_inflight; /* threads inside a hook right now */

void kvs_annot_set_hooks(const struct kvs_annot_hooks *h)
{
    atomic_store(&g_hooks, h);
    if (h)
        return;
    /* A thread that saw the old pointer has already counted itself in (it
     * increments before it loads again), so once the count is zero nobody
     * uses the old hooks. */
    while (atomic_load(&g_inflight) != 0)
        sched_yield();
}

/* Returns the hooks with the caller counted in, or NULL (not counted). */
static const struct kvs_annot_hooks *hooks_enter(void)
{
    if (!atomic_load_explicit(&g_hooks, memory_order_relaxed))
        return NULL;
    atomic_fetch_add(&g_inflight, 1);
    const struct kvs_annot_hooks *h = atomic_load(&g_hooks);
    if (!h)
        atomic_fetch_sub(&g_inflight, 1);
    return h;
}

static void hooks_leave(void)
{
    atomic_fetch_sub_explicit(&g_inflight, 1, memory_order_release);
}

// ----------------------------------------------------------------------------
// NVTX (CUDA builds)

#ifdef KVS_HAVE_CUDA
static pthread_once_t g_domain_once = PTHREAD_ONCE_INIT;
static nvtxDomainHandle_t g_domain;

static void domain_init(void)
{
    /* NULL when no NVTX tool is attached to this module: then nobody would
     * see the message, so it is never formatted. */
    g_domain = nvtxDomainCreateA(KVS_OP_NVTX_DOMAIN);
}

static void nvtx_op_begin(const char *name, int ntensors, const struct kvs_tensor_desc *tensors)
{
    pthread_once(&g_domain_once, domain_init);
    if (!g_domain)
        return;
    char msg[2048];
    kvs_op_message_format(msg, sizeof msg, name, ntensors, tensors);
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = msg;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = KVS_OP_NVTX_MAGIC;
    nvtxDomainRangePushEx(g_domain, &a);
}

static void nvtx_op_end(void)
{
    pthread_once(&g_domain_once, domain_init);
    if (g_domain)
        nvtxDomainRangePop(g_domain);
}
#endif

// ----------------------------------------------------------------------------
// the API

void kvs_op_begin(const char *name, int ntensors, const struct kvs_tensor_desc *tensors)
{
    if (!name)
        name = "";
    if (ntensors < 0 || !tensors)
        ntensors = 0;
    const struct kvs_annot_hooks *h = hooks_enter();
    if (h) {
        h->op_begin(h->user, name, ntensors, tensors);
        hooks_leave();
        return;
    }
#ifdef KVS_HAVE_CUDA
    nvtx_op_begin(name, ntensors, tensors);
#endif
}

void kvs_op_end(void)
{
    const struct kvs_annot_hooks *h = hooks_enter();
    if (h) {
        h->op_end(h->user);
        hooks_leave();
        return;
    }
#ifdef KVS_HAVE_CUDA
    nvtx_op_end();
#endif
}

void kvs_range_begin(const char *name)
{
    if (!name)
        name = "";
    const struct kvs_annot_hooks *h = hooks_enter();
    if (h) {
        h->range_begin(h->user, name);
        hooks_leave();
        return;
    }
#ifdef KVS_HAVE_CUDA
    nvtxRangePushA(name);
#endif
}

void kvs_range_end(void)
{
    const struct kvs_annot_hooks *h = hooks_enter();
    if (h) {
        h->range_end(h->user);
        hooks_leave();
        return;
    }
#ifdef KVS_HAVE_CUDA
    nvtxRangePop();
#endif
}
