/* engine/run_facts.c — the "kvscope.engine" object a traced engine run writes
 * into its trace (kvs_engine_run_facts_json, kvscope/engine.h): what ran, the
 * byte model's bytes per step, the copy rate and the median step, so that a
 * reader of the trace alone has the whole-step roofline. Host only; tested
 * by tests/test_engine_plan.c (facts_json). */
#include <math.h>
#include <stdio.h>

#include "kvscope/engine.h"

size_t kvs_engine_run_facts_json(const struct kvs_engine_run_facts *f, char *buf, size_t size)
{
    const struct kvs_step_bytes *b = &f->bytes;
    char copy[32];
    if (f->copy_gbps > 0.0 && isfinite(f->copy_gbps))
        snprintf(copy, sizeof copy, "%.1f", f->copy_gbps);
    else
        snprintf(copy, sizeof copy, "null");
    /* the config name is a bundled name or a file path: keep it JSON-safe */
    char name[256];
    size_t n = 0;
    for (const char *c = f->config ? f->config : ""; *c && n + 7 < sizeof name; c++) {
        unsigned char u = (unsigned char)*c;
        if (u == '"' || u == '\\')
            n += (size_t)snprintf(name + n, sizeof name - n, "\\%c", u);
        else if (u < 0x20)
            n += (size_t)snprintf(name + n, sizeof name - n, "\\u%04x", u);
        else
            name[n++] = (char)u;
    }
    name[n] = '\0';
    int len = snprintf(
        buf, size,
        "{\"schema\": \"kvscope.engine/1\", \"config\": \"%s\", \"kv_path\": \"%s\", "
        "\"batch\": %d, \"context\": %lld, \"kv_capacity\": %lld, \"layers\": %d, \"tp\": %d, "
        "\"graph\": %s, \"steps\": %d, \"bytes_per_step\": %.0f, "
        "\"weight_bytes_per_step\": %.0f, \"kv_bytes_per_step\": %.0f, \"copy_gbps\": %s, "
        "\"step_ms\": %.4f}",
        name, kvs_kv_path_name(f->path), f->batch, (long long)f->context, (long long)f->kv_capacity,
        f->layers, f->tp < 1 ? 1 : f->tp, f->graph ? "true" : "false", f->steps, b->total,
        b->weights, b->kv_attention + b->kv_cast + b->kv_other, copy,
        isfinite(f->step_ms) ? f->step_ms : 0.0);
    return len < 0 ? 0 : (size_t)len;
}
