/* reports/report_impl.h — private to reports/: the JSON writer, number and
 * name formatting shared by the renderers, and the per-format entry points
 * that render.c dispatches to.
 *
 * defines: struct kvs_jw (+ kvs_jw_*), kvs_truncate, kvs_severity_name,
 *          kvs_cat_label, kvs_put_text, kvs_put_wrapped, kvs_put_html, kvs_put_md,
 *          kvs_put_{text,md,html}_items, kvs_render_{json,text,md,html}_report,
 *          kvs_render_{json,text,md,html}_compare, kvs_render_{json,text,md,html}_multirank
 *
 * Formatting helpers write into caller buffers (no static storage), so the
 * renderers stay reentrant.
 */
#ifndef KVSCOPE_REPORT_IMPL_H
#define KVSCOPE_REPORT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvscope/kernel_name.h"
#include "kvscope/report.h"
#include "kvscope/units.h"

// ----------------------------------------------------------------------------
// JSON writer (json_writer.c): pretty-printed, two-space indent, keys in the
// order written, strings escaped per RFC 8259, non-finite numbers as null.

#define KVS_JW_MAX_DEPTH 32

struct kvs_jw {
    FILE *f;
    int depth;
    bool need_comma[KVS_JW_MAX_DEPTH];
    bool after_key;
    bool compact[KVS_JW_MAX_DEPTH]; /* containers written on one line (dims) */
};

void kvs_jw_init(struct kvs_jw *w, FILE *f);
/* The separator and indentation before a value written by other means
 * (a rank's spooled report, kvs_render_multirank). */
void kvs_jw_sep(struct kvs_jw *w);
void kvs_jw_obj(struct kvs_jw *w);
void kvs_jw_obj_end(struct kvs_jw *w);
/* An object whose first key is "schema": schema (every kvscope.<name>/1 object). */
void kvs_jw_obj_schema(struct kvs_jw *w, const char *schema);
void kvs_jw_arr(struct kvs_jw *w);
void kvs_jw_arr_compact(struct kvs_jw *w); /* an array on one line: [1, 2, 3] */
void kvs_jw_arr_end(struct kvs_jw *w);
void kvs_jw_key(struct kvs_jw *w, const char *key);
void kvs_jw_str(struct kvs_jw *w, const char *s); /* NULL -> null */
void kvs_jw_num(struct kvs_jw *w, double v);      /* NaN/inf -> null */
void kvs_jw_int(struct kvs_jw *w, int64_t v);
void kvs_jw_bool(struct kvs_jw *w, bool v);
void kvs_jw_null(struct kvs_jw *w);
/* v when known, else null (for values whose 0 means "unknown"). */
void kvs_jw_num_or_null(struct kvs_jw *w, double v, bool known);
void kvs_jw_int_or_null(struct kvs_jw *w, int64_t v, bool known);
void kvs_jw_bool_or_null(struct kvs_jw *w, bool v, bool known);
/* [a, b] on one line when known, else null. */
void kvs_jw_int_pair_or_null(struct kvs_jw *w, int64_t a, int64_t b, bool known);
/* An array of n strings; compact: on one line. */
void kvs_jw_strs(struct kvs_jw *w, char *const *v, size_t n, bool compact);

/* Shortest "%.*g" text of v that reads back exactly (<= 17 digits). */
void kvs_fmt_double_exact(char *buf, size_t size, double v);

// ----------------------------------------------------------------------------
// text for cells and terminals (fmt.c); numbers with units, short dtype and
// dims names: kvscope/units.h

/* kvs_short_kernel: kvscope/kernel_name.h (shared with the analyzer) */

/* s cut to width bytes with "..." (for names that must keep their namespaces). */
char *kvs_truncate(char *buf, size_t size, const char *s, size_t width);
/* What "no findings" means for this analysis: nothing stands out, or there
 * was no GPU activity to judge (a CPU-only trace, or a profiler that did not
 * record the GPU side) — never an all-clear for a trace without GPU data. */
