/* kernels/tests/gpu/test_kernels_mla.c — MLA decode attention on the GPU
 * (BF16 KV and FP8 KV read directly) against the double-precision CPU
 * reference, on fresh random inputs: context 1, 7, 4097 (split across blocks
 * and combined), 8400 (132 splits: three rounds of the combine's loads) and
 * 12000 (blocks of two or more tiles at batch 1, with planted scores far
 * above the running max in a block's later tile: the lazy path gives way),
 * batch 1, 8 (blocks of four 64-row tiles) and 33, an empty sequence,
 * token lists and contiguous rows, fewer than 64 heads, and a batch too
 * large to split. Outputs and the workspace's partials are poisoned with
 * NaN first. FP8-direct must also equal BF16 attention on the cast data.
 * Tolerances: docs/kernels.md. KVS_TEST_MLA_WGVS lists wgmma kernel
 * variants to run every FP8 case through (parse_wgvs).
 *
 *   meson test -C build --suite gpu test_kernels_mla
 */
#include "kvs_kernel_test.h"

#define TOL_OUT 1e-2 /* normalized error of out, both KV types */
#define TOL_LSE 1e-3 /* absolute error of lse (natural log) */

struct mla_case {
    const char *name;
    int batch, heads;
    const int *ctx; /* per sequence */
    int use_tokens;
    float scale;
};

/* Tokens of sequence 0 whose row is made to match head head[i]'s query
 * (|k| = 1.75 with q's signs: a score ~45 log2 units above the rest, which
 * leaves the block's running max far behind); tok ends with -1. */
struct mla_spikes {
    const int *tok, *head;
};

static uint64_t g_seed;

/* KVS_TEST_MLA_WGVS="0,1,..": every FP8 case runs once per listed variant
 * of the wgmma kernel (kvs_kernel_opts mla_wgv) on the same inputs, each
 * checked against the one CPU reference (the reference is most of a run's
 * time); unset: one run with the options as given. */
#define MAX_WGV 12
static int g_wgv[MAX_WGV], g_nwgv;

static void parse_wgvs(void)
{
    const char *e = getenv("KVS_TEST_MLA_WGVS");
    for (const char *q = e; q && *q && g_nwgv < MAX_WGV;) {
        g_wgv[g_nwgv++] = atoi(q);
        while (*q && *q != ',')
            q++;
        if (*q == ',')
            q++;
    }
}

/* On a failure, where: the largest differences of sequence b, and how the
 * error spreads over heads and dims (an index bug shows a pattern). */
static void explain(const kvs_bf16 *out, const kvs_bf16 *ref, int H)
{
    double worst[6] = {0};
    int at[6] = {0};
    double by_d[8] = {0}, by_h[8] = {0};
    for (int i = 0; i < H * KVS_MLA_LATENT; i++) {
        double d = fabs((double)kvs_bf16_to_float(out[i]) - kvs_bf16_to_float(ref[i]));
        if (isnan(d))
            d = 1e30;
        by_d[(i % KVS_MLA_LATENT) / 64] += d;
        by_h[(i / KVS_MLA_LATENT) * 8 / H] += d;
        for (int k = 0; k < 6; k++)
            if (d > worst[k]) {
                for (int m = 5; m > k; m--)
                    worst[m] = worst[m - 1], at[m] = at[m - 1];
                worst[k] = d, at[k] = i;
                break;
            }
    }
    for (int k = 0; k < 6; k++)
        fprintf(stderr, "    h=%d d=%d got %.5g ref %.5g\n", at[k] / KVS_MLA_LATENT,
                at[k] % KVS_MLA_LATENT, kvs_bf16_to_float(out[at[k]]), kvs_bf16_to_float(ref[at[k]]));
    fprintf(stderr, "    |err| by 64-dim block:");
    for (int k = 0; k < 8; k++)
        fprintf(stderr, " %.3g", by_d[k]);
    fprintf(stderr, "\n    |err| by head eighth:");
    for (int k = 0; k < 8; k++)
        fprintf(stderr, " %.3g", by_h[k]);
    fprintf(stderr, "\n");
}

