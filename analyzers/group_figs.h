/* group_figs.h — one copy/cast group's figures (calls and GPU ms per step,
 * share of busy time, achieved GB/s and efficiency) and the words sentences
 * use for it (its op with dims and dtypes, bytes in units), shared by the
 * findings (findings.c, kv_read.c), the roofline table (roofline.c) and the
 * result (analysis.c). Kept apart from findings.c so that kv_read.c, which
 * findings.c calls, does not call back into it.
 *
 * defines: struct kvs_group_figs, kvs_group_figures, kvs_findings_step_busy_ms,
 *          kvs_findings_human_bytes, kvs_findings_group_desc, kvs_findings_group_name,
 *          kvs_findings_is_cast,
 *          kvs_findings_keeps_dtype, KVS_EVIDENCE_KERNEL_WIDTH
 *
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_GROUP_FIGS_H
#define KVS_ANALYZERS_GROUP_FIGS_H

#include "ctx.h"

#define KVS_EVIDENCE_KERNEL_WIDTH 72 /* columns of a kernel's name in a sentence */

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
/* a group's name in a sentence: its op, or for an activity no op launched
 * the kernel's short name (in the arena) */
const char *kvs_findings_group_name(struct kvs_ctx *c, const struct kvs_group_acc *g);
bool kvs_findings_is_cast(const struct kvs_shape *s);
/* a group whose op's recorded dtypes say it copies without converting (its
 * first two tensors typed and alike, or one typed tensor); false for a
 * launch-sized group or dims recorded without dtypes */
bool kvs_findings_keeps_dtype(const struct kvs_group_acc *g);

#endif
