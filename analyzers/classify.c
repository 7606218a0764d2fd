/* classify.c — copy/cast ops by name, and each GPU activity's kernel family
 * and category from the family table (see classify.h).
 * Private to analyzers/. */
#include "classify.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

/* case-insensitive substring */
static bool has(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && tolower((unsigned char)s[i]) == needle[i])
            i++;
        if (i == n)
            return true;
    }
    return false;
}

const char *kvs_category_name(enum kvs_category cat)
{
    switch (cat) {
    case KVS_CAT_COPY_CAST: return "copy/cast";
    case KVS_CAT_GEMM: return "GEMM";
    case KVS_CAT_ATTENTION: return "attention";
    case KVS_CAT_COMM: return "communication";
    case KVS_CAT_OTHER: return "other";
    case KVS_CAT_COUNT_: break;
    }
    return "unknown";
}

static bool ends_before(const char *s, const char *p, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(p - s) >= n && !strncasecmp(p - n, word, n);
}

/* "cast" that says a conversion happens: not "broadcast", and not PyTorch's
 * "gpu_kernel_impl_nocast" / "LoadWithoutCast" (kernels that do not cast) */
static bool has_cast(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (tolower((unsigned char)p[0]) == 'c' && tolower((unsigned char)p[1]) == 'a' &&
            tolower((unsigned char)p[2]) == 's' && tolower((unsigned char)p[3]) == 't') {
            if (!ends_before(s, p, "broad") && !ends_before(s, p, "no") &&
                !ends_before(s, p, "no_") && !ends_before(s, p, "without"))
                return true;
        }
    }
    return false;
}

bool kvs_op_is_copy(const char *name)
{
    static const char *const exact[] = {
        "aten::copy_", "aten::_to_copy", "aten::to", "aten::clone", "aten::contiguous",
        "aten::_copy_from", "aten::_copy_from_and_resize", "aten::copy", "aten::type_as",
        "aten::to_dtype", "aten::_to_dtype",
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(name, exact[i]))
            return true;
    return has(name, "copy") || has_cast(name);
}

bool kvs_op_is_indexed_write(const char *name)
{
    return has(name, "index_copy") || has(name, "index_put") || has(name, "index_add") ||
           has(name, "scatter");
}

static bool op_is_attention(const char *o)
{
    return has(o, "flash") || has(o, "fmha") || has(o, "attention") || has(o, "attn") ||
           has(o, "mla_") || has(o, "_mla") || has(o, "sdpa") || has(o, "paged_") ||
           has(o, "scaled_dot_product");
}

static bool op_is_gemm(const char *op)
{
    static const char *const ops[] = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                                      "aten::matmul", "aten::linear", "aten::_scaled_mm",
                                      "aten::addbmm", "aten::einsum", "aten::_grouped_mm"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(op, ops[i]))
            return true;
    /* an op that runs the MoE experts' matmuls (kvscope's kvs::moe_experts) */
    return has(op, "moe_experts");
}

// ----------------------------------------------------------------------------
// the family table (analyzers/data/kernel_families.json)

static int category_of(const char *name)
{
    for (int k = 0; k < KVS_CAT_COUNT_; k++)
        if (!strcmp(name, kvs_category_name((enum kvs_category)k)))
            return k;
    return -1;
}

/* a JSON array of strings into the arena, lowercased when asked */
static int strings_of(struct kvs_arena *ar, const cJSON *arr, bool lower, const char *const **out,
                      size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!arr)
        return 0;
    if (!cJSON_IsArray(arr))
        return -1;
    size_t m = (size_t)cJSON_GetArraySize(arr);
    char **v = kvs_arena_alloc(ar, (m ? m : 1) * sizeof *v);
    if (!v)
        return -1;
    size_t k = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        if (!cJSON_IsString(x) || !*x->valuestring)
            return -1;
        v[k] = kvs_arena_strdup(ar, x->valuestring);
        if (!v[k])
            return -1;
        for (char *p = v[k]; lower && *p; p++)
            *p = (char)tolower((unsigned char)*p);
        k++;
    }
    *out = (const char *const *)v;
    *n = k;
    return 0;
}

