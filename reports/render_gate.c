/* reports/render_gate.c — a gated comparison's checks (kvs_gate_compare,
 * kvscope/gate.h, analyzers/gate.c computed them and their sentences) in
 * each format: a GATE section on the text, markdown and HTML compare pages,
 * the "gate" object of kvscope.compare/1, and JUnit XML (one testsuite per
 * AFTER, one testcase per check, a <failure> with its reason) for Jenkins,
 * GitLab and GitHub.
 *
 *   kvscope compare BASE NEW --fail-on regression [--format text|md|json|html|junit]
 */
#include <math.h>
#include <string.h>

#include "compare_impl.h"
#include "table.h"

static size_t count(const struct kvs_gate *g, enum kvs_gate_result r)
{
    size_t n = 0;
    for (size_t i = 0; i < g->ncheck; i++)
        n += g->checks[i].result == r;
    return n;
}

/* "3 of 7 checks failed" / "7 checks passed, 1 skipped" */
static void tally(char *buf, size_t size, const struct kvs_gate *g)
{
    size_t fail = count(g, KVS_GATE_FAIL), skip = count(g, KVS_GATE_SKIPPED);
    size_t pass = count(g, KVS_GATE_PASS);
    if (fail)
        snprintf(buf, size, "NEW is worse than BASE: %zu of %zu checks failed", fail, g->ncheck);
    else
        snprintf(buf, size, "NEW is not worse than BASE: %zu check%s passed", pass, pass == 1 ? "" : "s");
    if (skip) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, ", %zu skipped", skip);
    }
}

static const char *label(enum kvs_gate_result r)
{
    return r == KVS_GATE_FAIL ? "FAIL" : r == KVS_GATE_SKIPPED ? "skip" : "pass";
}

/* "(2 copy/cast roles under 1% of NEW's GPU time per step were not checked)" */
static void unchecked_note(char *buf, size_t size, const struct kvs_gate *g)
{
    buf[0] = 0;
    if (g->roles_unchecked)
        snprintf(buf, size,
                 "%zu copy/cast role%s under %.0f%% of NEW's GPU time per step %s not checked.",
                 g->roles_unchecked, g->roles_unchecked == 1 ? "" : "s",
                 KVS_GATE_ROLE_MIN_SHARE * 100, g->roles_unchecked == 1 ? "was" : "were");
}

// ----------------------------------------------------------------------------
// text, markdown, html

void kvs_gate_put_text(FILE *out, const struct kvs_gate *g, const struct kvs_render_options *opt)
{
    const char *B = opt->color ? KVS_ANSI_BOLD : "", *R = opt->color ? KVS_ANSI_RESET : "";
    char t[160], note[160];
    tally(t, sizeof t, g);
    fprintf(out, "%sGATE%s  %s%s%s (--fail-on regression, threshold %g%%): %s\n", B, R,
            opt->color ? (g->passed ? KVS_ANSI_GREEN : KVS_ANSI_RED) : "",
            g->passed ? "PASSED" : "FAILED", R, g->threshold_pct, t);
    for (size_t i = 0; i < g->ncheck; i++) {
        const struct kvs_gate_check *c = &g->checks[i];
        const char *col = !opt->color ? ""
                          : c->result == KVS_GATE_FAIL ? KVS_ANSI_RED
                          : c->result == KVS_GATE_SKIPPED ? KVS_ANSI_YELLOW
                                                          : "";
        fprintf(out, "  %s%s%s  ", col, label(c->result), *col ? R : "");
        kvs_put_wrapped(out, c->message, 8, 8);
        fputc('\n', out);
    }
    unchecked_note(note, sizeof note, g);
    if (*note)
        fprintf(out, "  %s\n", note);
}

void kvs_gate_put_md(FILE *out, const struct kvs_gate *g)
{
    char t[160], note[160];
    tally(t, sizeof t, g);
    fprintf(out, "## Gate: %s\n\n%s (`--fail-on regression`, threshold %g%%).\n\n",
            g->passed ? "passed" : "**failed**", t, g->threshold_pct);
    for (size_t i = 0; i < g->ncheck; i++) {
        const struct kvs_gate_check *c = &g->checks[i];
        fprintf(out, c->result == KVS_GATE_FAIL ? "- **FAIL** " : "- %s ", label(c->result));
        kvs_put_md(out, c->message);
        fputc('\n', out);
    }
    unchecked_note(note, sizeof note, g);
    if (*note)
        fprintf(out, "\n%s\n", note);
}

