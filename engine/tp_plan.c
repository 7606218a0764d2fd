/* engine/tp_plan.c — the tensor-parallel sharding plan (kvscope/engine_tp.h):
 * the per-rank view of the model, which slice of each split dimension a rank
 * owns, and each weight tensor's slice (engine/shard.h) with its CPU fill.
 * Host only; tested by tests/test_engine_tp_plan.c (unit suite). */
#include "kvscope/engine_tp.h"

#include <stdio.h>
#include <string.h>

#include "shard.h"
#include "synth.h"

enum kvs_status kvs_tp_plan_init(const struct kvs_model_config *c, int world,
                                 struct kvs_tp_plan *out, const struct kvs_logger *lg)
{
    if (!c || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (world < 1 || world > KVS_TP_MAX_WORLD) {
        kvs_log(lg, KVS_LOG_ERROR, "tensor parallel: %d ranks is outside [1, %d]", world,
                KVS_TP_MAX_WORLD);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    static const char *const what[] = {"attention heads", "the dense intermediate size",
                                       "the experts' intermediate size"};
    const int dims[] = {c->heads, c->inter, c->moe_inter};
    for (int d = 0; d < 3; d++) {
        if (dims[d] < 1 || dims[d] % world != 0) {
            kvs_log(lg, KVS_LOG_ERROR,
                    "tensor parallel: %d ranks do not divide %s (%d) of %s; the heads, the dense "
                    "and the experts' intermediate sizes are split evenly",
                    world, what[d], dims[d], c->name);
            return KVS_STATUS_INVALID_ARGUMENT;
        }
    }
    memset(out, 0, sizeof *out);
    out->world = world;
    out->full = *c;
    out->rank = *c;
    out->rank.heads = c->heads / world;
    out->rank.inter = c->inter / world;
    out->rank.moe_inter = c->moe_inter / world;
    if (world > 1)
        snprintf(out->rank.name, sizeof out->rank.name, "%.40s, one rank of tp %d", c->name, world);
    return KVS_STATUS_OK;
}

void kvs_tp_rank_slice(const struct kvs_tp_plan *p, enum kvs_tp_dim dim, int rank, int *first,
                       int *count)
{
    int per = dim == KVS_TP_HEADS ? p->rank.heads
              : dim == KVS_TP_INTER ? p->rank.inter
                                    : p->rank.moe_inter;
    *first = rank * per;
    *count = per;
}

size_t kvs_tp_plan_describe(const struct kvs_tp_plan *p, char *buf, size_t size)
{
    const struct kvs_model_config *c = &p->full;
    int n = snprintf(
        buf, size,
        "tensor parallel over %d GPU%s (NCCL all-reduce, one thread per GPU):\n"
        "  split per rank: attention heads %d -> %d (q_b rows, W_UK, W_UV, o_proj columns); "
        "dense MLP intermediate %d -> %d; each expert's intermediate %d -> %d (every resident "
        "expert on every rank)\n"
        "  replicated on every rank: q_a, kv_a, the MLA latent KV pool (each rank reads all of "
        "it), routers, norms, embedding, LM head\n"
        "  all-reduce (BF16 sum of [batch, %d]) after o_proj and after each MLP: %d a step\n",
        p->world, p->world == 1 ? "" : "s", c->heads, p->rank.heads, c->inter, p->rank.inter,
        c->moe_inter, p->rank.moe_inter, c->hidden, 2 * c->layers);
    if (size)
        buf[size - 1] = '\0';
    return n > 0 ? (size_t)n : 0;
}

// ----------------------------------------------------------------------------
// tensors

void kvs_tp_shard(const struct kvs_tp_plan *p, int rank, const struct kvs_wdesc *full,
                  struct kvs_wdesc *local, struct kvs_shard *s)
{
    *local = *full;
    memset(s, 0, sizeof *s);
    s->count_g = full->count;
    s->rows_g = full->rows;
    s->cols_g = full->cols;
    s->row_block = full->rows;
    const int64_t N = p->world;
    if (N == 1)
        return; /* the whole model */
    switch (full->kind) {
    case KVS_W_Q_B_NOPE: /* [H*nope, q_lora]: the rows of the rank's heads */
    case KVS_W_Q_B_ROPE:
        local->rows = full->rows / N;
        s->row_block = local->rows;
        s->row_off = rank * local->rows;
        break;
    case KVS_W_UK: /* H x [...]: the rank's heads */
    case KVS_W_UV:
        local->count = full->count / N;
        s->count_off = rank * local->count;
        break;
    case KVS_W_O:         /* [hidden, H*v]: the columns of the rank's heads */
    case KVS_W_MLP_DOWN:  /* [hidden, inter]: the rank's intermediate columns */
    case KVS_W_EXP_DOWN:  /* experts x [hidden, moe_inter] */
        local->cols = full->cols / N;
        s->col_off = rank * local->cols;
        break;
    case KVS_W_MLP_GATE_UP: /* [2*inter, hidden]: the rank's gate rows, then its up rows */
    case KVS_W_EXP_GATE_UP: {
        int64_t inter = full->rows / 2, mine = inter / N;
        local->rows = 2 * mine;
        s->row_block = mine;
        s->row_stride = inter;
        s->row_off = rank * mine;
        break;
    }
    default: /* replicated */
        break;
    }
}

int kvs_shard_is_whole(const struct kvs_wdesc *local, const struct kvs_shard *s)
{
    /* rank 0's share of a head-split stack starts at 0 like the whole one:
     * the matrix count tells them apart */
    return local->count == s->count_g && local->rows == s->rows_g && local->cols == s->cols_g &&
           s->count_off == 0 &&
           s->row_off == 0 && s->col_off == 0 && s->row_block == s->rows_g;
}

void kvs_eng_cpu_fill_bf16_shard(kvs_bf16 *dst, const struct kvs_wdesc *d,
                                 const struct kvs_shard *s, uint64_t key)
{
    uint64_t at = 0;
    for (int64_t k = 0; k < d->count; k++)
        for (int64_t i = 0; i < d->rows; i++)
            for (int64_t j = 0; j < d->cols; j++)
                dst[at++] = kvs_synth_value_bf16(key, (uint64_t)kvs_shard_index(s, k, i, j),
                                                 d->amp, d->offset);
}
