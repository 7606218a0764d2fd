/* nsys_rows.c — the activity rows of an Nsight Systems export as records:
 * one query per table, each ORDER BY start, stepped together so that rows
 * come out in time order across tables and no table is loaded whole.
 *
 *   CUPTI_ACTIVITY_KIND_KERNEL   -> GPU kernel (name via StringIds)
 *   CUPTI_ACTIVITY_KIND_MEMCPY   -> GPU memcpy ("Memcpy HtoD (Pinned -> Device)", as Kineto names it)
 *   CUPTI_ACTIVITY_KIND_MEMSET   -> GPU memset ("Memset (Device)")
 *   CUPTI_ACTIVITY_KIND_RUNTIME  -> runtime/driver call, named without its _vNNNN suffix
 *                                   (its correlation id links the GPU work)
 *   CUPTI_ACTIVITY_KIND_SYNCHRONIZATION -> counted
 *   NVTX_EVENTS                  -> emit_nvtx op ranges become ops (name + dims), other
 *                                   ranges become annotation ranges (steps, layers);
 *                                   marks counted, domain names kept for the summary
 *
 * Correlation ids are per process: they are qualified with the process id
 * packed in globalPid / globalTid (bits 24..47). Private to reader/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsys_impl.h"
#include "reader_impl.h" /* the limits on kept records */

enum { NSYS_EVENT_MARK = 34, NSYS_EVENT_PUSHPOP = 59, NSYS_EVENT_STARTEND = 60, NSYS_EVENT_DOMAIN = 75 };

/* one table's query; columns are asked for by name, absent ones read NULL */
struct stream {
    enum kvs_nsys_table table;
    const char *name;            /* the table's */
    const char *const *cols;     /* wanted columns, in select order */
    sqlite3_stmt *q;
    bool live;                   /* holds a row not yet taken */
    int64_t start;
};

/* column lists; index 0 is always start, 1 end */
static const char *const kernel_cols[] = {"start",  "end",    "deviceId",      "streamId",  "correlationId",
                                          "globalPid", "demangledName", "shortName", "mangledName",
                                          "graphNodeId", "gridX", "gridY", "gridZ", "blockX", "blockY",
                                          "blockZ",      NULL};
static const char *const memcpy_cols[] = {"start",     "end",  "deviceId", "streamId", "correlationId", "globalPid",
                                          "bytes",     "copyKind", "srcKind", "dstKind", "graphNodeId", NULL};
static const char *const memset_cols[] = {"start",     "end",   "deviceId", "streamId", "correlationId",
                                          "globalPid", "bytes", "memKind",  "graphNodeId", NULL};
static const char *const runtime_cols[] = {"start", "end", "globalTid", "correlationId", "nameId", NULL};
static const char *const sync_cols[] = {"start", "end", NULL};
static const char *const nvtx_cols[] = {"start", "end", "eventType", "text", "textId", "globalTid", "domainId", NULL};

/* column positions shared by the three GPU tables */
enum { C_START = 0, C_END, C_DEVICE, C_STREAM, C_CORR, C_PID };

static enum kvs_status prepare(struct kvs_nsys *n, struct stream *s)
{
    char sql[1024];
    size_t w = (size_t)snprintf(sql, sizeof sql, "SELECT ");
    for (int i = 0; s->cols[i]; i++) {
        bool has = kvs_nsys_has_column(n, s->name, s->cols[i]);
        if (!has && i <= C_END && !(s->table == KVS_NSYS_NVTX && i == C_END)) {
            kvs_log(n->opt->log, KVS_LOG_ERROR, "%s: %s has no \"%s\" column: not an Nsight Systems export table",
                    n->path, s->name, s->cols[i]);
            return KVS_STATUS_PARSE;
        }
        w += (size_t)snprintf(sql + w, sizeof sql - w, "%s%s%s%s", i ? ", " : "", has ? "\"" : "",
                              has ? s->cols[i] : "NULL", has ? "\"" : "");
    }
    /* outer NVTX ranges before the inner ones that start with them */
    snprintf(sql + w, sizeof sql - w, " FROM %s ORDER BY \"start\"%s", s->name,
             s->table == KVS_NSYS_NVTX && kvs_nsys_has_column(n, s->name, "end") ? ", \"end\" DESC" : "");
    if (sqlite3_prepare_v2(n->db, sql, -1, &s->q, NULL) != SQLITE_OK) {
        char what[120];
        snprintf(what, sizeof what, "reading %s", s->name);
        return kvs_nsys_fail(n, what);
    }
    return KVS_STATUS_OK;
}

