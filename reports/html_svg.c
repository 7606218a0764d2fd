/* reports/html_svg.c — inline SVG charts for the HTML pages: the bandwidth
 * roofline of the copy/cast groups, the log-log roofline of every op group,
 * GPU time per step stacked by category,
 * before/after bars for compare, stacked bars per rank for several ranks. Plain SVG 1.1 (no script, no fonts
 * beyond the page's), every label escaped, every coordinate finite.
 *
 * Tested by tests/test_report_html.c (structure, escaping) and
 * tests/test_html_chromium.sh (renders in headless Chromium).
 */
#include <math.h>
#include <string.h>

#include "html.h"
#include "table.h"

static const char *const cat_color[KVS_CAT_COUNT_ + 1] = {
    "#d62728", /* copy/cast: the story's colour */
    "#1f77b4", /* GEMM */
    "#2ca02c", /* attention */
    "#9467bd", /* communication */
    "#8c8c8c", /* other */
    "#e8e8e8", /* idle */
};

/* A round tick spacing (1, 2 or 5 x 10^k) giving about `n` ticks up to max. */
static double nice_step(double max, int n)
{
    if (!(max > 0))
        return 1;
    double raw = max / n, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static double fin(double v)
{
    return kvs_finite_or0(v);
}

static void put_svg_text(FILE *f, double x, double y, const char *anchor, const char *cls,
                         const char *text)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s%s>", x, y, anchor,
            cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    kvs_put_html(f, text);
    fputs("</text>\n", f);
}

/* A chart's <svg> element of W x H user units, labelled for screen readers. */
static void svg_open(FILE *f, double W, double H, const char *aria_label)
{
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
               "role=\"img\" aria-label=\"",
            W, H, W, H);
    kvs_put_html(f, aria_label);
    fputs("\" xmlns=\"http://www.w3.org/2000/svg\">\n", f);
}

static void tick_label(char *buf, double v)
{
    if (v >= 1000 && fmod(v, 1000) == 0)
        snprintf(buf, KVS_FMT_BUF, "%gk", v / 1000);
    else
        snprintf(buf, KVS_FMT_BUF, "%g", v);
}

/* Vertical grid lines and labels along the x axis, from 0 to xmax. */
static void x_axis(FILE *f, double left, double plot_w, double top, double bottom, double xmax,
                   const char *unit)
{
    double step = nice_step(xmax, 5);
    char b[KVS_FMT_BUF];
    for (double v = 0; v <= xmax * 1.0001; v += step) {
        double x = left + v / xmax * plot_w;
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x,
                top, x, bottom);
        tick_label(b, v);
        put_svg_text(f, x, bottom + 14, "middle", "tick", b);
    }
    put_svg_text(f, left + plot_w, bottom + 30, "end", "axis", unit);
}

