/* launch_size.c — size elementwise copy/cast kernels from grid x block and
 * their demangled name (see launch_size.h). Private to analyzers/. */
#include "launch_size.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tables.h"
#include "dtypes.h"
#include "kvscope/reader.h"

// ----------------------------------------------------------------------------
// the name

/* the functor argument spellings of PyTorch's dispatch -> dtype names */
static const struct {
    const char *arg, *dtype;
} arg_types[] = {
    {"float", "float"},
    {"double", "double"},
    {"c10::BFloat16", "c10::BFloat16"},
    {"c10::Half", "c10::Half"},
    {"c10::Float8_e4m3fn", "c10::Float8_e4m3fn"},
    {"c10::Float8_e5m2", "c10::Float8_e5m2"},
    {"c10::Float8_e4m3fnuz", "c10::Float8_e4m3fnuz"},
    {"c10::Float8_e5m2fnuz", "c10::Float8_e5m2fnuz"},
    {"long", "long int"},
    {"int", "int"},
    {"short", "short int"},
    {"signed char", "signed char"},
    {"unsigned char", "unsigned char"},
    {"bool", "bool"},
};

static const char *dtype_of_arg(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof arg_types / sizeof arg_types[0]; i++)
        if (strlen(arg_types[i].arg) == n && !memcmp(arg_types[i].arg, s, n))
            return arg_types[i].dtype;
    return NULL;
}

static int bits_of(const char *dtype)
{
    return dtype ? kvs_dtype_bits(dtype, strlen(dtype)) : 0;
}

/* the first "{lambda(T)#" with a type: the functor's argument */
static const char *lambda_dtype(const char *name)
{
    for (const char *p = strstr(name, "{lambda("); p; p = strstr(p + 1, "{lambda(")) {
        const char *a = p + 8, *e = strchr(a, ')');
        if (e && e > a)
            return dtype_of_arg(a, (size_t)(e - a));
    }
    return NULL;
}

/* The top-level template arguments after `open` (the '<' of the kernel's
 * template): arg i as [*s, *s + *n). */
static bool template_arg(const char *open, int want, const char **s, size_t *n)
{
    int depth = 0, arg = 0;
    const char *start = open + 1;
    for (const char *p = open + 1; *p; p++) {
        char ch = *p;
        if (ch == '<' || ch == '(' || ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '>' || ch == ')' || ch == '}' || ch == ']') {
            if (depth == 0) {
                if (arg == want) {
                    *s = start;
                    *n = (size_t)(p - start);
                    return true;
                }
                return false;
            }
            depth--;
        } else if (ch == ',' && depth == 0) {
            if (arg == want) {
                *s = start;
                *n = (size_t)(p - start);
                return true;
            }
            arg++;
            start = p + 1;
        }
    }
    return false;
}

static int small_int(const char *s, size_t n)
{
    while (n && *s == ' ')
        s++, n--;
    int v = 0;
    size_t i = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9' && v < 1000; i++)
        v = v * 10 + (s[i] - '0');
    return i && v < 1000 ? v : 0;
}

/* "...::<loop><" at a name boundary (not "index_elementwise_kernel<") */
static const char *loop_at(const char *name, const char *loop)
{
    size_t n = strlen(loop);
    for (const char *p = strstr(name, loop); p; p = strstr(p + 1, loop))
        if (p[n] == '<' && (p == name || p[-1] == ':' || p[-1] == ' '))
            return p + n;
    return NULL;
}

bool kvs_launch_kernel_parse(const char *name, struct kvs_launch_kernel *k)
{
    memset(k, 0, sizeof *k);
    const char *open, *s;
    size_t n;
    if ((open = loop_at(name, "unrolled_elementwise_kernel")) && template_arg(open, 2, &s, &n)) {
        k->per_thread_min = k->per_thread_max = small_int(s, n);
    } else if ((open = loop_at(name, "elementwise_kernel")) && template_arg(open, 1, &s, &n)) {
        k->per_thread_min = k->per_thread_max = small_int(s, n);
    } else if ((open = loop_at(name, "vectorized_elementwise_kernel")) && template_arg(open, 0, &s, &n)) {
        /* grid = ceil(N / (128 x per-thread)); per-thread is 4 up to PyTorch
         * 2.6, 8 (16 for 1-byte i/o) after, never below the vector width */
        int vec = small_int(s, n);
        k->per_thread_min = vec > 4 ? vec : 4;
        k->per_thread_max = 16;
        if (vec <= 0)
            return false;
    } else {
        return false;
    }
    if (k->per_thread_min <= 0)
        return false;
    const char *arg = lambda_dtype(name);
    k->load_cast = strstr(name, "LoadWithCast") != NULL;
    if (strstr(name, "bfloat16_copy_kernel_cuda")) {
        k->src_dtype = arg;
        k->dst_dtype = "c10::BFloat16";
    } else if (strstr(name, "float16_copy_kernel_cuda")) {
        k->src_dtype = arg;
        k->dst_dtype = "c10::Half";
    } else if (strstr(name, "float8_copy_kernel_cuda")) {
        k->src_dtype = arg;
        k->dst_dtype = "float8"; /* one byte; which float8 the name does not say */
    } else if (strstr(name, "direct_copy_kernel_cuda")) {
        k->dst_dtype = arg;
        k->src_dtype = k->load_cast ? NULL : arg;
    } else {
        return false; /* an elementwise kernel that computes: not a copy/cast */
    }
    k->dst_bits = strcmp(k->dst_dtype ? k->dst_dtype : "", "float8") ? bits_of(k->dst_dtype) : 8;
    k->src_bits = bits_of(k->src_dtype);
    return k->dst_bits > 0;
}

