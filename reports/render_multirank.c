/* reports/render_multirank.c — several ranks' reports in one document: the
 * summary across ranks first (notes, the ranks table: step time, GPU busy,
 * computation, communication and their overlap; findings by rank), then
 * every rank's own report, in rank order, in the same format.
 *
 *   kvscope report R0.json R1.json ... --format text|md|json|html
 *
 * JSON: the kvscope.multirank/1 document of docs/report-json.md, which holds
 * each rank's kvscope.report/1 document unchanged.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "multirank_impl.h"

static const char *source_words(const struct kvs_multirank *m)
{
    return !strcmp(m->rank_source, "trace") ? "ranks from the traces" : "ranks in file order";
}

static void world_words(char *buf, size_t size, const struct kvs_multirank *m)
{
    if (m->world_size > 0)
        snprintf(buf, size, "%zu rank%s of world size %d; %s", m->n, m->n == 1 ? "" : "s",
                 m->world_size, source_words(m));
    else
        snprintf(buf, size, "%zu rank%s; %s", m->n, m->n == 1 ? "" : "s", source_words(m));
}

static const char *per_what(const struct kvs_multirank *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->rows[i].steps > 0)
            return "per step";
    return "whole trace";
}

// ----------------------------------------------------------------------------
// text

enum kvs_status kvs_render_text_multirank(FILE *out, const struct kvs_multirank *m,
                                          const struct kvs_render_options *opt)
{
    const char *B = opt->color ? KVS_ANSI_BOLD : "", *R = opt->color ? KVS_ANSI_RESET : "";
    char world[160];
    world_words(world, sizeof world, m);
    fprintf(out, "%skvscope report%s  %s\n", B, R, world);
    for (size_t i = 0; i < m->n; i++) {
        fprintf(out, "  rank %-4d ", m->rows[i].rank);
        kvs_put_text(out, m->rows[i].a->trace.path ? m->rows[i].a->trace.path : "?");
        if (m->rows[i].a->trace.report_path) {
            fputs("  (its report: ", out);
            kvs_put_text(out, m->rows[i].a->trace.report_path);
            fputc(')', out);
        }
        fputc('\n', out);
    }
    fprintf(out, "\n%sACROSS RANKS%s\n", B, R);
    kvs_put_text_items(out, m->notes, m->nnote);
    struct kvs_table t;
    bool ok = kvs_mr_table_ranks(&t, m);
    fprintf(out, "\n%sRANKS (GPU ms %s)%s\n", B, per_what(m), R);
    kvs_table_print_text(out, &t, opt->color);
    kvs_table_free(&t);
    fprintf(out, "\n%sFINDINGS BY RANK%s\n", B, R);
    if (m->nfinding == 0) {
        fputs("  none on any rank\n", out);
    } else {
        ok = kvs_mr_table_findings(&t, m) && ok;
        kvs_table_print_text(out, &t, opt->color);
        kvs_table_free(&t);
    }
    for (size_t i = 0; i < m->n; i++) {
        fprintf(out, "\n%s==== rank %d ====%s\n", B, m->rows[i].rank, R);
        if (m->rows[i].a->trace.report_path) {
            fputs("  read from its kvscope report ", out);
            kvs_put_text(out, m->rows[i].a->trace.report_path);
            fputs(" (its kvscope.rank/1 summary): the rank's own report is that file\n", out);
            continue;
        }
        enum kvs_status st = opt->rank_section ? opt->rank_section(out, m->rows[i].a, opt->rank_section_user)
                                               : kvs_render_text_report(out, m->rows[i].a, opt);
        if (st != KVS_STATUS_OK)
            return st;
    }
    return ok ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

// ----------------------------------------------------------------------------
// markdown

enum kvs_status kvs_render_md_multirank(FILE *out, const struct kvs_multirank *m,
                                        const struct kvs_render_options *opt)
{
    char world[160];
    world_words(world, sizeof world, m);
    fputs("# kvscope report: ", out);
    kvs_put_md(out, world);
    fputs("\n\n", out);
    for (size_t i = 0; i < m->n; i++) {
        fprintf(out, "- **rank %d**: ", m->rows[i].rank);
        kvs_put_md(out, m->rows[i].a->trace.path ? m->rows[i].a->trace.path : "?");
        if (m->rows[i].a->trace.report_path) {
            fputs(" (its report: ", out);
            kvs_put_md(out, m->rows[i].a->trace.report_path);
            fputc(')', out);
        }
        fputc('\n', out);
    }
    fputs("\n## Across ranks\n\n", out);
    kvs_put_md_items(out, m->notes, m->nnote);
    struct kvs_table t;
    bool ok = kvs_mr_table_ranks(&t, m);
    fprintf(out, "\n## Ranks (GPU ms %s)\n\n", per_what(m));
    kvs_table_print_md(out, &t);
    kvs_table_free(&t);
    fputs("\n## Findings by rank\n\n", out);
    if (m->nfinding == 0) {
        fputs("None on any rank.\n", out);
    } else {
        ok = kvs_mr_table_findings(&t, m) && ok;
        kvs_table_print_md(out, &t);
        kvs_table_free(&t);
    }
    for (size_t i = 0; i < m->n; i++) {
        fprintf(out, "\n---\n\n<!-- rank %d -->\n\n", m->rows[i].rank);
        if (m->rows[i].a->trace.report_path) {
            fprintf(out, "Rank %d was read from its kvscope report ", m->rows[i].rank);
            kvs_put_md(out, m->rows[i].a->trace.report_path);
            fputs(" (its kvscope.rank/1 summary): the rank's own report is that file.\n", out);
            continue;
        }
        enum kvs_status st = opt->rank_section ? opt->rank_section(out, m->rows[i].a, opt->rank_section_user)
                                               : kvs_render_md_report(out, m->rows[i].a, opt);
        if (st != KVS_STATUS_OK)
            return st;
    }
    return ok ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

// ----------------------------------------------------------------------------
// html

enum kvs_status kvs_render_html_multirank(FILE *out, const struct kvs_multirank *m,
                                          const struct kvs_render_options *opt)
{
    char world[160];
    world_words(world, sizeof world, m);
    char title[200];
    snprintf(title, sizeof title, "kvscope report: %s", world);
    kvs_html_head(out, title);
    fputs("<h1>kvscope report: ", out);
    kvs_put_html(out, world);
    fputs("</h1>\n<dl class=\"facts\">\n", out);
    for (size_t i = 0; i < m->n; i++) {
        fprintf(out, "<dt><a href=\"#rank-%d\">rank %d</a></dt><dd><code>", m->rows[i].rank,
                m->rows[i].rank);
        kvs_put_html(out, m->rows[i].a->trace.path ? m->rows[i].a->trace.path : "?");
        fputs("</code>", out);
        if (m->rows[i].a->trace.report_path) {
            fputs(" (its report: <code>", out);
            kvs_put_html(out, m->rows[i].a->trace.report_path);
            fputs("</code>)", out);
        }
        fputs("</dd>\n", out);
    }
    fputs("</dl>\n<h2>Across ranks</h2>\n<ul class=\"verdict\">\n", out);
    kvs_put_html_items(out, m->notes, m->nnote);
    fputs("</ul>\n", out);

    fprintf(out, "<h2>Each rank's step</h2>\n<p class=\"note\">GPU ms %s: computation alone, "
                 "computation and communication at once (overlap), communication alone "
                 "(exposed), and idle (wall time minus GPU busy time).</p>\n",
            per_what(m));
    struct kvs_svg_stack_row *rows = calloc(m->n ? m->n : 1, sizeof *rows);
    char (*labels)[24] = calloc(m->n ? m->n : 1, sizeof *labels);
    bool ok = rows && labels;
    if (ok) {
        for (size_t i = 0; i < m->n; i++) {
            const struct kvs_rank_row *r = &m->rows[i];
            snprintf(labels[i], sizeof labels[i], "rank %d", r->rank);
            rows[i].label = labels[i];
            rows[i].v[0] = r->compute_only_ms;
            rows[i].v[1] = r->overlap_ms;
            rows[i].v[2] = r->exposed_comm_ms;
            rows[i].v[3] = r->idle_ms;
        }
        static const char *const names[KVS_SVG_STACK_PARTS] = {"compute", "overlap",
                                                               "exposed comm", "idle"};
        kvs_svg_stacks(out, rows, m->n, names, per_what(m)[0] == 'p' ? "ms per step" : "ms",
                       "each rank's step: compute, overlap, exposed communication, idle");
    }
    free(rows);
    free(labels);

    struct kvs_table t;
    ok = kvs_mr_table_ranks(&t, m) && ok;
    fputs("<h2>Ranks</h2>\n", out);
    kvs_table_print_html(out, &t, "ranks");
    kvs_table_free(&t);
    fputs("<h2>Findings by rank</h2>\n", out);
    if (m->nfinding == 0) {
        fputs("<p>None on any rank.</p>\n", out);
    } else {
        ok = kvs_mr_table_findings(&t, m) && ok;
        kvs_table_print_html(out, &t, "findings");
        kvs_table_free(&t);
    }
    for (size_t i = 0; i < m->n; i++) {
        fprintf(out, "<section id=\"rank-%d\">\n<hr>\n", m->rows[i].rank);
        if (m->rows[i].a->trace.report_path) {
            fprintf(out, "<p>Rank %d was read from its kvscope report <code>", m->rows[i].rank);
            kvs_put_html(out, m->rows[i].a->trace.report_path);
            fputs("</code> (its kvscope.rank/1 summary): the rank's own report is that file.</p>\n", out);
        } else if (opt->rank_section) {
            ok = opt->rank_section(out, m->rows[i].a, opt->rank_section_user) == KVS_STATUS_OK && ok;
        } else {
            ok = kvs_html_report_body(out, m->rows[i].a, opt) && ok;
        }
        fputs("</section>\n", out);
    }
    kvs_html_foot(out);
    return ok ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
}

// ----------------------------------------------------------------------------
// json: kvscope.multirank/1

static void write_row(struct kvs_jw *w, const struct kvs_rank_row *r)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "rank");
    kvs_jw_int(w, r->rank);
    kvs_jw_key(w, "path");
    kvs_jw_str(w, r->a->trace.path);
    kvs_jw_key(w, "device");
    kvs_jw_str(w, r->a->trace.device);
    kvs_jw_key(w, "steps");
    kvs_jw_int(w, r->steps);
    kvs_jw_key(w, "step_ms");
    kvs_jw_num(w, r->step_ms);
    kvs_jw_key(w, "gpu_ms");
    kvs_jw_num(w, r->gpu_ms);
    kvs_jw_key(w, "gpu_busy_fraction");
    kvs_jw_num(w, r->busy_fraction);
    kvs_jw_key(w, "compute_ms");
    kvs_jw_num(w, r->compute_ms);
    kvs_jw_key(w, "comm_ms");
    kvs_jw_num(w, r->comm_ms);
    kvs_jw_key(w, "overlap_ms");
    kvs_jw_num(w, r->overlap_ms);
    kvs_jw_key(w, "exposed_comm_ms");
    kvs_jw_num(w, r->exposed_comm_ms);
    kvs_jw_key(w, "comm_fraction");
    kvs_jw_num(w, r->comm_fraction);
    kvs_jw_key(w, "arrival_skew_ms");
    kvs_jw_num(w, r->arrival_skew_ms);
    kvs_jw_key(w, "collective_ms");
    kvs_jw_num(w, r->collective_ms);
    kvs_jw_key(w, "findings");
    kvs_jw_arr_compact(w);
    for (size_t k = 0; r->a->findings && k < r->a->nfinding; k++)
        kvs_jw_str(w, r->a->findings[k].id);
    kvs_jw_arr_end(w);
    kvs_jw_key(w, "report");
    kvs_jw_str(w, r->a->trace.report_path);
    kvs_jw_obj_end(w);
}

/* the arrival at the steps' collectives */
static void write_arrival(struct kvs_jw *w, const struct kvs_multirank *m)
{
    kvs_jw_obj(w);
    kvs_jw_key(w, "steps");
    kvs_jw_int(w, m->arrival.steps);
    kvs_jw_key(w, "skipped_steps");
    kvs_jw_int(w, m->arrival.skipped_steps);
    kvs_jw_key(w, "collectives");
    kvs_jw_int(w, m->arrival.collectives);
    kvs_jw_key(w, "start_spread_ms");
    kvs_jw_num(w, m->arrival.start_spread_ms);
    kvs_jw_key(w, "end_spread_ms");
    kvs_jw_num(w, m->arrival.end_spread_ms);
    kvs_jw_key(w, "dur_ms");
    kvs_jw_num(w, m->arrival.dur_ms);
    kvs_jw_key(w, "ends_agree");
    kvs_jw_bool(w, m->arrival.ends_agree);
    kvs_jw_obj_end(w);
}

