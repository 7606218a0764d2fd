/* reports/render.c — the public entry points of reports/: format names, and
 * dispatch of a report (or a comparison) to the renderer of its format.
 *
 *   kvscope report TRACE --format text|md|json|html
 *
 * Every renderer writes to a FILE the caller owns; a write error anywhere
 * (disk full, closed pipe) comes back as KVS_STATUS_IO.
 */
#include <errno.h>
#include <string.h>

#include "compare_impl.h"
#include "report_impl.h"

enum kvs_status kvs_format_parse(const char *name, enum kvs_format *out)
{
    if (!name || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    static const struct {
        const char *name;
        enum kvs_format fmt;
    } names[] = {
        {"text", KVS_FORMAT_TEXT}, {"txt", KVS_FORMAT_TEXT},
        {"md", KVS_FORMAT_MARKDOWN}, {"markdown", KVS_FORMAT_MARKDOWN},
        {"json", KVS_FORMAT_JSON}, {"html", KVS_FORMAT_HTML}, {"junit", KVS_FORMAT_JUNIT},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(name, names[i].name)) {
            *out = names[i].fmt;
            return KVS_STATUS_OK;
        }
    }
    return KVS_STATUS_INVALID_ARGUMENT;
}

enum kvs_status kvs_format_from_path(const char *path, enum kvs_format *out)
{
    if (!path || !out)
        return KVS_STATUS_INVALID_ARGUMENT;
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash) || !dot[1] || strlen(dot + 1) > 8)
        return KVS_STATUS_INVALID_ARGUMENT;
    char ext[9];
    size_t n = 0;
    for (const char *p = dot + 1; *p; p++)
        ext[n++] = (char)((*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p);
    ext[n] = 0;
    if (!strcmp(ext, "htm")) {
        *out = KVS_FORMAT_HTML;
        return KVS_STATUS_OK;
    }
    return kvs_format_parse(ext, out);
}

static enum kvs_status finish(FILE *out, enum kvs_status st, const struct kvs_render_options *opt)
{
    if (st != KVS_STATUS_OK)
        return st;
    if (fflush(out) != 0 || ferror(out)) {
        kvs_log(&opt->log, KVS_LOG_ERROR, "writing the report failed: %s", strerror(errno));
        return KVS_STATUS_IO;
    }
    return KVS_STATUS_OK;
}

enum kvs_status kvs_render_report(FILE *out, const struct kvs_analysis *a,
                                  const struct kvs_render_options *opt)
{
    if (!out || !a || !opt)
        return KVS_STATUS_INVALID_ARGUMENT;
    enum kvs_status st;
    switch (opt->format) {
    case KVS_FORMAT_JSON: st = kvs_render_json_report(out, a, opt); break;
    case KVS_FORMAT_TEXT: st = kvs_render_text_report(out, a, opt); break;
    case KVS_FORMAT_MARKDOWN: st = kvs_render_md_report(out, a, opt); break;
    case KVS_FORMAT_HTML: st = kvs_render_html_report(out, a, opt); break;
    default: return KVS_STATUS_INVALID_ARGUMENT;
    }
    return finish(out, st, opt);
}

enum kvs_status kvs_render_compare(FILE *out, const struct kvs_comparison *c,
                                   const struct kvs_render_options *opt)
{
    if (!out || !c || !opt)
        return KVS_STATUS_INVALID_ARGUMENT;
    enum kvs_status st;
    switch (opt->format) {
    case KVS_FORMAT_JSON: st = kvs_render_json_compare(out, c, opt); break;
    case KVS_FORMAT_TEXT: st = kvs_render_text_compare(out, c, opt); break;
    case KVS_FORMAT_MARKDOWN: st = kvs_render_md_compare(out, c, opt); break;
    case KVS_FORMAT_HTML: st = kvs_render_html_compare(out, c, opt); break;
    case KVS_FORMAT_JUNIT: return kvs_render_compare_junit(out, &c, 1, opt);
    default: return KVS_STATUS_INVALID_ARGUMENT;
    }
    return finish(out, st, opt);
}

enum kvs_status kvs_render_compare_junit(FILE *out, const struct kvs_comparison *const *cmp,
                                         size_t n, const struct kvs_render_options *opt)
{
    if (!out || !cmp || !n || !opt || opt->format != KVS_FORMAT_JUNIT)
        return KVS_STATUS_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (!cmp[i] || !cmp[i]->gate)
            return KVS_STATUS_INVALID_ARGUMENT;
    return finish(out, kvs_render_junit_gates(out, cmp, n, opt), opt);
}

enum kvs_status kvs_render_compare_summary(FILE *out, const struct kvs_comparison *const *cmp,
                                           size_t n, const struct kvs_summary *s,
                                           const struct kvs_render_options *opt)
{
    if (!out || !cmp || !n || !s || !opt)
        return KVS_STATUS_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (!cmp[i])
            return KVS_STATUS_INVALID_ARGUMENT;
    if (opt->format != KVS_FORMAT_JSON)
        return KVS_STATUS_INVALID_ARGUMENT;
    return finish(out, kvs_render_json_compare_summary(out, cmp, n, s), opt);
}

enum kvs_status kvs_render_multirank(FILE *out, const struct kvs_multirank *m,
                                     const struct kvs_render_options *opt)
{
    if (!out || !m || !opt)
        return KVS_STATUS_INVALID_ARGUMENT;
    enum kvs_status st;
    switch (opt->format) {
    case KVS_FORMAT_JSON: st = kvs_render_json_multirank(out, m, opt); break;
    case KVS_FORMAT_TEXT: st = kvs_render_text_multirank(out, m, opt); break;
    case KVS_FORMAT_MARKDOWN: st = kvs_render_md_multirank(out, m, opt); break;
    case KVS_FORMAT_HTML: st = kvs_render_html_multirank(out, m, opt); break;
    default: return KVS_STATUS_INVALID_ARGUMENT;
    }
    return finish(out, st, opt);
}
