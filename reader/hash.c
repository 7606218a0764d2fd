/* hash.c — the seed of the seeded tables (see kvscope/reader.h). Private to
 * reader/. */
#include "kvscope/reader.h"

#include <time.h>
#include <unistd.h>

uint64_t kvs_hash_seed(void)
{
    uint64_t s = 0;
    if (getentropy(&s, sizeof s) == 0 && s)
        return s;
    /* no entropy source (an old kernel, a sandbox): the clock and where
     * this process's stack and code were mapped */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&s ^
        ((uint64_t)(uintptr_t)&kvs_hash_seed << 17);
    return kvs_hash_fmix(s) | 1;
}
