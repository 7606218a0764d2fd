/* kernels/tests/test_kernels_ref.c — the CPU references of the decode-step
 * ops on hand-computed cases, and MLA attention against a naive
 * double-precision formula on tiny inputs.
 *
 *   meson test -C build test_kernels_ref
 */
#include <math.h>
#include <stdint.h>

#include "kvs_test.h"
#include "kvscope/kernels.h"

#define BF(x) kvs_float_to_bf16(x)
#define F(x) kvs_bf16_to_float(x)

static double rnd(uint64_t *st) /* uniform in [-1, 1) */
{
    return (double)(kvs_test_rand(st) >> 11) * 0x1p-52 - 1.0;
}

// ----------------------------------------------------------------------------
// MLA

static void test_mla_hand(void)
{
    /* one head, two tokens; only element 0 of the latent and element 3 of
     * the rope part are non-zero, so s_t = scale * (q0 k_t0 + q3 k_t,515) */
    kvs_bf16 ql[KVS_MLA_LATENT] = {0}, qr[KVS_MLA_ROPE] = {0};
    kvs_bf16 kv[2 * KVS_MLA_ROW] = {0}, out[KVS_MLA_LATENT];
    ql[0] = BF(1.0f);
    qr[3] = BF(2.0f);
    kv[0] = BF(1.0f);
    kv[KVS_MLA_LATENT + 3] = BF(0.5f); /* s0 = 0.5 * (1 + 1) = 1 */
    kv[KVS_MLA_ROW + 0] = BF(3.0f);    /* s1 = 0.5 * 3 = 1.5 */
    kv[KVS_MLA_ROW + 7] = BF(-4.0f);
    const int32_t seq[] = {0, 2};
    float lse = 0;
    struct kvs_mla_args a = {
        .batch = 1, .heads = 1, .q_latent = ql, .q_rope = qr, .kv_dtype = KVS_KV_BF16, .kv = kv,
        .seq_start = seq, .tokens = NULL, .scale = 0.5f, .out = out, .lse = &lse,
    };
    kvs_cpu_mla_decode(&a);
    double p0 = exp(1.0) / (exp(1.0) + exp(1.5)), p1 = 1.0 - p0;
    KVS_CHECK_NEAR(F(out[0]), p0 * 1.0 + p1 * 3.0, 1e-2);
    KVS_CHECK_NEAR(F(out[7]), p1 * -4.0, 1e-2);
    KVS_CHECK_NEAR(F(out[1]), 0.0, 0.0);
    KVS_CHECK_NEAR(lse, log(exp(1.0) + exp(1.5)), 1e-6);
}

/* Naive formula: per head, scores over all tokens, max-shifted exp. */
static void test_mla_random_vs_naive(void)
{
    enum { B = 2, H = 3, ROWS = 9 };
    uint64_t st = 42;
    static kvs_bf16 ql[B * H * KVS_MLA_LATENT], qr[B * H * KVS_MLA_ROPE];
    static kvs_fp8 kv8[ROWS * KVS_MLA_ROW];
    static kvs_bf16 kv16[ROWS * KVS_MLA_ROW], out8[B * H * KVS_MLA_LATENT],
        out16[B * H * KVS_MLA_LATENT];
    for (int i = 0; i < B * H * KVS_MLA_LATENT; i++)
        ql[i] = BF((float)rnd(&st));
    for (int i = 0; i < B * H * KVS_MLA_ROPE; i++)
        qr[i] = BF((float)rnd(&st));
    for (int i = 0; i < ROWS * KVS_MLA_ROW; i++) {
        kv8[i] = kvs_float_to_fp8((float)(4.0 * rnd(&st)));
        kv16[i] = kvs_fp8_to_bf16(kv8[i]);
    }
    const int32_t seq[] = {0, 3, 8}; /* b0: 3 tokens, b1: 5 */
    const int32_t tokens[] = {8, 0, 4, 1, 2, 3, 5, 7};
    float lse8[B * H], lse16[B * H];
    struct kvs_mla_args a = {
        .batch = B, .heads = H, .q_latent = ql, .q_rope = qr, .kv_dtype = KVS_KV_FP8, .kv = kv8,
        .seq_start = seq, .tokens = tokens, .scale = 0.0625f, .out = out8, .lse = lse8,
    };
    kvs_cpu_mla_decode(&a);
    a.kv_dtype = KVS_KV_BF16;
    a.kv = kv16;
    a.out = out16;
    a.lse = lse16;
    kvs_cpu_mla_decode(&a);
    /* the FP8 and BF16 paths see the same values: identical results */
    KVS_CHECK(memcmp(out8, out16, sizeof out8) == 0);
    KVS_CHECK(memcmp(lse8, lse16, sizeof lse8) == 0);

    int bad = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            int n = seq[b + 1] - seq[b];
            double s[8], z = 0.0;
            for (int t = 0; t < n; t++) {
                const kvs_bf16 *row = kv16 + (size_t)tokens[seq[b] + t] * KVS_MLA_ROW;
                double d = 0.0;
                for (int j = 0; j < KVS_MLA_LATENT; j++)
                    d += F(ql[(b * H + h) * KVS_MLA_LATENT + j]) * F(row[j]);
                for (int j = 0; j < KVS_MLA_ROPE; j++)
                    d += F(qr[(b * H + h) * KVS_MLA_ROPE + j]) * F(row[KVS_MLA_LATENT + j]);
                s[t] = exp(0.0625 * d); /* small scores: no shift needed */
                z += s[t];
            }
            for (int j = 0; j < KVS_MLA_LATENT; j++) {
                double o = 0.0;
                for (int t = 0; t < n; t++)
                    o += s[t] / z * F(kv16[(size_t)tokens[seq[b] + t] * KVS_MLA_ROW + j]);
                /* one BF16 rounding: relative 2^-8 */
                bad += fabs(F(out16[(b * H + h) * KVS_MLA_LATENT + j]) - o) >
                       fabs(o) * 0x1p-8 + 1e-6;
            }
            bad += fabs(lse16[b * H + h] - log(z)) > 1e-5;
        }
    KVS_CHECK_EQ_INT(bad, 0);
}