/* the rank the others wait for, the one that waits least, the longest step */
static void write_outliers(struct kvs_jw *w, const struct kvs_multirank *m)
{
    kvs_jw_key(w, "straggler");
    if (m->straggler >= 0) {
        const struct kvs_rank_row *s = &m->rows[m->straggler];
        kvs_jw_obj(w);
        kvs_jw_key(w, "rank");
        kvs_jw_int(w, s->rank);
        kvs_jw_key(w, "arrival_skew_ms");
        kvs_jw_num(w, s->arrival_skew_ms);
        kvs_jw_key(w, "collective_ms");
        kvs_jw_num(w, s->collective_ms);
        kvs_jw_key(w, "step_ms");
        kvs_jw_num(w, s->step_ms);
        kvs_jw_key(w, "stands_out");
        kvs_jw_bool(w, m->straggler_stands_out);
        kvs_jw_obj_end(w);
    } else {
        kvs_jw_null(w);
    }
    kvs_jw_key(w, "least_collective_rank");
    if (m->least_collective >= 0)
        kvs_jw_int(w, m->rows[m->least_collective].rank);
    else
        kvs_jw_null(w);
    kvs_jw_key(w, "longest_step");
    if (m->longest_step >= 0) {
        const struct kvs_rank_row *s = &m->rows[m->longest_step];
        kvs_jw_obj(w);
        kvs_jw_key(w, "rank");
        kvs_jw_int(w, s->rank);
        kvs_jw_key(w, "step_ms");
        kvs_jw_num(w, s->step_ms);
        kvs_jw_key(w, "over_median_ms");
        kvs_jw_num(w, m->longest_over_ms);
        kvs_jw_key(w, "over_median_fraction");
        kvs_jw_num(w, m->longest_over_fraction);
        kvs_jw_key(w, "stands_out");
        kvs_jw_bool(w, m->longest_stands_out);
        kvs_jw_key(w, "is_straggler");
        kvs_jw_bool(w, m->longest_step == m->straggler);
        kvs_jw_obj_end(w);
    } else {
        kvs_jw_null(w);
    }
}

