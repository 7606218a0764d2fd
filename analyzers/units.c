/* analyzers/units.c — numbers with units a person reads at a glance, short
 * dtype/dims names, and the strings a result owns: shared by the analyzer's
 * sentences (compare's verdict, multi-rank notes) and the renderers' cells,
 * so a figure reads the same in both.
 *
 * Tested in tests/test_report_fmt.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/units.h"

// ----------------------------------------------------------------------------
// numbers

/* what a number that is not finite prints as */
static char *dash(char *buf)
{
    strcpy(buf, "-");
    return buf;
}

char *kvs_fmt_bytes(char *buf, double bytes)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    if (!isfinite(bytes))
        return dash(buf);
    double v = fabs(bytes);
    int u = 0;
    while (v >= 999.95 && u < 5) {
        v /= 1000;
        u++;
    }
    const char *sign = bytes < 0 ? "-" : "";
    if (u == 0)
        snprintf(buf, KVS_FMT_BUF, "%s%.0f B", sign, v);
    else
        snprintf(buf, KVS_FMT_BUF, "%s%.1f %s", sign, v, units[u]);
    return buf;
}

char *kvs_fmt_bytes2(char *buf, double b)
{
    if (!isfinite(b))
        return dash(buf);
    if (b >= 1e9)
        snprintf(buf, KVS_FMT_BUF, "%.2f GB", b / 1e9);
    else if (b >= 1e6)
        snprintf(buf, KVS_FMT_BUF, "%.2f MB", b / 1e6);
    else if (b >= 1e3)
        snprintf(buf, KVS_FMT_BUF, "%.2f kB", b / 1e3);
    else
        snprintf(buf, KVS_FMT_BUF, "%.0f B", b);
    return buf;
}

char *kvs_fmt_gbps(char *buf, double gbps)
{
    if (!isfinite(gbps))
        return dash(buf);
    double v = fabs(gbps);
    const char *f = v >= 99.95 ? "%.0f GB/s" : v >= 9.995 ? "%.1f GB/s" : "%.2f GB/s";
    snprintf(buf, KVS_FMT_BUF, f, gbps);
    return buf;
}

char *kvs_fmt_ms(char *buf, double ms)
{
    if (!isfinite(ms))
        return dash(buf);
    double v = fabs(ms);
    const char *f = v >= 99.95 ? "%.1f" : v >= 9.995 ? "%.2f" : "%.3f";
    snprintf(buf, KVS_FMT_BUF, f, ms);
    if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1))
        memmove(buf, buf + 1, strlen(buf)); /* "-0.000" -> "0.000" */
    return buf;
}

char *kvs_fmt_pct(char *buf, double fraction)
{
    if (!isfinite(fraction))
        return dash(buf);
    snprintf(buf, KVS_FMT_BUF, "%.1f%%", fraction * 100);
    if (!strcmp(buf, "-0.0%"))
        strcpy(buf, "0.0%");
    return buf;
}

char *kvs_fmt_signed_pct(char *buf, double frac)
{
    if (!isfinite(frac))
        return dash(buf);
    snprintf(buf, KVS_FMT_BUF, "%+.1f%%", frac * 100);
    if (!strcmp(buf, "-0.0%") || !strcmp(buf, "+0.0%"))
        strcpy(buf, "0.0%");
    return buf;
}

char *kvs_fmt_count(char *buf, double n)
{
    if (!isfinite(n))
        return dash(buf);
    if (n != floor(n) || fabs(n) >= 1e18) {
        snprintf(buf, KVS_FMT_BUF, fabs(n) >= 100 ? "%.0f" : "%.1f", n);
        return buf;
    }
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)fabs(n));
    size_t len = strlen(digits), o = 0;
    if (n < 0)
        buf[o++] = '-';
    for (size_t i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
    return buf;
}

// ----------------------------------------------------------------------------
// strings a result owns

char *kvs_fmt_dup(bool *oom, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0 && (s = malloc((size_t)n + 1))) {
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    } else {
        *oom = true;
    }
    return s;
}

void kvs_strv_push(bool *oom, char ***arr, size_t *n, char *s)
{
    if (!s)
        return;
    char **a = realloc(*arr, (*n + 1) * sizeof *a);
    if (!a) {
        free(s);
        *oom = true;
        return;
    }
    a[(*n)++] = s;
    *arr = a;
}

// ----------------------------------------------------------------------------
// names