const char *kvs_no_findings_text(const struct kvs_analysis *a);
/* widths of the dims and dtypes columns in the tables: an op with many
 * inputs (a compiled graph's 16 tensors) would otherwise stretch every row
 * of its table past 300 columns; JSON keeps them whole */
#define KVS_DIMS_WIDTH 40
#define KVS_DTYPES_WIDTH 32

const char *kvs_severity_name(enum kvs_severity s); /* "info", "warn", "high" */
const char *kvs_cat_label(int cat);                 /* "copy/cast", ..., "idle" for COUNT_ */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
size_t kvs_utf8_len(const unsigned char *s);
/* At a byte >= 0x80: write its valid UTF-8 character, or U+FFFD for an
 * invalid byte (as the JSON writer does); the bytes consumed (1..4). For
 * markdown and HTML, which pass text through. */
size_t kvs_put_utf8(FILE *f, const char *s);
/* Text for a terminal: control characters and invalid UTF-8 bytes as '?',
 * so nothing from a trace moves the cursor or sets colours. */
void kvs_put_text(FILE *f, const char *s);
void kvs_put_text_n(FILE *f, const char *s, size_t n);

/* Display width of UTF-8 text (code points; no wide-glyph tables). */
size_t kvs_text_width(const char *s);

/* Free text for a terminal, wrapped at KVS_WRAP columns; continuation lines
 * indented by `indent` spaces; `col` is where the first line starts. */
#define KVS_WRAP 100
void kvs_put_wrapped(FILE *f, const char *s, size_t indent, size_t col);

/* Text escaped for HTML element content and attribute values. */
void kvs_put_html(FILE *f, const char *s);
/* Text escaped for a markdown table cell (| and newlines, backticks kept out). */
void kvs_put_md(FILE *f, const char *s);

/* Sentences (a verdict, notes) as list items: "  - " and wrapped for a
 * terminal, "- " for markdown, <li> for HTML (inside the caller's <ul>). */
void kvs_put_text_items(FILE *f, char *const *items, size_t n);
void kvs_put_md_items(FILE *f, char *const *items, size_t n);
void kvs_put_html_items(FILE *f, char *const *items, size_t n);

// ----------------------------------------------------------------------------
// renderers (one file each); the caller checked arguments.

enum kvs_status kvs_render_json_report(FILE *out, const struct kvs_analysis *a,
                                       const struct kvs_render_options *opt);
enum kvs_status kvs_render_text_report(FILE *out, const struct kvs_analysis *a,
                                       const struct kvs_render_options *opt);
enum kvs_status kvs_render_md_report(FILE *out, const struct kvs_analysis *a,
                                     const struct kvs_render_options *opt);
enum kvs_status kvs_render_html_report(FILE *out, const struct kvs_analysis *a,
                                       const struct kvs_render_options *opt);
/* several ranks (render_multirank.c; the summary: multirank_impl.h) */
enum kvs_status kvs_render_text_multirank(FILE *out, const struct kvs_multirank *m,
                                          const struct kvs_render_options *opt);
enum kvs_status kvs_render_md_multirank(FILE *out, const struct kvs_multirank *m,
                                        const struct kvs_render_options *opt);
enum kvs_status kvs_render_html_multirank(FILE *out, const struct kvs_multirank *m,
                                          const struct kvs_render_options *opt);
enum kvs_status kvs_render_json_multirank(FILE *out, const struct kvs_multirank *m,
                                          const struct kvs_render_options *opt);

enum kvs_status kvs_render_json_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt);
enum kvs_status kvs_render_json_compare_summary(FILE *out, const struct kvs_comparison *const *cmp,
                                                size_t n, const struct kvs_summary *s);
enum kvs_status kvs_render_text_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt);
enum kvs_status kvs_render_md_compare(FILE *out, const struct kvs_comparison *c,
                                      const struct kvs_render_options *opt);
enum kvs_status kvs_render_html_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt);

#endif /* KVSCOPE_REPORT_IMPL_H */
