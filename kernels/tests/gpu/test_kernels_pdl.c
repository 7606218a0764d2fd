/* kernels/tests/gpu/test_kernels_pdl.c — the kernels launched with
 * programmatic dependent launch (kernels/src/pdl_impl.cuh) keep stream order:
 * a chain in which every kernel reads what the one before it wrote (add +
 * RMSNorm -> two-output GEMV -> RoPE -> FP8 MLA decode with its split
 * combine -> GEMV -> RMSNorm -> router GEMV (float) -> top-k -> experts ->
 * the next round's residual), several rounds, run three ways on a created
 * stream: synchronising after every op (nothing can overlap), back to back
 * (each kernel may start before the one before it ends), and captured in a
 * CUDA graph and replayed. The kernels are deterministic, so all three must
 * agree bit for bit; a kernel that read or wrote before its wait would see a
 * previous round's data and break that. Fresh random inputs each run.
 *
 *   meson test -C build --suite gpu test_kernels_pdl
 */
#include "kvs_kernel_test.h"

enum {
    D = 1024,     /* hidden */
    H = 16,       /* heads (one partial head group) */
    CTX = 3000,   /* KV rows: 47 tiles, so the FP8 decode splits and combines */
    E = 16,       /* experts, all resident */
    K = 4,        /* top-k */
    I = 256,      /* expert intermediate */
    ROUNDS = 6,
};

struct chain {
    kvs_bf16 *x, *r, *h, *w_norm, *w_norm2, *q_lat, *q_rope, *w_ql, *w_qr, *att, *w_o, *o, *h2;
    kvs_bf16 *w_router, *gate_up, *down;
    float *logits, *bias, *ew;
    int32_t *pos, *seq, *ids;
    kvs_fp8 *kv;
    void *mla_ws, *moe_ws;
    size_t mla_ws_bytes, moe_ws_bytes;
};

static kvs_bf16 *dev_bf16(uint64_t *st, size_t n, float lo, float hi)
{
    kvs_bf16 *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++)
        h[i] = kvs_float_to_bf16(kt_unif(st, lo, hi));
    kvs_bf16 *d = kt_dev(n * 2);
    kt_up(d, h, n * 2);
    free(h);
    return d;
}

#define TRY(call) KVS_REQUIRE((call) == KVS_STATUS_OK)

/* One round; sync != 0: wait for the stream after every op. */
static void round_(const struct chain *c, cudaStream_t s, int sync)
{
#define STEP(call)                                                                                \
    do {                                                                                          \
        TRY(call);                                                                                \
        if (sync)                                                                                 \
            KVS_TEST_CUDA(cudaStreamSynchronize(s));                                              \
    } while (0)
    /* x += r; h = norm(x) */
    STEP(kvs_cuda_add_rmsnorm(c->x, c->r, c->w_norm, c->h, 1, D, 1e-5f, kvs_test_opts(), s));
    /* q = h . W_q^T: latent [H, 512] and rope [H, 64] in one launch */
    const struct kvs_gemv_out q[2] = {{c->w_ql, c->q_lat, H * 512, H * 512},
                                      {c->w_qr, c->q_rope, H * 64, H * 64}};
    STEP(kvs_cuda_gemv_bf16(c->h, D, 1, D, q, 2, 0, 1, 0, 0, 0, kvs_test_opts(), s));
    STEP(kvs_cuda_rope_interleaved(c->q_rope, c->pos, 1, H, 64, 0, 64, 1e6f, kvs_test_opts(), s));
    struct kvs_mla_args a = {
        .batch = 1, .heads = H, .q_latent = c->q_lat, .q_rope = c->q_rope, .kv_dtype = KVS_KV_FP8,
        .kv = c->kv, .seq_start = c->seq, .tokens = NULL, .scale = 0.0625f, .out = c->att,
        .lse = NULL,
    };
    STEP(kvs_cuda_mla_decode(&a, CTX, c->mla_ws, c->mla_ws_bytes, kvs_test_opts(), s));
    /* o = att . W_o^T, then h2 = norm(o) (the norm without the add) */
    const struct kvs_gemv_out o = {c->w_o, c->o, D, D};
    STEP(kvs_cuda_gemv_bf16(c->att, H * 512, 1, H * 512, &o, 1, 0, 1, 0, 0, 0, kvs_test_opts(), s));
    STEP(kvs_cuda_rmsnorm(c->o, c->w_norm2, c->h2, 1, D, 1e-5f, kvs_test_opts(), s));
    /* the MoE: float router logits, top-k, experts -> the next residual */
    const struct kvs_gemv_out ro = {c->w_router, c->logits, E, E};
    STEP(kvs_cuda_gemv_bf16(c->h2, D, 1, D, &ro, 1, 1, 1, 0, 0, 0, kvs_test_opts(), s));
    STEP(kvs_cuda_moe_route(c->logits, c->bias, 1, E, K, 1, 2.5f, c->ids, c->ew, kvs_test_opts(),
                            s));
    struct kvs_moe_args m = {
        .tokens = 1, .dim = D, .inter = I, .topk = K, .n_resident = E, .x = c->h2,
        .ids = c->ids, .weights = c->ew, .gate_up = c->gate_up, .down = c->down, .y = c->r,
        .accumulate = 0,
    };
    STEP(kvs_cuda_moe_experts(&m, c->moe_ws, c->moe_ws_bytes, kvs_test_opts(), s));
#undef STEP
}

