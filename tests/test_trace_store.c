/* tests/test_trace_store.c — the capture's bounded memory without a GPU:
 * the CUPTI buffer pool (cap, free list, ready list in completion order,
 * concurrent use), a CUPTI-like producer on a tiny pool whose records are
 * dropped and counted once the pool is empty, buffers lent zeroed and a
 * stock of them made ahead on the pool's thread, and the host-record store
 * (copies, interning, cap, open records).
 *   meson test -C build test_trace_store
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvs_test.h"
#include "store.h"

// ----------------------------------------------------------------------------
// pool

static void test_pool_cap_and_lists(void)
{
    struct kvs_pool p;
    KVS_REQUIRE(kvs_pool_init(&p, 4096, 3) == 0);
    size_t sz;
    uint8_t *b[4];
    for (int i = 0; i < 3; i++) {
        b[i] = kvs_pool_acquire(&p, &sz);
        KVS_REQUIRE(b[i]);
        KVS_CHECK_EQ_INT(sz, 4096);
        KVS_CHECK_EQ_INT((uintptr_t)b[i] % KVS_POOL_ALIGN, 0);
        memset(b[i], i, sz); /* the whole buffer is usable */
    }
    b[3] = kvs_pool_acquire(&p, &sz);
    KVS_CHECK(b[3] == NULL);
    KVS_CHECK_EQ_INT(sz, 0);
    KVS_CHECK_EQ_INT(p.denied, 1);
    KVS_CHECK_EQ_INT(p.allocated, 3);

    kvs_pool_complete(&p, b[2], 100);  /* ready first */
    kvs_pool_complete(&p, b[0], 0);    /* empty: back to the free list */
    kvs_pool_set_gen(&p, 2);           /* CUPTI attached again (a detach between windows) */
    kvs_pool_complete(&p, b[1], 4096); /* ready second */
    struct kvs_pool_view v[4];
    size_t n = kvs_pool_ready(&p, v, 4);
    KVS_REQUIRE(n == 2);
    KVS_CHECK(v[0].data == b[2] && v[0].valid == 100);
    KVS_CHECK(v[1].data == b[1] && v[1].valid == 4096);
    KVS_CHECK(v[0].gen == 0 && v[1].gen == 2); /* the attachment each was completed under */
    KVS_CHECK(v[0].data[0] == 2 && v[1].data[4095] == 1); /* contents kept */

    uint8_t *again = kvs_pool_acquire(&p, &sz);
    KVS_CHECK(again == b[0]); /* reused, not a fourth allocation */
    KVS_CHECK_EQ_INT(p.allocated, 3);
    KVS_CHECK(kvs_pool_acquire(&p, &sz) == NULL); /* the ready ones are not free */
    kvs_pool_recycle(&p);
    KVS_CHECK_EQ_INT(kvs_pool_ready(&p, v, 4), 0);
    uint8_t *c1 = kvs_pool_acquire(&p, &sz), *c2 = kvs_pool_acquire(&p, &sz);
    KVS_CHECK(c1 && c2);
    KVS_CHECK(kvs_pool_acquire(&p, &sz) == NULL);
    KVS_CHECK_EQ_INT(p.lent, 3);
    kvs_pool_complete(&p, again, 0);
    kvs_pool_complete(&p, c1, 10);
    kvs_pool_complete(&p, c2, 0);
    KVS_CHECK_EQ_INT(p.lent, 0);
    KVS_CHECK_EQ_INT(kvs_pool_free(&p), 0);
}

static void test_pool_rejects_bad_config(void)
{
    struct kvs_pool p;
    KVS_CHECK(kvs_pool_init(&p, 16, 4) != 0);
    KVS_CHECK(kvs_pool_init(&p, 1 << 20, 0) != 0);
}

struct worker {
    struct kvs_pool *p;
    int got, denied;
};

static void *pool_worker(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 20000; i++) {
        size_t sz;
        uint8_t *b = kvs_pool_acquire(w->p, &sz);
        if (!b) {
            w->denied++;
            continue;
        }
        w->got++;
        b[0] = (uint8_t)i;
        kvs_pool_complete(w->p, b, (i % 3) ? 0 : 1); /* some go to the ready list */
        if (i % 64 == 0)
            kvs_pool_recycle(w->p);
    }
    return NULL;
}

static void test_pool_concurrent(void)
{
    struct kvs_pool p;
    KVS_REQUIRE(kvs_pool_init(&p, 1024, 8) == 0);
    pthread_t th[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){&p, 0, 0};
        KVS_REQUIRE(pthread_create(&th[i], NULL, pool_worker, &w[i]) == 0);
    }
    int got = 0, denied = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        got += w[i].got;
        denied += w[i].denied;
    }
    KVS_CHECK_EQ_INT(got + denied, 4 * 20000);
    KVS_CHECK_EQ_INT((int)p.denied, denied);
    KVS_CHECK(p.allocated <= 8);
    KVS_CHECK_EQ_INT(p.lent, 0);
    KVS_CHECK_EQ_INT(kvs_pool_free(&p), 0);
}

