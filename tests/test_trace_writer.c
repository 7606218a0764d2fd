/* tests/test_trace_writer.c — the Chrome-trace writer on synthetic
 * CUPTI-like records, no GPU: exact timestamps, escaping, the hash map, the
 * projection of ranges onto GPU streams, and whole documents checked by
 * Python's json module (tests/check_trace.py) field by field.
 *   meson test -C build test_trace_writer
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>
#include <zlib.h>

#include "kvs_test.h"
#include "kvscope/trace.h"
#include "kvscope/trace_writer.h"
#include "trace_check.h"
#include "writer_internal.h"

// ----------------------------------------------------------------------------
// numbers and strings

static void test_format_us(void)
{
    static const struct {
        int64_t ns;
        const char *want;
    } cases[] = {
        {1234567891, "1234567.891"},
        {0, "0.000"},
        {1, "0.001"},
        {999, "0.999"},
        {1000, "1.000"},
        {-5, "-0.005"},
        {-1234, "-1.234"},
        {-1000, "-1.000"},
        {5091211322205042LL, "5091211322205.042"},
        {INT64_MAX, "9223372036854775.807"},
        {INT64_MIN, "-9223372036854775.808"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char b[KVS_TRACE_US_BUF];
        size_t n = kvs_trace_format_us(cases[i].ns, b);
        KVS_CHECK_EQ_STR(b, cases[i].want);
        KVS_CHECK_EQ_INT(n, strlen(cases[i].want));
    }
}

static void test_json_escape(void)
{
    char out[256];
    const char in[] = "a\"b\\c\n\t\x01\x7f|\xc3\xa9|\xff|\xe2\x82|\xf0\x9f\x98\x80|\xc0\xaf";
    size_t n = kvs_json_escape(out, in, sizeof in - 1);
    out[n] = '\0';
    KVS_CHECK_EQ_STR(out, "a\\\"b\\\\c\\n\\t\\u0001\\u007f|\xc3\xa9|\xef\xbf\xbd|"
                          "\xef\xbf\xbd\xef\xbf\xbd|\xf0\x9f\x98\x80|\xef\xbf\xbd\xef\xbf\xbd");
}

static void test_long_string_chunks(void)
{
    /* 2-byte characters across the 256-byte pieces of kvs_out_json_string */
    char in[1201];
    for (int i = 0; i < 600; i++)
        memcpy(in + 2 * i, "\xc3\xa9", 2);
    in[1200] = '\0';
    char path[] = "/tmp/kvs_writer_strXXXXXX";
    int fd = mkstemp(path);
    KVS_REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w+");
    static struct kvs_out o;
    kvs_out_init(&o, f, NULL);
    kvs_out_json_string(&o, in + 1); /* odd start: a lone continuation byte first */
    KVS_CHECK_EQ_INT(kvs_out_flush(&o), 0);
    rewind(f);
    char back[4096];
    size_t n = fread(back, 1, sizeof back - 1, f);
    back[n] = '\0';
    fclose(f);
    unlink(path);
    KVS_CHECK_EQ_INT(n, 2 + 3 + 599 * 2);
    KVS_CHECK(memcmp(back, "\"\xef\xbf\xbd\xc3\xa9", 6) == 0);
    KVS_CHECK(strstr(back, "\xef\xbf\xbd\xc3\xa9") == back + 1);
    KVS_CHECK(strstr(back + 4, "\xef\xbf\xbd") == NULL); /* no piece boundary broke a character */
}

static void test_map(void)
{
    struct kvs_map m;
    KVS_REQUIRE(kvs_map_init(&m, 4) == 0);
    for (uint64_t k = 0; k < 100000; k++)
        KVS_REQUIRE(kvs_map_put(&m, k * 7919, k) == 0);
    KVS_CHECK(kvs_map_put(&m, 7919, 42) == 0); /* overwrite */
    KVS_CHECK_EQ_INT(m.n, 100000);
    uint64_t v = 0;
    int bad = 0;
    for (uint64_t k = 0; k < 100000; k++)
        bad += !kvs_map_get(&m, k * 7919, &v) || v != (k == 1 ? 42 : k);
    KVS_CHECK_EQ_INT(bad, 0);
    KVS_CHECK(!kvs_map_get(&m, 5, NULL));
    kvs_map_free(&m);
}

// ----------------------------------------------------------------------------
// synthetic records

#define PID 4242u
#define TID 4243u
#define T0 1000000000LL /* 1000 s on the CPU clock */

static struct kvs_tensor_desc g_copy_in[2] = {
    {3, {495552, 1, 576}, "c10::BFloat16"},
    {3, {495552, 1, 576}, "c10::Float8_e4m3fn"},
};

static struct kvs_trace_rec host(enum kvs_trace_rec_kind k, const char *name, uint32_t tid,
                                 int64_t s, int64_t e, uint64_t ext)
{
    struct kvs_trace_rec r = {.kind = k, .start_ns = s, .end_ns = e, .name = name};
    r.u.host.pid = PID;
    r.u.host.tid = tid;
    r.u.host.external_id = ext;
    return r;
}

static struct kvs_trace_rec api(enum kvs_trace_rec_kind k, const char *name, uint32_t cbid,
                                uint32_t corr, int64_t s, int64_t e)
{
    struct kvs_trace_rec r = {.kind = k, .correlation = corr, .start_ns = s, .end_ns = e,
                              .name = name};
    r.u.api.pid = PID;
    r.u.api.tid = TID;
    r.u.api.cbid = cbid;
    return r;
}

static struct kvs_trace_rec gpu(enum kvs_trace_rec_kind k, const char *name, uint32_t corr,
                                uint32_t stream, int64_t s, int64_t e)
{
    struct kvs_trace_rec r = {.kind = k, .correlation = corr, .start_ns = s, .end_ns = e,
                              .name = name};
    r.u.gpu.device = 0;
    r.u.gpu.context = 1;
    r.u.gpu.stream = stream;
    return r;
}

static struct kvs_trace_rec link_ext(uint32_t corr, uint64_t ext)
{
    struct kvs_trace_rec r = {.kind = KVS_TREC_EXTERNAL_ID, .correlation = corr};
    r.u.external_id = ext;
    return r;
}