/* Runs one case for one KV type; returns the GPU output for cross-checks. */
static kvs_bf16 *run_case(const struct mla_case *c, const struct mla_spikes *sp,
                          enum kvs_kv_dtype dt, uint64_t seed, int against_cpu)
{
    uint64_t st = seed;
    const int B = c->batch, H = c->heads;
    int32_t *seq = malloc((B + 1) * sizeof *seq);
    seq[0] = 0;
    int max_ctx = 0;
    for (int b = 0; b < B; b++) {
        seq[b + 1] = seq[b] + c->ctx[b];
        if (c->ctx[b] > max_ctx)
            max_ctx = c->ctx[b];
    }
    const int total = seq[B];
    /* the pool holds more rows than the sequences use; token lists scatter */
    const int rows = total + 37;
    int32_t *tok = malloc((total + 1) * sizeof *tok);
    for (int i = 0; i < total; i++)
        tok[i] = (int32_t)(kvs_test_rand(&st) % (uint64_t)rows);
    const size_t nq = (size_t)B * H;
    kvs_bf16 *ql = malloc(nq * KVS_MLA_LATENT * 2), *qr = malloc(nq * KVS_MLA_ROPE * 2);
    for (size_t i = 0; i < nq * KVS_MLA_LATENT; i++)
        ql[i] = kvs_float_to_bf16(kt_unif(&st, -1.f, 1.f));
    for (size_t i = 0; i < nq * KVS_MLA_ROPE; i++)
        qr[i] = kvs_float_to_bf16(kt_unif(&st, -1.f, 1.f));
    kvs_fp8 *kv8 = malloc((size_t)rows * KVS_MLA_ROW);
    kvs_bf16 *kv16 = malloc((size_t)rows * KVS_MLA_ROW * 2);
    for (size_t i = 0; i < (size_t)rows * KVS_MLA_ROW; i++) {
        kv8[i] = kvs_float_to_fp8(kt_unif(&st, -2.f, 2.f));
        kv16[i] = kvs_fp8_to_bf16(kv8[i]); /* same values in both layouts */
    }
    for (int k = 0; sp && sp->tok[k] >= 0; k++) {
        const int t = sp->tok[k], h = sp->head[k];
        const size_t r = c->use_tokens ? (size_t)tok[t] : (size_t)t + 5; /* seq_c below */
        for (int j = 0; j < KVS_MLA_ROW; j++) {
            const kvs_bf16 q = j < KVS_MLA_LATENT ? ql[(size_t)h * KVS_MLA_LATENT + j]
                                                  : qr[(size_t)h * KVS_MLA_ROPE + j - KVS_MLA_LATENT];
            const size_t i = r * KVS_MLA_ROW + (size_t)j;
            kv8[i] = kvs_float_to_fp8(kvs_bf16_to_float(q) < 0.f ? -1.75f : 1.75f);
            kv16[i] = kvs_fp8_to_bf16(kv8[i]);
        }
    }

    kvs_bf16 *d_ql = kt_dev(nq * KVS_MLA_LATENT * 2), *d_qr = kt_dev(nq * KVS_MLA_ROPE * 2);
    void *d_kv = kt_dev((size_t)rows * KVS_MLA_ROW * 2);
    int32_t *d_seq = kt_dev((B + 1) * sizeof *seq), *d_tok = kt_dev((total + 1) * sizeof *tok);
    kvs_bf16 *d_out = kt_dev(nq * KVS_MLA_LATENT * 2);
    float *d_lse = kt_dev(nq * sizeof(float));
    kt_up(d_ql, ql, nq * KVS_MLA_LATENT * 2);
    kt_up(d_qr, qr, nq * KVS_MLA_ROPE * 2);
    if (dt == KVS_KV_FP8)
        kt_up(d_kv, kv8, (size_t)rows * KVS_MLA_ROW);
    else
        kt_up(d_kv, kv16, (size_t)rows * KVS_MLA_ROW * 2);
    /* contiguous mode: sequence b owns rows seq[b].. (offset by 5 to test the base) */
    int32_t *seq_c = malloc((B + 1) * sizeof *seq);
    for (int b = 0; b <= B; b++)
        seq_c[b] = seq[b] + 5;
    kt_up(d_seq, c->use_tokens ? seq : seq_c, (B + 1) * sizeof *seq);
    kt_up(d_tok, tok, (total + 1) * sizeof *tok);

