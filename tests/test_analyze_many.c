/* tests/test_analyze_many.c — kvs_analyze_many() (kvscope/analyze_many.h):
 * several traces analysed at once give, for every --jobs, the same analyses
 * (their JSON reports byte for byte) and the same messages in the same order
 * as kvs_analyze_file() one after another; a trace that cannot be read fails
 * alone, named, and the others are still analysed; bad options are said
 * once; loggers and progress callbacks are never called concurrently.
 *
 *   meson test -C build test_analyze_many
 *   (ThreadSanitizer: meson setup build-tsan -Dcuda=disabled -Db_sanitize=thread)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvs_test.h"
#include "kvscope/analyze_many.h"
#include "kvscope/multirank.h"
#include "kvscope/rank_summary.h"
#include "kvscope/report.h"

#define NTRACE 12

static char dir[256];
static char paths[NTRACE][300];

/* Trace i: (i % 4) + 1 steps of a GEMM and a copy kernel, rank i; every
 * third names no device (a warning); trace 5 is malformed at byte ~120,
 * trace 8 does not exist. */
static void write_traces(void)
{
    snprintf(dir, sizeof dir, "%s/kvs_many_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        KVS_TEST_SETUP_FAILED("mkdtemp");
    for (int i = 0; i < NTRACE; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/rank%d.json", dir, i);
        if (i == 8)
            continue;
        FILE *f = fopen(paths[i], "w");
        if (!f)
            KVS_TEST_SETUP_FAILED("fopen");
        fprintf(f, "{\"distributedInfo\": {\"rank\": %d, \"world_size\": %d},\n", i, NTRACE);
        if (i % 3)
            fputs("\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\"}],\n", f);
        fputs("\"traceEvents\": [\n", f);
        if (i == 5)
            fputs("{\"ph\": \"X\", \"cat\": \"kernel\" \"name\": 1}\n", f);
        int steps = i % 4 + 1, ext = 0;
        for (int s = 0; s < steps; s++) {
            double t = 1000.0 + 100.0 * s;
            fprintf(f,
                    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", "
                    "\"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": 90},\n",
                    s, t);
            for (int k = 0; k < 2; k++, ext++)
                fprintf(f,
                        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1, "
                        "\"ts\": %.3f, \"dur\": 5, \"args\": {\"External id\": %d, \"Input Dims\": "
                        "[[%d, 576], [%d, 576]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"]}},\n"
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7, "
                        "\"ts\": %.3f, \"dur\": %d.5, \"args\": {\"External id\": %d, \"device\": 0, "
                        "\"stream\": 7}},\n",
                        k ? "aten::copy_" : "aten::mm", t + 1 + 20 * k, ext, 1024 * (i + 1),
                        1024 * (i + 1), k ? "direct_copy_kernel_cuda" : "nvjet_tst_gemm",
                        t + 2 + 20 * k, 10 + i + k, ext);
        }
        fputs("{\"ph\": \"i\", \"name\": \"end\", \"pid\": 1, \"tid\": 1, \"ts\": 9999}\n]}\n", f);
        fclose(f);
    }
}

static void remove_traces(void)
{
    for (int i = 0; i < NTRACE; i++)
        unlink(paths[i]);
    rmdir(dir);
}

/* ---------------------------------------------------------------------------
 * a logger and a progress callback that record what they are given and see
 * whether two threads are ever inside at once */

struct record {
    atomic_int inside;
    atomic_int overlaps;
    char *text;                  /* every message, "job|level|message\n" */
    size_t len, cap;
    long progress_calls;
};

struct tagged {
    struct record *rec;
    int job;
};

static void append(struct record *r, const char *s)
{
    size_t n = strlen(s);
    if (r->len + n + 1 > r->cap) {
        r->cap = 2 * (r->len + n + 1);
        r->text = realloc(r->text, r->cap);
        if (!r->text)
            abort();
    }
    memcpy(r->text + r->len, s, n + 1);
    r->len += n;
}

static void enter(struct record *r)
{
    if (atomic_fetch_add(&r->inside, 1) != 0)
        atomic_fetch_add(&r->overlaps, 1);
    usleep(200); /* widen the window a second caller would hit */
}

static void leave(struct record *r) { atomic_fetch_sub(&r->inside, 1); }

static void rec_log(void *user, enum kvs_log_level level, const char *message)
{
    struct tagged *t = user;
    enter(t->rec);
    char line[1200];
    snprintf(line, sizeof line, "%d|%d|%s\n", t->job, (int)level, message);
    append(t->rec, line);
    leave(t->rec);
}

static void rec_progress(void *user, uint64_t done, uint64_t total)
{
    struct tagged *t = user;
    (void)done, (void)total;
    enter(t->rec);
    t->rec->progress_calls++;
    leave(t->rec);
}

