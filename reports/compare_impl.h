/* reports/compare_impl.h — private to reports/: the tables the text,
 * markdown and HTML compare pages share, built from the comparison that
 * kvs_compare() (kvscope/compare.h, analyzers/compare.c) computed.
 *
 * defines: kvs_cmp_table_steps, kvs_cmp_table_groups, kvs_gate_put_text, kvs_gate_put_md,
 *          kvs_gate_put_html, kvs_gate_put_json, kvs_render_junit_gates
 */
#ifndef KVSCOPE_COMPARE_IMPL_H
#define KVSCOPE_COMPARE_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "kvscope/compare.h"
#include "table.h"

bool kvs_cmp_table_steps(struct kvs_table *t, const struct kvs_comparison *c);
bool kvs_cmp_table_groups(struct kvs_table *t, const struct kvs_comparison *c, size_t max_rows);

/* A gated comparison's checks (kvscope/gate.h; render_gate.c): the GATE
 * section of the text, markdown and HTML pages, the "gate" object of
 * kvscope.compare/1, and the JUnit document of n gated comparisons. */
void kvs_gate_put_text(FILE *out, const struct kvs_gate *g, const struct kvs_render_options *opt);
void kvs_gate_put_md(FILE *out, const struct kvs_gate *g);
void kvs_gate_put_html(FILE *out, const struct kvs_gate *g);
void kvs_gate_put_json(struct kvs_jw *w, const struct kvs_gate *g);
enum kvs_status kvs_render_junit_gates(FILE *out, const struct kvs_comparison *const *cmp, size_t n,
                                       const struct kvs_render_options *opt);

#endif /* KVSCOPE_COMPARE_IMPL_H */