static enum kvs_status bad_type(struct kvs_nsys *n, const struct stream *s, int col, const char *want)
{
    static const char *const types[] = {"?", "INTEGER", "REAL", "TEXT", "BLOB", "NULL"};
    int ty = sqlite3_column_type(s->q, col);
    kvs_log(n->opt->log, KVS_LOG_ERROR,
            "%s: %s row %llu (in start order): column \"%s\" holds %s, not %s: not an Nsight Systems export",
            n->path, s->name, (unsigned long long)n->rows[s->table] + 1, s->cols[col],
            ty >= 1 && ty <= 5 ? types[ty] : "?", want);
    return KVS_STATUS_PARSE;
}

/* an integer column: *v (0 when NULL); PARSE when it holds anything else */
static enum kvs_status int_col(struct kvs_nsys *n, const struct stream *s, int col, int64_t *v, bool *has)
{
    int ty = sqlite3_column_type(s->q, col);
    *v = 0;
    if (has)
        *has = ty == SQLITE_INTEGER;
    if (ty == SQLITE_NULL)
        return KVS_STATUS_OK;
    if (ty != SQLITE_INTEGER)
        return bad_type(n, s, col, "an integer");
    *v = sqlite3_column_int64(s->q, col);
    return KVS_STATUS_OK;
}

/* Take the next row of s (s->live false at the end). */
static enum kvs_status step(struct kvs_nsys *n, struct stream *s)
{
    int rc = sqlite3_step(s->q);
    if (rc == SQLITE_DONE) {
        s->live = false;
        return KVS_STATUS_OK;
    }
    if (rc != SQLITE_ROW) {
        char what[120];
        snprintf(what, sizeof what, "reading %s", s->name);
        return kvs_nsys_fail(n, what);
    }
    if (sqlite3_column_type(s->q, C_START) != SQLITE_INTEGER)
        return bad_type(n, s, C_START, "an integer (ns)");
    s->start = sqlite3_column_int64(s->q, C_START);
    if (s->start < KVS_READ_TS_MIN || s->start > KVS_READ_TS_MAX) {
        kvs_log(n->opt->log, KVS_LOG_ERROR,
                "%s: %s: a row at %lld ns, outside the times a trace can hold ([-2^60, 2^62] ns) "
                "(see docs/reliability.md)",
                n->path, s->name, (long long)s->start);
        return KVS_STATUS_LIMIT;
    }
    s->live = true;
    return KVS_STATUS_OK;
}

/* the row's duration: end - start, 0 when it ends first; *has false when end is NULL */
static enum kvs_status duration(struct kvs_nsys *n, const struct stream *s, int64_t *dur, bool *has)
{
    int64_t end;
    enum kvs_status st = int_col(n, s, C_END, &end, has);
    *dur = 0;
    if (st != KVS_STATUS_OK || !*has)
        return st;
    if (end < s->start) {
        n->bad_dur++;
        return KVS_STATUS_OK;
    }
    /* both bounded (start by step(), end by this check): no overflow */
    if (end > KVS_READ_TS_MAX + KVS_READ_MAX_TOTAL || end - s->start > KVS_READ_MAX_TOTAL - n->kept_ns) {
        kvs_log(n->opt->log, KVS_LOG_ERROR,
                "%s: %s: a row lasting %lld ns takes the rows' total time past 2^60 ns (see docs/reliability.md)",
                n->path, s->name, (long long)(end - s->start));
        return KVS_STATUS_LIMIT;
    }
    *dur = end - s->start;
    n->kept_ns += *dur;
    return KVS_STATUS_OK;
}

