/* tests/fifo_test_util.h — a FIFO fed by a child process, for the tests that
 * read a config through a pipe (test_hf_config, test_devices,
 * test_engine_config).
 *
 * defines: kvs_test_fifo_start, kvs_test_fifo_done
 */
#ifndef KVSCOPE_FIFO_TEST_UTIL_H
#define KVSCOPE_FIFO_TEST_UTIL_H

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kvs_test.h"

/* Make a FIFO at path and fork a child that writes text into it (in two
 * pieces, as a pipe delivers them) and exits. The child gives up after 10 s
 * when nothing opens the pipe, so a reader that never opens it fails its
 * test instead of hanging it. Returns the child's pid. */
static inline pid_t kvs_test_fifo_start(const char *path, const char *text)
{
    if (mkfifo(path, 0600) != 0)
        KVS_TEST_SETUP_FAILED("mkfifo %s failed", path);
    pid_t pid = fork();
    if (pid < 0)
        KVS_TEST_SETUP_FAILED("fork failed");
    if (pid == 0) {
        alarm(10);
        int fd = open(path, O_WRONLY);
        size_t n = strlen(text), half = n / 2;
        ssize_t a = fd >= 0 ? write(fd, text, half) : -1;
        usleep(20000);
        ssize_t b = fd >= 0 ? write(fd, text + half, n - half) : -1;
        _exit(a == (ssize_t)half && b == (ssize_t)(n - half) ? 0 : 1);
    }
    return pid;
}

/* Reap the writer and remove the FIFO: whether the writer delivered it all. */
static inline bool kvs_test_fifo_done(pid_t pid, const char *path)
{
    int ws = 0;
    bool ok = waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    unlink(path);
    return ok;
}

#endif
