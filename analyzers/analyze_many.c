/* analyzers/analyze_many.c — kvs_analyze_many(): several inputs analysed at
 * once, one thread per input, at most `jobs` at a time; each job's messages
 * delivered to its own logger in input order (kvscope/analyze_many.h).
 *
 *   kvscope report r0.json.gz ... r255.json.gz --jobs 8
 *
 * A pool of worker threads (the calling thread is one of them) takes the
 * inputs in order. Each job runs kvs_analyze_file() with a copy of its
 * options whose logger and progress callback point here: a message of the
 * job at the head of the queue (every job before it done) goes straight to
 * the job's logger, any other is held until its job reaches the head. One
 * lock serialises every callback.
 *
 * Tested in tests/test_analyze_many.c (also under ThreadSanitizer) and
 * tests/test_jobs.py (kvscope report/compare --jobs N against --jobs 1).
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "kvscope/analyze_many.h"
#include "analyze_input.h"
#include "kvscope/rank_summary.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* a worker's stack: the reader is iterative, cJSON recurses over a header
 * value (at most 1000 levels); 8 MiB whatever the environment's default */
#define WORKER_STACK ((size_t)8 << 20)

struct held_msg {
    enum kvs_log_level level;
    char *text;
};

struct slot {
    struct pool *pool;
    size_t index;
    struct kvs_analysis_options opt;  /* the job's, with log and progress pointing here */
    struct kvs_logger log;            /* the job's own logger */
    kvs_progress_fn progress;         /* the job's own progress callback */
    void *progress_user;
    struct held_msg *held;
    size_t nheld, capheld;
    size_t held_bytes;
    size_t dropped;                   /* messages over KVS_ANALYZE_MANY_HELD_BYTES */
    bool skip;                        /* its options failed kvs_analysis_options_check */
    bool done;
};

struct pool {
    pthread_mutex_t lock;
    struct kvs_analyze_job *jobs;
    struct slot *slots;
    size_t n;
    size_t next;                      /* the next job to start */
    size_t head;                      /* the first job whose messages are not all delivered */
};

static void deliver(const struct kvs_logger *lg, enum kvs_log_level level, const char *text)
{
    kvs_log(lg, level, "%s", text);
}

/* under the lock: everything slot s holds, to its logger */
static void flush_held(struct slot *s)
{
    for (size_t i = 0; i < s->nheld; i++) {
        deliver(&s->log, s->held[i].level, s->held[i].text);
        free(s->held[i].text);
    }
    s->nheld = 0;
    s->held_bytes = 0;
    if (s->dropped) {
        kvs_log(&s->log, KVS_LOG_WARN,
                "%zu more message%s of this input not shown: over the %zu KiB held while the "
                "inputs before it were read",
                s->dropped, s->dropped == 1 ? "" : "s", KVS_ANALYZE_MANY_HELD_BYTES >> 10);
        s->dropped = 0;
    }
}

static void hold(struct slot *s, enum kvs_log_level level, const char *message)
{
    size_t len = strlen(message);
    if (s->held_bytes + len > KVS_ANALYZE_MANY_HELD_BYTES) {
        s->dropped++;
        return;
    }
    if (s->nheld == s->capheld) {
        size_t cap = s->capheld ? 2 * s->capheld : 8;
        struct held_msg *v = realloc(s->held, cap * sizeof *v);
        if (!v) {
            s->dropped++;
            return;
        }
        s->held = v;
        s->capheld = cap;
    }
    char *text = malloc(len + 1);
    if (!text) {
        s->dropped++;
        return;
    }
    memcpy(text, message, len + 1);
    s->held[s->nheld++] = (struct held_msg){level, text};
    s->held_bytes += len;
}

static void slot_log(void *user, enum kvs_log_level level, const char *message)
{
    struct slot *s = user;
    pthread_mutex_lock(&s->pool->lock);
    if (s->index == s->pool->head)
        deliver(&s->log, level, message);
    else
        hold(s, level, message);
    pthread_mutex_unlock(&s->pool->lock);
}

static void slot_progress(void *user, uint64_t done, uint64_t total)
{
    struct slot *s = user;
    pthread_mutex_lock(&s->pool->lock);
    s->progress(s->progress_user, done, total);
    pthread_mutex_unlock(&s->pool->lock);
}

/* One input: a kvscope report read as its rank's summary (reports_ok), else
 * a trace analysed. */
static void analyze_one(struct kvs_analyze_job *j, const struct kvs_analysis_options *opt)
{
    bool report = false;
    if (j->reports_ok)
        kvs_rank_report_sniff(j->path, &report); /* unreadable: the trace reader says why */
    j->status = report ? kvs_rank_summary_read(j->path, opt, &j->analysis)
                       : kvs_analyze_file(j->path, opt, &j->analysis);
    if (j->status != KVS_STATUS_OK && j->status != KVS_STATUS_TRUNCATED)
        j->analysis = NULL; /* as documented, whatever a failure path left */
    if (j->done)
        j->done(j, j->done_user);
}

/* under the lock: job i is done; deliver what the jobs now at the head hold */
static void finish(struct pool *p, size_t i)
{
    p->slots[i].done = true;
    while (p->head < p->n) {
        struct slot *s = &p->slots[p->head];
        flush_held(s);
        if (!s->done)
            break;
        p->head++;
    }
}