    struct kvs_mla_args a = {
        .batch = B, .heads = H, .q_latent = d_ql, .q_rope = d_qr, .kv_dtype = dt, .kv = d_kv,
        .seq_start = d_seq, .tokens = c->use_tokens ? d_tok : NULL, .scale = c->scale,
        .out = d_out, .lse = d_lse,
    };
    /* max_ctx above the true maximum is allowed (only sizes the split) */
    int bound = max_ctx + (c->use_tokens ? 3 : 0);
    size_t wsb = kvs_cuda_mla_decode_workspace(B, H, bound, kvs_test_opts());
    void *ws = kt_dev(wsb);
    /* one run per listed variant (FP8; BF16 and no list: one run as given) */
    const int nv = dt == KVS_KV_FP8 && g_nwgv > 0 ? g_nwgv : 1;
    kvs_bf16 *outs[MAX_WGV];
    float *lses[MAX_WGV];
    for (int v = 0; v < nv; v++) {
        struct kvs_kernel_opts o = *kvs_test_opts();
        if (nv > 1 || g_nwgv > 0)
            o.mla_wgv = dt == KVS_KV_FP8 ? g_wgv[v] : 0;
        KVS_TEST_CUDA(cudaMemset(d_out, 0xFF, nq * KVS_MLA_LATENT * 2));
        KVS_TEST_CUDA(cudaMemset(d_lse, 0xFF, nq * sizeof(float)));
        /* NaN in every partial: a split that writes none (past its sequence's
         * end) must never reach the combine's sums */
        if (wsb)
            KVS_TEST_CUDA(cudaMemset(ws, 0xFF, wsb));
        KVS_CHECK_EQ_INT(kvs_cuda_mla_decode(&a, bound, ws, wsb, &o, NULL), KVS_STATUS_OK);
        outs[v] = malloc(nq * KVS_MLA_LATENT * 2);
        lses[v] = malloc(nq * sizeof(float));
        kt_down(outs[v], d_out, nq * KVS_MLA_LATENT * 2);
        kt_down(lses[v], d_lse, nq * sizeof(float));
    }
    kvs_bf16 *out = outs[0];