void kvs_gate_put_html(FILE *out, const struct kvs_gate *g)
{
    char t[160], note[160];
    tally(t, sizeof t, g);
    fprintf(out, "<h2>Gate: %s</h2>\n<p>%s (<code>--fail-on regression</code>, threshold %g%%).</p>\n"
                 "<ul class=\"verdict\">\n",
            g->passed ? "passed" : "failed", t, g->threshold_pct);
    for (size_t i = 0; i < g->ncheck; i++) {
        const struct kvs_gate_check *c = &g->checks[i];
        fprintf(out, "<li><span class=\"sev %s\">%s</span>",
                c->result == KVS_GATE_FAIL ? "high" : c->result == KVS_GATE_SKIPPED ? "warn" : "info",
                label(c->result));
        kvs_put_html(out, c->message);
        fputs("</li>\n", out);
    }
    fputs("</ul>\n", out);
    unchecked_note(note, sizeof note, g);
    if (*note)
        fprintf(out, "<p class=\"note\">%s</p>\n", note);
}

// ----------------------------------------------------------------------------
// json: the "gate" object of kvscope.compare/1 (docs/report-json.md)

static void json_check(struct kvs_jw *w, const struct kvs_gate_check *c)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "kind");
    kvs_jw_str(w, kvs_gate_kind_name(c->kind));
    kvs_jw_key(w, "what");
    kvs_jw_str(w, c->what);
    kvs_jw_key(w, "before");
    kvs_jw_num(w, c->before);
    kvs_jw_key(w, "after");
    kvs_jw_num(w, c->after);
    kvs_jw_key(w, "change_pct");
    kvs_jw_num(w, c->change_pct);
    kvs_jw_key(w, "significant");
    kvs_jw_bool_or_null(w, c->significant == 1, c->significant >= 0);
    kvs_jw_key(w, "result");
    kvs_jw_str(w, kvs_gate_result_name(c->result));
    kvs_jw_key(w, "unit");
    kvs_jw_str(w, c->unit);
    kvs_jw_key(w, "interval_pct");
    if (c->has_interval) {
        kvs_jw_arr_compact(w);
        kvs_jw_num(w, c->low_pct);
        kvs_jw_num(w, c->high_pct);
        kvs_jw_arr_end(w);
    } else {
        kvs_jw_null(w);
    }
    kvs_jw_key(w, "confidence");
    kvs_jw_num(w, c->has_interval ? c->confidence : NAN);
    kvs_jw_key(w, "steps");
    kvs_jw_int_pair_or_null(w, (int64_t)c->nbefore, (int64_t)c->nafter, c->nbefore || c->nafter);
    kvs_jw_key(w, "message");
    kvs_jw_str(w, c->message);
    kvs_jw_obj_end(w);
}

void kvs_gate_put_json(struct kvs_jw *w, const struct kvs_gate *g)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "passed");
    kvs_jw_bool(w, g->passed);
    kvs_jw_key(w, "threshold_pct");
    kvs_jw_num(w, g->threshold_pct);
    kvs_jw_key(w, "reasons");
    kvs_jw_arr(w);
    for (size_t i = 0; i < g->ncheck; i++)
        if (g->checks[i].result == KVS_GATE_FAIL)
            json_check(w, &g->checks[i]);
    kvs_jw_arr_end(w);
    kvs_jw_key(w, "checks");
    kvs_jw_arr(w);
    for (size_t i = 0; i < g->ncheck; i++)
        json_check(w, &g->checks[i]);
    kvs_jw_arr_end(w);
    kvs_jw_key(w, "roles_unchecked");
    kvs_jw_int(w, (int64_t)g->roles_unchecked);
    kvs_jw_obj_end(w);
}

// ----------------------------------------------------------------------------
// JUnit XML