/* which ranks have each finding */
static void write_rank_findings(struct kvs_jw *w, const struct kvs_multirank *m)
{
    kvs_jw_arr(w);
    for (size_t i = 0; i < m->nfinding; i++) {
        const struct kvs_rank_finding *f = &m->findings[i];
        kvs_jw_obj(w);
        kvs_jw_key(w, "id");
        kvs_jw_str(w, f->id);
        kvs_jw_key(w, "ranks");
        kvs_jw_arr_compact(w);
        for (size_t k = 0; k < f->nranks; k++)
            kvs_jw_int(w, f->ranks[k]);
        kvs_jw_arr_end(w);
        kvs_jw_key(w, "max_gpu_ms_per_step");
        kvs_jw_num(w, f->max_gpu_ms_per_step);
        kvs_jw_key(w, "max_rank");
        kvs_jw_int(w, f->max_rank);
        kvs_jw_obj_end(w);
    }
    kvs_jw_arr_end(w);
}

enum kvs_status kvs_render_json_multirank(FILE *out, const struct kvs_multirank *m,
                                          const struct kvs_render_options *opt)
{
    (void)opt;
    struct kvs_jw w;
    kvs_jw_init(&w, out);
    kvs_jw_obj_schema(&w, "kvscope.multirank/1");
    kvs_jw_key(&w, "ranks");
    kvs_jw_obj(&w);
    kvs_jw_key(&w, "count");
    kvs_jw_int(&w, (int64_t)m->n);
    kvs_jw_key(&w, "world_size");
    kvs_jw_int_or_null(&w, m->world_size, m->world_size > 0);
    kvs_jw_key(&w, "rank_source");
    kvs_jw_str(&w, m->rank_source);
    kvs_jw_key(&w, "per_step");
    kvs_jw_bool(&w, per_what(m)[0] == 'p');
    kvs_jw_key(&w, "step_ms");
    kvs_jw_obj(&w);
    kvs_jw_key(&w, "min");
    kvs_jw_num(&w, m->step_min_ms);
    kvs_jw_key(&w, "median");
    kvs_jw_num(&w, m->step_median_ms);
    kvs_jw_key(&w, "max");
    kvs_jw_num(&w, m->step_max_ms);
    kvs_jw_obj_end(&w);
    kvs_jw_key(&w, "arrival");
    write_arrival(&w, m);
    write_outliers(&w, m);
    kvs_jw_key(&w, "most_compute_rank");
    if (m->most_compute >= 0)
        kvs_jw_int(&w, m->rows[m->most_compute].rank);
    else
        kvs_jw_null(&w);
    kvs_jw_key(&w, "per_rank");
    kvs_jw_arr(&w);
    for (size_t i = 0; i < m->n; i++)
        write_row(&w, &m->rows[i]);
    kvs_jw_arr_end(&w);
    kvs_jw_key(&w, "findings");
    write_rank_findings(&w, m);
    kvs_jw_key(&w, "notes");
    kvs_jw_strs(&w, m->notes, m->nnote, false);
    kvs_jw_obj_end(&w);
    kvs_jw_key(&w, "reports");
    kvs_jw_arr(&w);
    enum kvs_status st = KVS_STATUS_OK;
    for (size_t i = 0; i < m->n; i++) {
        if (m->rows[i].a->trace.report_path) { /* that file is its report */
            kvs_jw_null(&w);
        } else if (opt->rank_section) {
            kvs_jw_sep(&w);
            enum kvs_status s = opt->rank_section(out, m->rows[i].a, opt->rank_section_user);
            st = st == KVS_STATUS_OK ? s : st;
        } else {
            kvs_json_write_report(&w, m->rows[i].a);
        }
    }
    kvs_jw_arr_end(&w);
    kvs_jw_obj_end(&w);
    return st;
}