enum kvs_status kvs_families_load(struct kvs_families *f, struct kvs_arena *ar, const char *text,
                                  size_t len, const struct kvs_logger *lg)
{
    memset(f, 0, sizeof *f);
    cJSON *root = text ? cJSON_ParseWithLength(text, len) : NULL;
    const cJSON *arr = root ? cJSON_GetObjectItemCaseSensitive(root, "families") : NULL;
    size_t n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;
    if (!n || n + 3 > KVS_MAX_FAMILIES) {
        kvs_log(lg, KVS_LOG_ERROR, "the kernel family table (analyzers/data/kernel_families.json) is unreadable");
        cJSON_Delete(root);
        return KVS_STATUS_PARSE;
    }
    f->fam = kvs_arena_alloc(ar, (n + 3) * sizeof *f->fam);
    if (!f->fam) {
        cJSON_Delete(root);
        return KVS_STATUS_NO_MEMORY;
    }
    const cJSON *e;
    size_t k = 0;
    cJSON_ArrayForEach(e, arr) {
        struct kvs_family *x = &f->fam[k];
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "family");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "category");
        int c = cJSON_IsString(cat) ? category_of(cat->valuestring) : -1;
        x->name = cJSON_IsString(name) ? kvs_arena_strdup(ar, name->valuestring) : NULL;
        x->category = (uint8_t)(c < 0 ? 0 : c);
        x->weak = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "weak"));
        if (!x->name || c < 0 ||
            strings_of(ar, cJSON_GetObjectItemCaseSensitive(e, "prefix"), false, &x->prefix, &x->nprefix) ||
            strings_of(ar, cJSON_GetObjectItemCaseSensitive(e, "contains"), true, &x->contains, &x->ncontains) ||
            strings_of(ar, cJSON_GetObjectItemCaseSensitive(e, "unless"), true, &x->unless, &x->nunless) ||
            x->nprefix + x->ncontains == 0) {
            cJSON_Delete(root);
            if (ar->failed) /* a string of the table could not be kept */
                return KVS_STATUS_NO_MEMORY;
            kvs_log(lg, KVS_LOG_ERROR, "the kernel family table: entry %zu is malformed", k + 1);
            return KVS_STATUS_PARSE;
        }
        k++;
    }
    cJSON_Delete(root);
    /* by kind, and what nothing names */
    static const struct {
        const char *name;
        uint8_t cat;
        bool weak;
    } extra[] = {{"memcpy", KVS_CAT_COPY_CAST, false}, {"memset", KVS_CAT_COPY_CAST, false},
                 {"other", KVS_CAT_OTHER, true}};
    for (int i = 0; i < 3; i++) {
        f->fam[k] = (struct kvs_family){.name = extra[i].name, .category = extra[i].cat, .weak = extra[i].weak};
        *(i == 0 ? &f->memcpy_ : i == 1 ? &f->memset_ : &f->other) = (uint8_t)k;
        k++;
    }
    f->n = k;
    f->copy_cast = f->attention = f->gemm = f->other;
    for (size_t i = 0; i < k; i++) { /* where an op decides a weak family's work */
        if (!strcmp(f->fam[i].name, "copy_cast"))
            f->copy_cast = (uint8_t)i;
        else if (!strcmp(f->fam[i].name, "attention"))
            f->attention = (uint8_t)i;
        else if (!strcmp(f->fam[i].name, "gemm"))
            f->gemm = (uint8_t)i;
    }
    return KVS_STATUS_OK;
}

/* needle (lowercase) in hay (lowercase) */
static bool contains_lc(const char *hay, const char *needle)
{
    return strstr(hay, needle) != NULL;
}