const char *kvs_short_dtype(const char *name)
{
    static const struct {
        const char *from, *to;
    } map[] = {
        {"c10::BFloat16", "bf16"},        {"c10::Half", "f16"},
        {"float", "f32"},                 {"double", "f64"},
        {"c10::Float8_e4m3fn", "fp8_e4m3fn"}, {"c10::Float8_e5m2", "fp8_e5m2"},
        {"c10::Float8_e4m3fnuz", "fp8_e4m3fnuz"}, {"c10::Float8_e5m2fnuz", "fp8_e5m2fnuz"},
        {"c10::Float8_e8m0fnu", "fp8_e8m0fnu"}, {"c10::Float4_e2m1fn_x2", "fp4_e2m1fn_x2"},
        {"unsigned char", "u8"},          {"signed char", "i8"},
        {"short", "i16"},                 {"int", "i32"},
        {"long int", "i64"},              {"long", "i64"},
        {"bool", "bool"},                 {"c10::complex<float>", "c64"},
    };
    if (!name)
        return "";
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(name, map[i].from))
            return map[i].to;
    if (!strncmp(name, "c10::", 5))
        return name + 5;
    return name;
}

/* Append src to buf (size) at *len, keeping the terminator. */
static void append(char *buf, size_t size, size_t *len, const char *src)
{
    size_t n = strlen(src);
    if (*len + 1 >= size)
        return;
    if (n > size - 1 - *len)
        n = size - 1 - *len;
    memcpy(buf + *len, src, n);
    *len += n;
    buf[*len] = 0;
}

static bool same_dims(const struct kvs_dims *x, const struct kvs_dims *y)
{
    if (x->rank != y->rank)
        return false;
    for (int i = 0; i < x->rank && i < 8; i++)
        if (x->d[i] != y->d[i])
            return false;
    return true;
}

static void append_dims(char *buf, size_t size, size_t *len, const struct kvs_dims *d)
{
    char num[32];
    append(buf, size, len, "[");
    int rank = d->rank < 0 ? 0 : d->rank > 8 ? 8 : d->rank;
    for (int i = 0; i < rank; i++) {
        snprintf(num, sizeof num, "%s%lld", i ? "," : "", (long long)d->d[i]);
        append(buf, size, len, num);
    }
    append(buf, size, len, d->rank > 8 ? ",...]" : "]");
}

char *kvs_short_dims(char *buf, size_t size, const struct kvs_group *g)
{
    size_t len = 0;
    buf[0] = 0;
    if (g->ntensors <= 0 || !g->tensor_dims) {
        append(buf, size, &len, "-");
        return buf;
    }
    bool all_same = true;
    for (int i = 1; i < g->ntensors; i++)
        all_same = all_same && same_dims(&g->tensor_dims[0], &g->tensor_dims[i]);
    if (all_same) {
        append_dims(buf, size, &len, &g->tensor_dims[0]);
        if (g->ntensors > 1) {
            char n[16];
            snprintf(n, sizeof n, " x%d", g->ntensors);
            append(buf, size, &len, n);
        }
        return buf;
    }
    for (int i = 0; i < g->ntensors; i++) {
        if (i)
            append(buf, size, &len, " ");
        append_dims(buf, size, &len, &g->tensor_dims[i]);
    }
    return buf;
}

char *kvs_dims_json(char *buf, size_t size, const struct kvs_group *g)
{
    size_t len = 0;
    buf[0] = 0;
    append(buf, size, &len, "[");
    for (int i = 0; g->tensor_dims && i < g->ntensors; i++) {
        char num[32];
        const struct kvs_dims *d = &g->tensor_dims[i];
        append(buf, size, &len, i ? ",[" : "[");
        for (int k = 0; k < d->rank && k < 8; k++) {
            snprintf(num, sizeof num, "%s%lld", k ? "," : "", (long long)d->d[k]);
            append(buf, size, &len, num);
        }
        append(buf, size, &len, "]");
    }
    append(buf, size, &len, "]");
    if (len + 1 >= size && size > 4)
        memcpy(buf + size - 4, "...", 4);
    return buf;
}

char *kvs_short_dtypes(char *buf, size_t size, const struct kvs_group *g)
{
    size_t len = 0;
    buf[0] = 0;
    if (g->ntensors <= 0 || !g->tensor_dtypes) {
        append(buf, size, &len, "-");
        return buf;
    }
    for (int i = 0; i < g->ntensors; i++) {
        const char *t = g->tensor_dtypes[i];
        if (!t || !*t)
            continue;
        if (len)
            append(buf, size, &len, ", ");
        append(buf, size, &len, kvs_short_dtype(t));
    }
    if (!len)
        append(buf, size, &len, "-");
    return buf;
}

// ----------------------------------------------------------------------------
// names

const char *kvs_step_kind_name(enum kvs_step_kind k)
{
    switch (k) {
    case KVS_STEP_DECODE: return "decode";
    case KVS_STEP_PREFILL: return "prefill";
    case KVS_STEP_MIXED: return "mixed";
    case KVS_STEP_UNKNOWN:
    case KVS_STEP_KIND_COUNT_: break;
    }
    return "unknown";
}
