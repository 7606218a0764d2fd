/* findings.h — name the bottlenecks, each with numbers, evidence and a fix,
 * ranked by the GPU time per step that fixing it would recover.
 *
 * defines: kvs_findings_build
 *
 * kv_full_buffer_cast  a cast whose token dim is the whole KV buffer
 *                      (the capacity given or inferred) every step
 * kv_full_buffer_read  attention over the whole buffer, and copies of it that
 *                      keep its dtype (kv_read.c)
 * low_bandwidth_efficiency  a memory-bound group far below the HBM peak
 * host_blocking        the GPU idles while the CPU waits in a blocking call (host_blocking.c)
 * gpu_idle             the GPU is idle most of the rest of the step: launch-bound
 * gemm_memory_bound    decode GEMMs bound by weight bandwidth (gemm_bound.c)
 * Thresholds and formulas: docs/analysis.md. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_FINDINGS_H
#define KVS_ANALYZERS_FINDINGS_H

#include "ctx.h"

/* per-group figures both findings and the result use */
struct kvs_group_figs {
    double calls_per_step;
    double gpu_ms, gpu_ms_per_step, gpu_fraction;
    double achieved_gbps, efficiency; /* efficiency 0 for a host link's copies */
    bool host_link;
};
void kvs_group_figures(const struct kvs_ctx *c, const struct kvs_group_acc *g,
                       struct kvs_group_figs *f);

/* shared with kv_read.c: the mean GPU busy ms of a step (of the trace
 * without steps); "1.23 GB" into buf; a group's op with its dims and dtypes;
 * whether the first tensor's dtype differs from another's */
double kvs_findings_step_busy_ms(const struct kvs_ctx *c);
const char *kvs_findings_human_bytes(char *buf, size_t n, double b);
const char *kvs_findings_group_desc(struct kvs_ctx *c, const struct kvs_group_acc *g);
bool kvs_findings_is_cast(const struct kvs_shape *s);
/* a group whose op's recorded dtypes say it copies without converting (its
 * first two tensors typed and alike, or one typed tensor); false for a
 * launch-sized group or dims recorded without dtypes */
bool kvs_findings_keeps_dtype(const struct kvs_group_acc *g);

/* *out: arena-allocated, ranked */
enum kvs_status kvs_findings_build(struct kvs_ctx *c, struct kvs_finding **out, size_t *n);

#endif
