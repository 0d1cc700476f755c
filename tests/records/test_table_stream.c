/* test_table_stream.c — the table writer in pieces (ag_table_write_parts:
 * what a corpus run streams equals what ag_table_write writes of all its
 * rows), the settings object of JSON and JSONL, and ag_table_add_text_column
 * (the records' "model"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "attngeom.h"

static const char *const keys[] = {"layer", "head", "sigma_max", "causal", "text"};

/* Rows [from, to) of a small table: integers, numbers (one null), booleans. */
static void make_table(ag_table *t, int from, int to)
{
    cr_assert_eq(ag_table_init(t, keys, 5, NULL), AG_OK);
    for (int r = from; r < to; r++) {
        ag_cell *row = ag_table_add_row(t, NULL);
        cr_assert_not_null(row);
        row[0] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r / 4};
        row[1] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r % 4};
        if (r != 3)
            row[2] = (ag_cell){.kind = AG_CELL_NUMBER, .value = 1.0 / (r + 3)};
        row[3] = (ag_cell){.kind = AG_CELL_BOOL, .value = r % 2};
        row[4] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r / 8};
    }
}

typedef struct {
    char *buf;
    size_t len;
    FILE *fp;
} mem;

static void mem_open(mem *m)
{
    m->buf = NULL;
    m->len = 0;
    m->fp = open_memstream(&m->buf, &m->len);
    cr_assert_not_null(m->fp);
}

static char *mem_close(mem *m)
{
    fclose(m->fp);
    return m->buf;
}

static const ag_output_meta meta = {.size = sizeof(ag_output_meta),
                                    .command = "analyze", .source = "models/x",
                                    .settings = "{\"seed\":1,\"texts\":[{\"text\":0,\"tokens\":3}]}"};

Test(table_stream, pieces_equal_the_whole)
{
    ag_table whole, a, b;
    make_table(&whole, 0, 16);
    make_table(&a, 0, 5);
    make_table(&b, 5, 16);
    ag_format fmts[] = {AG_FORMAT_JSONL, AG_FORMAT_CSV, AG_FORMAT_TSV, AG_FORMAT_MD, AG_FORMAT_LATEX};
    for (size_t f = 0; f < sizeof fmts / sizeof *fmts; f++) {
        cr_assert(ag_format_streams(fmts[f]));
        mem one, parts;
        mem_open(&one);
        cr_assert_eq(ag_table_write(one.fp, fmts[f], &whole, &meta), AG_OK);
        mem_open(&parts);
        cr_assert_eq(ag_table_write_parts(parts.fp, fmts[f], &a, &meta, AG_WRITE_HEAD | AG_WRITE_ROWS), AG_OK);
        cr_assert_eq(ag_table_write_parts(parts.fp, fmts[f], &b, &meta, AG_WRITE_ROWS), AG_OK);
        cr_assert_eq(ag_table_write_parts(parts.fp, fmts[f], &b, &meta, AG_WRITE_TAIL), AG_OK);
        char *x = mem_close(&one), *y = mem_close(&parts);
        cr_expect_str_eq(y, x, "format %d", (int)fmts[f]);
        free(x);
        free(y);
    }
    ag_table_free(&whole);
    ag_table_free(&a);
    ag_table_free(&b);
}

Test(table_stream, formats_that_need_every_row)
{
    ag_table t;
    make_table(&t, 0, 3);
    mem m;
    mem_open(&m);
    cr_expect_not(ag_format_streams(AG_FORMAT_TABLE));
    cr_expect_not(ag_format_streams(AG_FORMAT_JSON));
    cr_expect_eq(ag_table_write_parts(m.fp, AG_FORMAT_TABLE, &t, NULL, AG_WRITE_ROWS), AG_EINVAL);
    cr_expect_eq(ag_table_write_parts(m.fp, AG_FORMAT_JSON, &t, NULL, AG_WRITE_HEAD), AG_EINVAL);
    cr_expect_eq(ag_table_write_parts(m.fp, AG_FORMAT_CSV, &t, NULL, 8), AG_EINVAL);
    cr_expect_eq(ag_table_write_parts(m.fp, AG_FORMAT_JSON, &t, NULL, AG_WRITE_ALL), AG_OK);
    free(mem_close(&m));
    ag_table_free(&t);
}

/* The object written as "settings": command, source, version, then the
 * keys of meta.settings. */