    kvs_bf16 *ref = NULL;
    float *ref_lse = NULL;
    if (against_cpu) {
        ref = malloc(nq * KVS_MLA_LATENT * 2);
        ref_lse = malloc(nq * sizeof(float));
        struct kvs_mla_args r = a;
        r.q_latent = ql;
        r.q_rope = qr;
        r.kv = dt == KVS_KV_FP8 ? (const void *)kv8 : (const void *)kv16;
        r.seq_start = c->use_tokens ? seq : seq_c;
        r.tokens = c->use_tokens ? tok : NULL;
        r.out = ref;
        r.lse = ref_lse;
        /* contiguous rows start at 5 and end by total + 5 <= rows */
        kvs_cpu_mla_decode(&r);
    }
    for (int v = 0; against_cpu && v < nv; v++) {
        const kvs_bf16 *ov = outs[v];
        const float *lv = lses[v];
        char vn[16] = "";
        if (nv > 1 || g_nwgv > 0)
            snprintf(vn, sizeof vn, " wgv%d", dt == KVS_KV_FP8 ? g_wgv[v] : 0);
        double emax = 0.0, lmax = 0.0;
        for (int b = 0; b < B; b++) {
            double e = kt_norm_err_bf16(ov + (size_t)b * H * KVS_MLA_LATENT,
                                        ref + (size_t)b * H * KVS_MLA_LATENT,
                                        (size_t)H * KVS_MLA_LATENT);
            if (c->ctx[b] == 0) {
                int nz = 0;
                for (size_t i = 0; i < (size_t)H * KVS_MLA_LATENT; i++)
                    nz += ov[(size_t)b * H * KVS_MLA_LATENT + i] != 0;
                KVS_CHECK_MSG(nz == 0, "%s %s b=%d: empty sequence, %d non-zero outputs", c->name,
                              dt == KVS_KV_FP8 ? "fp8" : "bf16", b, nz);
            } else {
                if (!(e <= TOL_OUT))
                    explain(ov + (size_t)b * H * KVS_MLA_LATENT, ref + (size_t)b * H * KVS_MLA_LATENT, H);
                KVS_CHECK_MSG(e <= TOL_OUT, "%s %s%s b=%d ctx=%d: normalized error %.3g > %.3g",
                              c->name, dt == KVS_KV_FP8 ? "fp8" : "bf16", vn, b, c->ctx[b], e,
                              TOL_OUT);
                if (!(e <= emax))
                    emax = e;
            }
            for (int h = 0; h < H; h++) {
                float g = lv[b * H + h], w = ref_lse[b * H + h];
                int ok = c->ctx[b] == 0 ? (isinf(g) && g < 0) : fabsf(g - w) <= TOL_LSE * fmaxf(1.f, fabsf(w));
                if (c->ctx[b] != 0 && !(fabsf(g - w) / fmaxf(1.f, fabsf(w)) <= lmax))
                    lmax = fabsf(g - w) / fmaxf(1.f, fabsf(w));
                if (!ok) {
                    KVS_CHECK_MSG(ok, "%s%s b=%d h=%d lse %.6g, reference %.6g", c->name, vn, b, h,
                                  g, w);
                    break;
                }
            }
        }
        fprintf(stderr, "  %-24s %-4s%s vs cpu: max normalized error %.3g, lse %.3g (relative)\n",
                c->name, dt == KVS_KV_FP8 ? "fp8" : "bf16", vn, emax, lmax);
    }
    free(ref);
    free(ref_lse);
    for (int v = 1; v < nv; v++) { /* the variants against the first (the cross-check uses it) */
        double e = kt_norm_err_bf16(outs[v], outs[0], nq * KVS_MLA_LATENT);
        KVS_CHECK_MSG(e <= TOL_OUT, "%s wgv%d vs wgv%d: %.3g", c->name, g_wgv[v], g_wgv[0], e);
        free(outs[v]);
        free(lses[v]);
    }
    free(lses[0]);
    free(seq);
    free(seq_c);
    free(tok);
    free(ql);
    free(qr);
    free(kv8);
    free(kv16);
    cudaFree(d_ql);
    cudaFree(d_qr);
    cudaFree(d_kv);
    cudaFree(d_seq);
    cudaFree(d_tok);
    cudaFree(d_out);
    cudaFree(d_lse);
    cudaFree(ws);
    return out;
}

static void run_both_spiked(const struct mla_case *c, const struct mla_spikes *sp)
{
    uint64_t seed = kvs_test_rand(&g_seed);
    kvs_bf16 *o8 = run_case(c, sp, KVS_KV_FP8, seed, 1);
    kvs_bf16 *o16 = run_case(c, sp, KVS_KV_BF16, seed, 1);
    /* same seed, same values: FP8-direct equals BF16 attention on the cast data */
    size_t n = (size_t)c->batch * c->heads * KVS_MLA_LATENT;
    double e = kt_norm_err_bf16(o8, o16, n);
    KVS_CHECK_MSG(e <= TOL_OUT, "%s: fp8-direct vs bf16 on cast data: %.3g", c->name, e);
    fprintf(stderr, "  %-24s fp8 vs bf16 normalized difference %.3g\n", c->name, e);
    free(o8);
    free(o16);
}

static void run_both(const struct mla_case *c) { run_both_spiked(c, NULL); }

