/* reports/compare_impl.h — private to reports/: the tables the text,
 * markdown and HTML compare pages share, built from the comparison that
 * kvs_compare() (kvscope/compare.h, analyzers/compare.c) computed.
 *
 * defines: kvs_cmp_table_steps, kvs_cmp_table_groups
 */
#ifndef KVSCOPE_COMPARE_IMPL_H
#define KVSCOPE_COMPARE_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "kvscope/compare.h"
#include "table.h"

bool kvs_cmp_table_steps(struct kvs_table *t, const struct kvs_comparison *c);
bool kvs_cmp_table_groups(struct kvs_table *t, const struct kvs_comparison *c, size_t max_rows);

#endif /* KVSCOPE_COMPARE_IMPL_H */