static int64_t pid_of(int64_t global_id)
{
    return (global_id >> 24) & 0xFFFFFF;
}

/* a correlation id qualified by its process (ids restart in each process) */
static int64_t qualified_corr(int64_t corr, int64_t pid)
{
    return corr ? (pid << 38) | (corr & (((int64_t)1 << 38) - 1)) : 0;
}

static enum kvs_status thread_of(struct kvs_nsys *n, int64_t gtid, bool has, uint32_t *id)
{
    char key[48];
    int len = has ? snprintf(key, sizeof key, "%lld\x1f%lld", (long long)pid_of(gtid), (long long)(gtid & 0xFFFFFF))
                  : snprintf(key, sizeof key, "\x1f");
    *id = kvs_intern_id(&n->t->threads, key, (size_t)len);
    if (*id == KVS_INTERN_NONE)
        return KVS_STATUS_NO_MEMORY;
    if (*id >= KVS_READ_MAX_THREADS) {
        kvs_log(n->opt->log, KVS_LOG_ERROR, "%s: more than 2^30 threads (see docs/reliability.md)", n->path);
        return KVS_STATUS_LIMIT;
    }
    return KVS_STATUS_OK;
}

static enum kvs_status keep_bytes(struct kvs_nsys *n, const struct stream *s, int64_t bytes)
{
    if (bytes > KVS_READ_MAX_TOTAL - n->kept_bytes) {
        kvs_log(n->opt->log, KVS_LOG_ERROR,
                "%s: %s: a copy of %lld bytes takes the copies' total past 2^60 bytes (see docs/reliability.md)",
                n->path, s->name, (long long)bytes);
        return KVS_STATUS_LIMIT;
    }
    n->kept_bytes += bytes;
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// GPU rows

static const char *copy_kind(int64_t k)
{
    /* ENUM_CUDA_MEMCPY_OPER */
    static const char *const names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD",
                                        "DtoA",    "DtoD", "HtoH", "PtoP", "Unified HtoD", "Unified DtoH",
                                        "Unified DtoD"};
    return k >= 0 && k < (int64_t)(sizeof names / sizeof *names) ? names[k] : "Unknown";
}

static const char *mem_kind(int64_t k, bool has)
{
    /* ENUM_CUDA_MEM_KIND (nsys's numbering, not CUPTI's) */
    static const char *const names[] = {"Pageable", "Pinned", "Device", "Array", "Managed",
                                        "Device Static", "Managed Static", "Unknown"};
    return has && k >= 0 && k < (int64_t)(sizeof names / sizeof *names) ? names[k] : "Unknown";
}

/* x*y*z of a grid or block as the JSON reader keeps it: 0 when a dim is
 * missing, not positive or above 2^31 (no sensible launch) */
static int64_t launch_product(const int64_t *d, const bool *has)
{
    int64_t p = 1;
    for (int i = 0; i < 3; i++) {
        if (!has[i] || d[i] <= 0 || d[i] > ((int64_t)1 << 31) || __builtin_mul_overflow(p, d[i], &p))
            return 0;
    }
    return p;
}

