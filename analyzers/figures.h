/* figures.h — a finding's figures as named fields (struct kvs_figures in
 * kvscope/analysis.h), from the same figures struct its words are written
 * from (phrase.h): what `--format json` carries beside the sentences
 * (docs/report-json.md, findings[].figures).
 *
 * defines: kvs_figures_full_buffer, kvs_figures_low_efficiency, kvs_figures_gpu_idle,
 *          kvs_figures_exposed_comm, kvs_figures_host_blocking, kvs_figures_host_op,
 *          kvs_figures_gemm_bound, kvs_figures_full_read
 *
 * Each sets fd->figures (in the arena; the strings it names are the
 * arena's or the interned names, which live as long as the analysis) and
 * returns KVS_STATUS_OK, or KVS_STATUS_NO_MEMORY. The names are the
 * figures structs' own, so a figure added to a struct is added here and to
 * docs/report-json.md. No words: a figure is a number, a flag, a name from
 * the trace or an enum's name. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_FIGURES_H
#define KVS_ANALYZERS_FIGURES_H

#include "phrase.h" /* the figures structs */

enum kvs_status kvs_figures_full_buffer(struct kvs_arena *ar, const struct kvs_fig_full_buffer *f,
                                        struct kvs_finding *fd);
enum kvs_status kvs_figures_low_efficiency(struct kvs_arena *ar, const struct kvs_fig_low_efficiency *f,
                                           struct kvs_finding *fd);
enum kvs_status kvs_figures_gpu_idle(struct kvs_arena *ar, const struct kvs_fig_gpu_idle *f,
                                     struct kvs_finding *fd);
enum kvs_status kvs_figures_exposed_comm(struct kvs_arena *ar, const struct kvs_fig_exposed_comm *f,
                                         struct kvs_finding *fd);
enum kvs_status kvs_figures_host_blocking(struct kvs_arena *ar, const struct kvs_fig_host_blocking *f,
                                          struct kvs_finding *fd);
enum kvs_status kvs_figures_host_op(struct kvs_arena *ar, const struct kvs_fig_host_op *f,
                                    struct kvs_finding *fd);
enum kvs_status kvs_figures_gemm_bound(struct kvs_arena *ar, const struct kvs_fig_gemm_bound *f,
                                       struct kvs_finding *fd);
enum kvs_status kvs_figures_full_read(struct kvs_arena *ar, const struct kvs_fig_full_read *f,
                                      struct kvs_finding *fd);

#endif