/* Fills recs (room for 32); returns the count. */
static size_t make_records(struct kvs_trace_rec *r)
{
    size_t n = 0;
    r[n++] = host(KVS_TREC_RANGE, "step_0", TID, T0, T0 + 100000, 1);
    struct kvs_trace_rec op = host(KVS_TREC_OP, "aten::copy_", TID, T0 + 1000, T0 + 50000, 2);
    op.u.host.ntensors = 2;
    op.u.host.tensors = g_copy_in;
    r[n++] = op;
    r[n++] = api(KVS_TREC_RUNTIME, "cudaLaunchKernel", 211, 10, T0 + 2000, T0 + 3000);
    r[n++] = link_ext(10, 2);
    struct kvs_trace_rec k = gpu(KVS_TREC_KERNEL, "direct_copy_kernel", 10, 7, T0 + 10000,
                                 T0 + 11408);
    k.u.gpu.grid[0] = 2, k.u.gpu.grid[1] = 1, k.u.gpu.grid[2] = 1;
    k.u.gpu.block[0] = 128, k.u.gpu.block[1] = 1, k.u.gpu.block[2] = 1;
    k.u.gpu.registers = 32;
    r[n++] = k;
    r[n++] = api(KVS_TREC_RUNTIME, "cudaMemcpyAsync", 51, 11, T0 + 4000, T0 + 4500);
    r[n++] = link_ext(11, 2);
    struct kvs_trace_rec c = gpu(KVS_TREC_MEMCPY, NULL, 11, 8, T0 + 20000, T0 + 21000);
    c.u.gpu.bytes = 1 << 20;
    c.u.gpu.copy_kind = "HtoD", c.u.gpu.src_kind = "Pageable", c.u.gpu.dst_kind = "Device";
    r[n++] = c;
    r[n++] = api(KVS_TREC_DRIVER, "cuMemsetD8Async", 300, 12, T0 + 5000, T0 + 5100);
    struct kvs_trace_rec s = gpu(KVS_TREC_MEMSET, NULL, 12, 7, T0 + 30000, T0 + 30100);
    s.u.gpu.bytes = 512;
    s.u.gpu.dst_kind = "Device";
    r[n++] = s;
    struct kvs_trace_rec y = {.kind = KVS_TREC_SYNC, .correlation = 13, .start_ns = T0 + 60000,
                              .end_ns = T0 + 61000, .name = "Stream Sync"};
    y.u.sync.context = 1, y.u.sync.stream = 7, y.u.sync.event_id = -1;
    r[n++] = y;
    r[n++] = (struct kvs_trace_rec){.kind = KVS_TREC_OVERHEAD, .start_ns = T0 - 5000,
                                    .end_ns = T0 - 1000, .name = "Activity Buffer Request"};
    /* a range on the same thread that launched nothing, one on another thread */
    r[n++] = host(KVS_TREC_RANGE, "idle", TID, T0 + 200000, T0 + 300000, 3);
    r[n++] = host(KVS_TREC_RANGE, "other_thread", TID + 1, T0, T0 + 100000, 4);
    /* a kernel without an API record, with a hostile name */
    r[n++] = gpu(KVS_TREC_KERNEL, "k\"\\\xff\n", 99, 7, T0 + 40000, T0 + 40000);
    /* a negative-duration record is written with dur 0 */
    r[n++] = api(KVS_TREC_RUNTIME, "cudaStreamSynchronize", 131, 13, T0 + 60000, T0 + 59000);
    return n;
}

static struct kvs_trace_device h200(void)
{
    struct kvs_trace_device d = {0};
    d.id = 0;
    snprintf(d.name, sizeof d.name, "NVIDIA H200");
    d.total_global_mem = 150109880320ull;
    d.compute_major = 9, d.max_threads_per_block = 1024, d.max_threads_per_mp = 2048;
    d.regs_per_block = 65536, d.regs_per_mp = 65536, d.warp_size = 32;
    d.shared_mem_per_block = 49152, d.shared_mem_per_block_optin = 232448;
    d.shared_mem_per_mp = 233472, d.num_sms = 132;
    return d;
}

static void make_meta(struct kvs_trace_meta *m, const struct kvs_trace_device *dev)
{
    kvs_trace_meta_init(m);
    m->base_time_ns = 1790857026000000000LL;
    m->pid = PID;
    m->process_name = "synthetic";
    m->trace_name = "synthetic.json";
    m->rank = 0, m->world_size = 1;
    m->cupti_version = 130001, m->cuda_driver_version = 13000;
    m->window = "all", m->window_start_ns = T0 - 10000, m->window_end_ns = T0 + 400000;
    m->devices = dev, m->ndevices = 1;
    m->stats.dropped_records = 3, m->stats.buffer_requests_denied = 1;
    m->stats.buffers_used = 2, m->stats.buffers_max = 32, m->stats.buffer_bytes = 4 << 20;
}

// ----------------------------------------------------------------------------
// documents on disk: the set-up every writer test shares

/* r[0..n) written under m to a fresh temporary file; its name in path (a
 * mkstemp template) */
static bool write_temp(const struct kvs_trace_meta *m, const struct kvs_trace_rec *r, size_t n,
                       char *path)
{
    int fd = mkstemp(path);
    KVS_CHECK_MSG(fd >= 0, "mkstemp %s: %s", path, strerror(errno));
    if (fd < 0)
        return false;
    close(fd);
    enum kvs_status st = kvs_trace_write_json(m, r, n, path, NULL);
    KVS_CHECK_MSG(st == KVS_STATUS_OK, "writing %s: %s", path, kvs_status_str(st));
    return st == KVS_STATUS_OK;
}

/* the synthetic document: make_records' records on the H200 under
 * make_meta's meta (which points at dev: a doc is not copied), and a
 * temporary file's name for it */
struct doc {
    struct kvs_trace_rec recs[32];
    size_t n;
    struct kvs_trace_device dev;
    struct kvs_trace_meta m;
    char path[32];
};

