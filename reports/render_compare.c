/* reports/render_compare.c — a comparison for people: the verdict first,
 * then the step figures side by side, findings resolved/new/kept, and the
 * copy/cast groups paired by role. Text, markdown and HTML share the tables.
 *
 *   kvscope compare BEFORE AFTER [--format text|md|html]
 */
#include <math.h>
#include <string.h>

#include "compare_impl.h"
#include "html.h"

#define GROUP_ROWS 15

// ----------------------------------------------------------------------------
// tables

#define CHANGE_BUF 112

static void change_ms(char *buf, const struct kvs_cmp_change *ch)
{
    char d[KVS_FMT_BUF], p[KVS_FMT_BUF];
    kvs_fmt_ms(d, ch->diff);
    /* a sign only when the rounded number shows a change */
    const char *sign = ch->diff > 0 && strspn(d, "0.") != strlen(d) ? "+" : "";
    if (isfinite(ch->rel))
        snprintf(buf, CHANGE_BUF, "%s%s (%s)", sign, d, kvs_fmt_signed_pct(p, ch->rel));
    else
        snprintf(buf, CHANGE_BUF, "%s%s", sign, d);
}

bool kvs_cmp_table_steps(struct kvs_table *t, const struct kvs_comparison *c)
{
    static const char *const hdr[] = {"per step", "before", "after", "change"};
    static const enum kvs_col kind[] = {KVS_COL_TEXT, KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM};
    kvs_table_init(t, 4, hdr, kind);
    const struct kvs_cmp_steps *x = &c->before, *y = &c->after;
    char b[KVS_FMT_BUF], a[KVS_FMT_BUF], d[CHANGE_BUF];
    const char *row[4];
    row[1] = b, row[2] = a, row[3] = d;

    row[0] = "wall ms";
    kvs_fmt_ms(b, x->mean_ms), kvs_fmt_ms(a, y->mean_ms), change_ms(d, &c->change.mean_ms);
    kvs_table_add(t, row);
    row[0] = "GPU busy ms";
    kvs_fmt_ms(b, x->gpu_ms_per_step), kvs_fmt_ms(a, y->gpu_ms_per_step);
    change_ms(d, &c->change.gpu_ms_per_step);
    kvs_table_add(t, row);
    row[0] = "GPU busy fraction";
    kvs_fmt_pct(b, x->gpu_busy_fraction), kvs_fmt_pct(a, y->gpu_busy_fraction);
    snprintf(d, sizeof d, "%+.1f pts", c->change.gpu_busy_fraction.diff * 100);
    kvs_table_add(t, row);
    if (x->tokens_per_s > 0 || y->tokens_per_s > 0) {
        row[0] = "tokens/s";
        if (x->tokens_per_s > 0)
            kvs_fmt_count(b, x->tokens_per_s);
        else
            strcpy(b, "-");
        if (y->tokens_per_s > 0)
            kvs_fmt_count(a, y->tokens_per_s);
        else
            strcpy(a, "-");
        kvs_fmt_signed_pct(d, c->change.tokens_per_s.rel);
        kvs_table_add(t, row);
    }
    row[0] = "steps in trace";
    snprintf(b, sizeof b, "%lld", (long long)x->count);
    snprintf(a, sizeof a, "%lld", (long long)y->count);
    strcpy(d, "");
    kvs_table_add(t, row);
    return !t->failed;
}