void kvs_svg_roofline(FILE *f, const struct kvs_analysis *a, size_t max_groups)
{
    size_t n = a->groups ? a->ngroup : 0;
    if (n > max_groups)
        n = max_groups;
    const double W = 900, left = 340, right = 110, top = 44, row = 26;
    double plot_w = W - left - right, bottom = top + row * (double)(n ? n : 1);
    double H = bottom + 40;
    double peak = fin(a->trace.peak_gbps), copy = fin(a->trace.copy_gbps), xmax = fmax(peak, copy);
    for (size_t i = 0; i < n; i++)
        xmax = fmax(xmax, fin(a->groups[i].achieved_gbps));
    xmax = xmax > 0 ? xmax * 1.06 : 1;

    svg_open(f, W, H, "bandwidth roofline");
    x_axis(f, left, plot_w, top, bottom, xmax, "achieved GB/s (bytes read + written / GPU time)");
    char b1[KVS_FMT_BUF], b2[KVS_FMT_BUF], label[200], full[320], dims[160];
    for (size_t i = 0; i < n; i++) {
        const struct kvs_group *g = &a->groups[i];
        double y = top + row * (double)i, v = fin(g->achieved_gbps);
        char op[48], dtypes[96];
        kvs_short_op(op, sizeof op, g->op, 24);
        kvs_short_dims(dims, sizeof dims, g);
        kvs_short_dtypes(dtypes, sizeof dtypes, g);
        snprintf(full, sizeof full, "%s %s %s", op, dims, dtypes);
        kvs_truncate(label, sizeof label, full, 50);
        fputs("<g>", f);
        fputs("<title>", f);
        kvs_put_html(f, g->op);
        fputs(" ", f);
        kvs_put_html(f, kvs_dims_json(full, sizeof full, g));
        fprintf(f, ": %s, %s ms/step</title>\n", kvs_fmt_gbps(b1, v), kvs_fmt_ms(b2, g->gpu_ms_per_step));
        put_svg_text(f, left - 8, y + row / 2 + 4, "end", "lbl", label);
        fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
                left, y + 4, v / xmax * plot_w, row - 8);
        if (g->bytes_per_call <= 0)
            snprintf(label, sizeof label, "bytes unknown");
        else if (g->host_link)
            snprintf(label, sizeof label, "%s (host link)", kvs_fmt_gbps(b1, v));
        else if (peak > 0)
            snprintf(label, sizeof label, "%s (%s)", kvs_fmt_gbps(b1, v),
                     kvs_fmt_pct(b2, fin(g->efficiency)));
        else
            kvs_fmt_gbps(label, v);
        put_svg_text(f, left + v / xmax * plot_w + 6, y + row / 2 + 4, "start", "val", label);
        fputs("</g>\n", f);
    }
    if (n == 0)
        put_svg_text(f, left + plot_w / 2, top + row / 2 + 4, "middle", "lbl",
                     "no copy/cast groups in this trace");
    /* the ceilings, labelled above the plot on two lines so they never collide */
    if (peak > 0) {
        double x = left + peak / xmax * plot_w;
        fprintf(f, "<line class=\"peak\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x,
                top - 26, x, bottom);
        snprintf(label, sizeof label, "HBM peak %s", kvs_fmt_gbps(b1, peak));
        put_svg_text(f, x, top - 30, "middle", "peaklbl", label);
    }
    if (copy > 0) {
        double x = left + copy / xmax * plot_w;
        fprintf(f, "<line class=\"copy\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x,
                top - 12, x, bottom);
        snprintf(label, sizeof label, "measured copy %s", kvs_fmt_gbps(b1, copy));
        put_svg_text(f, x - 4, top - 16, "end", "copylbl", label);
    }
    fputs("</svg>\n", f);
}

/* the ms part c of step s's stacked bar draws: a category's GPU time, then
 * (c == KVS_CAT_COUNT_) its idle time; nothing below 0. The axis is summed
 * from the same parts, so it ends where the tallest bar does. */
static double step_part(const struct kvs_step *s, int c)
{
    return fmax(0, fin(c < KVS_CAT_COUNT_ ? s->category_ms[c] : s->idle_ms));
}

