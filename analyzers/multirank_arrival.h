/* multirank_arrival.h — the part of kvs_multirank() kept in its own file.
 *
 * defines: kvs_mr_arrival, kvs_mr_median
 *
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_MULTIRANK_ARRIVAL_H
#define KVS_ANALYZERS_MULTIRANK_ARRIVAL_H

#include <stdbool.h>
#include <stddef.h>

#include "kvscope/multirank.h"

/* m->arrival, each row's arrival_skew_ms and collective_ms, m->straggler,
 * straggler_stands_out and least_collective, from the rows' analyses (after
 * the step statistics: stands_out reads step_median_ms). false: out of
 * memory (the figures are then unknown). multirank_arrival.c */
bool kvs_mr_arrival(struct kvs_multirank *m);

/* sorts v[0..n) and returns its median; NAN when n is 0 */
double kvs_mr_median(double *v, size_t n);

#endif
