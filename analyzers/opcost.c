/* opcost.c — bytes and FLOPs of an op call by its family (see opcost.h;
 * the formulas are docs/analysis.md's "Bytes and FLOPs by op family").
 * Counts are doubles: a product of dims can pass 2^63 where an int64 would
 * wrap, and a figure is a rate's numerator, not an address. Private to
 * analyzers/. */
#include "opcost.h"

#include <string.h>

#include "classify.h"

static bool is(const char *op, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(op, names[i]))
            return true;
    return false;
}
#define IS(op, ...) is((op), (const char *const[]){__VA_ARGS__}, \
                       sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* the op name without its namespace ("aten::add_" -> "add_") */
static const char *base(const char *op)
{
    const char *p = strrchr(op, ':');
    return p ? p + 1 : op;
}

const char *kvs_op_family_name(enum kvs_op_family f)
{
    switch (f) {
    case KVS_OPF_MATMUL: return "matmul";
    case KVS_OPF_ATTENTION: return "attention";
    case KVS_OPF_EMBEDDING: return "embedding";
    case KVS_OPF_NORM: return "norm";
    case KVS_OPF_ELEMENTWISE: return "elementwise";
    case KVS_OPF_REDUCTION: return "reduction";
    case KVS_OPF_COPY: return "copy";
    case KVS_OPF_UNKNOWN: break;
    }
    return NULL;
}

// ----------------------------------------------------------------------------
// families by name

/* attention ops whose q, k, v are [B, H, L, D] (SDPA and its backends) or
 * [B, L, H, D] (the flash / memory-efficient kernels' own ops) */
int kvs_attention_layout(const char *op)
{
    if (IS(op, "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
           "aten::_scaled_dot_product_efficient_attention",
           "aten::_scaled_dot_product_cudnn_attention", "aten::_cudnn_attention_forward",
           "aten::_scaled_dot_product_flash_attention_for_cpu",
           "aten::_scaled_dot_product_attention_math", "aten::_scaled_dot_product_fused_attention_overrideable"))
        return 'H'; /* heads before length */
    if (IS(op, "aten::_flash_attention_forward", "aten::_efficient_attention_forward",
           "flash_attn::_flash_attn_forward", "flash_attn_3::fwd", "_flash_attn_forward",
           "FlashAttnFunc", "flash_attn::flash_attn_func"))
        return 'L'; /* length before heads */
    return 0;
}

static enum kvs_op_family family_of(const char *op)
{
    if (IS(op, "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear",
           "aten::matmul", "aten::_grouped_mm", "aten::_scaled_mm", "aten::_scaled_grouped_mm",
           "kvs::linear", "kvs::router_linear", "kvs::lm_head", "kvs::linear_multi", "kvs::linear_multi_rope",
           "kvs::linear_per_head", "kvs::moe_experts"))
        return KVS_OPF_MATMUL;
    if (kvs_attention_layout(op) || !strcmp(op, "kvs::mla_decode"))
        return KVS_OPF_ATTENTION;
    if (IS(op, "aten::embedding", "aten::index_select", "kvs::embedding"))
        return KVS_OPF_EMBEDDING;
    if (IS(op, "aten::layer_norm", "aten::native_layer_norm", "aten::rms_norm",
           "aten::_fused_rms_norm", "aten::group_norm", "aten::native_group_norm",
           "kvs::rms_norm", "kvs::add_rms_norm", "_C::rms_norm", "_C::fused_add_rms_norm"))
        return KVS_OPF_NORM;
    if (kvs_op_is_copy(op))
        return KVS_OPF_COPY;
    if (!strncmp(op, "aten::", 6) &&
        IS(base(op), "mean", "sum", "amax", "amin", "max", "min", "argmax", "argmin", "norm",
           "linalg_vector_norm", "var", "std", "var_mean", "all", "any", "prod"))
        return KVS_OPF_REDUCTION;
    if (IS(op, "kvs::swiglu", "kvs::rope_interleaved", "_C::silu_and_mul", "_C::gelu_and_mul"))
        return KVS_OPF_ELEMENTWISE;
    if (!strncmp(op, "aten::", 6)) {
        char b[40];
        const char *n = base(op);
        size_t len = strlen(n);
        if (len >= sizeof b)
            return KVS_OPF_UNKNOWN;
        memcpy(b, n, len + 1);
        if (len > 1 && b[len - 1] == '_' && b[len - 2] != '_')
            b[len - 1] = 0; /* add_ is add, in place */
        if (IS(b, "add", "sub", "mul", "div", "neg", "pow", "rsqrt", "sqrt", "exp", "log",
               "sigmoid", "tanh", "silu", "gelu", "relu", "sin", "cos", "abs", "clamp",
               "clamp_min", "clamp_max", "where", "masked_fill", "reciprocal", "maximum",
               "minimum", "eq", "ne", "lt", "gt", "le", "ge", "logical_and", "logical_or",
               "logical_not", "bitwise_and", "bitwise_or", "bitwise_not", "_softmax", "softmax",
               "log_softmax", "_log_softmax", "triu", "tril", "fill", "zero", "addcmul",
               "addcdiv", "lerp", "erf", "exp2", "floor", "ceil", "round", "sign", "square",
               "isnan", "isinf", "remainder", "fmod"))
            return KVS_OPF_ELEMENTWISE;
    }
    return KVS_OPF_UNKNOWN;
}

