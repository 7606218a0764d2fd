/* reports/multirank_impl.h — private to reports/: the tables the multi-rank
 * pages share, built from the summary that kvs_multirank()
 * (kvscope/multirank.h, analyzers/multirank.c) computed, and the one-rank
 * report pieces those pages embed.
 *
 * defines: kvs_mr_table_ranks, kvs_mr_table_findings, kvs_json_write_report, kvs_json_write_rank,
 *          kvs_json_write_categories, kvs_json_write_step_figures, kvs_html_report_body
 */
#ifndef KVSCOPE_MULTIRANK_IMPL_H
#define KVSCOPE_MULTIRANK_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kvscope/multirank.h"
#include "table.h"

/* Tables shared by the text, markdown and HTML pages. */
bool kvs_mr_table_ranks(struct kvs_table *t, const struct kvs_multirank *m);
bool kvs_mr_table_findings(struct kvs_table *t, const struct kvs_multirank *m);

/* The kvscope.report/1 object of one analysis at the writer's position
 * (render_json.c; kvs_render_json_report writes it as a whole document). */
struct kvs_jw;
void kvs_json_write_report(struct kvs_jw *w, const struct kvs_analysis *a);
/* a rank's kvscope.rank/1 summary (render_rank.c): the value of the report's "rank" key */
void kvs_json_write_rank(struct kvs_jw *w, const struct kvs_analysis *a);
/* Pieces both documents write (render_json.c). GPU ms by category:
 * {"copy/cast": ms, "GEMM": ms, ...}, KVS_CAT_COUNT_ of them. */
void kvs_json_write_categories(struct kvs_jw *w, const double *ms);
/* The steps' figures that open kvscope.report/1's "steps", kvscope.rank/1's
 * "steps" and kvscope.compare/1's "before"/"after" (after its "path"), keys
 * count, mean_ms, gpu_ms_per_step, gpu_busy_fraction. */
void kvs_json_write_step_figures(struct kvs_jw *w, int64_t count, double mean_ms,
                                 double gpu_ms_per_step, double gpu_busy_fraction);

/* The HTML report of one analysis from its <h1> to its last table, without
 * the page's head and foot (render_html.c); false when memory ran out. */
bool kvs_html_report_body(FILE *out, const struct kvs_analysis *a, const struct kvs_render_options *opt);

#endif /* KVSCOPE_MULTIRANK_IMPL_H */
