/* store.c — the capture's bounded memory: the CUPTI buffer pool with its
 * ready list, and the store of ranges/ops recorded on CPU threads
 * (store.h). No CUPTI; tested in tests/test_trace_store.c.
 */
#include "store.h"

#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------
// pool: each buffer is one allocation, a header then the data CUPTI sees,
// so the data pointer CUPTI hands back leads to the header without a lookup

struct kvs_pool_buf {
    struct kvs_pool_buf *next;
    size_t valid;
    unsigned gen;
};

#define HDR ((sizeof(struct kvs_pool_buf) + KVS_POOL_ALIGN - 1) / KVS_POOL_ALIGN * KVS_POOL_ALIGN)

static uint8_t *buf_data(struct kvs_pool_buf *b) { return (uint8_t *)b + HDR; }
static struct kvs_pool_buf *buf_of(uint8_t *data) { return (struct kvs_pool_buf *)(data - HDR); }

int kvs_pool_init(struct kvs_pool *p, size_t buf_bytes, unsigned max_buffers)
{
    memset(p, 0, sizeof *p);
    if (buf_bytes < 1024 || max_buffers == 0)
        return -1;
    p->buf_bytes = (buf_bytes + KVS_POOL_ALIGN - 1) / KVS_POOL_ALIGN * KVS_POOL_ALIGN;
    p->max_buffers = max_buffers;
    if (pthread_mutex_init(&p->mu, NULL) != 0)
        return -1;
    if (pthread_cond_init(&p->stock_cv, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        return -1;
    }
    return 0;
}

/* Lock held. A free buffer that is not zeroed yet (dirty, or new within the
 * cap), or NULL; the caller zeroes it outside the lock. */
static struct kvs_pool_buf *take_unzeroed(struct kvs_pool *p)
{
    struct kvs_pool_buf *b = p->dirty_list;
    if (b) {
        p->dirty_list = b->next;
        return b;
    }
    if (p->allocated < p->max_buffers) {
        /* allocate under the lock: rare (at most max_buffers times) and it
         * keeps `allocated` an exact cap */
        void *mem = NULL;
        if (posix_memalign(&mem, KVS_POOL_ALIGN, HDR + p->buf_bytes) == 0) {
            p->allocated++;
            return mem;
        }
    }
    return NULL;
}

static int stock_wanted(const struct kvs_pool *p)
{
    return p->nfree < p->stock && (p->dirty_list || p->allocated < p->max_buffers);
}

static void *stock_main(void *arg)
{
    struct kvs_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stock_stop && !stock_wanted(p))
            pthread_cond_wait(&p->stock_cv, &p->mu);
        if (p->stock_stop)
            break;
        struct kvs_pool_buf *b = take_unzeroed(p);
        if (!b) { /* malloc failed: acquire will try again and count it */
            p->stock = 0;
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        memset(buf_data(b), 0, p->buf_bytes); /* also faults the pages in, here */
        pthread_mutex_lock(&p->mu);
        b->next = p->free_list;
        p->free_list = b;
        p->nfree++;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int kvs_pool_keep_stock(struct kvs_pool *p, unsigned n)
{
    if (!n || p->stock_thread)
        return 0;
    p->stock = n;
    if (pthread_create(&p->stock_tid, NULL, stock_main, p) != 0) {
        p->stock = 0;
        return -1;
    }
    p->stock_thread = 1;
    return 0;
}

uint8_t *kvs_pool_acquire(struct kvs_pool *p, size_t *size)
{
    *size = 0;
    pthread_mutex_lock(&p->mu);
    struct kvs_pool_buf *b = p->free_list;
    int zero = 0;
    if (b) {
        p->free_list = b->next;
        p->nfree--;
    } else {
        b = take_unzeroed(p);
        zero = b != NULL;
    }
    if (!b) {
        p->denied++;
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    p->lent++;
    if (p->stock_thread && stock_wanted(p))
        pthread_cond_signal(&p->stock_cv);
    pthread_mutex_unlock(&p->mu);
    if (zero) /* the stock was empty: what CUPTI would otherwise do itself */
        memset(buf_data(b), 0, p->buf_bytes);
    b->next = NULL;
    b->valid = 0;
    *size = p->buf_bytes;
    return buf_data(b);
}

void kvs_pool_complete(struct kvs_pool *p, uint8_t *data, size_t valid)
{
    if (!data)
        return;
    struct kvs_pool_buf *b = buf_of(data);
    b->valid = valid <= p->buf_bytes ? valid : p->buf_bytes;
    b->next = NULL;
    pthread_mutex_lock(&p->mu);
    p->lent--;
    b->gen = p->gen;
    if (b->valid == 0) { /* CUPTI may have written past what it reports */
        b->next = p->dirty_list;
        p->dirty_list = b;
        if (p->stock_thread && stock_wanted(p))
            pthread_cond_signal(&p->stock_cv);
    } else {
        if (p->ready_tail)
            p->ready_tail->next = b;
        else
            p->ready_head = b;
        p->ready_tail = b;
        p->nready++;
    }
    pthread_mutex_unlock(&p->mu);
}

size_t kvs_pool_ready(struct kvs_pool *p, struct kvs_pool_view *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&p->mu);
    for (struct kvs_pool_buf *b = p->ready_head; b && n < max; b = b->next)
        out[n++] = (struct kvs_pool_view){buf_data(b), b->valid, b->gen};
    pthread_mutex_unlock(&p->mu);
    return n;
}

void kvs_pool_set_gen(struct kvs_pool *p, unsigned gen)
{
    pthread_mutex_lock(&p->mu);
    p->gen = gen;
    pthread_mutex_unlock(&p->mu);
}

void kvs_pool_recycle(struct kvs_pool *p)
{
    pthread_mutex_lock(&p->mu);
    if (p->ready_tail) { /* full of old records: zeroed before they are lent again */
        p->ready_tail->next = p->dirty_list;
        p->dirty_list = p->ready_head;
    }
    p->ready_head = p->ready_tail = NULL;
    p->nready = 0;
    if (p->stock_thread && stock_wanted(p))
        pthread_cond_signal(&p->stock_cv);
    pthread_mutex_unlock(&p->mu);
}

unsigned kvs_pool_free(struct kvs_pool *p)
{
    if (!p->max_buffers)
        return 0;
    if (p->stock_thread) {
        pthread_mutex_lock(&p->mu);
        p->stock_stop = 1;
        pthread_cond_signal(&p->stock_cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->stock_tid, NULL);
        p->stock_thread = 0;
    }
    kvs_pool_recycle(p);
    pthread_mutex_lock(&p->mu);
    struct kvs_pool_buf *lists[2] = {p->free_list, p->dirty_list};
    for (int l = 0; l < 2; l++)
        for (struct kvs_pool_buf *b = lists[l], *next; b; b = next) {
            next = b->next;
            free(b);
        }
    p->free_list = p->dirty_list = NULL;
    p->nfree = 0;
    unsigned lent = p->lent;
    pthread_mutex_unlock(&p->mu);
    pthread_cond_destroy(&p->stock_cv);
    pthread_mutex_destroy(&p->mu);
    return lent;
}

// ----------------------------------------------------------------------------
// host store

#define CHUNK_RECS 1024
#define CHUNK_BYTES (64 * 1024)

struct kvs_host_chunk {
    struct kvs_host_chunk *next;
    size_t used; /* records or bytes */
    union {
        struct kvs_trace_rec recs[CHUNK_RECS];
        char bytes[CHUNK_BYTES];
        max_align_t align_;
    } u;
};

int kvs_host_store_init(struct kvs_host_store *s, size_t max_bytes)
{
    memset(s, 0, sizeof *s);
    s->max_bytes = max_bytes;
    if (kvs_map_init(&s->names, 256) != 0)
        return -1;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        kvs_map_free(&s->names);
        return -1;
    }
    return 0;
}

static struct kvs_host_chunk *new_chunk(struct kvs_host_store *s)
{
    if (s->used_bytes + sizeof(struct kvs_host_chunk) > s->max_bytes)
        return NULL;
    struct kvs_host_chunk *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    s->used_bytes += sizeof *c;
    c->next = NULL;
    c->used = 0;
    return c;
}

/* n bytes, 8-aligned, from the byte chunks; NULL when full. Lock held. */
static void *bytes_alloc(struct kvs_host_store *s, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (n > CHUNK_BYTES)
        return NULL;
    if (!s->bytes || s->bytes->used + n > CHUNK_BYTES) {
        struct kvs_host_chunk *c = new_chunk(s);
        if (!c)
            return NULL;
        c->next = s->bytes;
        s->bytes = c;
    }
    void *p = s->bytes->u.bytes + s->bytes->used;
    s->bytes->used += n;
    return p;
}

static uint64_t fnv1a(const char *str)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)str; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* An interned copy of str (NULL when full). Lock held. Names repeat (the
 * same op every layer of every step), so each distinct one is stored once;
 * a hash collision between two names just stores the second uninterned. */