static void test_mla_empty_and_contiguous(void)
{
    enum { ROWS = 4 };
    uint64_t st = 7;
    static kvs_bf16 ql[2 * KVS_MLA_LATENT], qr[2 * KVS_MLA_ROPE], kv[ROWS * KVS_MLA_ROW];
    static kvs_bf16 outc[2 * KVS_MLA_LATENT], outt[2 * KVS_MLA_LATENT];
    for (size_t i = 0; i < sizeof ql / 2; i++)
        ql[i] = BF((float)rnd(&st));
    for (size_t i = 0; i < sizeof qr / 2; i++)
        qr[i] = BF((float)rnd(&st));
    for (size_t i = 0; i < sizeof kv / 2; i++)
        kv[i] = BF((float)rnd(&st));
    memset(outc, 0xA5, sizeof outc);
    memset(outt, 0x5A, sizeof outt);
    /* sequence 0 empty, sequence 1 = rows 1..3 */
    const int32_t seqc[] = {1, 1, 4}, seqt[] = {0, 0, 3}, tok[] = {1, 2, 3};
    float lc[2], lt[2];
    struct kvs_mla_args a = {
        .batch = 2, .heads = 1, .q_latent = ql, .q_rope = qr, .kv_dtype = KVS_KV_BF16, .kv = kv,
        .seq_start = seqc, .tokens = NULL, .scale = 0.1f, .out = outc, .lse = lc,
    };
    kvs_cpu_mla_decode(&a);
    a.seq_start = seqt;
    a.tokens = tok;
    a.out = outt;
    a.lse = lt;
    kvs_cpu_mla_decode(&a);
    KVS_CHECK(memcmp(outc, outt, sizeof outc) == 0);
    KVS_CHECK(isinf(lc[0]) && lc[0] < 0);
    KVS_CHECK(F(outc[5]) == 0.0f);
    KVS_CHECK(lc[1] == lt[1] && isfinite(lc[1]));
}

// ----------------------------------------------------------------------------
// decode-step ops