enum kvs_status kvs_family_of(const struct kvs_families *f, const char *name, uint8_t *family)
{
    const char *plain = !strncmp(name, "void ", 5) ? name + 5 : name;
    size_t len = strlen(name);
    char small[512];
    char *lc = len < sizeof small ? small : malloc(len + 1);
    char *blank = NULL;
    uint8_t out = f->other;
    enum kvs_status st = KVS_STATUS_OK;
    if (!lc)
        return KVS_STATUS_NO_MEMORY;
    for (size_t i = 0; i <= len; i++)
        lc[i] = (char)tolower((unsigned char)name[i]);
    for (size_t k = 0; k + 3 < f->n; k++) {
        const struct kvs_family *x = &f->fam[k];
        bool yes = false;
        for (size_t i = 0; i < x->nprefix && !yes; i++)
            yes = !strncmp(plain, x->prefix[i], strlen(x->prefix[i]));
        const char *hay = lc;
        if (!yes && x->nunless) { /* the words that only look like this family's */
            if (!blank && !(blank = malloc(len + 1))) {
                st = KVS_STATUS_NO_MEMORY;
                break;
            }
            memcpy(blank, lc, len + 1);
            for (size_t u = 0; u < x->nunless; u++) {
                size_t ul = strlen(x->unless[u]);
                for (char *p = strstr(blank, x->unless[u]); p; p = strstr(p + ul, x->unless[u]))
                    memset(p, ' ', ul);
            }
            hay = blank;
        }
        for (size_t i = 0; i < x->ncontains && !yes; i++)
            yes = contains_lc(hay, x->contains[i]);
        if (yes) {
            out = (uint8_t)k;
            break;
        }
    }
    if (lc != small)
        free(lc);
    free(blank);
    *family = out;
    return st;
}

enum {
    F_DONE = 1,
    F_COPY = 4,
    F_ATTN = 8,
    F_GEMM = 16,
};

/* what an op name says, computed once per distinct name */
static uint8_t op_flags(uint8_t *cache, const struct kvs_intern *in, uint32_t id)
{
    if (!cache[id]) {
        const char *o = kvs_intern_str(in, id);
        cache[id] = (uint8_t)(F_DONE | (kvs_op_is_copy(o) ? F_COPY : 0) |
                              (op_is_attention(o) ? F_ATTN : 0) | (op_is_gemm(o) ? F_GEMM : 0));
    }
    return cache[id];
}

enum kvs_status kvs_families_bundled(struct kvs_families *f, struct kvs_arena *ar,
                                     const struct kvs_logger *lg)
{
    const struct kvs_data_file *df = kvs_data_find("kernel_families");
    return kvs_families_load(f, ar, df ? df->text : NULL, df ? df->len : 0, lg);
}

enum kvs_status kvs_categorize(const struct kvs_trace_data *t, const struct kvs_families *fs,
                               struct kvs_activity_table *act)
{
    enum kvs_status st = KVS_STATUS_OK;
    uint32_t nstr = kvs_intern_count(&t->strings);
    uint8_t *kf = calloc(nstr ? nstr : 1, 1); /* family + 1 per kernel name id */
    uint8_t *of = calloc(nstr ? nstr : 1, 1);
    if (!kf || !of) {
        free(kf);
        free(of);
        return KVS_STATUS_NO_MEMORY;
    }
    for (size_t i = 0; i < t->gpus.n; i++) {
        const struct kvs_gpu_rec g_ = kvs_gpu_get(t, i), *g = &g_;
        uint8_t fam;
        if (g->kind != KVS_GPU_KERNEL) {
            fam = g->kind == KVS_GPU_MEMCPY ? fs->memcpy_ : fs->memset_;
            act->v[i].kfamily = fam;
        } else {
            if (!kf[g->name]) {
                st = kvs_family_of(fs, kvs_intern_str(&t->strings, g->name), &fam);
                if (st != KVS_STATUS_OK)
                    break;
                kf[g->name] = (uint8_t)(fam + 1);
            }
            fam = (uint8_t)(kf[g->name] - 1);
            act->v[i].kfamily = fam;
            /* a name that says little (pointwise, unknown): the launching op
             * says what the work is (the kernels of aten::copy_ are copies) */
            uint32_t op = act->v[i].op;
            if (fs->fam[fam].weak && op != KVS_NO_OP) {
                uint8_t o = op_flags(of, &t->strings, kvs_op_name_at(t, op));
                fam = o & F_COPY ? fs->copy_cast : o & F_ATTN ? fs->attention : o & F_GEMM ? fs->gemm : fam;
            }
        }
        act->v[i].family = fam;
        act->v[i].cat = fs->fam[fam].category;
    }
    free(kf);
    free(of);
    return st;
}
