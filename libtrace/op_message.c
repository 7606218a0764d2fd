/* op_message.c — an op's shapes as an NVTX message and back:
 * "aten::copy_ {dims=[[495552,1,576],[495552,1,576]] types=[c10::BFloat16,c10::Float8_e4m3fn]}".
 * Readable in Nsight Systems; parsed by a capture attached through NVTX
 * (see annotate_internal.h). Plain C, tested in tests/test_trace_writer.c.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "annotate_internal.h"

static const char k_marker[] = " {dims=[";
static const char k_types[] = "] types=[";

/* Appends with snprintf semantics; *pos may run past size (then it did not fit). */
static void put(char *buf, size_t size, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = *pos < size ? size - *pos : 0;
    int n = vsnprintf(room ? buf + *pos : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        *pos += (size_t)n;
}

int kvs_op_message_format(char *buf, size_t size, const char *name, int ntensors,
                          const struct kvs_tensor_desc *tensors)
{
    if (size == 0)
        return 0;
    size_t pos = 0;
    put(buf, size, &pos, "%s", name ? name : "");
    size_t name_end = pos;
    if (ntensors <= 0 || !tensors)
        return pos < size;
    put(buf, size, &pos, "%s", k_marker);
    for (int i = 0; i < ntensors; i++) {
        const struct kvs_tensor_desc *t = &tensors[i];
        int rank = t->rank < 0 ? 0 : t->rank > KVS_TENSOR_MAX_RANK ? KVS_TENSOR_MAX_RANK : t->rank;
        put(buf, size, &pos, "%s[", i ? "," : "");
        for (int d = 0; d < rank; d++)
            put(buf, size, &pos, "%s%" PRId64, d ? "," : "", t->dims[d]);
        put(buf, size, &pos, "]");
    }
    put(buf, size, &pos, "%s", k_types);
    for (int i = 0; i < ntensors; i++)
        put(buf, size, &pos, "%s%s", i ? "," : "", tensors[i].dtype ? tensors[i].dtype : "");
    put(buf, size, &pos, "]}");
    if (pos < size)
        return 1;
    /* Too long: keep the name alone rather than a suffix cut in half. */
    if (name_end < size)
        buf[name_end] = '\0';
    else
        buf[size - 1] = '\0';
    return 0;
}

/* The last occurrence of needle in hay, or NULL. */
static const char *find_last(const char *hay, const char *needle)
{
    const char *last = NULL;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        last = p;
    return last;
}

static int parse_dims(const char **pp, struct kvs_tensor_desc *t, int max_tensors, int *nt)
{
    const char *p = *pp;
    int n = 0;
    for (;;) {
        if (*p != '[')
            return 0;
        p++;
        if (n >= max_tensors)
            return 0;
        struct kvs_tensor_desc *d = &t[n];
        memset(d, 0, sizeof *d);
        while (*p != ']') {
            if (d->rank >= KVS_TENSOR_MAX_RANK)
                return 0;
            char *end;
            long long v = strtoll(p, &end, 10);
            if (end == p)
                return 0;
            d->dims[d->rank++] = (int64_t)v;
            p = end;
            if (*p == ',')
                p++;
            else if (*p != ']')
                return 0;
        }
        p++; /* ']' */
        n++;
        if (*p == ',') {
            p++;
            continue;
        }
        break;
    }
    *pp = p;
    *nt = n;
    return 1;
}

int kvs_op_message_parse(const char *msg, size_t *name_len, struct kvs_tensor_desc *tensors,
                         int max_tensors, int *ntensors, char *dtype_buf, size_t dtype_buf_size)
{
    *ntensors = 0;
    *name_len = strlen(msg);
    const char *m = find_last(msg, k_marker);
    if (!m)
        return 1; /* a name without shapes */
    const char *p = m + sizeof k_marker - 1;
    int nt = 0;
    if (!parse_dims(&p, tensors, max_tensors, &nt))
        return 0;
    /* parse_dims stopped at the list's closing ']' */
    if (strncmp(p, k_types, sizeof k_types - 1) != 0)
        return 0;
    p += sizeof k_types - 1;
    size_t used = 0;
    for (int i = 0; i < nt; i++) {
        const char *end = p + strcspn(p, ",]");
        size_t len = (size_t)(end - p);
        if (used + len + 1 > dtype_buf_size)
            return 0;
        memcpy(dtype_buf + used, p, len);
        dtype_buf[used + len] = '\0';
        tensors[i].dtype = dtype_buf + used;
        used += len + 1;
        p = end;
        if (i + 1 < nt) {
            if (*p != ',')
                return 0;
            p++;
        }
    }
    if (strcmp(p, "]}") != 0)
        return 0;
    *name_len = (size_t)(m - msg);
    *ntensors = nt;
    return 1;
}