static void doc_init(struct doc *d)
{
    d->n = make_records(d->recs);
    d->dev = h200();
    make_meta(&d->m, &d->dev);
    snprintf(d->path, sizeof d->path, "/tmp/kvs_writer_XXXXXX");
}

/* d's records under d's meta, written to a fresh temporary file (d->path) */
static bool doc_write(struct doc *d)
{
    return write_temp(&d->m, d->recs, d->n, d->path);
}

static char *slurp(const char *path, size_t *len)
{
    gzFile z = gzopen(path, "rb"); /* reads plain files too */
    if (!z)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    int k;
    while (b && (k = gzread(z, b + n, (unsigned)(cap - n - 1))) > 0) {
        n += (size_t)k;
        if (cap - n < 4096)
            b = realloc(b, cap *= 2);
    }
    gzclose(z);
    if (b)
        b[n] = '\0';
    *len = n;
    return b;
}

static const cJSON *find_named(const cJSON *arr, const char *name, long long tid)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name) &&
            (tid < 0 || kvs_summary_int(e, "tid", -2) == tid))
            return e;
    }
    return NULL;
}

static void test_document(void)
{
    struct doc d;
    doc_init(&d);
    KVS_REQUIRE(doc_write(&d));

    size_t len;
    char *text = slurp(d.path, &len);
    KVS_REQUIRE(text);
    /* exact text of the timestamps, straight from integer ns */
    KVS_CHECK(strstr(text, "\"ts\": 1000010.000, \"dur\": 1.408") != NULL);
    KVS_CHECK(strstr(text, "\"ts\": 999995.000, \"dur\": 4.000") != NULL);
    KVS_CHECK(strstr(text, "\"name\": \"k\\\"\\\\\xef\xbf\xbd\\n\"") != NULL);
    KVS_CHECK(strstr(text, "\"baseTimeNanoseconds\": 1790857026000000000") != NULL);
    free(text);

    cJSON *sum;
    kvs_check_trace_valid(d.path, &sum);
    unlink(d.path);
    if (!sum)
        return;
    const cJSON *cats = cJSON_GetObjectItemCaseSensitive(sum, "categories");
    KVS_CHECK_EQ_INT(kvs_summary_int(cats, "kernel", 0), 2);
    KVS_CHECK_EQ_INT(kvs_summary_int(cats, "gpu_memcpy", 0), 1);
    KVS_CHECK_EQ_INT(kvs_summary_int(cats, "gpu_memset", 0), 1);
    KVS_CHECK_EQ_INT(kvs_summary_int(cats, "cuda_runtime", 0), 3);
    KVS_CHECK_EQ_INT(kvs_summary_int(cats, "cuda_driver", 0), 1);
    KVS_CHECK_EQ_INT(kvs_summary_int(cats, "cuda_sync", 0), 1);
    KVS_CHECK_EQ_INT(kvs_summary_int(cats, "overhead", 0), 1);
    KVS_CHECK_EQ_INT(kvs_summary_int(cats, "cpu_op", 0), 1);
    KVS_CHECK_EQ_INT(kvs_summary_int(cats, "user_annotation", 0), 3);
    KVS_CHECK_EQ_INT(kvs_summary_int(sum, "flows", 0), 3); /* corr 10, 11, 12; not 99 */

    const cJSON *k = find_named(kvs_summary_array(sum, "kernels"), "direct_copy_kernel", -1);
    KVS_REQUIRE(k);
    KVS_CHECK_EQ_INT(kvs_summary_int(k, "ext", -1), 2);
    KVS_CHECK_EQ_INT(kvs_summary_int(k, "dur_ns", -1), 1408);
    KVS_CHECK_EQ_INT(kvs_summary_int(k, "stream", -1), 7);
    const cJSON *c = cJSON_GetArrayItem(kvs_summary_array(sum, "memcpys"), 0);
    KVS_REQUIRE(c);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring,
                     "Memcpy HtoD (Pageable -> Device)");
    KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(c, "gbps")->valuedouble, 1048.576, 1e-9);
    KVS_CHECK_EQ_INT(kvs_summary_int(c, "ext", -1), 2);
    const cJSON *s = cJSON_GetArrayItem(kvs_summary_array(sum, "memsets"), 0);
    KVS_REQUIRE(s);
    KVS_CHECK(cJSON_GetObjectItemCaseSensitive(s, "ext") == NULL);

    const cJSON *op = cJSON_GetArrayItem(kvs_summary_array(sum, "ops"), 0);
    KVS_REQUIRE(op);
    char *dims = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(op, "dims"));
    char *types = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(op, "types"));
    KVS_CHECK_EQ_STR(dims, "[[495552,1,576],[495552,1,576]]");
    KVS_CHECK_EQ_STR(types, "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]");
    free(dims);
    free(types);

    /* step_0 projected onto stream 7 (kernel + memset) and stream 8 (memcpy);
     * "idle" and "other_thread" launched nothing */
    const cJSON *ga = kvs_summary_array(sum, "gpu_user_annotations");
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(ga), 2);
    const cJSON *g7 = find_named(ga, "step_0", 7), *g8 = find_named(ga, "step_0", 8);
    KVS_REQUIRE(g7 && g8);
    KVS_CHECK_EQ_INT(kvs_summary_int(g7, "ts_ns", 0), T0 + 10000);
    KVS_CHECK_EQ_INT(kvs_summary_int(g7, "dur_ns", 0), 20100);
    KVS_CHECK_EQ_INT(kvs_summary_int(g8, "ts_ns", 0), T0 + 20000);
    KVS_CHECK_EQ_INT(kvs_summary_int(g8, "dur_ns", 0), 1000);
    KVS_CHECK_EQ_INT(kvs_summary_int(g7, "ext", 0), 1);

    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(sum, "kvscope");
    KVS_CHECK_EQ_INT(kvs_summary_int(kv, "dropped_records", -1), 3);
    KVS_CHECK_EQ_INT(kvs_summary_int(kv, "buffers_used", -1), 2);
    KVS_CHECK_EQ_INT(kvs_summary_int(kv, "records", -1), (long long)d.n);
    KVS_CHECK_EQ_INT(kvs_summary_int(kv, "world_size", -1), 1);
    const cJSON *dp = cJSON_GetArrayItem(kvs_summary_array(sum, "deviceProperties"), 0);
    KVS_CHECK_EQ_INT(kvs_summary_int(dp, "sharedMemPerBlockOptin", 0), 232448);
    KVS_CHECK_EQ_INT(kvs_summary_int(dp, "numSms", 0), 132);
    cJSON_Delete(sum);
}

