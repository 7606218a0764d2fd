/* host_op.h — the host_op_bound finding: GPU idle time spent on the CPU
 * inside one framework op (not in a blocking runtime call, not on launches).
 *
 * defines: kvs_host_op_bound
 *
 * Per step (the whole trace without steps): for every CPU op, the part of
 * its time, within its step, during which no GPU activity ran and the CPU
 * sat in no blocking runtime call (host_blocking's). Summed per op name;
 * the name holding the most such time wins, the innermost of nested names
 * holding nearly as much (an op and its backend calls). When that is at
 * least 20% of the step, 0.5 ms a step, and 0.5 ms a call on average, one
 * finding names the op, its host time per call and per step, and a fix
 * chosen by the op (cuDNN attention: a plan per new shape). Private to
 * analyzers/.
 */
#ifndef KVS_ANALYZERS_HOST_OP_H
#define KVS_ANALYZERS_HOST_OP_H

#include "tables.h"
#include "group_figs.h" /* struct kvs_finding_list */

/* Reads the records' ops, runtime calls and GPU activity and the step
 * table. Appends the finding to *out, its words in ar (KVS_STATUS_OK, or
 * KVS_STATUS_NO_MEMORY); *ms_per_step = the op's GPU-idle host time per
 * step (0 when no finding), which gpu_idle then leaves out. */
enum kvs_status kvs_host_op_bound(const struct kvs_trace_data *t, const struct kvs_step_table *steps,
                                  struct kvs_arena *ar, struct kvs_finding_list *out, double *ms_per_step);

#endif
