/* gemm_bound.h — the gemm_memory_bound finding: decode GEMMs (few rows
 * against a weight) that the HBM roof bounds, told what moves them.
 *
 * defines: kvs_gemm_bound, KVS_GEMM_SMALL_M
 *
 * From the per-op roofline (roofline.c): the matmul op groups against a
 * weight with at most KVS_GEMM_SMALL_M rows (tokens) and bound "memory".
 * When their GPU time is at least 10% of the step's GPU busy time (and
 * 0.02 ms), one finding gives their time, the weight bytes they read per
 * step and their rate against the peak, the largest three, and a fix in a
 * GEMM's terms: more tokens per weight read (batch, speculative decoding),
 * fewer weight bytes (FP8, INT4), fused projections — not a faster copy.
 * Recoverable: half their time (half the weight bytes read). Private to
 * analyzers/; docs/analysis.md.
 */
#ifndef KVS_ANALYZERS_GEMM_BOUND_H
#define KVS_ANALYZERS_GEMM_BOUND_H

#include "tables.h"
#include "group_figs.h" /* struct kvs_finding_list */

#define KVS_GEMM_SMALL_M 64

/* Reads the op table, the step table, the device's peaks and the step's
 * GPUs of the view. Appends the finding to *out, its words in ar;
 * KVS_STATUS_OK or KVS_STATUS_NO_MEMORY. */
enum kvs_status kvs_gemm_bound(const struct kvs_stage_in *in, struct kvs_arena *ar, struct kvs_finding_list *out);

#endif