// ----------------------------------------------------------------------------
// CUDA graphs: replayed kernels get the op and ranges their node was made under

static struct kvs_trace_rec graph_node(uint64_t id, uint64_t ext, int64_t at)
{
    struct kvs_trace_rec r = {.kind = KVS_TREC_GRAPH_NODE, .start_ns = at, .end_ns = at};
    r.u.node.node_id = id;
    r.u.node.external_id = ext;
    r.u.node.pid = PID;
    r.u.node.tid = TID;
    return r;
}

static struct kvs_trace_rec replayed(const char *name, uint32_t corr, uint64_t node, int64_t s,
                                     int64_t e)
{
    struct kvs_trace_rec k = gpu(KVS_TREC_KERNEL, name, corr, 7, s, e);
    k.u.gpu.graph_id = 5;
    k.u.gpu.graph_node_id = node;
    return k;
}

static void test_graph_replay(void)
{
    struct kvs_trace_rec r[32];
    size_t n = 0;
    /* the capture (no GPU work of its own): layer_0 holds the cast op (node
     * 77, instantiated as its clone 1077) and, after the op, node 78 */
    r[n++] = host(KVS_TREC_RANGE, "layer_0", TID, T0, T0 + 1000, 1);
    struct kvs_trace_rec op = host(KVS_TREC_OP, "kvs::kv_cast", TID, T0 + 100, T0 + 900, 20);
    op.u.host.ntensors = 2;
    op.u.host.tensors = g_copy_in;
    r[n++] = op;
    r[n++] = graph_node(77, 20, T0 + 500);
    r[n++] = graph_node(1077, 20, T0 + 500);
    r[n++] = graph_node(78, 0, T0 + 950);
    /* two replays, each launched inside its step and an op of its own */
    for (int rep = 0; rep < 2; rep++) {
        int64_t b = T0 + 10000 + 20000 * rep;
        uint32_t corr = 40 + (uint32_t)rep;
        r[n++] = host(KVS_TREC_RANGE, rep ? "step_2" : "step_1", TID, b, b + 10000, 2 + rep);
        r[n++] = host(KVS_TREC_OP, "CUDAGraph::replay", TID, b + 50, b + 500, 30 + rep);
        r[n++] = api(KVS_TREC_RUNTIME, "cudaGraphLaunch", 311, corr, b + 100, b + 200);
        r[n++] = link_ext(corr, 30 + (uint64_t)rep);
        r[n++] = replayed("cast_kernel", corr, 1077, b + 1000, b + 2000);
        r[n++] = replayed("after_kernel", corr, 78, b + 2000, b + 2500);
    }
    struct kvs_trace_device dev = h200();
    struct kvs_trace_meta m;
    make_meta(&m, &dev);
    char path[] = "/tmp/kvs_writer_graphXXXXXX";
    KVS_REQUIRE(write_temp(&m, r, n, path));
    cJSON *sum;
    kvs_check_trace_valid(path, &sum);
    unlink(path);
    if (!sum)
        return;
    /* the node's op, not the replay op around the launch; the node without
     * an op keeps its launch's */
    int casts = 0, afters = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, kvs_summary_array(sum, "kernels"))
    {
        const char *nm = cJSON_GetObjectItemCaseSensitive(k, "name")->valuestring;
        long long corr = kvs_summary_int(k, "correlation", -1);
        KVS_CHECK_EQ_INT(kvs_summary_int(k, "graph_id", -1), 5);
        if (!strcmp(nm, "cast_kernel")) {
            KVS_CHECK_EQ_INT(kvs_summary_int(k, "ext", -1), 20);
            KVS_CHECK_EQ_INT(kvs_summary_int(k, "graph_node", -1), 1077);
            casts++;
        } else {
            KVS_CHECK_EQ_INT(kvs_summary_int(k, "ext", -1), corr - 40 + 30);
            KVS_CHECK_EQ_INT(kvs_summary_int(k, "graph_node", -1), 78);
            afters++;
        }
    }
    KVS_CHECK_EQ_INT(casts, 2);
    KVS_CHECK_EQ_INT(afters, 2);
    /* layer_0 over each replay's two kernels (one span per replay), the
     * steps over their own */
    const cJSON *ga = kvs_summary_array(sum, "gpu_user_annotations");
    int layers = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, ga)
    {
        const char *nm = cJSON_GetObjectItemCaseSensitive(g, "name")->valuestring;
        if (strcmp(nm, "layer_0"))
            continue;
        int64_t want = T0 + 11000 + 20000 * layers;
        KVS_CHECK_EQ_INT(kvs_summary_int(g, "ts_ns", 0), want);
        KVS_CHECK_EQ_INT(kvs_summary_int(g, "dur_ns", 0), 1500);
        KVS_CHECK_EQ_INT(kvs_summary_int(g, "ext", 0), 1);
        layers++;
    }
    KVS_CHECK_EQ_INT(layers, 2);
    const cJSON *s1 = find_named(ga, "step_1", 7), *s2 = find_named(ga, "step_2", 7);
    KVS_REQUIRE(s1 && s2);
    KVS_CHECK_EQ_INT(kvs_summary_int(s1, "ts_ns", 0), T0 + 11000);
    KVS_CHECK_EQ_INT(kvs_summary_int(s2, "dur_ns", 0), 1500);
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(ga), 4);
    cJSON_Delete(sum);
}

static void test_gzip_equals_plain(void)
{
    struct doc d;
    doc_init(&d);
    KVS_REQUIRE(doc_write(&d));
    const char *plain = d.path;
    char gz[64];
    snprintf(gz, sizeof gz, "%s.json.gz", plain);
    KVS_REQUIRE(kvs_trace_write_json(&d.m, d.recs, d.n, gz, NULL) == KVS_STATUS_OK);
    size_t la, lb;
    char *a = slurp(plain, &la), *b = slurp(gz, &lb);
    KVS_CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
    FILE *f = fopen(gz, "rb");
    unsigned char magic[2] = {0, 0};
    KVS_CHECK(f && fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b);
    if (f)
        fclose(f);
    free(a);
    free(b);
    unlink(plain);
    unlink(gz);
}

