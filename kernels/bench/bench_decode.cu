/* kernels/bench/bench_decode.cu — times the latency-bound pieces of a GLM-5
 * decode step at batch 1 and prints tables: the small ops (RMSNorm, add +
 * RMSNorm, RoPE, router, argmax), the GEMV against cuBLAS on the engine's
 * projection shapes, and where the time of an MLA decode call at small
 * context goes (phase stamps inside the kernel; batch 1, and batch 8 x 1K,
 * the 64-head mma.sync kernel's size). Every result is checked
 * (CPU reference, or GEMV against cuBLAS) before it is timed.
 *
 *   ninja -C build kernels/bench_decode && build/kernels/bench_decode [section...]
 *   sections: ops gemv mlaprof (default: all)
 *
 * Times: `cold` = CUDA events around one call after the L2 was flushed by a
 * 256 MB memset (as in a decode step, where the weights stream through L2);
 * `graph` = 200 calls captured in a CUDA graph and replayed, per call (the
 * launch gaps of the engine's --graph mode; L2 warm). Medians.
 */
#include "../cuda/mla_impl.cuh"
#include "bench_util.cuh"

static cudaStream_t g_stream; /* where f() enqueues: null, or the capture stream */
static void *g_flush;
static const size_t kFlushBytes = (size_t)256 << 20;

template <class F> static void time_op(F f, double *cold, double *graph)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++)
        f();
    std::vector<float> ms;
    for (int i = 0; i < 30; i++) {
        CK(cudaMemsetAsync(g_flush, i, kFlushBytes, g_stream));
        CK(cudaEventRecord(e0, g_stream));
        f();
        CK(cudaEventRecord(e1, g_stream));
        CK(cudaEventSynchronize(e1));
        float t;
        CK(cudaEventElapsedTime(&t, e0, e1));
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    *cold = 1000.0 * ms[ms.size() / 2];

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cudaStream_t prev = g_stream;
    g_stream = s;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 200; i++)
        f();
    CK(cudaStreamEndCapture(s, &g));
    g_stream = prev;
    CK(cudaGraphInstantiate(&ge, g, 0));
    *graph = graph_us(ge, s, 1, 7, 200);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
}

// ----------------------------------------------------------------------------
// small ops at batch 1

