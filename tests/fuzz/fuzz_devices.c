/* tests/fuzz/fuzz_devices.c — libFuzzer harness for the device table
 * (analyzers/devices.c): its JSON layout parsed with cJSON and the name
 * matching (normalisation, longest match wins).
 *
 *   tests/fuzz/run.sh devices 60
 *   build-fuzz/tests/fuzz/fuzz_devices -dict=tests/fuzz/devices.dict CORPUS_DIR
 *
 * Input: a device name, a newline, then a table in the bundled layout. The
 * name is looked up in that table and in the bundled one, and the bundled
 * table's name list is written into a buffer of a size the input picks.
 * Checks: a table that is not one gives PARSE with a message; a match has a
 * name; the bundled table always parses.
 */
#include "devices.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t name_len = nl ? (size_t)(nl - data) : size;
    if (name_len > 4096)
        name_len = 4096;
    char *name = malloc(name_len + 1);
    FUZZ_CHECK(name, "malloc failed");
    memcpy(name, data, name_len);
    name[name_len] = 0;
    const char *table = nl ? (const char *)nl + 1 : "";
    size_t table_len = nl ? size - (size_t)(nl + 1 - data) : 0;

    struct fuzz_log log;
    struct kvs_logger lg = fuzz_logger(&log);
    struct kvs_device_info info;
    bool found;
    enum kvs_status st = kvs_device_lookup_in(table, table_len, "fuzz table", name, &lg, &info, &found);
    FUZZ_CHECK(st == KVS_STATUS_OK || st == KVS_STATUS_PARSE, "status %d", (int)st);
    if (st == KVS_STATUS_PARSE)
        FUZZ_CHECK(log.errors > 0 && !found, "PARSE without a message, or with a match");
    if (found)
        FUZZ_CHECK(info.name[0] || !*name, "a match without a name");
    if (st == KVS_STATUS_OK && !*name)
        FUZZ_CHECK(!found, "an empty name matched");

    st = kvs_device_lookup(name, &lg, &info, &found);
    FUZZ_CHECK(st == KVS_STATUS_OK, "the bundled table: status %d", (int)st);
    if (found)
        FUZZ_CHECK(info.peak_gbps > 0 && info.name[0], "bundled match \"%s\" without a peak", name);

    char list[600];
    size_t cap = 1 + size % sizeof list;
    memset(list, 'x', sizeof list);
    kvs_device_names(list, cap);
    FUZZ_CHECK(memchr(list, 0, cap) != NULL, "the name list is not terminated within %zu bytes", cap);
    free(name);
    return 0;
}
