/* reports/table.c — one table, three ways to print it (aligned text,
 * markdown, HTML). Cells are plain text; each printer does its own escaping,
 * so a kernel name from a trace can never break out of its cell.
 *
 * Tested through the renderers' tests (test_report_text, test_report_html).
 */
#include <stdlib.h>
#include <string.h>

#include "table.h"

void kvs_table_init(struct kvs_table *t, int ncol, const char *const *headers,
                    const enum kvs_col *kinds)
{
    memset(t, 0, sizeof *t);
    t->ncol = ncol > KVS_TABLE_MAX_COLS ? KVS_TABLE_MAX_COLS : ncol;
    for (int i = 0; i < t->ncol; i++) {
        t->header[i] = headers[i];
        t->kind[i] = kinds[i];
    }
}

void kvs_table_add(struct kvs_table *t, const char *const *cells)
{
    if (t->failed)
        return;
    if (t->nrow == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        char **c = realloc(t->cells, cap * (size_t)t->ncol * sizeof *c);
        if (!c) {
            t->failed = true;
            return;
        }
        t->cells = c;
        t->cap = cap;
    }
    char **row = t->cells + t->nrow * (size_t)t->ncol;
    for (int i = 0; i < t->ncol; i++) {
        row[i] = strdup(cells[i] ? cells[i] : "");
        if (!row[i]) {
            for (int k = 0; k < i; k++)
                free(row[k]);
            t->failed = true;
            return;
        }
    }
    t->nrow++;
}

void kvs_table_free(struct kvs_table *t)
{
    for (size_t i = 0; i < t->nrow * (size_t)t->ncol; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrow = t->cap = 0;
}

static const char *cell(const struct kvs_table *t, size_t r, int c)
{
    return t->cells[r * (size_t)t->ncol + c];
}

void kvs_table_print_text(FILE *f, const struct kvs_table *t, bool color)
{
    size_t w[KVS_TABLE_MAX_COLS];
    for (int c = 0; c < t->ncol; c++) {
        w[c] = kvs_text_width(t->header[c]);
        for (size_t r = 0; r < t->nrow; r++) {
            size_t cw = kvs_text_width(cell(t, r, c));
            if (cw > w[c])
                w[c] = cw;
        }
    }
    for (size_t r = 0; r <= t->nrow; r++) {
        bool hdr = r == 0;
        fputs("  ", f);
        if (hdr && color)
            fputs(KVS_ANSI_BOLD, f);
        /* spaces are held back until something follows them: no trailing blanks */
        size_t pending = 0;
        for (int c = 0; c < t->ncol; c++) {
            const char *s = hdr ? t->header[c] : cell(t, r - 1, c);
            size_t sw = kvs_text_width(s);
            if (t->kind[c] == KVS_COL_NUM)
                pending += w[c] - sw;
            if (sw) {
                for (; pending; pending--)
                    fputc(' ', f);
                kvs_put_text(f, s);
            }
            if (t->kind[c] != KVS_COL_NUM)
                pending += w[c] - sw;
            pending += 2;
        }
        if (hdr && color)
            fputs(KVS_ANSI_RESET, f);
        fputc('\n', f);
    }
    if (t->note)
        fprintf(f, "  %s\n", t->note);
}

static void put_md_code(FILE *f, const char *s)
{
    /* a code span cannot hold a backtick; a table cell cannot hold a bare '|' */
    fputc('`', f);
    for (; *s; s++) {
        if ((unsigned char)*s >= 0x80)
            s += kvs_put_utf8(f, s) - 1;
        else if (*s == '`')
            fputc('\'', f);
        else if (*s == '|')
            fputs("\\|", f);
        else if ((unsigned char)*s < 0x20)
            fputc(' ', f);
        else
            fputc(*s, f);
    }
    fputc('`', f);
}

void kvs_table_print_md(FILE *f, const struct kvs_table *t)
{
    fputc('|', f);
    for (int c = 0; c < t->ncol; c++) {
        fputc(' ', f);
        kvs_put_md(f, t->header[c]);
        fputs(" |", f);
    }
    fputs("\n|", f);
    for (int c = 0; c < t->ncol; c++)
        fputs(t->kind[c] == KVS_COL_NUM ? "---:|" : "---|", f);
    fputc('\n', f);
    for (size_t r = 0; r < t->nrow; r++) {
        fputc('|', f);
        for (int c = 0; c < t->ncol; c++) {
            const char *s = cell(t, r, c);
            fputc(' ', f);
            if (t->kind[c] == KVS_COL_CODE && *s && strcmp(s, "-"))
                put_md_code(f, s);
            else
                kvs_put_md(f, s);
            fputs(" |", f);
        }
        fputc('\n', f);
    }
    if (t->note) {
        fputs("\n", f);
        kvs_put_md(f, t->note);
        fputc('\n', f);
    }
}

void kvs_table_print_html(FILE *f, const struct kvs_table *t, const char *css_class)
{
    fputs("<table", f);
    if (css_class) {
        fputs(" class=\"", f);
        kvs_put_html(f, css_class);
        fputc('"', f);
    }
    fputs(">\n<thead><tr>", f);
    for (int c = 0; c < t->ncol; c++) {
        fputs(t->kind[c] == KVS_COL_NUM ? "<th class=\"n\">" : "<th>", f);
        kvs_put_html(f, t->header[c]);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (size_t r = 0; r < t->nrow; r++) {
        fputs("<tr>", f);
        for (int c = 0; c < t->ncol; c++) {
            const char *s = cell(t, r, c);
            switch (t->kind[c]) {
            case KVS_COL_NUM: fputs("<td class=\"n\">", f); break;
            case KVS_COL_CODE: fputs("<td><code>", f); break;
            default: fputs("<td>", f);
            }
            kvs_put_html(f, s);
            fputs(t->kind[c] == KVS_COL_CODE ? "</code></td>" : "</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    if (t->note) {
        fputs("<p class=\"note\">", f);
        kvs_put_html(f, t->note);
        fputs("</p>\n", f);
    }
}
