/* tests/analysis_dump.c — print what kvs_analyze_file found, as JSON, for
 * the test scripts that check it against independent Python computations
 * (tests/test_shared_traces.py). Not a user tool: `kvscope report --format
 * json` is that.
 *
 *   analysis_dump TRACE [--model M] [--kv-capacity N] [--device D]
 *
 * Exit: 0 analysed (also truncated), 3 the analysis refused the input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/analysis.h"
#include "kvscope/units.h"

static void str(const char *s)
{
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: analysis_dump TRACE [--model M] [--kv-capacity N] [--device D]\n");
        return 2;
    }
    struct kvs_analysis_options o;
    kvs_analysis_options_init(&o);
    o.log.min_level = KVS_LOG_WARN;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model"))
            o.model = argv[i + 1];
        else if (!strcmp(argv[i], "--kv-capacity"))
            o.kv_capacity = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--device"))
            o.device = argv[i + 1];
    }
    struct kvs_analysis *a = NULL;
    enum kvs_status st = kvs_analyze_file(argv[1], &o, &a);
    if (!a) {
        printf("{\"status\": %d}\n", (int)st);
        return 3;
    }
    const struct kvs_trace_info *t = &a->trace;
    printf("{\"status\": %d, \"events\": %llu, \"ops\": %llu, \"kernels\": %llu, \"memcpys\": %llu, "
           "\"memsets\": %llu, \"unlinked\": %llu, \"graph_launched\": %llu, \"truncated\": %s, "
           "\"peak_gbps\": %.17g, \"device\": ",
           (int)st, (unsigned long long)t->events, (unsigned long long)t->ops,
           (unsigned long long)t->kernels, (unsigned long long)t->memcpys,
           (unsigned long long)t->memsets, (unsigned long long)t->gpu_unlinked,
           (unsigned long long)t->graph_launched,
           t->truncated ? "true" : "false", t->peak_gbps);
    str(t->device);
    printf(", \"producer\": ");
    str(t->producer);
    printf(", \"gpu_devices\": %d, \"total_gpu_ms\": %.17g, \"kernel_calls\": [", t->gpu_devices,
           a->steps.total_gpu_ms);
    for (size_t i = 0; i < a->nkernel; i++) {
        printf("%s[", i ? ", " : "");
        str(a->kernels[i].name);
        printf(", %lld]", (long long)a->kernels[i].calls);
    }
    printf("], \"steps\": %lld, \"groups\": [", (long long)a->steps.count);
    for (size_t i = 0; i < a->ngroup; i++) {
        const struct kvs_group *g = &a->groups[i];
        printf("%s\n {\"op\": ", i ? "," : "");
        str(g->op);
        char dims[4096];
        printf(", \"dims\": %s, \"dtypes\": [", kvs_dims_json(dims, sizeof dims, g));
        for (int k = 0; k < g->ntensors; k++) {
            printf("%s", k ? "," : "");
            str(g->tensor_dtypes[k]);
        }
        printf("], \"role\": ");
        str(g->role);
        printf(", \"calls\": %lld, \"calls_per_step\": %.17g, \"gpu_ms\": %.17g, "
               "\"bytes_per_call\": %lld, \"achieved_gbps\": %.17g, \"efficiency\": %.17g, \"match\": ",
               (long long)g->calls, g->calls_per_step, g->gpu_ms, (long long)g->bytes_per_call,
               g->achieved_gbps, g->efficiency);
        if (g->has_match) {
            printf("{\"label\": ");
            str(g->match.label);
            printf(", \"capacity_tokens\": %lld, \"per_layer\": %s}", (long long)g->match.capacity_tokens,
                   g->match.per_layer ? "true" : "false");
        } else {
            printf("null");
        }
        putchar('}');
    }
    printf("],\n \"findings\": [");
    for (size_t i = 0; i < a->nfinding; i++) {
        printf("%s{\"id\": ", i ? ", " : "");
        str(a->findings[i].id);
        printf(", \"group\": %d, \"gpu_ms_per_step\": %.17g, \"bytes_per_step\": %.17g, "
               "\"needed_bytes_per_step\": %.17g}",
               a->findings[i].group, a->findings[i].gpu_ms_per_step, a->findings[i].bytes_per_step,
               a->findings[i].needed_bytes_per_step);
    }
    printf("]}\n");
    kvs_analysis_free(a);
    return 0;
}
