/* launch_size.h — size PyTorch's elementwise copy/cast kernels from their
 * launch when no op shapes describe them (CUDA-graph replays, eager traces
 * recorded without record_shapes, unannotated programs).
 *
 * defines: struct kvs_launch_kernel, struct kvs_launch_acc, kvs_launch_kernel_parse,
 *          kvs_launch_elements, kvs_launch_acc_add, kvs_launch_size_group,
 *          kvs_kv_dtype_name
 *
 * What the demangled name says: the loop (unrolled_elementwise_kernel<F,
 * array, EPT, ...>: EPT elements per thread; elementwise_kernel<NT, VT, F>:
 * VT per thread; vectorized_elementwise_kernel<VEC, F, array>: VEC wide
 * loads, 4 to 16 elements per thread depending on the PyTorch version), the
 * functor's argument type (direct_copy_kernel_cuda: the destination dtype;
 * bfloat16/float16/float8_copy_kernel_cuda: the source, the destination in
 * the name) and whether it loads with a cast (LoadWithCast: the source dtype
 * differs and is not in the name). PyTorch launches these with grid =
 * ceil(N / (block x per-thread)), so grid x block says N to within one
 * block's work: ((grid-1) x block x min, grid x block x max]. A count that
 * is rows x a KV row width of the model (or N / --kv-capacity) in exactly
 * one way is taken as exact (docs/analysis.md: "Sizing from launches").
 * Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_LAUNCH_SIZE_H
#define KVS_ANALYZERS_LAUNCH_SIZE_H

#include <stdbool.h>
#include <stdint.h>

struct kvs_group_acc;
struct kvs_gpu_rec;
struct kvs_intern;
struct kvs_model;

/* What sizing from launches knows beyond the launches themselves. */
struct kvs_launch_facts {
    const struct kvs_intern *strings; /* the kernels' names */
    const struct kvs_model *model;    /* the model's KV rows; NULL without a model */
    int64_t kv_capacity;              /* --kv-capacity, 0 unknown */
    const char *kv_dtype;             /* --kv-dtype, or NULL */
};

struct kvs_launch_kernel {
    int per_thread_min, per_thread_max; /* elements one thread handles */
    const char *dst_dtype;              /* PyTorch name ("c10::BFloat16"), static */
    const char *src_dtype;              /* NULL: not in the name */
    int dst_bits, src_bits;             /* src_bits 0 when unknown */
    bool load_cast;                     /* LoadWithCast<...> in the name */
};

/* What a group's activities say through their launches (in kvs_group_acc). */
struct kvs_launch_acc {
    int64_t sized, unsized;            /* activities sizable / not (a kernel of no known
                                          loop, no grid or block recorded) */
    int64_t elems_lo, elems_hi;        /* sums over the sized activities */
    int64_t bytes_hi;                  /* sum; valid when src_known */
    bool src_known;                    /* every sized activity's source dtype is known */
    bool uniform;                      /* one kernel name, grid and block for all */
    uint32_t kernel;                   /* the first activity's name, grid, block */
    int64_t grid;
    int32_t block;
    struct kvs_launch_kernel k;        /* of the first activity */
};

/* Parse a demangled kernel name; false when it is no PyTorch elementwise
 * copy/cast kernel that launches sizing knows (then *k is unset). */
bool kvs_launch_kernel_parse(const char *name, struct kvs_launch_kernel *k);

/* The element count range a launch allows; false when blocks or threads
 * are not positive or the range overflows. */
bool kvs_launch_elements(const struct kvs_launch_kernel *k, int64_t blocks, int64_t threads,
                         int64_t *lo, int64_t *hi);

/* Count one of a group's activities (name parsed through a cache the
 * caller frees with kvs_launch_cache_free). */
struct kvs_launch_cache;
int kvs_launch_acc_add(struct kvs_launch_cache **cache, const struct kvs_launch_facts *lf,
                       struct kvs_launch_acc *a, const struct kvs_gpu_rec *g); /* -1: no memory */
void kvs_launch_cache_free(struct kvs_launch_cache *cache);

/* A group whose dims gave no bytes: size it from its launches (bytes per
 * call, its bound, rows x row as its shape where they factor uniquely). */
void kvs_launch_size_group(const struct kvs_launch_facts *lf, struct kvs_group_acc *g);

/* --kv-dtype's spellings (fp8, e4m3, bf16, fp16, fp32, or a PyTorch dtype
 * name) -> the PyTorch name; NULL when unknown. */
const char *kvs_kv_dtype_name(const char *spec);

#endif