// ----------------------------------------------------------------------------
// helpers over the tensors

static double numel(const struct kvs_shape *s, int i) { return (double)s->numel[i]; }
static double elem_bytes(const struct kvs_shape *s, int i) { return s->bits[i] / 8.0; }
static double dim(const struct kvs_shape *s, int i, int k) /* k < 0: from the end */
{
    int r = s->rank[i];
    int j = k < 0 ? r + k : k;
    return j >= 0 && j < r && j < KVS_SHAPE_MAX_RANK ? (double)s->dims[i][j] : -1;
}

/* every tensor's bytes summed; < 0 when one is unknown */
static double all_bytes(const struct kvs_shape *s)
{
    double sum = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->bytes[i] < 0)
            return -1;
        sum += (double)s->bytes[i];
    }
    return sum;
}

/* inputs plus an output of out_elems elements of out_bits each */
static double with_output(const struct kvs_shape *s, double out_elems, double out_bits)
{
    double in = all_bytes(s);
    return in < 0 || out_bits <= 0 || out_elems < 0 ? -1 : in + out_elems * out_bits / 8.0;
}

/* needle occurs in d[0..n) (the dtype text is not NUL-terminated) */
static bool has_n(const char *d, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(d + i, needle, k))
            return true;
    return false;
}

static const char *precision_of(const struct kvs_shape *s, int i)
{
    if (i >= s->n || s->bits[i] == 0)
        return NULL;
    const char *d = s->dtype[i];
    size_t n = s->dtype_len[i];
    if (has_n(d, n, "Float8") || has_n(d, n, "float8"))
        return "fp8";
    if (has_n(d, n, "BFloat16") || has_n(d, n, "bfloat16"))
        return "bf16";
    if (has_n(d, n, "Half") || has_n(d, n, "float16"))
        return "fp16";
    if ((n == 5 && !memcmp(d, "float", 5)) || has_n(d, n, "float32"))
        return "fp32";
    return NULL;
}

static bool ranks(const struct kvs_shape *s, int n, const int *r)
{
    if (s->n < n)
        return false;
    for (int i = 0; i < n; i++)
        if (s->rank[i] != r[i])
            return false;
    return true;
}
#define RANKS(s, ...) ranks((s), sizeof((int[]){__VA_ARGS__}) / sizeof(int), (int[]){__VA_ARGS__})

/* the output element width of a matmul whose first operand is tensor i:
 * an FP8 product is written in BF16, anything else in its input's type */