bool kvs_launch_elements(const struct kvs_launch_kernel *k, int64_t blocks, int64_t threads,
                         int64_t *lo, int64_t *hi)
{
    if (blocks <= 0 || threads <= 0)
        return false;
    int64_t a, b;
    if (__builtin_mul_overflow(blocks - 1, threads, &a) || __builtin_mul_overflow(a, k->per_thread_min, &a) ||
        __builtin_mul_overflow(blocks, threads, &b) || __builtin_mul_overflow(b, k->per_thread_max, &b))
        return false;
    *lo = a + 1;
    *hi = b;
    return true;
}

// ----------------------------------------------------------------------------
// a group's activities

struct kvs_launch_cache {
    struct kvs_u64map map; /* name -> index + 1 into v */
    struct {
        bool ok;
        struct kvs_launch_kernel k;
    } *v;
    size_t n, cap;
};

void kvs_launch_cache_free(struct kvs_launch_cache *cache)
{
    if (!cache)
        return;
    kvs_u64map_free(&cache->map);
    free(cache->v);
    free(cache);
}

int kvs_launch_acc_add(struct kvs_launch_cache **cache, const struct kvs_launch_facts *lf,
                       struct kvs_launch_acc *a, const struct kvs_gpu_rec *g)
{
    if (!*cache && !(*cache = calloc(1, sizeof **cache)))
        return -1;
    struct kvs_launch_cache *lc = *cache;
    bool added;
    uint32_t *slot = kvs_u64map_put(&lc->map, g->name, &added);
    if (!slot)
        return -1;
    if (added) {
        if (lc->n == lc->cap) {
            size_t nc = lc->cap ? lc->cap * 2 : 16;
            void *p = realloc(lc->v, nc * sizeof *lc->v);
            if (!p)
                return -1;
            lc->v = p;
            lc->cap = nc;
        }
        lc->v[lc->n].ok = kvs_launch_kernel_parse(kvs_intern_str(lf->strings, g->name), &lc->v[lc->n].k);
        *slot = (uint32_t)++lc->n;
    }
    const struct kvs_launch_kernel *k = &lc->v[*slot - 1].k;
    int64_t lo, hi;
    if (g->kind != KVS_GPU_KERNEL || !lc->v[*slot - 1].ok ||
        !kvs_launch_elements(k, g->grid_blocks, g->block_threads, &lo, &hi)) {
        a->unsized++;
        return 0;
    }
    if (a->sized == 0) {
        a->uniform = true;
        a->src_known = true;
        a->kernel = g->name;
        a->grid = g->grid_blocks;
        a->block = g->block_threads;
        a->k = *k;
    } else if (g->name != a->kernel || g->grid_blocks != a->grid || g->block_threads != a->block) {
        a->uniform = false;
    }
    a->sized++;
    a->elems_lo += lo;
    a->elems_hi += hi;
    if (k->src_bits > 0)
        a->bytes_hi += (int64_t)(((__int128)hi * (k->dst_bits + k->src_bits) + 7) / 8);
    else
        a->src_known = false;
    return 0;
}

// ----------------------------------------------------------------------------
// sizing a group

/* KV row widths the model names (the MLA latent, the indexer keys, GQA K or K+V) */
static int model_rows(const struct kvs_launch_facts *lf, int64_t *rows, int max)
{
    int n = 0;
    if (!lf->model)
        return 0;
    const struct kvs_model *m = lf->model;
    if (m->mla && m->qk_rope_head_dim && n < max)
        rows[n++] = m->kv_lora_rank + m->qk_rope_head_dim;
    if (m->mla && m->kv_lora_rank && n < max)
        rows[n++] = m->kv_lora_rank;
    if (m->index_head_dim && n < max)
        rows[n++] = m->index_head_dim;
    if (!m->mla && m->kv_heads && m->head_dim && n + 1 < max) {
        rows[n++] = m->kv_heads * m->head_dim;
        rows[n++] = 2 * m->kv_heads * m->head_dim;
    }
    return n;
}

/* The one (tokens, row) with tokens x row in [lo, hi]: with a model, row one
 * of its KV row widths; without one, tokens = --kv-capacity and a row of at
 * least KVS_MIN_KV_ROW elements. False when none or several counts fit. A
 * factor no larger than the range's width has a multiple in any such range,
 * so its fitting proves nothing: only wider ones count (576 against a
 * 512-element range: yes; 128: no). */
