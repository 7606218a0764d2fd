/* dtypes.h — element sizes of PyTorch dtype names as profilers record them.
 *
 * defines: kvs_dtype_bits, kvs_dtype_short, kvs_tensor_bytes
 *
 * Names come as `Input type` strings: "float", "c10::BFloat16",
 * "c10::Float8_e4m3fn", "c10::Float4_e2m1fn_x2", "long int", ... Also
 * accepted: the torch spellings ("torch.bfloat16", "float8_e4m3fn", "int64").
 * Sizes are in bits so sub-byte types count exactly: a packed type
 * (Float4_e2m1fn_x2, quint4x2, bits4x2) is 8 bits per element (one element
 * holds two values); UInt1..UInt7 / Int1..Int7 count their logical width.
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_DTYPES_H
#define KVS_ANALYZERS_DTYPES_H

#include <stddef.h>
#include <stdint.h>

/* Bits per element, or 0 when the name is not a tensor dtype ("Scalar",
 * "ScalarList", "", "TensorList", "GenericList", unknown names). */
int kvs_dtype_bits(const char *name, size_t len);

/* The display form: the name without "c10::" / "torch." ("BFloat16",
 * "Float8_e4m3fn", "float"). Points into name; *out_len is its length. An
 * empty name (a dtype not recorded) is "?". */
const char *kvs_dtype_short(const char *name, size_t len, size_t *out_len);

/* ceil(numel * bits / 8); numel from dims (rank 0 = one element); -1 when it
 * overflows int64 or a dim is negative. */
int64_t kvs_tensor_bytes(const int64_t *dims, int rank, int bits);

#endif
