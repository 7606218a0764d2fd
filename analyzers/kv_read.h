/* kv_read.h — kv_full_buffer_read: ops that read a KV-role buffer at its full
 * preallocated size every step while far fewer tokens are active.
 *
 * defines: kvs_kv_full_reads
 *
 * Readers are (a) attention ops whose key/value dims carry the sequence
 * length (aten::scaled_dot_product_attention and its _scaled_dot_product_*
 * backends, [B,H,S,D]; aten::_efficient_attention_forward,
 * _flash_attention_forward, flash_attn ops, [B,S,H,D]) whose S is the KV
 * capacity — given (--kv-capacity) or inferred (fixed in every step, 8x the
 * active tokens or more) — and (b) copies of the whole buffer that keep its
 * dtype: a copy/cast group matched to the capacity (match.c), or one whose
 * tensor is as large as such an attention's keys or values with the
 * capacity as one of its dims (repeat_kv's [1,Hkv,n,S,D] clone, a
 * .contiguous() of the cache). A full-buffer cast stays kv_full_buffer_cast
 * (findings.c) and is not counted again here. All readers of one capacity
 * make one finding, their ops listed. docs/analysis.md has the rules and
 * the sources of the active token count. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_KV_READ_H
#define KVS_ANALYZERS_KV_READ_H

#include "tables.h"
#include "group_figs.h" /* struct kvs_finding_list */

/* Reads the records, the activities, steps, groups and ops, the options
 * (--kv-capacity, --context), the model facts and the step's GPUs; appends
 * the findings to *out, their words in ar; full_read[gi] (in->groups->n
 * entries, the caller's) set for each copy/cast group counted as a copy of
 * a whole buffer. KVS_STATUS_OK or KVS_STATUS_NO_MEMORY. */
enum kvs_status kvs_kv_full_reads(const struct kvs_stage_in *in, struct kvs_arena *ar, struct kvs_finding_list *out,
                                  bool *full_read);

#endif
