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
 * exposed_comm         communication the step waits for, not hidden behind compute
 * host_op_bound        the GPU idles while the CPU works inside one op (host_op.c)
 * gemm_memory_bound    decode GEMMs bound by weight bandwidth (gemm_bound.c)
 * Thresholds and formulas: docs/analysis.md. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_FINDINGS_H
#define KVS_ANALYZERS_FINDINGS_H

#include "tables.h"
#include "group_figs.h" /* kvs_group_figures and the words findings share */

/* Every detector over the view of the records and the tables (all of
 * them: the activities, steps, groups, ops, the device, the model facts,
 * the step's GPUs, the options); *out: the ranked findings, their words
 * and lists in ar (NULL, 0 when none). */
enum kvs_status kvs_findings_build(const struct kvs_stage_in *in, struct kvs_arena *ar, struct kvs_finding **out,
                                   size_t *n);

#endif
