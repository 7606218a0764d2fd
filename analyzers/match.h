/* match.h — say what a group's dims mean: KV capacity, active tokens, the
 * MLA latent row (kv_lora_rank + qk_rope_head_dim), GQA heads x head_dim,
 * once per layer; and give each group its role (the pairing key of
 * compare).
 *
 * defines: kvs_match_groups
 *
 * With a model config the row and the layer count come from it, and
 * --kv-capacity names the capacity (then nothing is inferred). Without them:
 * the layer count is the number of layer-named ranges per step (layer_0,
 * layers.12, ...), and a leading dim at least 8x larger than every other
 * token count seen with the same row (the active tokens: [1024,1,576] beside
 * [131072,1,576]), touched in every step, keeping its size, and not the
 * output of a gather of that many rows, moved by a copy/cast op and not
 * float32 (a KV role: no GEMM activation, no RoPE table), is a preallocated
 * buffer (docs/analysis.md lists the rules). Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_MATCH_H
#define KVS_ANALYZERS_MATCH_H

#include "tables.h"

/* Reads the records and the steps (in), the model (NULL: none) and
 * --kv-capacity (0: none); adds each group's match, role and active tokens
 * to the group table and fills the model facts (layers, backward). */
enum kvs_status kvs_match_groups(const struct kvs_stage_in *in, const struct kvs_model *model,
                                 int64_t kv_capacity, struct kvs_arena *ar,
                                 struct kvs_group_table *groups, struct kvs_model_facts *mf);

#endif