static const char *intern_cut(struct kvs_host_store *s, const char *str, size_t max)
{
    uint64_t h = fnv1a(str), v;
    if (kvs_map_get(&s->names, h, &v) && strcmp((const char *)(uintptr_t)v, str) == 0)
        return (const char *)(uintptr_t)v;
    size_t n = strlen(str);
    if (n > max)
        n = max;
    char *copy = bytes_alloc(s, n + 1);
    if (!copy)
        return NULL;
    memcpy(copy, str, n);
    copy[n] = '\0';
    if (!kvs_map_get(&s->names, h, NULL))
        kvs_map_put(&s->names, h, (uint64_t)(uintptr_t)copy); /* failure: just not interned */
    return copy;
}

/* names longer than 4095 bytes are cut, not dropped */
static const char *intern(struct kvs_host_store *s, const char *str)
{
    return intern_cut(s, str, 4095);
}

/* An op's shape text (JSON: never cut): interned whole; "" when longer than
 * KVS_HOST_SHAPE_MAX (the op keeps no shapes); NULL when the store is full.
 * Shapes repeat as names do (the same op every layer of every step). */
static const char *intern_shape(struct kvs_host_store *s, const char *str)
{
    return strlen(str) > KVS_HOST_SHAPE_MAX ? "" : intern_cut(s, str, KVS_HOST_SHAPE_MAX);
}