static void test_many_records(void)
{
    /* 100k launches: the indices grow, every flow pairs, JSON stays valid */
    size_t nk = 100000, n = 0;
    struct kvs_trace_rec *r = calloc(3 * nk + 1, sizeof *r);
    KVS_REQUIRE(r);
    r[n++] = host(KVS_TREC_RANGE, "all", TID, T0, T0 + 4 * (int64_t)nk * 1000, 1);
    for (size_t i = 0; i < nk; i++) {
        int64_t t = T0 + (int64_t)i * 1000;
        uint32_t corr = (uint32_t)(i + 1);
        r[n++] = api(KVS_TREC_RUNTIME, "cudaLaunchKernel", 211, corr, t, t + 500);
        r[n++] = gpu(KVS_TREC_KERNEL, "tiny", corr, 7 + (uint32_t)(i % 2), t + 600, t + 900);
    }
    struct kvs_trace_meta m;
    kvs_trace_meta_init(&m);
    char path[] = "/tmp/kvs_writer_manyXXXXXX";
    bool written = write_temp(&m, r, n, path);
    free(r);
    KVS_REQUIRE(written);
    cJSON *sum;
    kvs_check_trace_valid(path, &sum);
    unlink(path);
    if (!sum)
        return;
    KVS_CHECK_EQ_INT(kvs_summary_int(sum, "flows", 0), (long long)nk);
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(kvs_summary_array(sum, "gpu_user_annotations")), 2);
    cJSON_Delete(sum);
}

static void test_check_script_can_fail(void)
{
    /* the checker must reject a truncated trace, or the checks above prove nothing */
    struct doc d;
    doc_init(&d);
    KVS_REQUIRE(doc_write(&d));
    const char *path = d.path;
    size_t len;
    char *t = slurp(path, &len);
    KVS_REQUIRE(t);
    FILE *f = fopen(path, "wb");
    KVS_REQUIRE(f);
    fwrite(t, 1, len / 2, f);
    fclose(f);
    free(t);
    cJSON *sum = NULL;
    int rc = kvs_check_trace(path, &sum);
    cJSON_Delete(sum);
    unlink(path);
    if (rc < 0)
        KVS_TEST_SKIP("python3 not available");
    KVS_CHECK_EQ_INT(rc, 2);
}

static void test_write_errors(void)
{
    struct doc d;
    doc_init(&d);
    struct kvs_logger quiet = {NULL, NULL, KVS_LOG_ERROR + 1};
    KVS_CHECK_EQ_INT(kvs_trace_write_json(&d.m, d.recs, d.n, "/nonexistent-dir/t.json", &quiet),
                     KVS_STATUS_IO);
    KVS_CHECK_EQ_INT(kvs_trace_write_json(&d.m, d.recs, d.n, "", &quiet), KVS_STATUS_INVALID_ARGUMENT);
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        KVS_CHECK_EQ_INT(kvs_trace_write_json_stream(&d.m, d.recs, d.n, full, &quiet), KVS_STATUS_IO);
        fclose(full);
    }
}

/* The engine's run facts, as kvscope engine --trace writes them (the agreed
 * schema, docs/report-json.md), beside "deviceProperties" at the top. */
static const char engine_json[] =
    "{\"schema\": \"kvscope.engine/1\", \"config\": \"glm5\", \"kv_path\": \"full-cast\", "
    "\"batch\": 1, \"context\": 4096, \"kv_capacity\": 495552, \"layers\": 78, \"tp\": 1, "
    "\"graph\": false, \"steps\": 4, \"bytes_per_step\": 147367000000, "
    "\"weight_bytes_per_step\": 80567000000, \"kv_bytes_per_step\": 66800000000, "
    "\"copy_gbps\": 4227.1, \"step_ms\": 96.67, \"note\": \"a } and a \\\" in a string\"}";

