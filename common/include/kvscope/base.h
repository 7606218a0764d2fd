/* kvscope/base.h — conventions shared by every kvscope module.
 *
 * defines: enum kvs_status, kvs_status_str, struct kvs_logger, kvs_log,
 *          kvs_check_fail, kvs_progress_fn, KVS_API, KVS_VERSION
 *
 * Every library function that can fail returns enum kvs_status and hands
 * results back through out-parameters. Libraries never print and never exit:
 * they report through a struct kvs_logger that the caller owns (stderr when
 * the caller passes NULL). Thread safety: all functions here are reentrant;
 * a logger's callback may be called from any thread that uses the module it
 * was given to (CUPTI's buffer thread included), so it must be thread-safe.
 */
#ifndef KVSCOPE_BASE_H
#define KVSCOPE_BASE_H

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define KVS_API
#elif defined(__GNUC__)
#define KVS_API __attribute__((visibility("default")))
#else
#define KVS_API
#endif

#if defined(__GNUC__)
#define KVS_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define KVS_PRINTF(fmt_idx, arg_idx)
#endif

#define KVS_VERSION "0.1.0"

/* Append new values at the end: the numbers are stable. */
enum kvs_status {
    KVS_STATUS_OK = 0,
    KVS_STATUS_INVALID_ARGUMENT, /* a caller passed something this function cannot use */
    KVS_STATUS_NO_MEMORY,        /* a host allocation failed */
    KVS_STATUS_IO,               /* open/read/write/close failed (errno logged) */
    KVS_STATUS_PARSE,            /* malformed input (the message names where) */
    KVS_STATUS_TRUNCATED,        /* input ended early; what was read is usable */
    KVS_STATUS_UNSUPPORTED,      /* valid input this build cannot handle */
    KVS_STATUS_NOT_FOUND,        /* a named thing (file, config, device) does not exist */
    KVS_STATUS_LIMIT,            /* a hostile-input limit was hit (depth, length, count) */
    KVS_STATUS_EMPTY,            /* valid input with nothing to work on */
    KVS_STATUS_NO_DEVICE,        /* no usable GPU */
    KVS_STATUS_CUDA,             /* a CUDA runtime/driver call failed */
    KVS_STATUS_CUBLAS,           /* a cuBLAS / cuBLASLt call failed */
    KVS_STATUS_CUPTI,            /* a CUPTI call failed */
    KVS_STATUS_NCCL,             /* an NCCL call failed */
    KVS_STATUS_INTERNAL,         /* a kvscope bug: please report it */
    KVS_STATUS_COUNT_            /* not a status: the number of statuses */
};

/* A short, static, human-readable description; never NULL. */
KVS_API const char *kvs_status_str(enum kvs_status status);

/* INFO is 0 so that a zero-initialised logger shows INFO and up. */
enum kvs_log_level {
    KVS_LOG_DEBUG = -1,
    KVS_LOG_INFO = 0,
    KVS_LOG_WARN = 1,
    KVS_LOG_ERROR = 2,
};

typedef void (*kvs_log_fn)(void *user, enum kvs_log_level level, const char *message);

/* Called now and then while reading (bytes_read of bytes_total; total is 0
 * when unknown, e.g. stdin; for a .gz file both count compressed bytes): the
 * reader (kvscope/reader.h) and the analysis (kvscope/analysis.h) take one. */
typedef void (*kvs_progress_fn)(void *user, uint64_t bytes_read, uint64_t bytes_total);

/* A log sink. Copy it by value into the contexts that log. fn == NULL writes
 * to stderr; messages below min_level are dropped before formatting, so a
 * zero-initialised logger is "stderr, INFO and up". */
struct kvs_logger {
    kvs_log_fn fn;
    void *user;
    enum kvs_log_level min_level;
};

/* The default sink: "kvscope: <level>: <message>" lines on stderr, INFO and up. */
KVS_API struct kvs_logger kvs_logger_stderr(void);

/* Format and deliver one message. lg may be NULL (stderr, INFO and up). */
KVS_API void kvs_log(const struct kvs_logger *lg, enum kvs_log_level level, const char *fmt, ...)
    KVS_PRINTF(3, 4);
KVS_API void kvs_logv(const struct kvs_logger *lg, enum kvs_log_level level, const char *fmt,
                      va_list ap);

/* Log "<lib> error <code> (<what>) at <file>:<line>: <expr>" and return
 * `status`. Used by the check macros in kvscope/check.h. */
KVS_API enum kvs_status kvs_check_fail(const struct kvs_logger *lg, enum kvs_status status,
                                       const char *lib, long code, const char *what,
                                       const char *expr, const char *file, int line);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_BASE_H */
