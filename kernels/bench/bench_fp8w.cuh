/* kernels/bench/bench_fp8w.cuh — section `fp8w` of bench_kernels: GLM-5's
 * decode projections and an MoE layer with BF16 weights (kvs_cuda_gemv_bf16,
 * kvs_cuda_moe_experts) against FP8 e4m3 weights with 128 x 128 block
 * scales (kvs_cuda_gemv_fp8w, kvs_cuda_moe_experts_fp8w). Each output is
 * checked against its CPU reference before it is timed (the MoE at tokens 0
 * and T-1 on those tokens' experts); weights rotate through copies of more
 * than 200 MB, or through the experts themselves. GB/s count the weight
 * bytes (FP8: codes + scales) each call must read.
 *
 *   build/kernels/bench_kernels fp8w
 * defines: bench_fp8w (included once, by bench_kernels.cu)
 */
#ifndef KVSCOPE_BENCH_FP8W_CUH
#define KVSCOPE_BENCH_FP8W_CUH

#include <string>

#include "../cuda/gemv_fp8w_cfg.h"
#include "../cuda/moe_fp8w_cfg.h"
#include "bench_util.cuh"

static int fp8w_nb(int n) { return (n + KVS_FP8_BLOCK - 1) / KVS_FP8_BLOCK; }

/* FP8 codes and scales of the BF16 matrix w[n, k] (on the device),
 * quantised on the host; returned on the host */
static void fp8w_quantize(const kvs_bf16 *dw, int n, int k, std::vector<kvs_fp8> &q,
                          std::vector<float> &sc)
{
    auto hw = download<kvs_bf16>(dw, (size_t)n * k);
    std::vector<float> f((size_t)n * k);
    for (size_t i = 0; i < f.size(); i++)
        f[i] = kvs_bf16_to_float(hw[i]);
    q.resize((size_t)n * k);
    sc.resize((size_t)fp8w_nb(n) * fp8w_nb(k));
    kvs_cpu_quantize_fp8_blocks(f.data(), n, k, q.data(), sc.data());
}

/* a configurations' table: head (its first `lead` columns), one column a
 * configuration, then the rows collected while timing */
static void fp8w_cfg_table(const char *head, int lead, int ncfg, const char *(*name)(int),
                           const std::string &rows)
{
    printf("%s", head);
    for (int cf = 0; cf < ncfg; cf++)
        printf(" %s |", name(cf));
    printf("\n|");
    for (int c = 0; c < lead + ncfg; c++)
        printf("---|");
    printf("\n%s", rows.c_str());
}

