/* kvscope/analyze_many.h — several inputs analysed at once (the ranks of one
 * run, BEFORE and its AFTERs): one thread per input, at most `jobs` at a
 * time, so memory is bounded by the number of jobs, not of inputs.
 *
 * defines: struct kvs_analyze_job, kvs_analyze_many, kvs_cpu_count
 *
 *   struct kvs_analyze_job jobs[n] = {{.path = "r0.json", .opt = &opt}, ...};
 *   kvs_analyze_many(jobs, n, kvs_cpu_count());
 *   ... jobs[i].status, jobs[i].analysis ... kvs_analysis_free(jobs[i].analysis);
 *
 * Each input is analysed exactly as kvs_analyze_file() analyses it alone (or,
 * with reports_ok, read as kvs_rank_summary_read() reads a report), so
 * the results do not depend on `jobs` (tests/test_analyze_many.c,
 * tests/test_jobs.py: reports byte-identical to --jobs 1). Every input is
 * analysed, also after another failed: each job's status says how it went,
 * and the logger of a job that failed has said why, naming its input.
 *
 * Callbacks: a job's messages reach its own opt->log in input order — all of
 * job 0's, then job 1's, ... — as soon as the jobs before it are done (job
 * 0's as they happen); a later job's are held until then (at most
 * KVS_ANALYZE_MANY_HELD_BYTES a job; what is over that is counted and said).
 * Loggers and progress callbacks are never called concurrently: one at a
 * time, from the worker threads, under one lock — they need no locking of
 * their own, and must not call kvs_analyze_many themselves.
 *
 * Thread safety: the analysis keeps no global state (no static buffers, no
 * caches); cJSON, zlib and SQLite are used as their documentation allows
 * from several threads (cJSON_GetErrorPtr and cJSON_InitHooks are never
 * called). Several calls may run at once.
 */
#ifndef KVSCOPE_ANALYZE_MANY_H
#define KVSCOPE_ANALYZE_MANY_H

#include <stdbool.h>
#include <stddef.h>

#include "kvscope/analysis.h"
#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One input of kvs_analyze_many(). */
struct kvs_analyze_job {
    const char *path;                       /* in: as kvs_analyze_file() takes it ("-": stdin) */
    const struct kvs_analysis_options *opt; /* in: its options (jobs may share one); NULL: defaults */
    bool reports_ok;                        /* in: a kvscope JSON report at path is read as its
                                               rank's summary (kvscope/rank_summary.h), a trace
                                               is analysed */
    struct kvs_analysis *analysis;          /* out: set on KVS_STATUS_OK and KVS_STATUS_TRUNCATED,
                                               else NULL; the caller frees it */
    enum kvs_status status;                 /* out: what kvs_analyze_file() returned for it */
    bool bad_options;                       /* out: its options were refused before any input
                                               was read (a bad step regex, an unknown bundled
                                               model): said once for the jobs that share them */
    /* in: called as soon as this job is done (status and analysis set), in
     * the thread that ran it and outside the library's lock — the done
     * calls of several jobs may run at once; it may replace (and free)
     * job->analysis, e.g. write the rank's report and keep its summary.
     * NULL: none. */
    void (*done)(struct kvs_analyze_job *job, void *user);
    void *done_user;
};

/* Messages a job holds while earlier jobs run, at most (bytes of text). */
#define KVS_ANALYZE_MANY_HELD_BYTES ((size_t)1 << 20)

/* Analyse jobs[0..n) with at most `jobs` threads at once (jobs <= 0: one
 * per CPU, kvs_cpu_count(); never more threads than inputs; jobs == 1 runs
 * them one after another in the calling thread). Returns KVS_STATUS_OK when
 * every input was analysed (OK or TRUNCATED), else the status of the first
 * job, in input order, that failed; KVS_STATUS_INVALID_ARGUMENT (no job
 * run) for jobs == NULL with n > 0 or a job without a path. A thread that
 * cannot be started leaves its share to the others (at worst the calling
 * thread runs every job). */
KVS_API enum kvs_status kvs_analyze_many(struct kvs_analyze_job *jobs, size_t n, int jobs_max);

/* The CPUs this process may run on (its affinity mask, else the online
 * CPUs), at least 1: the default number of jobs. */
KVS_API int kvs_cpu_count(void);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_ANALYZE_MANY_H */
