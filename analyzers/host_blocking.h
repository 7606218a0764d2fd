/* host_blocking.h — the host_blocking finding: GPU idle time during which
 * the CPU sat in a blocking runtime call.
 *
 * defines: kvs_host_blocking, kvs_host_blocking_call, kvs_trace_has_capture,
 *          struct kvs_ival, kvs_ival_merge
 *
 * Per step (the whole trace without steps): each synchronous memcpy/memset,
 * stream/device/event synchronize, or async copy call of 1 ms or more, in
 * the step's CPU range, counts the part of it during which no GPU activity
 * ran (within the step's time). When that is 5% of the step or more, one
 * finding names the largest call, its time, and a fix chosen by the kind of
 * call. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_HOST_BLOCKING_H
#define KVS_ANALYZERS_HOST_BLOCKING_H

#include "ctx.h"

/* Needs steps measured. Appends the finding to v (0, or -1 when memory ran
 * out); *blocked_ms_per_step = the host-wait time it found per step (0 when
 * no finding), which gpu_idle then leaves out. */
/* whether a runtime call of this name and duration blocks the host (the
 * calls host_blocking counts) */
bool kvs_host_blocking_call(const char *name, int64_t dur);

/* whether the trace profiles a CUDA/HIP graph capture (SGLang's and vLLM's
 * capture traces): its kernels are recorded, not run, so idle GPU time says
 * nothing */
bool kvs_trace_has_capture(const struct kvs_trace_data *t);

/* a time interval [a, b), ns */
struct kvs_ival {
    int64_t a, b;
};
/* sort u by start and merge overlapping intervals in place; the count left */
size_t kvs_ival_merge(struct kvs_ival *u, size_t n);

int kvs_host_blocking(struct kvs_ctx *c, struct kvs_finding **v, size_t *n, size_t *cap,
                      double *blocked_ms_per_step);

#endif
