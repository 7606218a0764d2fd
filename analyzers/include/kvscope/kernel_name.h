/* kvscope/kernel_name.h — a kernel's name short enough to read: one function
 * that the analyzer's findings (evidence sentences) and the renderers (table
 * cells) share, so a name is shortened the same way everywhere. The full
 * name stays in the analysis (and in the JSON `kernel`/`name` fields).
 *
 * defines: kvs_short_kernel, kvs_short_op
 *
 * Thread safety: reentrant.
 */
#ifndef KVSCOPE_KERNEL_NAME_H
#define KVSCOPE_KERNEL_NAME_H

#include <stddef.h>

#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `name` in at most `width` columns (at least 8, at most size - 1) into buf:
 * the return type dropped ("void ", "std::enable_if<...>::type "); the
 * namespaces that identify the kernel kept ("vllm::", "dpsk::ep::internode::")
 * and a library's dropped ("at::native::", "c10::", "std::", "cub::",
 * "(anonymous namespace)::"); every qualifier inside template arguments
 * dropped; a launcher template shows the kernel it launches
 * ("cutlass::device_kernel<flash::Fwd<T>>(...)" -> "flash::Fwd<T>()");
 * argument lists emptied ("f<T>(int, float)" -> "f<T>()"); the rest cut with
 * "...". Words in parentheses that are no argument list stay ("Memcpy HtoD
 * (Pageable -> Device)"). NULL gives "-". Returns buf. */
KVS_API char *kvs_short_kernel(char *buf, size_t size, const char *name, size_t width);

/* A group's op in a sentence or a cell: an op name ("aten::copy_",
 * "kvs::cast_fp8_to_bf16") as it is, cut to `width` columns; a C++ kernel's
 * name (a group of GPU work no op launched: it holds '<' or '(') shortened
 * by kvs_short_kernel, so a kernel reads the same in every table and
 * sentence. Returns buf. */
KVS_API char *kvs_short_op(char *buf, size_t size, const char *name, size_t width);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_KERNEL_NAME_H */
