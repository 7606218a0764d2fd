/* tests/fuzz/fuzz_common.h — what the kvscope fuzz harnesses share: a logger
 * that keeps the last error, a check that aborts (so libFuzzer reports it as
 * a crash with the input), and the harness entry point's declaration.
 *
 * defines: FUZZ_CHECK, struct fuzz_log, fuzz_logger, LLVMFuzzerTestOneInput
 *
 * Each harness is built twice: with libFuzzer (-Dfuzz=enabled, clang) and,
 * in every build, with tests/fuzz/replay_main.c as a plain program that runs
 * the committed corpus once (the unit tests fuzz_replay_*).
 */
#ifndef KVSCOPE_FUZZ_COMMON_H
#define KVSCOPE_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the harness checks: print it and abort, which libFuzzer (and
 * the replay program under meson) report with the input that broke it. */
#define FUZZ_CHECK(cond, ...)                                                                     \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fputc('\n', stderr);                                                                  \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

struct fuzz_log {
    char last_error[512];
    int errors, warnings;
};

static inline void fuzz_log_fn(void *user, enum kvs_log_level level, const char *msg)
{
    struct fuzz_log *l = user;
    if (level >= KVS_LOG_ERROR) {
        l->errors++;
        snprintf(l->last_error, sizeof l->last_error, "%s", msg);
    } else if (level == KVS_LOG_WARN) {
        l->warnings++;
    }
    if (getenv("KVS_FUZZ_VERBOSE"))
        fprintf(stderr, "log %d: %s\n", (int)level, msg);
}

/* Warnings and errors only: formatting INFO messages would cost every run. */
static inline struct kvs_logger fuzz_logger(struct fuzz_log *l)
{
    memset(l, 0, sizeof *l);
    struct kvs_logger lg = {fuzz_log_fn, l, KVS_LOG_WARN};
    return lg;
}

#endif
