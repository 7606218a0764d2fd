/* classify.h — what a name says: copy/cast ops and kernels, and the GPU-time
 * category of an activity (copy/cast, GEMM, attention, communication).
 *
 * defines: kvs_op_is_copy, kvs_op_is_indexed_write, kvs_kernel_is_copy, kvs_categorize
 *
 * Name patterns are PyTorch's and the usual libraries' (listed in
 * docs/analysis.md). kvs_categorize fills ctx->gpu_cat after linking.
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_CLASSIFY_H
#define KVS_ANALYZERS_CLASSIFY_H

#include <stdbool.h>

#include "ctx.h"

/* aten::copy_, aten::_to_copy, aten::to, aten::clone, aten::contiguous,
 * aten::_copy_from..., and any op whose name says copy or cast (not
 * "broadcast"): kvscope's own cast ops included. */
bool kvs_op_is_copy(const char *name);

/* In-place writes of some rows into a tensor through an index
 * (aten::index_copy_, index_put_, index_add_, scatter_, masked_scatter_):
 * their first tensor is the destination, written only where the index says,
 * so its dims say nothing about the bytes moved. */
bool kvs_op_is_indexed_write(const char *name);

/* direct_copy_kernel, *_copy_kernel*, LoadWithCast/StoreWithCast, memcpy
 * kernels, kvscope's cast kernels. */
bool kvs_kernel_is_copy(const char *name);

enum kvs_status kvs_categorize(struct kvs_ctx *c);

#endif
