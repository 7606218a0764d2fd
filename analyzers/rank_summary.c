/* analyzers/rank_summary.c — a rank's kvscope.rank/1 summary (the "rank" key
 * of the kvscope.report/1 document `kvscope report TRACE --format json`
 * writes; reports/render_rank.c) read back into an analysis that
 * kvs_multirank() takes like one read from the trace (kvscope/rank_summary.h).
 *
 *   kvscope report rank0.json.gz --format json -o r0.json      (map: per rank, anywhere)
 *   kvscope report r0.json r1.json ...                          (reduce)
 *
 * Numbers are written in shortest round-trip form, so every double read
 * back is the one the analysis computed and the view across ranks is the
 * same, digit for digit (tests/test_rank_summary.py).
 */
#include "kvscope/rank_summary.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_impl.h"
#include "kvscope/reader.h" /* kvs_kvscope_doc_sniff, kvs_read_kvscope_doc */

#define SCHEMA "kvscope.rank/1"

enum kvs_status kvs_rank_report_sniff(const char *path, bool *is)
{
    if (!is)
        return KVS_STATUS_INVALID_ARGUMENT;
    char schema[64];
    enum kvs_status st = kvs_kvscope_doc_sniff(path, schema, sizeof schema);
    *is = !strcmp(schema, "kvscope.report/1");
    return st;
}

// ----------------------------------------------------------------------------
// reading

struct rd {
    const struct kvs_logger *lg;
    const char *path;
    bool bad;                    /* a key was wrong: said once, the first */
    struct kvs_arena *ar;
};

static void wrong(struct rd *r, const char *where, const char *key, const char *what)
{
    if (!r->bad)
        kvs_log(r->lg, KVS_LOG_ERROR, "%s: " SCHEMA " summary: %s%s%s is %s", r->path, where,
                *where ? "." : "", key, what);
    r->bad = true;
}

/* a number (null: NAN when nullable) */
static double num(struct rd *r, const cJSON *o, const char *where, const char *key, bool nullable)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(v))
        return v->valuedouble;
    if (nullable && cJSON_IsNull(v))
        return NAN;
    wrong(r, where, key, v ? (nullable ? "not a number or null" : "not a number") : "missing");
    return NAN;
}

/* an integer in [lo, hi]; null gives `none` when allowed */
static int64_t integer(struct rd *r, const cJSON *o, const char *where, const char *key, int64_t lo,
                       int64_t hi, bool nullable, int64_t none)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (nullable && cJSON_IsNull(v))
        return none;
    if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && v->valuedouble >= (double)lo &&
        v->valuedouble <= (double)hi)
        return (int64_t)v->valuedouble;
    wrong(r, where, key, v ? "not an integer in range" : "missing");
    return none;
}

/* a string copied into the analysis; NULL for null when nullable */
static const char *str(struct rd *r, const cJSON *o, const char *where, const char *key, bool nullable)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v))
        return kvs_arena_strdup(r->ar, v->valuestring);
    if (!(nullable && cJSON_IsNull(v)))
        wrong(r, where, key, v ? "not a string" : "missing");
    return NULL;
}

static const cJSON *member(struct rd *r, const cJSON *o, const char *where, const char *key, bool array)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (array ? cJSON_IsArray(v) : cJSON_IsObject(v))
        return v;
    wrong(r, where, key, v ? (array ? "not an array" : "not an object") : "missing");
    return NULL;
}

static void read_trace(struct rd *r, const cJSON *s, struct kvs_trace_info *t)
{
    t->path = str(r, s, "", "path", false);
    t->device = str(r, s, "", "device", true);
    t->producer = str(r, s, "", "producer", false);
    t->rank = (int)integer(r, s, "", "rank", 0, INT_MAX, true, -1);
    t->world_size = (int)integer(r, s, "", "world_size", 1, INT_MAX, true, 0);
    t->gpu_devices = (int)integer(r, s, "", "devices", 0, 1 << 20, false, 0);
    const cJSON *clock = member(r, s, "", "clock", false);
    const cJSON *unit = clock ? cJSON_GetObjectItemCaseSensitive(clock, "unit") : NULL;
    if (clock && !(cJSON_IsString(unit) && !strcmp(unit->valuestring, "us")))
        wrong(r, "clock", "unit", "not \"us\"");
}

