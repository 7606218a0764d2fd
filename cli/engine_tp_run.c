/* cli/engine_tp_run.c — `kvscope engine --tp N`'s summary: the step time (the
 * slowest rank's), a rank's bytes per step and roofline, each rank's median
 * step and all-reduce time, the all-reduce share, and the `result:` line.
 * The run itself is kvs_engine_run (engine/run.c), called from cmd_engine.c
 * for one GPU and for --tp alike.
 *
 *   kvscope engine --tp 8 --kv-path full-cast --trace full.json.gz
 *   bench/engine_tp.sh build "$OUT"
 */
#include <stdio.h>

#include "cli.h"
#include "engine_cli.h"
#include "kvscope/engine_run.h"

void kvs_engine_cli_print_tp_summary(const struct kvs_engine_opts *o,
                                     const struct kvs_engine_params *p,
                                     const struct kvs_engine_run_summary *f)
{
    const int W = f->world, n = f->steps;
    const double step_ms = f->step_ms, kv_ms = f->kv_ms, roof_ms = f->roof_ms;
    printf("summary over %d timed steps (median), tensor parallel over %d GPUs:\n", n, W);
    printf("  step (slowest rank)           %10.3f ms\n", step_ms);
    printf("  tokens/s                      %10.1f\n", f->tokens_per_s);
    kvs_engine_cli_print_bytes("bytes moved per step, a rank", &f->bytes);
    printf("  roofline (a rank's bytes / copy rate) %7.3f ms\n", roof_ms);
    printf("  of roofline                   %10.1f %%\n", 100.0 * roof_ms / step_ms);
    if (o->path != KVS_KV_PATH_FP8_DIRECT && !o->graph)
        printf("  KV prep (cast) share of step  %10.1f %%  (%.3f ms on rank 0, CUDA events)\n",
               100.0 * kv_ms / step_ms, kv_ms);
    double ar_sum = 0.0, slow = 0.0;
    int slow_rank = 0;
    for (int r = 0; r < W; r++) {
        double rm = f->rank_ms[r];
        double am = f->rank_allreduce_ms[r];
        ar_sum += am;
        if (rm > slow) {
            slow = rm;
            slow_rank = r;
        }
        if (!o->graph)
            printf("  rank %-2d (GPU %d)               %10.3f ms, all-reduce %.3f ms (%.1f %%)\n",
                   r, r, rm, am, 100.0 * am / rm);
        else
            printf("  rank %-2d (GPU %d)               %10.3f ms\n", r, r, rm);
    }
    double ar_ms = o->graph ? -1.0 : ar_sum / W;
    if (!o->graph)
        printf("  all-reduce share of step      %10.1f %%  (%.3f ms, mean over ranks; waiting for "
               "the slowest rank included)\n",
               100.0 * ar_ms / step_ms, ar_ms);
    printf("result: config=%s path=%s batch=%lld context=%lld steps=%d graph=%d tp=%d "
           "step_ms=%.4f tokens_per_s=%.2f bytes_per_step=%.6g roofline_ms=%.4f "
           "roofline_pct=%.2f kv_ms=%.4f kv_share_pct=%.2f allreduce_ms=%.4f "
           "allreduce_share_pct=%.2f slowest_rank=%d copy_gbps=%.1f\n",
           p->model.name, kvs_kv_path_name(p->path), o->batch, o->context, n, o->graph, W, step_ms,
           f->tokens_per_s, f->bytes.total, roof_ms, 100.0 * roof_ms / step_ms, kv_ms,
           o->graph ? -1.0 : 100.0 * kv_ms / step_ms, ar_ms,
           o->graph ? -1.0 : 100.0 * ar_ms / step_ms, slow_rank, f->copy_gbps);
}
