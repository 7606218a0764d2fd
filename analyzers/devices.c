/* devices.c — the device table lookup (see devices.h). The table is small
 * JSON parsed with cJSON at each lookup. Private to analyzers/. */
#include "devices.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "data.h"

static void normalize(const char *in, char *out, size_t size)
{
    size_t n = 0;
    for (; *in && n + 1 < size; in++) {
        unsigned char c = (unsigned char)*in;
        if (c == ' ' || c == '-' || c == '_')
            continue;
        out[n++] = (char)toupper(c);
    }
    out[n] = 0;
}

/* key occurs in name, and not as part of a longer number: "T4" is not in
 * "RTX4090", "A10" not in "A100", "L4" not in "L40S" */
static bool contains_key(const char *name, const char *key, size_t len)
{
    for (const char *p = strstr(name, key); p; p = strstr(p + 1, key)) {
        bool digit_before = p > name && isdigit((unsigned char)p[-1]);
        bool digit_after = isdigit((unsigned char)p[len]);
        if (!digit_before && !digit_after)
            return true;
    }
    return false;
}

static cJSON *parse_table(const char *text, size_t len, const char *what, const struct kvs_logger *lg)
{
    cJSON *root = text ? cJSON_ParseWithLength(text, len) : NULL;
    const cJSON *devs = root ? cJSON_GetObjectItemCaseSensitive(root, "devices") : NULL;
    if (!cJSON_IsArray(devs)) {
        kvs_log(lg, KVS_LOG_ERROR, "the device table (%s) is unreadable", what);
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static cJSON *load_table(const struct kvs_logger *lg)
{
    const struct kvs_data_file *f = kvs_data_find("devices");
    return parse_table(f ? f->text : NULL, f ? f->len : 0, "bundled: analyzers/data/devices.json", lg);
}

enum kvs_status kvs_device_lookup(const char *name, const struct kvs_logger *lg,
                                  struct kvs_device_info *out, bool *found)
{
    const struct kvs_data_file *f = kvs_data_find("devices");
    enum kvs_status st = kvs_device_lookup_in(f ? f->text : NULL, f ? f->len : 0,
                                              "bundled: analyzers/data/devices.json", name, lg,
                                              out, found);
    return st == KVS_STATUS_PARSE ? KVS_STATUS_INTERNAL : st; /* the bundled table is ours */
}

enum kvs_status kvs_device_lookup_in(const char *table, size_t table_len, const char *what,
                                     const char *name, const struct kvs_logger *lg,
                                     struct kvs_device_info *out, bool *found)
{
    memset(out, 0, sizeof *out);
    *found = false;
    if (!name || !*name)
        return KVS_STATUS_OK;
    cJSON *root = parse_table(table, table_len, what, lg);
    if (!root)
        return KVS_STATUS_PARSE;
    char query[256];
    normalize(name, query, sizeof query);
    size_t best = 0;
    const cJSON *dev;
    cJSON_ArrayForEach(dev, cJSON_GetObjectItemCaseSensitive(root, "devices"))
    {
        const cJSON *match = cJSON_GetObjectItemCaseSensitive(dev, "match");
        const cJSON *m;
        cJSON_ArrayForEach(m, match)
        {
            if (!cJSON_IsString(m))
                continue;
            char key[128];
            normalize(m->valuestring, key, sizeof key);
            size_t len = strlen(key);
            if (len == 0 || len <= best || !contains_key(query, key, len))
                continue;
            const cJSON *dn = cJSON_GetObjectItemCaseSensitive(dev, "name");
            const cJSON *peak = cJSON_GetObjectItemCaseSensitive(dev, "hbm_gbps");
            const cJSON *per = cJSON_GetObjectItemCaseSensitive(dev, "per_device_gbps");
            const cJSON *copy = cJSON_GetObjectItemCaseSensitive(dev, "measured_copy_gbps");
            const cJSON *bf16 = cJSON_GetObjectItemCaseSensitive(dev, "bf16_tflops");
            const cJSON *fp8 = cJSON_GetObjectItemCaseSensitive(dev, "fp8_tflops");
            /* an entry without a name (or one cJSON cut short at a NUL byte) names nothing */
            if (!cJSON_IsString(dn) || !dn->valuestring[0] || !cJSON_IsNumber(peak))
                continue;
            best = len;
            *found = true;
            snprintf(out->name, sizeof out->name, "%s", dn->valuestring);
            out->peak_gbps = cJSON_IsNumber(per) ? per->valuedouble : peak->valuedouble;
            out->copy_gbps = cJSON_IsNumber(copy) ? copy->valuedouble : 0;
            out->bf16_tflops = cJSON_IsNumber(bf16) && bf16->valuedouble > 0 ? bf16->valuedouble : 0;
            out->fp8_tflops = cJSON_IsNumber(fp8) && fp8->valuedouble > 0 ? fp8->valuedouble : 0;
        }
    }
    cJSON_Delete(root);
    return KVS_STATUS_OK;
}

void kvs_device_names(char *buf, size_t size)
{
    buf[0] = 0;
    cJSON *root = load_table(NULL);
    if (!root)
        return;
    size_t n = 0;
    const cJSON *dev;
    cJSON_ArrayForEach(dev, cJSON_GetObjectItemCaseSensitive(root, "devices"))
    {
        const cJSON *dn = cJSON_GetObjectItemCaseSensitive(dev, "name");
        if (!cJSON_IsString(dn))
            continue;
        const char *s = dn->valuestring;
        if (!strncmp(s, "NVIDIA ", 7))
            s += 7;
        int w = snprintf(buf + n, size - n, "%s%s", n ? ", " : "", s);
        if (w < 0 || (size_t)w >= size - n)
            break;
        n += (size_t)w;
    }
    cJSON_Delete(root);
}
