/* fuzz_records.c — the records reader (ag_records_read_buffer: JSON, JSONL,
 * CSV, TSV) on arbitrary bytes, each record fed to an aggregate (default
 * grouping, the way `attngeom aggregate` does), whose table is then written
 * in every format. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "attngeom.h"

static int add(const ag_row *row, void *user, ag_error *err)
{
    return ag_aggregate_add(user, row, err);
}

static void write_all(const ag_table *t)
{
    FILE *null = fopen("/dev/null", "w");
    if (!null)
        abort();
    for (int f = 0; f < AG_FORMAT_COUNT; f++)
        if (ag_table_write(null, (ag_format)f, t, NULL) != AG_OK)
            abort(); /* a table always writes */
    fclose(null);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ag_aggregate_options opt = {.size = sizeof(ag_aggregate_options),
                                .by_default = 1, .level = 0.95};
    ag_aggregate *a = NULL;
    ag_error err = {0};
    if (ag_aggregate_new(&opt, &a, &err) != AG_OK)
        abort();
    int rc = ag_records_read_buffer("input", (const char *)data, size, add, a, &err);
    if (rc != AG_OK && (err.status != rc || !err.message[0]))
        abort(); /* every failure carries its status and a message */
    for (int human = 0; rc == AG_OK && human < 2; human++) {
        ag_table t;
        ag_error e = {0};
        int st = ag_aggregate_table(a, human, &t, &e);
        if (st == AG_OK)
            write_all(&t);
        else if (e.status != st || !e.message[0])
            abort();
        ag_table_free(&t);
    }
    ag_aggregate_free(a);
    return 0;
}
