/* opcost.h — bytes and FLOPs of one op call from its recorded shapes, by op
 * family (the formulas: docs/analysis.md, "Bytes and FLOPs by op family").
 *
 * defines: struct kvs_op_cost, kvs_op_cost_of, kvs_op_family_name, kvs_attention_layout
 *
 * matmul      aten::mm, addmm, bmm, baddbmm, linear, matmul, _grouped_mm,
 *             _scaled_mm; kvs::linear, router_linear, lm_head, linear_multi(_rope),
 *             linear_per_head, moe_experts
 * attention   aten::scaled_dot_product_attention and its backends, the
 *             flash/efficient forward ops, flash_attn::*, kvs::mla_decode
 * embedding   aten::embedding, index_select, kvs::embedding
 * norm        layer/rms/group norms, kvs::rms_norm, add_rms_norm
 * elementwise pointwise aten ops, softmax, kvs::swiglu, rope (bytes only)
 * reduction   mean, sum, amax, ... (input bytes only)
 * copy        copy/cast ops: bytes as the copy/cast groups size them (groups.c)
 * Any other op, or one whose shapes do not fit its formula, is unknown:
 * bytes and FLOPs < 0. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_OPCOST_H
#define KVS_ANALYZERS_OPCOST_H

#include "shapes.h"

enum kvs_op_family {
    KVS_OPF_UNKNOWN = 0,
    KVS_OPF_MATMUL,
    KVS_OPF_ATTENTION,
    KVS_OPF_EMBEDDING,
    KVS_OPF_NORM,
    KVS_OPF_ELEMENTWISE,
    KVS_OPF_REDUCTION,
    KVS_OPF_COPY,
};

struct kvs_op_cost {
    enum kvs_op_family family;   /* by the op's name alone */
    double bytes;                /* read + written per call; < 0 unknown (copy: groups.c says) */
    double flops;                /* per call; < 0 unknown, or not defined (bytes-only families) */
    const char *precision;       /* "fp8", "bf16", "fp16", "fp32" for matmul/attention: whose
                                    tensor peak bounds it; NULL otherwise or when unknown */
    double rows;                 /* a matmul against a weight: the activation's rows (tokens:
                                    the M of a decode GEMM); < 0 otherwise (bmm of two
                                    activations, an unknown shape) */
    double weight_bytes;         /* with rows: the weight bytes a call reads; < 0 unknown */
};

/* The cost of one call of op with tensors s (s may be NULL: no shapes). */
void kvs_op_cost_of(const char *op, const struct kvs_shape *s, struct kvs_op_cost *out);

/* 'H' for an attention op whose q, k, v are [B, H, L, D] (SDPA and its
 * backends), 'L' for [B, L, H, D] (the flash / memory-efficient forward
 * ops), 0 for any other op (kv_read.c reads the keys' length by it) */
int kvs_attention_layout(const char *op);

/* "matmul", "attention", ...; NULL for KVS_OPF_UNKNOWN */
const char *kvs_op_family_name(enum kvs_op_family f);

#endif
