/* store.h — the capture's bounded memory, CPU only (no CUPTI), so that its
 * logic is unit-tested without a GPU (tests/test_trace_store.c):
 *
 *   struct kvs_pool        fixed-size activity buffers for CUPTI: handed out
 *                          from a free list, allocated lazily up to a cap,
 *                          returned full onto a ready list (completion order)
 *                          and kept there until written. Pool empty -> the
 *                          request is denied and counted; CUPTI then drops
 *                          records (and counts them). Every buffer handed
 *                          out is zeroed (so CUPTI need not zero it on the
 *                          launching thread), and kvs_pool_keep_stock keeps
 *                          a few zeroed ones ready from a thread of its own.
 *   struct kvs_host_store  ranges and ops recorded on CPU threads: records
 *                          in fixed chunks, names interned, all under a byte
 *                          cap; full -> the record is dropped and counted.
 *
 * defines: kvs_pool_*, kvs_host_store_*, KVS_POOL_ALIGN
 *
 * Threading: every function takes the structure's mutex for a few dozen
 * instructions and never calls out while holding it, so CUPTI's buffer
 * callbacks (on CUPTI's thread) and annotating threads can use them
 * concurrently; init/free/collect from the controlling thread.
 */
#ifndef KVSCOPE_STORE_H
#define KVSCOPE_STORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "kvscope/trace_writer.h"
#include "writer_internal.h"

// ----------------------------------------------------------------------------
// CUPTI buffer pool

#define KVS_POOL_ALIGN 64 /* CUPTI needs 8; a cache line is kinder */

struct kvs_pool_buf;

struct kvs_pool {
    pthread_mutex_t mu;
    size_t buf_bytes;
    unsigned max_buffers;
    unsigned allocated;          /* buffers created so far (<= max_buffers) */
    unsigned lent;               /* buffers CUPTI holds right now */
    unsigned nready;
    unsigned gen;                /* stamped on each buffer completed (kvs_pool_set_gen) */
    uint64_t denied;             /* requests refused: pool exhausted */
    struct kvs_pool_buf *free_list;  /* zeroed */
    struct kvs_pool_buf *dirty_list; /* free, not zeroed: zeroed before lending */
    unsigned nfree;                  /* on free_list */
    struct kvs_pool_buf *ready_head, *ready_tail;
    /* kvs_pool_keep_stock: a thread keeping `stock` zeroed buffers free */
    unsigned stock;
    int stock_thread, stock_stop;
    pthread_t stock_tid;
    pthread_cond_t stock_cv;
};

/* A buffer of records as CUPTI returned it. */
struct kvs_pool_view {
    const uint8_t *data;
    size_t valid;
    unsigned gen; /* the pool's gen when it was completed */
};

int kvs_pool_init(struct kvs_pool *p, size_t buf_bytes, unsigned max_buffers); /* 0 ok */

/* Keep up to n zeroed buffers allocated and free (within the cap), made on
 * a thread of the pool's own so that kvs_pool_acquire finds one at once
 * (allocating and zeroing MiBs takes a millisecond or two, on whichever
 * thread CUPTI asks from: the program's). Returns 0, or -1 when the thread
 * cannot start (acquire then zeroes inline). Once, before use. */
int kvs_pool_keep_stock(struct kvs_pool *p, unsigned n);

/* A zeroed buffer for CUPTI (aligned, *size = buf_bytes), or NULL when the
 * pool is exhausted or malloc failed (counted in denied). */
uint8_t *kvs_pool_acquire(struct kvs_pool *p, size_t *size);

/* CUPTI is done with data (from kvs_pool_acquire): with records it joins the
 * ready list, empty it goes back to the free list (to be zeroed again). */
void kvs_pool_complete(struct kvs_pool *p, uint8_t *data, size_t valid);

/* Buffers completed from now on carry gen (the capture's CUPTI attachment:
 * correlation ids start again after a detach). */
void kvs_pool_set_gen(struct kvs_pool *p, unsigned gen);

/* Copies up to max views of the ready list, oldest first; returns how many. */
size_t kvs_pool_ready(struct kvs_pool *p, struct kvs_pool_view *out, size_t max);

/* Moves every ready buffer back to the free list (their records are gone). */
void kvs_pool_recycle(struct kvs_pool *p);

/* Stops the stock thread, frees all buffers. Returns the number still lent
 * to CUPTI, which are leaked rather than freed under CUPTI's feet (0 after
 * a forced flush). */
unsigned kvs_pool_free(struct kvs_pool *p);

// ----------------------------------------------------------------------------
// host records

struct kvs_host_chunk;

struct kvs_host_store {
    pthread_mutex_t mu;
    size_t max_bytes, used_bytes;
    uint64_t added, dropped;
    struct kvs_host_chunk *recs_head, *recs_tail; /* record chunks, in order */
    struct kvs_host_chunk *bytes;                 /* string/tensor chunks */
    struct kvs_map names;                         /* string hash -> interned copy */
};

/* Sentinel end time of a record still open. */
#define KVS_HOST_OPEN INT64_MIN

int kvs_host_store_init(struct kvs_host_store *s, size_t max_bytes); /* 0 ok */

/* The longest "Input Dims" / "Input type" text an op keeps (an op with a
 * longer one, such as a _foreach op over hundreds of tensors, is kept
 * without shapes); within the store's 64 KiB byte chunks. */
#define KVS_HOST_SHAPE_MAX ((size_t)32 << 10)

/* Copy a host record (KVS_TREC_RANGE or KVS_TREC_OP) into the store: `r`'s
 * name, tensors (with their dtype strings) and shape texts (input_dims,
 * input_types) are copied, u.host.domain is
 * kept as a pointer (it must outlive the store). Returns the stored record —
 * its end_ns may be set later with kvs_host_store_close() — or NULL when the
 * store is full (counted in dropped). */
struct kvs_trace_rec *kvs_host_store_add(struct kvs_host_store *s, const struct kvs_trace_rec *r);

/* Set the end time of a stored record (from any thread). */
void kvs_host_store_close(struct kvs_trace_rec *r, int64_t end_ns);

/* An interned copy of str in the store (NULL when full). */
const char *kvs_host_store_intern(struct kvs_host_store *s, const char *str);

/* Number of records stored. */
size_t kvs_host_store_count(struct kvs_host_store *s);

/* Copy up to max records into out, oldest first; records still open get
 * end_ns = open_end. Returns how many were copied. The copies share the
 * store's strings: keep the store alive while using them. */
size_t kvs_host_store_collect(struct kvs_host_store *s, struct kvs_trace_rec *out, size_t max,
                              int64_t open_end);

void kvs_host_store_free(struct kvs_host_store *s);

#endif /* KVSCOPE_STORE_H */
