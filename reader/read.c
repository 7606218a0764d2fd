/* read.c — an input to its reader by its content: an Nsight Systems SQLite
 * export (nsys.c), else Chrome-trace JSON (reader.c). See kvscope/reader.h. */
#include "kvscope/reader.h"

#include <string.h>

#include "nsys_impl.h"

enum kvs_status kvs_read_any(const struct kvs_read_input *in, const struct kvs_read_opts *ro,
                             struct kvs_trace_data *t, enum kvs_status *read_st)
{
    static const char sqlite_magic[16] = "SQLite format 3";
    if (in->in_memory) {
        if (in->len >= 16 && !memcmp(in->data, sqlite_magic, 16)) {
            kvs_log(ro->log, KVS_LOG_ERROR,
                    "%s: an Nsight Systems / SQLite export is read from its file, not from memory or stdin",
                    in->path);
            return KVS_STATUS_UNSUPPORTED;
        }
        *read_st = kvs_read_trace_memory(in->data, in->len, in->path, ro, t);
        return KVS_STATUS_OK;
    }
    switch (kvs_nsys_sniff(in->path)) {
    case KVS_NSYS_REPORT:
        kvs_log(ro->log, KVS_LOG_ERROR,
                "%s: an Nsight Systems report is not read directly: export it to SQLite first with "
                "nsys export --type sqlite --output FILE.sqlite %s, then give FILE.sqlite",
                in->path, in->path);
        return KVS_STATUS_UNSUPPORTED;
    case KVS_NSYS_SQLITE: *read_st = kvs_read_nsys(in->path, ro, t); return KVS_STATUS_OK;
    case KVS_NSYS_NOT: break;
    }
    *read_st = kvs_read_trace(in->path, ro, t);
    return KVS_STATUS_OK;
}
