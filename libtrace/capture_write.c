/* capture_write.c — kvs_trace_write: walk the ready CUPTI buffers into plain
 * records (walking kept apart from handling a record, cupti_records.c),
 * add the host records and the graph-node links, keep one rank's share when asked (kvs_trace_write_part,
 * select.c), describe the devices, and hand everything to the writer. Runs
 * on the controlling thread after kvs_trace_stop.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "capture_internal.h"
#include "cupti_records.h"
#include "kvscope/check.h"

// ----------------------------------------------------------------------------
// names

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", once per callback id */
static const char *api_name(void *user, int driver, uint32_t cbid)
{
    struct kvs_trace *t = user;
    size_t lim = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    if (cbid >= lim)
        return NULL;
    if (!t->api_names[driver] && !(t->api_names[driver] = calloc(lim, sizeof(char *))))
        return NULL;
    char **slot = &t->api_names[driver][cbid];
    if (!*slot) {
        const char *nm = NULL;
        if (cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API,
                                 cbid, &nm) != CUPTI_SUCCESS ||
            !nm)
            return NULL;
        char *copy = strdup(nm);
        if (!copy)
            return NULL;
        char *v = strrchr(copy, '_');
        if (v && v[1] == 'v' && v[2] && strspn(v + 2, "0123456789") == strlen(v + 2))
            *v = '\0';
        *slot = copy;
    }
    return *slot;
}

/* CUPTI shares one name pointer among a kernel's records: demangle once. */
static const char *kernel_name(void *user, const char *mangled)
{
    struct kvs_trace *t = user;
    uint64_t v;
    if (kvs_map_get(&t->demangled, (uint64_t)(uintptr_t)mangled, &v))
        return (const char *)(uintptr_t)v;
    char *nice = kvs_demangle(mangled);
    if (!nice)
        nice = strdup(mangled);
    if (!nice)
        return mangled;
    if (kvs_map_put(&t->demangled, (uint64_t)(uintptr_t)mangled, (uint64_t)(uintptr_t)nice) != 0) {
        free(nice);
        return mangled;
    }
    return nice;
}

// ----------------------------------------------------------------------------
// buffers

/* Calls fn on every record of a CUPTI buffer; returns how many. */
static size_t walk_buffer(const struct kvs_pool_view *v, struct kvs_trace *t,
                          void (*fn)(const CUpti_Activity *, void *), void *user)
{
    CUpti_Activity *rec = NULL;
    size_t n = 0;
    for (;;) {
        CUptiResult r = cuptiActivityGetNextRecord((uint8_t *)v->data, v->valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED)
            break;
        if (r != CUPTI_SUCCESS) {
            KVS_CUPTI_STATUS(&t->lg, r); /* logs; the rest of this buffer is unreadable */
            break;
        }
        if (fn)
            fn(rec, user);
        n++;
    }
    return n;
}

struct convert_ctx {
    struct kvs_cupti_names names;
    struct kvs_trace_rec *out;
    size_t n, cap;
};

static void convert_one(const CUpti_Activity *rec, void *user)
{
    struct convert_ctx *c = user;
    if (c->n < c->cap && kvs_cupti_convert(&c->names, rec, &c->out[c->n]))
        c->n++;
}

// ----------------------------------------------------------------------------
// devices, through the driver (no context needed; works at exit too). The
// driver is looked up at run time rather than linked, so that programs
// linking the capture still start on machines without an NVIDIA driver.

struct driver {
    CUresult (*init)(unsigned);
    CUresult (*version)(int *);
    CUresult (*get)(CUdevice *, int);
    CUresult (*name)(char *, int, CUdevice);
    CUresult (*mem)(size_t *, CUdevice);
    CUresult (*attr)(int *, CUdevice_attribute, CUdevice);
};

/* init: call cuInit(0) (the capture's own thread, linked use); without it
 * the queries fail until the program itself has initialised CUDA, so a
 * helper thread can poll without starting CUDA in a program that never
 * would. */
static int load_driver(struct driver *d, int init)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        return -1; /* kept open: the process uses it anyway */
    *(void **)&d->init = dlsym(h, "cuInit");
    *(void **)&d->version = dlsym(h, "cuDriverGetVersion");
    *(void **)&d->get = dlsym(h, "cuDeviceGet");
    *(void **)&d->name = dlsym(h, "cuDeviceGetName");
    *(void **)&d->mem = dlsym(h, "cuDeviceTotalMem_v2");
    *(void **)&d->attr = dlsym(h, "cuDeviceGetAttribute");
    if (!d->init || !d->version || !d->get || !d->name || !d->mem || !d->attr ||
        (init && d->init(0) != CUDA_SUCCESS))
        return -1;
    return 0;
}

