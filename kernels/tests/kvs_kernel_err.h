/* kernels/tests/kvs_kernel_err.h — the normalized error ||out - ref|| /
 * ||ref|| by which the kernels' tests (unit and gpu suites) and benches
 * (kernels/bench, before they time anything) judge an output against its
 * reference; a NaN never passes. Plain C, also included from C++; no CUDA.
 *
 * defines: kt_norm_err_bf16, kt_norm_err_f
 */
#ifndef KVSCOPE_KERNEL_ERR_H
#define KVSCOPE_KERNEL_ERR_H

#include <math.h>
#include <stddef.h>

#include "kvscope/kernels.h"

/* ||out - ref|| / ||ref|| over n BF16 values; INFINITY if any is not
 * finite on one side only or NaN on either (a NaN never passes). */
static inline double kt_norm_err_bf16(const kvs_bf16 *out, const kvs_bf16 *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double o = kvs_bf16_to_float(out[i]), r = kvs_bf16_to_float(ref[i]);
        if (isnan(o) || isnan(r) || isinf(o) != isinf(r))
            return INFINITY;
        num += (o - r) * (o - r);
        den += r * r;
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static inline double kt_norm_err_f(const float *out, const float *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double o = out[i], r = ref[i];
        if (isnan(o) || isnan(r))
            return INFINITY;
        if (isinf(o) || isinf(r)) {
            if (o != r)
                return INFINITY;
            continue;
        }
        num += (o - r) * (o - r);
        den += r * r;
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

#endif /* KVSCOPE_KERNEL_ERR_H */