/* x after ROUNDS rounds from the same start, copied to the host */
static void run(const struct chain *c, const kvs_bf16 *x0, const kvs_bf16 *r0, cudaStream_t s,
                int mode, kvs_bf16 *x_out, kvs_bf16 *att_out)
{
    KVS_TEST_CUDA(cudaMemcpy(c->x, x0, D * 2, cudaMemcpyHostToDevice));
    KVS_TEST_CUDA(cudaMemcpy(c->r, r0, D * 2, cudaMemcpyHostToDevice));
    KVS_TEST_CUDA(cudaMemset(c->att, 0xFF, H * 512 * 2)); /* poison */
    KVS_TEST_CUDA(cudaDeviceSynchronize()); /* s does not order itself after these */
    if (mode == 2) { /* graph */
        cudaGraph_t g = NULL;
        cudaGraphExec_t ge = NULL;
        KVS_TEST_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < ROUNDS; i++)
            round_(c, s, 0);
        KVS_TEST_CUDA(cudaStreamEndCapture(s, &g));
        KVS_TEST_CUDA(cudaGraphInstantiate(&ge, g, 0));
        KVS_TEST_CUDA(cudaGraphLaunch(ge, s));
        KVS_TEST_CUDA(cudaStreamSynchronize(s));
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
    } else {
        for (int i = 0; i < ROUNDS; i++)
            round_(c, s, mode == 0);
    }
    KVS_TEST_CUDA(cudaStreamSynchronize(s));
    kt_down(x_out, c->x, D * 2);
    kt_down(att_out, c->att, H * 512 * 2);
}