static double mm_out_bits(const struct kvs_shape *s, int i)
{
    return s->bits[i] == 8 && precision_of(s, i) ? 16 : s->bits[i];
}

// ----------------------------------------------------------------------------
// matmul

/* aten::matmul's broadcast: a [..., M, K] (or [K]) x b [..., K, N] (or [K]) */
static void matmul_bcast(const struct kvs_shape *s, struct kvs_op_cost *c)
{
    if (s->n < 2 || s->rank[0] < 1 || s->rank[1] < 1 || s->rank[0] > 8 || s->rank[1] > 8)
        return;
    int ra = s->rank[0], rb = s->rank[1];
    double M = ra == 1 ? 1 : dim(s, 0, -2), K = dim(s, 0, -1);
    double K2 = rb == 1 ? dim(s, 1, 0) : dim(s, 1, -2), N = rb == 1 ? 1 : dim(s, 1, -1);
    if (K != K2)
        return;
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0, nb = ba > bb ? ba : bb;
    double batch = 1;
    for (int k = 0; k < nb; k++) { /* from the right of the batch dims */
        double da = k < ba ? dim(s, 0, ba - 1 - k) : 1, db = k < bb ? dim(s, 1, bb - 1 - k) : 1;
        if (da != db && da != 1 && db != 1)
            return;
        batch *= da > db ? da : db;
    }
    c->flops = 2 * batch * M * N * K;
    c->bytes = with_output(s, batch * M * N, mm_out_bits(s, 0));
}