static void test_extra_object(void)
{
    struct doc d;
    doc_init(&d);
    const struct kvs_trace_extra extra[] = {{"kvscope.engine", engine_json},
                                            {"other", " { \"a\": [1, {\"b\": 2}] }\n"}};
    d.m.extra = extra, d.m.nextra = 2;
    KVS_REQUIRE(doc_write(&d));
    size_t len;
    char *text = slurp(d.path, &len);
    KVS_REQUIRE(text);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    KVS_REQUIRE(doc);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "kvscope.engine");
    KVS_REQUIRE(cJSON_IsObject(e));
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(e, "schema")->valuestring,
                     "kvscope.engine/1");
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(e, "kv_path")->valuestring, "full-cast");
    KVS_CHECK_EQ_INT(kvs_summary_int(e, "kv_capacity", 0), 495552);
    KVS_CHECK_EQ_INT(kvs_summary_int(e, "bytes_per_step", 0), 147367000000LL);
    KVS_CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "graph")));
    KVS_CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(e, "copy_gbps")->valuedouble, 4227.1, 1e-9);
    KVS_CHECK_EQ_STR(cJSON_GetObjectItemCaseSensitive(e, "note")->valuestring,
                     "a } and a \" in a string");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(doc, "other");
    KVS_CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "a")), 2);
    /* the writer's own keys are all still there */
    KVS_CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "deviceProperties")));
    KVS_CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "traceEvents")));
    KVS_CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "kvscope")));
    cJSON_Delete(doc);
    char keep[sizeof d.path + 8];
    snprintf(keep, sizeof keep, "%s.good", d.path);
    KVS_REQUIRE(rename(d.path, keep) == 0);
    int fd = open(d.path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    KVS_REQUIRE(fd >= 0);
    close(fd);

    /* refused before anything is written: the file stays as it was (empty) */
    static const struct {
        const char *key, *json;
    } bad[] = {
        {"kvscope", "{}"},              /* the writer's own key */
        {"traceEvents", "{}"},
        {"", "{}"},                     /* no key */
        {"x", NULL},
        {"x", "[1, 2]"},                /* not an object */
        {"x", "{\"a\": 1"},             /* unbalanced */
        {"x", "{\"a\": 1}}"},
        {"x", "{\"a\": 1} {}"},         /* two values */
        {"x", "{\"a\": \"open}"},       /* string never closed */
        {"x", "{\"a\": \"line\nbreak\"}"}, /* raw control character in a string */
        {"x", "{\"a\": [1}]"},       /* brackets that do not pair */
        {"x", "{\"a\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"}, /* 70 deep */
    };
    struct kvs_logger quiet = {NULL, NULL, KVS_LOG_ERROR + 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct kvs_trace_extra one = {bad[i].key, bad[i].json};
        d.m.extra = &one, d.m.nextra = 1;
        KVS_CHECK_MSG(kvs_trace_write_json(&d.m, d.recs, d.n, d.path, &quiet) ==
                          KVS_STATUS_INVALID_ARGUMENT,
                      "accepted extra %zu", i);
        FILE *devnull = fopen("/dev/null", "w");
        KVS_REQUIRE(devnull);
        KVS_CHECK(kvs_trace_write_json_stream(&d.m, d.recs, d.n, devnull, &quiet) ==
                  KVS_STATUS_INVALID_ARGUMENT);
        fclose(devnull);
    }
    const struct kvs_trace_extra twice[] = {{"k", "{}"}, {"k", "{}"}};
    d.m.extra = twice, d.m.nextra = 2;
    KVS_CHECK_EQ_INT(kvs_trace_write_json(&d.m, d.recs, d.n, d.path, &quiet), KVS_STATUS_INVALID_ARGUMENT);
    d.m.extra = NULL, d.m.nextra = 1;
    KVS_CHECK_EQ_INT(kvs_trace_write_json(&d.m, d.recs, d.n, d.path, &quiet), KVS_STATUS_INVALID_ARGUMENT);
    text = slurp(d.path, &len);
    KVS_CHECK(text && len == 0); /* nothing was written by any refused call */
    free(text);
    unlink(d.path);
    cJSON *sum;
    kvs_check_trace_valid(keep, &sum); /* and tests/check_trace.py reads the good one */
    cJSON_Delete(sum);
    unlink(keep);
}

/* each list refused, the bits left alone */
static void check_refused(const char *const *bad, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned bits = 7;
        KVS_CHECK_MSG(kvs_trace_parse_activities(bad[i], &bits) == KVS_STATUS_PARSE,
                      "accepted '%s'", bad[i]);
        KVS_CHECK_EQ_INT(bits, 7);
    }
}

/* Ops from PyTorch's hook: "Input Dims" / "Input type" given as torch.profiler's
 * text (tensor lists nest, scalars are [] "Scalar"), "Sequence number" and
 * "Fwd thread id"; text that is not such an array writes the op without shapes. */
static void test_torch_op_shapes(void)
{
    KVS_CHECK(kvs_json_shape_ok("[]"));
    KVS_CHECK(kvs_json_shape_ok("[[1, 4, 4, 8192, 64], [1, 4, 4, 8192, 64], []]"));
    KVS_CHECK(kvs_json_shape_ok("[[[2, 3], [2, 3]], [], [-1]]"));
    KVS_CHECK(kvs_json_shape_ok("[\"c10::BFloat16\", \"Scalar\", \"\", \"TensorList\"]"));
    KVS_CHECK(kvs_json_shape_ok("[ [ 1 ,2 ] ] "));
    static const char *bad[] = {
        NULL, "", " ", "[", "]", "[1,]", "[,1]", "[1 2]", "[1][2]", "[1] x", "{}", "[1.5]",
        "[-]", "[\"a]", "[\"a\\\"b\"]", "[\"a\nb\"]", "[\"\xc3\xa9\"]", "[true]", "[[1]", "[1]]",
        "[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]", /* 17 deep */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (kvs_json_shape_ok(bad[i])) {
            fprintf(stderr, "accepted bad shape text %zu\n", i);
            KVS_CHECK(0);
        }
    KVS_CHECK(kvs_json_shape_ok("[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]")); /* 16 deep */

    struct kvs_trace_rec r[3];
    r[0] = host(KVS_TREC_OP, "aten::copy_", TID, T0, T0 + 5000, 7);
    r[0].u.host.input_dims = "[[1, 4, 4, 8192, 64], [1, 4, 4, 8192, 64], []]";
    r[0].u.host.input_types = "[\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]";
    r[1] = host(KVS_TREC_OP, "aten::cat", TID, T0 + 6000, T0 + 7000, 8);
    r[1].u.host.input_dims = "[[[2, 3], [2, 3]], []]";
    r[1].u.host.input_types = "[\"TensorList\", \"Scalar\"]";
    r[1].u.host.has_sequence = 1;
    r[1].u.host.sequence_nr = 12;
    r[1].u.host.fwd_tid = 1;
    r[2] = host(KVS_TREC_OP, "aten::bad", TID, T0 + 8000, T0 + 9000, 9);
    r[2].u.host.input_dims = "[[1, 2], \"x\"}]"; /* not an array that closes */
    r[2].u.host.input_types = "[\"float\"]";
    struct kvs_trace_meta m;
    kvs_trace_meta_init(&m);
    m.pid = PID;
    char path[32] = "/tmp/kvs_writer_XXXXXX";
    KVS_REQUIRE(write_temp(&m, r, 3, path));
    size_t len;
    char *text = slurp(path, &len);
    KVS_REQUIRE(text);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    KVS_REQUIRE(doc);
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
    int seen = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (!cJSON_IsString(name) || !args || !cJSON_IsString(cat) ||
            strcmp(cat->valuestring, "cpu_op"))
            continue;
        const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
        const cJSON *types = cJSON_GetObjectItemCaseSensitive(args, "Input type");
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(args, "Sequence number");
        char *d = dims ? cJSON_PrintUnformatted(dims) : NULL;
        char *t = types ? cJSON_PrintUnformatted(types) : NULL;
        KVS_REQUIRE(d && t);
        if (!strcmp(name->valuestring, "aten::copy_")) {
            seen |= 1;
            KVS_CHECK_EQ_STR(d, "[[1,4,4,8192,64],[1,4,4,8192,64],[]]");
            KVS_CHECK_EQ_STR(t, "[\"c10::BFloat16\",\"c10::BFloat16\",\"Scalar\"]");
            KVS_CHECK(seq == NULL);
        } else if (!strcmp(name->valuestring, "aten::cat")) {
            seen |= 2;
            KVS_CHECK_EQ_STR(d, "[[[2,3],[2,3]],[]]");
            KVS_CHECK_EQ_STR(t, "[\"TensorList\",\"Scalar\"]");
            KVS_CHECK(cJSON_IsNumber(seq) && seq->valuedouble == 12);
            const cJSON *fwd = cJSON_GetObjectItemCaseSensitive(args, "Fwd thread id");
            KVS_CHECK(cJSON_IsNumber(fwd) && fwd->valuedouble == 1);
        } else if (!strcmp(name->valuestring, "aten::bad")) {
            seen |= 4;
            KVS_CHECK_EQ_STR(d, "[]");
            KVS_CHECK_EQ_STR(t, "[]");
        }
        free(d);
        free(t);
    }
    KVS_CHECK_EQ_INT(seen, 7);
    cJSON_Delete(doc);
    unlink(path);
}

