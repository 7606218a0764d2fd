/* reports/fmt.c — text for table cells and terminals: truncation, labels,
 * escaping for HTML and markdown, and sentence lists (a verdict, notes) in
 * each human format (kvs_put_*_items). Shared by every human-facing
 * renderer. (Numbers with units and short dtype/dims names:
 * kvscope/units.h; short kernel names: kvscope/kernel_name.h; both shared
 * with the analyzer's sentences.)
 *
 * Tested in tests/test_report_fmt.c.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report_impl.h"

const char *kvs_no_findings_text(const struct kvs_analysis *a)
{
    if (a->trace.kernels + a->trace.memcpys + a->trace.memsets == 0)
        return "the trace records no GPU activity (kernels, copies, memsets), so there is nothing "
               "on the GPU to judge";
    return "no copy/cast bottleneck, bandwidth or idle-GPU problem stands out";
}

char *kvs_truncate(char *buf, size_t size, const char *s, size_t width)
{
    if (!s)
        s = "-";
    if (width + 1 > size)
        width = size - 1;
    size_t len = strlen(s);
    if (len > width && width >= 4) {
        size_t cut = width - 3; /* never inside a UTF-8 character */
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
            cut--;
        memcpy(buf, s, cut);
        memcpy(buf + cut, "...", 4);
    } else {
        snprintf(buf, size, "%s", s);
    }
    return buf;
}

const char *kvs_severity_name(enum kvs_severity s)
{
    switch (s) {
    case KVS_SEV_INFO: return "info";
    case KVS_SEV_WARN: return "warn";
    case KVS_SEV_HIGH: return "high";
    }
    return "info";
}

const char *kvs_cat_label(int cat)
{
    static const char *const labels[] = {"copy/cast", "GEMM", "attention", "communication",
                                         "other", "idle"};
    if (cat < 0 || cat > KVS_CAT_COUNT_)
        return "other";
    return labels[cat];
}

// ----------------------------------------------------------------------------
// escaping

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
size_t kvs_utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void kvs_put_text_n(FILE *f, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str, *end = s + n;
    while (s < end && *s) {
        size_t k = *s < 0x80 ? 1 : kvs_utf8_len(s);
        if (k == 0 || s + k > end || *s < 0x20 || *s == 0x7F) {
            fputc('?', f);
            s++;
        } else {
            fwrite(s, 1, k, f);
            s += k;
        }
    }
}

void kvs_put_text(FILE *f, const char *s)
{
    if (s)
        kvs_put_text_n(f, s, strlen(s));
}

size_t kvs_put_utf8(FILE *f, const char *s)
{
    size_t k = kvs_utf8_len((const unsigned char *)s);
    if (!k) {
        fputs("\xEF\xBF\xBD", f);
        return 1;
    }
    fwrite(s, 1, k, f);
    return k;
}

/* s with each ASCII character through esc (its replacement, or NULL: the
 * character itself) and the rest as whole UTF-8 sequences (kvs_put_utf8). */
static void put_escaped(FILE *f, const char *s, const char *(*esc)(char c))
{
    if (!s)
        return;
    for (; *s; s++) {
        if ((unsigned char)*s >= 0x80) {
            s += kvs_put_utf8(f, s) - 1;
            continue;
        }
        const char *r = esc(*s);
        if (r)
            fputs(r, f);
        else
            fputc(*s, f);
    }
}

static const char *html_escape(char c)
{
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&#39;";
    case '\n':
    case '\t': return NULL;
    }
    /* control characters have no business in a page */
    return (unsigned char)c < 0x20 ? " " : NULL;
}

static const char *md_escape(char c)
{
    switch (c) {
    case '|': return "\\|";
    case '\n':
    case '\r': return " ";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '*': return "\\*";
    case '_': return "\\_";
    case '`': return "\\`";
    case '[': return "\\[";
    case ']': return "\\]";
    case '\\': return "\\\\";
    }
    return NULL;
}

void kvs_put_html(FILE *f, const char *s) { put_escaped(f, s, html_escape); }

void kvs_put_md(FILE *f, const char *s) { put_escaped(f, s, md_escape); }

size_t kvs_text_width(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

void kvs_put_wrapped(FILE *f, const char *s, size_t indent, size_t col)
{
    while (s && *s) {
        size_t room = col < KVS_WRAP ? KVS_WRAP - col : 20;
        size_t len = strlen(s), cut = len;
        if (kvs_text_width(s) > room) {
            cut = 0;
            for (size_t i = 0; i < len && i <= room; i++)
                if (s[i] == ' ')
                    cut = i;
            if (cut == 0) /* one long word: let it run to the next space */
                while (cut < len && s[cut] != ' ')
                    cut++;
        }
        kvs_put_text_n(f, s, cut);
        s += cut;
        while (*s == ' ')
            s++;
        if (*s) {
            fputc('\n', f);
            for (size_t i = 0; i < indent; i++)
                fputc(' ', f);
            col = indent;
        }
    }
}

// ----------------------------------------------------------------------------
// lists of sentences (a verdict, notes)

void kvs_put_text_items(FILE *f, char *const *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fputs("  - ", f);
        kvs_put_wrapped(f, items[i], 4, 4);
        fputc('\n', f);
    }
}

void kvs_put_md_items(FILE *f, char *const *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fputs("- ", f);
        kvs_put_md(f, items[i]);
        fputc('\n', f);
    }
}

void kvs_put_html_items(FILE *f, char *const *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fputs("<li>", f);
        kvs_put_html(f, items[i]);
        fputs("</li>\n", f);
    }
}
