/* hf_config.c — read a Hugging Face config.json (kvscope/hf_config.h says
 * how). Config files are small documents: read whole, up to a cap, and
 * parsed with cJSON. Tested by tests/test_hf_config.c
 * (meson test -C build test_hf_config). */
#include "kvscope/hf_config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct kvs_hf_config {
    cJSON *root;
    const cJSON *model; /* root, or its "text_config" */
    char *what;
    struct kvs_logger log;
};

// ----------------------------------------------------------------------------
// lookups

/* The LAST member named key: Python's json keeps the last of duplicates
 * (cJSON's own lookup returns the first). */
static const cJSON *member(const cJSON *obj, const char *key)
{
    const cJSON *last = NULL;
    for (const cJSON *it = obj ? obj->child : NULL; it; it = it->next)
        if (it->string && !strcmp(it->string, key))
            last = it;
    return last;
}

static const char *type_name(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "a number";
}

enum kvs_status kvs_hf_config_count(const struct kvs_hf_config *c, const char *key, int64_t *out)
{
    const cJSON *v = member(c->model, key);
    if (!v || cJSON_IsNull(v))
        return KVS_STATUS_NOT_FOUND;
    if (!cJSON_IsNumber(v)) {
        kvs_log(&c->log, KVS_LOG_ERROR, "%s: \"%s\" is %s, not a whole number from 0 to %d",
                c->what, key, type_name(v), KVS_HF_CONFIG_MAX_COUNT);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    double d = v->valuedouble;
    /* the range test first: converting an out-of-range double is undefined */
    if (!(d >= 0 && d <= KVS_HF_CONFIG_MAX_COUNT) || d != floor(d)) {
        /* whole numbers in full (16777217, not 1.67772e+07) */
        kvs_log(&c->log, KVS_LOG_ERROR, "%s: \"%s\" is %.*g, not a whole number from 0 to %d",
                c->what, key, d == floor(d) && fabs(d) < 1e15 ? 17 : 6, d,
                KVS_HF_CONFIG_MAX_COUNT);
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    *out = (int64_t)d;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_hf_config_number(const struct kvs_hf_config *c, const char *key, double *out)
{
    const cJSON *v = member(c->model, key);
    if (!v || cJSON_IsNull(v))
        return KVS_STATUS_NOT_FOUND;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        kvs_log(&c->log, KVS_LOG_ERROR, "%s: \"%s\" is %s, not a number", c->what, key,
                type_name(v));
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    *out = v->valuedouble;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_hf_config_bool(const struct kvs_hf_config *c, const char *key, bool *out)
{
    const cJSON *v = member(c->model, key);
    if (!v || cJSON_IsNull(v))
        return KVS_STATUS_NOT_FOUND;
    if (!cJSON_IsBool(v)) {
        kvs_log(&c->log, KVS_LOG_ERROR, "%s: \"%s\" is %s, not true or false", c->what, key,
                type_name(v));
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    *out = cJSON_IsTrue(v);
    return KVS_STATUS_OK;
}

enum kvs_status kvs_hf_config_string(const struct kvs_hf_config *c, const char *key,
                                     const char **out)
{
    const cJSON *v = member(c->model, key);
    if (!v || cJSON_IsNull(v))
        return KVS_STATUS_NOT_FOUND;
    if (!cJSON_IsString(v)) {
        kvs_log(&c->log, KVS_LOG_ERROR, "%s: \"%s\" is %s, not a string", c->what, key,
                type_name(v));
        return KVS_STATUS_INVALID_ARGUMENT;
    }
    *out = v->valuestring;
    return KVS_STATUS_OK;
}

const char *kvs_hf_config_name(const struct kvs_hf_config *c)
{
    const cJSON *nm = member(c->root, "_name_or_path");
    if (!cJSON_IsString(nm) || !*nm->valuestring)
        nm = member(c->root, "model_type");
    return cJSON_IsString(nm) && *nm->valuestring ? nm->valuestring : NULL;
}

const char *kvs_hf_config_what(const struct kvs_hf_config *c)
{
    return c->what;
}

void kvs_hf_config_label(const char *path, char *buf, size_t size)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    size_t len = n - b;
    if (len > 5 && !memcmp(path + n - 5, ".json", 5))
        len -= 5;
    if (len == 0) { /* "/" */
        snprintf(buf, size, "%s", path);
        return;
    }
    snprintf(buf, size, "%.*s", (int)len, path + b);
}

// ----------------------------------------------------------------------------
// parse

void kvs_hf_config_free(struct kvs_hf_config *c)
{
    if (!c)
        return;
    cJSON_Delete(c->root);
    free(c->what);
    free(c);
}

/* An upper bound on the values cJSON would make of text: one per comma and
 * per opening bracket outside strings, plus the root. cJSON spends ~80
 * bytes on each, so this bounds the tree before it is built. */
static size_t count_values(const char *text, size_t len)
{
    size_t n = 1;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = false;
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == ',' || ch == '[' || ch == '{') {
            n++;
        }
    }
    return n;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

enum kvs_status kvs_hf_config_parse(const char *text, size_t len, const char *what,
                                    const struct kvs_logger *lg, struct kvs_hf_config **out)
{
    *out = NULL;
    if (!text || !what)
        return KVS_STATUS_INVALID_ARGUMENT;
    if (len > KVS_HF_CONFIG_MAX_BYTES) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: %zu bytes, more than the %u a config.json may have", what,
                len, KVS_HF_CONFIG_MAX_BYTES);
        return KVS_STATUS_LIMIT;
    }
    size_t values = count_values(text, len);
    if (values > KVS_HF_CONFIG_MAX_VALUES) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: about %zu JSON values, more than the %u a config.json may "
                "have", what, values, KVS_HF_CONFIG_MAX_VALUES);
        return KVS_STATUS_LIMIT;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        kvs_log(lg, KVS_LOG_ERROR, "%s: malformed JSON near byte %zu", what, at);
        return KVS_STATUS_PARSE;
    }
    size_t at = (size_t)(end - text);
    while (at < len && is_space(text[at]))
        at++;
    if (at < len) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: malformed JSON: more after the object, at byte %zu", what,
                at);
        cJSON_Delete(root);
        return KVS_STATUS_PARSE;
    }
    if (!cJSON_IsObject(root)) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: a config.json is a JSON object, not %s", what,
                type_name(root));
        cJSON_Delete(root);
        return KVS_STATUS_PARSE;
    }
    struct kvs_hf_config *c = calloc(1, sizeof *c);
    char *w = strdup(what);
    if (!c || !w) {
        free(c);
        free(w);
        cJSON_Delete(root);
        kvs_log(lg, KVS_LOG_ERROR, "%s: out of memory", what);
        return KVS_STATUS_NO_MEMORY;
    }
    c->root = root;
    c->what = w;
    if (lg)
        c->log = *lg;
    c->model = root;
    const cJSON *layers = member(root, "num_hidden_layers");
    const cJSON *tc = member(root, "text_config");
    if ((!layers || cJSON_IsNull(layers)) && cJSON_IsObject(tc))
        c->model = tc;
    *out = c;
    return KVS_STATUS_OK;
}