static void row_ops(void)
{
    printf("\n## small ops, batch 1 (cold: one call after an L2 flush; graph: per call in a "
           "replayed graph of 200)\n\n");
    printf("| op | shape | cold us | graph us | check |\n|---|---|---|---|---|\n");
    /* RMSNorm at the engine's three widths, and add + RMSNorm */
    for (int D : {6144, 2048, 512}) {
        for (int add = 0; add < 2; add++) {
            if (add && D != 6144)
                continue;
            kvs_bf16 *x = (kvs_bf16 *)dmalloc(D * 2), *r = (kvs_bf16 *)dmalloc(D * 2);
            kvs_bf16 *w = (kvs_bf16 *)dmalloc(D * 2), *y = (kvs_bf16 *)dmalloc(D * 2);
            dfill_bf16(x, D, 21, 2.f);
            dfill_bf16(r, D, 22, 2.f);
            dfill_bf16(w, D, 23, 1.f);
            auto hx = download<kvs_bf16>(x, D), hr = download<kvs_bf16>(r, D);
            auto hw = download<kvs_bf16>(w, D);
            std::vector<kvs_bf16> ref(D);
            if (add)
                kvs_cpu_add_rmsnorm(hx.data(), hr.data(), hw.data(), ref.data(), 1, D, 1e-5f);
            else
                kvs_cpu_rmsnorm(hx.data(), hw.data(), ref.data(), 1, D, 1e-5f);
            CK(cudaMemset(y, 0xff, D * 2));
            if (add)
                ST(kvs_cuda_add_rmsnorm(x, r, w, y, 1, D, 1e-5f, bench_opts(), NULL));
            else
                ST(kvs_cuda_rmsnorm(x, w, y, 1, D, 1e-5f, bench_opts(), NULL));
            auto got = download<kvs_bf16>(y, D);
            double e = kt_norm_err_bf16(got.data(), ref.data(), D);
            require(e <= 1e-2, "rmsnorm vs CPU");
            double cold, graph;
            /* x drifts with repeated adds; the time does not depend on values */
            time_op(
                [&]() {
                    if (add)
                        ST(kvs_cuda_add_rmsnorm(x, r, w, y, 1, D, 1e-5f, bench_opts(), g_stream));
                    else
                        ST(kvs_cuda_rmsnorm(x, w, y, 1, D, 1e-5f, bench_opts(), g_stream));
                },
                &cold, &graph);
            printf("| %s | [1, %d] | %.2f | %.2f | cpu %.1e |\n", add ? "add_rmsnorm" : "rmsnorm",
                   D, cold, graph, e);
            CK(cudaFree(x));
            CK(cudaFree(r));
            CK(cudaFree(w));
            CK(cudaFree(y));
        }
    }
    /* RoPE: q [1, 64, 64] and the KV row's [1, 1, 64] */
    for (int H : {64, 1}) {
        size_t n = (size_t)H * 64;
        kvs_bf16 *x = (kvs_bf16 *)dmalloc(n * 2);
        dfill_bf16(x, n, 24, 2.f);
        int32_t p = 4100, *dp = (int32_t *)dmalloc(4);
        CK(cudaMemcpy(dp, &p, 4, cudaMemcpyHostToDevice));
        auto ref = download<kvs_bf16>(x, n);
        kvs_cpu_rope_interleaved(ref.data(), &p, 1, H, 64, 0, 64, 1e6f);
        ST(kvs_cuda_rope_interleaved(x, dp, 1, H, 64, 0, 64, 1e6f, bench_opts(), NULL));
        auto got = download<kvs_bf16>(x, n);
        double e = kt_norm_err_bf16(got.data(), ref.data(), n);
        require(e <= 1e-2, "rope vs CPU");
        double cold, graph;
        time_op(
            [&]() {
                ST(kvs_cuda_rope_interleaved(x, dp, 1, H, 64, 0, 64, 1e6f, bench_opts(), g_stream));
            },
            &cold, &graph);
        printf("| rope | [1, %d, 64] | %.2f | %.2f | cpu %.1e |\n", H, cold, graph, e);
        CK(cudaFree(x));
        CK(cudaFree(dp));
    }
    /* router: 256 experts, top-8 */
    {
        const int E = 256, K = 8;
        std::vector<float> hl(E), hb(E), rw(K), gw(K);
        std::vector<int32_t> rid(K), gid(K);
        uint64_t s = 99;
        for (int e = 0; e < E; e++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            hl[e] = (float)((s >> 40) % 8000) / 1000.f - 4.f;
            hb[e] = (float)((s >> 20) % 200) / 1000.f - 0.1f;
        }
        kvs_cpu_moe_route(hl.data(), hb.data(), 1, E, K, 1, 2.5f, rid.data(), rw.data());
        float *dl = (float *)dmalloc(E * 4), *db = (float *)dmalloc(E * 4), *dw = (float *)dmalloc(K * 4);
        int32_t *di = (int32_t *)dmalloc(K * 4);
        CK(cudaMemcpy(dl, hl.data(), E * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db, hb.data(), E * 4, cudaMemcpyHostToDevice));
        ST(kvs_cuda_moe_route(dl, db, 1, E, K, 1, 2.5f, di, dw, bench_opts(), NULL));
        gid = download<int32_t>(di, K);
        gw = download<float>(dw, K);
        bool ok = true;
        for (int k = 0; k < K; k++)
            ok = ok && gid[k] == rid[k] && fabsf(gw[k] - rw[k]) <= 1e-5f * fabsf(rw[k]);
        require(ok, "router vs CPU");
        double cold, graph;
        time_op(
            [&]() {
                ST(kvs_cuda_moe_route(dl, db, 1, E, K, 1, 2.5f, di, dw, bench_opts(), g_stream));
            },
            &cold, &graph);
        printf("| moe_route | [1, 256] top-8 | %.2f | %.2f | cpu exact |\n", cold, graph);
        CK(cudaFree(dl));
        CK(cudaFree(db));
        CK(cudaFree(dw));
        CK(cudaFree(di));
    }
    /* argmax over the vocabulary */
    {
        const int V = 154880;
        float *dl = (float *)dmalloc((size_t)V * 4);
        std::vector<float> hl(V);
        uint64_t s = 7;
        for (int v = 0; v < V; v++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            hl[v] = (float)((s >> 40) % 100000) / 5000.f;
        }
        CK(cudaMemcpy(dl, hl.data(), (size_t)V * 4, cudaMemcpyHostToDevice));
        int32_t ref, *di = (int32_t *)dmalloc(4);
        kvs_cpu_argmax(hl.data(), 1, V, &ref);
        ST(kvs_cuda_argmax(dl, 1, V, di, bench_opts(), NULL));
        require(download<int32_t>(di, 1)[0] == ref, "argmax vs CPU");
        double cold, graph;
        time_op([&]() { ST(kvs_cuda_argmax(dl, 1, V, di, bench_opts(), g_stream)); }, &cold,
                &graph);
        printf("| argmax | [1, 154880] | %.2f | %.2f | cpu exact |\n", cold, graph);
        CK(cudaFree(dl));
        CK(cudaFree(di));
    }
    fflush(stdout);
}

