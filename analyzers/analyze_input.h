/* analyze_input.h — the analysis pipeline on an input the caller describes
 * fully: a path or bytes in memory, the reader's buffer sizes, a model
 * config already parsed.
 *
 * defines: struct kvs_analyze_input, kvs_analyze_input, kvs_analysis_options_check
 *
 * kvs_analyze_file() and kvs_analyze_memory() are this with default sizes;
 * tests and the fuzz harnesses (tests/fuzz/) pass tiny buffers so that small
 * inputs cross every refill and inflate boundary. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_ANALYZE_INPUT_H
#define KVS_ANALYZERS_ANALYZE_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "kvscope/analysis.h"
#include "models.h"

struct kvs_analyze_input {
    const char *path;         /* file, "-" for stdin, or the name of in-memory data */
    const void *data;         /* in-memory bytes when in_memory */
    size_t len;
    bool in_memory;
    size_t read_bufsize;      /* scanner buffer (bytes, >= 64); 0: default (1 MiB) */
    size_t source_chunk;      /* in-memory: raw bytes per read; 0: default (64 KiB) */
    const struct kvs_model *model; /* a parsed config, instead of opt->model; NULL: none */
};

enum kvs_status kvs_analyze_input(const struct kvs_analyze_input *in,
                                  const struct kvs_analysis_options *opt, struct kvs_analysis **out);

/* The errors of the options themselves (a bad --step-regex, an unknown
 * bundled model or KV dtype, negative counts), logged as the analysis would
 * log them, without reading an input: kvs_analyze_many() says them once, not
 * once per input. A model given as a file path is left to the analysis. */
enum kvs_status kvs_analysis_options_check(const struct kvs_analysis_options *opt);

#endif