/* A stand-in for CUPTI: records of `rec` bytes go into the current buffer;
 * a full buffer is completed and a new one requested; with none available
 * records are dropped and counted, exactly what CUPTI does. */
struct producer {
    struct kvs_pool *pool;
    uint8_t *buf;
    size_t size, used;
    uint64_t stored, dropped;
};

static void produce(struct producer *pr, size_t rec, uint32_t seq)
{
    if (pr->buf && pr->used + rec > pr->size) {
        kvs_pool_complete(pr->pool, pr->buf, pr->used);
        pr->buf = NULL;
    }
    if (!pr->buf) {
        pr->buf = kvs_pool_acquire(pr->pool, &pr->size);
        pr->used = 0;
    }
    if (!pr->buf) {
        pr->dropped++;
        return;
    }
    memcpy(pr->buf + pr->used, &seq, sizeof seq);
    pr->used += rec;
    pr->stored++;
}

static void test_tiny_pool_drops_and_counts(void)
{
    struct kvs_pool p;
    KVS_REQUIRE(kvs_pool_init(&p, 1024, 2) == 0);
    struct producer pr = {&p, NULL, 0, 0, 0, 0};
    const size_t rec = 128; /* 8 per buffer */
    for (uint32_t i = 0; i < 1000; i++)
        produce(&pr, rec, i);
    if (pr.buf)
        kvs_pool_complete(&p, pr.buf, pr.used);
    KVS_CHECK_EQ_INT(pr.stored, 16);
    KVS_CHECK_EQ_INT(pr.dropped, 1000 - 16);
    KVS_CHECK_EQ_INT(pr.stored + pr.dropped, 1000);
    KVS_CHECK(p.denied >= 1);
    KVS_CHECK_EQ_INT(p.allocated, 2); /* memory never grew past the cap */
    /* what was kept is the start of the stream, in order */
    struct kvs_pool_view v[2];
    KVS_REQUIRE(kvs_pool_ready(&p, v, 2) == 2);
    uint32_t seq = 0;
    int order_ok = 1;
    for (int b = 0; b < 2; b++)
        for (size_t off = 0; off < v[b].valid; off += rec, seq++) {
            uint32_t got;
            memcpy(&got, v[b].data + off, sizeof got);
            order_ok &= got == seq;
        }
    KVS_CHECK(order_ok);
    KVS_CHECK_EQ_INT(kvs_pool_free(&p), 0);
}

static int all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

/* every buffer lent is zeroed (CUPTI is told so and does not zero it on the
 * launching thread): new ones, ones returned empty, recycled full ones */
static void test_pool_lends_zeroed(void)
{
    struct kvs_pool p;
    KVS_REQUIRE(kvs_pool_init(&p, 4096, 2) == 0);
    size_t sz;
    uint8_t *a = kvs_pool_acquire(&p, &sz), *b = kvs_pool_acquire(&p, &sz);
    KVS_REQUIRE(a && b && sz == 4096);
    KVS_CHECK(all_zero(a, sz) && all_zero(b, sz));
    memset(a, 0xAB, sz);
    memset(b, 0xCD, sz);
    kvs_pool_complete(&p, a, 0);    /* "empty", yet written: back dirty */
    kvs_pool_complete(&p, b, 4000); /* records */
    uint8_t *c = kvs_pool_acquire(&p, &sz);
    KVS_REQUIRE(c == a);
    KVS_CHECK_MSG(all_zero(c, sz), "a buffer returned empty was lent again unzeroed");
    KVS_CHECK(kvs_pool_acquire(&p, &sz) == NULL);
    struct kvs_pool_view v[2];
    KVS_REQUIRE(kvs_pool_ready(&p, v, 2) == 1);
    KVS_CHECK(v[0].data == b && v[0].valid == 4000 && v[0].data[3999] == 0xCD); /* kept as is */
    kvs_pool_recycle(&p);
    uint8_t *d = kvs_pool_acquire(&p, &sz);
    KVS_REQUIRE(d == b);
    KVS_CHECK_MSG(all_zero(d, sz), "a recycled buffer was lent again unzeroed");
    kvs_pool_complete(&p, c, 0);
    kvs_pool_complete(&p, d, 0);
    KVS_CHECK_EQ_INT(kvs_pool_free(&p), 0);
}

