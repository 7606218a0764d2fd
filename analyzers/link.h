/* link.h — tie every GPU activity to the op that launched it.
 *
 * defines: kvs_link
 *
 * By `External id` (the activity's own, else its runtime call's); else by
 * `correlation` -> the runtime/driver call -> the innermost cpu_op on the
 * same thread that encloses the call. Also records each activity's launch
 * time (the runtime call's start, else the op's, else its own start), which
 * decides its step. Fills the activity table act: each activity's op,
 * launch and graph, and the counts of activities unlinked and graph-launched.
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_LINK_H
#define KVS_ANALYZERS_LINK_H

#include "tables.h"

/* t: the records (the ops of graph nodes captured elsewhere are appended);
 * warnings (shared External or correlation ids) go to lg. */
enum kvs_status kvs_link(struct kvs_trace_data *t, const struct kvs_logger *lg,
                         struct kvs_activity_table *act);

#endif