static void test_parse_activities(void)
{
    unsigned bits = 12345;
    KVS_CHECK_EQ_INT(kvs_trace_parse_activities("kernel,memcpy", &bits), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(bits, KVS_TRACE_KERNEL | KVS_TRACE_MEMCPY);
    KVS_CHECK_EQ_INT(kvs_trace_parse_activities("all", &bits), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(bits, KVS_TRACE_ALL);
    KVS_CHECK_EQ_INT(kvs_trace_parse_activities("nvtx,extcorr,kernel", &bits), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(bits, KVS_TRACE_NVTX | KVS_TRACE_EXTERNAL_CORRELATION | KVS_TRACE_KERNEL);
    const char *bad[] = {"", "kern", "kernel,,memcpy", "kernel,bogus", ","};
    check_refused(bad, sizeof bad / sizeof bad[0]);
}

/* the default records the runtime/driver calls the analysis reads, not
 * every call; every call stays behind runtime-all/driver-all and "all" */
static void test_activities_default(void)
{
    unsigned bits = 0;
    KVS_CHECK_EQ_INT(kvs_trace_parse_activities("default", &bits), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(bits, KVS_TRACE_DEFAULT);
    KVS_CHECK(bits & KVS_TRACE_RUNTIME && bits & KVS_TRACE_DRIVER && bits & KVS_TRACE_KERNEL);
    KVS_CHECK(!(bits & KVS_TRACE_RUNTIME_ALL) && !(bits & KVS_TRACE_DRIVER_ALL));
    KVS_CHECK(!(bits & KVS_TRACE_SYNC)); /* CUPTI's sync records cost every runtime call */
    KVS_CHECK_EQ_INT(kvs_trace_parse_activities("runtime-all,driver-all", &bits), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(bits, KVS_TRACE_RUNTIME_ALL | KVS_TRACE_DRIVER_ALL);
    KVS_CHECK_EQ_INT(kvs_trace_parse_activities("default,runtime-all", &bits), KVS_STATUS_OK);
    KVS_CHECK_EQ_INT(bits, KVS_TRACE_DEFAULT | KVS_TRACE_RUNTIME_ALL);
    KVS_CHECK_EQ_INT(kvs_trace_parse_activities("all", &bits), KVS_STATUS_OK);
    KVS_CHECK(bits & KVS_TRACE_RUNTIME_ALL && bits & KVS_TRACE_DRIVER_ALL);
    KVS_CHECK_EQ_INT(bits & KVS_TRACE_DEFAULT, KVS_TRACE_DEFAULT);
    const char *bad[] = {"runtime-al", "runtime-", "-all", "defaults", "runtime_all"};
    check_refused(bad, sizeof bad / sizeof bad[0]);
}

static void test_activities_str(void)
{
    char b[256];
    kvs_trace_activities_str(KVS_TRACE_DEFAULT, b, sizeof b);
    KVS_CHECK_EQ_STR(b, "kernel,memcpy,memset,runtime,driver,extcorr,overhead,nvtx");
    kvs_trace_activities_str(KVS_TRACE_ALL, b, sizeof b);
    KVS_CHECK_EQ_STR(b, "kernel,memcpy,memset,runtime-all,driver-all,sync,extcorr,overhead,nvtx");
    kvs_trace_activities_str(KVS_TRACE_KERNEL | KVS_TRACE_NVTX | KVS_TRACE_RUNTIME, b, sizeof b);
    KVS_CHECK_EQ_STR(b, "kernel,runtime,nvtx");
    kvs_trace_activities_str(0, b, sizeof b);
    KVS_CHECK_EQ_STR(b, "");
    /* each list reads back as the bits it came from */
    const unsigned lists[] = {KVS_TRACE_DEFAULT, KVS_TRACE_KERNEL | KVS_TRACE_DRIVER_ALL,
                              KVS_TRACE_MEMSET | KVS_TRACE_SYNC | KVS_TRACE_OVERHEAD};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        unsigned back = 0;
        kvs_trace_activities_str(lists[i], b, sizeof b);
        KVS_CHECK_EQ_INT(kvs_trace_parse_activities(b, &back), KVS_STATUS_OK);
        KVS_CHECK_EQ_INT(back, lists[i]);
    }
    /* too small: cut and terminated, the length it needs returned */
    char small[8];
    size_t need = kvs_trace_activities_str(KVS_TRACE_DEFAULT, small, sizeof small);
    KVS_CHECK_EQ_INT(need, strlen("kernel,memcpy,memset,runtime,driver,extcorr,overhead,nvtx"));
    KVS_CHECK_EQ_INT(strlen(small), sizeof small - 1);
}

/* CUPTI's names of the calls (cupti_runtime_cbid.h, cupti_driver_cbid.h) */
static void test_api_recorded(void)
{
    const char *kept[] = {
        "cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernelExC_v11060",
        "__cudaLaunchKernel_v13000", "cudaLaunchCooperativeKernel_v9000", "cudaGraphLaunch_v10000",
        "cudaMemcpyAsync_v3020", "cudaMemcpy_v3020", "cudaMemcpy2DAsync_ptsz_v7000",
        "cudaMemsetAsync_v3020", "cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020",
        "cudaEventSynchronize_v3020", "cudaStreamWaitEvent_v3020", "cudaStreamBeginCapture_v10000",
        "cudaStreamEndCapture_v10000", "cudaGraphInstantiateWithFlags_v11040", "cuLaunchKernel",
        "cuLaunchKernelEx", "cuGraphLaunch", "cuMemcpyDtoHAsync_v2", "cuMemsetD32Async",
        "cuStreamSynchronize", "cuCtxSynchronize", "cudaLaunchKernel"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        KVS_CHECK_MSG(kvs_trace_api_recorded(kept[i]), "%s left out", kept[i]);
    const char *left[] = {"cudaGetDevice_v3020", "cudaSetDevice_v3020", "cudaGetLastError_v3020",
                          "cudaPeekAtLastError_v3020", "cudaEventRecord_v3020",
                          "cudaEventQuery_v3020", "cudaStreamIsCapturing_v10000",
                          "cudaDeviceGetAttribute_v5000", "cudaFuncSetAttribute_v9000",
                          "cudaLaunchHostFunc_v10000", "cudaGraphAddMemcpyNode_v10000",
                          "cudaMalloc_v3020", "cuKernelGetAttribute", "cuKernelGetName",
                          "cuGetProcAddress_v2", "cuCtxGetCurrent", "", NULL};
    for (size_t i = 0; i < sizeof left / sizeof left[0]; i++)
        KVS_CHECK_MSG(!kvs_trace_api_recorded(left[i]), "%s recorded",
                      left[i] ? left[i] : "NULL");
}

/* the trace says what was recorded: "activities" in its "kvscope" object */
static void test_meta_activities(void)
{
    const struct {
        unsigned bits;
        const char *text; /* NULL: no key */
    } cases[] = {
        {KVS_TRACE_DEFAULT, "\"activities\": [\"kernel\", \"memcpy\", \"memset\", \"runtime\", "
                            "\"driver\", \"extcorr\", \"overhead\", \"nvtx\"]"},
        {KVS_TRACE_KERNEL | KVS_TRACE_RUNTIME | KVS_TRACE_RUNTIME_ALL,
         "\"activities\": [\"kernel\", \"runtime-all\"]"},
        {0, NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct doc d;
        doc_init(&d);
        d.m.activities = cases[c].bits;
        KVS_REQUIRE(doc_write(&d));
        size_t len;
        char *text = slurp(d.path, &len);
        KVS_REQUIRE(text);
        if (cases[c].text)
            KVS_CHECK_MSG(strstr(text, cases[c].text) != NULL, "case %zu: %.600s", c, text);
        else
            KVS_CHECK(strstr(text, "\"activities\"") == NULL);
        free(text);
        cJSON *sum;
        kvs_check_trace_valid(d.path, &sum); /* still one valid document */
        unlink(d.path);
        if (!sum)
            continue;
        const cJSON *acts = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(sum, "kvscope"), "activities");
        KVS_CHECK_EQ_INT(cJSON_IsArray(acts) ? cJSON_GetArraySize(acts) : -1,
                         c == 0 ? 8 : c == 1 ? 2 : -1);
        cJSON_Delete(sum);
    }
}

/* kvscope.kernels_without_call: with API calls recorded, the kernels whose
 * launch call is not among the records (the synthetic document's kernel 99;
 * its copy and memset are not kernels); without them nothing to say; with
 * every API record gone, both kernels */
static void test_kernels_without_call(void)
{
    const struct {
        unsigned bits;
        int drop_api;
        long long want;
    } cases[] = {
        {KVS_TRACE_DEFAULT, 0, 1},
        {KVS_TRACE_KERNEL | KVS_TRACE_DRIVER_ALL | KVS_TRACE_DRIVER, 0, 1},
        {KVS_TRACE_KERNEL | KVS_TRACE_MEMCPY | KVS_TRACE_NVTX, 0, 0},
        {0, 0, 0},
        {KVS_TRACE_DEFAULT, 1, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct doc d;
        doc_init(&d);
        d.m.activities = cases[c].bits;
        if (cases[c].drop_api) {
            size_t k = 0;
            for (size_t i = 0; i < d.n; i++)
                if (d.recs[i].kind != KVS_TREC_RUNTIME && d.recs[i].kind != KVS_TREC_DRIVER)
                    d.recs[k++] = d.recs[i];
            d.n = k;
        }
        KVS_REQUIRE(doc_write(&d));
        cJSON *sum;
        kvs_check_trace_valid(d.path, &sum);
        unlink(d.path);
        KVS_REQUIRE(sum);
        const cJSON *kv = cJSON_GetObjectItemCaseSensitive(sum, "kvscope");
        KVS_CHECK_MSG(kvs_summary_int(kv, "kernels_without_call", -1) == cases[c].want,
                      "case %zu: kernels_without_call %lld, want %lld", c,
                      kvs_summary_int(kv, "kernels_without_call", -1), cases[c].want);
        cJSON_Delete(sum);
    }
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"format_us", test_format_us},
        {"json_escape", test_json_escape},
        {"long_string_chunks", test_long_string_chunks},
        {"map", test_map},
        {"document", test_document},
        {"graph_replay", test_graph_replay},
        {"gzip_equals_plain", test_gzip_equals_plain},
        {"many_records", test_many_records},
        {"check_script_can_fail", test_check_script_can_fail},
        {"write_errors", test_write_errors},
        {"extra_object", test_extra_object},
        {"torch_op_shapes", test_torch_op_shapes},
        {"parse_activities", test_parse_activities},
        {"activities_default", test_activities_default},
        {"activities_str", test_activities_str},
        {"api_recorded", test_api_recorded},
        {"meta_activities", test_meta_activities},
        {"kernels_without_call", test_kernels_without_call},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
