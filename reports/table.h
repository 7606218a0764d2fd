/* reports/table.h — private to reports/: a table of text cells built once
 * and printed as an aligned text table, a markdown table or an HTML table,
 * so the three human formats show the same rows; plus the builders of the
 * report's tables (groups, kernels, steps) from an analysis.
 *
 * defines: struct kvs_table, kvs_table_init/add/free, kvs_table_print_text,
 *          kvs_table_print_md, kvs_table_print_html, kvs_table_groups,
 *          kvs_table_kernels, kvs_table_steps, kvs_table_ops, kvs_roofs_line, KVS_ANSI_*, kvs_report_facts,
 *          kvs_finding_figures, kvs_category_parts
 */
#ifndef KVSCOPE_TABLE_H
#define KVSCOPE_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#include "report_impl.h"

#define KVS_TABLE_MAX_COLS 12

/* Column kinds: how a cell is aligned and marked up. */
enum kvs_col {
    KVS_COL_TEXT = 0, /* left-aligned words */
    KVS_COL_NUM,      /* right-aligned number */
    KVS_COL_CODE,     /* left-aligned, a name from the trace: `code` in markdown, <code> in HTML */
};

struct kvs_table {
    int ncol;
    const char *header[KVS_TABLE_MAX_COLS];
    enum kvs_col kind[KVS_TABLE_MAX_COLS];
    char **cells; /* nrow * ncol strings, owned */
    size_t nrow, cap;
    bool failed;  /* an allocation failed: the table is incomplete */
    const char *note; /* a line under the table ("12 more groups ..."), owned when set */
    char note_buf[320];
};

/* headers and kinds: ncol entries each (headers are not copied: use literals). */
void kvs_table_init(struct kvs_table *t, int ncol, const char *const *headers,
                    const enum kvs_col *kinds);
/* Append a row of t->ncol cells (copied). */
void kvs_table_add(struct kvs_table *t, const char *const *cells);
void kvs_table_free(struct kvs_table *t);

#define KVS_ANSI_BOLD "\033[1m"
#define KVS_ANSI_DIM "\033[2m"
#define KVS_ANSI_RED "\033[31m"
#define KVS_ANSI_YELLOW "\033[33m"
#define KVS_ANSI_CYAN "\033[36m"
#define KVS_ANSI_GREEN "\033[32m"
#define KVS_ANSI_RESET "\033[0m"

/* Two spaces of indent, columns separated by two spaces; header bold when
 * colour is on. Trailing spaces are never written. */
void kvs_table_print_text(FILE *f, const struct kvs_table *t, bool color);
void kvs_table_print_md(FILE *f, const struct kvs_table *t);
void kvs_table_print_html(FILE *f, const struct kvs_table *t, const char *css_class);

/* The report's tables. Each returns false when memory ran out. */
bool kvs_table_groups(struct kvs_table *t, const struct kvs_analysis *a, size_t max_rows);
bool kvs_table_kernels(struct kvs_table *t, const struct kvs_analysis *a, size_t max_rows,
                       size_t name_width);
bool kvs_table_steps(struct kvs_table *t, const struct kvs_analysis *a, size_t max_rows);
/* The per-op roofline: every op group's bytes, FLOPs, rates, bound and fraction
 * of its roof; "unknown" where kvscope has no formula for the op. */
bool kvs_table_ops(struct kvs_table *t, const struct kvs_analysis *a, size_t max_rows);
/* "roofs on NVIDIA H200: HBM 4800 GB/s, dense BF16 989 TFLOP/s, FP8 1979 TFLOP/s; ..." */
void kvs_roofs_line(char *buf, size_t size, const struct kvs_analysis *a);

/* The report's header facts ("device", "trace", "steps", "by kind", "model",
 * "warning"), as label/value lines shared by the human formats. */
#define KVS_MAX_FACTS 8
struct kvs_fact {
    const char *label;
    char value[512];
};
size_t kvs_report_facts(const struct kvs_analysis *a, struct kvs_fact facts[KVS_MAX_FACTS]);

/* A finding's figures as the human formats show them after its id:
 * "recoverable 1.230 ms/step of GPU time" and "moves 856.3 MB/step (needed:
 * 6.7 MB)"; each empty when the finding has no such figure. */
struct kvs_finding_figures {
    char recoverable[96];
    char moves[160];
};
void kvs_finding_figures(const struct kvs_finding *x, struct kvs_finding_figures *out);

/* "copy/cast 12.40 ms (45.6%)" for each category with GPU time, in category
 * order; returns how many (0 when the categories sum to no time). */
#define KVS_CAT_PART_BUF 128
size_t kvs_category_parts(const struct kvs_analysis *a,
                          char parts[KVS_CAT_COUNT_][KVS_CAT_PART_BUF]);

#endif /* KVSCOPE_TABLE_H */
