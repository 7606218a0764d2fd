/* findings.h — name the bottlenecks, each with numbers, evidence and a fix,
 * ranked by the GPU time per step that fixing it would recover.
 *
 * defines: kvs_findings_build
 *
 * kv_full_buffer_cast  a copy/cast whose token dim is the whole KV buffer
 *                      (the capacity given or inferred) every step
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

/* *out: arena-allocated, ranked */
enum kvs_status kvs_findings_build(struct kvs_ctx *c, struct kvs_finding **out, size_t *n);

#endif
