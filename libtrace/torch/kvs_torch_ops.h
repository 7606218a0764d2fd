/* kvs_torch_ops.h — the C interface between kvscope's PyTorch hook
 * (kvs_torch_ops.cpp beside this file, compiled inside the captured program
 * against the torch it imports) and the capture in that program
 * (libkvscope-inject.so: libtrace/capture_host.c records what it is given).
 *
 * defines: struct kvs_torch_op, struct kvs_torch_ops, kvs_torch_ops_fn,
 *          KVS_TORCH_OPS_ABI, KVS_TORCH_OPS_SYMBOL, KVS_TORCH_OP_*
 *
 * The hook dlopens the injection library, calls KVS_TORCH_OPS_SYMBOL once,
 * checks abi and size, and then for every op PyTorch dispatches, on the
 * thread that runs it:
 *
 *     if (ops->recording()) { ops->op_begin(&op); ...the op...; ops->op_end(); }
 *
 * recording() says whether an op beginning now on this thread would be
 * recorded (a capture is running, or this thread is capturing a CUDA graph);
 * when it says no, nothing is formatted and op_end is not called for that op.
 * op_begin and op_end pair on one thread and nest; an op's kernels, copies
 * and memsets get its "External id" as any kvscope op's do.
 *
 * Plain C, no kvscope or torch header: the hook is built from this folder
 * alone. Strings are copied by op_begin.
 */
#ifndef KVSCOPE_TORCH_OPS_H
#define KVSCOPE_TORCH_OPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVS_TORCH_OPS_ABI 1
#define KVS_TORCH_OPS_SYMBOL "kvs_torch_ops_v1"

enum {
    KVS_TORCH_OP_OP = 0,    /* an ATen op or autograd node: a "cpu_op" */
    KVS_TORCH_OP_RANGE = 1, /* torch.profiler.record_function(...): a "user_annotation" */
};

struct kvs_torch_op {
    const char *name;        /* "aten::copy_" */
    /* "Input Dims" and "Input type" exactly as torch.profiler writes them
     * with record_shapes=True: JSON arrays, one entry per input — a tensor's
     * sizes and dtype name ("c10::BFloat16", "float"), a tensor list's sizes
     * nested with type "TensorList", [] and "Scalar" / "ScalarList" / "" for
     * the rest. NULL: no shapes. */
    const char *input_dims;
    const char *input_types;
    int64_t sequence_nr;     /* autograd's sequence number, -1 when none */
    int64_t fwd_tid;         /* torch's forward thread id (with sequence_nr) */
    int kind;                /* KVS_TORCH_OP_* */
};

struct kvs_torch_ops {
    uint32_t abi;            /* KVS_TORCH_OPS_ABI */
    uint32_t size;           /* sizeof(struct kvs_torch_ops) */
    int (*recording)(void);
    void (*op_begin)(const struct kvs_torch_op *op);
    void (*op_end)(void);
    /* The hook's switch: fn(1) when ops may be recorded on some thread (a
     * capture running, or a thread capturing a CUDA graph), fn(0) when
     * none can be; called once at once with the state now, then at each
     * change, from the thread that changed it (inside a CUDA call). While
     * off, the hook turns its observer off, so that PyTorch boxes no
     * inputs for it; recording() still decides op by op. */
    void (*set_switch)(void (*fn)(int on));
};

typedef const struct kvs_torch_ops *(*kvs_torch_ops_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_TORCH_OPS_H */