void kvs_svg_steps(FILE *f, const struct kvs_analysis *a, size_t max_steps)
{
    size_t n = a->step ? a->nstep : 0;
    if (n > max_steps)
        n = max_steps;
    const double W = 860, left = 60, right = 150, top = 16, plot_h = 240;
    double plot_w = W - left - right, bottom = top + plot_h, H = bottom + 46;
    double ymax = 0;
    for (size_t i = 0; i < n; i++) { /* the tallest bar: a step's parts stacked */
        double bar = 0;
        for (int c = 0; c <= KVS_CAT_COUNT_; c++)
            bar += step_part(&a->step[i], c);
        ymax = fmax(ymax, bar);
    }
    ymax = ymax > 0 ? ymax * 1.05 : 1;
    svg_open(f, W, H, "GPU time per step by category");
    double step = nice_step(ymax, 5);
    char b[KVS_FMT_BUF];
    for (double v = 0; v <= ymax * 1.0001; v += step) {
        double y = bottom - v / ymax * plot_h;
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left,
                y, left + plot_w, y);
        tick_label(b, v);
        put_svg_text(f, left - 6, y + 4, "end", "tick", b);
    }
    put_svg_text(f, 14, top + plot_h / 2, "middle", "axis vert", "ms per step");
    double slot = n ? plot_w / (double)n : plot_w, bw = fmin(40, slot * 0.7);
    size_t label_every = n > 16 ? (n + 15) / 16 : 1;
    for (size_t i = 0; i < n; i++) {
        const struct kvs_step *s = &a->step[i];
        double x = left + slot * (double)i + (slot - bw) / 2, y = bottom;
        char ms[KVS_FMT_BUF], busy[KVS_FMT_BUF], wall[KVS_FMT_BUF], time[KVS_FMT_BUF], idle[KVS_FMT_BUF];
        fputs("<g><title>", f);
        kvs_put_html(f, s->name ? s->name : "step");
        fprintf(f, ": %s ms (CPU range %s ms), GPU busy %s ms (%s), idle %s ms",
                kvs_fmt_ms(time, s->time_ms), kvs_fmt_ms(wall, s->wall_ms), kvs_fmt_ms(ms, s->gpu_busy_ms),
                kvs_fmt_pct(busy, s->busy_fraction), kvs_fmt_ms(idle, s->idle_ms));
        fputs("</title>\n", f);
        for (int c = 0; c <= KVS_CAT_COUNT_; c++) {
            double v = step_part(s, c);
            if (!(v > 0))
                continue;
            double h = v / ymax * plot_h;
            y -= h;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                    x, y, bw, h, cat_color[c]);
        }
        fputs("</g>\n", f);
        if (i % label_every == 0) {
            snprintf(b, sizeof b, "%lld", (long long)s->index);
            put_svg_text(f, x + bw / 2, bottom + 14, "middle", "tick", b);
        }
    }
    put_svg_text(f, left + plot_w / 2, bottom + 34, "middle", "axis", "step");
    if (n == 0)
        put_svg_text(f, left + plot_w / 2, top + plot_h / 2, "middle", "lbl",
                     "no step markers in this trace");
    for (int c = KVS_CAT_COUNT_; c >= 0; c--) {
        double y = top + 8 + 20.0 * (KVS_CAT_COUNT_ - c);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
                left + plot_w + 18, y, cat_color[c]);
        put_svg_text(f, left + plot_w + 36, y + 10, "start", "lbl", kvs_cat_label(c));
    }
    fputs("</svg>\n", f);
}

void kvs_svg_pairs(FILE *f, const struct kvs_svg_pair *rows, size_t n, const char *unit,
                   const char *aria_label)
{
    const double W = 900, left = 340, right = 110, top = 30, row = 40;
    double plot_w = W - left - right, bottom = top + row * (double)(n ? n : 1), H = bottom + 40;
    double xmax = 0;
    for (size_t i = 0; i < n; i++)
        xmax = fmax(xmax, fmax(fin(rows[i].before), fin(rows[i].after)));
    xmax = xmax > 0 ? xmax * 1.06 : 1;
    svg_open(f, W, H, aria_label);
    x_axis(f, left, plot_w, top, bottom, xmax, unit);
    fprintf(f, "<rect x=\"%.0f\" y=\"6\" width=\"12\" height=\"12\" class=\"before\"/>\n", left);
    put_svg_text(f, left + 18, 16, "start", "lbl", "before");
    fprintf(f, "<rect x=\"%.0f\" y=\"6\" width=\"12\" height=\"12\" class=\"after\"/>\n", left + 80);
    put_svg_text(f, left + 98, 16, "start", "lbl", "after");
    for (size_t i = 0; i < n; i++) {
        double y = top + row * (double)i;
        char label[64], b[KVS_FMT_BUF];
        kvs_truncate(label, sizeof label, rows[i].label, 50);
        put_svg_text(f, left - 8, y + row / 2 + 4, "end", "lbl", label);
        double vals[2] = {fin(rows[i].before), fin(rows[i].after)};
        for (int k = 0; k < 2; k++) {
            double by = y + 5 + k * 15, w = vals[k] / xmax * plot_w;
            fprintf(f, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"13\"/>\n",
                    k ? "after" : "before", left, by, w);
            put_svg_text(f, left + w + 6, by + 11, "start", "val", kvs_fmt_ms(b, vals[k]));
        }
    }
    fputs("</svg>\n", f);
}