static char *json_of(const struct kvs_analysis *a)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    struct kvs_render_options ro = {.format = KVS_FORMAT_JSON};
    enum kvs_status st = kvs_render_report(f, a, &ro);
    fclose(f);
    if (st != KVS_STATUS_OK) {
        free(text);
        return NULL;
    }
    return text;
}

/* Runs every trace with `jobs` threads; the messages go to rec. */
static void run(int jobs, struct record *rec, struct kvs_analyze_job *job, const char *regex)
{
    static struct kvs_analysis_options opt[NTRACE];
    static struct tagged tag[NTRACE];
    for (int i = 0; i < NTRACE; i++) {
        kvs_analysis_options_init(&opt[i]);
        opt[i].step_regex = regex;
        tag[i] = (struct tagged){rec, i};
        opt[i].log = (struct kvs_logger){rec_log, &tag[i], KVS_LOG_INFO};
        opt[i].progress = rec_progress;
        opt[i].progress_user = &tag[i];
        job[i] = (struct kvs_analyze_job){.path = paths[i], .opt = &opt[i]};
    }
    kvs_analyze_many(job, NTRACE, jobs);
}

static void free_jobs(struct kvs_analyze_job *job)
{
    for (int i = 0; i < NTRACE; i++)
        kvs_analysis_free(job[i].analysis);
}

// ----------------------------------------------------------------------------

static void test_same_for_every_jobs(void)
{
    write_traces();
    struct record ref = {0};
    struct kvs_analyze_job one[NTRACE];
    run(1, &ref, one, NULL);
    /* jobs 1 is kvs_analyze_file in turn: check it against that directly */
    for (int i = 0; i < NTRACE; i++) {
        struct kvs_analysis *a = NULL;
        struct kvs_analysis_options o;
        kvs_analysis_options_init(&o);
        o.log.min_level = KVS_LOG_ERROR + 1; /* quiet */
        enum kvs_status st = kvs_analyze_file(paths[i], &o, &a);
        KVS_CHECK_EQ_INT(one[i].status, st);
        KVS_CHECK_EQ_INT(one[i].bad_options, 0);
        if (i == 5 || i == 8) {
            KVS_CHECK_MSG(st != KVS_STATUS_OK && !one[i].analysis, "trace %d should fail", i);
        } else {
            KVS_CHECK_EQ_INT(st, KVS_STATUS_OK);
            KVS_REQUIRE(a && one[i].analysis);
            KVS_CHECK_EQ_INT(one[i].analysis->steps.count, i % 4 + 1);
            KVS_CHECK_EQ_INT(one[i].analysis->trace.rank, i);
            char *x = json_of(a), *y = json_of(one[i].analysis);
            KVS_CHECK_MSG(x && y && !strcmp(x, y), "trace %d: report differs", i);
            free(x);
            free(y);
        }
        kvs_analysis_free(a);
    }
    KVS_CHECK_MSG(ref.len > 0 && strstr(ref.text, "rank8.json: cannot open"),
                  "the missing trace is named: %s", ref.text ? ref.text : "(none)");
    KVS_CHECK_MSG(strstr(ref.text, "5|2|") && strstr(ref.text, "malformed"),
                  "the malformed trace's error is its own job's");
    KVS_CHECK_EQ_INT(kvs_analyze_many(one, 0, 4), KVS_STATUS_OK);

    int jobs[] = {2, 3, 4, 8, NTRACE, 64, 0};
    for (size_t k = 0; k < sizeof jobs / sizeof *jobs; k++) {
        for (int rep = 0; rep < 3; rep++) {
            struct record rec = {0};
            struct kvs_analyze_job many[NTRACE];
            run(jobs[k], &rec, many, NULL);
            KVS_CHECK_MSG(rec.overlaps == 0, "jobs %d: %d callbacks ran concurrently", jobs[k],
                          (int)rec.overlaps);
            KVS_CHECK_MSG(rec.len == ref.len && !memcmp(rec.text, ref.text, ref.len),
                          "jobs %d: messages differ from jobs 1:\n%s\n--- jobs 1:\n%s", jobs[k],
                          rec.text ? rec.text : "", ref.text);
            KVS_CHECK_MSG(rec.progress_calls >= NTRACE - 1, "jobs %d: %ld progress calls", jobs[k],
                          rec.progress_calls);
            for (int i = 0; i < NTRACE; i++) {
                KVS_CHECK_EQ_INT(many[i].status, one[i].status);
                KVS_CHECK_EQ_INT(!many[i].analysis, !one[i].analysis);
                if (!many[i].analysis || !one[i].analysis)
                    continue;
                char *x = json_of(one[i].analysis), *y = json_of(many[i].analysis);
                KVS_CHECK_MSG(x && y && !strcmp(x, y), "jobs %d, trace %d: report differs", jobs[k], i);
                free(x);
                free(y);
            }
            free_jobs(many);
            /* a failed input: the first failure's status, in input order */
            KVS_CHECK_EQ_INT(kvs_analyze_many(many, NTRACE, jobs[k]), many[5].status);
            free_jobs(many);
            free(rec.text);
        }
    }
    free_jobs(one);
    free(ref.text);
    remove_traces();
}

