/* classify.c — copy/cast and category rules by name (see classify.h).
 * Private to analyzers/. */
#include "classify.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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

bool kvs_kernel_is_copy(const char *name)
{
    return has(name, "copy_kernel") || has(name, "direct_copy") || has(name, "memcpy") ||
           has_cast(name); /* LoadWithCast / StoreWithCast and kvscope's cast kernels */
}

static bool is_comm(const char *k)
{
    return has(k, "nccl") || has(k, "rccl") || has(k, "allreduce") || has(k, "all_reduce") ||
           has(k, "allgather") || has(k, "all_gather") || has(k, "reducescatter") ||
           has(k, "reduce_scatter") || has(k, "alltoall") || has(k, "all_to_all") ||
           has(k, "cross_device_reduce");
}

static bool is_attention(const char *k)
{
    return has(k, "flash") || has(k, "fmha") || has(k, "attention") || has(k, "attn") ||
           has(k, "mla_") || has(k, "_mla") || has(k, "sdpa") || has(k, "paged_") ||
           has(k, "scaled_dot_product");
}

static bool is_gemm(const char *k)
{
    return has(k, "gemm") || has(k, "gemv") || has(k, "nvjet") || has(k, "cutlass") ||
           has(k, "cublas") || has(k, "xmma") || has(k, "matmul") || has(k, "wgmma") ||
           has(k, "splitkreduce") || has(k, "s16816") || has(k, "s1688") ||
           /* MoE expert matmuls: vLLM/SGLang's fused_moe, grouped GEMMs */
           has(k, "fused_moe") || has(k, "grouped_gemm") || has(k, "grouped_mm");
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

enum {
    F_DONE = 1,
    F_COMM = 2,
    F_COPY = 4,
    F_ATTN = 8,
    F_GEMM = 16,
};

/* what a kernel name says, computed once per distinct name */
static uint8_t kernel_flags(uint8_t *cache, const struct kvs_intern *in, uint32_t id)
{
    if (!cache[id]) {
        const char *k = kvs_intern_str(in, id);
        cache[id] = (uint8_t)(F_DONE | (is_comm(k) ? F_COMM : 0) | (kvs_kernel_is_copy(k) ? F_COPY : 0) |
                              (is_attention(k) ? F_ATTN : 0) | (is_gemm(k) ? F_GEMM : 0));
    }
    return cache[id];
}

/* what an op name says, computed once per distinct name */
static uint8_t op_flags(uint8_t *cache, const struct kvs_intern *in, uint32_t id)
{
    if (!cache[id]) {
        const char *o = kvs_intern_str(in, id);
        cache[id] = (uint8_t)(F_DONE | (kvs_op_is_copy(o) ? F_COPY : 0) |
                              (is_attention(o) ? F_ATTN : 0) | (op_is_gemm(o) ? F_GEMM : 0));
    }
    return cache[id];
}

enum kvs_status kvs_categorize(struct kvs_ctx *c)
{
    const struct kvs_trace_data *t = &c->t;
    size_t n = t->ngpus ? t->ngpus : 1;
    c->gpu_cat = malloc(n);
    uint32_t nstr = kvs_intern_count(&t->strings);
    uint8_t *kf = calloc(nstr ? nstr : 1, 1);
    uint8_t *of = calloc(nstr ? nstr : 1, 1);
    if (!c->gpu_cat || !kf || !of) {
        free(kf);
        free(of);
        return KVS_STATUS_NO_MEMORY;
    }
    for (size_t i = 0; i < t->ngpus; i++) {
        const struct kvs_gpu_rec *g = &t->gpus[i];
        if (g->kind != KVS_GPU_KERNEL) {
            c->gpu_cat[i] = KVS_CAT_COPY_CAST;
            continue;
        }
        uint8_t k = kernel_flags(kf, &t->strings, g->name);
        uint32_t op = c->gpu_op[i];
        uint8_t o = op != KVS_NO_OP ? op_flags(of, &t->strings, kvs_op_name(t, &t->ops[op])) : 0;
        enum kvs_category cat;
        if (k & F_COMM)
            cat = KVS_CAT_COMM;
        else if ((k | o) & F_COPY)
            cat = KVS_CAT_COPY_CAST;
        else if ((k | o) & F_ATTN)
            cat = KVS_CAT_ATTENTION;
        else if ((k | o) & F_GEMM)
            cat = KVS_CAT_GEMM;
        else
            cat = KVS_CAT_OTHER;
        c->gpu_cat[i] = (uint8_t)cat;
    }
    free(kf);
    free(of);
    return KVS_STATUS_OK;
}