void kvs_svg_stacks(FILE *f, const struct kvs_svg_stack_row *rows, size_t n,
                    const char *const names[KVS_SVG_STACK_PARTS], const char *unit,
                    const char *aria_label)
{
    static const char *const color[KVS_SVG_STACK_PARTS] = {"#1f77b4", "#9467bd", "#d62728",
                                                           "#e0e0e0"};
    const double W = 900, left = 120, right = 90, top = 34, row = 28;
    double plot_w = W - left - right, bottom = top + row * (double)(n ? n : 1), H = bottom + 40;
    double xmax = 0;
    for (size_t i = 0; i < n; i++) {
        double sum = 0;
        for (int k = 0; k < KVS_SVG_STACK_PARTS; k++)
            sum += fmax(0, fin(rows[i].v[k]));
        xmax = fmax(xmax, sum);
    }
    xmax = xmax > 0 ? xmax * 1.06 : 1;
    svg_open(f, W, H, aria_label);
    x_axis(f, left, plot_w, top, bottom, xmax, unit);
    double lx = left;
    for (int k = 0; k < KVS_SVG_STACK_PARTS; k++) {
        fprintf(f, "<rect x=\"%.0f\" y=\"6\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx, color[k]);
        put_svg_text(f, lx + 18, 16, "start", "lbl", names[k]);
        lx += 30 + 7.0 * (double)strlen(names[k]);
    }
    for (size_t i = 0; i < n; i++) {
        double y = top + row * (double)i, x = left, sum = 0;
        char label[64], b[KVS_FMT_BUF];
        kvs_truncate(label, sizeof label, rows[i].label, 16);
        put_svg_text(f, left - 8, y + row / 2 + 4, "end", "lbl", label);
        fputs("<g><title>", f);
        kvs_put_html(f, rows[i].label);
        for (int k = 0; k < KVS_SVG_STACK_PARTS; k++)
            fprintf(f, "%s%s %s ms", k ? ", " : ": ", names[k], kvs_fmt_ms(b, fin(rows[i].v[k])));
        fputs("</title>\n", f);
        for (int k = 0; k < KVS_SVG_STACK_PARTS; k++) {
            double v = fmax(0, fin(rows[i].v[k])), w = v / xmax * plot_w;
            sum += v;
            if (w <= 0)
                continue;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"18\" fill=\"%s\"/>\n", x,
                    y + 5, w, color[k]);
            x += w;
        }
        fputs("</g>\n", f);
        put_svg_text(f, x + 6, y + 18, "start", "val", kvs_fmt_ms(b, sum));
    }
    fputs("</svg>\n", f);
}

// ----------------------------------------------------------------------------
// the per-op roofline: achieved TFLOP/s against arithmetic intensity, log-log

static double decade_floor(double v) { return pow(10, floor(log10(v))); }
static double decade_ceil(double v) { return pow(10, ceil(log10(v) - 1e-9)); }

static bool op_plotted(const struct kvs_op_roofline *o)
{
    return isfinite(o->intensity) && o->intensity > 0 && isfinite(o->achieved_tflops) &&
           o->achieved_tflops > 0;
}