/* A bad --step-regex is refused once for all the jobs that share it. */
static void test_bad_options_said_once(void)
{
    write_traces();
    for (int jobs = 1; jobs <= 4; jobs += 3) {
        struct record rec = {0};
        struct kvs_analyze_job job[NTRACE];
        run(jobs, &rec, job, "(unclosed");
        for (int i = 0; i < NTRACE; i++) {
            KVS_CHECK_EQ_INT(job[i].status, KVS_STATUS_INVALID_ARGUMENT);
            KVS_CHECK_EQ_INT(job[i].bad_options, 1);
            KVS_CHECK(!job[i].analysis);
        }
        int lines = 0;
        for (size_t k = 0; k < rec.len; k++)
            lines += rec.text[k] == '\n';
        KVS_CHECK_MSG(lines == 1 && !strncmp(rec.text, "0|2|", 4), "jobs %d: said once, by job 0: %s",
                      jobs, rec.text ? rec.text : "(nothing)");
        KVS_CHECK_EQ_INT(rec.progress_calls, 0);
        free(rec.text);
    }
    remove_traces();
}

/* done: called once a job, may swap the analysis for its summary
 * (kvs_rank_summary_of) — and the view across ranks is the same */
static atomic_int done_calls;

static void keep_summary(struct kvs_analyze_job *job, void *user)
{
    (void)user;
    atomic_fetch_add(&done_calls, 1);
    struct kvs_analysis *s = NULL;
    if (job->analysis && kvs_rank_summary_of(job->analysis, &s) == KVS_STATUS_OK) {
        kvs_analysis_free(job->analysis);
        job->analysis = s;
    }
}

static void test_done_keeps_summary(void)
{
    write_traces();
    struct record rec = {0};
    struct kvs_analyze_job full[NTRACE], sum[NTRACE];
    run(1, &rec, full, NULL);
    free(rec.text);
    memset(&rec, 0, sizeof rec);
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    opt.log.min_level = KVS_LOG_ERROR + 1;
    for (int i = 0; i < NTRACE; i++)
        sum[i] = (struct kvs_analyze_job){.path = paths[i], .opt = &opt, .done = keep_summary};
    atomic_store(&done_calls, 0);
    kvs_analyze_many(sum, NTRACE, 3);
    KVS_CHECK_EQ_INT(atomic_load(&done_calls), NTRACE); /* failed jobs too */
    const struct kvs_analysis *a[NTRACE], *b[NTRACE];
    size_t n = 0;
    for (int i = 0; i < NTRACE; i++) {
        KVS_CHECK_EQ_INT(sum[i].status, full[i].status);
        if (full[i].analysis && sum[i].analysis) {
            a[n] = full[i].analysis;
            b[n++] = sum[i].analysis;
            KVS_CHECK(sum[i].analysis->nstep == full[i].analysis->nstep && !sum[i].analysis->nkernel);
        }
    }
    struct kvs_multirank *ma = NULL, *mb = NULL;
    KVS_REQUIRE(n == NTRACE - 2 && kvs_multirank(a, n, &ma) == KVS_STATUS_OK &&
                kvs_multirank(b, n, &mb) == KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(ma->nnote, mb->nnote);
    for (size_t k = 0; k < ma->nnote && k < mb->nnote; k++)
        KVS_CHECK_EQ_STR(ma->notes[k], mb->notes[k]);
    for (size_t k = 0; k < n; k++)
        KVS_CHECK(ma->rows[k].rank == mb->rows[k].rank && ma->rows[k].gpu_ms == mb->rows[k].gpu_ms &&
                  ma->rows[k].compute_ms == mb->rows[k].compute_ms &&
                  ma->rows[k].exposed_comm_ms == mb->rows[k].exposed_comm_ms);
    kvs_multirank_free(ma);
    kvs_multirank_free(mb);
    free_jobs(full);
    free_jobs(sum);
    remove_traces();
}

static void test_arguments(void)
{
    KVS_CHECK(kvs_cpu_count() >= 1);
    KVS_CHECK_EQ_INT(kvs_analyze_many(NULL, 0, 1), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(kvs_analyze_many(NULL, 2, 1), KVS_STATUS_INVALID_ARGUMENT);
    struct kvs_analyze_job j[2] = {{.path = "a"}, {.path = NULL}};
    KVS_CHECK_EQ_INT(kvs_analyze_many(j, 2, 2), KVS_STATUS_INVALID_ARGUMENT);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"same_for_every_jobs", test_same_for_every_jobs},
        {"bad_options_said_once", test_bad_options_said_once},
        {"done_keeps_summary", test_done_keeps_summary},
        {"arguments", test_arguments},
        {0},
    };
    return kvs_test_main(argc, argv, tests);
}
