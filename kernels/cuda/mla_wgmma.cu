/* kernels/cuda/mla_wgmma.cu — the FP8 64-head MLA decode kernel with its
 * inner products on wgmma: this translation unit alone is compiled for
 * sm_90a (kernels/meson.build builds it with its own nvcc line; wgmma does
 * not exist on plain sm_90). The kernel template is mla_kernel.cuh, the
 * wgmma parts mla_wgmma.cuh; mla_decode.cu picks this kernel or the
 * mma.sync one (struct kvs_kernel_opts mla_wgmma, docs/kernels.md). Tested by the gpu test
 * test_kernels_mla_wg (kernels/tests/gpu/test_kernels_mla.c forced onto
 * this kernel) and test_kernels_wgmma (one product against the CPU).
 */
#include "mla_kernel.cuh"
#include "mla_ws.cuh"

namespace kvs_mla {

cudaError_t launch_wgmma(const Params &p, const Plan &pl, int batch, cudaStream_t s,
                         const struct kvs_kernel_opts *o)
{
    /* the variants (mla_wgv, KVS_MLA_WGV; mla_kernel.cuh WGV) exist only
     * as lazy kernels: they run wherever the options leave lazy rescaling
     * on (a block of one tile takes the slow path, correct but slower) */
    const int v = o ? o->mla_wgv : 0;
    if (v > 0 && !(o && o->mla_lazy == -1)) {
        switch (v) {
        case 1: return launch<true, 64, true, true, true, 1>(p, pl, batch, s, o);
        case 4: return launch<true, 64, true, true, true, 4>(p, pl, batch, s, o);
        case 5: return launch<true, 64, true, true, true, 5>(p, pl, batch, s, o);
        case 8: return launch<true, 64, true, true, true, 8>(p, pl, batch, s, o);
        case 12: return launch<true, 64, true, true, true, 12>(p, pl, batch, s, o);
        case 16: return launch<true, 64, true, true, true, 16>(p, pl, batch, s, o);
        case 24: return launch<true, 64, true, true, true, 24>(p, pl, batch, s, o);
        case 32: return launch_ws<0>(p, pl, batch, s, o); /* warp-specialized: mla_ws.cuh */
        default: break;
        }
    }
    return lazy_for(pl, o) ? launch<true, 64, true, true, true>(p, pl, batch, s, o)
                           : launch<true, 64, true>(p, pl, batch, s, o);
}

} // namespace kvs_mla
