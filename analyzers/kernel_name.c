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

/* Copy `name` without "void " in front, without namespace qualifiers of
 * plain identifiers ("at::native::") and with argument lists emptied. */
static void simplify_kernel(char *dst, size_t size, const char *name)
{
    size_t o = 0;
    const char *s = name;
    while (*s == ' ')
        s++;
    if (!strncmp(s, "void ", 5))
        s += 5;
    int paren = 0;
    while (*s && o + 1 < size) {
        /* an argument list follows a name or a template: "f<T>(int, ...)";
         * words in parentheses ("Memcpy HtoD (Pageable -> Device)") stay */
        if (*s == '(' && (paren > 0 || (o > 0 && (isalnum((unsigned char)dst[o - 1]) ||
                                                  dst[o - 1] == '_' || dst[o - 1] == '>')))) {
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
        if (isalpha((unsigned char)*s) || *s == '_') {
            const char *e = s;
            while (isalnum((unsigned char)*e) || *e == '_')
                e++;
            if (e[0] == ':' && e[1] == ':' && (s == name || !isalnum((unsigned char)s[-1]))) {
                s = e + 2; /* a namespace or class qualifier */
                continue;
            }
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
