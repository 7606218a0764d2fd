/* reports/render_text.c — the report for a terminal (the default format):
 * a short header, findings first, then the copy/cast groups, the top kernels
 * and the steps, as aligned tables. Colour only when opt->color.
 *
 *   kvscope report TRACE            (text when stdout is a terminal)
 *   kvscope report TRACE --format text
 */
#include <string.h>

#include "table.h"

#define GROUP_ROWS 15
#define OP_ROWS 15
#define STEP_ROWS 16
#define KERNEL_NAME_WIDTH 72

struct style {
    bool color;
};

static void heading(FILE *f, const struct style *st, const char *title)
{
    fprintf(f, "\n%s%s%s\n", st->color ? KVS_ANSI_BOLD : "", title, st->color ? KVS_ANSI_RESET : "");
}

static const char *sev_color(enum kvs_severity s)
{
    return s == KVS_SEV_HIGH ? KVS_ANSI_RED : s == KVS_SEV_WARN ? KVS_ANSI_YELLOW : KVS_ANSI_CYAN;
}

static void print_header(FILE *f, const struct kvs_analysis *a, const struct style *st)
{
    fprintf(f, "%skvscope report%s  ", st->color ? KVS_ANSI_BOLD : "", st->color ? KVS_ANSI_RESET : "");
    kvs_put_text(f, a->trace.path ? a->trace.path : "(unnamed trace)");
    fputc('\n', f);
    struct kvs_fact facts[KVS_MAX_FACTS];
    size_t n = kvs_report_facts(a, facts);
    for (size_t i = 0; i < n; i++) {
        bool warn = !strcmp(facts[i].label, "warning");
        /* labels in a column of 8; a longer one ("roofline") keeps a space after it */
        int w = strlen(facts[i].label) < 8 ? 8 : (int)strlen(facts[i].label) + 1;
        fprintf(f, "  %s%-*s%s", warn && st->color ? KVS_ANSI_YELLOW : "", w, facts[i].label,
                warn && st->color ? KVS_ANSI_RESET : "");
        kvs_put_text(f, facts[i].value);
        fputc('\n', f);
    }
}

static void print_findings(FILE *f, const struct kvs_analysis *a, const struct style *st)
{
    heading(f, st, "FINDINGS (ranked by recoverable GPU time per step)");
    size_t n = a->findings ? a->nfinding : 0;
    if (n == 0) {
        fprintf(f, "  none: %s\n", kvs_no_findings_text(a));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct kvs_finding *x = &a->findings[i];
        const char *sev = kvs_severity_name(x->severity);
        fprintf(f, "  %zu. %s%-4s%s  %s%s%s", i + 1, st->color ? sev_color(x->severity) : "", sev,
                st->color ? KVS_ANSI_RESET : "", st->color ? KVS_ANSI_BOLD : "",
                x->id ? x->id : "?", st->color ? KVS_ANSI_RESET : "");
        struct kvs_finding_figures fig;
        kvs_finding_figures(x, &fig);
        if (fig.recoverable[0])
            fprintf(f, "  %s", fig.recoverable);
        if (fig.moves[0])
            fprintf(f, ", %s", fig.moves);
        fputs("\n     ", f);
        kvs_put_wrapped(f, x->message, 5, 5);
        fputc('\n', f);
        if (x->evidence && *x->evidence) {
            fputs("     evidence: ", f);
            kvs_put_wrapped(f, x->evidence, 7, 15);
            fputc('\n', f);
        }
        if (x->fix && *x->fix) {
            fputs("     fix: ", f);
            kvs_put_wrapped(f, x->fix, 7, 10);
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
    fputs("  GPU time by category:", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %s", parts[i]);
    fputc('\n', f);
}

enum kvs_status kvs_render_text_report(FILE *out, const struct kvs_analysis *a,
                                       const struct kvs_render_options *opt)
{
    struct style st = {opt->color};
    size_t top = opt->top_kernels > 0 ? (size_t)opt->top_kernels : 10;
    struct kvs_table t;
    bool ok = true;

    print_header(out, a, &st);
    print_findings(out, a, &st);

    heading(out, &st, "COPY/CAST GROUPS (by GPU time)");
    if (!a->groups || a->ngroup == 0) {
        fputs("  none: the trace has no copy, cast, memcpy or memset work\n", out);
    } else {
        ok = kvs_table_groups(&t, a, GROUP_ROWS) && ok;
        kvs_table_print_text(out, &t, st.color);
        kvs_table_free(&t);
    }

    heading(out, &st, "ROOFLINE OF EVERY OP GROUP (by GPU time)");
    if (!a->ops || a->nop == 0) {
        fputs("  none: the trace has no GPU activity\n", out);
    } else {
        char roofs[300];
        kvs_roofs_line(roofs, sizeof roofs, a);
        fprintf(out, "  %s\n", roofs);
        ok = kvs_table_ops(&t, a, OP_ROWS) && ok;
        kvs_table_print_text(out, &t, st.color);
        kvs_table_free(&t);
    }

    heading(out, &st, "TOP KERNELS (by GPU time)");
    if (!a->kernels || a->nkernel == 0) {
        fputs("  none: the trace has no GPU activity\n", out);
    } else {
        ok = kvs_table_kernels(&t, a, top, KERNEL_NAME_WIDTH) && ok;
        kvs_table_print_text(out, &t, st.color);
        kvs_table_free(&t);
    }

    heading(out, &st, "STEPS (GPU ms by category)");
    print_categories(out, a);
    if (!a->step || a->nstep == 0) {
        fputs("  no step markers (vLLM/SGLang step ranges, ProfilerStep#N or --step-regex ranges) in this trace\n", out);
    } else {
        ok = kvs_table_steps(&t, a, STEP_ROWS) && ok;
        kvs_table_print_text(out, &t, st.color);
        kvs_table_free(&t);
    }
    return ok ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}
