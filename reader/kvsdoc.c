/* reader/kvsdoc.c — kvscope's own JSON documents as inputs (a rank's report,
 * read back as its kvscope.rank/1 summary by analyzers/rank_summary.c):
 * whether a file is one, by its first bytes, and its text whole.
 *
 *   kvscope report r0.json r1.json ...     (the ranks' reports, in place of traces)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "kvscope/reader.h"

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* the text starts {"schema": "kvscope.NAME" (whitespace allowed): NAME's
 * "kvscope.NAME" into schema, else "" */
static void kvscope_schema(const char *p, const char *end, char *schema, size_t size)
{
    static const char key[] = "\"schema\"", val[] = "\"kvscope.";
    schema[0] = 0;
    p = skip_ws(p, end);
    if (p == end || *p++ != '{')
        return;
    p = skip_ws(p, end);
    if ((size_t)(end - p) < sizeof key - 1 || memcmp(p, key, sizeof key - 1))
        return;
    p = skip_ws(p + sizeof key - 1, end);
    if (p == end || *p++ != ':')
        return;
    p = skip_ws(p, end);
    if ((size_t)(end - p) < sizeof val - 1 || memcmp(p, val, sizeof val - 1))
        return;
    const char *q = ++p;
    while (q < end && *q != '"' && (size_t)(q - p) + 1 < size && (unsigned char)*q >= 0x20 && *q != '\\')
        q++;
    if (q < end && *q == '"') {
        memcpy(schema, p, (size_t)(q - p));
        schema[q - p] = 0;
    }
}

enum kvs_status kvs_kvscope_doc_sniff(const char *path, char *schema, size_t size)
{
    if (!schema || size == 0)
        return KVS_STATUS_INVALID_ARGUMENT;
    schema[0] = 0;
    struct stat sb;
    /* never a pipe or stdin: what is read here could not be read again */
    if (!path || !strcmp(path, "-") || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return KVS_STATUS_OK;
    gzFile f = gzopen(path, "rb");
    if (!f)
        return KVS_STATUS_IO;
    char buf[512];
    int n = gzread(f, buf, sizeof buf);
    gzclose(f);
    if (n < 0)
        return KVS_STATUS_IO;
    kvscope_schema(buf, buf + n, schema, size);
    return KVS_STATUS_OK;
}

enum kvs_status kvs_read_kvscope_doc(const char *path, const struct kvs_logger *lg, size_t max, char **text,
                                     size_t *len)
{
    gzFile f = gzopen(path, "rb");
    if (!f) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: cannot open", path);
        return KVS_STATUS_IO;
    }
    gzbuffer(f, 1 << 17);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    enum kvs_status st = buf ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
    while (st == KVS_STATUS_OK) {
        if (n == cap) {
            if (cap >= max) {
                kvs_log(lg, KVS_LOG_ERROR, "%s: a kvscope JSON document over %zu MiB: refused", path,
                        max >> 20);
                st = KVS_STATUS_LIMIT;
                break;
            }
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) {
                st = KVS_STATUS_NO_MEMORY;
                break;
            }
            buf = b;
            cap *= 2;
        }
        int got = gzread(f, buf + n, (unsigned)(cap - n));
        if (got < 0) {
            int e;
            kvs_log(lg, KVS_LOG_ERROR, "%s: read failed: %s", path, gzerror(f, &e));
            st = KVS_STATUS_IO;
        } else if (got == 0) {
            break;
        }
        n += got > 0 ? (size_t)got : 0;
    }
    gzclose(f);
    if (st != KVS_STATUS_OK) {
        free(buf);
        return st;
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return KVS_STATUS_OK;
}