/* Text for XML 1.0 content and attributes: HTML's escaping (which also
 * replaces control characters and invalid UTF-8), and U+FFFE/U+FFFF,
 * which XML forbids, as U+FFFD. */
static void put_xml(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        const unsigned char *u = (const unsigned char *)s;
        if (u[0] == 0xEF && u[1] == 0xBF && (u[2] == 0xBE || u[2] == 0xBF)) {
            fputs("\xEF\xBF\xBD", f);
            s += 2;
        } else if (u[0] >= 0x80) {
            s += kvs_put_utf8(f, s) - 1;
        } else {
            char one[2] = {*s, 0};
            kvs_put_html(f, one);
        }
    }
}

/* the trace's file name as the dotted classname's last part: letters,
 * digits, '-' and '_' kept, anything else '_' (a '.' would split it into
 * packages in Jenkins) */
static void put_class(FILE *f, const char *path)
{
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path ? path : "after";
    fputs("kvscope.gate.", f);
    for (const char *p = base; *p; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '-' || ch == '_';
        fputc(ok ? ch : '_', f);
    }
}

enum kvs_status kvs_render_junit_gates(FILE *out, const struct kvs_comparison *const *cmp, size_t n,
                                       const struct kvs_render_options *opt)
{
    (void)opt;
    size_t tests = 0, failures = 0, skipped = 0;
    for (size_t k = 0; k < n; k++) {
        const struct kvs_gate *g = cmp[k]->gate;
        tests += g->ncheck;
        failures += count(g, KVS_GATE_FAIL);
        skipped += count(g, KVS_GATE_SKIPPED);
    }
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuites name=\"kvscope compare --fail-on regression\" tests=\"%zu\" "
            "failures=\"%zu\" errors=\"0\" skipped=\"%zu\">\n",
            tests, failures, skipped);
    for (size_t k = 0; k < n; k++) {
        const struct kvs_comparison *c = cmp[k];
        const struct kvs_gate *g = c->gate;
        fputs("  <testsuite name=\"kvscope gate: ", out);
        put_xml(out, c->after.path ? c->after.path : "?");
        fputs(" against ", out);
        put_xml(out, c->before.path ? c->before.path : "?");
        fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\">\n",
                g->ncheck, count(g, KVS_GATE_FAIL), count(g, KVS_GATE_SKIPPED));
        fputs("    <properties>\n      <property name=\"before\" value=\"", out);
        put_xml(out, c->before.path ? c->before.path : "");
        fputs("\"/>\n      <property name=\"after\" value=\"", out);
        put_xml(out, c->after.path ? c->after.path : "");
        fprintf(out,
                "\"/>\n      <property name=\"threshold_pct\" value=\"%g\"/>\n"
                "      <property name=\"passed\" value=\"%s\"/>\n    </properties>\n",
                g->threshold_pct, g->passed ? "true" : "false");
        for (size_t i = 0; i < g->ncheck; i++) {
            const struct kvs_gate_check *ck = &g->checks[i];
            fputs("    <testcase classname=\"", out);
            put_class(out, c->after.path);
            fputs("\" name=\"", out);
            if (ck->kind == KVS_GATE_FINDING || ck->kind == KVS_GATE_COPY_BYTES)
                fputs(ck->kind == KVS_GATE_FINDING ? "finding " : "copy/cast bytes per step: ", out);
            put_xml(out, ck->what);
            fputs("\">\n", out);
            if (ck->result == KVS_GATE_FAIL) {
                fputs("      <failure type=\"regression\" message=\"", out);
                put_xml(out, ck->message);
                fputs("\">", out);
                put_xml(out, ck->message);
                fputs("</failure>\n", out);
            } else if (ck->result == KVS_GATE_SKIPPED) {
                fputs("      <skipped message=\"", out);
                put_xml(out, ck->message);
                fputs("\"/>\n", out);
            } else {
                fputs("      <system-out>", out);
                put_xml(out, ck->message);
                fputs("</system-out>\n", out);
            }
            fputs("    </testcase>\n", out);
        }
        fputs("  </testsuite>\n", out);
    }
    fputs("</testsuites>\n", out);
    return KVS_STATUS_OK;
}