static void test_rmsnorm(void)
{
    kvs_bf16 x[4] = {BF(3), BF(4), BF(1), BF(-1)}, w[2] = {BF(1), BF(2)}, y[4];
    kvs_cpu_rmsnorm(x, w, y, 2, 2, 0.0f);
    double r = sqrt(12.5);
    KVS_CHECK_NEAR(F(y[0]), 3 / r, 3 / r * 0x1p-8);
    KVS_CHECK_NEAR(F(y[1]), 8 / r, 8 / r * 0x1p-8);
    KVS_CHECK_NEAR(F(y[2]), 1.0, 0x1p-8);
    KVS_CHECK_NEAR(F(y[3]), -2.0, 2 * 0x1p-8);
    kvs_cpu_rmsnorm(x, w, y, 1, 2, 12.5f); /* eps counts: rms = 5 */
    KVS_CHECK_NEAR(F(y[0]), 0.6, 0.6 * 0x1p-8);
    /* add + norm: x becomes (3+1, 4-1) = (4, 3), rounded and stored; the norm
     * is of that: rms = sqrt(12.5) again */
    kvs_bf16 res[2] = {BF(1), BF(-1)};
    kvs_cpu_add_rmsnorm(x, res, w, y, 1, 2, 0.0f);
    KVS_CHECK(F(x[0]) == 4.0f && F(x[1]) == 3.0f && F(x[2]) == 1.0f);
    KVS_CHECK_NEAR(F(y[0]), 4 / r, 4 / r * 0x1p-8);
    KVS_CHECK_NEAR(F(y[1]), 6 / r, 6 / r * 0x1p-8);
    /* the stored sum is rounded to BF16 before the norm sees it */
    kvs_bf16 big[2] = {BF(256), BF(1)}, one[2] = {BF(1), BF(0)}, wy[2] = {BF(1), BF(1)};
    kvs_cpu_add_rmsnorm(big, one, wy, y, 1, 2, 0.0f);
    KVS_CHECK(F(big[0]) == 256.0f); /* 257 is not a BF16 value: ties to even */
}

static void test_rope(void)
{
    /* 2 tokens x 2 heads x stride 6: rope over elements 2..5 (dim 4) */
    kvs_bf16 x[2 * 2 * 6];
    for (int i = 0; i < 24; i++)
        x[i] = BF((float)(i % 6 == 2 || i % 6 == 4 ? 1 : 0) + (float)(i % 6 < 2 ? 7 : 0));
    const int32_t pos[] = {0, 1000};
    kvs_cpu_rope_interleaved(x, pos, 2, 2, 6, 2, 4, 1e6f);
    /* position 0: unchanged */
    KVS_CHECK(F(x[2]) == 1.0f && F(x[3]) == 0.0f && F(x[0]) == 7.0f);
    /* position 1000: pair 0 turns 1000 rad, pair 1 turns 1000 * 1e6^-0.5 = 1 rad */
    for (int h = 0; h < 2; h++) {
        kvs_bf16 *p = x + (1 * 2 + h) * 6;
        KVS_CHECK(F(p[0]) == 7.0f && F(p[1]) == 7.0f); /* outside the rope range */
        KVS_CHECK_NEAR(F(p[2]), cos(1000.0), 0x1p-8);
        KVS_CHECK_NEAR(F(p[3]), sin(1000.0), 0x1p-8);
        KVS_CHECK_NEAR(F(p[4]), cos(1.0), 0x1p-8);
        KVS_CHECK_NEAR(F(p[5]), sin(1.0), 0x1p-8);
    }
}

static void test_swiglu_add_embedding(void)
{
    kvs_bf16 gu[4] = {BF(0), BF(1), BF(5), BF(2)}, o[2];
    kvs_cpu_swiglu(gu, o, 1, 2);
    KVS_CHECK(F(o[0]) == 0.0f);
    KVS_CHECK_NEAR(F(o[1]), 2.0 / (1.0 + exp(-1.0)), 2 * 0x1p-8);

    kvs_bf16 x[3] = {BF(1), BF(256), BF(-1.5f)}, y[3] = {BF(2), BF(1), BF(1.5f)};
    kvs_cpu_add(x, y, 3);
    KVS_CHECK(F(x[0]) == 3.0f);
    KVS_CHECK(F(x[1]) == 256.0f); /* 257 ties to even 256 in BF16 */
    KVS_CHECK(F(x[2]) == 0.0f);

    kvs_bf16 table[3 * 2] = {1, 2, 3, 4, 5, 6}, e[4];
    const int32_t ids[] = {2, 0};
    kvs_cpu_embedding(table, ids, e, 2, 2);
    KVS_CHECK(e[0] == 5 && e[1] == 6 && e[2] == 1 && e[3] == 2);
}

static void test_argmax(void)
{
    const float l[] = {1, 3, 3, 2, /**/ -5, -4, -4.5f, -6, /**/ 0, NAN, 9, NAN};
    int32_t ids[3];
    kvs_cpu_argmax(l, 3, 4, ids);
    KVS_CHECK_EQ_INT(ids[0], 1); /* lowest index of the tie */
    KVS_CHECK_EQ_INT(ids[1], 1);
    KVS_CHECK_EQ_INT(ids[2], 1); /* NaN ranks first, first NaN wins */
}

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

