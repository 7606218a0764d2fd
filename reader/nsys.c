/* nsys.c — Nsight Systems SQLite exports: recognising one, opening it
 * read-only, the export's version, the devices its GPU work ran on, and the
 * line that says what was read and what was absent. The rows themselves are
 * nsys_rows.c's. Private to reader/; see nsys_impl.h.
 *
 *   kvscope report profile.sqlite      (nsys export --type sqlite --output profile.sqlite profile.nsys-rep)
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsys_impl.h"

static const char sqlite_magic[16] = "SQLite format 3";

// ----------------------------------------------------------------------------
// recognising the file

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

enum kvs_nsys_kind kvs_nsys_sniff(const char *path)
{
    if (!path || !strcmp(path, "-"))
        return KVS_NSYS_NOT;
    if (ends_with(path, ".nsys-rep") || ends_with(path, ".qdrep"))
        return KVS_NSYS_REPORT;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return KVS_NSYS_NOT;
    char head[16];
    size_t got = 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        while (got < sizeof head) {
            ssize_t r = read(fd, head + got, sizeof head - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
    }
    close(fd);
    return got == sizeof head && !memcmp(head, sqlite_magic, sizeof head) ? KVS_NSYS_SQLITE : KVS_NSYS_NOT;
}

// ----------------------------------------------------------------------------
// SQLite helpers

enum kvs_status kvs_nsys_fail(struct kvs_nsys *n, const char *what)
{
    int code = sqlite3_errcode(n->db) & 0xff;
    const char *msg = sqlite3_errmsg(n->db);
    switch (code) {
    case SQLITE_NOMEM:
        return KVS_STATUS_NO_MEMORY;
    case SQLITE_TOOBIG:
        kvs_log(n->opt->log, KVS_LOG_ERROR,
                "%s: %s: a value is longer than %d bytes (see docs/reliability.md)", n->path, what,
                KVS_NSYS_MAX_STRING);
        return KVS_STATUS_LIMIT;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
        kvs_log(n->opt->log, KVS_LOG_ERROR, "%s: %s: %s", n->path, what, msg);
        return KVS_STATUS_IO;
    default:
        kvs_log(n->opt->log, KVS_LOG_ERROR,
                "%s: %s: %s (a damaged or cut Nsight Systems export? export it again with "
                "nsys export --type sqlite)",
                n->path, what, msg);
        return KVS_STATUS_PARSE;
    }
}

bool kvs_nsys_has_table(struct kvs_nsys *n, const char *table)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(n->db, "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?",
                           -1, &q, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
    bool yes = sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    return yes;
}

bool kvs_nsys_has_column(struct kvs_nsys *n, const char *table, const char *column)
{
    sqlite3_stmt *q;
    /* table names are ours (constants), never the file's */
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT 1 FROM pragma_table_info('%s') WHERE name = ?", table);
    if (sqlite3_prepare_v2(n->db, sql, -1, &q, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(q, 1, column, -1, SQLITE_STATIC);
    bool yes = sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    return yes;
}

enum kvs_status kvs_nsys_string(struct kvs_nsys *n, int64_t sid, uint32_t *out)
{
    *out = 0;
    if (!n->string_q)
        return KVS_STATUS_OK;
    bool added;
    uint32_t *slot = kvs_u64map_put(&n->string_map, (uint64_t)sid, &added);
    if (!slot)
        return KVS_STATUS_NO_MEMORY;
    if (!added) {
        *out = *slot - 1;
        return KVS_STATUS_OK;
    }
    sqlite3_reset(n->string_q);
    sqlite3_bind_int64(n->string_q, 1, sid);
    int rc = sqlite3_step(n->string_q);
    uint32_t id = 0;
    if (rc == SQLITE_ROW) {
        const unsigned char *s = sqlite3_column_text(n->string_q, 0);
        int len = sqlite3_column_bytes(n->string_q, 0);
        if (!s && sqlite3_column_type(n->string_q, 0) != SQLITE_NULL)
            return KVS_STATUS_NO_MEMORY;
        id = s ? kvs_intern_id(&n->t->strings, (const char *)s, (size_t)len) : 0;
        if (id == KVS_INTERN_NONE)
            return KVS_STATUS_NO_MEMORY;
    } else if (rc != SQLITE_DONE) {
        return kvs_nsys_fail(n, "reading StringIds");
    }
    *slot = id + 1;
    *out = id;
    return KVS_STATUS_OK;
}

/* "file:" URI of path, percent-encoded, opened immutable: SQLite then takes
 * no locks, reads no journal and never writes (read-only media included) */
static char *immutable_uri(const char *path)
{
    size_t n = strlen(path);
    char *u = malloc(n * 3 + 32);
    if (!u)
        return NULL;
    char *w = u;
    w += sprintf(w, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/-._~", *p))
            *w++ = (char)*p;
        else
            w += sprintf(w, "%%%02X", *p);
    }
    strcpy(w, "?mode=ro&immutable=1");
    return u;
}

// ----------------------------------------------------------------------------
// metadata and devices

/* EXPORT_PRODUCT_VERSION / EXPORT_SCHEMA_VERSION from META_DATA_EXPORT
 * (nsys 2023.4 and later) or EXPORT_META_DATA (before) */
static void export_version(struct kvs_nsys *n, char *ver, size_t vcap, char *schema, size_t scap,
                           const char **table)
{
    snprintf(ver, vcap, "unknown");
    snprintf(schema, scap, "unknown");
    *table = kvs_nsys_has_table(n, "META_DATA_EXPORT")   ? "META_DATA_EXPORT"
           : kvs_nsys_has_table(n, "EXPORT_META_DATA") ? "EXPORT_META_DATA"
                                                        : NULL;
    if (!*table || !kvs_nsys_has_column(n, *table, "name") || !kvs_nsys_has_column(n, *table, "value"))
        return;
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT name, value FROM %s WHERE name IN ('EXPORT_PRODUCT_VERSION', 'EXPORT_SCHEMA_VERSION')",
             *table);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(n->db, sql, -1, &q, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(q, 0);
        const char *v = (const char *)sqlite3_column_text(q, 1);
        if (!k || !v)
            continue;
        if (!strcmp(k, "EXPORT_PRODUCT_VERSION"))
            snprintf(ver, vcap, "%.40s", v);
        else
            snprintf(schema, scap, "%.40s", v);
    }
    sqlite3_finalize(q);
}