static void bench_fp8w_gemv(void)
{
    printf("\n## FP8-weight GEMV vs BF16 GEMV, GLM-5 decode projections (GB/s on weight bytes; FP8 = codes + block scales)\n\n");
    printf("| projection | M | N | K | BF16 us | FP8 us | BF16 MB | FP8 MB | BF16 GB/s | BF16 %% copy | FP8 GB/s | FP8 %% copy | speedup | check bf16 / fp8 vs CPU | fp8 vs bf16 out |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    struct Shape {
        const char *name;
        int n0, n1, k; /* n1: a second output of the same x (0: none) */
    };
    const Shape shapes[] = {
        {"q_a + kv_a (2 outputs)", 2048, 576, 6144}, {"q_b (nope + rope)", 16384, 0, 2048},
        {"o_proj", 6144, 0, 16384},                   {"shared expert gate_up", 4096, 0, 6144},
        {"shared expert down", 6144, 0, 2048},        {"dense MLP gate_up", 24576, 0, 6144},
        {"dense MLP down", 6144, 0, 12288},
    };
    std::string cfg_rows; /* the configurations' table, printed after */
    for (const Shape &s : shapes) {
        const int nout = s.n1 ? 2 : 1, N = s.n0 + s.n1, K = s.k;
        const int ns[2] = {s.n0, s.n1};
        const size_t bf_bytes = (size_t)N * K * 2;
        size_t f8_bytes = 0;
        for (int o = 0; o < nout; o++)
            f8_bytes += (size_t)ns[o] * K + (size_t)fp8w_nb(ns[o]) * fp8w_nb(K) * 4;
        const int cb = (int)std::min<size_t>(16, (size_t)200e6 / bf_bytes + 1);
        const int c8 = (int)std::min<size_t>(16, (size_t)200e6 / f8_bytes + 1);
        kvs_bf16 *wb[2];
        kvs_fp8 *w8[2];
        float *s8[2];
        std::vector<kvs_fp8> hq[2];
        std::vector<float> hs[2];
        std::vector<kvs_bf16> hw[2];
        for (int o = 0; o < nout; o++) {
            const size_t nk = (size_t)ns[o] * K, nsc = (size_t)fp8w_nb(ns[o]) * fp8w_nb(K);
            wb[o] = (kvs_bf16 *)dmalloc((size_t)cb * nk * 2);
            dfill_bf16(wb[o], (size_t)cb * nk, 22 + o, 0.02f);
            hw[o] = download<kvs_bf16>(wb[o], nk);
            fp8w_quantize(wb[o], ns[o], K, hq[o], hs[o]);
            w8[o] = (kvs_fp8 *)dmalloc((size_t)c8 * nk);
            s8[o] = (float *)dmalloc((size_t)c8 * nsc * 4);
            for (int c = 0; c < c8; c++) { /* copies of one content, in distinct memory */
                CK(cudaMemcpy(w8[o] + c * nk, hq[o].data(), nk, cudaMemcpyHostToDevice));
                CK(cudaMemcpy(s8[o] + c * nsc, hs[o].data(), nsc * 4, cudaMemcpyHostToDevice));
            }
        }
        for (int M : {1, 8}) {
            kvs_bf16 *x = (kvs_bf16 *)dmalloc((size_t)M * K * 2);
            dfill_bf16(x, (size_t)M * K, 21, 1.f);
            auto hx = download<kvs_bf16>(x, (size_t)M * K);
            void *yb[2], *y8[2];
            for (int o = 0; o < nout; o++) {
                yb[o] = dmalloc((size_t)M * ns[o] * 2);
                y8[o] = dmalloc((size_t)M * ns[o] * 2);
                CK(cudaMemset(yb[o], 0xff, (size_t)M * ns[o] * 2));
                CK(cudaMemset(y8[o], 0xff, (size_t)M * ns[o] * 2));
            }
            auto outs_bf = [&](int c, kvs_gemv_out *ob) {
                for (int o = 0; o < nout; o++)
                    ob[o] = {wb[o] + (size_t)c * ns[o] * K, yb[o], ns[o], ns[o]};
            };
            auto outs_f8 = [&](int c, kvs_gemv_fp8w_out *o8) {
                for (int o = 0; o < nout; o++)
                    o8[o] = {w8[o] + (size_t)c * ns[o] * K,
                             s8[o] + (size_t)c * fp8w_nb(ns[o]) * fp8w_nb(K), y8[o], ns[o], ns[o]};
            };
            kvs_gemv_out ob[2];
            kvs_gemv_fp8w_out o8[2];
            outs_bf(0, ob);
            outs_f8(0, o8);
            ST(kvs_cuda_gemv_bf16(x, K, M, K, ob, nout, 0, 1, 0, 0, 0, bench_opts(), NULL));
            ST(kvs_cuda_gemv_fp8w(x, K, M, K, o8, nout, 0, bench_opts(), NULL));
            double eb = 0, e8 = 0, d8 = 0;
            std::vector<kvs_bf16> ref8[2];
            for (int o = 0; o < nout; o++) {
                const size_t ny = (size_t)M * ns[o];
                auto gb = download<kvs_bf16>(yb[o], ny), g8 = download<kvs_bf16>(y8[o], ny);
                std::vector<kvs_bf16> rb(ny);
                ref8[o].resize(ny);
                kvs_cpu_linear(hx.data(), hw[o].data(), rb.data(), M, ns[o], K);
                kvs_gemv_fp8w_out h = {hq[o].data(), hs[o].data(), ref8[o].data(), ns[o], ns[o]};
                kvs_cpu_gemv_fp8w(hx.data(), K, M, K, &h, 1, 0);
                eb = std::max(eb, kt_norm_err_bf16(gb.data(), rb.data(), ny));
                e8 = std::max(e8, kt_norm_err_bf16(g8.data(), ref8[o].data(), ny));
                d8 = std::max(d8, kt_norm_err_bf16(g8.data(), gb.data(), ny));
            }
            require(eb <= 1e-2, "BF16 GEMV vs CPU reference");
            require(e8 <= 1e-2, "FP8-weight GEMV vs CPU reference");
            const double ub = time_us(
                [&](int i) {
                    kvs_gemv_out t[2];
                    outs_bf(i % cb, t);
                    ST(kvs_cuda_gemv_bf16(x, K, M, K, t, nout, 0, 1, 0, 0, 0, bench_opts(), NULL));
                },
                5, 30);
            const double u8 = time_us(
                [&](int i) {
                    kvs_gemv_fp8w_out t[2];
                    outs_f8(i % c8, t);
                    ST(kvs_cuda_gemv_fp8w(x, K, M, K, t, nout, 0, bench_opts(), NULL));
                },
                5, 30);
            const double gbb = bf_bytes / ub * 1e-3, gb8 = f8_bytes / u8 * 1e-3;
            printf("| %s | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.0f | %.1f | %.0f | %.1f | %.2fx | %.1e / %.1e | %.1e |\n",
                   s.name, M, N, K, ub, u8, bf_bytes / 1e6, f8_bytes / 1e6, gbb, pct(gbb), gb8,
                   pct(gb8), ub / u8, eb, e8, d8);
            fflush(stdout);
            /* every internal configuration, each checked before it is timed */
            char row[256];
            snprintf(row, sizeof row, "| %s | %d |", s.name, M);
            cfg_rows += row;
            for (int cf = 0; cf < KVS_GEMV_FP8W_CFGS; cf++) {
                for (int o = 0; o < nout; o++)
                    CK(cudaMemset(y8[o], 0xff, (size_t)M * ns[o] * 2));
                ST(kvs_cuda_gemv_fp8w_cfg(cf, x, K, M, K, o8, nout, 0, bench_opts(), NULL));
                for (int o = 0; o < nout; o++) {
                    const size_t ny = (size_t)M * ns[o];
                    auto g8 = download<kvs_bf16>(y8[o], ny);
                    require(kt_norm_err_bf16(g8.data(), ref8[o].data(), ny) <= 1e-2,
                            "FP8-weight GEMV configuration vs CPU reference");
                }
                const double u = time_us(
                    [&](int i) {
                        kvs_gemv_fp8w_out t[2];
                        outs_f8(i % c8, t);
                        ST(kvs_cuda_gemv_fp8w_cfg(cf, x, K, M, K, t, nout, 0, bench_opts(), NULL));
                    },
                    5, 30);
                snprintf(row, sizeof row, " %.1f (%.1f%%) |", u, pct(f8_bytes / u * 1e-3));
                cfg_rows += row;
            }
            cfg_rows += "\n";
            for (int o = 0; o < nout; o++) {
                CK(cudaFree(yb[o]));
                CK(cudaFree(y8[o]));
            }
            CK(cudaFree(x));
        }
        for (int o = 0; o < nout; o++) {
            CK(cudaFree(wb[o]));
            CK(cudaFree(w8[o]));
            CK(cudaFree(s8[o]));
        }
    }
    printf("\n## FP8-weight GEMV configurations (gemv_fp8w_cfg.h): median us (%% of copy on the FP8 bytes); default %s\n\n",
           kvs_gemv_fp8w_cfg_name(KVS_GEMV_FP8W_CFG_DEFAULT));
    fp8w_cfg_table("| projection | M |", 2, KVS_GEMV_FP8W_CFGS, kvs_gemv_fp8w_cfg_name, cfg_rows);
}

