/* reports/pending.c — formats not written yet. Each answers
 * KVS_STATUS_UNSUPPORTED (and says so) until its renderer lands; this file
 * shrinks as they do and goes away with the last one.
 */
#include "report_impl.h"

static enum kvs_status pending(const struct kvs_render_options *opt, const char *what)
{
    kvs_log(&opt->log, KVS_LOG_ERROR, "%s is not written yet in this build", what);
    return KVS_STATUS_UNSUPPORTED;
}

enum kvs_status kvs_render_json_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt)
{
    (void)out, (void)c;
    return pending(opt, "compare");
}

enum kvs_status kvs_render_text_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt)
{
    (void)out, (void)c;
    return pending(opt, "compare");
}

enum kvs_status kvs_render_md_compare(FILE *out, const struct kvs_comparison *c,
                                      const struct kvs_render_options *opt)
{
    (void)out, (void)c;
    return pending(opt, "compare");
}

enum kvs_status kvs_render_html_compare(FILE *out, const struct kvs_comparison *c,
                                        const struct kvs_render_options *opt)
{
    (void)out, (void)c;
    return pending(opt, "compare");
}

enum kvs_status kvs_compare(const struct kvs_analysis *before, const struct kvs_analysis *after,
                            int batch, struct kvs_comparison **out)
{
    (void)before, (void)after, (void)batch;
    if (out)
        *out = NULL;
    return KVS_STATUS_UNSUPPORTED;
}

void kvs_comparison_free(struct kvs_comparison *c)
{
    (void)c;
}