struct loglog {
    double left, bottom, w, h, lx0, lx1, ly0, ly1;
};
static double lx(const struct loglog *p, double v) { return p->left + (log10(v) - p->lx0) / (p->lx1 - p->lx0) * p->w; }
static double ly(const struct loglog *p, double v) { return p->bottom - (log10(v) - p->ly0) / (p->ly1 - p->ly0) * p->h; }

/* one compute roof: the bandwidth slope up to its ridge, then flat */
static void roof_lines(FILE *f, const struct loglog *p, double gbps, double tflops, const char *cls)
{
    double bw = gbps / 1e3; /* TFLOP/s per FLOP/byte */
    double ridge = tflops / bw, x0 = fmax(pow(10, p->lx0), pow(10, p->ly0) / bw);
    double x1 = pow(10, p->lx1);
    if (ridge > x0)
        fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", cls, lx(p, x0),
                ly(p, x0 * bw), lx(p, fmin(ridge, x1)), ly(p, fmin(ridge, x1) * bw));
    if (ridge < x1)
        fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", cls,
                lx(p, fmax(ridge, pow(10, p->lx0))), ly(p, tflops), lx(p, x1), ly(p, tflops));
}

void kvs_svg_op_roofline(FILE *f, const struct kvs_analysis *a, size_t max_labels)
{
    const double W = 900, left = 70, right = 190, top = 20, plot_h = 340;
    struct loglog p = {left, top + plot_h, W - left - right, plot_h, 0, 0, 0, 0};
    double H = p.bottom + 52;
    double gbps = fin(a->trace.peak_gbps), bf = fin(a->trace.peak_bf16_tflops), f8 = fin(a->trace.peak_fp8_tflops);
    double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = fmax(bf, f8), top_ms = 0;
    bool any_fp8 = false;
    size_t n = a->ops ? a->nop : 0, shown = 0;
    for (size_t i = 0; i < n; i++) {
        const struct kvs_op_roofline *o = &a->ops[i];
        if (!op_plotted(o))
            continue;
        shown++;
        xmin = fmin(xmin, o->intensity), xmax = fmax(xmax, o->intensity);
        ymin = fmin(ymin, o->achieved_tflops), ymax = fmax(ymax, o->achieved_tflops);
        top_ms = fmax(top_ms, fin(o->gpu_ms));
        any_fp8 = any_fp8 || (o->precision && !strcmp(o->precision, "fp8"));
    }
    if (gbps > 0 && bf > 0) /* the ridge inside the plot */
        xmin = fmin(xmin, bf / (gbps / 1e3) / 10), xmax = fmax(xmax, bf / (gbps / 1e3) * 10);
    if (!shown)
        xmin = fmin(xmin, 0.1), xmax = fmax(xmax, 1000), ymin = fmin(ymin, 0.1), ymax = fmax(ymax, 1000);
    p.lx0 = log10(decade_floor(xmin)), p.lx1 = log10(decade_ceil(xmax));
    p.ly1 = log10(decade_ceil(ymax)), p.ly0 = log10(decade_floor(ymin));
    if (p.ly1 - p.ly0 > 8)
        p.ly0 = p.ly1 - 8; /* a point far below is drawn at the bottom edge */
    if (p.lx1 - p.lx0 < 2)
        p.lx1 = p.lx0 + 2;
    if (p.ly1 - p.ly0 < 2)
        p.ly0 = p.ly1 - 2;

    svg_open(f, W, H, "roofline of every op group: achieved TFLOP/s against arithmetic intensity, log-log");
    char b[KVS_FMT_BUF], label[320], dims[200];
    for (double e = p.lx0; e <= p.lx1 + 1e-9; e++) {
        double x = lx(&p, pow(10, e));
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, top, x, p.bottom);
        tick_label(b, pow(10, e));
        put_svg_text(f, x, p.bottom + 14, "middle", "tick", b);
    }
    for (double e = p.ly0; e <= p.ly1 + 1e-9; e++) {
        double y = ly(&p, pow(10, e));
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, y,
                left + p.w, y);
        tick_label(b, pow(10, e));
        put_svg_text(f, left - 6, y + 4, "end", "tick", b);
    }
    put_svg_text(f, left + p.w / 2, p.bottom + 34, "middle", "axis",
                 "arithmetic intensity (FLOP per byte read + written, log scale)");
    fprintf(f, "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" class=\"axis\" transform=\"rotate(-90 16 %.1f)\">"
               "achieved TFLOP/s (log scale)</text>\n",
            top + plot_h / 2, top + plot_h / 2);
    double lgx = left + p.w + 14, lgy = top + 10;
    if (gbps > 0 && bf > 0) {
        roof_lines(f, &p, gbps, bf, "peak");
        snprintf(label, sizeof label, "BF16 roof: %g TFLOP/s", bf);
        put_svg_text(f, lgx, lgy, "start", "peaklbl", label);
        snprintf(label, sizeof label, "memory roof: %.0f GB/s", gbps);
        put_svg_text(f, lgx, lgy + 16, "start", "peaklbl", label);
        lgy += 32;
    }
    if (gbps > 0 && f8 > 0 && any_fp8) {
        roof_lines(f, &p, gbps, f8, "copy");
        snprintf(label, sizeof label, "FP8 roof: %g TFLOP/s", f8);
        put_svg_text(f, lgx, lgy, "start", "copylbl", label);
        lgy += 16;
    }
    if (!(gbps > 0 && bf > 0))
        put_svg_text(f, lgx, lgy, "start", "lbl", "roofs unknown for this device"), lgy += 16;
    put_svg_text(f, lgx, lgy + 8, "start", "val", "circle area: GPU time");
    fprintf(f, "<circle class=\"pt-matmul\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"/>\n", lgx + 5, lgy + 24);
    put_svg_text(f, lgx + 14, lgy + 28, "start", "val", "matmul");
    fprintf(f, "<circle class=\"pt-attention\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"/>\n", lgx + 5, lgy + 40);
    put_svg_text(f, lgx + 14, lgy + 44, "start", "val", "attention");

    size_t labelled = 0;
    for (size_t i = 0; i < n; i++) { /* largest first: small circles end up on top */
        const struct kvs_op_roofline *o = &a->ops[i];
        if (!op_plotted(o))
            continue;
        double cx = lx(&p, o->intensity), cy = ly(&p, fmax(o->achieved_tflops, pow(10, p.ly0)));
        double r = 3 + 11 * sqrt(top_ms > 0 ? fin(o->gpu_ms) / top_ms : 0);
        struct kvs_group shape = {0};
        shape.ntensors = o->ntensors;
        shape.tensor_dims = o->tensor_dims;
        fprintf(f, "<g><title>");
        kvs_put_html(f, o->op);
        fputs(" ", f);
        kvs_put_html(f, kvs_dims_json(dims, sizeof dims, &shape));
        fprintf(f, ": %.3g TFLOP/s at %.3g FLOP/B, %s GPU ms/step, %s-bound", o->achieved_tflops,
                o->intensity, kvs_fmt_ms(b, o->gpu_ms_per_step), o->bound ? o->bound : "unknown");
        fprintf(f, "</title><circle class=\"pt-%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/></g>\n",
                o->family && !strcmp(o->family, "attention") ? "attention" : "matmul", cx, cy, r);
        if (labelled < max_labels) {
            char op[40];
            kvs_short_op(op, sizeof op, o->op, 24);
            put_svg_text(f, cx + r + 3, cy + 4, "start", "val", op);
            labelled++;
        }
    }
    if (!shown)
        put_svg_text(f, left + p.w / 2, top + plot_h / 2, "middle", "lbl",
                     "no op group with both bytes and FLOPs known");
    fputs("</svg>\n", f);
}
