/* analysis_impl.h — what a struct kvs_analysis is allocated as: the public
 * struct first, then the memory its pointers point into, so that
 * kvs_analysis_free() frees any analysis, however it was made (analysis.c
 * from a trace, rank_summary.c from a kvscope.rank/1 summary).
 *
 * defines: struct kvs_analysis_impl
 *
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_ANALYSIS_IMPL_H
#define KVS_ANALYZERS_ANALYSIS_IMPL_H

#include "tables.h"
#include "kvscope/reader.h" /* struct kvs_intern, struct kvs_arena */
#include "kvscope/analysis.h"

struct kvs_analysis_impl {
    struct kvs_analysis pub;
    struct kvs_arena arena;
    struct kvs_intern strings; /* names the result points into */
};

#endif