/* what the renderers above write for one rank in place of opt->rank_section */
enum kvs_status kvs_render_rank_section(FILE *out, const struct kvs_analysis *a,
                                        const struct kvs_render_options *opt)
{
    if (!out || !a || !opt)
        return KVS_STATUS_INVALID_ARGUMENT;
    switch (opt->format) {
    case KVS_FORMAT_TEXT: return kvs_render_text_report(out, a, opt);
    case KVS_FORMAT_MARKDOWN: return kvs_render_md_report(out, a, opt);
    case KVS_FORMAT_HTML: return kvs_html_report_body(out, a, opt) ? KVS_STATUS_OK : KVS_STATUS_NO_MEMORY;
    case KVS_FORMAT_JSON: {
        /* an entry of "reports" (depth 2), its separator written by the caller */
        struct kvs_jw w;
        kvs_jw_init(&w, out);
        w.depth = 2;
        w.after_key = true;
        kvs_json_write_report(&w, a);
        return KVS_STATUS_OK;
    }
    default: return KVS_STATUS_INVALID_ARGUMENT;
    }
}

// ----------------------------------------------------------------------------
// tables shared by the text, markdown and HTML pages

bool kvs_mr_table_ranks(struct kvs_table *t, const struct kvs_multirank *m)
{
    static const char *const hdr[] = {"rank", "steps", "step ms", "GPU busy ms", "busy",
                                      "compute ms", "comm ms", "overlap ms", "exposed comm ms",
                                      "comm % of busy", "arrives ms", "findings", "device"};
    static const enum kvs_col kind[] = {KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM,
                                        KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM,
                                        KVS_COL_NUM, KVS_COL_NUM, KVS_COL_NUM, KVS_COL_TEXT,
                                        KVS_COL_TEXT};
    kvs_table_init(t, 13, hdr, kind);
    bool totals = false;
    for (size_t i = 0; i < m->n; i++) {
        const struct kvs_rank_row *r = &m->rows[i];
        char rk[24], st[24], sm[KVS_FMT_BUF], g[KVS_FMT_BUF], bf[KVS_FMT_BUF], cp[KVS_FMT_BUF],
            cm[KVS_FMT_BUF], ov[KVS_FMT_BUF], ex[KVS_FMT_BUF], cf[KVS_FMT_BUF], ar[KVS_FMT_BUF],
            ids[200];
        snprintf(rk, sizeof rk, "%d%s", r->rank, (int)i == m->straggler && m->straggler_stands_out ? " *" : "");
        snprintf(st, sizeof st, "%lld", (long long)r->steps);
        totals = totals || r->steps == 0;
        kvs_fmt_ms(sm, r->step_ms);
        kvs_fmt_ms(g, r->gpu_ms);
        kvs_fmt_pct(bf, r->busy_fraction);
        kvs_fmt_ms(cp, r->compute_ms);
        kvs_fmt_ms(cm, r->comm_ms);
        kvs_fmt_ms(ov, r->overlap_ms);
        kvs_fmt_ms(ex, r->exposed_comm_ms);
        kvs_fmt_pct(cf, r->comm_fraction);
        if (isfinite(r->arrival_skew_ms))
            kvs_fmt_ms(ar, r->arrival_skew_ms);
        else
            snprintf(ar, sizeof ar, "-");
        size_t len = 0;
        ids[0] = 0;
        for (size_t k = 0; r->a->findings && k < r->a->nfinding && len + 40 < sizeof ids; k++)
            len += (size_t)snprintf(ids + len, sizeof ids - len, "%s%s", k ? ", " : "",
                                    r->a->findings[k].id ? r->a->findings[k].id : "?");
        if (!len)
            snprintf(ids, sizeof ids, "none");
        const char *row[] = {rk, st, sm, g, bf, cp, cm, ov, ex, cf, ar, ids,
                             r->a->trace.device ? r->a->trace.device : "-"};
        kvs_table_add(t, row);
    }
    bool arrived = m->arrival.steps > 0;
    if (m->straggler_stands_out || totals || arrived) {
        snprintf(t->note_buf, sizeof t->note_buf, "%s%s%s%s%s",
                 arrived ? "arrives ms: how late its collectives start after the earliest rank's "
                           "(median per step)" : "",
                 arrived && (m->straggler_stands_out || totals) ? "; " : "",
                 m->straggler_stands_out ? "* the straggler (arrives last)" : "",
                 m->straggler_stands_out && totals ? "; " : "",
                 totals ? "ranks with 0 steps show whole-trace totals" : "");
        t->note = t->note_buf;
    }
    return !t->failed;
}

bool kvs_mr_table_findings(struct kvs_table *t, const struct kvs_multirank *m)
{
    static const char *const hdr[] = {"finding", "ranks", "of", "max recoverable ms/step", "on rank"};
    static const enum kvs_col kind[] = {KVS_COL_CODE, KVS_COL_TEXT, KVS_COL_NUM, KVS_COL_NUM,
                                        KVS_COL_NUM};
    kvs_table_init(t, 5, hdr, kind);
    for (size_t i = 0; i < m->nfinding; i++) {
        const struct kvs_rank_finding *f = &m->findings[i];
        char ranks[256], of[48], ms[KVS_FMT_BUF], on[24];
        kvs_rank_list(ranks, sizeof ranks, f->ranks, f->nranks);
        snprintf(of, sizeof of, "%zu of %zu", f->nranks, m->n);
        kvs_fmt_ms(ms, f->max_gpu_ms_per_step);
        snprintf(on, sizeof on, "%d", f->max_rank);
        const char *row[] = {f->id, ranks, of, ms, on};
        kvs_table_add(t, row);
    }
    return !t->failed;
}
