/* tests/report_render_fixture.c — render the synthetic analyses of
 * report_fixture.c (no analyzer involved) for the golden-output test:
 *
 *   report_render_fixture unfixed|fixed|compare|gate text|md|json|html|junit [color]
 *
 * gate: the fix undone (fixed -> unfixed) through kvs_gate_compare at 5%.
 * Writes the document to stdout; exit 0, or 1 when rendering failed.
 */
#include <stdio.h>
#include <string.h>

#include "kvscope/compare.h"
#include "kvscope/report.h"
#include "report_fixture.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s unfixed|fixed|compare|gate FORMAT [color]\n", argv[0]);
        return 2;
    }
    struct kvs_render_options opt = {0};
    if (kvs_format_parse(argv[2], &opt.format) != KVS_STATUS_OK) {
        fprintf(stderr, "unknown format %s\n", argv[2]);
        return 2;
    }
    opt.color = argc > 3 && !strcmp(argv[3], "color");
    static struct kvs_fixture before, after;
    kvs_fixture_unfixed(&before);
    kvs_fixture_fixed(&after);
    enum kvs_status st;
    if (!strcmp(argv[1], "compare")) {
        struct kvs_comparison *c = NULL;
        st = kvs_compare(&before.a, &after.a, 1, &c);
        if (st == KVS_STATUS_OK)
            st = kvs_render_compare(stdout, c, &opt);
        kvs_comparison_free(c);
    } else if (!strcmp(argv[1], "gate")) {
        struct kvs_comparison *c = NULL;
        st = kvs_compare(&after.a, &before.a, 1, &c);
        if (st == KVS_STATUS_OK)
            st = kvs_gate_compare(c, &after.a, &before.a, KVS_GATE_THRESHOLD_PCT);
        if (st == KVS_STATUS_OK)
            st = kvs_render_compare(stdout, c, &opt);
        kvs_comparison_free(c);
    } else {
        st = kvs_render_report(stdout, !strcmp(argv[1], "fixed") ? &after.a : &before.a, &opt);
    }
    if (st != KVS_STATUS_OK) {
        fprintf(stderr, "render: %s\n", kvs_status_str(st));
        return 1;
    }
    return 0;
}
