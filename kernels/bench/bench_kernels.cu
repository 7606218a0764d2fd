/* kernels/bench/bench_kernels.cu — times kvscope's kernels on the GPU and
 * prints tables: the device-to-device copy rate first (every kernel is then
 * reported as GB/s and % of it), the FP8 -> BF16 cast of the
 * [495552, 1, 576] KV pool (generic, vector), gather-cast of 1K..128K
 * tokens, MLA decode (batch 1/8/64 x context 1K..128K, 64 heads, BF16 KV and
 * FP8-direct), MoE experts and projections. Every kernel's output is checked
 * against the CPU reference (or, where that is too slow, against the other
 * variant) before it is timed. Times: CUDA events around each call after
 * warm-up, median of the repeats; inputs rotate through more than L2.
 *
 *   ninja -C build kernels/bench_kernels && build/kernels/bench_kernels [section...]
 *   sections: copy cast gather mla moe gemm fp8w (default: all; fp8w:
 *   bench_fp8w.cuh, FP8-weight GEMV and experts vs BF16); mla32k [B C] runs
 *   only batch 1 x 32K (or B x C) once per KV type, untimed, for a profiler
 *   (ncu -k regex:mla); mlawgv: the FP8 wgmma kernel's variants
 *   (KVS_MLA_WGV) against each other in one process, checked then timed
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "../cuda/cast_cfg.h"
#include "bench_util.cuh"
#include "bench_fp8w.cuh"

// ----------------------------------------------------------------------------
// sections

static void bench_cast(void)
{
    const size_t n = (size_t)495552 * KVS_MLA_ROW;
    kvs_fp8 *src = (kvs_fp8 *)dmalloc(n);
    kvs_bf16 *dst = (kvs_bf16 *)dmalloc(n * 2);
    dfill_fp8(src, n, 2, 0xff);
    auto h_src = download<kvs_fp8>(src, n);
    std::vector<kvs_bf16> ref(n);
    kvs_cpu_cast_fp8_to_bf16(h_src.data(), ref.data(), n);
    printf("\n## FP8 e4m3 -> BF16 cast of [495552, 1, 576] (%zu elements; bytes = 3 per element)\n\n", n);
    printf("| variant | median us | GB/s | %% of copy |\n|---|---|---|---|\n");
    /* the public variants, then every configuration of the vector cast */
    for (int v = 0; v < 2 + KVS_CAST_CFGS; v++) {
        auto run = [&]() {
            if (v < 2)
                ST(kvs_cuda_cast_fp8_to_bf16((enum kvs_cast_variant)v, src, dst, n, NULL));
            else
                ST(kvs_cuda_cast_fp8_to_bf16_cfg(v - 2, src, dst, n, NULL));
        };
        CK(cudaMemset(dst, 0xff, n * 2));
        run();
        auto got = download<kvs_bf16>(dst, n);
        require(memcmp(got.data(), ref.data(), n * 2) == 0, "cast bit-exact vs CPU");
        double us = time_us([&](int) { run(); }, 3, 20);
        double gbps = 3.0 * n / us * 1e-3;
        char name[64];
        if (v < 2)
            snprintf(name, sizeof name, "%s", kvs_cast_variant_name((enum kvs_cast_variant)v));
        else
            snprintf(name, sizeof name, "(vector cfg %s%s)", kvs_cast_cfg_name(v - 2),
                     v - 2 == KVS_CAST_CFG_VECTOR ? ", = vector" : "");
        printf("| %s | %.1f | %.0f | %.1f |\n", name, us, gbps, pct(gbps));
    }
    CK(cudaFree(src));
    CK(cudaFree(dst));
}