struct kvs_trace_rec *kvs_host_store_add(struct kvs_host_store *s, const struct kvs_trace_rec *r)
{
    pthread_mutex_lock(&s->mu);
    struct kvs_trace_rec *out = NULL;
    const char *name = intern(s, r->name ? r->name : "");
    struct kvs_tensor_desc *t = NULL;
    int nt = r->kind == KVS_TREC_OP && r->u.host.tensors ? r->u.host.ntensors : 0;
    if (!name)
        goto full;
    if (nt > 0) {
        t = bytes_alloc(s, (size_t)nt * sizeof *t);
        if (!t)
            goto full;
        for (int i = 0; i < nt; i++) {
            t[i] = r->u.host.tensors[i];
            if (t[i].dtype && !(t[i].dtype = intern(s, t[i].dtype)))
                goto full;
        }
    }
    const char *dims = NULL, *types = NULL;
    if (r->kind == KVS_TREC_OP && r->u.host.input_dims && r->u.host.input_types) {
        if (!(dims = intern_shape(s, r->u.host.input_dims)) ||
            !(types = intern_shape(s, r->u.host.input_types)))
            goto full;
        if (!*dims || !*types)
            dims = types = NULL;
    }
    if (!s->recs_tail || s->recs_tail->used == CHUNK_RECS) {
        struct kvs_host_chunk *c = new_chunk(s);
        if (!c)
            goto full;
        if (s->recs_tail)
            s->recs_tail->next = c;
        else
            s->recs_head = c;
        s->recs_tail = c;
    }
    out = &s->recs_tail->u.recs[s->recs_tail->used];
    *out = *r;
    out->name = name;
    out->u.host.ntensors = nt;
    out->u.host.tensors = t;
    out->u.host.input_dims = dims;
    out->u.host.input_types = types;
    s->recs_tail->used++;
    s->added++;
    pthread_mutex_unlock(&s->mu);
    return out;
full:
    s->dropped++;
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

const char *kvs_host_store_intern(struct kvs_host_store *s, const char *str)
{
    pthread_mutex_lock(&s->mu);
    const char *r = intern(s, str ? str : "");
    pthread_mutex_unlock(&s->mu);
    return r;
}

void kvs_host_store_close(struct kvs_trace_rec *r, int64_t end_ns)
{
    __atomic_store_n(&r->end_ns, end_ns, __ATOMIC_RELEASE);
}

size_t kvs_host_store_count(struct kvs_host_store *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = (size_t)s->added;
    pthread_mutex_unlock(&s->mu);
    return n;
}

size_t kvs_host_store_collect(struct kvs_host_store *s, struct kvs_trace_rec *out, size_t max,
                              int64_t open_end)
{
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    for (struct kvs_host_chunk *c = s->recs_head; c && n < max; c = c->next) {
        for (size_t i = 0; i < c->used && n < max; i++) {
            out[n] = c->u.recs[i];
            int64_t end = __atomic_load_n(&c->u.recs[i].end_ns, __ATOMIC_ACQUIRE);
            out[n].end_ns = end == KVS_HOST_OPEN ? open_end : end;
            n++;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

void kvs_host_store_free(struct kvs_host_store *s)
{
    for (struct kvs_host_chunk *c = s->recs_head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    for (struct kvs_host_chunk *c = s->bytes, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    kvs_map_free(&s->names);
    pthread_mutex_destroy(&s->mu);
    memset(s, 0, sizeof *s);
}