static int query_device(const struct driver *drv, int id, struct kvs_trace_device *d)
{
    CUdevice dev;
    if (drv->get(&dev, id) != CUDA_SUCCESS)
        return -1;
    memset(d, 0, sizeof *d);
    d->id = id;
    if (drv->name(d->name, sizeof d->name, dev) != CUDA_SUCCESS)
        snprintf(d->name, sizeof d->name, "GPU %d", id);
    size_t mem = 0;
    if (drv->mem(&mem, dev) == CUDA_SUCCESS)
        d->total_global_mem = mem;
    static const struct {
        CUdevice_attribute a;
        size_t off;
    } attrs[] = {
#define A(attr, field) {attr, offsetof(struct kvs_trace_device, field)}
        A(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, compute_major),
        A(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, compute_minor),
        A(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, max_threads_per_block),
        A(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_mp),
        A(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, regs_per_block),
        A(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, regs_per_mp),
        A(CU_DEVICE_ATTRIBUTE_WARP_SIZE, warp_size),
        A(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, shared_mem_per_block),
        A(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, shared_mem_per_block_optin),
        A(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, shared_mem_per_mp),
        A(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, num_sms),
#undef A
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = 0;
        if (drv->attr(&v, attrs[i].a, dev) == CUDA_SUCCESS)
            memcpy((char *)d + attrs[i].off, &v, sizeof v);
    }
    return 0;
}

int kvs_capture_query_devices(struct kvs_trace *t, int init_driver)
{
    struct driver drv;
    if (load_driver(&drv, init_driver) != 0)
        return -1;
    CUresult (*count)(int *) = NULL;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        *(void **)&count = dlsym(h, "cuDeviceGetCount");
    int n = 0;
    if (!count || count(&n) != CUDA_SUCCESS)
        return -1;
    if (n > KVS_MAX_DEVICES)
        n = KVS_MAX_DEVICES;
    struct kvs_trace_device d[KVS_MAX_DEVICES];
    int got = 0;
    for (int id = 0; id < n; id++)
        got += query_device(&drv, id, &d[got]) == 0;
    pthread_mutex_lock(&t->dev_mu);
    if (got > 0) {
        memcpy(t->devices, d, (size_t)got * sizeof d[0]);
        t->ndevices = got;
    }
    pthread_mutex_unlock(&t->dev_mu);
    return got;
}

// ----------------------------------------------------------------------------
// write

enum kvs_status kvs_trace_set_extra(struct kvs_trace *t, const char *key, const char *json)
{
    if (!t || !key)
        return KVS_STATUS_INVALID_ARGUMENT;
    int at = 0;
    while (at < t->nextra && strcmp(t->extra[at].key, key))
        at++;
    if (!json) { /* remove */
        if (at == t->nextra)
            return KVS_STATUS_OK;
        free((void *)(uintptr_t)t->extra[at].key);
        free((void *)(uintptr_t)t->extra[at].json);
        memmove(&t->extra[at], &t->extra[at + 1], (size_t)(t->nextra - at - 1) * sizeof t->extra[0]);
        t->nextra--;
        return KVS_STATUS_OK;
    }
    struct kvs_trace_extra one = {key, json};
    KVS_TRY(kvs_trace_check_extra(&one, 1, &t->lg));
    if (at == KVS_TRACE_MAX_EXTRA) {
        kvs_log(&t->lg, KVS_LOG_ERROR, "kvs_trace_set_extra: more than %d extra objects",
                KVS_TRACE_MAX_EXTRA);
        return KVS_STATUS_LIMIT;
    }
    char *j = strdup(json), *k = at < t->nextra ? NULL : strdup(key);
    if (!j || (at == t->nextra && !k)) {
        free(j);
        free(k);
        return KVS_STATUS_NO_MEMORY;
    }
    if (at < t->nextra) {
        free((void *)(uintptr_t)t->extra[at].json);
    } else {
        t->extra[at].key = k;
        t->nextra++;
    }
    t->extra[at].json = j;
    return KVS_STATUS_OK;
}

/* The API calls recorded by callback (capture_api.c) after the CUPTI
 * records, and GPU work that carries the id of a driver call made inside a
 * recorded runtime call given the runtime call's id, so that it finds its
 * launch. 0 ok, -1 no memory. */
