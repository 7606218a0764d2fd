/* tests/scan_probe.c — the streaming scanner on documents a test writes, for
 * tests/test_scan_property.py (which checks each verdict against Python's
 * json on the same bytes).
 *
 *   scan_probe CASES     # records: "NRUNS LEN\n", NRUNS lines "BUFSIZE MODE MAX\n",
 *                        # then the LEN bytes of the document
 *
 * Each document is "[V, 7]" (whitespace around V allowed). The probe reads
 * '[', then V by MODE — skip (kvs_scan_skip), capture (kvs_scan_capture) or
 * max (kvs_scan_capture_max with MAX) — then ", 7 ]" and the end of input,
 * through a scanner of BUFSIZE bytes (0: 1 MiB) over the bytes in memory,
 * and prints one line a run:
 *
 *   ok=1 status=0 off=0 start=1 len=12 over=0 hash=89abcdef tail=1
 *
 * start/len: where the captured text lies in the document (byte offsets);
 * hash: zlib's CRC-32 of the captured text; tail: ", 7 ]" and the end were read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "scan.h"
#include "source.h"

static unsigned long crc_of(const char *p, size_t n)
{
    unsigned long c = crc32(0L, Z_NULL, 0);
    while (n > 0) { /* crc32 takes a uInt length */
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, (const Bytef *)p, k);
        p += k;
        n -= k;
    }
    return c;
}

static void probe(const char *doc, size_t n, size_t bufsize, const char *mode, size_t max)
{
    struct kvs_source *src;
    struct kvs_scan s;
    struct kvs_logger quiet = {.min_level = KVS_LOG_ERROR + 1};
    if (kvs_source_open_memory(doc, n, "doc", 0, &quiet, &src) != KVS_STATUS_OK ||
        kvs_scan_init(&s, src, &quiet, bufsize ? bufsize : (size_t)1 << 20) != KVS_STATUS_OK) {
        fprintf(stderr, "scan_probe: cannot open the scanner\n");
        exit(99);
    }
    const char *text = NULL;
    size_t len = 0;
    bool over = false, ok, tail = false;
    uint64_t start = 0;
    ok = kvs_scan_expect(&s, '[', "[");
    if (ok) {
        if (kvs_scan_peek(&s) >= 0)
            start = kvs_scan_offset(&s);
        if (!strcmp(mode, "skip"))
            ok = kvs_scan_skip(&s);
        else if (!strcmp(mode, "capture"))
            ok = kvs_scan_capture(&s, &text, &len);
        else
            ok = kvs_scan_capture_max(&s, max, &text, &len, &over);
    }
    /* the text dies at the next scanner call: hash it first */
    unsigned long h = text ? crc_of(text, len) : crc_of("", 0);
    if (ok) {
        struct kvs_number num;
        tail = kvs_scan_expect(&s, ',', ",") && kvs_scan_peek(&s) >= 0 && kvs_scan_number(&s, &num) &&
               num.int_part == 7 && kvs_scan_expect(&s, ']', "]") && kvs_scan_peek(&s) == KVS_SCAN_EOF;
    }
    printf("ok=%d status=%d off=%" PRIu64 " start=%" PRIu64 " len=%zu over=%d hash=%08lx tail=%d\n",
           ok, (int)s.status, s.err_offset, start, len, over, h, tail);
    kvs_scan_free(&s);
    kvs_source_close(src);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: scan_probe CASES\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 99;
    }
    char line[256];
    while (fgets(line, sizeof line, f)) {
        size_t nruns, n;
        if (sscanf(line, "%zu %zu", &nruns, &n) != 2 || nruns == 0 || nruns > 64) {
            fprintf(stderr, "scan_probe: bad record header '%s'\n", line);
            return 99;
        }
        size_t bufsize[64], max[64];
        char mode[64][16];
        for (size_t i = 0; i < nruns; i++)
            if (!fgets(line, sizeof line, f) ||
                sscanf(line, "%zu %15s %zu", &bufsize[i], mode[i], &max[i]) != 3) {
                fprintf(stderr, "scan_probe: bad run line '%s'\n", line);
                return 99;
            }
        char *doc = malloc(n ? n : 1);
        if (!doc || fread(doc, 1, n, f) != n) {
            fprintf(stderr, "scan_probe: short record\n");
            return 99;
        }
        for (size_t i = 0; i < nruns; i++)
            probe(doc, n, bufsize[i], mode[i], max[i]);
        free(doc);
    }
    fclose(f);
    return 0;
}
