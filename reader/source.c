/* source.c — plain, gzip, stdin and in-memory byte sources for the trace scanner.
 * Private to reader/; see source.h. */
#include "source.h"

#include "inflate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct kvs_source {
    int fd;
    bool own_fd;
    /* an in-memory source reads these instead of fd */
    const unsigned char *mem;
    size_t mem_len, mem_pos, mem_chunk;
    const struct kvs_logger *log;
    const char *path;
    uint64_t consumed;  /* raw bytes read from fd */
    /* bytes read while sniffing the magic, handed out before fd is read again */
    unsigned char head[2];
    size_t head_len, head_pos;
    /* gzip: decoded on its own thread (inflate.h), which then makes every
     * raw read of this source */
    struct kvs_inflate *gz;
};

static enum kvs_status raw_read(struct kvs_source *s, void *buf, size_t cap, size_t *got)
{
    unsigned char *b = buf;
    size_t n = 0;
    if (s->mem) {
        n = s->mem_len - s->mem_pos;
        if (n > cap)
            n = cap;
        if (n > s->mem_chunk)
            n = s->mem_chunk;
        if (n)
            memcpy(b, s->mem + s->mem_pos, n);
        s->mem_pos += n;
        s->consumed += n;
        *got = n;
        return KVS_STATUS_OK;
    }
    while (s->head_pos < s->head_len && n < cap)
        b[n++] = s->head[s->head_pos++];
    while (n < cap) {
        ssize_t r = read(s->fd, b + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            kvs_log(s->log, KVS_LOG_ERROR, "%s: read failed: %s", s->path, strerror(errno));
            return KVS_STATUS_IO;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        s->consumed += (uint64_t)r;
        if (n >= 65536) /* enough for one call; avoid blocking on a pipe for more */
            break;
    }
    *got = n;
    return KVS_STATUS_OK;
}

static enum kvs_status raw_read_fn(void *user, void *buf, size_t cap, size_t *got)
{
    return raw_read(user, buf, cap, got);
}

static enum kvs_status start_gzip(struct kvs_source *s)
{
    enum kvs_status st = kvs_inflate_open(raw_read_fn, s, s->path, s->log, &s->gz);
    return st;
}

enum kvs_status kvs_source_open(const char *path, const struct kvs_logger *lg,
                                struct kvs_source **out, uint64_t *total_bytes)
{
    *out = NULL;
    if (total_bytes)
        *total_bytes = 0;
    struct kvs_source *s = calloc(1, sizeof *s);
    if (!s)
        return KVS_STATUS_NO_MEMORY;
    s->log = lg;
    s->path = path;
    if (!strcmp(path, "-")) {
        s->fd = STDIN_FILENO;
        s->path = "stdin";
    } else {
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0) {
            int e = errno;
            kvs_log(lg, KVS_LOG_ERROR, "%s: cannot open: %s", path, strerror(e));
            free(s);
            return e == ENOENT ? KVS_STATUS_NOT_FOUND : KVS_STATUS_IO;
        }
        s->own_fd = true;
        struct stat st;
        if (fstat(s->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            kvs_log(lg, KVS_LOG_ERROR, "%s: is a directory, not a trace file", path);
            close(s->fd);
            free(s);
            return KVS_STATUS_IO;
        }
        if (total_bytes && fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode))
            *total_bytes = (uint64_t)st.st_size;
#ifdef POSIX_FADV_SEQUENTIAL
        (void)posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    }
    /* sniff the gzip magic (1f 8b) */
    size_t got = 0;
    while (got < 2) {
        ssize_t r = read(s->fd, s->head + got, 2 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            kvs_log(lg, KVS_LOG_ERROR, "%s: read failed: %s", s->path, strerror(errno));
            kvs_source_close(s);
            return KVS_STATUS_IO;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    s->head_len = got;
    s->consumed = got;
    if (got == 2 && s->head[0] == 0x1f && s->head[1] == 0x8b) {
        enum kvs_status st = start_gzip(s);
        if (st != KVS_STATUS_OK) {
            kvs_source_close(s);
            return st;
        }
    }
    *out = s;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_source_open_memory(const void *data, size_t len, const char *name,
                                       size_t chunk, const struct kvs_logger *lg,
                                       struct kvs_source **out)
{
    *out = NULL;
    struct kvs_source *s = calloc(1, sizeof *s);
    if (!s)
        return KVS_STATUS_NO_MEMORY;
    s->fd = -1;
    s->log = lg;
    s->path = name ? name : "(memory)";
    /* a non-NULL pointer marks the source as in-memory, even when empty */
    s->mem = len ? data : (const unsigned char *)"";
    s->mem_len = len;
    s->mem_chunk = chunk ? chunk : 65536;
    if (len >= 2 && s->mem[0] == 0x1f && s->mem[1] == 0x8b) {
        enum kvs_status st = start_gzip(s);
        if (st != KVS_STATUS_OK) {
            kvs_source_close(s);
            return st;
        }
    }
    *out = s;
    return KVS_STATUS_OK;
}

enum kvs_status kvs_source_read(struct kvs_source *s, char *buf, size_t cap, size_t *got)
{
    if (s->gz)
        return kvs_inflate_read(s->gz, buf, cap, got);
    return raw_read(s, buf, cap, got);
}

uint64_t kvs_source_consumed(const struct kvs_source *s)
{
    if (s->gz) /* the decoder thread reads ahead: what the bytes handed out took */
        return kvs_inflate_consumed(s->gz);
    return s->consumed;
}

bool kvs_source_gzip_cut(const struct kvs_source *s)
{
    return s->gz && kvs_inflate_cut(s->gz);
}

void kvs_source_close(struct kvs_source *s)
{
    if (!s)
        return;
    kvs_inflate_close(s->gz); /* first: its thread may be reading the fd */
    if (s->own_fd)
        close(s->fd);
    free(s);
}
