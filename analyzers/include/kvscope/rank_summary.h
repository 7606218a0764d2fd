/* kvscope/rank_summary.h — a rank's kvscope.rank/1 summary read back from
 * the kvscope JSON report it is part of: the map step of a fleet
 * (`kvscope report RANK_TRACE --format json` on each rank, anywhere) and its
 * reduce (`kvscope report A.json B.json ...`) give the same view across ranks
 * as reading the traces (docs/report-json.md, kvscope.rank/1;
 * tests/test_rank_summary.py).
 *
 * defines: kvs_rank_report_sniff, kvs_rank_summary_read, kvs_rank_summary_of,
 *          KVS_RANK_REPORT_MAX_BYTES
 *
 *   bool is = false;
 *   kvs_rank_report_sniff("r3.json", &is);
 *   if (is) kvs_rank_summary_read("r3.json", &opt, &a);   // a->trace.report_path set
 *
 * The analysis read holds what kvs_multirank() needs and nothing else: the
 * trace's identity (path, device, rank, world size, producer, GPUs), the
 * step figures, every step (index, times, busy and communication time) with
 * the collectives it launched, and the findings (id, recoverable time, the
 * match of its copy/cast group); no groups, kernels or ops to report on.
 * Thread safety: one analysis per call; calls are independent.
 */
#ifndef KVSCOPE_RANK_SUMMARY_H
#define KVSCOPE_RANK_SUMMARY_H

#include <stdbool.h>

#include "kvscope/analysis.h"
#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A report larger than this (after decompression) is refused (KVS_STATUS_LIMIT). */
#define KVS_RANK_REPORT_MAX_BYTES ((size_t)1 << 30)

/* *is = whether path is a kvscope JSON report: a regular file (plain or
 * gzip) whose JSON object's first key is "schema" naming kvscope.report/1
 * (as kvscope writes it; kvs_kvscope_doc_sniff, kvscope/reader.h). Pipes,
 * stdin ("-") and other files are never
 * read (they are traces). KVS_STATUS_OK, or KVS_STATUS_IO when the file
 * cannot be read (then *is is false and the trace reader says why). */
KVS_API enum kvs_status kvs_rank_report_sniff(const char *path, bool *is);

/* Read the kvscope.rank/1 summary of the report at path into a new
 * analysis (free it with kvs_analysis_free). Messages go to opt->log (NULL:
 * stderr); the other options are not used (the summary carries the figures
 * its report was made with). KVS_STATUS_PARSE names what is wrong (not
 * JSON, no "rank" key — a report of an older kvscope —, another schema, a
 * key of the wrong type); KVS_STATUS_LIMIT over KVS_RANK_REPORT_MAX_BYTES. */
KVS_API enum kvs_status kvs_rank_summary_read(const char *path, const struct kvs_analysis_options *opt,
                                              struct kvs_analysis **out);

/* The same summary of an analysis in memory, as a new analysis (free it
 * with kvs_analysis_free): what its kvscope.rank/1 would read back, copied
 * (the numbers unchanged), a few hundred bytes a step. kvscope report keeps
 * this of each rank, not the whole analysis, once the rank's own report is
 * written (memory bounded by the traces read at once, not by the ranks).
 * KVS_STATUS_NO_MEMORY, or KVS_STATUS_INVALID_ARGUMENT. */
KVS_API enum kvs_status kvs_rank_summary_of(const struct kvs_analysis *a, struct kvs_analysis **out);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_RANK_SUMMARY_H */
