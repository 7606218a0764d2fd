/* groups.h — copy/cast work grouped by (op name, input dims, input dtypes).
 *
 * defines: kvs_groups_build
 *
 * A GPU activity joins the group of the op that launched it when that op is
 * a copy/cast op (then all its activities count) or when the activity itself
 * is copy/cast work (a copy kernel under another op, a memcpy, a memset).
 * Activities with no op that are copy/cast work form bare groups named after
 * the activity. calls = op calls with the group's key (the op's own count,
 * whether or not a call launched work); bytes per call from the dims and
 * dtype sizes (read + written), or from the activities' `bytes`.
 * Fills the group table (sorted by GPU time, descending). Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_GROUPS_H
#define KVS_ANALYZERS_GROUPS_H

#include "tables.h"

/* Reads the records, the activities and the steps (in), and what sizing
 * from launches knows (lf); fills *out. */
enum kvs_status kvs_groups_build(const struct kvs_stage_in *in, const struct kvs_launch_facts *lf,
                                 struct kvs_group_table *out);

#endif