static void matmul_cost(const char *op, const struct kvs_shape *s, struct kvs_op_cost *c)
{
    int a = 0, w = -1; /* the first matrix operand; the weight's, when one is */
    double M, N, K, batch = 1, out = -1;
    if (IS(op, "aten::mm", "aten::_scaled_mm") && s->n >= 2 && s->rank[0] == 2 && s->rank[1] == 2) {
        M = dim(s, 0, 0), K = dim(s, 0, 1), N = dim(s, 1, 1), w = 1;
        if (K != dim(s, 1, 0))
            return;
    } else if (!strcmp(op, "aten::addmm") && s->n >= 3 && s->rank[1] == 2 && s->rank[2] == 2) {
        a = 1, M = dim(s, 1, 0), K = dim(s, 1, 1), N = dim(s, 2, 1), w = 2;
        if (K != dim(s, 2, 0))
            return;
    } else if ((!strcmp(op, "aten::bmm") && RANKS(s, 3, 3)) ||
               (!strcmp(op, "aten::baddbmm") && s->n >= 3 && s->rank[1] == 3 && s->rank[2] == 3)) {
        a = op[6] == 'b' && op[7] == 'a' ? 1 : 0; /* baddbmm(self, b1, b2) */
        batch = dim(s, a, 0), M = dim(s, a, 1), K = dim(s, a, 2), N = dim(s, a + 1, 2);
        if (K != dim(s, a + 1, 1) || batch != dim(s, a + 1, 0))
            return;
    } else if (IS(op, "aten::linear", "kvs::linear", "kvs::router_linear", "kvs::lm_head") && s->n >= 2 &&
               s->rank[0] >= 1 && s->rank[1] == 2) {
        K = dim(s, 0, -1), N = dim(s, 1, 0);
        if (K <= 0 || K != dim(s, 1, 1))
            return;
        M = numel(s, 0) / K, w = 1;
        if (IS(op, "kvs::router_linear", "kvs::lm_head"))
            out = 32; /* float logits */
    } else if (!strcmp(op, "aten::matmul")) {
        matmul_bcast(s, c);
        c->precision = c->flops >= 0 ? precision_of(s, 0) : NULL;
        if (c->flops >= 0 && s->rank[1] == 2 && dim(s, 0, -1) > 0) { /* against a matrix: a weight */
            c->rows = numel(s, 0) / dim(s, 0, -1);
            c->weight_bytes = (double)s->bytes[1];
        }
        return;
    } else if (IS(op, "aten::_grouped_mm", "aten::_scaled_grouped_mm") && s->n >= 2) {
        int ra = s->rank[0], rb = s->rank[1];
        if (ra == 2 && rb == 3) {
            /* tokens of all groups x each group's weight [G, K, N]: at most
             * min(G, tokens) groups have rows, and only their weights are read */
            double T = dim(s, 0, 0), G = dim(s, 1, 0);
            K = dim(s, 0, 1), N = dim(s, 1, 2);
            if (K != dim(s, 1, 1) || G <= 0 || s->bits[0] == 0 || s->bytes[1] < 0)
                return;
            double in = all_bytes(s);
            c->flops = 2 * T * N * K;
            c->bytes = in < 0 ? -1
                              : in - (double)s->bytes[1] * (1 - (T < G ? T : G) / G) +
                                    T * N * mm_out_bits(s, 0) / 8;
            c->precision = precision_of(s, 0);
            c->rows = T;
            c->weight_bytes = (double)s->bytes[1] * (T < G ? T : G) / G;
            return;
        } else if (ra == 3 && rb == 3) {
            batch = dim(s, 0, 0), M = dim(s, 0, 1), K = dim(s, 0, 2), N = dim(s, 1, 2);
            if (K != dim(s, 1, 1) || batch != dim(s, 1, 0))
                return;
        } else if (ra == 2 && rb == 2) { /* K split into groups: one [M, N] output each */
            M = dim(s, 0, 0), K = dim(s, 0, 1), N = dim(s, 1, 1);
            if (K != dim(s, 1, 0) || s->n < 3 || s->rank[2] != 1)
                return;
            c->flops = 2 * M * N * K;
            c->bytes = with_output(s, dim(s, 2, 0) * M * N, mm_out_bits(s, 0));
            c->precision = precision_of(s, 0);
            return;
        } else {
            return;
        }
    } else if (IS(op, "kvs::linear_multi", "kvs::linear_multi_rope") && s->n >= 2 && s->rank[0] == 2) {
        /* x [M, K] against weights [N_i, K] (the rope op's last tensor: positions) */
        M = dim(s, 0, 0), K = dim(s, 0, 1), N = 0;
        int last = !strcmp(op, "kvs::linear_multi_rope") ? s->n - 1 : s->n;
        double wb = 0;
        for (int i = 1; i < last; i++) {
            if (s->rank[i] != 2 || dim(s, i, 1) != K)
                return;
            N += dim(s, i, 0);
            wb = wb >= 0 && s->bytes[i] >= 0 ? wb + (double)s->bytes[i] : -1;
        }
        c->rows = M, c->weight_bytes = wb;
    } else if (!strcmp(op, "kvs::linear_per_head") && RANKS(s, 3, 3)) {
        /* x [B, H, K] with each head's own weight [H, N, K] */
        M = dim(s, 0, 0), batch = dim(s, 0, 1), K = dim(s, 0, 2), N = dim(s, 1, 1), w = 1;
        if (batch != dim(s, 1, 0) || K != dim(s, 1, 2))
            return;
    } else if (!strcmp(op, "kvs::moe_experts") && RANKS(s, 2, 2, 3, 3)) {
        /* x [M, D], the experts each token uses [M, ke], the resident experts'
         * gate/up [E, N1, K1] and down [E, N2, K2]: each token through ke
         * experts; at most min(E, M x ke) experts' weights are read */
        double m = dim(s, 0, 0), ke = dim(s, 1, 1), E = dim(s, 2, 0);
        double per1 = dim(s, 2, 1) * dim(s, 2, 2), per2 = dim(s, 3, 1) * dim(s, 3, 2);
        if (dim(s, 2, 2) != dim(s, 0, 1) || dim(s, 3, 0) != E || E <= 0 || s->n != 4)
            return;
        double used = m * ke < E ? m * ke : E;
        c->flops = 2 * m * ke * (per1 + per2);
        if (s->bytes[0] >= 0 && s->bytes[1] >= 0 && s->bytes[2] >= 0 && s->bytes[3] >= 0)
            c->bytes = 2.0 * (double)s->bytes[0] + (double)s->bytes[1] +
                       used / E * (double)(s->bytes[2] + s->bytes[3]);
        c->precision = precision_of(s, 2);
        c->rows = m;
        if (s->bytes[2] >= 0 && s->bytes[3] >= 0)
            c->weight_bytes = used / E * (double)(s->bytes[2] + s->bytes[3]);
        return;
    } else {
        return;
    }
    if (M < 0 || N < 0 || K < 0 || batch < 0)
        return;
    c->flops = 2 * batch * M * N * K;
    c->bytes = with_output(s, batch * M * N, out > 0 ? out : mm_out_bits(s, a));
    c->precision = precision_of(s, a);
    if (w >= 0) {
        c->rows = M;
        c->weight_bytes = (double)s->bytes[w];
    }
}

