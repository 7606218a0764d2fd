/* reader.h — read a Chrome-trace JSON file into retained records.
 *
 * defines: struct kvs_read_opts, kvs_read_trace, kvs_read_trace_memory
 *
 * Streams the file once (plain, gzip, or "-" for stdin) through the scanner:
 * header fields (deviceProperties, distributedInfo, the kvscope metadata)
 * are small and parsed with cJSON; the traceEvents array is decoded event by
 * event into struct kvs_trace_data without ever holding the document.
 * Accepts the JSON Object Format ({"traceEvents": [...], ...} with the
 * header before or after the events) and the JSON Array Format ([...]).
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_READER_H
#define KVS_ANALYZERS_READER_H

#include "kvscope/analysis.h"
#include "records.h"

struct kvs_read_opts {
    const struct kvs_logger *log;
    kvs_progress_fn progress;
    void *progress_user;
    /* does a cpu_op with this name delimit steps? asked once per distinct
     * name; NULL: names starting with "ProfilerStep#" */
    bool (*is_step_name)(void *user, const char *name);
    void *step_user;
    size_t bufsize;                /* scanner buffer; 0: default */
    size_t source_chunk;           /* in-memory input: raw bytes per read; 0: default */
};

/* Fill *t (zeroed by the caller; freed by the caller with
 * kvs_trace_data_free() whatever the outcome).
 * KVS_STATUS_OK; KVS_STATUS_TRUNCATED: the input ended inside the document,
 * *t holds every complete event before the cut (t->truncated); other
 * statuses: the error was logged (malformed JSON: byte offset and what was
 * expected). */
enum kvs_status kvs_read_trace(const char *path, const struct kvs_read_opts *opt,
                               struct kvs_trace_data *t);

/* The same over data[0..len) in memory (plain JSON or gzip, by magic);
 * name is for messages ("(memory)" when NULL). */
enum kvs_status kvs_read_trace_memory(const void *data, size_t len, const char *name,
                                      const struct kvs_read_opts *opt, struct kvs_trace_data *t);

#endif
