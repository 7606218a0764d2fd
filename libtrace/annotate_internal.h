/* annotate_internal.h — what the annotation API (annotate.c) shares with the
 * capture: the hook a capture in the same module installs to receive
 * kvs_op_* / kvs_range_* calls directly, and the NVTX message that carries an
 * op's shapes when the capture lives elsewhere (the injection library).
 *
 * defines: struct kvs_annot_hooks, kvs_annot_set_hooks, KVS_OP_NVTX_MAGIC,
 *          KVS_OP_NVTX_DOMAIN, kvs_op_message_format, kvs_op_message_parse
 *
 * Two paths, one result. With a capture running in this module (the engine
 * linking libtrace) the hooks record ops with their dims and push CUPTI's
 * external correlation id. Otherwise the calls become NVTX ranges; an op's
 * range lives in domain "kvscope", carries KVS_OP_NVTX_MAGIC as payload and a
 * message "NAME {dims=[[a,b],[c]] types=[t0,t1]}" that reads well in Nsight
 * Systems and that a capture attached through NVTX parses back.
 */
#ifndef KVSCOPE_ANNOTATE_INTERNAL_H
#define KVSCOPE_ANNOTATE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kvscope/annotate.h"

struct kvs_annot_hooks {
    void (*op_begin)(void *user, const char *name, int ntensors,
                     const struct kvs_tensor_desc *tensors);
    void (*op_end)(void *user);
    void (*range_begin)(void *user, const char *name);
    void (*range_end)(void *user);
    void *user;
};

/* Install (h != NULL) or remove (NULL) the process's hooks. Removing waits
 * until no thread is inside a hook any more, so afterwards `user` may be
 * freed. The hooks struct must stay valid until removed. Global state by
 * necessity: the annotation API takes no context argument. */
void kvs_annot_set_hooks(const struct kvs_annot_hooks *h);

#define KVS_OP_NVTX_DOMAIN "kvscope"
#define KVS_OP_NVTX_MAGIC 0x6b76736f70000001ull /* "kvsop", version 1 */

/* Writes the op message into buf (always NUL-terminated when size > 0).
 * Returns 0 when it did not fit (buf then holds just the name, which parses
 * as an op without shapes). */
int kvs_op_message_format(char *buf, size_t size, const char *name, int ntensors,
                          const struct kvs_tensor_desc *tensors);

/* Parses a message made by kvs_op_message_format. On success returns 1 with
 * *name_len = length of the name prefix, up to max_tensors descriptors in
 * tensors[0..*ntensors), their dtype strings copied into dtype_buf. A message
 * without the shape suffix parses as a name with 0 tensors. Returns 0 when
 * the suffix is malformed or does not fit (then *name_len covers it all). */
int kvs_op_message_parse(const char *msg, size_t *name_len, struct kvs_tensor_desc *tensors,
                         int max_tensors, int *ntensors, char *dtype_buf, size_t dtype_buf_size);

#endif /* KVSCOPE_ANNOTATE_INTERNAL_H */
