/* tests/fuzz/replay_main.c — runs a fuzz harness once over files, without
 * libFuzzer: the unit tests fuzz_replay_<harness> replay the committed corpus
 * (tests/fuzz/corpus/<harness>/: hand-made edge cases and every finding's
 * regression input) in every build, sanitizers included.
 *
 *   build/tests/fuzz/fuzz_replay_trace tests/fuzz/corpus/trace [FILE|DIR...]
 *
 * Exit 0 when every input ran (a broken property aborts), 99 when an input
 * cannot be read or a directory holds nothing.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "out of memory reading %s\n", path);
        return -1;
    }
    /* an exact-size copy, so that ASan sees reads past the input's end */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    fprintf(stderr, "%s\n", path); /* the last name printed is the input that failed */
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every regular file in dir, in name order; the number run, or -1 */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "cannot open directory %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *nn);
            if (!nn)
                break;
            names = nn;
        }
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!names[n])
            break;
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    long ran = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(names[i]) < 0)
                ran = -1;
            else if (ran >= 0)
                ran++;
        }
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long ran;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            ran = run_dir(argv[i]);
            if (ran == 0) {
                fprintf(stderr, "%s holds no inputs\n", argv[i]);
                return 99;
            }
        } else {
            ran = run_file(argv[i]) < 0 ? -1 : 1;
        }
        if (ran < 0)
            return 99;
        total += ran;
    }
    printf("%ld inputs ran without a finding\n", total);
    return 0;
}
