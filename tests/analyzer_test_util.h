/* tests/analyzer_test_util.h — helpers shared by the analyzer tests: temp
 * files, a logger that keeps the last message, fixture paths.
 *
 * defines: kvs_tmp_write, kvs_tmp_path, struct kvs_log_capture, kvs_capture_logger,
 *          kvs_fixture_path, kvs_test_finding
 */
#ifndef KVSCOPE_ANALYZER_TEST_UTIL_H
#define KVSCOPE_ANALYZER_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvs_test.h"
#include "kvscope/analysis.h"
#include "kvscope/base.h"

/* A fresh temp file path (the file exists, empty). Caller unlinks. */
static inline void kvs_tmp_path(char *buf, size_t size, const char *suffix)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, size, "%s/kvs_test_XXXXXX%s", dir && *dir ? dir : "/tmp", suffix ? suffix : "");
    int fd = mkstemps(buf, suffix ? (int)strlen(suffix) : 0);
    if (fd < 0)
        KVS_TEST_SETUP_FAILED("mkstemps failed");
    close(fd);
}

/* Write n bytes to a new temp file; returns its path in buf. */
static inline void kvs_tmp_write(char *buf, size_t size, const void *data, size_t n, const char *suffix)
{
    kvs_tmp_path(buf, size, suffix);
    FILE *f = fopen(buf, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0)
        KVS_TEST_SETUP_FAILED("writing %s failed", buf);
}

struct kvs_log_capture {
    char last[1024];      /* the last message at WARN or above */
    char all[8192];       /* every message, newline separated */
    int warnings, errors;
};

static inline void kvs_capture_fn(void *user, enum kvs_log_level level, const char *msg)
{
    struct kvs_log_capture *c = user;
    if (level >= KVS_LOG_WARN)
        snprintf(c->last, sizeof c->last, "%s", msg);
    if (level == KVS_LOG_WARN)
        c->warnings++;
    if (level >= KVS_LOG_ERROR)
        c->errors++;
    size_t n = strlen(c->all);
    snprintf(c->all + n, sizeof c->all - n, "%s\n", msg);
}

static inline struct kvs_logger kvs_capture_logger(struct kvs_log_capture *c)
{
    memset(c, 0, sizeof *c);
    struct kvs_logger lg = {kvs_capture_fn, c, KVS_LOG_DEBUG};
    return lg;
}

/* tests/fixtures/<name> under the source root (KVS_SOURCE_ROOT). */
static inline const char *kvs_fixture_path(char *buf, size_t size, const char *name)
{
    const char *root = getenv("KVS_SOURCE_ROOT");
    if (!root || !*root)
        KVS_TEST_SETUP_FAILED("KVS_SOURCE_ROOT is not set (run through meson test)");
    snprintf(buf, size, "%s/tests/fixtures/%s", root, name);
    return buf;
}

/* The whole file into a malloc'ed buffer. */
static inline char *kvs_read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        KVS_TEST_SETUP_FAILED("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
        KVS_TEST_SETUP_FAILED("cannot read %s", path);
    fclose(f);
    buf[len] = 0;
    *n = (size_t)len;
    return buf;
}

/* The analysis's finding with this id, or NULL. */
static inline const struct kvs_finding *kvs_test_finding(const struct kvs_analysis *a,
                                                         const char *id)
{
    for (size_t i = 0; i < a->nfinding; i++)
        if (!strcmp(a->findings[i].id, id))
            return &a->findings[i];
    return NULL;
}

#endif
