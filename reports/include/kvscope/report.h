/* kvscope/report.h — render an analysis (and a comparison of two) for people
 * and for other tools.
 *
 * defines: enum kvs_format, struct kvs_render_options, kvs_format_parse, kvs_format_from_path,
 *          kvs_render_report, struct kvs_comparison, kvs_compare,
 *          kvs_comparison_free, kvs_render_compare, kvs_multirank,
 *          kvs_multirank_free, kvs_render_multirank
 *
 * Renderers read the analysis struct and format it; they never recompute
 * analysis. The comparison is computed once by kvs_compare() (pairing groups
 * by role, deltas, resolved/new findings, the verdict) and rendered by
 * kvs_render_compare() in any format.
 * Formats: text (aligned tables; colour only when opt->color), markdown,
 * json (schemas kvscope.report/1 and kvscope.compare/1, docs/report-json.md),
 * html (one self-contained file with inline SVG; no network).
 */
#ifndef KVSCOPE_REPORT_H
#define KVSCOPE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kvscope/analysis.h"
#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

enum kvs_format { KVS_FORMAT_TEXT = 0, KVS_FORMAT_MARKDOWN, KVS_FORMAT_JSON, KVS_FORMAT_HTML };

/* "text", "md"/"markdown", "json", "html" -> *out; KVS_STATUS_INVALID_ARGUMENT otherwise. */
KVS_API enum kvs_status kvs_format_parse(const char *name, enum kvs_format *out);

/* The format a file name's extension asks for (".html"/".htm", ".json",
 * ".md"/".markdown", ".txt"; any case) -> *out; KVS_STATUS_INVALID_ARGUMENT
 * when it names none. */
KVS_API enum kvs_status kvs_format_from_path(const char *path, enum kvs_format *out);

struct kvs_render_options {
    enum kvs_format format;
    bool color;          /* ANSI colour in text output (callers decide: TTY and no NO_COLOR) */
    int top_kernels;     /* rows in the top-kernels table; 0 = default (10) */
    struct kvs_logger log;
};

KVS_API enum kvs_status kvs_render_report(FILE *out, const struct kvs_analysis *a,
                                          const struct kvs_render_options *opt);

struct kvs_comparison; /* opaque: built by kvs_compare, read by kvs_render_compare */

/* batch: sequences per step for tokens/s (0 = unknown; then the analyses'
 * own steps.tokens_per_s is used if set). */
KVS_API enum kvs_status kvs_compare(const struct kvs_analysis *before,
                                    const struct kvs_analysis *after, int batch,
                                    struct kvs_comparison **out);
KVS_API void kvs_comparison_free(struct kvs_comparison *c);
KVS_API enum kvs_status kvs_render_compare(FILE *out, const struct kvs_comparison *c,
                                           const struct kvs_render_options *opt);

/* Several ranks of one run, one analysis each (any order). A rank's number
 * is the one its trace names (Kineto's distributedInfo, kvscope's metadata)
 * when every trace names a distinct rank, else its position in `ranks`.
 * The summary holds each rank's step time, GPU busy time, computation and
 * communication time and their overlap, the straggler, findings by rank and
 * notes in plain words. It points into the analyses: keep them until
 * kvs_multirank_free(). */
struct kvs_multirank; /* opaque */
KVS_API enum kvs_status kvs_multirank(const struct kvs_analysis *const *ranks, size_t n,
                                      struct kvs_multirank **out);
KVS_API void kvs_multirank_free(struct kvs_multirank *m);
/* The summary, then each rank's own report, in any format (json:
 * kvscope.multirank/1, holding kvscope.report/1 documents). */
KVS_API enum kvs_status kvs_render_multirank(FILE *out, const struct kvs_multirank *m,
                                             const struct kvs_render_options *opt);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_REPORT_H */