/* waits up to 5 s for cond(p) under the pool's lock */
static int wait_pool(struct kvs_pool *p, int (*cond)(const struct kvs_pool *))
{
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_lock(&p->mu);
        int ok = cond(p);
        pthread_mutex_unlock(&p->mu);
        if (ok)
            return 1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}
static int two_free(const struct kvs_pool *p) { return p->nfree == 2; }
static int one_free(const struct kvs_pool *p) { return p->nfree == 1 && !p->dirty_list; }

/* the stock: zeroed buffers made ahead on the pool's thread, within the cap */
static void test_pool_stock(void)
{
    struct kvs_pool p;
    KVS_REQUIRE(kvs_pool_init(&p, 1 << 20, 3) == 0);
    KVS_REQUIRE(kvs_pool_keep_stock(&p, 2) == 0);
    KVS_CHECK_MSG(wait_pool(&p, two_free), "no stock of 2 after 5 s (%u free)", p.nfree);
    KVS_CHECK_EQ_INT(p.allocated, 2); /* made before anyone asked */
    size_t sz;
    uint8_t *a = kvs_pool_acquire(&p, &sz);
    KVS_REQUIRE(a);
    KVS_CHECK(all_zero(a, sz));
    /* topped up again: the third buffer, the cap */
    KVS_CHECK_MSG(wait_pool(&p, two_free), "stock not topped up (%u free)", p.nfree);
    KVS_CHECK_EQ_INT(p.allocated, 3);
    uint8_t *b = kvs_pool_acquire(&p, &sz), *c = kvs_pool_acquire(&p, &sz);
    KVS_REQUIRE(b && c);
    KVS_CHECK(kvs_pool_acquire(&p, &sz) == NULL); /* the cap holds with a stock */
    KVS_CHECK_EQ_INT(p.allocated, 3);
    KVS_CHECK_EQ_INT((int)p.denied, 1);
    memset(b, 0x11, sz);
    kvs_pool_complete(&p, b, 0); /* dirty: the thread zeroes it for the stock */
    KVS_CHECK_MSG(wait_pool(&p, one_free), "returned buffer not zeroed into the stock");
    uint8_t *e = kvs_pool_acquire(&p, &sz);
    KVS_REQUIRE(e == b);
    KVS_CHECK(all_zero(e, sz));
    kvs_pool_complete(&p, a, 10);
    kvs_pool_complete(&p, c, 0);
    kvs_pool_complete(&p, e, 0);
    KVS_CHECK_EQ_INT(kvs_pool_free(&p), 0); /* the thread stopped, every buffer freed */
}

// ----------------------------------------------------------------------------
// host store

static struct kvs_trace_rec op_rec(const char *name, int nt, const struct kvs_tensor_desc *t)
{
    struct kvs_trace_rec r = {.kind = KVS_TREC_OP, .start_ns = 10, .end_ns = KVS_HOST_OPEN,
                              .name = name};
    r.u.host.pid = 1, r.u.host.tid = 2, r.u.host.external_id = 3;
    r.u.host.ntensors = nt;
    r.u.host.tensors = t;
    return r;
}

static void test_host_store_copies_and_interns(void)
{
    struct kvs_host_store s;
    KVS_REQUIRE(kvs_host_store_init(&s, 8 << 20) == 0);
    char name[32] = "aten::copy_";
    char dtype[32] = "c10::BFloat16";
    struct kvs_tensor_desc t[2] = {{3, {495552, 1, 576}, dtype}, {0, {0}, NULL}};
    struct kvs_trace_rec in = op_rec(name, 2, t);
    struct kvs_trace_rec *a = kvs_host_store_add(&s, &in);
    struct kvs_trace_rec *b = kvs_host_store_add(&s, &in);
    KVS_REQUIRE(a && b);
    strcpy(name, "changed");
    strcpy(dtype, "changed");
    t[0].dims[0] = 0;
    KVS_CHECK_EQ_STR(a->name, "aten::copy_");
    KVS_CHECK(a->name == b->name); /* interned */
    KVS_CHECK_EQ_STR(a->u.host.tensors[0].dtype, "c10::BFloat16");
    KVS_CHECK(a->u.host.tensors[1].dtype == NULL);
    KVS_CHECK_EQ_INT(a->u.host.tensors[0].dims[0], 495552);
    kvs_host_store_close(a, 99);
    struct kvs_trace_rec out[4];
    KVS_REQUIRE(kvs_host_store_collect(&s, out, 4, 12345) == 2);
    KVS_CHECK_EQ_INT(out[0].end_ns, 99);
    KVS_CHECK_EQ_INT(out[1].end_ns, 12345); /* still open: closed at the window's end */
    KVS_CHECK_EQ_INT(kvs_host_store_count(&s), 2);
    kvs_host_store_free(&s);
}

