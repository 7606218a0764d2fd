/* kernels/src/pdl_impl.cuh — programmatic dependent launch (PDL, sm_90) for
 * the kernels of a decode step: each is launched so that it may start while
 * the kernel before it in the stream is still running, and waits
 * (griddepcontrol.wait) before it touches anything that kernel may write.
 * What overlaps is the launch and the block set-up of the next kernel with
 * the tail of the current one; kernels that read weights issue L2 prefetches
 * of their first weight rows before the wait (weights are inputs no kernel of
 * the step writes, and a prefetch is only a hint: it can never return stale
 * data, since the L2 is where device writes land). Private to kernels/ and
 * the engine (kernels/cuda/engine_ops.cu).
 *
 * defines: kvs_pdl_wait, kvs_pdl_launch_dependents, kvs_prefetch_l2,
 *          kvs_pdl_enabled, kvs_launch_pdl
 *
 * The rules every kernel launched through kvs_launch_pdl follows:
 *  1. every thread of every block executes kvs_pdl_wait() before its first
 *     read of data an earlier kernel produces and before its first global
 *     write, and no block returns before it (a grid whose blocks all waited
 *     completes only after its predecessor did, so "complete" stays
 *     transitive along the stream);
 *  2. kvs_pdl_launch_dependents() comes after the wait: the next kernel is
 *     launched only once every block of this one has passed its wait, i.e.
 *     once the kernel before this one has completed. So at most two grids of
 *     the chain are resident: one running, one waiting, and the running one
 *     has all its blocks resident already (no block of it can be starved).
 * PDL is used only on a created stream (never the legacy default stream) and
 * is turned off by the caller's launch options (struct kvs_kernel_opts
 * no_pdl: for A/B timing and captures; `kvscope engine` sets it from
 * KVS_PDL=0 or --trace): the kernels then launch as plain launches, and the
 * wait and trigger instructions do nothing.
 */
#ifndef KVSCOPE_PDL_IMPL_CUH
#define KVSCOPE_PDL_IMPL_CUH

#include <cuda_runtime.h>

#include <utility>

#include "kvscope/kernels.h"

static __device__ __forceinline__ void kvs_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

static __device__ __forceinline__ void kvs_pdl_launch_dependents(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* A hint: bring the 128-byte line holding p into L2. */
static __device__ __forceinline__ void kvs_prefetch_l2(const void *p)
{
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

/* PDL unless the options turn it off (NULL: on). */
static inline bool kvs_pdl_enabled(const struct kvs_kernel_opts *o)
{
    return !o || !o->no_pdl;
}

/* kernel<<<grid, block, smem, s>>>(args...), with programmatic stream
 * serialization allowed when s is a created stream and o leaves PDL on.
 * Returns the launch's error (also left for cudaGetLastError, as <<<>>>
 * does). */
template <typename... KArgs, typename... Args>
static inline cudaError_t kvs_launch_pdl(const struct kvs_kernel_opts *o, void (*kernel)(KArgs...),
                                         dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                                         Args &&...args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = s != nullptr && kvs_pdl_enabled(o) ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

#endif /* KVSCOPE_PDL_IMPL_CUH */
