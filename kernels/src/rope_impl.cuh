/* kernels/src/rope_impl.cuh — one interleaved-RoPE pair on the GPU, written
 * once for the RoPE kernel (kernels/cuda/decode_ops.cu), the GEMV that rotates
 * q's rope part as it writes it (kernels/cuda/gemv.cu) and the engine's KV-row
 * kernel (kernels/cuda/engine_ops.cu), so all three rotate bit for bit alike and as
 * kvs_cpu_rope_interleaved does. Private to kernels/ and the engine.
 *
 * defines: kvs_rope_cos_sin, kvs_rope_rotate
 */
#ifndef KVSCOPE_ROPE_IMPL_CUH
#define KVSCOPE_ROPE_IMPL_CUH

#include <math.h>

/* cos and sin of pair i's angle pos * theta^(-2i/dim): formed in double as the
 * reference does, reduced mod 2 pi in double (exact to ~1e-12 rad at
 * positions near 10^5), sincos on the reduced argument, rounded to float. */
static __device__ __forceinline__ void kvs_rope_cos_sin(double pos, int i, int dim,
                                                        double log_theta, float *c, float *s)
{
    const double ang = pos * exp(-2.0 * i / dim * log_theta);
    const double k = rint(ang * 0.15915494309189535); /* 1 / (2 pi) */
    double r = fma(-k, 6.283185307179586, ang);       /* 2 pi, high part */
    r = fma(-k, 2.4492935982947064e-16, r);           /* low part */
    double sd, cd;
    sincos(r, &sd, &cd);
    *c = (float)cd;
    *s = (float)sd;
}

/* (a, b) rotated by the angle of (c, s), each product rounded before the sum
 * (no fused multiply-add, as the C reference computes it): the result does
 * not depend on how the compiler contracts each call site. */
static __device__ __forceinline__ void kvs_rope_rotate(float a, float b, float c, float s,
                                                       float *x0, float *x1)
{
    *x0 = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    *x1 = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
}

#endif /* KVSCOPE_ROPE_IMPL_CUH */
