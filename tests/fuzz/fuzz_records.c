/* fuzz_records.c — the records reader (ag_records_read_buffer: JSON, JSONL,
 * CSV, TSV) on arbitrary bytes, each record fed to an aggregate (default
 * grouping, the way `attngeom aggregate` does), whose table is then written
 * in every format; and to one grouped --by model, merged into another and
 * compared with it (the paths of `attngeom compare` and of shards). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "attngeom.h"

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

typedef struct {
    ag_aggregate *a, *b; /* default grouping; --by model */
} sinks;

static int add(const ag_row *row, void *user, ag_error *err)
{
    sinks *s = user;
    int status = ag_aggregate_add(s->a, row, err);
    return status == AG_OK ? ag_aggregate_add(s->b, row, err) : status;
}

static void check_failure(int status, const ag_error *e)
{
    if (status != AG_OK && (e->status != status || !e->message[0]))
        abort(); /* every failure carries its status and a message */
}

/* b merged into an empty aggregate grouped alike, compared with b. */
static void merge_and_compare(const ag_aggregate_options *opt, const ag_aggregate *b)
{
    ag_aggregate *c = NULL;
    ag_error e = {0};
    if (ag_aggregate_new(opt, &c, &e) != AG_OK)
        abort();
    int st = ag_aggregate_merge(c, b, &e);
    check_failure(st, &e);
    ag_table t = {0};
    ag_compare_options co = AG_COMPARE_OPTIONS_DEFAULT;
    co.name_a = co.name_b = "input";
    if (st == AG_OK) {
        st = ag_compare_table(c, b, &co, &t, &e);
        check_failure(st, &e);
        if (st == AG_OK)
            write_all(&t);
        ag_table_free(&t);
    }
    ag_aggregate_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const by[] = {"model"};
    ag_aggregate_options opt = {.size = sizeof(ag_aggregate_options),
                                .by_default = 1, .level = 0.95};
    ag_aggregate_options by_model = {.size = sizeof(ag_aggregate_options), .by = by, .nby = 1,
                                     .level = 0.95};
    sinks s = {0};
    ag_error err = {0};
    if (ag_aggregate_new(&opt, &s.a, &err) != AG_OK || ag_aggregate_new(&by_model, &s.b, &err) != AG_OK)
        abort();
    int rc = ag_records_read_buffer("input", (const char *)data, size, add, &s, &err);
    check_failure(rc, &err);
    for (int human = 0; rc == AG_OK && human < 2; human++) {
        ag_table t;
        ag_error e = {0};
        int st = ag_aggregate_table(s.a, human, &t, &e);
        check_failure(st, &e);
        if (st == AG_OK)
            write_all(&t);
        ag_table_free(&t);
    }
    if (rc == AG_OK)
        merge_and_compare(&by_model, s.b);
    ag_aggregate_free(s.a);
    ag_aggregate_free(s.b);
    return 0;
}