// ----------------------------------------------------------------------------
// GEMV against cuBLAS on the engine's shapes

struct GemvCase {
    const char *name;
    int m, k, batch, f32;
    int n[3];
};

static void gemv_cases(void)
{
    printf("\n## projections at decode batch: GEMV vs cuBLAS (median of 20, weights rotated "
           "through > 200 MB; GB/s on the weights)\n\n");
    printf("| case | M | outputs (N) | K | batch | cuBLAS us | GEMV us | GEMV GB/s | %% of copy | "
           "speed-up | check |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    const GemvCase cases[] = {
        {"q_a", 1, 6144, 1, 0, {2048, 0, 0}},
        {"kv_a latent", 1, 6144, 1, 0, {512, 0, 0}},
        {"kv_a rope", 1, 6144, 1, 0, {64, 0, 0}},
        {"q_a + kv_a (one GEMV)", 1, 6144, 1, 0, {2048, 512, 64}},
        {"q_b nope", 1, 2048, 1, 0, {12288, 0, 0}},
        {"q_b rope", 1, 2048, 1, 0, {4096, 0, 0}},
        {"q_b nope + rope (one GEMV)", 1, 2048, 1, 0, {12288, 4096, 0}},
        {"W_UK per head", 1, 192, 64, 0, {512, 0, 0}},
        {"W_UV per head", 1, 512, 64, 0, {256, 0, 0}},
        {"router (float out)", 1, 6144, 1, 1, {256, 0, 0}},
        {"o_proj", 1, 16384, 1, 0, {6144, 0, 0}},
        {"q_a, batch 8", 8, 6144, 1, 0, {2048, 0, 0}},
        {"q_b nope + rope, batch 4", 4, 2048, 1, 0, {12288, 4096, 0}},
        {"o_proj, batch 8", 8, 16384, 1, 0, {6144, 0, 0}},
    };
    struct kvs_gemm *g = NULL;
    ST(kvs_gemm_init(&g, NULL, NULL));
    for (const GemvCase &c : cases) {
        int nout = 0;
        size_t wbytes = 0;
        for (int i = 0; i < 3 && c.n[i]; i++, nout++)
            wbytes += (size_t)c.n[i] * c.k * 2 * c.batch;
        const int copies = (int)std::max<size_t>(1, std::min<size_t>(16, (size_t)200e6 / wbytes));
        /* x: [m, batch, k] (per head: rows batch*k apart, heads k apart) */
        const int64_t ldx = (int64_t)c.batch * c.k;
        kvs_bf16 *x = (kvs_bf16 *)dmalloc((size_t)c.m * ldx * 2);
        dfill_bf16(x, (size_t)c.m * ldx, 31, 1.f);
        kvs_bf16 *w[3], *yc[3], *yg[3];
        for (int i = 0; i < nout; i++) {
            size_t per = (size_t)c.n[i] * c.k * c.batch;
            w[i] = (kvs_bf16 *)dmalloc(per * copies * 2);
            dfill_bf16(w[i], per * copies, 32 + i, 0.03f);
            yc[i] = (kvs_bf16 *)dmalloc((size_t)c.m * c.n[i] * c.batch * 4);
            yg[i] = (kvs_bf16 *)dmalloc((size_t)c.m * c.n[i] * c.batch * 4);
        }
        auto out_of = [&](int copy, kvs_bf16 **y, struct kvs_gemv_out *o) {
            for (int i = 0; i < nout; i++) {
                o[i].w = w[i] + (size_t)copy * c.n[i] * c.k * c.batch;
                o[i].y = y[i];
                o[i].n = c.n[i];
                o[i].ldy = (int64_t)c.n[i] * c.batch;
            }
        };
        auto run_cublas = [&](int copy) {
            struct kvs_gemv_out o[3];
            out_of(copy, yc, o);
            for (int i = 0; i < nout; i++)
                if (c.batch > 1)
                    ST(kvs_gemm_linear_batched_bf16(g, x, ldx, c.k, o[i].w, (int64_t)c.n[i] * c.k,
                                                    yc[i], o[i].ldy, c.n[i], c.m, c.n[i], c.k,
                                                    c.batch));
                else
                    ST(kvs_gemm_linear_bf16(g, x, o[i].w, yc[i], c.m, c.n[i], c.k));
        };
        auto run_gemv = [&](int copy) {
            struct kvs_gemv_out o[3];
            out_of(copy, yg, o);
            ST(kvs_cuda_gemv_bf16(x, ldx, c.m, c.k, o, nout, c.f32, c.batch, c.k,
                                  (int64_t)c.n[0] * c.k, c.n[0], bench_opts(), NULL));
        };
        /* check the GEMV against cuBLAS (BF16 outputs) on copy 0 */
        kvs_gemm_set_mode(g, KVS_GEMM_CUBLAS);
        run_cublas(0);
        run_gemv(0);
        double worst = 0.0;
        for (int i = 0; i < nout; i++) {
            size_t ny = (size_t)c.m * c.n[i] * c.batch;
            auto a = download<kvs_bf16>(yc[i], ny);
            std::vector<kvs_bf16> b(ny);
            if (c.f32) {
                auto f = download<float>(yg[i], ny);
                for (size_t j = 0; j < ny; j++)
                    b[j] = kvs_float_to_bf16(f[j]);
            } else {
                b = download<kvs_bf16>(yg[i], ny);
            }
            worst = std::max(worst, kt_norm_err_bf16(b.data(), a.data(), ny));
        }
        require(worst <= 1e-2, "GEMV vs cuBLAS");
        double tc = time_us([&](int i) { run_cublas(i % copies); }, 3, 20);
        double tg = time_us([&](int i) { run_gemv(i % copies); }, 3, 20);
        double gbps = (double)wbytes / tg * 1e-3;
        char ns[48];
        snprintf(ns, sizeof ns, "%d", c.n[0]);
        for (int i = 1; i < nout; i++)
            snprintf(ns + strlen(ns), sizeof ns - strlen(ns), " + %d", c.n[i]);
        printf("| %s | %d | %s | %d | %d | %.1f | %.1f | %.0f | %.1f | %.2fx | ~cublas %.1e |\n",
               c.name, c.m, ns, c.k, c.batch, tc, tg, gbps, pct(gbps), tc / tg, worst);
        fflush(stdout);
        for (int i = 0; i < nout; i++) {
            CK(cudaFree(w[i]));
            CK(cudaFree(yc[i]));
            CK(cudaFree(yg[i]));
        }
        CK(cudaFree(x));
    }
    kvs_gemm_free(g);
}

