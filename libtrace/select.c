/* select.c — kvs_trace_select (kvscope/trace_writer.h): one rank's records
 * out of a capture of a whole process that drove several GPUs from several
 * threads (kvscope engine --tp N: one thread per GPU, one CUPTI session);
 * kvs_trace_rank_path: the name of each rank's file.
 * Plain C, no CUPTI: tests/test_trace_select.c feeds it synthetic records.
 *
 * Why the rules look the way they do: CUPTI tags GPU work with its device
 * and API calls with their thread, but a synchronization only with its
 * context, and libraries (NCCL's proxy threads) may launch work for a rank
 * from threads the rank does not own. So the device decides GPU work; the
 * device of a context is learnt from that work; an API call belongs to a
 * rank through its thread or through the work it launched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/trace_writer.h"
#include "writer_internal.h"

static int is_gpu(enum kvs_trace_rec_kind k)
{
    return k == KVS_TREC_KERNEL || k == KVS_TREC_MEMCPY || k == KVS_TREC_MEMSET;
}

static int is_api(enum kvs_trace_rec_kind k)
{
    return k == KVS_TREC_RUNTIME || k == KVS_TREC_DRIVER;
}

static int own_thread(const struct kvs_trace_part *p, uint32_t tid)
{
    if (p->ntids <= 0)
        return 1;
    for (int i = 0; i < p->ntids; i++)
        if (p->tids[i] == tid)
            return 1;
    return 0;
}

static int own_device(const struct kvs_trace_part *p, uint32_t device)
{
    return p->device < 0 || (uint32_t)p->device == device;
}

struct sel {
    struct kvs_map dev_of_ctx; /* context -> device, from GPU work */
    struct kvs_map work_here;  /* correlations of kept GPU work */
    struct kvs_map kept_corr;  /* correlations of kept API calls and work */
    struct kvs_map tid_of;     /* correlation -> thread of its API call */
};

static void sel_free(struct sel *s)
{
    kvs_map_free(&s->dev_of_ctx);
    kvs_map_free(&s->work_here);
    kvs_map_free(&s->kept_corr);
    kvs_map_free(&s->tid_of);
}

static int keep_sync(const struct sel *s, const struct kvs_trace_part *p,
                     const struct kvs_trace_rec *r)
{
    uint64_t dev, tid;
    if (kvs_map_get(&s->dev_of_ctx, r->u.sync.context, &dev))
        return own_device(p, (uint32_t)dev);
    if (r->correlation && kvs_map_get(&s->tid_of, r->correlation, &tid))
        return own_thread(p, (uint32_t)tid);
    return p->process_records;
}

size_t kvs_trace_select(struct kvs_trace_rec *recs, size_t n, const struct kvs_trace_part *part)
{
    if (!part || !recs)
        return n;
    struct sel s = {0};
    unsigned char *keep = malloc(n ? n : 1);
    if (!keep || kvs_map_init(&s.dev_of_ctx, 8) || kvs_map_init(&s.work_here, n / 2 + 1) ||
        kvs_map_init(&s.kept_corr, n / 2 + 1) || kvs_map_init(&s.tid_of, n / 2 + 1)) {
        free(keep);
        sel_free(&s);
        return (size_t)-1;
    }
    int rc = 0;
    /* pass 1: GPU work decides by device; learn contexts and API threads */
    for (size_t i = 0; i < n; i++) {
        const struct kvs_trace_rec *r = &recs[i];
        keep[i] = 0;
        if (is_gpu(r->kind)) {
            rc |= kvs_map_put(&s.dev_of_ctx, r->u.gpu.context, r->u.gpu.device);
            if (own_device(part, r->u.gpu.device)) {
                keep[i] = 1;
                if (r->correlation)
                    rc |= kvs_map_put(&s.work_here, r->correlation, 1);
            }
        } else if (is_api(r->kind) && r->correlation) {
            rc |= kvs_map_put(&s.tid_of, r->correlation, r->u.api.tid);
        }
    }
    /* pass 2: calls, host records, syncs */
    for (size_t i = 0; i < n && !rc; i++) {
        const struct kvs_trace_rec *r = &recs[i];
        if (is_gpu(r->kind)) {
            if (keep[i] && r->correlation)
                rc |= kvs_map_put(&s.kept_corr, r->correlation, 1);
        } else if (is_api(r->kind)) {
            keep[i] = own_thread(part, r->u.api.tid) ||
                      (r->correlation && kvs_map_get(&s.work_here, r->correlation, NULL));
            if (keep[i] && r->correlation)
                rc |= kvs_map_put(&s.kept_corr, r->correlation, 1);
        } else if (r->kind == KVS_TREC_RANGE || r->kind == KVS_TREC_OP) {
            keep[i] = (unsigned char)own_thread(part, r->u.host.tid);
        } else if (r->kind == KVS_TREC_GRAPH_NODE) {
            keep[i] = (unsigned char)own_thread(part, r->u.node.tid);
        } else if (r->kind == KVS_TREC_SYNC) {
            keep[i] = (unsigned char)keep_sync(&s, part, r);
        } else if (r->kind == KVS_TREC_OVERHEAD) {
            keep[i] = part->process_records != 0;
        }
    }
    /* pass 3: links follow what they link */
    for (size_t i = 0; i < n; i++)
        if (recs[i].kind == KVS_TREC_EXTERNAL_ID)
            keep[i] = recs[i].correlation && kvs_map_get(&s.kept_corr, recs[i].correlation, NULL);
    sel_free(&s);
    if (rc) {
        free(keep);
        return (size_t)-1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            recs[k++] = recs[i];
    free(keep);
    return k;
}

// ----------------------------------------------------------------------------
// file names

static int ends_with(const char *s, size_t n, const char *tail)
{
    size_t k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

int kvs_trace_rank_path(const char *path, int rank, int world, char *out, size_t n)
{
    if (!path || !out || n == 0)
        return -1;
    size_t o = 0;
    int templated = 0;
    for (const char *p = path; *p; p++) {
        if (p[0] == '%' && p[1] == 'r') {
            int k = snprintf(out + o, n - o, "%d", rank);
            if (k < 0 || (size_t)k >= n - o)
                return -1;
            o += (size_t)k;
            templated = 1;
            p++;
            continue;
        }
        if (o + 1 >= n)
            return -1;
        out[o++] = *p;
    }
    out[o] = '\0';
    if (templated || world <= 1)
        return 0;
    size_t len = strlen(path), cut = len;
    if (ends_with(path, len, ".json.gz"))
        cut = len - 8;
    else if (ends_with(path, len, ".json"))
        cut = len - 5;
    else if (ends_with(path, len, ".gz"))
        cut = len - 3;
    int k = snprintf(out, n, "%.*s.rank%d%s", (int)cut, path, rank, path + cut);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}