static void bench_gather(void)
{
    const size_t rows = 495552, row = KVS_MLA_ROW;
    kvs_fp8 *pool = (kvs_fp8 *)dmalloc(rows * row);
    dfill_fp8(pool, rows * row, 3, 0xff);
    auto h_pool = download<kvs_fp8>(pool, rows * row);
    printf("\n## gather-cast of active tokens from the [495552, 576] FP8 pool (bytes = 3 x 576 per token)\n\n");
    printf("| tokens | median us | GB/s | %% of copy |\n|---|---|---|---|\n");
    const int ntoks[] = {1024, 4096, 16384, 65536, 131072};
    uint64_t st = 12345;
    for (int ntok : ntoks) {
        /* enough token lists (and outputs) that one pass touches > 100 MB */
        int lists = (int)std::min<size_t>(64, std::max<size_t>(2, (size_t)100e6 / (ntok * row * 3)));
        std::vector<int32_t> tok((size_t)lists * ntok);
        for (auto &t : tok) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            t = (int32_t)((st >> 33) % rows);
        }
        int32_t *d_tok = (int32_t *)dmalloc(tok.size() * 4);
        kvs_bf16 *dst = (kvs_bf16 *)dmalloc((size_t)lists * ntok * row * 2);
        CK(cudaMemcpy(d_tok, tok.data(), tok.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemset(dst, 0xff, (size_t)ntok * row * 2));
        ST(kvs_cuda_gather_cast_fp8_to_bf16(pool, row, d_tok, ntok, dst, NULL));
        auto got = download<kvs_bf16>(dst, (size_t)ntok * row);
        std::vector<kvs_bf16> ref((size_t)ntok * row);
        kvs_cpu_gather_cast_fp8_to_bf16(h_pool.data(), row, tok.data(), ntok, ref.data());
        require(memcmp(got.data(), ref.data(), ref.size() * 2) == 0, "gather-cast bit-exact vs CPU");
        double us = time_us(
            [&](int i) {
                int l = i % lists;
                ST(kvs_cuda_gather_cast_fp8_to_bf16(pool, row, d_tok + (size_t)l * ntok, ntok,
                                                    dst + (size_t)l * ntok * row, NULL));
            },
            lists, 3 * lists > 30 ? 3 * lists : 30);
        double gbps = 3.0 * ntok * row / us * 1e-3;
        printf("| %d | %.2f | %.0f | %.1f |\n", ntok, us, gbps, pct(gbps));
        CK(cudaFree(d_tok));
        CK(cudaFree(dst));
    }
    CK(cudaFree(pool));
}