static void check_settings(json_t *s)
{
    cr_assert(json_is_object(s));
    const char *want[] = {"command", "source", "version", "seed", "texts"};
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(s, key, v) {
        cr_assert_lt(k, 5);
        cr_expect_str_eq(key, want[k++]);
    }
    cr_expect_eq(k, 5);
    cr_expect_str_eq(json_string_value(json_object_get(s, "command")), "analyze");
    cr_expect_str_eq(json_string_value(json_object_get(s, "version")), AG_VERSION_STRING);
    cr_expect_eq(json_integer_value(json_object_get(s, "seed")), 1);
    json_t *t = json_array_get(json_object_get(s, "texts"), 0);
    cr_expect_eq(json_integer_value(json_object_get(t, "tokens")), 3);
}

Test(table_stream, settings_in_json_and_jsonl)
{
    ag_table t;
    make_table(&t, 0, 2);
    mem m;
    mem_open(&m);
    cr_assert_eq(ag_table_write(m.fp, AG_FORMAT_JSON, &t, &meta), AG_OK);
    char *doc = mem_close(&m);
    json_t *root = json_loads(doc, JSON_PRESERVE_ORDER, NULL);
    cr_assert_not_null(root, "%s", doc);
    const char *top[] = {"command", "source", "version", "settings", "records"};
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) cr_expect_str_eq(key, top[k++]);
    check_settings(json_object_get(root, "settings"));
    cr_expect_eq(json_array_size(json_object_get(root, "records")), 2);
    json_decref(root);
    free(doc);

    mem_open(&m);
    cr_assert_eq(ag_table_write(m.fp, AG_FORMAT_JSONL, &t, &meta), AG_OK);
    doc = mem_close(&m);
    char *nl = strchr(doc, '\n');
    cr_assert_not_null(nl);
    json_t *first = json_loadb(doc, (size_t)(nl - doc), 0, NULL);
    cr_assert_not_null(first);
    cr_expect_eq(json_object_size(first), 1);
    check_settings(json_object_get(first, "settings"));
    json_decref(first);
    free(doc);
    ag_table_free(&t);
}

Test(table_stream, settings_must_be_an_object)
{
    ag_table t;
    make_table(&t, 0, 1);
    const char *bad[] = {"[1, 2]", "{\"a\": ", "3", "{\"a\": 1, \"a\": 2}"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        ag_output_meta m2 = {.size = sizeof(ag_output_meta), .command = "x", .settings = bad[k]};
        mem m;
        mem_open(&m);
        cr_expect_eq(ag_table_write(m.fp, AG_FORMAT_JSON, &t, &m2), AG_EINVAL, "%s", bad[k]);
        cr_expect_eq(ag_table_write(m.fp, AG_FORMAT_JSONL, &t, &m2), AG_EINVAL, "%s", bad[k]);
        free(mem_close(&m));
    }
    ag_table_free(&t);
}

Test(table_stream, add_text_column)
{
    ag_table t;
    make_table(&t, 0, 100); /* past the first allocation of 64 rows */
    cr_assert_eq(ag_table_set_text(&t, &t.cells[7 * 5 + 2], "kept", NULL), AG_OK);
    cr_assert_eq(ag_table_add_text_column(&t, "model", "tiny-gpt2", NULL), AG_OK);
    cr_assert_eq(t.ncol, 6);
    cr_expect_str_eq(t.keys[5], "model");
    for (size_t r = 0; r < t.nrow; r++) {
        ag_row row = ag_table_row(&t, r);
        cr_assert_eq(row.count, 6);
        cr_expect_eq(row.cells[5].kind, AG_CELL_TEXT);
        cr_expect_str_eq(row.cells[5].text, "tiny-gpt2");
        cr_expect_eq(row.cells[1].value, (double)(r % 4));
        cr_expect_eq(row.cells[4].value, (double)(r / 8));
    }
    cr_expect_str_eq(t.cells[7 * 6 + 2].text, "kept");
    /* rows added after the column are whole too */
    ag_cell *row = ag_table_add_row(&t, NULL);
    cr_assert_not_null(row);
    cr_expect_eq(row[5].kind, AG_CELL_NULL);
    ag_table_free(&t);

    ag_table empty;
    cr_assert_eq(ag_table_init(&empty, keys, 2, NULL), AG_OK);
    cr_assert_eq(ag_table_add_text_column(&empty, "model", "m", NULL), AG_OK);
    cr_expect_eq(empty.ncol, 3);
    cr_expect_eq(empty.nrow, 0);
    ag_table_free(&empty);
}