static void test_batch1_contexts(void)
{
    static const int c1[] = {1}, c7[] = {7}, c4097[] = {4097};
    struct mla_case cs[] = {
        {"b1_ctx1", 1, 64, c1, 1, 0.0625f},
        {"b1_ctx7", 1, 64, c7, 0, 0.0625f},
        {"b1_ctx4097", 1, 64, c4097, 1, 0.0625f},
        {"b1_ctx4097_contig", 1, 64, c4097, 0, 0.0625f},
        {"b1_ctx4097_sharp", 1, 64, c4097, 1, 0.5f},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
        run_both(&cs[i]);
}

static void test_batch33(void)
{
    static int ctx[33];
    uint64_t st = kvs_test_rand(&g_seed);
    for (int b = 0; b < 33; b++)
        ctx[b] = (int)(kvs_test_rand(&st) % 300);
    ctx[0] = 0; /* empty sequence: out 0, lse -inf */
    ctx[1] = 1;
    ctx[2] = 7;
    ctx[3] = 257;
    struct mla_case c = {"b33_mixed", 33, 64, ctx, 1, 0.0625f};
    run_both(&c);
    struct mla_case c2 = {"b33_mixed_contig", 33, 64, ctx, 0, 0.0625f};
    run_both(&c2);
}

/* batch 1 at contexts where every kernel's blocks hold two or more tiles
 * (the lazy rescaling of later tiles), the planted scores landing in a
 * block's second tile or later whatever the kernel (64-row tiles: 94
 * splits of two; 32-row: three or six a split); and 132 splits (the
 * 64-head mma.sync kernel's one tile each, BF16's two), three rounds of
 * the many-split combine's 64 loads in flight a block */
static void test_batch1_long(void)
{
    static const int c8400[] = {8400}, c12000[] = {12000};
    static const int spike_tok[] = {69, 6500, 11999, -1}, spike_head[] = {0, 37, 63};
    const struct mla_spikes sp = {spike_tok, spike_head};
    struct mla_case sharp = {"b1_ctx8400_sharp", 1, 64, c8400, 0, 0.5f};
    run_both(&sharp);
    struct mla_case spiked = {"b1_ctx12000_spikes", 1, 64, c12000, 1, 0.0625f};
    run_both_spiked(&spiked, &sp);
}

/* 64-head blocks of four tiles (the wgmma kernel by the planner's rule;
 * _mma and _hg32 run it as mma.sync): each stage buffer is reused, and
 * with a token list the indices that go through shared memory a tile
 * ahead reuse each of their two buffers from the third tile on; the
 * shorter sequences leave their last splits empty, so the combine meets
 * partials that were never written (NaN, see run_case) */
static void test_batch8_long(void)
{
    static const int ctx[8] = {3200, 3100, 2900, 3333, 3000, 3250, 2800, 3199};
    struct mla_case c = {"b8_ctx3333", 8, 64, ctx, 1, 0.0625f};
    run_both(&c);
}

static void test_heads_and_wide_batch(void)
{
    static const int c2[] = {100, 613};
    struct mla_case a = {"b2_h20", 2, 20, c2, 1, 0.0625f}; /* a partial head group */
    run_both(&a);
    static const int c3[] = {70, 5, 129};
    struct mla_case b = {"b3_h80", 3, 80, c3, 1, 0.0625f}; /* two head groups */
    run_both(&b);
    static int wide[140];
    for (int i = 0; i < 140; i++)
        wide[i] = 1 + (i * 37) % 90;
    struct mla_case w = {"b140_no_split", 140, 64, wide, 1, 0.0625f};
    run_both(&w);
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    g_seed = kt_seed("mla");
    parse_wgvs();
    static const struct kvs_test tests[] = {
        {"batch1_contexts", test_batch1_contexts},
        {"batch1_long", test_batch1_long},
        {"batch33", test_batch33},
        {"batch8_long", test_batch8_long},
        {"heads_and_wide_batch", test_heads_and_wide_batch},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
