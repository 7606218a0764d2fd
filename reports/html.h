/* reports/html.h — private to reports/: the pieces of the self-contained
 * HTML pages (report and compare): page head/foot with inline CSS and a
 * Content-Security-Policy that forbids any network access or script, and
 * the inline SVG charts.
 *
 * defines: kvs_html_head, kvs_html_foot, kvs_svg_roofline, kvs_svg_op_roofline, kvs_svg_steps,
 *          kvs_svg_pairs, struct kvs_svg_pair, kvs_svg_stacks, struct kvs_svg_stack_row
 */
#ifndef KVSCOPE_HTML_H
#define KVSCOPE_HTML_H

#include <stdio.h>

#include "report_impl.h"

/* <!DOCTYPE html> ... <body>, title escaped. */
void kvs_html_head(FILE *f, const char *title);
void kvs_html_foot(FILE *f);

/* Each group's achieved GB/s as a bar against the device's HBM peak and the
 * measured copy rate (vertical lines), the top `max_groups` groups. */
void kvs_svg_roofline(FILE *f, const struct kvs_analysis *a, size_t max_groups);

/* Every op group with bytes and FLOPs as a point, log-log: arithmetic
 * intensity (FLOP/byte) across, achieved TFLOP/s up, its area its GPU time;
 * the device's roofs (HBM bandwidth slope, dense BF16 and, when an FP8 op is
 * plotted, FP8 compute flats); the largest `max_labels` points named. */
void kvs_svg_op_roofline(FILE *f, const struct kvs_analysis *a, size_t max_labels);

/* GPU ms per step stacked by category, idle (wall - busy) on top; the first
 * `max_steps` steps. */
void kvs_svg_steps(FILE *f, const struct kvs_analysis *a, size_t max_steps);

/* Before/after horizontal bars, one pair per row (compare page). */
struct kvs_svg_pair {
    const char *label;
    double before, after;
};
void kvs_svg_pairs(FILE *f, const struct kvs_svg_pair *rows, size_t n, const char *unit,
                   const char *aria_label);

/* Horizontal stacked bars, one row each (the multi-rank page: per rank its
 * step as compute only, overlapped, exposed communication, idle). */
#define KVS_SVG_STACK_PARTS 4
struct kvs_svg_stack_row {
    const char *label;
    double v[KVS_SVG_STACK_PARTS];
};
void kvs_svg_stacks(FILE *f, const struct kvs_svg_stack_row *rows, size_t n,
                    const char *const names[KVS_SVG_STACK_PARTS], const char *unit,
                    const char *aria_label);

#endif /* KVSCOPE_HTML_H */