static void test_chain(void)
{
    uint64_t st = kt_seed("pdl");
    struct chain c = {0};
    c.x = kt_dev(D * 2);
    c.r = kt_dev(D * 2);
    c.h = kt_dev(D * 2);
    c.h2 = kt_dev(D * 2);
    c.o = kt_dev(D * 2);
    c.q_lat = kt_dev(H * 512 * 2);
    c.q_rope = kt_dev(H * 64 * 2);
    c.att = kt_dev(H * 512 * 2);
    c.logits = kt_dev(E * 4);
    c.ew = kt_dev(K * 4);
    c.ids = kt_dev(K * 4);
    c.w_norm = dev_bf16(&st, D, 0.5f, 1.5f);
    c.w_norm2 = dev_bf16(&st, D, 0.5f, 1.5f);
    const float sq = 1.7f / 32.f; /* ~sqrt(3 / D) */
    c.w_ql = dev_bf16(&st, (size_t)H * 512 * D, -sq, sq);
    c.w_qr = dev_bf16(&st, (size_t)H * 64 * D, -sq, sq);
    c.w_o = dev_bf16(&st, (size_t)D * H * 512, -0.0135f, 0.0135f);
    c.w_router = dev_bf16(&st, (size_t)E * D, -sq, sq);
    c.gate_up = dev_bf16(&st, (size_t)E * 2 * I * D, -sq, sq);
    c.down = dev_bf16(&st, (size_t)E * D * I, -0.108f, 0.108f);
    float bias[E];
    for (int e = 0; e < E; e++)
        bias[e] = kt_unif(&st, -1.f / 32, 1.f / 32);
    c.bias = kt_dev(sizeof bias);
    kt_up(c.bias, bias, sizeof bias);
    int32_t pos = CTX - 1, seq[2] = {0, CTX};
    c.pos = kt_dev(sizeof pos);
    kt_up(c.pos, &pos, sizeof pos);
    c.seq = kt_dev(sizeof seq);
    kt_up(c.seq, seq, sizeof seq);
    kvs_fp8 *kv = malloc((size_t)CTX * KVS_MLA_ROW);
    for (size_t i = 0; i < (size_t)CTX * KVS_MLA_ROW; i++)
        kv[i] = kvs_float_to_fp8(kt_unif(&st, -2.f, 2.f));
    c.kv = kt_dev((size_t)CTX * KVS_MLA_ROW);
    kt_up(c.kv, kv, (size_t)CTX * KVS_MLA_ROW);
    free(kv);
    c.mla_ws_bytes = kvs_cuda_mla_decode_workspace(1, H, CTX, kvs_test_opts());
    c.mla_ws = kt_dev(c.mla_ws_bytes);
    c.moe_ws_bytes = kvs_cuda_moe_experts_workspace(1, K, I);
    c.moe_ws = kt_dev(c.moe_ws_bytes);

    kvs_bf16 x0[D], r0[D];
    for (int i = 0; i < D; i++) {
        x0[i] = kvs_float_to_bf16(kt_unif(&st, -2.f, 2.f));
        r0[i] = kvs_float_to_bf16(kt_unif(&st, -1.f, 1.f));
    }
    KVS_TEST_CUDA(cudaDeviceSynchronize());
    cudaStream_t s;
    KVS_TEST_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    static kvs_bf16 want[D], got[D], want_att[H * 512], got_att[H * 512];
    run(&c, x0, r0, s, 0, want, want_att);
    /* the chain did something: finite, moved, and attention written */
    int finite = 1, moved = 0;
    for (int i = 0; i < D; i++) {
        float v = kvs_bf16_to_float(want[i]);
        finite &= isfinite(v);
        moved += want[i] != x0[i];
    }
    for (int i = 0; i < H * 512; i++)
        finite &= isfinite(kvs_bf16_to_float(want_att[i]));
    KVS_CHECK_MSG(finite && moved > D / 2, "reference chain: finite %d, %d of %d values moved",
                  finite, moved, D);
    const char *names[] = {"", "back to back", "graph"};
    for (int mode = 1; mode <= 2; mode++)
        for (int rep = 0; rep < 3; rep++) {
            run(&c, x0, r0, s, mode, got, got_att);
            int dx = 0, da = 0;
            for (int i = 0; i < D; i++)
                dx += got[i] != want[i];
            for (int i = 0; i < H * 512; i++)
                da += got_att[i] != want_att[i];
            KVS_CHECK_MSG(dx == 0 && da == 0,
                          "%s (repeat %d): %d of %d x values and %d of %d attention outputs "
                          "differ from the synchronised run",
                          names[mode], rep, dx, D, da, H * 512);
        }
    KVS_TEST_CUDA(cudaStreamDestroy(s));
    void *bufs[] = {c.x, c.r, c.h, c.h2, c.o, c.q_lat, c.q_rope, c.att, c.logits, c.ew,
                    c.ids, c.w_norm, c.w_norm2, c.w_ql, c.w_qr, c.w_o, c.w_router, c.gate_up,
                    c.down, c.bias, c.pos, c.seq, c.kv, c.mla_ws, c.moe_ws};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        cudaFree(bufs[i]);
}

int main(int argc, char **argv)
{
    kvs_test_require_gpu();
    static const struct kvs_test tests[] = {
        {"chain", test_chain},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