// ----------------------------------------------------------------------------
// attention

static void attention_cost(const char *op, const struct kvs_shape *s, struct kvs_op_cost *c)
{
    if (!strcmp(op, "kvs::mla_decode")) {
        /* q latent [B, H, Dl], q rope [B, H, Dr], the KV rows [rows, 1, Dl + Dr],
         * sequence starts [B + 1], the token list [T] (T rows attended; an
         * empty list: all rows, a contiguous gather); values are the latent */
        if (!RANKS(s, 3, 3, 3, 1) || s->n > 5)
            return;
        double B = dim(s, 0, 0), H = dim(s, 0, 1), Dl = dim(s, 0, 2), Dr = dim(s, 1, 2);
        double rows = dim(s, 2, 0), row = dim(s, 2, 2);
        double T = s->n == 5 && s->rank[4] == 1 && dim(s, 4, 0) > 0 ? dim(s, 4, 0) : rows;
        if (row != Dl + Dr || dim(s, 1, 1) != H || dim(s, 1, 0) != B)
            return;
        c->flops = 2 * H * T * (Dl + Dr + Dl);
        double other = 0;
        for (int i = 0; i < s->n; i++) {
            if (s->bytes[i] < 0)
                return;
            if (i != 2)
                other += (double)s->bytes[i];
        }
        c->bytes = other + T * row * elem_bytes(s, 2) + B * H * Dl * elem_bytes(s, 0);
        c->precision = precision_of(s, 0);
        return;
    }
    int layout = kvs_attention_layout(op);
    if (s->n < 3 || s->rank[0] != s->rank[1] || s->rank[1] != s->rank[2] || s->rank[0] < 3)
        return;
    if (layout == 'L' && s->rank[0] != 4)
        return; /* [total, H, D]: varlen, whose sequence lengths are not in the dims */
    int lq = layout == 'L' ? 1 : s->rank[0] - 2;
    double Lq = dim(s, 0, lq), D = dim(s, 0, -1), Lk = dim(s, 1, lq), Dv = dim(s, 2, -1);
    if (Lq <= 0 || D <= 0 || dim(s, 1, -1) != D || dim(s, 2, lq) != Lk)
        return;
    double bh = numel(s, 0) / (Lq * D); /* batch x query heads (GQA: k, v have fewer) */
    c->flops = 2 * bh * Lq * Lk * (D + Dv);
    c->bytes = with_output(s, bh * Lq * Dv, s->bits[0]);
    c->precision = precision_of(s, 0);
}

// ----------------------------------------------------------------------------
// bytes-only families

