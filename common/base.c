/* base.c — status strings, the logger, and the shared failure path of the
 * CUDA/cuBLAS/CUPTI/NCCL check macros (kvscope/check.h). No dependencies. */
#include "kvscope/base.h"

#include <stdio.h>
#include <string.h>

// ----------------------------------------------------------------------------
// status

const char *kvs_status_str(enum kvs_status status)
{
    switch (status) {
    case KVS_STATUS_OK: return "ok";
    case KVS_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case KVS_STATUS_NO_MEMORY: return "out of host memory";
    case KVS_STATUS_IO: return "input/output error";
    case KVS_STATUS_PARSE: return "malformed input";
    case KVS_STATUS_TRUNCATED: return "input ended early";
    case KVS_STATUS_UNSUPPORTED: return "not supported by this build";
    case KVS_STATUS_NOT_FOUND: return "not found";
    case KVS_STATUS_LIMIT: return "input exceeds a safety limit";
    case KVS_STATUS_EMPTY: return "nothing to work on";
    case KVS_STATUS_NO_DEVICE: return "no usable GPU";
    case KVS_STATUS_CUDA: return "CUDA error";
    case KVS_STATUS_CUBLAS: return "cuBLAS error";
    case KVS_STATUS_CUPTI: return "CUPTI error";
    case KVS_STATUS_NCCL: return "NCCL error";
    case KVS_STATUS_INTERNAL: return "internal error (a kvscope bug)";
    case KVS_STATUS_COUNT_: break;
    }
    return "unknown status";
}

// ----------------------------------------------------------------------------
// logging

static void log_to_stderr(void *user, enum kvs_log_level level, const char *message)
{
    (void)user;
    const char *tag = level >= KVS_LOG_ERROR ? "error: "
                    : level == KVS_LOG_WARN  ? "warning: "
                    : level <= KVS_LOG_DEBUG ? "debug: "
                                             : "";
    fprintf(stderr, "kvscope: %s%s\n", tag, message);
}

struct kvs_logger kvs_logger_stderr(void)
{
    struct kvs_logger lg = {log_to_stderr, NULL, KVS_LOG_INFO};
    return lg;
}

void kvs_logv(const struct kvs_logger *lg, enum kvs_log_level level, const char *fmt, va_list ap)
{
    struct kvs_logger def = kvs_logger_stderr();
    if (!lg)
        lg = &def;
    if (level < lg->min_level)
        return;
    char buf[1024];
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n < 0)
        snprintf(buf, sizeof buf, "(unformattable message: %s)", fmt);
    else if ((size_t)n >= sizeof buf) {
        size_t cut = sizeof buf - 4; /* never inside a UTF-8 character */
        while (cut > 0 && ((unsigned char)buf[cut] & 0xC0) == 0x80)
            cut--;
        memcpy(buf + cut, "...", 4);
    }
    /* messages quote the trace (device and kernel names): an escape
     * sequence in one must not clear the screen or set colours */
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7F)
            *p = '?';
    (lg->fn ? lg->fn : log_to_stderr)(lg->user, level, buf);
}

void kvs_log(const struct kvs_logger *lg, enum kvs_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kvs_logv(lg, level, fmt, ap);
    va_end(ap);
}

// ----------------------------------------------------------------------------
// check macros' failure path

enum kvs_status kvs_check_fail(const struct kvs_logger *lg, enum kvs_status status,
                               const char *lib, long code, const char *what, const char *expr,
                               const char *file, int line)
{
    kvs_log(lg, KVS_LOG_ERROR, "%s error %ld (%s) at %s:%d: %s", lib ? lib : "?", code,
            what ? what : "no description", file ? file : "?", line, expr ? expr : "?");
    return status;
}
