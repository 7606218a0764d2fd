/* bench/capture_overhead.cu — what capturing costs the captured program.
 * Loops, each checked for correctness before it is timed (paired: a third, below):
 *   launch-heavy     N one-element kernels on one stream (host wall clock
 *                    from the first launch to the stream's completion)
 *   bandwidth-heavy  M device-to-device copies of G GiB (CUDA events)
 * A measurement: the median of R repeats (one shot: after a warm-up repeat).
 *
 * One shot (the default): one measurement, plain, with the capture linked
 * in (--linked: kvs_trace_* around it), or under `kvscope capture`.
 *   capture_overhead [--linked TRACE] [--launches N] [--copies M] [--gib G] [--reps R]
 *   prints: RESULT launch_ms=... us_per_launch=... copy_ms=... copy_gbps=...
 *
 * Paired (--paired ROUNDS, what bench/capture_overhead.sh runs, with
 * --launches 1000 --copies 10 --reps 1: short measurements pair tightly): a
 * warm-up round 0, then ROUNDS rounds in this one process, each a plain
 * measurement and a captured one (no warm-up repeat inside either) —
 * between cudaProfilerStart() and cudaProfilerStop(), the window of
 * `kvscope capture --window cudaProfilerStart` — the order turning each
 * round; start and stop are not timed. Paired measurements also time a
 * third loop, launch_nvtx: the launch loop with each launch inside
 * nvtxRangePushA("k") / nvtxRangePop() (what NVTX handling adds a range).
 * --bare: the plain measurement alone (a process with no profiler).
 * Without --bare it must run under that window
 * (KVS_CAPTURE_WINDOW=cudaProfilerStart, set by the launcher): otherwise
 * its "captured" phase would be plain. Prints per round, mode (plain, kvs)
 * and loop (after a CONFIG line with the sizes):
 *   RESULT proc=LABEL round=R mode=M workload=launch|launch_nvtx|copy ms=MEDIAN n=R ...
 *   capture_overhead --paired 40 [--bare] [--label L] [--launches N] [--copies M] [--gib G] [--reps R]
 *                    [--contexts C] [--settle-ms S]
 * --contexts C: C CUDA contexts one after another in this process (the
 * device reset between them, everything set up again), each its warm-up
 * round and ROUNDS rounds, its lines tagged ctx=K (0..C-1): how fast a
 * loop runs can depend on the process or context it lands in (PyTorch's
 * launch loop ran at one of two levels a process on the H200), so a
 * context is a unit of its own (bench/capture_table.py). --settle-ms S:
 * S ms of sleep before each measurement (every process alike), so that
 * the plain measurement after a window times the state between windows,
 * not what the window's close sets going (docs/capture.md).
 */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h> // defines: usleep

#include <cuda_profiler_api.h> // defines: cudaProfilerStart, cudaProfilerStop
#include <nvtx3/nvToolsExt.h>   // defines: nvtxRangePushA, nvtxRangePop (header only)

#include "kvscope/die.h"
#include "kvscope/trace.h"