static enum kvs_status gpu_row(struct kvs_nsys *n, const struct stream *s)
{
    struct kvs_trace_data *t = n->t;
    int64_t dur, device, stream, corr, gpid;
    bool has_end, has_pid;
    enum kvs_status st;
    if ((st = duration(n, s, &dur, &has_end)) != KVS_STATUS_OK || (st = int_col(n, s, C_DEVICE, &device, NULL)) ||
        (st = int_col(n, s, C_STREAM, &stream, NULL)) || (st = int_col(n, s, C_CORR, &corr, NULL)) ||
        (st = int_col(n, s, C_PID, &gpid, &has_pid)))
        return st;
    if (!has_end)
        return bad_type(n, s, C_END, "an integer (ns)");
    int ncols = s->table == KVS_NSYS_KERNEL ? 10 : s->table == KVS_NSYS_MEMCPY ? 5 : 3;
    int64_t v[10];
    bool hv[10];
    for (int i = 0; i < ncols; i++)
        if ((st = int_col(n, s, 6 + i, &v[i], &hv[i])) != KVS_STATUS_OK)
            return st;
    struct kvs_gpu_rec g = {0};
    g.ts = s->start;
    g.dur = dur;
    g.corr = qualified_corr(corr, has_pid ? pid_of(gpid) : 0);
    g.device = device >= 0 && device <= INT32_MAX ? (int32_t)device : -1;
    g.stream = stream >= INT32_MIN && stream <= INT32_MAX ? (int32_t)stream : -1;
    char name[96];
    uint32_t nm = 0; /* g.name once it is known to fit (KVS_READ_MAX_GPU_NAME) */
    if (s->table == KVS_NSYS_KERNEL) {
        g.kind = KVS_GPU_KERNEL;
        for (int i = 0; i < 3 && !nm; i++) /* demangled, short, mangled */
            if (hv[i] && (st = kvs_nsys_string(n, v[i], &nm)) != KVS_STATUS_OK)
                return st;
        if (!nm)
            nm = kvs_intern_id(&t->strings, "(unnamed kernel)", 16);
        n->graph_nodes += hv[3];
        g.grid_blocks = launch_product(v + 4, hv + 4);
        g.block_threads = (int32_t)launch_product(v + 7, hv + 7);
        t->n_kernels++;
    } else {
        g.kind = s->table == KVS_NSYS_MEMCPY ? KVS_GPU_MEMCPY : KVS_GPU_MEMSET;
        g.bytes = v[0] > 0 ? v[0] : 0;
        if ((st = keep_bytes(n, s, g.bytes)) != KVS_STATUS_OK)
            return st;
        int len;
        if (g.kind == KVS_GPU_MEMCPY) {
            len = snprintf(name, sizeof name, "Memcpy %s (%s -> %s)", copy_kind(v[1]), mem_kind(v[2], hv[2]),
                           mem_kind(v[3], hv[3]));
            n->graph_nodes += hv[4];
            t->n_memcpys++;
        } else {
            len = snprintf(name, sizeof name, "Memset (%s)", mem_kind(v[1], hv[1]));
            n->graph_nodes += hv[2];
            t->n_memsets++;
        }
        if ((nm = kvs_intern_id(&t->strings, name, (size_t)len)) == KVS_INTERN_NONE)
            return KVS_STATUS_NO_MEMORY;
    }
    if (nm == KVS_INTERN_NONE)
        return KVS_STATUS_NO_MEMORY;
    if (nm >= KVS_READ_MAX_GPU_NAME) {
        kvs_log(n->opt->log, KVS_LOG_ERROR, "%s: more than 2^29 distinct names (see docs/reliability.md)", n->path);
        return KVS_STATUS_LIMIT;
    }
    g.name = nm;
    if (g.device >= 0 && g.device < 64)
        n->used_devices |= (uint64_t)1 << g.device;
    return kvs_gpu_push(t, &g) == 0 ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

// ----------------------------------------------------------------------------
// CPU rows

enum { API_GRAPH_LAUNCH = 1, API_KERNEL_LAUNCH = 2 };

/* nsys stores API names with their version suffix (cudaLaunchKernel_v7000,
 * cuGetProcAddress_v2); Kineto and kvscope's own traces name the call
 * without it, so the name is kept as cudaLaunchKernel */
static size_t api_name_len(const char *name, size_t len)
{
    size_t i = len;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    return i < len && i >= 3 && name[i - 1] == 'v' && name[i - 2] == '_' ? i - 2 : len;
}

/* the call name of StringIds row `sid` without its suffix (*name, 0 when
 * none) and what it launches (*kind, API_* bits), cached per name; the
 * names are matched as the JSON reader matches them (keep.c) */
static enum kvs_status api_of(struct kvs_nsys *n, int64_t sid, uint32_t *name, uint32_t *kind)
{
    bool added;
    uint32_t *slot = kvs_u64map_put(&n->api_map, (uint64_t)sid, &added);
    if (!slot)
        return KVS_STATUS_NO_MEMORY;
    if (added) {
        uint32_t id;
        enum kvs_status st = kvs_nsys_string(n, sid, &id);
        if (st != KVS_STATUS_OK)
            return st;
        const char *full = kvs_intern_str(&n->t->strings, id);
        size_t len = api_name_len(full, kvs_intern_len(&n->t->strings, id));
        uint32_t bits = (strstr(full, "GraphLaunch") ? API_GRAPH_LAUNCH : 0) |
                        (strstr(full, "LaunchKernel") || strstr(full, "LaunchCooperativeKernel") ? API_KERNEL_LAUNCH : 0);
        uint32_t short_id = id && len ? kvs_intern_id(&n->t->strings, full, len) : 0;
        if (short_id == KVS_INTERN_NONE)
            return KVS_STATUS_NO_MEMORY;
        if (short_id >= 1u << 30) { /* the two launch bits ride on top of the id */
            kvs_log(n->opt->log, KVS_LOG_ERROR, "%s: more than 2^30 distinct names",
                    n->path);
            return KVS_STATUS_LIMIT;
        }
        *slot = short_id | bits << 30;
    }
    *name = *slot & ((1u << 30) - 1);
    *kind = *slot >> 30;
    return KVS_STATUS_OK;
}

static enum kvs_status runtime_row(struct kvs_nsys *n, const struct stream *s)
{
    struct kvs_trace_data *t = n->t;
    int64_t dur, gtid, corr, sid;
    bool has_end, has_tid, has_name;
    enum kvs_status st;
    if ((st = duration(n, s, &dur, &has_end)) || (st = int_col(n, s, 2, &gtid, &has_tid)) ||
        (st = int_col(n, s, 3, &corr, NULL)) || (st = int_col(n, s, 4, &sid, &has_name)))
        return st;
    t->n_runtime++;
    if (!corr)
        return KVS_STATUS_OK;
    struct kvs_rt_rec rt = {0};
    uint32_t kind = 0, thread;
    if (has_name && (st = api_of(n, sid, &rt.name, &kind)) != KVS_STATUS_OK)
        return st;
    if ((st = thread_of(n, gtid, has_tid, &thread)) != KVS_STATUS_OK)
        return st;
    rt.thread = thread;
    rt.ts = s->start;
    rt.dur = dur;
    rt.corr = qualified_corr(corr, has_tid ? pid_of(gtid) : 0);
    rt.graph_launch = (kind & API_GRAPH_LAUNCH) != 0;
    rt.kernel_launch = (kind & API_KERNEL_LAUNCH) != 0;
    return kvs_rt_push(t, &rt) == 0 ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

static enum kvs_status add_domain(struct kvs_nsys *n, const char *name, size_t len)
{
    if (!len || n->domains_len > 4096)
        return KVS_STATUS_OK;
    char *p = realloc(n->domains, n->domains_len + len + 3);
    if (!p)
        return KVS_STATUS_NO_MEMORY;
    n->domains = p;
    if (n->domains_len) {
        memcpy(p + n->domains_len, "; ", 2);
        n->domains_len += 2;
    }
    memcpy(p + n->domains_len, name, len);
    n->domains_len += len;
    p[n->domains_len] = 0;
    return KVS_STATUS_OK;
}

/* an emit_nvtx range: an op with its dims (the shape key has no dtypes) */
static enum kvs_status keep_op(struct kvs_nsys *n, const char *text, size_t name_len, const char *sizes,
                               size_t sizes_len, int64_t ts, int64_t dur, uint32_t thread)
{
    struct kvs_trace_data *t = n->t;
    uint32_t name = kvs_intern_id(&t->strings, text, name_len), shape = 0;
    if (name == KVS_INTERN_NONE)
        return KVS_STATUS_NO_MEMORY;
    if (sizes) {
        /* "<dims>\x1f<types>" as reader_impl.h's shape keys, types empty */
        char *key = malloc(sizes_len + 1);
        if (!key)
            return KVS_STATUS_NO_MEMORY;
        memcpy(key, sizes, sizes_len);
        key[sizes_len] = '\x1f';
        shape = kvs_intern_id(&t->strings, key, sizes_len + 1);
        free(key);
        if (shape == KVS_INTERN_NONE)
            return KVS_STATUS_NO_MEMORY;
    }
    bool added;
    uint32_t *k = kvs_u64map_put(&t->opkey_map, kvs_pair_key(name, shape), &added);
    if (!k)
        return KVS_STATUS_NO_MEMORY;
    if (added) {
        struct kvs_opkey ok = {name, shape};
        if (KVS_VEC_PUSH(t->opkeys, t->nopkeys, t->opkeys_cap, ok) < 0)
            return KVS_STATUS_NO_MEMORY;
        *k = (uint32_t)t->nopkeys;
    }
    struct kvs_op_rec o = {ts, dur, 0, *k - 1, thread, 0};
    t->n_ops++;
    n->nvtx_ops++;
    return kvs_op_push(t, &o) == 0 ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

static enum kvs_status nvtx_row(struct kvs_nsys *n, const struct stream *s)
{
    struct kvs_trace_data *t = n->t;
    int64_t dur, type, text_id, gtid, domain;
    bool has_end, has_text_id, has_tid;
    enum kvs_status st;
    if ((st = duration(n, s, &dur, &has_end)) || (st = int_col(n, s, 2, &type, NULL)) ||
        (st = int_col(n, s, 4, &text_id, &has_text_id)) || (st = int_col(n, s, 5, &gtid, &has_tid)) ||
        (st = int_col(n, s, 6, &domain, NULL)))
        return st;
    int tty = sqlite3_column_type(s->q, 3);
    if (tty != SQLITE_NULL && tty != SQLITE_TEXT)
        return bad_type(n, s, 3, "text");
    if (type == NSYS_EVENT_MARK) {
        n->nvtx_marks++;
        return KVS_STATUS_OK;
    }
    if (type != NSYS_EVENT_PUSHPOP && type != NSYS_EVENT_STARTEND && type != NSYS_EVENT_DOMAIN)
        return KVS_STATUS_OK;
    /* the text inline, or a registered string */
    const char *text = (const char *)sqlite3_column_text(s->q, 3);
    size_t len = (size_t)sqlite3_column_bytes(s->q, 3);
    if (!text && tty == SQLITE_TEXT)
        return KVS_STATUS_NO_MEMORY;
    if (!text && has_text_id) {
        uint32_t id;
        if ((st = kvs_nsys_string(n, text_id, &id)) != KVS_STATUS_OK)
            return st;
        text = kvs_intern_str(&t->strings, id);
        len = kvs_intern_len(&t->strings, id);
    }
    if (!text)
        text = "", len = 0;
    if (type == NSYS_EVENT_DOMAIN)
        return add_domain(n, text, len);
    if (!has_end) {
        n->nvtx_open++;
        return KVS_STATUS_OK;
    }
    n->nvtx_ranges++;
    uint32_t thread;
    if ((st = thread_of(n, gtid, has_tid, &thread)) != KVS_STATUS_OK)
        return st;
    size_t name_len, sizes_len = 0;
    const char *sizes = NULL;
    uint32_t name;
    if (kvs_nsys_emit_nvtx(text, len, &name_len, &sizes, &sizes_len)) {
        if ((st = keep_op(n, text, name_len, sizes, sizes_len, s->start, dur, thread)) != KVS_STATUS_OK)
            return st;
        name = kvs_op_name_at(t, t->ops.n - 1);
        bool step = n->opt->is_step_name ? n->opt->is_step_name(n->opt->step_user, kvs_intern_str(&t->strings, name))
                                         : !strncmp(kvs_intern_str(&t->strings, name), "ProfilerStep#", 13);
        if (!step)
            return KVS_STATUS_OK;
    } else if ((name = kvs_intern_id(&t->strings, text, len)) == KVS_INTERN_NONE) {
        return KVS_STATUS_NO_MEMORY;
    }
    struct kvs_range_rec g = {s->start, dur, name, thread};
    return KVS_VEC_PUSH(t->ranges, t->nranges, t->ranges_cap, g) == 0 ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

// ----------------------------------------------------------------------------
// emit_nvtx strings

static const char *find(const char *s, size_t len, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= len; i++)
        if (s[i] == needle[0] && !memcmp(s + i, needle, k))
            return s + i;
    return NULL;
}

bool kvs_nsys_emit_nvtx(const char *text, size_t len, size_t *name_len, const char **sizes, size_t *sizes_len)
{
    /* PyTorch (torch/csrc/profiler/util.cpp, getNvtxStr): "NAME[, seq = N][, op_id = N]
     * [, sizes = [[...], ...]][, input_op_ids = [...]]"; the name ends at the first such field */
    static const char *const fields[] = {", seq = ", ", op_id = ", ", sizes = [", ", input_op_ids = ["};
    const char *first = NULL;
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        const char *f = find(text, len, fields[i]);
        if (f && (!first || f < first))
            first = f;
    }
    if (!first || first == text)
        return false;
    *name_len = (size_t)(first - text);
    *sizes = NULL;
    *sizes_len = 0;
    const char *sz = find(first, len - (size_t)(first - text), ", sizes = [");
    if (sz) {
        const char *p = sz + 10, *end = text + len;
        int depth = 0;
        const char *q = p;
        for (; q < end; q++) {
            if (*q == '[')
                depth++;
            else if (*q == ']' && --depth == 0)
                break;
        }
        if (q < end) { /* a cut list is no shape */
            *sizes = p;
            *sizes_len = (size_t)(q + 1 - p);
        }
    }
    return true;
}

// ----------------------------------------------------------------------------
// the merge

enum kvs_status kvs_nsys_read_rows(struct kvs_nsys *n)
{
    struct stream ss[KVS_NSYS_TABLES_] = {
        {KVS_NSYS_KERNEL, "CUPTI_ACTIVITY_KIND_KERNEL", kernel_cols, NULL, false, 0},
        {KVS_NSYS_MEMCPY, "CUPTI_ACTIVITY_KIND_MEMCPY", memcpy_cols, NULL, false, 0},
        {KVS_NSYS_MEMSET, "CUPTI_ACTIVITY_KIND_MEMSET", memset_cols, NULL, false, 0},
        {KVS_NSYS_RUNTIME, "CUPTI_ACTIVITY_KIND_RUNTIME", runtime_cols, NULL, false, 0},
        {KVS_NSYS_SYNC, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", sync_cols, NULL, false, 0},
        {KVS_NSYS_NVTX, "NVTX_EVENTS", nvtx_cols, NULL, false, 0},
    };
    enum kvs_status st = KVS_STATUS_OK;
    for (int k = 0; k < KVS_NSYS_TABLES_ && st == KVS_STATUS_OK; k++)
        if (n->present[k] && (st = prepare(n, &ss[k])) == KVS_STATUS_OK)
            st = step(n, &ss[k]);
    while (st == KVS_STATUS_OK) {
        struct stream *s = NULL;
        for (int k = 0; k < KVS_NSYS_TABLES_; k++)
            if (ss[k].live && (!s || ss[k].start < s->start))
                s = &ss[k];
        if (!s)
            break;
        switch (s->table) {
        case KVS_NSYS_KERNEL:
        case KVS_NSYS_MEMCPY:
        case KVS_NSYS_MEMSET: st = gpu_row(n, s); break;
        case KVS_NSYS_RUNTIME: st = runtime_row(n, s); break;
        case KVS_NSYS_NVTX: st = nvtx_row(n, s); break;
        default: break; /* synchronisation: counted */
        }
        if (st != KVS_STATUS_OK)
            break;
        n->rows[s->table]++;
        n->t->events++;
        st = step(n, s);
    }
    for (int k = 0; k < KVS_NSYS_TABLES_; k++)
        sqlite3_finalize(ss[k].q);
    return st;
}
