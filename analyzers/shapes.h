/* shapes.h — the tensors of an op call from its recorded `Input Dims` and
 * `Input type`.
 *
 * defines: struct kvs_shape, kvs_shape_parse, KVS_SHAPE_MAX_TENSORS
 *
 * The reader interns "<Input Dims text>\x1f<Input type text>" per op; this
 * turns one such key (once per distinct shape, not per call) into tensors:
 * an entry is a tensor when its dims are a flat list of integers and its
 * type is a dtype name (kvs_dtype_bits > 0). Scalars, lists of tensors and
 * unknown types are left out. When no types were recorded at all (the
 * types text is empty: Input Dims alone, or an Nsight Systems emit_nvtx
 * range) every flat list is a tensor with bits 0, bytes -1 and dtype "". Order is the op's own (for copy_: destination
 * first). Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_SHAPES_H
#define KVS_ANALYZERS_SHAPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KVS_SHAPE_MAX_TENSORS 16
#define KVS_SHAPE_MAX_RANK 8

struct kvs_shape {
    int n;                                   /* tensors kept */
    int rank[KVS_SHAPE_MAX_TENSORS];         /* full rank (dims beyond 8 not stored) */
    int64_t dims[KVS_SHAPE_MAX_TENSORS][KVS_SHAPE_MAX_RANK];
    int bits[KVS_SHAPE_MAX_TENSORS];         /* per element; 0: dtype unknown */
    int64_t bytes[KVS_SHAPE_MAX_TENSORS];    /* of the whole tensor; -1 when it overflows or the dtype is unknown */
    int64_t numel[KVS_SHAPE_MAX_TENSORS];
    const char *dtype[KVS_SHAPE_MAX_TENSORS];/* into the key text, not NUL-terminated */
    size_t dtype_len[KVS_SHAPE_MAX_TENSORS];
    bool more;                               /* more tensors than were kept */
};

/* key/len: the interned shape key. Malformed text yields the tensors parsed
 * before the fault (traces are data, not contracts). */
void kvs_shape_parse(const char *key, size_t len, struct kvs_shape *out);

#endif