/* names of the devices that ran GPU work: TARGET_INFO_GPU lists every GPU
 * of the host, so only those. KERNEL.deviceId is TARGET_INFO_GPU.id; where
 * an export says otherwise, TARGET_INFO_CUDA_DEVICE maps a CUDA ordinal. */
static enum kvs_status device_names(struct kvs_nsys *n)
{
    if (!n->used_devices || !kvs_nsys_has_table(n, "TARGET_INFO_GPU") ||
        !kvs_nsys_has_column(n, "TARGET_INFO_GPU", "id") || !kvs_nsys_has_column(n, "TARGET_INFO_GPU", "name"))
        return KVS_STATUS_OK;
    bool map = kvs_nsys_has_table(n, "TARGET_INFO_CUDA_DEVICE") &&
               kvs_nsys_has_column(n, "TARGET_INFO_CUDA_DEVICE", "gpuId") &&
               kvs_nsys_has_column(n, "TARGET_INFO_CUDA_DEVICE", "cudaId");
    const char *sql = map ? "SELECT coalesce((SELECT name FROM TARGET_INFO_GPU WHERE id = ?1 AND name IS NOT NULL),"
                            " (SELECT g.name FROM TARGET_INFO_CUDA_DEVICE c JOIN TARGET_INFO_GPU g"
                            " ON g.id = c.gpuId WHERE c.cudaId = ?1 AND g.name IS NOT NULL))"
                          : "SELECT name FROM TARGET_INFO_GPU WHERE id = ?1 AND name IS NOT NULL";
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(n->db, sql, -1, &q, NULL) != SQLITE_OK)
        return kvs_nsys_fail(n, "reading TARGET_INFO_GPU");
    enum kvs_status st = KVS_STATUS_OK;
    for (int d = 0; d < KVS_MAX_DEVICES && st == KVS_STATUS_OK; d++) {
        if (!(n->used_devices >> d & 1))
            continue;
        sqlite3_reset(q);
        sqlite3_bind_int(q, 1, d);
        int rc = sqlite3_step(q);
        if (rc == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(q, 0);
            if (name && !n->t->device_names[d] && !(n->t->device_names[d] = strdup(name)))
                st = KVS_STATUS_NO_MEMORY;
        } else if (rc != SQLITE_DONE) {
            st = kvs_nsys_fail(n, "reading TARGET_INFO_GPU");
        }
    }
    sqlite3_finalize(q);
    return st;
}

