/* tests/trace_same.h — whether two reads of the same trace kept the same
 * data: the counts, every record field by field (ids are interned in order
 * of first sight, so they agree too), the interned strings and the header
 * facts. For the tests that read one trace two ways: test_event_paths.c
 * (the one-pass path against the general one) and fuzz/fuzz_gz.c (gzip
 * through a small buffer against the plain JSON).
 *
 * defines: kvs_test_same_strings, kvs_test_trace_differ
 */
#ifndef KVSCOPE_TRACE_SAME_H
#define KVSCOPE_TRACE_SAME_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kvscope/reader.h"

static inline bool kvs_test_same_strings(const struct kvs_intern *a, const struct kvs_intern *b)
{
    if (kvs_intern_count(a) != kvs_intern_count(b))
        return false;
    for (uint32_t i = 0; i < kvs_intern_count(a); i++)
        if (kvs_intern_len(a, i) != kvs_intern_len(b, i) ||
            memcmp(kvs_intern_str(a, i), kvs_intern_str(b, i), kvs_intern_len(a, i)))
            return false;
    return true;
}

/* NULL when a and b kept the same, else what differs. `bytes` only counts
 * when both reads got to the end (to_the_end: OK, TRUNCATED): after an
 * error it is what the buffer held, which depends on its size. */
static inline const char *kvs_test_trace_differ(const struct kvs_trace_data *a,
                                                const struct kvs_trace_data *b, bool to_the_end)
{
    if (a->events != b->events || a->n_ops != b->n_ops || a->n_kernels != b->n_kernels ||
        a->n_memcpys != b->n_memcpys || a->n_memsets != b->n_memsets ||
        a->n_runtime != b->n_runtime || a->ops.n != b->ops.n || a->gpus.n != b->gpus.n ||
        a->nranges != b->nranges || a->rts.n != b->rts.n || a->nopkeys != b->nopkeys ||
        (to_the_end && a->bytes != b->bytes) || a->unmatched_end != b->unmatched_end ||
        a->truncated != b->truncated || a->shapes_cut != b->shapes_cut)
        return "counts";
    for (size_t i = 0; i < a->ops.n; i++) {
        const struct kvs_op_rec x_ = kvs_op_get(a, i), y_ = kvs_op_get(b, i), *x = &x_, *y = &y_;
        if (x->ts != y->ts || x->dur != y->dur || x->ext != y->ext || x->key != y->key ||
            x->thread != y->thread || x->captured != y->captured)
            return "ops";
    }
    for (size_t i = 0; i < a->nopkeys; i++)
        if (a->opkeys[i].name != b->opkeys[i].name || a->opkeys[i].shape != b->opkeys[i].shape)
            return "op keys";
    for (size_t i = 0; i < a->rts.n; i++) {
        const struct kvs_rt_rec x_ = kvs_rt_get(a, i), y_ = kvs_rt_get(b, i), *x = &x_, *y = &y_;
        if (x->ts != y->ts || x->dur != y->dur || x->corr != y->corr || x->ext != y->ext ||
            x->thread != y->thread || x->name != y->name || x->graph_launch != y->graph_launch ||
            x->kernel_launch != y->kernel_launch)
            return "runtime calls";
    }
    for (size_t i = 0; i < a->gpus.n; i++) {
        const struct kvs_gpu_rec x_ = kvs_gpu_get(a, i), y_ = kvs_gpu_get(b, i), *x = &x_, *y = &y_;
        if (x->ts != y->ts || x->dur != y->dur || x->ext != y->ext || x->corr != y->corr ||
            x->bytes != y->bytes || x->name != y->name || x->device != y->device ||
            x->stream != y->stream || x->kind != y->kind || x->graph_node != y->graph_node ||
            x->block_threads != y->block_threads || x->grid_blocks != y->grid_blocks)
            return "GPU records";
    }
    for (size_t i = 0; i < a->nranges; i++) {
        const struct kvs_range_rec *x = &a->ranges[i], *y = &b->ranges[i];
        if (x->ts != y->ts || x->dur != y->dur || x->name != y->name || x->thread != y->thread)
            return "ranges";
    }
    if (!kvs_test_same_strings(&a->strings, &b->strings) ||
        !kvs_test_same_strings(&a->threads, &b->threads))
        return "interned strings";
    if (a->rank != b->rank || a->world_size != b->world_size ||
        a->dropped_records != b->dropped_records || a->has_kvscope_meta != b->has_kvscope_meta ||
        a->has_kineto_meta != b->has_kineto_meta)
        return "header facts";
    for (int i = 0; i < KVS_MAX_DEVICES; i++)
        if (!a->device_names[i] != !b->device_names[i] ||
            (a->device_names[i] && strcmp(a->device_names[i], b->device_names[i])))
            return "device names";
    return NULL;
}

#endif /* KVSCOPE_TRACE_SAME_H */
