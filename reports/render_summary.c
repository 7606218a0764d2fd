/* reports/render_summary.c — the closing summary ("IN SHORT") that
 * kvs_summarize() (kvscope/compare.h) computed, laid out for a terminal
 * (labels in a 17-column margin, text wrapped at 84 columns, the roofline
 * as a table) or as markdown.
 *
 *   kvscope compare BEFORE AFTER [AFTER...]      (text and md close with it)
 */
#include <math.h>
#include <string.h>

#include "kvscope/compare.h"
#include "report_impl.h"

#define PAD 17
#define WIDTH 84

/* `text` after a label in the margin, words wrapped at WIDTH columns with
 * continuation lines indented by PAD */
static void line(FILE *f, const char *label, const char *text)
{
    fprintf(f, "  %-*s", PAD - 2, label);
    size_t col = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (!w)
            break;
        if (col && col + 1 + w > WIDTH) {
            fprintf(f, "\n%*s", PAD, "");
            col = 0;
        } else if (col) {
            fputc(' ', f);
            col++;
        }
        kvs_put_text_n(f, p, w);
        col += w;
        p += w;
    }
    fputc('\n', f);
}

static const char *pct_or_dash(char *buf, size_t size, double frac)
{
    if (isfinite(frac))
        snprintf(buf, size, "%.1f%%", 100 * frac);
    else
        snprintf(buf, size, "-");
    return buf;
}

static void text_summary(FILE *f, const struct kvs_summary *s)
{
    fputs("IN SHORT\n", f);
    line(f, "The bottleneck", s->bottleneck);
    for (size_t i = 0; i < s->nfix; i++)
        line(f, i ? "" : "The fix saved", s->fixes[i]);
    line(f, "HBM roofline", s->roofline);
    if (!s->npath)
        return;
    fprintf(f, "%*s%-12s %9s %13s %11s %13s %14s\n", PAD, "", "path", "step ms", "moved/step",
            "achieved", "% HBM peak", "% copy rate");
    for (size_t i = 0; i < s->npath; i++) {
        const struct kvs_summary_path *p = &s->paths[i];
        char by[KVS_FMT_BUF], pk[32], cp[32];
        kvs_fmt_bytes2(by, p->bytes_per_step);
        fprintf(f, "%*s", PAD, "");
        kvs_put_text(f, p->name);
        fprintf(f, "%*s %9.2f %13s %8.0f GB/s %13s %14s\n",
                (int)(strlen(p->name) < 12 ? 12 - strlen(p->name) : 0), "", p->step_ms, by,
                p->achieved_gbps, pct_or_dash(pk, sizeof pk, p->peak_fraction),
                pct_or_dash(cp, sizeof cp, p->copy_fraction));
    }
}

static void md_summary(FILE *f, const struct kvs_summary *s)
{
    fputs("## In short\n\n- **The bottleneck**: ", f);
    kvs_put_md(f, s->bottleneck);
    fputc('\n', f);
    for (size_t i = 0; i < s->nfix; i++) {
        fputs(i ? "- " : "- **The fix saved**: ", f);
        kvs_put_md(f, s->fixes[i]);
        fputc('\n', f);
    }
    fputs("- **HBM roofline**: ", f);
    kvs_put_md(f, s->roofline);
    fputs("\n", f);
    if (!s->npath)
        return;
    fputs("\n| path | step ms | moved/step | achieved GB/s | % HBM peak | % copy rate |\n"
          "|---|---:|---:|---:|---:|---:|\n", f);
    for (size_t i = 0; i < s->npath; i++) {
        const struct kvs_summary_path *p = &s->paths[i];
        char by[KVS_FMT_BUF], pk[32], cp[32];
        kvs_fmt_bytes2(by, p->bytes_per_step);
        fputs("| ", f);
        kvs_put_md(f, p->name);
        fprintf(f, " | %.2f | %s | %.0f | %s | %s |\n", p->step_ms, by, p->achieved_gbps,
                pct_or_dash(pk, sizeof pk, p->peak_fraction), pct_or_dash(cp, sizeof cp, p->copy_fraction));
    }
}

enum kvs_status kvs_render_summary(FILE *out, const struct kvs_summary *s,
                                   const struct kvs_render_options *opt)
{
    if (!out || !s || !opt)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (opt->format == KVS_FORMAT_TEXT)
        text_summary(out, s);
    else if (opt->format == KVS_FORMAT_MARKDOWN)
        md_summary(out, s);
    else
        return KVS_STATUS_INVALID_ARGUMENT;
    return ferror(out) ? KVS_STATUS_IO : KVS_STATUS_OK;
}