// ----------------------------------------------------------------------------
// MLA decode at batch 1 (and 8 x 1K): where a call's time goes

static void mla_profile(void)
{
    const int H = 64, maxC = 32768, maxB = 8;
    printf("\n## MLA decode, batch 1 and 8, with a token list (as the engine): phases inside one "
           "call\n");
    printf("decode blocks: median clock cycles from block start to Q + first tile in shared "
           "memory (prologue), over the tiles, and to the end (epilogue); spans from "
           "globaltimer (ns). Clock from cudaDeviceProp.\n\n");
    printf("| B | ctx | KV | splits x tiles | call us (events) | decode span ns | block start skew "
           "ns | prologue cyc | tiles cyc | epilogue cyc | combine gap ns | combine span ns |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int clock_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    kvs_fp8 *kv8 = (kvs_fp8 *)dmalloc((size_t)maxC * 4 * KVS_MLA_ROW);
    kvs_bf16 *kv16 = (kvs_bf16 *)dmalloc((size_t)maxC * 4 * KVS_MLA_ROW * 2);
    dfill_fp8(kv8, (size_t)maxC * 4 * KVS_MLA_ROW, 41, 0xbf);
    ST(kvs_cuda_cast_fp8_to_bf16(KVS_CAST_VECTOR, kv8, kv16, (size_t)maxC * 4 * KVS_MLA_ROW, NULL));
    kvs_bf16 *ql = (kvs_bf16 *)dmalloc(maxB * H * KVS_MLA_LATENT * 2);
    kvs_bf16 *qr = (kvs_bf16 *)dmalloc(maxB * H * KVS_MLA_ROPE * 2);
    kvs_bf16 *out = (kvs_bf16 *)dmalloc(maxB * H * KVS_MLA_LATENT * 2);
    dfill_bf16(ql, maxB * H * KVS_MLA_LATENT, 42, 1.f);
    dfill_bf16(qr, maxB * H * KVS_MLA_ROPE, 43, 1.f);
    int32_t *tok = (int32_t *)dmalloc((size_t)maxC * 4);
    int32_t *seq = (int32_t *)dmalloc((maxB + 1) * 4);
    const size_t prof_words = 1 << 16;
    unsigned long long *prof = (unsigned long long *)dmalloc(prof_words * 8);
    size_t wsb = std::max(kvs_cuda_mla_decode_workspace(1, H, maxC, bench_opts()),
                          kvs_cuda_mla_decode_workspace(maxB, H, 1024, bench_opts()));
    void *ws = dmalloc(wsb);
    const int cases[][2] = {{1, 1024}, {1, 4096}, {1, 32768}, {maxB, 1024}};
    for (const auto &cs_ : cases) {
        const int B = cs_[0], C = cs_[1];
        require(B * C <= maxC, "token list");
        /* each sequence's rows spread over 4x its context, in order, as a
         * slot table gives them; sequences one after another */
        std::vector<int32_t> ht((size_t)B * C);
        for (int t = 0; t < B * C; t++)
            ht[t] = 4 * t + (t * 7) % 4;
        CK(cudaMemcpy(tok, ht.data(), (size_t)B * C * 4, cudaMemcpyHostToDevice));
        std::vector<int32_t> hs(B + 1);
        for (int b = 0; b <= B; b++)
            hs[b] = b * C;
        CK(cudaMemcpy(seq, hs.data(), (B + 1) * 4, cudaMemcpyHostToDevice));
        for (int f = 1; f >= 0; f--) {
            struct kvs_mla_args a = {};
            a.batch = B, a.heads = H, a.q_latent = ql, a.q_rope = qr, a.seq_start = seq;
            a.tokens = tok, a.scale = 0.0625f, a.out = out;
            a.kv_dtype = f ? KVS_KV_FP8 : KVS_KV_BF16;
            a.kv = f ? (const void *)kv8 : (const void *)kv16;
            double us = time_us(
                [&](int) { ST(kvs_cuda_mla_decode(&a, C, ws, wsb, bench_opts(), NULL)); }, 3, 20);
            kvs_mla::Plan pl;
            CK(cudaMemset(prof, 0, prof_words * 8));
            ST(kvs_mla::decode(&a, C, ws, wsb, prof, &pl, bench_opts(), 0));
            const size_t nd = (size_t)pl.splits * B * pl.hgroups;
            const size_t nc = pl.splits > 1 ? (size_t)B * H * (pl.splits <= 16 ? 1 : 4) : 0;
            require(nd * kvs_mla::kProfDecode + 2 * nc <= prof_words, "profile buffer");
            auto p = download<unsigned long long>(prof, nd * kvs_mla::kProfDecode + 2 * nc);
            unsigned long long s0 = ~0ull, s1 = 0, e1 = 0, c0 = ~0ull, c1 = 0;
            std::vector<double> pro, til, epi;
            for (size_t i = 0; i < nd; i++) {
                const unsigned long long *q = &p[i * kvs_mla::kProfDecode];
                s0 = std::min(s0, q[0]), s1 = std::max(s1, q[0]), e1 = std::max(e1, q[1]);
                pro.push_back((double)(q[3] - q[2]));
                til.push_back((double)(q[4] - q[3]));
                epi.push_back((double)(q[5] - q[4]));
            }
            for (size_t j = 0; j < nc; j++) {
                c0 = std::min(c0, p[nd * kvs_mla::kProfDecode + 2 * j]);
                c1 = std::max(c1, p[nd * kvs_mla::kProfDecode + 2 * j + 1]);
            }
            auto med = [](std::vector<double> &v) {
                std::sort(v.begin(), v.end());
                return v[v.size() / 2];
            };
            char cg[32] = "-", cs[32] = "-";
            if (nc) {
                snprintf(cg, sizeof cg, "%lld", (long long)c0 - (long long)e1);
                snprintf(cs, sizeof cs, "%llu", c1 - c0);
            }
            printf("| %d | %d | %s | %d x %d | %.1f | %llu | %llu | %.0f | %.0f | %.0f | %s | %s |\n",
                   B, C, f ? "fp8" : "bf16", pl.splits, pl.tiles_per_split, us, e1 - s0, s1 - s0,
                   med(pro), med(til), med(epi), cg, cs);
            fflush(stdout);
        }
    }
    printf("\nSM clock %.0f MHz: 1000 cycles = %.2f us\n", clock_khz / 1e3, 1e3 / (clock_khz / 1e3));
    CK(cudaFree(kv8));
    CK(cudaFree(kv16));
    CK(cudaFree(ql));
    CK(cudaFree(qr));
    CK(cudaFree(out));
    CK(cudaFree(tok));
    CK(cudaFree(seq));
    CK(cudaFree(prof));
    CK(cudaFree(ws));
}

int main(int argc, char **argv)
{
    print_device("bench_decode");
    auto want = [&](const char *what) { return wanted(argc, argv, what); };
    g_flush = dmalloc(kFlushBytes);
    bench_copy();
    if (want("ops"))
        row_ops();
    if (want("gemv"))
        gemv_cases();
    if (want("mlaprof"))
        mla_profile();
    CK(cudaFree(g_flush));
    return 0;
}