// ----------------------------------------------------------------------------
// read

/* All of fd, up to the cap: a pipe has no size to ask for. */
static enum kvs_status read_all(int fd, size_t hint, const char *what, const struct kvs_logger *lg,
                                char **text, size_t *len)
{
    size_t cap = hint < 4096 ? 4096 : hint, n = 0;
    if (cap > (size_t)KVS_HF_CONFIG_MAX_BYTES + 1)
        cap = (size_t)KVS_HF_CONFIG_MAX_BYTES + 1;
    char *buf = malloc(cap);
    if (!buf) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: out of memory", what);
        return KVS_STATUS_NO_MEMORY;
    }
    for (;;) {
        if (n == cap) {
            if (cap > KVS_HF_CONFIG_MAX_BYTES) {
                free(buf);
                kvs_log(lg, KVS_LOG_ERROR, "%s: more than the %u bytes a config.json may have",
                        what, KVS_HF_CONFIG_MAX_BYTES);
                return KVS_STATUS_LIMIT;
            }
            size_t grown = cap * 2 > (size_t)KVS_HF_CONFIG_MAX_BYTES + 1
                               ? (size_t)KVS_HF_CONFIG_MAX_BYTES + 1
                               : cap * 2;
            char *nb = realloc(buf, grown);
            if (!nb) {
                free(buf);
                kvs_log(lg, KVS_LOG_ERROR, "%s: out of memory", what);
                return KVS_STATUS_NO_MEMORY;
            }
            buf = nb;
            cap = grown;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            kvs_log(lg, KVS_LOG_ERROR, "%s: cannot read: %s", what, strerror(e));
            return KVS_STATUS_IO;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    *text = buf;
    *len = n;
    return KVS_STATUS_OK;
}

static enum kvs_status read_path(const char *path, const char *what, const struct kvs_logger *lg,
                                 struct kvs_hf_config **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        kvs_log(lg, KVS_LOG_ERROR, "%s: cannot open: %s", what, strerror(e));
        return e == ENOENT ? KVS_STATUS_NOT_FOUND : KVS_STATUS_IO;
    }
    struct stat st;
    size_t hint = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        if (st.st_size > (off_t)KVS_HF_CONFIG_MAX_BYTES) {
            close(fd);
            kvs_log(lg, KVS_LOG_ERROR, "%s: %lld bytes, more than the %u a config.json may have",
                    what, (long long)st.st_size, KVS_HF_CONFIG_MAX_BYTES);
            return KVS_STATUS_LIMIT;
        }
        hint = (size_t)st.st_size + 1; /* +1: the read that sees the end */
    }
    char *text = NULL;
    size_t len = 0;
    enum kvs_status s = read_all(fd, hint, what, lg, &text, &len);
    close(fd);
    if (s != KVS_STATUS_OK)
        return s;
    s = kvs_hf_config_parse(text, len, what, lg, out);
    free(text);
    return s;
}

enum kvs_status kvs_hf_config_read(const char *path, const struct kvs_logger *lg,
                                   struct kvs_hf_config **out)
{
    *out = NULL;
    if (!path)
        return KVS_STATUS_INVALID_ARGUMENT;
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        kvs_log(lg, KVS_LOG_ERROR, "%s: %s", path, strerror(e));
        return e == ENOENT || e == ENOTDIR ? KVS_STATUS_NOT_FOUND : KVS_STATUS_IO;
    }
    if (!S_ISDIR(st.st_mode))
        return read_path(path, path, lg, out);
    /* a checkpoint folder: its config.json */
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    char *inner = malloc(n + sizeof "/config.json");
    if (!inner) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: out of memory", path);
        return KVS_STATUS_NO_MEMORY;
    }
    snprintf(inner, n + sizeof "/config.json", "%.*s%s", (int)n,
             path, n == 1 && path[0] == '/' ? "config.json" : "/config.json");
    enum kvs_status s;
    if (stat(inner, &st) != 0) {
        kvs_log(lg, KVS_LOG_ERROR, "%s: a folder without a config.json (looked for %s)", path,
                inner);
        s = KVS_STATUS_NOT_FOUND;
    } else {
        kvs_log(lg, KVS_LOG_INFO, "%s is a folder: reading %s", path, inner);
        s = read_path(inner, inner, lg, out);
    }
    free(inner);
    return s;
}