static void embedding_cost(const char *op, const struct kvs_shape *s, struct kvs_op_cost *c)
{
    /* the table [V, D...] and the indices: each index reads a row and writes it */
    int idx = !strcmp(op, "aten::index_select") ? s->n - 1 : 1;
    if (s->n < 2 || s->rank[0] < 1 || dim(s, 0, 0) <= 0 || s->bytes[idx] < 0 || s->bits[0] == 0)
        return;
    double row = numel(s, 0) / dim(s, 0, 0);
    c->bytes = 2 * numel(s, idx) * row * elem_bytes(s, 0) + (double)s->bytes[idx];
}

static void norm_cost(const char *op, const struct kvs_shape *s, struct kvs_op_cost *c)
{
    double in = all_bytes(s);
    if (in < 0 || s->n < 1)
        return;
    if (IS(op, "_C::rms_norm")) /* rms_norm(out, input, weight): each tensor once */
        c->bytes = in;
    else if (!strcmp(op, "kvs::add_rms_norm")) /* x += r; h = norm(x): x and h written */
        c->bytes = in + 2.0 * (double)s->bytes[0];
    else if (!strcmp(op, "_C::fused_add_rms_norm") && s->n >= 2) /* input, residual in place */
        c->bytes = in + (double)s->bytes[0] + (double)s->bytes[1];
    else
        c->bytes = in + (double)s->bytes[0];
}

static bool in_place(const char *op)
{
    const char *b = base(op);
    size_t n = strlen(b);
    return n > 1 && b[n - 1] == '_' && b[n - 2] != '_';
}

static void elementwise_cost(const char *op, const struct kvs_shape *s, struct kvs_op_cost *c)
{
    double in = all_bytes(s);
    if (in < 0 || s->n < 1)
        return;
    if (IS(op, "aten::fill_", "aten::zero_")) { /* writes only */
        c->bytes = (double)s->bytes[0];
        return;
    }
    if (!strcmp(op, "kvs::swiglu")) { /* [M, 2I] -> [M, I] */
        c->bytes = 1.5 * in;
        return;
    }
    if (in_place(op) || IS(op, "kvs::rope_interleaved", "_C::silu_and_mul", "_C::gelu_and_mul")) {
        /* the first tensor is written (rope: in place; vLLM's: the output) */
        c->bytes = in + (double)s->bytes[0];
        return;
    }
    /* out of place: the broadcast result, in the widest input type (a
     * comparison: bool) */
    double n = 0;
    int bits = 0, bits0 = 0; /* rank-0 entries are Python scalars ("double"): they promote nothing */
    for (int i = 0; i < s->n; i++) {
        if (numel(s, i) > n)
            n = numel(s, i);
        int *b = s->rank[i] > 0 ? &bits : &bits0;
        if (s->bits[i] > *b)
            *b = s->bits[i];
    }
    if (!bits)
        bits = bits0;
    if (IS(base(op), "eq", "ne", "lt", "gt", "le", "ge", "isnan", "isinf", "logical_and",
           "logical_or", "logical_not"))
        bits = 8;
    c->bytes = with_output(s, n, bits);
}

// ----------------------------------------------------------------------------

void kvs_op_cost_of(const char *op, const struct kvs_shape *s, struct kvs_op_cost *out)
{
    out->family = op ? family_of(op) : KVS_OPF_UNKNOWN;
    out->bytes = out->flops = out->rows = out->weight_bytes = -1;
    out->precision = NULL;
    if (!s || s->n == 0 || s->more)
        return;
    switch (out->family) {
    case KVS_OPF_MATMUL: matmul_cost(op, s, out); break;
    case KVS_OPF_ATTENTION: attention_cost(op, s, out); break;
    case KVS_OPF_EMBEDDING: embedding_cost(op, s, out); break;
    case KVS_OPF_NORM: norm_cost(op, s, out); break;
    case KVS_OPF_ELEMENTWISE: elementwise_cost(op, s, out); break;
    case KVS_OPF_REDUCTION: out->bytes = all_bytes(s); break;
    case KVS_OPF_COPY: /* sized by the copy/cast groups (groups.c) */
    case KVS_OPF_UNKNOWN: break;
    }
}