static int add_api_calls(struct kvs_trace *t, struct convert_ctx *c, const uint32_t *off,
                         uint32_t ngen)
{
    struct kvs_map alias;
    if (kvs_map_init(&alias, 64) != 0)
        return -1;
    size_t ncupti = c->n;
    int failed = 0;
    c->n += kvs_capture_api_collect(t, c->out + c->n, c->cap - c->n, api_name, &alias, &failed,
                                    off, ngen);
    if (alias.n) {
        for (size_t i = 0; i < ncupti; i++) {
            struct kvs_trace_rec *r = &c->out[i];
            uint64_t to;
            if (r->correlation && r->kind != KVS_TREC_RUNTIME && r->kind != KVS_TREC_DRIVER &&
                kvs_map_get(&alias, r->correlation, &to))
                r->correlation = (uint32_t)to;
        }
    }
    kvs_map_free(&alias);
    return failed ? -1 : 0;
}

enum kvs_status kvs_trace_write(struct kvs_trace *t, const char *path)
{
    return kvs_trace_write_part(t, path, NULL);
}

enum kvs_status kvs_trace_write_part(struct kvs_trace *t, const char *path,
                                     const struct kvs_trace_part *part)
{
    if (!t || !path)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (atomic_load(&t->running)) {
        kvs_log(&t->lg, KVS_LOG_ERROR, "kvs_trace_write: stop the capture first");
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    struct kvs_pool_view *views = calloc(t->pool.max_buffers, sizeof *views);
    if (!views)
        return KVS_STATUS_NO_MEMORY;
    size_t nv = kvs_pool_ready(&t->pool, views, t->pool.max_buffers);
    size_t ncupti = 0;
    for (size_t i = 0; i < nv; i++)
        ncupti += walk_buffer(&views[i], t, NULL, NULL);
    size_t nhost = kvs_host_store_count(&t->host);
    size_t napi_cb = kvs_capture_api_count(t);
    pthread_mutex_lock(&t->graph_mu);
    size_t nnodes = t->ngraph_nodes;
    pthread_mutex_unlock(&t->graph_mu);
    struct convert_ctx c = {{api_name, kernel_name, t, t->clock_offset_ns, 0}, NULL, 0,
                            ncupti + napi_cb + nhost + nnodes};
    c.out = malloc((c.cap ? c.cap : 1) * sizeof *c.out);
    struct kvs_trace_device *devs = calloc(KVS_MAX_DEVICES, sizeof *devs);
    if (!c.out || !devs) {
        free(c.out);
        free(devs);
        free(views);
        kvs_log(&t->lg, KVS_LOG_ERROR, "kvs_trace_write: no memory for %zu records", c.cap);
        return KVS_STATUS_NO_MEMORY;
    }
    /* after a detach CUPTI may number correlation ids from 1 again: each
     * attachment's ids are moved above every earlier one's where they would
     * meet (kernels and their calls alike: both carry the attachment) */
    uint32_t ngen = atomic_load(&t->attach_gen) + 1;
    uint32_t *off = NULL, *lo = NULL, *hi = NULL;
    size_t *vend = NULL;
    if (ngen > 1) {
        off = calloc(ngen, sizeof *off);
        lo = calloc(ngen, sizeof *lo);
        hi = calloc(ngen, sizeof *hi);
        vend = calloc(nv ? nv : 1, sizeof *vend);
        if (!off || !lo || !hi || !vend) {
            free(off);
            free(lo);
            free(hi);
            free(vend);
            off = lo = hi = NULL;
            vend = NULL;
            ngen = 1;
            kvs_log(&t->lg, KVS_LOG_WARN, "kvs_trace_write: no memory to renumber correlation "
                                          "ids after a detach; kernels may meet the wrong call");
        }
    }
    for (size_t i = 0; i < nv; i++) {
        walk_buffer(&views[i], t, convert_one, &c);
        if (vend)
            vend[i] = c.n;
    }
    if (ngen > 1) {
        kvs_capture_api_corr_range(t, ngen, lo, hi);
        for (size_t i = 0, k = 0; i < nv; k = vend[i], i++) {
            unsigned g = views[i].gen < ngen ? views[i].gen : ngen - 1;
            for (size_t j = k; j < vend[i]; j++) {
                uint32_t x = c.out[j].correlation;
                if (!x)
                    continue;
                lo[g] = x < lo[g] ? x : lo[g];
                hi[g] = x > hi[g] ? x : hi[g];
            }
        }
        uint64_t top = 0; /* the largest id given so far, renumbered */
        int overflow = 0;
        for (uint32_t g = 0; g < ngen; g++) {
            if (lo[g] > hi[g])
                continue; /* nothing recorded under it */
            uint64_t o = lo[g] <= top ? top + 1 - lo[g] : 0;
            if (hi[g] + o > UINT32_MAX) {
                overflow = 1;
                o = 0;
            }
            off[g] = (uint32_t)o;
            if (hi[g] + o > top)
                top = hi[g] + o;
        }
        if (overflow)
            kvs_log(&t->lg, KVS_LOG_WARN, "kvs_trace_write: correlation ids beyond 32 bits after "
                                          "%u attachments: some kernels may meet the wrong call",
                    ngen);
        for (size_t i = 0, k = 0; i < nv; k = vend[i], i++) {
            unsigned g = views[i].gen < ngen ? views[i].gen : ngen - 1;
            for (size_t j = k; off[g] && j < vend[i]; j++)
                if (c.out[j].correlation)
                    c.out[j].correlation += off[g];
        }
    }
    free(views);
    int api_failed = add_api_calls(t, &c, off, ngen);
    free(off);
    free(lo);
    free(hi);
    free(vend);
    if (api_failed != 0) {
        free(c.out);
        free(devs);
        kvs_log(&t->lg, KVS_LOG_ERROR, "kvs_trace_write: no memory to link API calls");
        return KVS_STATUS_NO_MEMORY;
    }
    int64_t end = t->window_end_ns ? t->window_end_ns : kvs_now_ns();
    c.n += kvs_host_store_collect(&t->host, c.out + c.n, c.cap - c.n, end);
    pthread_mutex_lock(&t->graph_mu); /* graph nodes: links for replayed work */
    if (nnodes > t->ngraph_nodes)
        nnodes = t->ngraph_nodes;
    if (nnodes) /* memcpy from NULL is undefined even for 0 bytes */
        memcpy(c.out + c.n, t->graph_nodes, nnodes * sizeof *c.out);
    pthread_mutex_unlock(&t->graph_mu);
    c.n += nnodes;
    if (part) {
        size_t kept = kvs_trace_select(c.out, c.n, part);
        if (kept == (size_t)-1) {
            free(c.out);
            free(devs);
            kvs_log(&t->lg, KVS_LOG_ERROR, "kvs_trace_write: no memory to select a rank's records");
            return KVS_STATUS_NO_MEMORY;
        }
        c.n = kept;
    }

    struct kvs_trace_meta m;
    kvs_trace_meta_init(&m);
    m.base_time_ns = t->base_time_ns;
    m.pid = t->pid;
    m.process_name = t->process_name;
    m.trace_name = path;
    m.rank = t->cfg.rank;
    m.world_size = t->cfg.world_size;
    if (part && part->rank >= 0) {
        m.rank = part->rank;
        m.world_size = part->world_size;
        m.backend = part->backend;
    }
    uint32_t cupti_version = 0;
    if (cuptiGetVersion(&cupti_version) == CUPTI_SUCCESS)
        m.cupti_version = (int)cupti_version;
    struct driver drv;
    int version = 0;
    if (load_driver(&drv, 0) == 0 && drv.version(&version) == CUDA_SUCCESS)
        m.cuda_driver_version = version;
    m.window = t->window;
    m.activities = t->kinds_recorded;
    if (t->launches_by_driver) /* some window recorded them so */
        m.runtime_launches = "driver";
    m.extra = t->extra;
    m.nextra = t->nextra;
    m.window_start_ns = t->window_start_ns;
    m.window_end_ns = end;
    if (!t->ndevices)
        kvs_capture_query_devices(t, 1); /* fails at exit once the driver is gone */
    pthread_mutex_lock(&t->dev_mu);
    m.ndevices = t->ndevices;
    memcpy(devs, t->devices, (size_t)t->ndevices * sizeof *devs);
    pthread_mutex_unlock(&t->dev_mu);
    m.devices = devs;
    kvs_trace_get_stats(t, &m.stats);
    m.stats.cupti_overhead_ns = c.names.overhead_ns;
    enum kvs_status st = kvs_trace_write_json(&m, c.out, c.n, path, &t->lg);
    free(devs);
    free(c.out);
    return st;
}