// ----------------------------------------------------------------------------
// the summary

static const char *const table_names[KVS_NSYS_TABLES_] = {
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",          "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS",
};

static void summary(struct kvs_nsys *n, const char *ver, const char *schema, const char *meta_table)
{
    const struct kvs_trace_data *t = n->t;
    char absent[400] = "";
    size_t w = 0;
    for (int k = 0; k < KVS_NSYS_TABLES_; k++)
        if (!n->present[k])
            w += (size_t)snprintf(absent + w, sizeof absent - w, "%s%s", w ? ", " : "", table_names[k]);
    if (!n->have_strings && w < sizeof absent)
        w += (size_t)snprintf(absent + w, sizeof absent - w, "%sStringIds (no kernel names)", w ? ", " : "");
    if (!meta_table && w < sizeof absent)
        snprintf(absent + w, sizeof absent - w, "%sMETA_DATA_EXPORT / EXPORT_META_DATA (version unknown)",
                 w ? ", " : "");
    char devs[200] = "";
    size_t dw = 0;
    for (int d = 0; d < KVS_MAX_DEVICES && dw < sizeof devs; d++)
        if (n->used_devices >> d & 1)
            dw += (size_t)snprintf(devs + dw, sizeof devs - dw, "%s%d (%s)", dw ? ", " : "", d,
                                   t->device_names[d] ? t->device_names[d] : "name unknown");
    kvs_log(n->opt->log, KVS_LOG_INFO,
            "%s: Nsight Systems export (nsys %s, schema %s): %llu kernels, %llu memcpys, %llu memsets, "
            "%llu runtime/driver calls, %llu synchronizations, %llu NVTX ranges (%llu of them emit_nvtx "
            "ops), %llu NVTX marks; GPU work on device %s; absent tables: %s",
            n->path, ver, schema, (unsigned long long)t->n_kernels, (unsigned long long)t->n_memcpys,
            (unsigned long long)t->n_memsets, (unsigned long long)t->n_runtime,
            (unsigned long long)n->rows[KVS_NSYS_SYNC], (unsigned long long)n->nvtx_ranges,
            (unsigned long long)n->nvtx_ops, (unsigned long long)n->nvtx_marks, dw ? devs : "none",
            w ? absent : "none");
    if (n->domains)
        kvs_log(n->opt->log, KVS_LOG_INFO, "%s: NVTX domains: %s", n->path, n->domains);
    if (n->nvtx_ops)
        kvs_log(n->opt->log, KVS_LOG_INFO,
                "%s: op shapes come from emit_nvtx range texts, which carry no dtypes: copy/cast "
                "bytes per call come from memcpy/memset bytes where there are any, else they are unknown",
                n->path);
    if (n->nvtx_open)
        kvs_log(n->opt->log, KVS_LOG_WARN, "%s: %llu NVTX ranges were never closed (no end): left out",
                n->path, (unsigned long long)n->nvtx_open);
    if (n->bad_dur)
        kvs_log(n->opt->log, KVS_LOG_WARN, "%s: %llu rows end before they start: kept with 0 ns", n->path,
                (unsigned long long)n->bad_dur);
    if (t->events == 0)
        kvs_log(n->opt->log, KVS_LOG_ERROR,
                "%s: the export holds no CUDA or NVTX activity (absent tables: %s): profile with "
                "nsys profile --trace=cuda,nvtx",
                n->path, w ? absent : "none");
}

