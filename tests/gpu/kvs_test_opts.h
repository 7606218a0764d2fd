/* tests/gpu/kvs_test_opts.h — the kernels' launch options for a gpu test,
 * from the environment (KVS_PDL, KVS_MLA_HG, KVS_MLA_WAVES, KVS_MLA_WG, KVS_MLA_LAZY,
 * KVS_MLA_WGV: kvs_kernel_opts_parse), so that a test runs the variant its meson entry
 * (test_kernels_mla_hg32, ...) or bench/verify_session.sh (KVS_PDL=0) asks
 * for. The kernels themselves never read the environment.
 *
 * defines: kvs_test_opts
 */
#ifndef KVSCOPE_TEST_OPTS_H
#define KVSCOPE_TEST_OPTS_H

#include <stdio.h>
#include <stdlib.h>

#include "kvscope/kernels.h"

/* Parsed once; a bad value is a setup failure (exit 99). */
static inline const struct kvs_kernel_opts *kvs_test_opts(void)
{
    static struct kvs_kernel_opts o;
    static int done;
    if (!done) {
        if (kvs_kernel_opts_parse(&o, getenv, NULL) != KVS_STATUS_OK)
            exit(99);
        done = 1;
    }
    return &o;
}

#endif /* KVSCOPE_TEST_OPTS_H */