static void run_job(struct pool *p, size_t i)
{
    struct kvs_analyze_job *j = &p->jobs[i];
    struct slot *s = &p->slots[i];
    if (!s->skip)
        analyze_one(j, &s->opt);
    else if (j->done)
        j->done(j, j->done_user);
    pthread_mutex_lock(&p->lock);
    finish(p, i);
    pthread_mutex_unlock(&p->lock);
}

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        size_t i = p->next < p->n ? p->next++ : p->n;
        pthread_mutex_unlock(&p->lock);
        if (i == p->n)
            return NULL;
        run_job(p, i);
    }
}

int kvs_cpu_count(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (n < 4096 ? (int)n : 4096) : 1;
}

/* Options that check alike: the fields kvs_analysis_options_check reads. */
static bool same_checks(const struct kvs_analysis_options *a, const struct kvs_analysis_options *b)
{
    return a == b || (a && b && a->model == b->model && a->model_config == b->model_config &&
                      a->step_regex == b->step_regex && a->kv_dtype == b->kv_dtype &&
                      a->kv_capacity == b->kv_capacity && a->context == b->context &&
                      a->peak_gbps == b->peak_gbps && a->batch == b->batch);
}

/* Each job's options checked before any input is read, once for a run of
 * jobs that share them: a bad --model is said once, not once per input.
 * Sets skip[i] and the job's status for those that fail. */
static void check_options(struct kvs_analyze_job *jobs, size_t n, bool *skip)
{
    struct kvs_analysis_options defaults;
    kvs_analysis_options_init(&defaults);
    const struct kvs_analysis_options *last = NULL;
    enum kvs_status last_st = KVS_STATUS_OK;
    for (size_t i = 0; i < n; i++) {
        const struct kvs_analysis_options *o = jobs[i].opt ? jobs[i].opt : &defaults;
        if (!last || !same_checks(o, last)) {
            last = o;
            last_st = kvs_analysis_options_check(o);
        }
        skip[i] = jobs[i].bad_options = last_st != KVS_STATUS_OK;
        if (skip[i])
            jobs[i].status = last_st;
    }
}

static enum kvs_status first_failure(const struct kvs_analyze_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (jobs[i].status != KVS_STATUS_OK && jobs[i].status != KVS_STATUS_TRUNCATED)
            return jobs[i].status;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_analyze_many(struct kvs_analyze_job *jobs, size_t n, int jobs_max)
{
    if (n == 0)
        return KVS_STATUS_OK;
    if (!jobs)
        return KVS_STATUS_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].path)
            return KVS_STATUS_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        jobs[i].analysis = NULL;
        jobs[i].status = KVS_STATUS_NO_MEMORY;
        jobs[i].bad_options = false;
    }
    bool *skip = calloc(n, sizeof *skip);
    if (!skip)
        return KVS_STATUS_NO_MEMORY;
    check_options(jobs, n, skip);
    size_t threads = jobs_max > 0 ? (size_t)jobs_max : (size_t)kvs_cpu_count();
    if (threads > n)
        threads = n;
    struct pool p = {.jobs = jobs, .n = n};
    pthread_t *tid = NULL;
    if (threads > 1) {
        p.slots = calloc(n, sizeof *p.slots);
        tid = calloc(threads, sizeof *tid);
    }
    if (!p.slots || !tid || pthread_mutex_init(&p.lock, NULL) != 0) {
        /* one at a time in the calling thread, the options as given:
         * kvs_analyze_file() in turn (also when the pool cannot be made) */
        free(p.slots);
        free(tid);
        for (size_t i = 0; i < n; i++) {
            if (!skip[i])
                analyze_one(&jobs[i], jobs[i].opt);
            else if (jobs[i].done)
                jobs[i].done(&jobs[i], jobs[i].done_user);
        }
        free(skip);
        return first_failure(jobs, n);
    }
    for (size_t i = 0; i < n; i++) {
        struct slot *s = &p.slots[i];
        s->pool = &p;
        s->index = i;
        s->skip = skip[i];
        if (jobs[i].opt)
            s->opt = *jobs[i].opt;
        else
            kvs_analysis_options_init(&s->opt);
        s->log = s->opt.log;
        s->opt.log.fn = slot_log;
        s->opt.log.user = s;
        if (s->opt.progress) {
            s->progress = s->opt.progress;
            s->progress_user = s->opt.progress_user;
            s->opt.progress = slot_progress;
            s->opt.progress_user = s;
        }
    }
    pthread_attr_t attr;
    bool have_attr = pthread_attr_init(&attr) == 0;
    if (have_attr)
        pthread_attr_setstacksize(&attr, WORKER_STACK);
    size_t started = 0;
    for (size_t t = 1; t < threads; t++) /* the calling thread is the first worker */
        if (pthread_create(&tid[started], have_attr ? &attr : NULL, worker, &p) == 0)
            started++;
    if (have_attr)
        pthread_attr_destroy(&attr);
    worker(&p);
    for (size_t t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    /* every job is done and so every message delivered; free what a
     * failed allocation may have left */
    for (size_t i = 0; i < n; i++)
        free(p.slots[i].held);
    pthread_mutex_destroy(&p.lock);
    free(p.slots);
    free(tid);
    free(skip);
    return first_failure(jobs, n);
}
