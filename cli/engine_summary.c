/* cli/engine_summary.c — what `kvscope engine` prints once the run is over:
 * the summary over the timed steps (the step time, tokens/s, bytes per step
 * and the roofline, the KV preparation's share; with --tp N the slowest
 * rank's step, a rank's bytes, each rank's median step and all-reduce time
 * and the all-reduce share), then the one `result:` line for scripts. The
 * figures and their percentages are the run summary's (kvs_engine_run,
 * engine/run.c); this file only prints them.
 *
 *   kvscope engine --kv-path full-cast --batch 1 --context 4096
 *   kvscope engine --tp 8 --kv-path full-cast --trace full.json.gz
 *   bench/engine.sh, bench/engine_tp.sh (read the result: line)
 */
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "engine_cli.h"
#include "kvscope/engine_run.h"

void kvs_engine_cli_print_bytes(const char *label, const struct kvs_step_bytes *sb)
{
    printf("  %-30s%10.2f GB  (weights %.2f, KV attention %.2f, KV cast %.2f, KV other %.3f)\n",
           label, sb->total / 1e9, sb->weights / 1e9, sb->kv_attention / 1e9, sb->kv_cast / 1e9,
           sb->kv_other / 1e9);
}

/* The summary's lines; --tp N's are the slowest rank's step and a rank's
 * bytes, then each rank's step and all-reduce. */
static void print_lines(const struct kvs_engine_opts *o, const struct kvs_engine_run_summary *f)
{
    const bool tp = o->tp != 0;
    if (tp)
        printf("summary over %d timed steps (median), tensor parallel over %d GPUs:\n", f->steps,
               f->world);
    else
        printf("summary over %d timed steps (median):\n", f->steps);
    printf("  %-30s%10.3f ms\n", tp ? "step (slowest rank)" : "step", f->step_ms);
    printf("  tokens/s                      %10.1f\n", f->tokens_per_s);
    kvs_engine_cli_print_bytes(tp ? "bytes moved per step, a rank" : "bytes moved per step", &f->bytes);
    if (tp)
        printf("  roofline (a rank's bytes / copy rate) %7.3f ms\n", f->roof_ms);
    else
        printf("  roofline (bytes / copy rate)  %10.3f ms\n", f->roof_ms);
    printf("  of roofline                   %10.1f %%\n", f->roof_pct);
    if (o->path != KVS_KV_PATH_FP8_DIRECT && !o->graph)
        printf("  KV prep (cast) share of step  %10.1f %%  (%.3f ms%s, CUDA events)\n",
               f->kv_share_pct, f->kv_ms, tp ? " on rank 0" : "");
    for (int r = 0; tp && r < f->world; r++) {
        double rm = f->rank_ms[r], am = f->rank_allreduce_ms[r];
        if (!o->graph)
            printf("  rank %-2d (GPU %d)               %10.3f ms, all-reduce %.3f ms (%.1f %%)\n",
                   r, r, rm, am, 100.0 * am / rm);
        else
            printf("  rank %-2d (GPU %d)               %10.3f ms\n", r, r, rm);
    }
    if (tp && !o->graph)
        printf("  all-reduce share of step      %10.1f %%  (%.3f ms, mean over ranks; waiting for "
               "the slowest rank included)\n",
               f->allreduce_share_pct, f->allreduce_ms);
}

void kvs_engine_cli_print_summary(const struct kvs_engine_opts *o,
                                  const struct kvs_engine_params *p,
                                  const struct kvs_engine_run_summary *f)
{
    print_lines(o, f);
    /* one line, key=value, for bench/engine.sh and bench/engine_tp.sh; --tp
     * adds tp=, the all-reduce and the slowest rank */
    printf("result: config=%s path=%s batch=%lld context=%lld steps=%d graph=%d", p->model.name,
           kvs_kv_path_name(p->path), o->batch, o->context, f->steps, o->graph);
    if (o->tp)
        printf(" tp=%d", f->world);
    printf(" step_ms=%.4f tokens_per_s=%.2f bytes_per_step=%.6g roofline_ms=%.4f roofline_pct=%.2f "
           "kv_ms=%.4f kv_share_pct=%.2f",
           f->step_ms, f->tokens_per_s, f->bytes.total, f->roof_ms, f->roof_pct, f->kv_ms,
           f->kv_share_pct);
    if (o->tp)
        printf(" allreduce_ms=%.4f allreduce_share_pct=%.2f slowest_rank=%d", f->allreduce_ms,
               f->allreduce_share_pct, f->slowest_rank);
    printf(" copy_gbps=%.1f\n", f->copy_gbps);
}
