/* kvscope/units.h — numbers with units a person reads at a glance, short
 * dtype and dims names, and strings a result owns. One set of functions for
 * the analyzer's sentences (compare's verdict, multi-rank notes) and the
 * renderers' table cells, so a figure reads the same in both.
 *
 * defines: KVS_FMT_BUF, kvs_fmt_bytes, kvs_fmt_bytes2, kvs_fmt_gbps, kvs_fmt_ms, kvs_fmt_pct,
 *          kvs_fmt_count, kvs_fmt_signed_pct, kvs_fmt_dup, kvs_strv_push,
 *          kvs_short_dtype, kvs_short_dims, kvs_dims_json, kvs_short_dtypes,
 *          kvs_finite_or0, kvs_step_kind_name
 *
 * Thread safety: reentrant (callers' buffers, no static storage).
 */
#ifndef KVSCOPE_UNITS_H
#define KVSCOPE_UNITS_H

#include <stdbool.h>
#include <stddef.h>

#include "kvscope/analysis.h"
#include "kvscope/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Each kvs_fmt_* writes into buf (KVS_FMT_BUF bytes) and returns it.
 * Non-finite values print as "-". */
enum { KVS_FMT_BUF = 48 };
KVS_API char *kvs_fmt_bytes(char *buf, double bytes);     /* "856.3 MB", "66.8 GB", "512 B" */
/* "856.31 MB", "147.37 GB", "512 B": two decimals (the main job's summary) */
KVS_API char *kvs_fmt_bytes2(char *buf, double bytes);
KVS_API char *kvs_fmt_gbps(char *buf, double gbps);       /* "985 GB/s", "12.4 GB/s" */
KVS_API char *kvs_fmt_ms(char *buf, double ms);           /* "52.40", "0.861", "120.3" (no unit) */
KVS_API char *kvs_fmt_pct(char *buf, double fraction);    /* "20.5%" */
KVS_API char *kvs_fmt_count(char *buf, double n);         /* "1,234,567"; fractional: "61.0" */
KVS_API char *kvs_fmt_signed_pct(char *buf, double frac); /* "+29.1%", "-64.0%" */

/* Strings a result owns (kvs_compare, kvs_multirank build sentences): when
 * memory runs out they set *oom and carry on (kvs_fmt_dup yields NULL,
 * kvs_strv_push skips NULL), so a builder checks *oom once at the end. */
KVS_API char *kvs_fmt_dup(bool *oom, const char *fmt, ...) KVS_PRINTF(2, 3); /* malloc'ed */
/* Append s (owned: freed when it cannot be kept) to a growing string array. */
KVS_API void kvs_strv_push(bool *oom, char ***arr, size_t *n, char *s);

/* "c10::BFloat16" -> "bf16", "c10::Float8_e4m3fn" -> "fp8_e4m3fn", "float" -> "f32". */
KVS_API const char *kvs_short_dtype(const char *name);
/* The group's dims in a short form: "[131072,1,576] x2" when all tensors
 * share them, else "[a,b] [c]"; "-" without recorded dims. */
KVS_API char *kvs_short_dims(char *buf, size_t size, const struct kvs_group *g);
/* The group's dims as compact JSON text, every tensor in the op's order:
 * "[[131072,1,576],[131072,1,576]]", "[]" without any; cut short (the text
 * ends "...") when it does not fit in size bytes. Returns buf. */
KVS_API char *kvs_dims_json(char *buf, size_t size, const struct kvs_group *g);
/* "bf16, fp8_e4m3fn" in the op's order (for copy_: destination first). */
KVS_API char *kvs_short_dtypes(char *buf, size_t size, const struct kvs_group *g);

/* Finite, else 0: for arithmetic on values a trace may have left undefined. */
static inline double kvs_finite_or0(double v)
{
    return (v == v && v - v == 0) ? v : 0;
}

/* "decode", "prefill", "mixed", "unknown" */
KVS_API const char *kvs_step_kind_name(enum kvs_step_kind kind);

#ifdef __cplusplus
}
#endif

#endif /* KVSCOPE_UNITS_H */
