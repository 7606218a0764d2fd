/* activities.c — the activity lists of `kvscope capture --activities` and
 * KVS_CAPTURE_ACTIVITIES as bits of enum kvs_trace_activity
 * (kvscope/trace.h), their names back for the trace's metadata, and which
 * CUDA API calls the default `runtime`/`driver` activities record. Plain C,
 * no CUDA: tested on a CPU (tests/test_trace_writer.c). */
#include <stdio.h>
#include <string.h>

#include "kvscope/trace.h"

/* in the order the trace lists them */
static const struct {
    const char *name;
    unsigned bit;
} k_names[] = {
    {"kernel", KVS_TRACE_KERNEL},
    {"memcpy", KVS_TRACE_MEMCPY},
    {"memset", KVS_TRACE_MEMSET},
    {"runtime", KVS_TRACE_RUNTIME},
    {"runtime-all", KVS_TRACE_RUNTIME_ALL},
    {"driver", KVS_TRACE_DRIVER},
    {"driver-all", KVS_TRACE_DRIVER_ALL},
    {"sync", KVS_TRACE_SYNC},
    {"extcorr", KVS_TRACE_EXTERNAL_CORRELATION},
    {"overhead", KVS_TRACE_OVERHEAD},
    {"nvtx", KVS_TRACE_NVTX},
};

enum kvs_status kvs_trace_parse_activities(const char *list, unsigned *bits)
{
    if (!list || !bits)
        return KVS_STATUS_INVALID_ARGUMENT;
    unsigned out = 0;
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        int found = 0;
        if (len == 3 && !strncmp(p, "all", 3)) {
            out |= KVS_TRACE_ALL;
            found = 1;
        } else if (len == 7 && !strncmp(p, "default", 7)) {
            out |= KVS_TRACE_DEFAULT;
            found = 1;
        }
        for (size_t i = 0; i < sizeof k_names / sizeof k_names[0] && !found; i++) {
            if (strlen(k_names[i].name) == len && strncmp(p, k_names[i].name, len) == 0) {
                out |= k_names[i].bit;
                found = 1;
            }
        }
        if (!found)
            return KVS_STATUS_PARSE;
        p += len;
        if (*p == ',')
            p++;
    }
    if (!out)
        return KVS_STATUS_PARSE;
    *bits = out;
    return KVS_STATUS_OK;
}

size_t kvs_trace_activities_str(unsigned bits, char *buf, size_t n)
{
    /* every call of a kind includes the chosen ones: name only the wider */
    if (bits & KVS_TRACE_RUNTIME_ALL)
        bits &= ~(unsigned)KVS_TRACE_RUNTIME;
    if (bits & KVS_TRACE_DRIVER_ALL)
        bits &= ~(unsigned)KVS_TRACE_DRIVER;
    size_t o = 0;
    if (n)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++) {
        if (!(bits & k_names[i].bit))
            continue;
        int w = snprintf(n > o ? buf + o : NULL, n > o ? n - o : 0, "%s%s", o ? "," : "",
                         k_names[i].name);
        o += w > 0 ? (size_t)w : 0;
    }
    return o;
}

int kvs_trace_api_recorded(const char *name)
{
    if (!name)
        return 0;
    if (strstr(name, "Launch")) /* kernels, cooperative kernels, graphs (not host functions) */
        return strstr(name, "HostFunc") == NULL;
    if (strstr(name, "Node"))
        return 0; /* building a graph: cudaGraphAddMemcpyNode, ... */
    static const char *const wanted[] = {
        "emcpy",           /* cudaMemcpy*, cuMemcpy*: copies, and host_blocking's waits */
        "emset",           /* cudaMemset*, cuMemsetD* */
        "Synchronize",     /* stream, event, device, context: host_blocking */
        "StreamWaitEvent", /* one stream waiting on another */
        "BeginCapture",    /* a graph capture (SGLang's, vLLM's): findings read it */
        "EndCapture",
        "GraphInstantiate",
    };
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        if (strstr(name, wanted[i]))
            return 1;
    return 0;
}

int kvs_trace_api_kernel_launch(const char *name)
{
    return name && strstr(name, "Launch") && !strstr(name, "HostFunc") && !strstr(name, "Graph");
}