static void test_router(void)
{
    const float logits[2 * 8] = {0, 1, 2, 3, -1, -2, 0.5f, 4, /**/ 1, 1, 1, 1, 1, 1, 1, 1};
    const float bias[8] = {0, 0, 0, 0, 0, 0, 10, 0};
    int32_t ids[2 * 3];
    float w[2 * 3];
    kvs_cpu_moe_route(logits, bias, 2, 8, 3, 1, 2.5f, ids, w);
    /* token 0: the bias puts expert 6 first, then sigmoid order 7, 3 */
    KVS_CHECK_EQ_INT(ids[0], 6);
    KVS_CHECK_EQ_INT(ids[1], 7);
    KVS_CHECK_EQ_INT(ids[2], 3);
    double z = sigm(0.5) + sigm(4) + sigm(3);
    KVS_CHECK_NEAR(w[0], 2.5 * sigm(0.5) / z, 1e-6); /* weight from s, not s + bias */
    KVS_CHECK_NEAR(w[1], 2.5 * sigm(4) / z, 1e-6);
    KVS_CHECK_NEAR(w[2], 2.5 * sigm(3) / z, 1e-6);
    /* token 1: all equal but the bias of expert 6; then ties go to the lowest index */
    KVS_CHECK_EQ_INT(ids[3], 6);
    KVS_CHECK_EQ_INT(ids[4], 0);
    KVS_CHECK_EQ_INT(ids[5], 1);
    KVS_CHECK_NEAR(w[3] + w[4] + w[5], 2.5, 1e-6);
    kvs_cpu_moe_route(logits, NULL, 1, 8, 2, 0, 1.0f, ids, w); /* no bias, no norm */
    KVS_CHECK_EQ_INT(ids[0], 7);
    KVS_CHECK_EQ_INT(ids[1], 3);
    KVS_CHECK_NEAR(w[0], sigm(4), 1e-6);
}

static void test_linear(void)
{
    /* x [2,3], w [2,3] -> y [2,2] */
    kvs_bf16 x[6] = {BF(1), BF(2), BF(3), BF(-1), BF(0), BF(0.5f)};
    kvs_bf16 w[6] = {BF(1), BF(1), BF(1), BF(2), BF(0), BF(-2)}, y[4];
    kvs_cpu_linear(x, w, y, 2, 2, 3);
    KVS_CHECK(F(y[0]) == 6.0f && F(y[1]) == -4.0f && F(y[2]) == -0.5f && F(y[3]) == -3.0f);
}

static void test_moe_experts(void)
{
    /* dim 2, inter 1, two resident experts, top-2 */
    kvs_bf16 gate_up[2 * 2 * 2] = {BF(1), BF(0), BF(2), BF(0),    /* e0: g = x0, u = 2 x0 */
                                   BF(0), BF(1), BF(0), BF(-1)};  /* e1: g = x1, u = -x1 */
    kvs_bf16 down[2 * 2 * 1] = {BF(1), BF(3), /**/ BF(2), BF(0)}; /* e0: [1;3], e1: [2;0] */
    kvs_bf16 x[2] = {BF(1), BF(2)}, y[2] = {BF(100), BF(100)};
    const int32_t ids[2] = {1, 0};
    const float wts[2] = {0.5f, 2.0f};
    struct kvs_moe_args a = {
        .tokens = 1, .dim = 2, .inter = 1, .topk = 2, .n_resident = 2, .x = x, .ids = ids,
        .weights = wts, .gate_up = gate_up, .down = down, .y = y, .accumulate = 0,
    };
    kvs_cpu_moe_experts(&a);
    double h0 = F(BF((float)(1.0 * sigm(1.0) * 2.0))); /* e0: silu(1) * 2 */
    double h1 = F(BF((float)(2.0 * sigm(2.0) * -2.0))); /* e1: silu(2) * -2 */
    double y0 = 0.5 * 2 * h1 + 2.0 * 1 * h0, y1 = 0.5 * 0 * h1 + 2.0 * 3 * h0;
    KVS_CHECK_NEAR(F(y[0]), y0, fabs(y0) * 0x1p-8);
    KVS_CHECK_NEAR(F(y[1]), y1, fabs(y1) * 0x1p-8);
    a.accumulate = 1;
    kvs_cpu_moe_experts(&a);
    KVS_CHECK_NEAR(F(y[1]), 2 * y1, fabs(2 * y1) * 0x1p-7);
}

/* kvs_kernel_opts_parse from a fake environment: the values each name takes,
 * unset names left alone, anything else refused with the field untouched */
