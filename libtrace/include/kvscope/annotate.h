/* kvscope/annotate.h — annotate instrumented code (the engine) so that a
 * capture carries what a PyTorch trace carries: ranges (steps, layers) and
 * ops with their input dims and dtypes.
 *
 * defines: struct kvs_tensor_desc, kvs_op_begin, kvs_op_end,
 *          kvs_range_begin, kvs_range_end
 *
 * kvs_op_begin() opens an NVTX range named after the op and, while a
 * kvscope capture is running, makes the trace hold a `cpu_op` event with
 * "Input Dims", "Input type" and an "External id" that every kernel launched
 * before the matching kvs_op_end() carries too (CUPTI external correlation).
 * Without a capture running the calls cost next to nothing (one atomic load
 * plus NVTX's own no-op). Ops and ranges nest; begin/end pair per thread.
 * dtype names are PyTorch's ("c10::BFloat16", "c10::Float8_e4m3fn", "float",
 * "int") so that one reader serves both kinds of trace.
 */
#ifndef KVSCOPE_ANNOTATE_H
#define KVSCOPE_ANNOTATE_H

#include <stdint.h>

#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVS_TENSOR_MAX_RANK 8

struct kvs_tensor_desc {
    int rank;                            /* 0 for a scalar */
    int64_t dims[KVS_TENSOR_MAX_RANK];
    const char *dtype;                   /* PyTorch name; copied by the call */
};

KVS_API void kvs_op_begin(const char *name, int ntensors, const struct kvs_tensor_desc *tensors);
KVS_API void kvs_op_end(void);

/* Plain named ranges (NVTX push/pop): "step_3", "layer_12". Written as
 * `user_annotation` events and projected onto the GPU. */
KVS_API void kvs_range_begin(const char *name);
KVS_API void kvs_range_end(void);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ANNOTATE_H */
