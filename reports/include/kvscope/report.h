/* kvscope/report.h — render an analysis (and a comparison of two) for people
 * and for other tools.
 *
 * defines: enum kvs_format, struct kvs_render_options, kvs_format_parse, kvs_format_from_path,
 *          kvs_render_report, kvs_render_compare, kvs_render_summary,
 *          kvs_render_compare_summary, kvs_render_compare_junit, kvs_render_multirank,
 *          kvs_rank_section_fn, kvs_render_rank_section
 *
 * Renderers read the analysis struct and format it; they never recompute
 * analysis. A comparison is computed by kvs_compare() (kvscope/compare.h:
 * pairing groups by role, resolved/new findings, the verdict) and a
 * multi-rank summary by kvs_multirank() (kvscope/multirank.h); both are
 * rendered here in any format.
 * Formats: text (aligned tables; colour only when opt->color), markdown,
 * json (schemas kvscope.report/1 and kvscope.compare/1, docs/report-json.md),
 * html (one self-contained file with inline SVG; no network), junit (a
 * gated comparison's checks as JUnit XML).
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

/* JUNIT: a gated comparison's checks only (kvs_render_compare,
 * kvs_render_compare_junit); reports and multi-rank summaries refuse it. */
enum kvs_format {
    KVS_FORMAT_TEXT = 0, KVS_FORMAT_MARKDOWN, KVS_FORMAT_JSON, KVS_FORMAT_HTML, KVS_FORMAT_JUNIT
};

/* "text", "md"/"markdown", "json", "html", "junit" -> *out; KVS_STATUS_INVALID_ARGUMENT otherwise. */
KVS_API enum kvs_status kvs_format_parse(const char *name, enum kvs_format *out);

/* The format a file name's extension asks for (".html"/".htm", ".json",
 * ".md"/".markdown", ".txt"; any case) -> *out; KVS_STATUS_INVALID_ARGUMENT
 * when it names none. */
KVS_API enum kvs_status kvs_format_from_path(const char *path, enum kvs_format *out);

/* Writes a rank's own section of a multi-rank document to out: what
 * kvs_render_rank_section() wrote for that rank's full analysis earlier (a
 * caller that spools each rank's section as its trace is read keeps only a
 * summary of it, kvs_rank_summary_of in kvscope/rank_summary.h). */
typedef enum kvs_status (*kvs_rank_section_fn)(FILE *out, const struct kvs_analysis *a, void *user);

struct kvs_render_options {
    enum kvs_format format;
    bool color;          /* ANSI colour in text output (callers decide: TTY and no NO_COLOR) */
    int top_kernels;     /* rows in the top-kernels table; 0 = default (10) */
    struct kvs_logger log;
    /* kvs_render_multirank: each rank's own report (a rank not read from
     * its kvscope report) is written by this instead of rendered from its
     * analysis; NULL: rendered */
    kvs_rank_section_fn rank_section;
    void *rank_section_user;
};

KVS_API enum kvs_status kvs_render_report(FILE *out, const struct kvs_analysis *a,
                                          const struct kvs_render_options *opt);

/* Any format; junit needs a gated comparison (c->gate, kvscope/gate.h): the
 * gate's section comes first in text, md and html, and json carries it as
 * "gate". */
struct kvs_comparison; /* kvscope/compare.h */
KVS_API enum kvs_status kvs_render_compare(FILE *out, const struct kvs_comparison *c,
                                           const struct kvs_render_options *opt);

/* Gated comparisons cmp[0..n) (n >= 1, each with its gate) as one JUnit XML
 * document: a testsuite per comparison, a testcase per check, a <failure>
 * with its reason. opt->format must be KVS_FORMAT_JUNIT. */
KVS_API enum kvs_status kvs_render_compare_junit(FILE *out, const struct kvs_comparison *const *cmp,
                                                 size_t n, const struct kvs_render_options *opt);

/* The closing summary of a baseline against its fixes (kvs_summarize,
 * kvscope/compare.h): text ("IN SHORT") or markdown only; other formats
 * give KVS_STATUS_INVALID_ARGUMENT. */
struct kvs_summary; /* kvscope/compare.h */
KVS_API enum kvs_status kvs_render_summary(FILE *out, const struct kvs_summary *s,
                                           const struct kvs_render_options *opt);

/* The same for tools: a baseline's comparisons cmp[0..n) (n >= 1) and their
 * closing summary s as one kvscope.summary/1 JSON document (each comparison
 * a kvscope.compare/1 document; docs/report-json.md). JSON only: other
 * formats give KVS_STATUS_INVALID_ARGUMENT (text and md print each
 * comparison, then kvs_render_summary). */
KVS_API enum kvs_status kvs_render_compare_summary(FILE *out,
                                                   const struct kvs_comparison *const *cmp,
                                                   size_t n, const struct kvs_summary *s,
                                                   const struct kvs_render_options *opt);

struct kvs_multirank; /* kvscope/multirank.h */
/* The summary, then each rank's own report, in any format (json:
 * kvscope.multirank/1, holding kvscope.report/1 documents). */
KVS_API enum kvs_status kvs_render_multirank(FILE *out, const struct kvs_multirank *m,
                                             const struct kvs_render_options *opt);

/* One rank's own report exactly as kvs_render_multirank() places it in its
 * document in opt->format (text, md: the report; html: its body; json: the
 * kvscope.report/1 object indented as an entry of "reports"), for a caller
 * that writes it back through opt->rank_section. Thread safety: as every
 * renderer, one call per FILE; calls on different FILEs may run at once. */
KVS_API enum kvs_status kvs_render_rank_section(FILE *out, const struct kvs_analysis *a,
                                                const struct kvs_render_options *opt);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_REPORT_H */
