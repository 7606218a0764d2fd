/* cli/rank_spool.c — the ranks' own reports of `kvscope report R0 R1 ...`
 * written to a temporary file as each trace is read, so that only each
 * rank's summary (kvs_rank_summary_of) is kept until the view across ranks
 * is written: memory is bounded by the traces read at once (--jobs), not by
 * the number of ranks. The document is the same bytes as rendering every
 * rank at the end (tests/test_report_identity.py, tests/test_jobs.py).
 *
 *   kvscope report rank*.json.gz --jobs 8
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kvscope/analyze_many.h"
#include "kvscope/rank_summary.h"
#include "kvscope/report.h"

struct spool_entry {
    const struct kvs_analysis *a; /* the summary kept of it; NULL: not spooled */
    long off;
    size_t len;
};

struct kvs_rank_spool {
    pthread_mutex_t lock;
    FILE *f;                      /* NULL: nothing is spooled (every rank kept whole) */
    const struct kvs_analyze_job *jobs;
    struct spool_entry *ent;
    size_t n;
    struct kvs_render_options ropt;
};

struct kvs_rank_spool *kvs_rank_spool_open(const struct kvs_analyze_job *jobs, size_t n,
                                           const struct kvs_render_options *ropt)
{
    struct kvs_rank_spool *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->ent = calloc(n ? n : 1, sizeof *s->ent);
    if (!s->ent || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s->ent);
        free(s);
        return NULL;
    }
    s->f = tmpfile(); /* unnamed, gone at exit; NULL: the ranks are kept whole */
    s->jobs = jobs;
    s->n = n;
    s->ropt = *ropt;
    s->ropt.rank_section = NULL;
    return s;
}

/* kvs_analyze_job.done: the rank's own report to the spool, its summary kept */
void kvs_rank_spool_done(struct kvs_analyze_job *job, void *user)
{
    struct kvs_rank_spool *s = user;
    struct kvs_analysis *a = job->analysis, *sum = NULL;
    if (!s->f || !a || a->trace.report_path) /* failed, or read from its report: nothing to write */
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return;
    enum kvs_status st = kvs_render_rank_section(m, a, &s->ropt);
    if (fclose(m) != 0 || st != KVS_STATUS_OK || kvs_rank_summary_of(a, &sum) != KVS_STATUS_OK) {
        free(text); /* kept whole, rendered at the end */
        return;
    }
    size_t i = (size_t)(job - s->jobs);
    pthread_mutex_lock(&s->lock);
    bool ok = fseek(s->f, 0, SEEK_END) == 0;
    long off = ok ? ftell(s->f) : -1;
    ok = ok && off >= 0 && fwrite(text, 1, len, s->f) == len;
    if (ok)
        s->ent[i] = (struct spool_entry){sum, off, len};
    pthread_mutex_unlock(&s->lock);
    free(text);
    if (!ok) {
        kvs_analysis_free(sum);
        return;
    }
    job->analysis = sum;
    kvs_analysis_free(a);
}

/* kvs_render_options.rank_section: the spooled bytes of the rank whose summary a is */
enum kvs_status kvs_rank_spool_section(FILE *out, const struct kvs_analysis *a, void *user)
{
    struct kvs_rank_spool *s = user;
    const struct spool_entry *e = NULL;
    for (size_t i = 0; i < s->n && !e; i++)
        if (s->ent[i].a == a)
            e = &s->ent[i];
    if (!e) /* not spooled: rendered now */
        return kvs_render_rank_section(out, a, &s->ropt);
    if (fseek(s->f, e->off, SEEK_SET) != 0)
        return KVS_STATUS_IO;
    char buf[1 << 16];
    for (size_t left = e->len; left > 0;) {
        size_t k = left < sizeof buf ? left : sizeof buf;
        if (fread(buf, 1, k, s->f) != k || fwrite(buf, 1, k, out) != k)
            return KVS_STATUS_IO;
        left -= k;
    }
    return KVS_STATUS_OK;
}

void kvs_rank_spool_close(struct kvs_rank_spool *s)
{
    if (!s)
        return;
    if (s->f)
        fclose(s->f);
    pthread_mutex_destroy(&s->lock);
    free(s->ent);
    free(s);
}
