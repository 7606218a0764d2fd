/* reports/render_md.c — the report as GitHub-flavoured markdown, for pasting
 * into an issue or a pull request: the same content as the text report
 * (findings first, then groups, top kernels, steps), every name from the
 * trace escaped or put in a code span.
 *
 *   kvscope report TRACE --format md -o report.md
 */
#include <string.h>

#include "table.h"

#define GROUP_ROWS 25
#define OP_ROWS 25
#define STEP_ROWS 32
#define KERNEL_NAME_WIDTH 96

static void print_findings(FILE *f, const struct kvs_analysis *a)
{
    fputs("\n## Findings\n\n", f);
    size_t n = a->findings ? a->nfinding : 0;
    if (n == 0) {
        fprintf(f, "None: %s.\n", kvs_no_findings_text(a));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct kvs_finding *x = &a->findings[i];
        fprintf(f, "%zu. **%s** `", i + 1, kvs_severity_name(x->severity));
        for (const char *p = x->id ? x->id : "?"; *p; p++)
            fputc(*p == '`' || (unsigned char)*p < 0x20 ? '\'' : *p, f);
        fputc('`', f);
        struct kvs_finding_figures fig;
        kvs_finding_figures(x, &fig);
        if (fig.recoverable[0])
            fprintf(f, ": %s", fig.recoverable);
        if (fig.moves[0])
            fprintf(f, ", %s", fig.moves);
        fputs("  \n   ", f);
        kvs_put_md(f, x->message);
        fputc('\n', f);
        if (x->evidence && *x->evidence) {
            fputs("   - evidence: ", f);
            kvs_put_md(f, x->evidence);
            fputc('\n', f);
        }
        if (x->fix && *x->fix) {
            fputs("   - fix: ", f);
            kvs_put_md(f, x->fix);
            fputc('\n', f);
        }
    }
}

static void print_categories(FILE *f, const struct kvs_analysis *a)
{
    char parts[KVS_CAT_COUNT_][KVS_CAT_PART_BUF];
    size_t n = kvs_category_parts(a, parts);
    if (n == 0)
        return;
    fputs("GPU time by category:", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? ", " : " ", parts[i]);
    fputs(".\n\n", f);
}

enum kvs_status kvs_render_md_report(FILE *out, const struct kvs_analysis *a,
                                     const struct kvs_render_options *opt)
{
    size_t top = opt->top_kernels > 0 ? (size_t)opt->top_kernels : 10;
    struct kvs_table t;
    bool ok = true;

    fputs("# kvscope report: ", out);
    kvs_put_md(out, a->trace.path ? a->trace.path : "(unnamed trace)");
    fputs("\n\n", out);
    struct kvs_fact facts[KVS_MAX_FACTS];
    size_t n = kvs_report_facts(a, facts);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "- **%s**: ", facts[i].label);
        kvs_put_md(out, facts[i].value);
        fputc('\n', out);
    }

    print_findings(out, a);

    fputs("\n## Copy/cast groups (by GPU time)\n\n", out);
    if (!a->groups || a->ngroup == 0) {
        fputs("None: the trace has no copy, cast, memcpy or memset work.\n", out);
    } else {
        ok = kvs_table_groups(&t, a, GROUP_ROWS) && ok;
        kvs_table_print_md(out, &t);
        kvs_table_free(&t);
    }

    fputs("\n## Roofline of every op group (by GPU time)\n\n", out);
    if (!a->ops || a->nop == 0) {
        fputs("None: the trace has no GPU activity.\n", out);
    } else {
        char roofs[300];
        kvs_roofs_line(roofs, sizeof roofs, a);
        kvs_put_md(out, roofs);
        fputs(".\n\n", out);
        ok = kvs_table_ops(&t, a, OP_ROWS) && ok;
        kvs_table_print_md(out, &t);
        kvs_table_free(&t);
    }

    fputs("\n## Top kernels (by GPU time)\n\n", out);
    if (!a->kernels || a->nkernel == 0) {
        fputs("None: the trace has no GPU activity.\n", out);
    } else {
        ok = kvs_table_kernels(&t, a, top, KERNEL_NAME_WIDTH) && ok;
        kvs_table_print_md(out, &t);
        kvs_table_free(&t);
    }

    fputs("\n## Steps (GPU ms by category)\n\n", out);
    print_categories(out, a);
    if (!a->step || a->nstep == 0) {
        fputs("No step markers (ProfilerStep#N or --step-regex ranges) in this trace.\n", out);
    } else {
        ok = kvs_table_steps(&t, a, STEP_ROWS) && ok;
        kvs_table_print_md(out, &t);
        kvs_table_free(&t);
    }
    return ok ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}