#define KVS_MIN_KV_ROW 64 /* one head of the smallest head_dim in use */
static bool factor(const struct kvs_launch_facts *lf, int64_t lo, int64_t hi, int64_t *tokens, int64_t *row)
{
    int64_t width = hi - lo + 1, rows[8];
    int nrow = model_rows(lf, rows, 8), found = 0;
    if (!lf->model) {
        int64_t cap = lf->kv_capacity;
        if (cap <= width)
            return false;
        int64_t first = (lo + cap - 1) / cap, last = hi / cap; /* rows r with cap x r in range */
        if (first != last || first < KVS_MIN_KV_ROW)
            return false;
        *tokens = cap;
        *row = first;
        return true;
    }
    for (int i = 0; i < nrow && found <= 1; i++) {
        if (rows[i] <= width)
            continue;
        int64_t first = (lo + rows[i] - 1) / rows[i], last = hi / rows[i];
        if (last < first || first <= 0)
            continue;
        if (last > first)
            return false;
        if (found && *tokens * *row == first * rows[i])
            continue; /* the same count, read another way: the first reading stands */
        *tokens = first;
        *row = rows[i];
        found++;
    }
    return found == 1;
}

static int64_t ceil_bytes(int64_t elems, int bits)
{
    __int128 b = ((__int128)elems * bits + 7) / 8;
    return b > INT64_MAX ? -1 : (int64_t)b;
}

void kvs_launch_size_group(const struct kvs_launch_facts *lf, struct kvs_group_acc *g)
{
    const struct kvs_launch_acc *a = &g->launch;
    if (a->sized == 0 || a->unsized > 0 || g->gpu_calls <= 0)
        return;
    g->launch_sized = true;
    /* one launch per call, all alike: the count can be made exact */
    if (a->uniform && a->sized == g->gpu_calls) {
        int64_t lo = a->elems_lo / a->sized, hi = a->elems_hi / a->sized, tokens = 0, row = 0;
        g->launch_lo = lo;
        g->launch_hi = hi;
        const char *src = a->k.src_dtype;
        int src_bits = a->k.src_bits;
        bool exact = factor(lf, lo, hi, &tokens, &row);
        if (!src && exact && lf->kv_dtype) { /* the cast reads the KV cache in its dtype */
            src = kvs_kv_dtype_name(lf->kv_dtype);
            src_bits = bits_of(src);
        }
        if (exact) {
            int64_t n = tokens * row;
            g->launch_lo = g->launch_hi = n;
            struct kvs_shape *s = &g->shape_info;
            /* dims recorded without dtypes (an emit_nvtx range) stay as
             * recorded ([495552, 1, 576], not [495552, 576]): the launch
             * gives the bytes only */
            if (s->n == 0) {
                memset(s, 0, sizeof *s);
                s->n = 2;
                const char *dt[2] = {a->k.dst_dtype, src ? src : ""};
                int bits[2] = {a->k.dst_bits, src_bits};
                for (int i = 0; i < 2; i++) {
                    s->rank[i] = 2;
                    s->dims[i][0] = tokens;
                    s->dims[i][1] = row;
                    s->bits[i] = bits[i];
                    s->numel[i] = n;
                    s->bytes[i] = bits[i] > 0 ? ceil_bytes(n, bits[i]) : -1;
                    s->dtype[i] = dt[i];
                    s->dtype_len[i] = strlen(dt[i]);
                }
            }
            /* a cast whose source is not named reads at least a byte per element */
            g->bytes_bound = src_bits > 0 ? 0 : -1;
            g->bytes_per_call = ceil_bytes(n, a->k.dst_bits + (src_bits > 0 ? src_bits : 8));
            return;
        }
        g->bytes_bound = 1;
        g->bytes_per_call = src_bits > 0 ? ceil_bytes(hi, a->k.dst_bits + src_bits) : -1;
        return;
    }
    g->launch_lo = a->elems_lo / g->gpu_calls;
    g->launch_hi = a->elems_hi / g->gpu_calls;
    g->bytes_bound = 1;
    g->bytes_per_call = a->src_known ? a->bytes_hi / g->gpu_calls : -1;
}

const char *kvs_kv_dtype_name(const char *spec)
{
    static const struct {
        const char *alias, *dtype;
    } aliases[] = {
        {"fp8", "c10::Float8_e4m3fn"}, {"e4m3", "c10::Float8_e4m3fn"}, {"fp8_e4m3", "c10::Float8_e4m3fn"},
        {"e5m2", "c10::Float8_e5m2"},  {"fp8_e5m2", "c10::Float8_e5m2"}, {"bf16", "c10::BFloat16"},
        {"fp16", "c10::Half"},         {"half", "c10::Half"},           {"fp32", "float"},
        {"float8_e4m3fn", "c10::Float8_e4m3fn"}, {"float8_e5m2", "c10::Float8_e5m2"},
        {"bfloat16", "c10::BFloat16"}, {"float16", "c10::Half"},        {"float", "float"},
        {"float32", "float"},
    };
    if (!spec)
        return NULL;
    const char *s = !strncmp(spec, "torch.", 6) ? spec + 6 : !strncmp(spec, "c10::", 5) ? spec + 5 : spec;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcasecmp(s, aliases[i].alias))
            return aliases[i].dtype;
    return NULL;
}
