/* arena.c — allocations owned by an analysis result, freed together (see
 * kvscope/reader.h). Private to reader/. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/reader.h"

void *kvs_arena_alloc(struct kvs_arena *a, size_t size)
{
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 64;
        void **b = realloc(a->blocks, nc * sizeof *b);
        if (!b) {
            a->failed = true;
            return NULL;
        }
        a->blocks = b;
        a->cap = nc;
    }
    void *p = calloc(1, size ? size : 1);
    if (p)
        a->blocks[a->n++] = p;
    else
        a->failed = true;
    return p;
}

char *kvs_arena_strdup(struct kvs_arena *a, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *p = kvs_arena_alloc(a, n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

char *kvs_arena_printf(struct kvs_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        a->failed = true;
        return NULL;
    }
    char *p = kvs_arena_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void kvs_arena_free(struct kvs_arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->blocks[i]);
    free(a->blocks);
    memset(a, 0, sizeof *a);
}