static void read_steps(struct rd *r, const cJSON *s, struct kvs_steps *st)
{
    const cJSON *o = member(r, s, "", "steps", false);
    if (!o)
        return;
    st->count = integer(r, o, "steps", "count", 0, (int64_t)1 << 40, false, 0);
    st->mean_ms = num(r, o, "steps", "mean_ms", true);
    st->gpu_ms_per_step = num(r, o, "steps", "gpu_ms_per_step", true);
    st->gpu_busy_fraction = num(r, o, "steps", "gpu_busy_fraction", true);
    st->total_gpu_ms = num(r, o, "steps", "total_gpu_ms", true);
    st->compute_ms_per_step = num(r, o, "steps", "compute_ms_per_step", true);
    st->comm_ms_per_step = num(r, o, "steps", "comm_ms_per_step", true);
    st->overlap_ms_per_step = num(r, o, "steps", "overlap_ms_per_step", true);
}

/* the collectives of every step, in order; their names from the table */
static size_t count_collectives(struct rd *r, const cJSON *items)
{
    size_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        const cJSON *c = member(r, it, "items[]", "collectives", true);
        n += c ? (size_t)cJSON_GetArraySize(c) : 0;
    }
    return n;
}

static void read_items(struct rd *r, const cJSON *s, struct kvs_analysis *a)
{
    const cJSON *items = member(r, s, "", "items", true);
    const cJSON *names = member(r, s, "", "collective_names", true);
    if (!items || !names)
        return;
    size_t nstep = (size_t)cJSON_GetArraySize(items), nname = (size_t)cJSON_GetArraySize(names);
    if ((int64_t)nstep != a->steps.count) {
        wrong(r, "", "items", "not one entry per step (steps.count)");
        return;
    }
    const char **name = kvs_arena_alloc(r->ar, (nname ? nname : 1) * sizeof *name);
    struct kvs_step *step = kvs_arena_alloc(r->ar, (nstep ? nstep : 1) * sizeof *step);
    size_t ncoll = count_collectives(r, items);
    struct kvs_collective *coll = kvs_arena_alloc(r->ar, (ncoll ? ncoll : 1) * sizeof *coll);
    if (!name || !step || !coll || r->bad)
        return;
    size_t k = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, names)
    {
        if (!cJSON_IsString(v)) {
            wrong(r, "", "collective_names[]", "not a string");
            return;
        }
        name[k++] = kvs_arena_strdup(r->ar, v->valuestring);
    }
    size_t i = 0, c = 0;
    cJSON_ArrayForEach(v, items)
    {
        struct kvs_step *p = &step[i];
        const char *w = "items[]";
        p->index = integer(r, v, w, "index", INT64_MIN / 2, INT64_MAX / 2, false, 0);
        p->start_us = num(r, v, w, "start_us", true);
        p->end_us = num(r, v, w, "end_us", true);
        p->wall_ms = num(r, v, w, "wall_ms", true);
        p->time_ms = num(r, v, w, "time_ms", true);
        p->gpu_busy_ms = num(r, v, w, "gpu_busy_ms", true);
        p->compute_busy_ms = num(r, v, w, "compute_ms", true);
        p->comm_busy_ms = num(r, v, w, "comm_ms", true);
        p->exposed_comm_ms = num(r, v, w, "exposed_comm_ms", true);
        const cJSON *cat = member(r, v, w, "category_ms", false);
        for (int k2 = 0; cat && k2 < KVS_CAT_COUNT_; k2++)
            p->category_ms[k2] = num(r, cat, "items[].category_ms", kvs_category_name((enum kvs_category)k2),
                                     true);
        const cJSON *cs = member(r, v, w, "collectives", true), *e;
        cJSON_ArrayForEach(e, cs)
        {
            const cJSON *ni = cJSON_GetArrayItem(e, 0), *ts = cJSON_GetArrayItem(e, 1),
                        *du = cJSON_GetArrayItem(e, 2);
            if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 3 || !cJSON_IsNumber(ni) ||
                !cJSON_IsNumber(ts) || !cJSON_IsNumber(du) || ni->valuedouble < 0 ||
                ni->valuedouble >= (double)nname || ni->valuedouble != floor(ni->valuedouble)) {
                wrong(r, w, "collectives[]", "not [name index, start_us, dur_ms]");
                return;
            }
            coll[c++] = (struct kvs_collective){(int32_t)i, name[(size_t)ni->valuedouble], ts->valuedouble,
                                                du->valuedouble, (int32_t)ni->valuedouble};
        }
        if (r->bad)
            return;
        i++;
    }
    a->step = step;
    a->nstep = nstep;
    a->collectives = coll;
    a->ncollective = c;
    a->collective_names = name;
    a->ncollective_name = nname;
}

