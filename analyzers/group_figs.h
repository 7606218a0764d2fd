/* group_figs.h — one copy/cast group's figures (calls and GPU ms per step,
 * share of busy time, achieved GB/s and efficiency) and the list findings
 * are appended to, shared by the findings (findings.c, kv_read.c), the
 * roofline table (roofline.c) and the result (analysis.c). Kept apart from findings.c so that kv_read.c, which
 * findings.c calls, does not call back into it.
 *
 * defines: struct kvs_group_figs, kvs_group_figures,
 *          kvs_findings_step_busy_ms,
 *          kvs_findings_is_cast, kvs_findings_keeps_dtype,
 *          struct kvs_finding_list, kvs_finding_push
 *
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_GROUP_FIGS_H
#define KVS_ANALYZERS_GROUP_FIGS_H

#include "tables.h"
#include "phrase.h" /* the words of a group: kvs_findings_group_desc, ... */

/* per-group figures both findings and the result use */
struct kvs_group_figs {
    double calls_per_step;
    double gpu_ms, gpu_ms_per_step, gpu_fraction;
    double achieved_gbps, efficiency; /* efficiency 0 for a host link's copies */
    bool host_link;
};
void kvs_group_figures(const struct kvs_step_table *steps, const struct kvs_peaks *dev,
                       const struct kvs_group_acc *g, struct kvs_group_figs *f);

/* shared with kv_read.c: the mean GPU busy ms of a step (of the trace
 * without steps); whether the first tensor's dtype differs from another's
 * (the words findings share are phrase.h's) */
double kvs_findings_step_busy_ms(const struct kvs_step_table *steps);
bool kvs_findings_is_cast(const struct kvs_shape *s);
/* a group whose op's recorded dtypes say it copies without converting (its
 * first two tensors typed and alike, or one typed tensor); false for a
 * launch-sized group or dims recorded without dtypes */
bool kvs_findings_keeps_dtype(const struct kvs_group_acc *g);

/* The findings being built: each detector (findings.c, kv_read.c,
 * host_blocking.c, host_op.c, gemm_bound.c) appends its own with
 * kvs_finding_push (KVS_STATUS_OK, or KVS_STATUS_NO_MEMORY). */
struct kvs_finding_list {
    struct kvs_finding *v;
    size_t n, cap;
};
enum kvs_status kvs_finding_push(struct kvs_finding_list *l, const struct kvs_finding *f);

#endif