// ----------------------------------------------------------------------------
// reading

enum kvs_status kvs_read_nsys(const char *path, const struct kvs_read_opts *opt, struct kvs_trace_data *t)
{
    struct kvs_read_opts defaults = {0};
    if (!opt)
        opt = &defaults;
    if (!kvs_trace_data_init(t))
        return KVS_STATUS_NO_MEMORY;
    t->from_nsys = true;
    t->ops_ext_sorted = false; /* nsys ops have no External ids */
    struct kvs_nsys n;
    memset(&n, 0, sizeof n);
    n.path = path;
    n.opt = opt;
    n.t = t;

    struct stat sb;
    if (stat(path, &sb) == 0)
        t->bytes = (uint64_t)sb.st_size;
    char *uri = immutable_uri(path);
    if (!uri)
        return KVS_STATUS_NO_MEMORY;
    int rc = sqlite3_open_v2(uri, &n.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    free(uri);
    enum kvs_status st = KVS_STATUS_OK;
    if (rc != SQLITE_OK) {
        if (!n.db)
            return KVS_STATUS_NO_MEMORY;
        st = kvs_nsys_fail(&n, "cannot open the export");
        goto done;
    }
    /* a hostile string must not make SQLite allocate gigabytes for it */
    sqlite3_limit(n.db, SQLITE_LIMIT_LENGTH, KVS_NSYS_MAX_STRING);
    /* the first read of the schema tells a database from garbage behind the magic */
    sqlite3_stmt *probe;
    if (sqlite3_prepare_v2(n.db, "SELECT count(*) FROM sqlite_master", -1, &probe, NULL) != SQLITE_OK) {
        st = kvs_nsys_fail(&n, "not a readable SQLite database");
        goto done;
    }
    rc = sqlite3_step(probe);
    sqlite3_finalize(probe);
    if (rc != SQLITE_ROW) {
        st = kvs_nsys_fail(&n, "not a readable SQLite database");
        goto done;
    }
    char ver[48], schema[48];
    const char *meta_table;
    export_version(&n, ver, sizeof ver, schema, sizeof schema, &meta_table);
    n.have_strings = kvs_nsys_has_table(&n, "StringIds") && kvs_nsys_has_column(&n, "StringIds", "id") &&
                     kvs_nsys_has_column(&n, "StringIds", "value");
    if (n.have_strings &&
        sqlite3_prepare_v2(n.db, "SELECT value FROM StringIds WHERE id = ?", -1, &n.string_q, NULL) != SQLITE_OK) {
        st = kvs_nsys_fail(&n, "reading StringIds");
        goto done;
    }
    for (int k = 0; k < KVS_NSYS_TABLES_; k++)
        n.present[k] = kvs_nsys_has_table(&n, table_names[k]);
    if ((st = kvs_nsys_read_rows(&n)) != KVS_STATUS_OK || (st = device_names(&n)) != KVS_STATUS_OK)
        goto done;
    summary(&n, ver, schema, meta_table);
done:
    sqlite3_finalize(n.string_q);
    kvs_u64map_free(&n.string_map);
    kvs_u64map_free(&n.api_map);
    free(n.domains);
    sqlite3_close(n.db);
    return st;
}
