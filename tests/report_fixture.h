/* tests/report_fixture.h — synthetic analyses for the report and compare
 * tests: built by hand in C, so renderers and compare are tested without the
 * analyzer and with values chosen to be awkward (quotes, HTML, control
 * characters and invalid UTF-8 in names; NaN and unknown peaks).
 *
 * defines: struct kvs_fixture, kvs_fixture_unfixed, kvs_fixture_fixed
 */
#ifndef KVSCOPE_REPORT_FIXTURE_H
#define KVSCOPE_REPORT_FIXTURE_H

#include "kvscope/analysis.h"

struct kvs_fixture {
    struct kvs_analysis a;
    struct kvs_step step[4];
    struct kvs_group groups[3];
    struct kvs_dims dims[3][7];   /* group 2 (aten::_to_copy) has seven inputs */
    const char *dtypes[3][7];
    struct kvs_kernel_stat kernels[4];
    struct kvs_finding findings[3];
    struct kvs_op_roofline ops[3];  /* a memory-bound GEMV, an elementwise op, an unknown op */
    struct kvs_dims op_dims[3][2];
    const char *op_dtypes[3][2];
};

/* An MLA decode trace that casts the whole FP8 KV pool (131072 x 576) to
 * BF16 on each of 61 layers: 4 steps, a kv_full_buffer_cast finding, a
 * gpu_idle finding, a kernel whose name carries markup and bad bytes. */
void kvs_fixture_unfixed(struct kvs_fixture *fx);

/* The same decode with gather-then-cast of 1024 active tokens: the cast group
 * has the same role, far less time; only gpu_idle remains, plus a new
 * low_bandwidth_efficiency finding. */
void kvs_fixture_fixed(struct kvs_fixture *fx);

#endif
