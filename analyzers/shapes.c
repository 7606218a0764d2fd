/* shapes.c — parse an op's recorded dims/types into tensors (see shapes.h).
 * A tiny parser for the two small arrays; not a general JSON parser.
 * Private to analyzers/. */
#include "shapes.h"

#include <string.h>

#include "dtypes.h"

#define MAX_ENTRIES 64

struct cur {
    const char *p, *end;
};

static void ws(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

/* Skip one bracketed entry; returns false at malformed text. */
static bool skip_entry(struct cur *c)
{
    int depth = 0;
    while (c->p < c->end) {
        char ch = *c->p;
        if (ch == '"') {
            c->p++;
            while (c->p < c->end && *c->p != '"')
                c->p += (*c->p == '\\') ? 2 : 1;
        } else if (ch == '[' || ch == '{') {
            depth++;
        } else if (ch == ']' || ch == '}') {
            if (depth == 0)
                return true; /* the enclosing array's end: not ours */
            depth--;
            if (depth == 0) {
                c->p++;
                return true;
            }
        } else if (ch == ',' && depth == 0) {
            return true;
        }
        c->p++;
    }
    return false;
}

/* One dims entry: a flat list of integers -> rank/dims (returns rank), or
 * -1 for anything else (nested lists, null, ...), which is skipped. */
static int dims_entry(struct cur *c, int64_t *dims, int64_t *numel_out, bool *overflow)
{
    ws(c);
    const char *start = c->p;
    if (c->p >= c->end || *c->p != '[') {
        skip_entry(c);
        return -1;
    }
    c->p++;
    int rank = 0;
    __int128 numel = 1;
    *overflow = false;
    ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        *numel_out = 1;
        return 0;
    }
    for (;;) {
        ws(c);
        bool neg = false;
        if (c->p < c->end && *c->p == '-') {
            neg = true;
            c->p++;
        }
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
            c->p = start;
            skip_entry(c);
            return -1;
        }
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v < (INT64_MAX - 9) / 10)
                v = v * 10 + (*c->p - '0');
            else
                *overflow = true;
            c->p++;
        }
        if (neg)
            v = -v;
        if (rank < KVS_SHAPE_MAX_RANK)
            dims[rank] = v;
        rank++;
        if (v < 0)
            *overflow = true;
        else {
            numel *= v;
            if (numel > ((__int128)1 << 62))
                *overflow = true, numel = 0;
        }
        ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            break;
        }
        c->p = start;
        skip_entry(c);
        return -1;
    }
    *numel_out = (int64_t)numel;
    return rank;
}

void kvs_shape_parse(const char *key, size_t len, struct kvs_shape *out)
{
    memset(out, 0, sizeof *out);
    const char *sep = memchr(key, '\x1f', len);
    if (!sep)
        return;
    struct cur d = {key, sep}, t = {sep + 1, key + len};

    /* types first: an array of strings */
    const char *tname[MAX_ENTRIES];
    size_t tlen[MAX_ENTRIES];
    int nt = 0;
    ws(&t);
    /* no types recorded at all (Input Dims alone, or an Nsight Systems
     * emit_nvtx range): every flat list is a tensor of unknown dtype */
    bool untyped = t.p == t.end;
    if (t.p < t.end && *t.p == '[') {
        t.p++;
        for (;;) {
            ws(&t);
            if (t.p >= t.end || *t.p == ']')
                break;
            const char *s0 = NULL;
            size_t sl = 0;
            if (*t.p == '"') {
                t.p++;
                s0 = t.p;
                while (t.p < t.end && *t.p != '"')
                    t.p += (*t.p == '\\') ? 2 : 1;
                if (t.p > t.end)
                    t.p = t.end;
                sl = (size_t)(t.p - s0);
                if (t.p < t.end)
                    t.p++;
            } else if (!skip_entry(&t)) {
                break;
            }
            if (nt < MAX_ENTRIES) {
                tname[nt] = s0;
                tlen[nt] = sl;
                nt++;
            }
            ws(&t);
            if (t.p < t.end && *t.p == ',')
                t.p++;
            else
                break;
        }
    }

    /* dims: an array of entries, paired with the types by position */
    ws(&d);
    if (d.p >= d.end || *d.p != '[')
        return;
    d.p++;
    for (int i = 0;; i++) {
        ws(&d);
        if (d.p >= d.end || *d.p == ']')
            break;
        int64_t dims[KVS_SHAPE_MAX_RANK];
        int64_t numel = 0;
        bool overflow = false;
        int rank = dims_entry(&d, dims, &numel, &overflow);
        int bits = (i < nt && tname[i]) ? kvs_dtype_bits(tname[i], tlen[i]) : 0;
        if (rank >= 0 && (bits > 0 || untyped)) {
            if (out->n == KVS_SHAPE_MAX_TENSORS) {
                out->more = true;
            } else {
                int k = out->n++;
                out->rank[k] = rank;
                memcpy(out->dims[k], dims,
                       sizeof(int64_t) * (size_t)(rank < KVS_SHAPE_MAX_RANK ? rank : KVS_SHAPE_MAX_RANK));
                out->bits[k] = bits;
                /* a tensor past 2^56 bytes (64 PiB) is not real: unknown, so that
                 * the sums over a group's tensors stay far inside int64 */
                __int128 nbytes = ((__int128)numel * bits + 7) / 8;
                if (nbytes > ((__int128)1 << 56))
                    overflow = true;
                out->numel[k] = overflow ? -1 : numel;
                /* an untyped tensor's bytes are unknown, its dtype "" (a
                 * valid pointer: the end of the key) */
                out->bytes[k] = overflow || !bits ? -1 : (int64_t)nbytes;
                out->dtype[k] = bits ? tname[i] : t.end;
                out->dtype_len[k] = bits ? tlen[i] : 0;
            }
        }
        ws(&d);
        if (d.p < d.end && *d.p == ',')
            d.p++;
        else
            break;
    }
}