/* An op's shape text from PyTorch's hook: copied, interned, never cut (a
 * text over KVS_HOST_SHAPE_MAX keeps the op without shapes). */
static void test_host_store_shape_text(void)
{
    struct kvs_host_store s;
    KVS_REQUIRE(kvs_host_store_init(&s, 8 << 20) == 0);
    char dims[64] = "[[1, 4, 4, 8192, 64], [1, 4, 4, 8192, 64], []]";
    char types[64] = "[\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]";
    struct kvs_trace_rec in = op_rec("aten::copy_", 0, NULL);
    in.u.host.input_dims = dims;
    in.u.host.input_types = types;
    in.u.host.has_sequence = 1;
    in.u.host.sequence_nr = 5;
    struct kvs_trace_rec *a = kvs_host_store_add(&s, &in);
    struct kvs_trace_rec *b = kvs_host_store_add(&s, &in);
    KVS_REQUIRE(a && b);
    strcpy(dims, "changed");
    KVS_CHECK_EQ_STR(a->u.host.input_dims, "[[1, 4, 4, 8192, 64], [1, 4, 4, 8192, 64], []]");
    KVS_CHECK_EQ_STR(a->u.host.input_types, "[\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]");
    KVS_CHECK(a->u.host.input_dims == b->u.host.input_dims); /* interned */
    KVS_CHECK(a->u.host.has_sequence && a->u.host.sequence_nr == 5);
    /* a range keeps no shapes */
    struct kvs_trace_rec rg = in;
    rg.kind = KVS_TREC_RANGE;
    struct kvs_trace_rec *c = kvs_host_store_add(&s, &rg);
    KVS_REQUIRE(c);
    KVS_CHECK(c->u.host.input_dims == NULL && c->u.host.input_types == NULL);
    /* longer than the cap: the op stays, its shapes go (never cut in half) */
    size_t n = KVS_HOST_SHAPE_MAX + 100;
    char *big = malloc(n + 1);
    KVS_REQUIRE(big);
    memset(big, ' ', n);
    big[0] = '[', big[n - 1] = ']', big[n] = '\0';
    in.u.host.input_dims = big;
    struct kvs_trace_rec *d = kvs_host_store_add(&s, &in);
    free(big);
    KVS_REQUIRE(d);
    KVS_CHECK(d->u.host.input_dims == NULL && d->u.host.input_types == NULL);
    KVS_CHECK_EQ_STR(d->name, "aten::copy_");
    /* one just under the cap is kept whole */
    n = KVS_HOST_SHAPE_MAX;
    big = malloc(n + 1);
    KVS_REQUIRE(big);
    memset(big, ' ', n);
    big[0] = '[', big[n - 1] = ']', big[n] = '\0';
    in.u.host.input_dims = big;
    struct kvs_trace_rec *e = kvs_host_store_add(&s, &in);
    KVS_REQUIRE(e && e->u.host.input_dims);
    KVS_CHECK_EQ_INT(strlen(e->u.host.input_dims), n);
    free(big);
    kvs_host_store_free(&s);
}

static void test_host_store_cap(void)
{
    struct kvs_host_store s;
    KVS_REQUIRE(kvs_host_store_init(&s, 1 << 20) == 0); /* room for a few chunks only */
    char name[32];
    uint64_t ok = 0, tries = 200000;
    for (uint64_t i = 0; i < tries; i++) {
        snprintf(name, sizeof name, "range_%llu", (unsigned long long)i); /* all distinct */
        struct kvs_trace_rec r = op_rec(name, 0, NULL);
        r.kind = KVS_TREC_RANGE;
        ok += kvs_host_store_add(&s, &r) != NULL;
    }
    KVS_CHECK(ok > 1000);
    KVS_CHECK(ok < tries);
    KVS_CHECK_EQ_INT(s.added, ok);
    KVS_CHECK_EQ_INT(s.dropped, tries - ok);
    KVS_CHECK(s.used_bytes <= (size_t)1 << 20);
    kvs_host_store_free(&s);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"pool_cap_and_lists", test_pool_cap_and_lists},
        {"pool_rejects_bad_config", test_pool_rejects_bad_config},
        {"pool_concurrent", test_pool_concurrent},
        {"tiny_pool_drops_and_counts", test_tiny_pool_drops_and_counts},
        {"pool_lends_zeroed", test_pool_lends_zeroed},
        {"pool_stock", test_pool_stock},
        {"host_store_copies_and_interns", test_host_store_copies_and_interns},
        {"host_store_shape_text", test_host_store_shape_text},
        {"host_store_cap", test_host_store_cap},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