/* Findings: id and recoverable time, and the match of the finding's
 * copy/cast group as a group of its own (what kvs_multirank reads of it). */
static void read_findings(struct rd *r, const cJSON *s, struct kvs_analysis *a)
{
    const cJSON *fs = member(r, s, "", "findings", true);
    if (!fs)
        return;
    size_t n = (size_t)cJSON_GetArraySize(fs);
    struct kvs_finding *f = kvs_arena_alloc(r->ar, (n ? n : 1) * sizeof *f);
    struct kvs_group *g = kvs_arena_alloc(r->ar, (n ? n : 1) * sizeof *g);
    if (!f || !g)
        return;
    size_t i = 0, ng = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, fs)
    {
        f[i].id = str(r, v, "findings[]", "id", false);
        f[i].gpu_ms_per_step = num(r, v, "findings[]", "gpu_ms_per_step", true);
        f[i].group = -1;
        const char *label = str(r, v, "findings[]", "match", true);
        if (label) {
            g[ng].has_match = true;
            g[ng].match.label = label;
            f[i].group = (int)ng++;
        }
        i++;
    }
    a->findings = f;
    a->nfinding = n;
    a->groups = g;
    a->ngroup = ng;
}

enum kvs_status kvs_rank_summary_read(const char *path, const struct kvs_analysis_options *opt,
                                      struct kvs_analysis **out)
{
    if (!out || !path)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    struct kvs_logger def = kvs_logger_stderr();
    const struct kvs_logger *lg = opt ? &opt->log : &def;
    char *text = NULL;
    size_t len = 0;
    enum kvs_status st = kvs_read_kvscope_doc(path, lg, KVS_RANK_REPORT_MAX_BYTES, &text, &len);
    if (st != KVS_STATUS_OK)
        return st;
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    if (!doc) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: a kvscope report that is not valid JSON (cut short?)", path);
        return KVS_STATUS_PARSE;
    }
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "rank");
    const cJSON *schema = cJSON_IsObject(s) ? cJSON_GetObjectItemCaseSensitive(s, "schema") : NULL;
    if (!cJSON_IsObject(s)) {
        kvs_log(lg, KVS_LOG_ERROR,
                "%s: a kvscope report without a " SCHEMA " summary (\"rank\": written by an older "
                "kvscope): run kvscope report on the trace again, or give the trace",
                path);
        cJSON_Delete(doc);
        return KVS_STATUS_PARSE;
    }
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, SCHEMA)) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: its rank summary is %s%s%s, which this kvscope does not read (it reads " SCHEMA ")",
                path, cJSON_IsString(schema) ? "\"" : "", cJSON_IsString(schema) ? schema->valuestring : "not named",
                cJSON_IsString(schema) ? "\"" : "");
        cJSON_Delete(doc);
        return KVS_STATUS_PARSE;
    }
    struct kvs_analysis_impl *impl = calloc(1, sizeof *impl);
    if (!impl) {
        cJSON_Delete(doc);
        return KVS_STATUS_NO_MEMORY;
    }
    struct kvs_analysis *a = &impl->pub;
    struct rd r = {lg, path, false, &impl->arena};
    read_trace(&r, s, &a->trace);
    a->trace.report_path = kvs_arena_strdup(&impl->arena, path);
    read_steps(&r, s, &a->steps);
    if (!r.bad)
        read_items(&r, s, a);
    if (!r.bad)
        read_findings(&r, s, a);
    cJSON_Delete(doc);
    st = r.bad ? KVS_STATUS_PARSE : impl->arena.failed ? KVS_STATUS_NO_MEMORY : KVS_STATUS_OK;
    if (st != KVS_STATUS_OK) {
        kvs_analysis_free(a);
        return st;
    }
    *out = a;
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// the same from an analysis in memory