bool kvs_cmp_table_groups(struct kvs_table *t, const struct kvs_comparison *c, size_t max_rows)
{
    static const char *const hdr[] = {"op", "dtypes", "dims before -> after", "before ms",
                                      "after ms", "change", "before bytes", "after bytes",
                                      "before % peak", "after % peak"};
    static const enum kvs_col kind[] = {KVS_COL_CODE, KVS_COL_TEXT, KVS_COL_CODE, KVS_COL_NUM,
                                        KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM,
                                        KVS_COL_NUM, KVS_COL_NUM};
    kvs_table_init(t, 10, hdr, kind);
    for (size_t i = 0; i < c->ngroup && i < max_rows; i++) {
        const struct kvs_cmp_group *g = &c->groups[i];
        const struct kvs_cmp_side *x = &g->before, *y = &g->after, *any = x->present ? x : y;
        char op[64], dims[300], d1[KVS_DIMS_WIDTH + 1], d2[KVS_DIMS_WIDTH + 1],
            dtypes[KVS_DTYPES_WIDTH + 1], mb[KVS_FMT_BUF], ma[KVS_FMT_BUF], ch[CHANGE_BUF],
            bb[KVS_FMT_BUF], ba[KVS_FMT_BUF], eb[KVS_FMT_BUF], ea[KVS_FMT_BUF];
        if (x->present && y->present && x->op && y->op && strcmp(x->op, y->op)) {
            /* one role, two ops (the engine's full cast and gather-cast): both */
            char a[27], b[31];
            snprintf(op, sizeof op, "%s -> %s", kvs_short_op(a, sizeof a, x->op, 26),
                     kvs_short_op(b, sizeof b, y->op, 30));
        } else {
            kvs_short_op(op, sizeof op, any->op, 28);
        }
        snprintf(dims, sizeof dims, "%s -> %s",
                 kvs_truncate(d1, sizeof d1, x->present ? x->dims_short : "(none)", KVS_DIMS_WIDTH),
                 kvs_truncate(d2, sizeof d2, y->present ? y->dims_short : "(none)", KVS_DIMS_WIDTH));
        kvs_truncate(dtypes, sizeof dtypes, any->dtypes_short, KVS_DTYPES_WIDTH);
        strcpy(mb, "-"), strcpy(ma, "-"), strcpy(bb, "-"), strcpy(ba, "-");
        strcpy(eb, "-"), strcpy(ea, "-");
        if (x->present) {
            kvs_fmt_ms(mb, x->gpu_ms_per_step);
            if (x->bytes_known)
                kvs_fmt_bytes(bb, x->bytes_per_step);
            else
                strcpy(bb, "unknown");
            if (isfinite(x->efficiency))
                kvs_fmt_pct(eb, x->efficiency);
        }
        if (y->present) {
            kvs_fmt_ms(ma, y->gpu_ms_per_step);
            if (y->bytes_known)
                kvs_fmt_bytes(ba, y->bytes_per_step);
            else
                strcpy(ba, "unknown");
            if (isfinite(y->efficiency))
                kvs_fmt_pct(ea, y->efficiency);
        }
        change_ms(ch, &g->gpu_ms_per_step);
        const char *row[] = {op, dtypes, dims, mb, ma, ch, bb, ba, eb, ea};
        kvs_table_add(t, row);
    }
    if (c->ngroup > max_rows) {
        snprintf(t->note_buf, sizeof t->note_buf,
                 "... %zu more roles not shown (all are in --format json)", c->ngroup - max_rows);
        t->note = t->note_buf;
    }
    return !t->failed;
}

static void id_list(char *buf, size_t size, char **ids, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && len + 1 < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", ids[i]);
    if (n == 0)
        snprintf(buf, size, "none");
}

// ----------------------------------------------------------------------------
// text and markdown

enum kvs_status kvs_render_text_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt)
{
    const char *B = opt->color ? KVS_ANSI_BOLD : "", *R = opt->color ? KVS_ANSI_RESET : "";
    fprintf(out, "%skvscope compare%s\n  before  ", B, R);
    kvs_put_text(out, c->before.path ? c->before.path : "?");
    fputs("\n  after   ", out);
    kvs_put_text(out, c->after.path ? c->after.path : "?");
    fputs("\n\n", out);
    if (c->gate) {
        kvs_gate_put_text(out, c->gate, opt);
        fputs("\n", out);
    }
    fprintf(out, "%sVERDICT%s\n", B, R);
    kvs_put_text_items(out, c->verdict, c->nverdict);
    struct kvs_table t;
    bool ok = kvs_cmp_table_steps(&t, c);
    fprintf(out, "\n%sSTEPS%s\n", B, R);
    kvs_table_print_text(out, &t, opt->color);
    kvs_table_free(&t);

    char ids[1024];
    fprintf(out, "\n%sFINDINGS%s\n", B, R);
    id_list(ids, sizeof ids, c->resolved, c->nresolved);
    fprintf(out, "  resolved       %s%s%s\n", opt->color && c->nresolved ? KVS_ANSI_GREEN : "", ids,
            opt->color && c->nresolved ? KVS_ANSI_RESET : "");
    id_list(ids, sizeof ids, c->new_ids, c->nnew);
    fprintf(out, "  new            %s%s%s\n", opt->color && c->nnew ? KVS_ANSI_RED : "", ids,
            opt->color && c->nnew ? KVS_ANSI_RESET : "");
    id_list(ids, sizeof ids, c->kept, c->nkept);
    fprintf(out, "  still present  %s\n", ids);

    fprintf(out, "\n%sCOPY/CAST GROUPS PAIRED BY ROLE (GPU time per step)%s\n", B, R);
    if (c->ngroup == 0) {
        fputs("  none in either trace\n", out);
    } else {
        ok = kvs_cmp_table_groups(&t, c, GROUP_ROWS) && ok;
        kvs_table_print_text(out, &t, opt->color);
        kvs_table_free(&t);
    }
    return ok ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

static void md_ids(FILE *out, const char *label, char **ids, size_t n)
{
    fprintf(out, "- **%s**: ", label);
    if (n == 0)
        fputs("none", out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", " : "", out);
        kvs_put_md(out, ids[i]);
    }
    fputc('\n', out);
}

