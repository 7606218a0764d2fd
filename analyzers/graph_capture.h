/* graph_capture.h — give a CUDA/HIP-graph replay's kernels the ops they were
 * captured under, from a profile of the graph's capture (`report REPLAY
 * --graph-capture CAPTURE`).
 *
 * defines: kvs_graph_capture_merge
 *
 * A capture profile (torch.profiler around torch.cuda.graph(), vLLM's
 * capture_torch_profiler, SGLang's --enable-profile-cuda-graph) holds the
 * ops with their shapes and the kernel launches recorded while capturing;
 * its kernels do not run. A replay's kernels carry the correlation id of
 * the graph launch and no op. The n-th launch recorded during capture is
 * the n-th kernel of each replay of that graph (graph nodes replay in
 * capture order on one stream). The alignment is checked pair by pair where
 * a pair says something (a copy kernel under a copy op; a kernel sized from
 * its launch holding the op's element count; a Triton op naming its kernel)
 * and refused when a replay's
 * kernel count differs from the capture's launch count for every replay,
 * or more than 5% of the checks disagree. Aligned kernels get a copy of
 * their op (name, dims, dtypes, External id) at the graph launch's time,
 * so groups, steps and calls count them like eager ones.
 * Runs after kvs_link; the caller reads the capture (kvs_read_trace) and
 * passes its records in. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_GRAPH_CAPTURE_H
#define KVS_ANALYZERS_GRAPH_CAPTURE_H

#include "tables.h"
#include "kvscope/reader.h"

/* t: the replay's records, to which the aligned kernels' ops are added;
 * cap: the capture's records; name: its path, for messages; act: link's
 * activity table, whose aligned kernels get those ops (and its unlinked
 * and capture_aligned counts redone). KVS_STATUS_INVALID_ARGUMENT (logged)
 * when the capture does not align. */
enum kvs_status kvs_graph_capture_merge(struct kvs_trace_data *t, const struct kvs_trace_data *cap, const char *name,
                                        const struct kvs_logger *log, struct kvs_activity_table *act);

#endif
