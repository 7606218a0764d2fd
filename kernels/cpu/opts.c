/* kernels/cpu/opts.c — kvs_kernel_opts_parse: the launch options
 * (struct kvs_kernel_opts, kvscope/kernels.h) from named values as the
 * environment gives them. The kernels never read the environment; programs
 * pass getenv here (kvscope engine, the benches, the gpu tests). Plain C, so
 * the CPU build has it too. Tested by kernels/tests/test_kernels_ref.c. */
#include <string.h>

#include "kvscope/kernels.h"

/* text is one of the n words; *out = vals[i] */
static int pick(const char *text, const char *const *words, const int *vals, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(text, words[i])) {
            *out = vals[i];
            return 1;
        }
    return 0;
}

enum kvs_status kvs_kernel_opts_parse(struct kvs_kernel_opts *o, char *(*lookup)(const char *name),
                                      const struct kvs_logger *lg)
{
    if (!o || !lookup)
        return KVS_STATUS_INVALID_ARGUMENT;
    static const struct {
        const char *name, *want;
        const char *words[10];
        int vals[10];
        int n;
        size_t field;
    } vars[] = {
        {"KVS_PDL", "0 or 1", {"0", "1"}, {1, 0}, 2, offsetof(struct kvs_kernel_opts, no_pdl)},
        {"KVS_MLA_HG",
         "32 or 64",
         {"32", "64"},
         {32, 64},
         2,
         offsetof(struct kvs_kernel_opts, mla_head_group)},
        {"KVS_MLA_WAVES",
         "1 or 2",
         {"1", "2"},
         {1, 2},
         2,
         offsetof(struct kvs_kernel_opts, mla_waves)},
        {"KVS_MLA_WG", "1 or 0", {"1", "0"}, {1, -1}, 2, offsetof(struct kvs_kernel_opts, mla_wgmma)},
        {"KVS_MLA_LAZY", "1 or 0", {"1", "0"}, {1, -1}, 2, offsetof(struct kvs_kernel_opts, mla_lazy)},
        {"KVS_MLA_WGV",
         "0, 1, 4, 5, 8, 12, 16, 24 or 32",
         {"0", "1", "4", "5", "8", "12", "16", "24", "32"},
         {0, 1, 4, 5, 8, 12, 16, 24, 32},
         9,
         offsetof(struct kvs_kernel_opts, mla_wgv)},
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *text = lookup(vars[i].name);
        if (!text)
            continue;
        int v;
        if (!pick(text, vars[i].words, vars[i].vals, vars[i].n, &v)) {
            kvs_log(lg, KVS_LOG_ERROR, "%s is %s, not '%s'", vars[i].name, vars[i].want, text);
            return KVS_STATUS_INVALID_ARGUMENT;
        }
        memcpy((char *)o + vars[i].field, &v, sizeof v);
    }
    return KVS_STATUS_OK;
}