__global__ void one(int *p) { p[0] += 1; }

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double now_ms()
{
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// ----------------------------------------------------------------------------
// the two loops

struct loops {
    cudaStream_t s;
    int *counter;
    char *src, *dst;
    size_t bytes;
    int launches, copies;
    cudaEvent_t e0, e1;
};

/* reps repeats of the loops (after a warm-up repeat with warm): their
 * medians; nvtx_med non-NULL: also the launch loop with each launch inside
 * an NVTX push/pop range (what a tool's NVTX handling costs a range) */
static void measure(const struct loops *l, int reps, int warm, double *launch_med, double *copy_med,
                    double *nvtx_med)
{
    std::vector<double> launch_ms, copy_ms, nvtx_ms;
    for (int r = warm ? 0 : 1; r <= reps; r++) { /* r == 0: warm-up, not kept */
        KVS_CUDA_DIE(cudaStreamSynchronize(l->s));
        double t0 = now_ms();
        for (int i = 0; i < l->launches; i++)
            one<<<1, 1, 0, l->s>>>(l->counter);
        KVS_CUDA_DIE(cudaStreamSynchronize(l->s));
        double t1 = now_ms();
        if (nvtx_med) {
            double n0 = now_ms();
            for (int i = 0; i < l->launches; i++) {
                nvtxRangePushA("k");
                one<<<1, 1, 0, l->s>>>(l->counter);
                nvtxRangePop();
            }
            KVS_CUDA_DIE(cudaStreamSynchronize(l->s));
            if (r > 0)
                nvtx_ms.push_back(now_ms() - n0);
        }
        KVS_CUDA_DIE(cudaEventRecord(l->e0, l->s));
        for (int i = 0; i < l->copies; i++)
            KVS_CUDA_DIE(cudaMemcpyAsync(l->dst, l->src, l->bytes, cudaMemcpyDeviceToDevice, l->s));
        KVS_CUDA_DIE(cudaEventRecord(l->e1, l->s));
        KVS_CUDA_DIE(cudaEventSynchronize(l->e1));
        float ms = 0;
        KVS_CUDA_DIE(cudaEventElapsedTime(&ms, l->e0, l->e1));
        if (r > 0) {
            launch_ms.push_back(t1 - t0);
            copy_ms.push_back(ms);
        }
    }
    *launch_med = median(launch_ms);
    *copy_med = median(copy_ms);
    if (nvtx_med)
        *nvtx_med = median(nvtx_ms);
}

/* the loops' buffers, stream and events, made and checked: the launch loop
 * counts, the copy copies */
static void setup(struct loops *l, int launches, int copies, double gib)
{
    cudaStream_t s;
    KVS_CUDA_DIE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *counter;
    KVS_CUDA_DIE(cudaMalloc(&counter, sizeof(int)));
    size_t bytes = (size_t)(gib * (1ull << 30));
    char *src, *dst;
    KVS_CUDA_DIE(cudaMalloc(&src, bytes));
    KVS_CUDA_DIE(cudaMalloc(&dst, bytes));
    KVS_CUDA_DIE(cudaMemset(counter, 0, sizeof(int)));
    for (int i = 0; i < launches; i++)
        one<<<1, 1, 0, s>>>(counter);
    KVS_CUDA_LAUNCH_DIE();
    int got = 0;
    KVS_CUDA_DIE(cudaMemcpy(&got, counter, sizeof got, cudaMemcpyDeviceToHost));
    KVS_DIE_IF(got != launches, "launch loop counted %d, wanted %d", got, launches);
    KVS_CUDA_DIE(cudaMemset(src, 0x5A, bytes));
    KVS_CUDA_DIE(cudaMemset(dst, 0, bytes));
    KVS_CUDA_DIE(cudaDeviceSynchronize()); /* the memsets ran on the legacy stream */
    KVS_CUDA_DIE(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    KVS_CUDA_DIE(cudaStreamSynchronize(s));
    std::vector<unsigned char> probe(1 << 20);
    for (size_t off : {(size_t)0, bytes / 2, bytes - probe.size()}) {
        KVS_CUDA_DIE(cudaMemcpy(probe.data(), dst + off, probe.size(), cudaMemcpyDeviceToHost));
        for (unsigned char c : probe)
            KVS_DIE_IF(c != 0x5A, "copy check failed at offset %zu", off);
    }
    cudaEvent_t e0, e1;
    KVS_CUDA_DIE(cudaEventCreate(&e0));
    KVS_CUDA_DIE(cudaEventCreate(&e1));
    *l = {s, counter, src, dst, bytes, launches, copies, e0, e1};
}

static int usage(const char *argv0, FILE *to, int code)
{
    fprintf(to,
            "usage: %s [--linked TRACE] [--launches N] [--copies M] [--gib G] [--reps R]\n"
            "       %s --paired ROUNDS [--bare] [--label L] [--launches N] [--copies M] [--gib G] "
            "[--reps R] [--contexts C] [--settle-ms S]\n"
            "  (counts >= 1; --paired is not linked: run it under kvscope capture --window "
            "cudaProfilerStart)\n",
            argv0, argv0);
    return code;
}

// ----------------------------------------------------------------------------
// main

int main(int argc, char **argv)
{
    const char *linked = nullptr;
    const char *label = "c";
    int launches = 5000, copies = 50, reps = 7, paired = -1, bare = 0, contexts = 1, settle_ms = 0;
    double gib = 1.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--linked") && i + 1 < argc)
            linked = argv[++i];
        else if (!strcmp(argv[i], "--launches") && i + 1 < argc)
            launches = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--copies") && i + 1 < argc)
            copies = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gib") && i + 1 < argc)
            gib = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--paired") && i + 1 < argc)
            paired = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--label") && i + 1 < argc)
            label = argv[++i];
        else if (!strcmp(argv[i], "--bare"))
            bare = 1;
        else if (!strcmp(argv[i], "--contexts") && i + 1 < argc)
            contexts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--settle-ms") && i + 1 < argc)
            settle_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return usage(argv[0], stdout, 0);
        else
            return usage(argv[0], stderr, 2);
    }
    if (launches < 1 || copies < 1 || reps < 1 || !(gib > 0) || (paired >= 0 && linked) ||
        (paired == 0) || (bare && paired < 0) || contexts < 1 || settle_ms < 0 ||
        ((contexts > 1 || settle_ms) && paired < 0))
        return usage(argv[0], stderr, 2);
    const char *win = getenv("KVS_CAPTURE_WINDOW"); /* set by kvscope capture */
    if (paired > 0 && !bare && (!win || strcmp(win, "cudaProfilerStart"))) {
        fprintf(stderr, "%s: --paired times its captured phase inside cudaProfilerStart/Stop: run it "
                        "under kvscope capture --window cudaProfilerStart (or with --bare)\n",
                argv[0]);
        return 2;
    }
    struct kvs_trace *t = nullptr;
    if (linked) {
        struct kvs_trace_config cfg;
        kvs_trace_config_init(&cfg);
        KVS_STATUS_DIE(kvs_trace_create(&cfg, &t));
    }
    struct loops l;
    setup(&l, launches, copies, gib);
    if (paired >= 0) {
        printf("CONFIG proc=%s launches=%d copies=%d copy_gib=%g reps=%d contexts=%d settle_ms=%d\n", label,
               launches, copies, gib, reps, contexts, settle_ms);
        char ctx_tag[32] = "";
        for (int cx = 0; cx < contexts; cx++) {
            if (cx > 0) { /* a context of its own: the device reset, everything made again */
                KVS_CUDA_DIE(cudaDeviceSynchronize());
                KVS_CUDA_DIE(cudaDeviceReset());
                setup(&l, launches, copies, gib);
            }
            if (contexts > 1)
                snprintf(ctx_tag, sizeof ctx_tag, " ctx=%d", cx);
            for (int r = 0; r <= paired; r++) { /* r == 0: the warm-up round */
                for (int k = 0; k < 2; k++) {
                    int captured = (k + r) % 2; /* the order turns each round */
                    if (captured && bare)
                        continue;
                    double lm, cm, nm;
                    if (settle_ms)
                        usleep((useconds_t)settle_ms * 1000);
                    if (captured) {
                        KVS_CUDA_DIE(cudaDeviceSynchronize());
                        KVS_CUDA_DIE(cudaProfilerStart());
                    }
                    measure(&l, reps, 0, &lm, &cm, &nm); /* round 0 is the warm-up */
                    if (captured)
                        KVS_CUDA_DIE(cudaProfilerStop());
                    const char *mode = captured ? "kvs" : "plain";
                    printf("RESULT proc=%s%s round=%d mode=%s workload=launch ms=%.4f n=%d "
                           "us_per_launch=%.4f\n", label, ctx_tag, r, mode, lm, reps, 1000.0 * lm / launches);
                    printf("RESULT proc=%s%s round=%d mode=%s workload=launch_nvtx ms=%.4f n=%d "
                           "us_per_launch=%.4f\n", label, ctx_tag, r, mode, nm, reps, 1000.0 * nm / launches);
                    printf("RESULT proc=%s%s round=%d mode=%s workload=copy ms=%.4f n=%d gbps=%.1f\n",
                           label, ctx_tag, r, mode, cm, reps, 2.0 * copies * (double)l.bytes / (cm * 1e6));
                    fflush(stdout);
                }
            }
        }
        return 0;
    }
    if (t)
        KVS_STATUS_DIE(kvs_trace_start(t));
    double lm, cm;
    measure(&l, reps, 1, &lm, &cm, nullptr);
    double write_ms = 0;
    if (t) {
        KVS_STATUS_DIE(kvs_trace_stop(t));
        double w0 = now_ms();
        KVS_STATUS_DIE(kvs_trace_write(t, linked));
        write_ms = now_ms() - w0;
        struct kvs_trace_stats st;
        kvs_trace_get_stats(t, &st);
        fprintf(stderr, "linked capture: %u buffers, %llu dropped, callbacks %.3f ms, flush %.3f ms, "
                        "write %.1f ms\n",
                st.buffers_used, (unsigned long long)st.dropped_records, st.callback_ns / 1e6,
                st.flush_ns / 1e6, write_ms);
        kvs_trace_free(t);
    }
    printf("RESULT launch_ms=%.4f us_per_launch=%.4f copy_ms=%.4f copy_gbps=%.1f launches=%d "
           "copies=%d gib=%.2f reps=%d\n",
           lm, 1000.0 * lm / launches, cm, 2.0 * copies * (double)l.bytes / (cm * 1e6), launches,
           copies, gib, reps);
    return 0;
}
