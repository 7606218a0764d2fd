/* cupti_records.h — one CUPTI activity record -> one kvscope trace record.
 * Handling a record is kept apart from walking a buffer (capture.c) so that
 * it is tested with fake records built in memory, without a GPU or libcupti
 * (tests/test_cupti_records.c: needs only the CUPTI headers).
 *
 * defines: struct kvs_cupti_names, kvs_cupti_convert, kvs_cupti_memcpy_kind,
 *          kvs_cupti_memory_kind, kvs_cupti_sync_name, kvs_cupti_overhead_name
 */
#ifndef KVSCOPE_CUPTI_RECORDS_H
#define KVSCOPE_CUPTI_RECORDS_H

#include <cupti.h>
#include <stdint.h>

#include "kvscope/trace_writer.h"

/* Names the converter cannot make itself (they need libcupti or the C++
 * runtime): API names by callback id, demangled kernel names. Both return
 * strings that outlive the written trace. NULL functions: the raw id/name. */
struct kvs_cupti_names {
    const char *(*api)(void *user, int driver, uint32_t cbid);
    const char *(*kernel)(void *user, const char *mangled);
    void *user;
    int64_t clock_offset_ns; /* subtracted from every CUPTI timestamp */
    uint64_t overhead_ns;    /* accumulates CUPTI's own overhead records */
};

/* Returns 1 when *out was filled, 0 for a record kvscope does not write
 * (unknown kind, other external-correlation kinds, invalid timestamps). */
int kvs_cupti_convert(struct kvs_cupti_names *names, const CUpti_Activity *rec,
                      struct kvs_trace_rec *out);

/* Kineto's spellings. */
const char *kvs_cupti_memcpy_kind(unsigned kind);   /* "HtoD", "DtoD", ... */
const char *kvs_cupti_memory_kind(unsigned kind);   /* "Pageable", "Device", ... */
const char *kvs_cupti_sync_name(unsigned type);     /* "Stream Sync", ... */
const char *kvs_cupti_overhead_name(unsigned kind); /* "Activity Buffer Request", ... */

#endif /* KVSCOPE_CUPTI_RECORDS_H */