enum kvs_status kvs_render_md_compare(FILE *out, const struct kvs_comparison *c,
                                      const struct kvs_render_options *opt)
{
    (void)opt;
    fputs("# kvscope compare\n\n- **before**: ", out);
    kvs_put_md(out, c->before.path ? c->before.path : "?");
    fputs("\n- **after**: ", out);
    kvs_put_md(out, c->after.path ? c->after.path : "?");
    fputs("\n\n", out);
    if (c->gate) {
        kvs_gate_put_md(out, c->gate);
        fputs("\n", out);
    }
    fputs("## Verdict\n\n", out);
    kvs_put_md_items(out, c->verdict, c->nverdict);
    struct kvs_table t;
    bool ok = kvs_cmp_table_steps(&t, c);
    fputs("\n## Steps\n\n", out);
    kvs_table_print_md(out, &t);
    kvs_table_free(&t);
    fputs("\n## Findings\n\n", out);
    md_ids(out, "resolved", c->resolved, c->nresolved);
    md_ids(out, "new", c->new_ids, c->nnew);
    md_ids(out, "still present", c->kept, c->nkept);
    fputs("\n## Copy/cast groups paired by role (GPU time per step)\n\n", out);
    if (c->ngroup == 0) {
        fputs("None in either trace.\n", out);
    } else {
        ok = kvs_cmp_table_groups(&t, c, GROUP_ROWS) && ok;
        kvs_table_print_md(out, &t);
        kvs_table_free(&t);
    }
    return ok ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

// ----------------------------------------------------------------------------
// html

static void html_ids(FILE *out, const char *label, char **ids, size_t n)
{
    fprintf(out, "<dt>%s</dt><dd>", label);
    if (n == 0)
        fputs("none", out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", <code>" : "<code>", out);
        kvs_put_html(out, ids[i]);
        fputs("</code>", out);
    }
    fputs("</dd>\n", out);
}

enum kvs_status kvs_render_html_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt)
{
    (void)opt;
    kvs_html_head(out, "kvscope compare");
    fputs("<h1>kvscope compare</h1>\n<dl class=\"facts\">\n<dt>before</dt><dd><code>", out);
    kvs_put_html(out, c->before.path ? c->before.path : "?");
    fputs("</code></dd>\n<dt>after</dt><dd><code>", out);
    kvs_put_html(out, c->after.path ? c->after.path : "?");
    fputs("</code></dd>\n</dl>\n", out);
    if (c->gate)
        kvs_gate_put_html(out, c->gate);
    fputs("<h2>Verdict</h2>\n<ul class=\"verdict\">\n", out);
    kvs_put_html_items(out, c->verdict, c->nverdict);
    fputs("</ul>\n<h2>Step time: GPU versus wall</h2>\n"
          "<p class=\"note\">When GPU time falls more than wall time, the step is bound by "
          "something other than the GPU (usually the CPU launching kernels).</p>\n",
          out);
    struct kvs_svg_pair steps[2] = {
        {"wall ms/step", c->before.mean_ms, c->after.mean_ms},
        {"GPU busy ms/step", c->before.gpu_ms_per_step, c->after.gpu_ms_per_step},
    };
    kvs_svg_pairs(out, steps, 2, "ms per step", "step wall and GPU time, before and after");
    struct kvs_table t;
    bool ok = kvs_cmp_table_steps(&t, c);
    kvs_table_print_html(out, &t, "steps");
    kvs_table_free(&t);

    fputs("<h2>Findings</h2>\n<dl class=\"facts\">\n", out);
    html_ids(out, "resolved", c->resolved, c->nresolved);
    html_ids(out, "new", c->new_ids, c->nnew);
    html_ids(out, "still present", c->kept, c->nkept);
    fputs("</dl>\n<h2>Copy/cast groups paired by role</h2>\n", out);
    if (c->ngroup == 0) {
        fputs("<p>None in either trace.</p>\n", out);
    } else {
        struct kvs_svg_pair rows[10];
        size_t n = 0;
        char labels[10][160];
        for (; n < c->ngroup && n < 10; n++) {
            const struct kvs_cmp_group *g = &c->groups[n];
            const struct kvs_cmp_side *any = g->before.present ? &g->before : &g->after;
            /* op, the before side's dims and the dtypes: roles of one op stay apart */
            snprintf(labels[n], sizeof labels[n], "%.40s %.40s %.40s", any->op ? any->op : "?",
                     any->dims_short ? any->dims_short : "", any->dtypes_short ? any->dtypes_short : "");
            rows[n].label = labels[n];
            rows[n].before = g->before.present ? g->before.gpu_ms_per_step : 0;
            rows[n].after = g->after.present ? g->after.gpu_ms_per_step : 0;
        }
        kvs_svg_pairs(out, rows, n, "GPU ms per step", "copy/cast GPU time per step by role");
        ok = kvs_cmp_table_groups(&t, c, GROUP_ROWS) && ok;
        kvs_table_print_html(out, &t, "cmpgroups");
        kvs_table_free(&t);
    }
    kvs_html_foot(out);
    return ok ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}
