/* data.c — look up a bundled data file by name (see data.h). */
#include "data.h"

#include <string.h>

const struct kvs_data_file *kvs_data_find(const char *name)
{
    for (const struct kvs_data_file *f = kvs_data_files; f->name; f++)
        if (!strcmp(f->name, name))
            return f;
    return NULL;
}