static void bench_mla(void)
{
    const int H = 64, maxB = 64, maxC = 131072;
    const size_t prow = (size_t)maxB * maxC; /* pool rows: the largest case */
    kvs_fp8 *kv8 = (kvs_fp8 *)dmalloc(prow * KVS_MLA_ROW);
    kvs_bf16 *kv16 = (kvs_bf16 *)dmalloc(prow * KVS_MLA_ROW * 2);
    dfill_fp8(kv8, prow * KVS_MLA_ROW, 4, 0xbf); /* |x| < 2, no NaN */
    ST(kvs_cuda_cast_fp8_to_bf16(KVS_CAST_VECTOR, kv8, kv16, prow * KVS_MLA_ROW, NULL));
    kvs_bf16 *ql = (kvs_bf16 *)dmalloc((size_t)maxB * H * KVS_MLA_LATENT * 2);
    kvs_bf16 *qr = (kvs_bf16 *)dmalloc((size_t)maxB * H * KVS_MLA_ROPE * 2);
    dfill_bf16(ql, (size_t)maxB * H * KVS_MLA_LATENT, 5, 1.f);
    dfill_bf16(qr, (size_t)maxB * H * KVS_MLA_ROPE, 6, 1.f);
    kvs_bf16 *out = (kvs_bf16 *)dmalloc((size_t)maxB * H * KVS_MLA_LATENT * 2);
    kvs_bf16 *out2 = (kvs_bf16 *)dmalloc((size_t)maxB * H * KVS_MLA_LATENT * 2);
    float *lse = (float *)dmalloc((size_t)maxB * H * 4);
    size_t wsb = 0;
    for (int B : {1, 8, 64})
        for (int C = 1024; C <= maxC; C *= 2)
            wsb = std::max(wsb, kvs_cuda_mla_decode_workspace(B, H, C, bench_opts()));
    void *ws = dmalloc(wsb ? wsb : 16);
    const int slots_max = 64;
    int32_t *seqs = (int32_t *)dmalloc((size_t)slots_max * (maxB + 1) * 4);

    printf("\n## MLA decode, 64 heads, absorbed (576/512), scale 1/16; KV bytes = B x ctx x 576 (FP8) or x 1152 (BF16)\n");
    printf("FLOPs = B x ctx x 64 x (576 + 512) x 2. Checked: vs the CPU reference where marked, FP8 vs BF16 always.\n\n");
    printf("| B | ctx | KV | median us | KV GB/s | %% of copy | TFLOP/s | check |\n|---|---|---|---|---|---|---|---|\n");
    const int ctxs[] = {1024, 4096, 16384, 32768, 65536, 131072};
    for (int B : {1, 8, 64})
        for (int C : ctxs) {
            size_t rows = (size_t)B * C;
            int slots = (int)std::min<size_t>(slots_max, std::max<size_t>(1, prow / rows));
            std::vector<int32_t> h((size_t)slots * (B + 1));
            for (int s = 0; s < slots; s++)
                for (int b = 0; b <= B; b++)
                    h[(size_t)s * (B + 1) + b] = (int32_t)(s * rows + (size_t)b * C);
            CK(cudaMemcpy(seqs, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
            struct kvs_mla_args a = {};
            a.batch = B, a.heads = H, a.q_latent = ql, a.q_rope = qr, a.tokens = NULL;
            a.scale = 0.0625f, a.lse = lse;
            /* check: FP8 vs BF16 on the same values; the CPU for small cases */
            std::vector<kvs_bf16> o8, o16;
            for (int f = 0; f < 2; f++) {
                a.kv_dtype = f ? KVS_KV_FP8 : KVS_KV_BF16;
                a.kv = f ? (const void *)kv8 : (const void *)kv16;
                a.seq_start = seqs;
                a.out = f ? out : out2;
                CK(cudaMemset(a.out, 0xff, (size_t)B * H * KVS_MLA_LATENT * 2));
                ST(kvs_cuda_mla_decode(&a, C, ws, wsb, bench_opts(), NULL));
                (f ? o8 : o16) = download<kvs_bf16>(a.out, (size_t)B * H * KVS_MLA_LATENT);
            }
            double d = kt_norm_err_bf16(o8.data(), o16.data(), o8.size());
            require(d <= 1e-2, "MLA fp8-direct vs bf16 on cast data");
            char check[64];
            snprintf(check, sizeof check, "fp8~bf16 %.1e", d);
            if ((size_t)B * C <= 8192) {
                auto hq = download<kvs_bf16>(ql, (size_t)B * H * KVS_MLA_LATENT);
                auto hr = download<kvs_bf16>(qr, (size_t)B * H * KVS_MLA_ROPE);
                auto hk = download<kvs_fp8>(kv8, rows * KVS_MLA_ROW);
                std::vector<kvs_bf16> ref((size_t)B * H * KVS_MLA_LATENT);
                struct kvs_mla_args r = a;
                r.q_latent = hq.data(), r.q_rope = hr.data(), r.kv_dtype = KVS_KV_FP8;
                r.kv = hk.data(), r.seq_start = h.data(), r.out = ref.data(), r.lse = NULL;
                kvs_cpu_mla_decode(&r);
                double e = kt_norm_err_bf16(o8.data(), ref.data(), ref.size());
                require(e <= 1e-2, "MLA fp8 vs CPU reference");
                snprintf(check + strlen(check), sizeof check - strlen(check), ", cpu %.1e", e);
            }
            for (int f = 0; f < 2; f++) {
                a.kv_dtype = f ? KVS_KV_FP8 : KVS_KV_BF16;
                a.kv = f ? (const void *)kv8 : (const void *)kv16;
                a.out = out;
                int reps = rows >= (size_t)1 << 22 ? 10 : 30;
                double us = time_us(
                    [&](int i) {
                        a.seq_start = seqs + (size_t)(i % slots) * (B + 1);
                        ST(kvs_cuda_mla_decode(&a, C, ws, wsb, bench_opts(), NULL));
                    },
                    3, reps);
                double kvb = (double)rows * KVS_MLA_ROW * (f ? 1 : 2);
                double gbps = kvb / us * 1e-3;
                double tf = (double)rows * H * (576 + 512) * 2 / us * 1e-6;
                printf("| %d | %d | %s | %.1f | %.0f | %.1f | %.0f | %s |\n", B, C, f ? "fp8" : "bf16",
                       us, gbps, pct(gbps), tf, check);
            }
            fflush(stdout);
        }

    /* Batch 1, FP8, three ways of timing the same call (slots rotating as
     * above): events around each call on the default stream, where nothing
     * launches with PDL (the table above); the same on a created stream,
     * where the decode and the combine launch with PDL as in the engine; and
     * 20 calls captured in a CUDA graph, replayed, per call (no host launch
     * cost, PDL edges kept). */
    printf("\n## MLA decode, FP8, batch 1: default stream vs a created stream (PDL) vs CUDA graph "
           "(us per call, medians)\n\n");
    printf("| ctx | default stream | PDL stream | graph | %% of copy (graph) |\n|---|---|---|---|---|\n");
    {
        cudaStream_t cs;
        CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
        for (int C : {4096, 16384, 32768, 65536, 131072}) {
            const size_t rows = (size_t)C;
            const int slots = (int)std::min<size_t>(slots_max, std::max<size_t>(1, prow / rows));
            std::vector<int32_t> h((size_t)slots * 2);
            for (int sl = 0; sl < slots; sl++)
                h[2 * sl] = (int32_t)(sl * rows), h[2 * sl + 1] = (int32_t)(sl * rows + rows);
            CK(cudaMemcpy(seqs, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
            struct kvs_mla_args a = {};
            a.batch = 1, a.heads = H, a.q_latent = ql, a.q_rope = qr, a.kv_dtype = KVS_KV_FP8;
            a.kv = kv8, a.scale = 0.0625f, a.out = out, a.lse = lse;
            auto call = [&](int i, cudaStream_t st) {
                a.seq_start = seqs + (size_t)(i % slots) * 2;
                ST(kvs_cuda_mla_decode(&a, C, ws, wsb, bench_opts(), st));
            };
            const double us_def = time_us([&](int i) { call(i, NULL); }, 3, 30);
            const double us_pdl = time_us([&](int i) { call(i, cs); }, 3, 30, cs);
            const int per = 20;
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < per; i++)
                call(i, cs);
            CK(cudaStreamEndCapture(cs, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            const double us_g = graph_us(ge, cs, 3, 10, per);
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
            printf("| %d | %.1f | %.1f | %.1f | %.1f |\n", C, us_def, us_pdl, us_g,
                   pct((double)rows * KVS_MLA_ROW / us_g * 1e-3));
            fflush(stdout);
        }
        CK(cudaStreamDestroy(cs));
    }
    CK(cudaFree(kv8));
    CK(cudaFree(kv16));
    CK(cudaFree(ql));
    CK(cudaFree(qr));
    CK(cudaFree(out));
    CK(cudaFree(out2));
    CK(cudaFree(lse));
    CK(cudaFree(ws));
    CK(cudaFree(seqs));
}

static void bench_moe(void)
{
    const int D = 6144, I = 2048, K = 8, R = 64;
    const size_t per_expert = (size_t)3 * I * D; /* gate, up, down elements */
    kvs_bf16 *gu = (kvs_bf16 *)dmalloc((size_t)R * 2 * I * D * 2);
    kvs_bf16 *dn = (kvs_bf16 *)dmalloc((size_t)R * D * I * 2);
    dfill_bf16(gu, (size_t)R * 2 * I * D, 7, 0.05f);
    dfill_bf16(dn, (size_t)R * D * I, 8, 0.05f);
    printf("\n## MoE experts (dim 6144, inter 2048, top-8, %d resident), GB/s on the distinct experts' weights\n\n", R);
    printf("| tokens | distinct experts | median us | GB/s | %% of copy | check |\n|---|---|---|---|---|---|\n");
    for (int T : {1, 8, 32}) {
        kvs_bf16 *x = (kvs_bf16 *)dmalloc((size_t)T * D * 2), *y = (kvs_bf16 *)dmalloc((size_t)T * D * 2);
        dfill_bf16(x, (size_t)T * D, 9, 1.f);
        bench_routing rt = bench_route(T, K, R);
        size_t wsb = kvs_cuda_moe_experts_workspace(T, K, I);
        void *ws = dmalloc(wsb);
        struct kvs_moe_args a = {T, D, I, K, R, x, rt.d_ids, rt.d_w, gu, dn, y, 0};
        CK(cudaMemset(y, 0xff, (size_t)T * D * 2));
        ST(kvs_cuda_moe_experts(&a, ws, wsb, bench_opts(), NULL));
        char check[48] = "-";
        if (T == 1) { /* the CPU reference: ~0.6 GFLOP */
            auto got = download<kvs_bf16>(y, D);
            auto hx = download<kvs_bf16>(x, D);
            std::vector<kvs_bf16> hgu((size_t)2 * I * D * R), hdn((size_t)D * I * R), ref(D);
            CK(cudaMemcpy(hgu.data(), gu, hgu.size() * 2, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hdn.data(), dn, hdn.size() * 2, cudaMemcpyDeviceToHost));
            struct kvs_moe_args r = a;
            r.x = hx.data(), r.ids = rt.ids.data(), r.weights = rt.w.data(), r.gate_up = hgu.data();
            r.down = hdn.data(), r.y = ref.data();
            kvs_cpu_moe_experts(&r);
            double e = kt_norm_err_bf16(got.data(), ref.data(), D);
            require(e <= 1e-2, "MoE experts vs CPU reference");
            snprintf(check, sizeof check, "cpu %.1e", e);
        }
        double us =
            time_us([&](int) { ST(kvs_cuda_moe_experts(&a, ws, wsb, bench_opts(), NULL)); }, 3, 20);
        double gbps = (double)rt.distinct * per_expert * 2 / us * 1e-3;
        printf("| %d | %d | %.1f | %.0f | %.1f | %s |\n", T, rt.distinct, us, gbps, pct(gbps),
               check);
        CK(cudaFree(x));
        CK(cudaFree(y));
        bench_routing_free(rt);
        CK(cudaFree(ws));
    }
    CK(cudaFree(gu));
    CK(cudaFree(dn));
}

static void bench_gemm(void)
{
    struct kvs_gemm *g = NULL;
    ST(kvs_gemm_init(&g, NULL, NULL));
    printf("\n## BF16 linear through cuBLAS, y[M,N] = x[M,K] . w[N,K]^T\n\n");
    printf("| M | N | K | median us | weight GB/s | %% of copy | TFLOP/s | check |\n|---|---|---|---|---|---|---|---|\n");
    const int shapes[][3] = {{1, 2048, 6144}, {64, 2048, 6144}, {1, 16384, 6144},
                             {64, 16384, 6144}, {8192, 8192, 8192}};
    for (auto &s : shapes) {
        int M = s[0], N = s[1], K = s[2];
        /* rotate weight copies so small ones are not served from L2 */
        int copies = (int)std::max<size_t>(1, std::min<size_t>(16, (size_t)200e6 / ((size_t)N * K * 2)));
        kvs_bf16 *x = (kvs_bf16 *)dmalloc((size_t)M * K * 2);
        kvs_bf16 *w = (kvs_bf16 *)dmalloc((size_t)copies * N * K * 2);
        kvs_bf16 *y = (kvs_bf16 *)dmalloc((size_t)M * N * 2);
        dfill_bf16(x, (size_t)M * K, 10, 1.f);
        dfill_bf16(w, (size_t)copies * N * K, 11, 0.05f);
        char check[48] = "-";
        if ((double)M * N * K <= 2e8) {
            CK(cudaMemset(y, 0xff, (size_t)M * N * 2));
            ST(kvs_gemm_linear_bf16(g, x, w, y, M, N, K));
            auto got = download<kvs_bf16>(y, (size_t)M * N);
            auto hx = download<kvs_bf16>(x, (size_t)M * K);
            auto hw = download<kvs_bf16>(w, (size_t)N * K);
            std::vector<kvs_bf16> ref((size_t)M * N);
            kvs_cpu_linear(hx.data(), hw.data(), ref.data(), M, N, K);
            double e = kt_norm_err_bf16(got.data(), ref.data(), ref.size());
            require(e <= 1e-2, "gemm vs CPU reference");
            snprintf(check, sizeof check, "cpu %.1e", e);
        }
        double us = time_us(
            [&](int i) { ST(kvs_gemm_linear_bf16(g, x, w + (size_t)(i % copies) * N * K, y, M, N, K)); },
            3, 20);
        double gbps = (double)N * K * 2 / us * 1e-3;
        double tf = 2.0 * M * N * K / us * 1e-6;
        printf("| %d | %d | %d | %.1f | %.0f | %.1f | %.1f | %s |\n", M, N, K, us, gbps, pct(gbps), tf,
               check);
        CK(cudaFree(x));
        CK(cudaFree(w));
        CK(cudaFree(y));
    }
    kvs_gemm_free(g);
}

/* `mlawgv`: the FP8 64-head wgmma kernel's variants (kvs_kernel_opts
 * mla_wgv, docs/kernels.md "MLA decode") against each other in one
 * process, on the same data: at each size every variant's output is
 * checked against BF16 attention on the cast data (<= 1e-2) before
 * anything is timed (a variant that fails is reported and not timed; the
 * bench ends if variant 0 fails), then the variants are timed in turn, `rounds` times
 * (medians of CUDA-event timed calls; inputs rotate as in bench_mla). The
 * variants: KVS_BENCH_WGV (default "0,1,4,5,8,12,16,24"); the other options come
 * from the environment as usual (bench_opts), with the wgmma kernel forced
 * on (the planner picks it at these sizes anyway). */
static void bench_mla_wgv(void)
{
    const int H = 64, rounds = 3;
    const int sizes[][2] = {{1, 32768}, {1, 131072}, {8, 131072}, {64, 16384}, {64, 131072}};
    std::vector<int> vars;
    {
        const char *e = getenv("KVS_BENCH_WGV");
        const char *t = e && *e ? e : "0,1,4,5,8,12,16,24";
        for (const char *q = t; *q;) {
            vars.push_back(atoi(q));
            while (*q && *q != ',')
                q++;
            if (*q == ',')
                q++;
        }
    }
    const size_t prow = (size_t)64 * 131072;
    kvs_fp8 *kv8 = (kvs_fp8 *)dmalloc(prow * KVS_MLA_ROW);
    kvs_bf16 *kv16 = (kvs_bf16 *)dmalloc(prow * KVS_MLA_ROW * 2);
    dfill_fp8(kv8, prow * KVS_MLA_ROW, 4, 0xbf); /* |x| < 2, no NaN */
    ST(kvs_cuda_cast_fp8_to_bf16(KVS_CAST_VECTOR, kv8, kv16, prow * KVS_MLA_ROW, NULL));
    kvs_bf16 *ql = (kvs_bf16 *)dmalloc((size_t)64 * H * KVS_MLA_LATENT * 2);
    kvs_bf16 *qr = (kvs_bf16 *)dmalloc((size_t)64 * H * KVS_MLA_ROPE * 2);
    dfill_bf16(ql, (size_t)64 * H * KVS_MLA_LATENT, 5, 1.f);
    dfill_bf16(qr, (size_t)64 * H * KVS_MLA_ROPE, 6, 1.f);
    kvs_bf16 *out = (kvs_bf16 *)dmalloc((size_t)64 * H * KVS_MLA_LATENT * 2);
    float *lse = (float *)dmalloc((size_t)64 * H * 4);
    struct kvs_kernel_opts base = *bench_opts();
    base.mla_wgmma = 1;
    size_t wsb = 0;
    for (auto &sz : sizes)
        wsb = std::max(wsb, kvs_cuda_mla_decode_workspace(sz[0], H, sz[1], &base));
    void *ws = dmalloc(wsb ? wsb : 16);
    const int slots_max = 64;
    int32_t *seqs = (int32_t *)dmalloc((size_t)slots_max * 65 * 4);

    printf("\n## MLA decode, FP8, wgmma kernel variants (KVS_MLA_WGV) in one process\n");
    printf("us: medians of CUDA-event timed calls, one per round (%d rounds, variants in turn); "
           "vs v0: best against best; check: fp8 vs bf16 on the cast data\n\n", rounds);
    printf("| B | ctx | variant | us per round | best us | vs v0 | TFLOP/s | check |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (auto &sz : sizes) {
        const int B = sz[0], C = sz[1];
        const size_t rows = (size_t)B * C;
        const int slots = (int)std::min<size_t>(slots_max, std::max<size_t>(1, prow / rows));
        std::vector<int32_t> h((size_t)slots * (B + 1));
        for (int sl = 0; sl < slots; sl++)
            for (int b = 0; b <= B; b++)
                h[(size_t)sl * (B + 1) + b] = (int32_t)(sl * rows + (size_t)b * C);
        CK(cudaMemcpy(seqs, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
        struct kvs_mla_args a = {};
        a.batch = B, a.heads = H, a.q_latent = ql, a.q_rope = qr, a.tokens = NULL;
        a.scale = 0.0625f, a.lse = lse, a.out = out, a.seq_start = seqs;
        const size_t nout = (size_t)B * H * KVS_MLA_LATENT;
        a.kv_dtype = KVS_KV_BF16, a.kv = kv16;
        CK(cudaMemset(out, 0xff, nout * 2));
        ST(kvs_cuda_mla_decode(&a, C, ws, wsb, &base, NULL));
        const std::vector<kvs_bf16> o16 = download<kvs_bf16>(out, nout);
        a.kv_dtype = KVS_KV_FP8, a.kv = kv8;
        std::vector<double> chk(vars.size());
        for (size_t v = 0; v < vars.size(); v++) {
            struct kvs_kernel_opts o = base;
            o.mla_wgv = vars[v];
            CK(cudaMemset(out, 0xff, nout * 2));
            ST(kvs_cuda_mla_decode(&a, C, ws, wsb, &o, NULL));
            const std::vector<kvs_bf16> o8 = download<kvs_bf16>(out, nout);
            chk[v] = kt_norm_err_bf16(o8.data(), o16.data(), nout);
        }
        require(chk[0] <= 1e-2, "MLA wgmma variant: fp8-direct vs bf16 on cast data");
        std::vector<std::vector<double>> us(vars.size());
        const int reps = rows >= (size_t)1 << 22 ? 10 : 30;
        for (int r = 0; r < rounds; r++)
            for (size_t v = 0; v < vars.size(); v++) {
                if (!(chk[v] <= 1e-2)) /* a variant that fails the check is not timed */
                    continue;
                struct kvs_kernel_opts o = base;
                o.mla_wgv = vars[v];
                us[v].push_back(time_us(
                    [&](int i) {
                        a.seq_start = seqs + (size_t)(i % slots) * (B + 1);
                        ST(kvs_cuda_mla_decode(&a, C, ws, wsb, &o, NULL));
                    },
                    3, reps));
            }
        const double best0 = *std::min_element(us[0].begin(), us[0].end());
        for (size_t v = 0; v < vars.size(); v++) {
            if (us[v].empty()) {
                printf("| %d | %d | %d | FAILED the check, not timed | | | | fp8~bf16 %.1e |\n", B, C,
                       vars[v], chk[v]);
                continue;
            }
            const double best = *std::min_element(us[v].begin(), us[v].end());
            char rs[96] = "";
            for (int r = 0; r < rounds; r++)
                snprintf(rs + strlen(rs), sizeof rs - strlen(rs), "%s%.1f", r ? " / " : "", us[v][r]);
            const double tf = (double)rows * H * (576 + 512) * 2 / best * 1e-6;
            printf("| %d | %d | %d | %s | %.1f | %+.1f%% | %.0f | fp8~bf16 %.1e |\n", B, C, vars[v], rs,
                   best, 100.0 * (best - best0) / best0, tf, chk[v]);
        }
        fflush(stdout);
    }
    CK(cudaFree(kv8));
    CK(cudaFree(kv16));
    CK(cudaFree(ql));
    CK(cudaFree(qr));
    CK(cudaFree(out));
    CK(cudaFree(lse));
    CK(cudaFree(ws));
    CK(cudaFree(seqs));
}

/* for a profiler: one decode per KV type at batch B (1), context C (32K),
 * nothing timed */
static void run_mla32k(int B, int C)
{
    const int H = 64;
    const size_t rows = (size_t)B * C;
    kvs_fp8 *kv8 = (kvs_fp8 *)dmalloc(rows * KVS_MLA_ROW);
    kvs_bf16 *kv16 = (kvs_bf16 *)dmalloc(rows * KVS_MLA_ROW * 2);
    dfill_fp8(kv8, rows * KVS_MLA_ROW, 4, 0xbf);
    ST(kvs_cuda_cast_fp8_to_bf16(KVS_CAST_VECTOR, kv8, kv16, rows * KVS_MLA_ROW, NULL));
    kvs_bf16 *ql = (kvs_bf16 *)dmalloc((size_t)B * H * KVS_MLA_LATENT * 2);
    kvs_bf16 *qr = (kvs_bf16 *)dmalloc((size_t)B * H * KVS_MLA_ROPE * 2);
    kvs_bf16 *out = (kvs_bf16 *)dmalloc((size_t)B * H * KVS_MLA_LATENT * 2);
    dfill_bf16(ql, (size_t)B * H * KVS_MLA_LATENT, 5, 1.f);
    dfill_bf16(qr, (size_t)B * H * KVS_MLA_ROPE, 6, 1.f);
    std::vector<int32_t> seq(B + 1);
    for (int b = 0; b <= B; b++)
        seq[b] = b * C;
    int32_t *d_seq = (int32_t *)dmalloc(seq.size() * 4);
    CK(cudaMemcpy(d_seq, seq.data(), seq.size() * 4, cudaMemcpyHostToDevice));
    size_t wsb = kvs_cuda_mla_decode_workspace(B, H, C, bench_opts());
    void *ws = dmalloc(wsb ? wsb : 16);
    struct kvs_mla_args a = {};
    a.batch = B, a.heads = H, a.q_latent = ql, a.q_rope = qr, a.seq_start = d_seq;
    a.scale = 0.0625f, a.out = out;
    for (int f = 0; f < 2; f++) {
        a.kv_dtype = f ? KVS_KV_FP8 : KVS_KV_BF16;
        a.kv = f ? (const void *)kv8 : (const void *)kv16;
        ST(kvs_cuda_mla_decode(&a, C, ws, wsb, bench_opts(), NULL));
        ST(kvs_cuda_mla_decode(&a, C, ws, wsb, bench_opts(), NULL));
    }
    CK(cudaDeviceSynchronize());
    printf("mla32k: done\n");
}

int main(int argc, char **argv)
{
    print_device("bench_kernels");
    auto want = [&](const char *what) { return wanted(argc, argv, what); };
    if (argc >= 2 && !strcmp(argv[1], "mlawgv")) {
        bench_copy();
        bench_mla_wgv();
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "mla32k")) {
        run_mla32k(argc >= 4 ? atoi(argv[2]) : 1, argc >= 4 ? atoi(argv[3]) : 32768);
        return 0;
    }
    bench_copy(); /* always: the reference rate */
    if (want("cast"))
        bench_cast();
    if (want("gather"))
        bench_gather();
    if (want("mla"))
        bench_mla();
    if (want("moe"))
        bench_moe();
    if (want("gemm"))
        bench_gemm();
    if (want("fp8w"))
        bench_fp8w();
    return 0;
}