static const char *dup(struct kvs_arena *ar, const char *s)
{
    return s ? kvs_arena_strdup(ar, s) : NULL;
}

enum kvs_status kvs_rank_summary_of(const struct kvs_analysis *a, struct kvs_analysis **out)
{
    if (!out || !a)
        return KVS_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    struct kvs_analysis_impl *impl = calloc(1, sizeof *impl);
    if (!impl)
        return KVS_STATUS_NO_MEMORY;
    struct kvs_arena *ar = &impl->arena;
    struct kvs_analysis *s = &impl->pub;
    const struct kvs_trace_info *t = &a->trace;
    s->trace.path = dup(ar, t->path);
    s->trace.device = dup(ar, t->device);
    s->trace.producer = dup(ar, t->producer);
    s->trace.report_path = dup(ar, t->report_path);
    s->trace.rank = t->rank;
    s->trace.world_size = t->world_size;
    s->trace.gpu_devices = t->gpu_devices;
    s->steps = a->steps;
    s->steps.source = dup(ar, a->steps.source);
    size_t nstep = a->step ? a->nstep : 0, ncoll = a->collectives ? a->ncollective : 0;
    size_t nname = a->collective_names ? a->ncollective_name : 0, nf = a->findings ? a->nfinding : 0;
    struct kvs_step *st = kvs_arena_alloc(ar, (nstep ? nstep : 1) * sizeof *st);
    struct kvs_collective *c = kvs_arena_alloc(ar, (ncoll ? ncoll : 1) * sizeof *c);
    const char **names = kvs_arena_alloc(ar, (nname ? nname : 1) * sizeof *names);
    struct kvs_finding *f = kvs_arena_alloc(ar, (nf ? nf : 1) * sizeof *f);
    struct kvs_group *g = kvs_arena_alloc(ar, (nf ? nf : 1) * sizeof *g);
    if (st && c && names && f && g) {
        for (size_t i = 0; i < nstep; i++) {
            st[i] = a->step[i];
            st[i].name = dup(ar, a->step[i].name);
            st[i].outlier = dup(ar, a->step[i].outlier);
        }
        for (size_t i = 0; i < nname; i++)
            names[i] = dup(ar, a->collective_names[i]);
        for (size_t i = 0; i < ncoll; i++) {
            c[i] = a->collectives[i];
            int32_t k = c[i].name_index;
            c[i].name = k >= 0 && (size_t)k < nname ? names[k] : dup(ar, a->collectives[i].name);
        }
        size_t ng = 0;
        for (size_t i = 0; i < nf; i++) {
            const struct kvs_finding *x = &a->findings[i];
            f[i].id = dup(ar, x->id);
            f[i].severity = x->severity;
            f[i].gpu_ms_per_step = x->gpu_ms_per_step;
            f[i].group = -1;
            if (x->group >= 0 && a->groups && (size_t)x->group < a->ngroup && a->groups[x->group].has_match) {
                g[ng].has_match = true;
                g[ng].match.label = dup(ar, a->groups[x->group].match.label);
                f[i].group = (int)ng++;
            }
        }
        s->step = st, s->nstep = nstep;
        s->collectives = c, s->ncollective = ncoll;
        s->collective_names = names, s->ncollective_name = nname;
        s->findings = f, s->nfinding = nf;
        s->groups = g, s->ngroup = ng;
    }
    if (!st || !c || !names || !f || !g || ar->failed) {
        kvs_analysis_free(s);
        return KVS_STATUS_NO_MEMORY;
    }
    *out = s;
    return KVS_STATUS_OK;
}
