/* roofline.h — every op group against the device's roofline.
 *
 * defines: kvs_roofline_build
 *
 * An op group is an op name + its recorded shapes (the key the copy/cast
 * groups use) that launched GPU work; GPU work no op launched is grouped
 * by its activity's name. Each gets its bytes and FLOPs per call
 * (opcost.h; copies: their copy/cast group's bytes), its GPU time per call,
 * and from them achieved GB/s, TFLOP/s, arithmetic intensity, whether the
 * device bounds it by memory or compute, and the fraction of that roof it
 * reached (docs/analysis.md, "Per-op roofline"). Reads the records, the
 * activities, the steps, the groups and the device's peaks; fills the op
 * table *out (by GPU time, descending). Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_ROOFLINE_H
#define KVS_ANALYZERS_ROOFLINE_H

#include "tables.h"

enum kvs_status kvs_roofline_build(const struct kvs_stage_in *in, struct kvs_op_table *out);

#endif
