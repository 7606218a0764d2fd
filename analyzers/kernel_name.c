/* analyzers/kernel_name.c — the short form of a (C++) kernel name, for table
 * cells and for the sentences of findings; see kvscope/kernel_name.h.
 *
 * Tested in tests/test_report_fmt.c (names) and tests/test_match.c (evidence).
 */
#include "kvscope/kernel_name.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define ANON_NS "(anonymous namespace)::"

/* Namespaces that name a library, not a kernel: dropped where they qualify
 * the kernel's own name. Any other namespace identifies the kernel and is
 * kept there ("vllm::", "dpsk::ep::internode::"). Inside template arguments
 * every qualifier goes, as before (the arguments are detail). */
static int noise_namespace(const char *s, size_t n)
{
    static const char *const k[] = {"at", "native", "c10", "std", "cub", "thrust", "cuda"};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strlen(k[i]) == n && !strncmp(s, k[i], n))
            return 1;
    return 0;
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* The start of the kernel's own name: after a return type ("void ",
 * "std::enable_if<...>::type "), i.e. after the last space outside brackets
 * before the argument list. Without an argument list (a '(' right after a
 * name or a template) nothing is skipped: "Memcpy DtoD (Device -> Device)". */
static const char *skip_return_type(const char *s)
{
    const char *last_space = NULL;
    int angle = 0, paren = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '(') {
            if (angle == 0 && paren == 0 && p > s && (ident_char(p[-1]) || p[-1] == '>'))
                return last_space ? last_space + 1 : s;
            paren++;
        } else if (*p == ')' && paren > 0) {
            paren--;
        } else if (paren == 0 && *p == '<') {
            angle++;
        } else if (paren == 0 && *p == '>' && angle > 0) {
            angle--;
        } else if (*p == ' ' && angle == 0 && paren == 0) {
            last_space = p;
        }
    }
    return s;
}

/* A launcher template whose first argument is the kernel (CUTLASS's
 * device_kernel<Op>, Kernel<Op>, Kernel2<Op>): the argument, [*inner,
 * *inner_end), and 1; else 0. `s` has its return type skipped. */
static int wrapped_kernel(const char *s, const char **inner, const char **inner_end)
{
    static const char *const w[] = {"cutlass::device_kernel<", "device_kernel<",
                                    "cutlass::Kernel<",        "cutlass::Kernel2<"};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        size_t n = strlen(w[i]);
        if (strncmp(s, w[i], n))
            continue;
        int angle = 1, paren = 0;
        const char *p = s + n;
        for (; *p && angle; p++) {
            if (*p == '(')
                paren++;
            else if (*p == ')' && paren > 0)
                paren--;
            else if (!paren && *p == '<')
                angle++;
            else if (!paren && *p == '>')
                angle--;
        }
        if (angle)
            return 0;
        const char *e = p - 1; /* the closing '>' */
        while (e > s + n && e[-1] == ' ')
            e--;
        *inner = s + n;
        *inner_end = e;
        return *inner_end > *inner;
    }
    return 0;
}

/* Copy name[0, n) without its return type, the kernel name's library
 * namespaces ("at::native::", "(anonymous namespace)::"), every qualifier
 * inside template arguments, and with argument lists emptied. */
static void simplify_kernel(char *dst, size_t size, const char *name)
{
    size_t o = 0;
    const char *s = name;
    while (*s == ' ')
        s++;
    s = skip_return_type(s);
    const char *inner, *inner_end;
    if (wrapped_kernel(s, &inner, &inner_end)) {
        char tmp[1024];
        size_t n = (size_t)(inner_end - inner) < sizeof tmp - 1 ? (size_t)(inner_end - inner)
                                                                 : sizeof tmp - 1;
        memcpy(tmp, inner, n);
        tmp[n] = 0;
        simplify_kernel(dst, size > 2 ? size - 2 : size, tmp);
        size_t len = strlen(dst);
        if (strchr(inner_end, '(') && len + 2 < size) /* the launcher's argument list */
            memcpy(dst + len, "()", 3);
        return;
    }
    const char *begin = s;
    int paren = 0, angle = 0, dropped = 0; /* dropped: the qualifier just before was */
    while (*s && o + 1 < size) {
        /* an argument list follows a name or a template: "f<T>(int, ...)";
         * words in parentheses ("Memcpy HtoD (Pageable -> Device)") stay */
        if (*s == '(' && (paren > 0 || (o > 0 && (ident_char(dst[o - 1]) || dst[o - 1] == '>')))) {
            if (paren == 0)
                dst[o++] = '(';
            paren++;
            s++;
            continue;
        }
        if (*s == ')' && paren > 0) {
            paren--;
            if (paren == 0 && o + 1 < size)
                dst[o++] = ')';
            s++;
            continue;
        }
        if (paren > 0) {
            s++;
            continue;
        }
        if (!strncmp(s, ANON_NS, sizeof ANON_NS - 1)) {
            s += sizeof ANON_NS - 1; /* a qualifier too, however it is spelled */
            continue;
        }
        if (*s == '<')
            angle++;
        else if (*s == '>' && angle > 0)
            angle--;
        if (isalpha((unsigned char)*s) || *s == '_') {
            const char *e = s;
            while (ident_char(*e))
                e++;
            int chain_start = s == begin || s[-1] != ':' || dropped;
            if (e[0] == ':' && e[1] == ':' && (s == begin || !isalnum((unsigned char)s[-1])) &&
                (angle > 0 || (chain_start && noise_namespace(s, (size_t)(e - s))))) {
                s = e + 2; /* a library's namespace, or any qualifier inside <...> */
                dropped = 1;
                continue;
            }
            dropped = 0;
            while (s < e && o + 1 < size)
                dst[o++] = *s++;
            continue;
        }
        dst[o++] = *s++;
    }
    dst[o] = 0;
}

char *kvs_short_kernel(char *buf, size_t size, const char *name, size_t width)
{
    if (!name) {
        snprintf(buf, size, "-");
        return buf;
    }
    char tmp[1024];
    simplify_kernel(tmp, sizeof tmp, name);
    if (!tmp[0])
        snprintf(tmp, sizeof tmp, "%s", name);
    if (width < 8)
        width = 8;
    if (width + 1 > size)
        width = size - 1;
    size_t len = strlen(tmp);
    if (len > width) {
        memcpy(buf, tmp, width - 3);
        memcpy(buf + width - 3, "...", 4);
    } else {
        memcpy(buf, tmp, len + 1);
    }
    return buf;
}


char *kvs_short_op(char *buf, size_t size, const char *name, size_t width)
{
    if (name && !strchr(name, '<') && !strchr(name, '(')) {
        size_t n = strlen(name);
        if (width >= size)
            width = size - 1;
        if (n <= width)
            snprintf(buf, size, "%s", name);
        else
            snprintf(buf, size, "%.*s...", (int)(width > 3 ? width - 3 : 0), name);
        return buf;
    }
    return kvs_short_kernel(buf, size, name, width);
}