/* The MoE layer: 64 resident experts (dim 6144, inter 2048), top-8; then
 * every internal configuration of the FP8 experts (moe_fp8w_cfg.h), each
 * checked as the default is before it is timed. */
static void bench_fp8w_moe(void)
{
    const int D = 6144, I = 2048, K = 8, R = 64;
    const size_t ngu = (size_t)2 * I * D, ndn = (size_t)D * I; /* per expert */
    const size_t sgu = (size_t)fp8w_nb(2 * I) * fp8w_nb(D), sdn = (size_t)fp8w_nb(D) * fp8w_nb(I);
    kvs_bf16 *gu = (kvs_bf16 *)dmalloc(R * ngu * 2), *dn = (kvs_bf16 *)dmalloc(R * ndn * 2);
    dfill_bf16(gu, R * ngu, 31, 0.05f);
    dfill_bf16(dn, R * ndn, 32, 0.05f);
    /* FP8 experts: the quantised BF16 experts 0..kSrc-1 (host quantiser,
     * ~40M elements an expert), repeated over the 64 slots: distinct
     * memory, so the reads are as real; the checks use each slot's content */
    constexpr int kSrc = 4;
    kvs_fp8 *gu8 = (kvs_fp8 *)dmalloc(R * ngu), *dn8 = (kvs_fp8 *)dmalloc(R * ndn);
    float *gus = (float *)dmalloc(R * sgu * 4), *dns = (float *)dmalloc(R * sdn * 4);
    std::vector<std::vector<kvs_fp8>> hgq(kSrc), hdq(kSrc);
    std::vector<std::vector<float>> hgs(kSrc), hds(kSrc);
    for (int e = 0; e < kSrc; e++) {
        fp8w_quantize(gu + e * ngu, 2 * I, D, hgq[e], hgs[e]);
        fp8w_quantize(dn + e * ndn, D, I, hdq[e], hds[e]);
    }
    for (int e = 0; e < R; e++) {
        CK(cudaMemcpy(gu8 + e * ngu, hgq[e % kSrc].data(), ngu, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dn8 + e * ndn, hdq[e % kSrc].data(), ndn, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(gus + e * sgu, hgs[e % kSrc].data(), sgu * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dns + e * sdn, hds[e % kSrc].data(), sdn * 4, cudaMemcpyHostToDevice));
    }
    printf("\n## FP8-weight MoE experts vs BF16 (dim 6144, inter 2048, top-8, %d resident), GB/s on the distinct experts' weights\n\n", R);
    printf("| tokens | distinct experts | BF16 us | FP8 us | BF16 GB/s | BF16 %% copy | FP8 GB/s | FP8 %% copy | speedup | check bf16 / fp8 vs CPU (tokens 0, T-1) |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    std::string cfg_rows; /* the configurations' table, printed after */
    for (int T : {1, 8}) {
        kvs_bf16 *x = (kvs_bf16 *)dmalloc((size_t)T * D * 2);
        kvs_bf16 *yb = (kvs_bf16 *)dmalloc((size_t)T * D * 2), *y8 = (kvs_bf16 *)dmalloc((size_t)T * D * 2);
        dfill_bf16(x, (size_t)T * D, 33, 1.f);
        bench_routing rt = bench_route(T, K, R);
        const size_t wsb = kvs_cuda_moe_experts_workspace(T, K, I);
        void *ws = dmalloc(wsb);
        struct kvs_moe_args ab = {T, D, I, K, R, x, rt.d_ids, rt.d_w, gu, dn, yb, 0};
        struct kvs_moe_fp8w_args a8 = {T, D, I, K, R, x, rt.d_ids, rt.d_w,
                                       gu8, gus, dn8, dns, y8, 0};
        CK(cudaMemset(yb, 0xff, (size_t)T * D * 2));
        CK(cudaMemset(y8, 0xff, (size_t)T * D * 2));
        ST(kvs_cuda_moe_experts(&ab, ws, wsb, bench_opts(), NULL));
        auto gb = download<kvs_bf16>(yb, (size_t)T * D);
        ST(kvs_cuda_moe_experts_fp8w(&a8, ws, wsb, bench_opts(), NULL));
        auto g8 = download<kvs_bf16>(y8, (size_t)T * D);
        auto hx = download<kvs_bf16>(x, (size_t)T * D);
        /* the CPU on one token at a time, its K experts only */
        double eb = 0, e8 = 0;
        std::vector<kvs_bf16> ref8[2]; /* tokens 0 and T-1 */
        for (int t : {0, T - 1}) {
            std::vector<kvs_bf16> hgu(K * ngu), hdn(K * ndn), rb(D), r8(D);
            std::vector<kvs_fp8> qgu(K * ngu), qdn(K * ndn);
            std::vector<float> sg(K * sgu), sd(K * sdn);
            std::vector<int32_t> lid(K);
            for (int k = 0; k < K; k++) {
                const int e = rt.ids[t * K + k];
                lid[k] = k;
                CK(cudaMemcpy(hgu.data() + k * ngu, gu + e * ngu, ngu * 2, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(hdn.data() + k * ndn, dn + e * ndn, ndn * 2, cudaMemcpyDeviceToHost));
                const int q = e % kSrc;
                std::copy(hgq[q].begin(), hgq[q].end(), qgu.begin() + k * ngu);
                std::copy(hdq[q].begin(), hdq[q].end(), qdn.begin() + k * ndn);
                std::copy(hgs[q].begin(), hgs[q].end(), sg.begin() + k * sgu);
                std::copy(hds[q].begin(), hds[q].end(), sd.begin() + k * sdn);
            }
            struct kvs_moe_args rbf = {1, D, I, K, K, hx.data() + (size_t)t * D, lid.data(),
                                       rt.w.data() + (size_t)t * K, hgu.data(), hdn.data(),
                                       rb.data(), 0};
            kvs_cpu_moe_experts(&rbf);
            struct kvs_moe_fp8w_args rf8 = {1, D, I, K, K, hx.data() + (size_t)t * D, lid.data(),
                                            rt.w.data() + (size_t)t * K, qgu.data(), sg.data(),
                                            qdn.data(), sd.data(), r8.data(), 0};
            kvs_cpu_moe_experts_fp8w(&rf8);
            eb = std::max(eb, kt_norm_err_bf16(gb.data() + (size_t)t * D, rb.data(), D));
            e8 = std::max(e8, kt_norm_err_bf16(g8.data() + (size_t)t * D, r8.data(), D));
            ref8[t == 0 ? 0 : 1] = r8;
            if (T == 1)
                ref8[1] = r8;
        }
        require(eb <= 1e-2, "BF16 MoE experts vs CPU reference");
        require(e8 <= 1e-2, "FP8-weight MoE experts vs CPU reference");
        const double ub = time_us(
            [&](int) { ST(kvs_cuda_moe_experts(&ab, ws, wsb, bench_opts(), NULL)); }, 5, 30);
        const double u8 = time_us(
            [&](int) { ST(kvs_cuda_moe_experts_fp8w(&a8, ws, wsb, bench_opts(), NULL)); }, 5, 30);
        const double bb = (double)rt.distinct * (ngu + ndn) * 2;
        const double b8 = (double)rt.distinct * (ngu + ndn + (sgu + sdn) * 4);
        const double gbb = bb / ub * 1e-3, gb8 = b8 / u8 * 1e-3;
        printf("| %d | %d | %.1f | %.1f | %.0f | %.1f | %.0f | %.1f | %.2fx | %.1e / %.1e |\n", T,
               rt.distinct, ub, u8, gbb, pct(gbb), gb8, pct(gb8), ub / u8, eb, e8);
        fflush(stdout);
        char row[256];
        snprintf(row, sizeof row, "| %d | %d | %.1f (%.1f%%) |", T, rt.distinct, ub, pct(gbb));
        cfg_rows += row;
        for (int cf = 0; cf < KVS_MOE_FP8W_CFGS; cf++) {
            CK(cudaMemset(y8, 0xff, (size_t)T * D * 2));
            ST(kvs_cuda_moe_experts_fp8w_cfg(cf, &a8, ws, wsb, bench_opts(), NULL));
            auto gc = download<kvs_bf16>(y8, (size_t)T * D);
            double ec = 0;
            for (int j = 0; j < 2; j++)
                ec = std::max(ec, kt_norm_err_bf16(gc.data() + (size_t)(j ? T - 1 : 0) * D,
                                                   ref8[j].data(), D));
            require(ec <= 1e-2, "FP8-weight MoE experts configuration vs CPU reference");
            const double u = time_us(
                [&](int) {
                    ST(kvs_cuda_moe_experts_fp8w_cfg(cf, &a8, ws, wsb, bench_opts(), NULL));
                },
                5, 30);
            snprintf(row, sizeof row, " %.1f (%.1f%%) |", u, pct(b8 / u * 1e-3));
            cfg_rows += row;
        }
        cfg_rows += "\n";
        CK(cudaFree(x));
        CK(cudaFree(yb));
        CK(cudaFree(y8));
        bench_routing_free(rt);
        CK(cudaFree(ws));
    }
    printf("\n## FP8-weight MoE expert configurations (moe_fp8w_cfg.h): median us (%% of copy on the FP8 bytes; BF16 on its bytes); default %s\n\n",
           kvs_moe_fp8w_cfg_name(KVS_MOE_FP8W_CFG_DEFAULT));
    fp8w_cfg_table("| tokens | distinct experts | BF16 |", 3, KVS_MOE_FP8W_CFGS,
                   kvs_moe_fp8w_cfg_name, cfg_rows);
    CK(cudaFree(gu));
    CK(cudaFree(dn));
    CK(cudaFree(gu8));
    CK(cudaFree(dn8));
    CK(cudaFree(gus));
    CK(cudaFree(dns));
}

static void bench_fp8w(void)
{
    bench_fp8w_gemv();
    bench_fp8w_moe();
}

#endif /* KVSCOPE_BENCH_FP8W_CUH */
