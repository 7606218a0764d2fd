/* reports/report_impl.h — private to reports/: the JSON writer, number and
 * name formatting shared by the renderers, and the per-format entry points
 * that render.c dispatches to.
 *
 * defines: struct kvs_jw (+ kvs_jw_*), kvs_fmt_* (human units), kvs_short_*,
 *          kvs_fmt_dup, kvs_strv_push (strings a result owns),
 *          kvs_put_html, kvs_put_md, kvs_put_{text,md,html}_items, kvs_render_{json,text,md,html}_report,
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
void kvs_jw_obj(struct kvs_jw *w);
void kvs_jw_obj_end(struct kvs_jw *w);
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
/* An array of n strings; compact: on one line. */
void kvs_jw_strs(struct kvs_jw *w, char *const *v, size_t n, bool compact);
/* Write `json` (JSON text) re-formatted through the writer; false (and
 * nothing written) when it does not parse. */
bool kvs_jw_json_text(struct kvs_jw *w, const char *json);

/* Shortest "%.*g" text of v that reads back exactly (<= 17 digits). */
void kvs_fmt_double_exact(char *buf, size_t size, double v);

// ----------------------------------------------------------------------------
// human units (fmt.c). Each returns buf. Non-finite values print as "-".

enum { KVS_FMT_BUF = 48 };
char *kvs_fmt_bytes(char *buf, double bytes);     /* "856.3 MB", "66.8 GB", "512 B" */
char *kvs_fmt_gbps(char *buf, double gbps);       /* "985 GB/s", "12.4 GB/s" */
char *kvs_fmt_ms(char *buf, double ms);           /* "52.40", "0.861", "120.3" (no unit) */
char *kvs_fmt_pct(char *buf, double fraction);    /* "20.5%" */
char *kvs_fmt_count(char *buf, double n);         /* "1,234,567"; fractional: "61.0" */
char *kvs_fmt_signed_pct(char *buf, double frac); /* "+29.1%", "-64.0%" */

/* Strings a result owns (kvs_compare, kvs_multirank build sentences): when
 * memory runs out they set *oom and carry on (kvs_fmt_dup yields NULL,
 * kvs_strv_push skips NULL), so a builder checks *oom once at the end. */
char *kvs_fmt_dup(bool *oom, const char *fmt, ...) KVS_PRINTF(2, 3); /* malloc'ed */
/* Append s (owned: freed when it cannot be kept) to a growing string array. */
void kvs_strv_push(bool *oom, char ***arr, size_t *n, char *s);

/* "c10::BFloat16" -> "bf16", "c10::Float8_e4m3fn" -> "fp8_e4m3fn", "float" -> "f32". */
const char *kvs_short_dtype(const char *name);

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

/* The group's dims in a short form: "[131072,1,576] x2" when all tensors
 * share them, else "[a,b] [c]". Falls back to the group's dims text. */
char *kvs_short_dims(char *buf, size_t size, const struct kvs_group *g);
/* "bf16, fp8_e4m3fn" in the op's order (for copy_: destination first). */
char *kvs_short_dtypes(char *buf, size_t size, const struct kvs_group *g);

const char *kvs_severity_name(enum kvs_severity s); /* "info", "warn", "high" */
const char *kvs_cat_label(int cat);                 /* "copy/cast", ..., "idle" for COUNT_ */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
size_t kvs_utf8_len(const unsigned char *s);
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

/* Finite, else 0: for arithmetic on values a trace may have left undefined. */
static inline double kvs_finite_or0(double v)
{
    return (v == v && v - v == 0) ? v : 0;
}

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
enum kvs_status kvs_render_text_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt);
enum kvs_status kvs_render_md_compare(FILE *out, const struct kvs_comparison *c,
                                      const struct kvs_render_options *opt);
enum kvs_status kvs_render_html_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt);

#endif /* KVSCOPE_REPORT_IMPL_H */
