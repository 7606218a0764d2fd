/* classify.h — what a name says: copy/cast ops and kernels, and the GPU-time
 * category of an activity (copy/cast, GEMM, attention, communication).
 *
 * defines: kvs_op_is_copy, kvs_op_is_indexed_write, kvs_families_load, kvs_family_of,
 *          kvs_families_bundled, kvs_categorize
 *
 * Op name patterns are PyTorch's; kernel families come from the table
 * analyzers/data/kernel_families.json (docs/analysis.md). kvs_categorize
 * fills the activity table's family and cat after linking.
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_CLASSIFY_H
#define KVS_ANALYZERS_CLASSIFY_H

#include <stdbool.h>

#include "tables.h"

/* aten::copy_, aten::_to_copy, aten::to, aten::clone, aten::contiguous,
 * aten::_copy_from..., and any op whose name says copy or cast (not
 * "broadcast"): kvscope's own cast ops included. */
bool kvs_op_is_copy(const char *name);

/* In-place writes of some rows into a tensor through an index
 * (aten::index_copy_, index_put_, index_add_, scatter_, masked_scatter_):
 * their first tensor is the destination, written only where the index says,
 * so its dims say nothing about the bytes moved. */
bool kvs_op_is_indexed_write(const char *name);

/* The kernel family table (analyzers/data/kernel_families.json) read into
 * the arena: text[0..len) is the JSON. KVS_STATUS_PARSE (logged) when
 * it is malformed. */
enum kvs_status kvs_families_load(struct kvs_families *f, struct kvs_arena *ar, const char *text,
                                  size_t len, const struct kvs_logger *lg);

/* *family = the family of a kernel name: the first whose rule matches, else
 * "other". KVS_STATUS_NO_MEMORY when a long name's lowercase copy fails. */
enum kvs_status kvs_family_of(const struct kvs_families *f, const char *name, uint8_t *family);

/* the bundled table (analyzers/data/kernel_families.json) into *f */
enum kvs_status kvs_families_bundled(struct kvs_families *f, struct kvs_arena *ar,
                                     const struct kvs_logger *lg);

/* for each activity of act (linked): kfamily (the kernel's family by name;
 * memcpy and memset by kind), family (the same, but a weak family's work
 * named by its op when the op is a copy, attention or matmul) and cat (that
 * family's category) */
enum kvs_status kvs_categorize(const struct kvs_trace_data *t, const struct kvs_families *fs,
                               struct kvs_activity_table *act);

#endif
