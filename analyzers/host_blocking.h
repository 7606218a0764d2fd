/* host_blocking.h — the host_blocking finding: GPU idle time during which
 * the CPU sat in a blocking runtime call.
 *
 * defines: kvs_host_blocking, kvs_host_blocking_call, kvs_trace_has_capture,
 *          struct kvs_ival, kvs_ival_merge, kvs_ival_index, kvs_ival_covered,
 *          kvs_ival_covered_at,
 *          kvs_clip_to_step, kvs_window_ms
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

#include "tables.h"
#include "group_figs.h" /* struct kvs_finding_list */

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
/* merged u[0..m) in place into what kvs_ival_covered searches (u has m + 1
 * places): u[i].b becomes the time u[0..i) cover, u[m].b all they cover; the
 * end of u[i] is then u[i].a + u[i + 1].b - u[i].b (no array of sums beside
 * it: 8 bytes an interval less) */
void kvs_ival_index(struct kvs_ival *u, size_t m);
/* the time indexed u[0..m) cover inside [a, b), in O(log m) */
int64_t kvs_ival_covered(const struct kvs_ival *u, size_t m, int64_t a, int64_t b);
/* the same, searching from *hint (0 to start, then the last call's): queries
 * in order of a find their intervals near the last ones */
int64_t kvs_ival_covered_at(const struct kvs_ival *u, size_t m, int64_t a, int64_t b, size_t *hint);
/* [ts, ts + dur) clipped to the step that holds ts (to [lo, hi) without
 * steps) into [*a, *b); the step's index (0 without steps), -1 outside every step */
int32_t kvs_clip_to_step(const struct kvs_step_table *steps, int64_t ts, int64_t dur, int64_t lo,
                         int64_t hi, int64_t *a, int64_t *b);
/* the mean step time in ms (hi - lo without steps) */
double kvs_window_ms(const struct kvs_step_table *steps, int64_t lo, int64_t hi);

/* Reads the records' runtime calls and GPU activity and the step table
 * (steps measured). Appends the finding to *out, its words in ar
 * (KVS_STATUS_OK, or KVS_STATUS_NO_MEMORY); *blocked_ms_per_step = the
 * host-wait time it found per step (0 when no finding), which gpu_idle then
 * leaves out. */
enum kvs_status kvs_host_blocking(const struct kvs_trace_data *t, const struct kvs_step_table *steps,
                                  struct kvs_arena *ar, struct kvs_finding_list *out,
                                  double *blocked_ms_per_step);

#endif
