/* activities.c — kvs_trace_parse_activities: the activity list of
 * `kvscope capture --activities` and KVS_CAPTURE_ACTIVITIES as bits of
 * enum kvs_trace_activity (kvscope/trace.h). Plain C, no CUDA. */
#include <string.h>

#include "kvscope/trace.h"

enum kvs_status kvs_trace_parse_activities(const char *list, unsigned *bits)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"kernel", KVS_TRACE_KERNEL},   {"memcpy", KVS_TRACE_MEMCPY},
        {"memset", KVS_TRACE_MEMSET},   {"runtime", KVS_TRACE_RUNTIME},
        {"driver", KVS_TRACE_DRIVER},   {"sync", KVS_TRACE_SYNC},
        {"extcorr", KVS_TRACE_EXTERNAL_CORRELATION},
        {"overhead", KVS_TRACE_OVERHEAD}, {"nvtx", KVS_TRACE_NVTX},
        {"all", KVS_TRACE_ALL},
    };
    if (!list || !bits)
        return KVS_STATUS_INVALID_ARGUMENT;
    unsigned out = 0;
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !found; i++) {
            if (strlen(names[i].name) == len && strncmp(p, names[i].name, len) == 0) {
                out |= names[i].bit;
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