static const char *const *g_env;
static char *fake_getenv(const char *name)
{
    for (const char *const *e = g_env; e && *e; e += 2)
        if (!strcmp(e[0], name))
            return (char *)e[1];
    return NULL;
}

static void test_kernel_opts_parse(void)
{
    struct kvs_logger quiet = {NULL, NULL, KVS_LOG_ERROR + 1};
    struct kvs_kernel_opts o = {0};
    g_env = NULL;
    KVS_CHECK_EQ_INT(kvs_kernel_opts_parse(&o, fake_getenv, &quiet), KVS_STATUS_OK);
    KVS_CHECK(!o.no_pdl && !o.mla_head_group && !o.mla_waves && !o.mla_wgmma && !o.mla_lazy &&
              !o.mla_wgv);
    static const char *const all[] = {"KVS_PDL",      "0", "KVS_MLA_HG",   "32",
                                      "KVS_MLA_WAVES", "2", "KVS_MLA_WG",   "0",
                                      "KVS_MLA_LAZY",  "0", "KVS_MLA_WGV", "5", NULL};
    g_env = all;
    KVS_CHECK_EQ_INT(kvs_kernel_opts_parse(&o, fake_getenv, &quiet), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(o.no_pdl, 1);
    KVS_CHECK_EQ_INT(o.mla_head_group, 32);
    KVS_CHECK_EQ_INT(o.mla_waves, 2);
    KVS_CHECK_EQ_INT(o.mla_wgmma, -1);
    KVS_CHECK_EQ_INT(o.mla_lazy, -1);
    KVS_CHECK_EQ_INT(o.mla_wgv, 5);
    static const char *const ws[] = {"KVS_MLA_WGV", "32", NULL}; /* the warp-specialized kernel */
    g_env = ws;
    KVS_CHECK_EQ_INT(kvs_kernel_opts_parse(&o, fake_getenv, &quiet), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(o.mla_wgv, 32);
    static const char *const on[] = {"KVS_PDL", "1", "KVS_MLA_HG", "64", "KVS_MLA_WG", "1",
                                     "KVS_MLA_LAZY", "1", NULL};
    g_env = on;
    KVS_CHECK_EQ_INT(kvs_kernel_opts_parse(&o, fake_getenv, &quiet), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(o.no_pdl, 0);
    KVS_CHECK_EQ_INT(o.mla_head_group, 64);
    KVS_CHECK_EQ_INT(o.mla_waves, 2); /* unset: left as it was */
    KVS_CHECK_EQ_INT(o.mla_wgmma, 1);
    KVS_CHECK_EQ_INT(o.mla_lazy, 1);
    static const char *const bad[][2] = {{"KVS_PDL", "off"},     {"KVS_PDL", ""},
                                         {"KVS_MLA_HG", "48"},   {"KVS_MLA_HG", "32x"},
                                         {"KVS_MLA_WAVES", "3"}, {"KVS_MLA_WG", "2"},
                                         {"KVS_MLA_LAZY", "on"}, {"KVS_MLA_WGV", "3"},
                                         {"KVS_MLA_WGV", "7"}, {"KVS_MLA_WGV", "9"},
                                         {"KVS_MLA_WGV", "2"}, {"KVS_MLA_WGV", "18"},
                                         {"KVS_MLA_WGV", "33"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *const one[] = {bad[i][0], bad[i][1], NULL};
        g_env = one;
        struct kvs_kernel_opts before = o;
        KVS_CHECK_MSG(kvs_kernel_opts_parse(&o, fake_getenv, &quiet) == KVS_STATUS_INVALID_ARGUMENT,
                      "accepted %s=%s", bad[i][0], bad[i][1]);
        KVS_CHECK(!memcmp(&before, &o, sizeof o));
    }
    KVS_CHECK_EQ_INT(kvs_kernel_opts_parse(NULL, fake_getenv, &quiet), KVS_STATUS_INVALID_ARGUMENT);
    KVS_CHECK_EQ_INT(kvs_kernel_opts_parse(&o, NULL, &quiet), KVS_STATUS_INVALID_ARGUMENT);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"mla_hand", test_mla_hand},
        {"mla_random_vs_naive", test_mla_random_vs_naive},
        {"mla_empty_and_contiguous", test_mla_empty_and_contiguous},
        {"rmsnorm", test_rmsnorm},
        {"rope", test_rope},
        {"swiglu_add_embedding", test_swiglu_add_embedding},
        {"argmax", test_argmax},
        {"router", test_router},
        {"linear", test_linear},
        {"moe_experts", test_moe_experts},
        {"kernel_opts_parse", test_kernel_opts_parse},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
