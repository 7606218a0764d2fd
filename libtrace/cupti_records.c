/* cupti_records.c — CUPTI activity records (CUDA 13 struct versions) to
 * kvscope trace records (cupti_records.h). Pure: reads the record, writes
 * the output; names it cannot make come from callbacks.
 */
#include "cupti_records.h"

#include <string.h>

const char *kvs_cupti_memcpy_kind(unsigned kind)
{
    static const char *const k[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                    "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    return kind < sizeof k / sizeof k[0] ? k[kind] : "Unknown";
}

const char *kvs_cupti_memory_kind(unsigned kind)
{
    static const char *const k[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                    "Array",   "Managed",  "Device Static", "Managed Static"};
    return kind < sizeof k / sizeof k[0] ? k[kind] : "Unknown";
}

const char *kvs_cupti_sync_name(unsigned type)
{
    switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
    default: return "Unknown Sync";
    }
}

const char *kvs_cupti_overhead_name(unsigned kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Driver Compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "Buffer Flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "Instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "Resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Module Loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy Function Loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command Buffer Full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "Activity Buffer Request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "UVM Activity Init";
    default: return "Unknown Overhead";
    }
}

/* CUPTI timestamp -> CPU clock ns; 0 (CUPTI_TIMESTAMP_UNKNOWN) stays 0. */
static int64_t ts(const struct kvs_cupti_names *n, uint64_t t)
{
    return t == CUPTI_TIMESTAMP_UNKNOWN ? 0 : (int64_t)t - n->clock_offset_ns;
}

static void gpu_common(struct kvs_trace_rec *o, uint32_t dev, uint32_t ctx, uint32_t stream)
{
    o->u.gpu.device = dev;
    o->u.gpu.context = ctx;
    o->u.gpu.stream = stream;
}

int kvs_cupti_convert(struct kvs_cupti_names *n, const CUpti_Activity *rec,
                      struct kvs_trace_rec *o)
{
    memset(o, 0, sizeof *o);
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        if (k->start == CUPTI_TIMESTAMP_UNKNOWN || k->end < k->start)
            return 0; /* incomplete: the kernel had not finished at a forced flush */
        o->kind = KVS_TREC_KERNEL;
        o->correlation = k->correlationId;
        o->start_ns = ts(n, k->start);
        o->end_ns = ts(n, k->end);
        o->name = k->name ? (n->kernel ? n->kernel(n->user, k->name) : k->name) : "?";
        gpu_common(o, k->deviceId, k->contextId, k->streamId);
        o->u.gpu.grid[0] = k->gridX, o->u.gpu.grid[1] = k->gridY, o->u.gpu.grid[2] = k->gridZ;
        o->u.gpu.block[0] = k->blockX, o->u.gpu.block[1] = k->blockY;
        o->u.gpu.block[2] = k->blockZ;
        o->u.gpu.registers = k->registersPerThread;
        o->u.gpu.shared_mem = k->staticSharedMemory + k->dynamicSharedMemory;
        o->u.gpu.graph_id = k->graphId;
        o->u.gpu.graph_node_id = k->graphNodeId;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        if (m->start == CUPTI_TIMESTAMP_UNKNOWN || m->end < m->start)
            return 0;
        o->kind = KVS_TREC_MEMCPY;
        o->correlation = m->correlationId;
        o->start_ns = ts(n, m->start);
        o->end_ns = ts(n, m->end);
        gpu_common(o, m->deviceId, m->contextId, m->streamId);
        o->u.gpu.bytes = m->bytes;
        o->u.gpu.copy_kind = kvs_cupti_memcpy_kind(m->copyKind);
        o->u.gpu.src_kind = kvs_cupti_memory_kind(m->srcKind);
        o->u.gpu.dst_kind = kvs_cupti_memory_kind(m->dstKind);
        o->u.gpu.graph_id = m->graphId;
        o->u.gpu.graph_node_id = m->graphNodeId;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
        if (m->start == CUPTI_TIMESTAMP_UNKNOWN || m->end < m->start)
            return 0;
        o->kind = KVS_TREC_MEMSET;
        o->correlation = m->correlationId;
        o->start_ns = ts(n, m->start);
        o->end_ns = ts(n, m->end);
        gpu_common(o, m->deviceId, m->contextId, m->streamId);
        o->u.gpu.bytes = m->bytes;
        o->u.gpu.dst_kind = kvs_cupti_memory_kind(m->memoryKind);
        o->u.gpu.graph_id = m->graphId;
        o->u.gpu.graph_node_id = m->graphNodeId;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
        int driver = rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        o->kind = driver ? KVS_TREC_DRIVER : KVS_TREC_RUNTIME;
        o->correlation = a->correlationId;
        o->start_ns = ts(n, a->start);
        o->end_ns = ts(n, a->end);
        o->name = n->api ? n->api(n->user, driver, a->cbid) : NULL;
        if (!o->name)
            o->name = driver ? "cuda driver call" : "cuda runtime call";
        o->u.api.pid = a->processId;
        o->u.api.tid = a->threadId;
        o->u.api.cbid = a->cbid;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)rec;
        o->kind = KVS_TREC_SYNC;
        o->correlation = s->correlationId;
        o->start_ns = ts(n, s->start);
        o->end_ns = ts(n, s->end);
        o->name = kvs_cupti_sync_name(s->type);
        o->u.sync.context = s->contextId;
        o->u.sync.stream = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1
                                                                               : (int32_t)s->streamId;
        o->u.sync.event_id = s->cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE
                                 ? -1
                                 : (int32_t)s->cudaEventId;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *e =
            (const CUpti_ActivityExternalCorrelation *)rec;
        if (e->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
            return 0; /* kvscope ops use CUSTOM0; other tools' ids are not ours */
        o->kind = KVS_TREC_EXTERNAL_ID;
        o->correlation = e->correlationId;
        o->u.external_id = e->externalId;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *v = (const CUpti_ActivityOverhead3 *)rec;
        o->kind = KVS_TREC_OVERHEAD;
        o->start_ns = ts(n, v->start);
        o->end_ns = ts(n, v->end);
        o->name = kvs_cupti_overhead_name(v->overheadKind);
        if (v->end > v->start)
            n->overhead_ns += v->end - v->start;
        return 1;
    }
    default:
        return 0;
    }
}
