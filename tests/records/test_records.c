/* test_records.c — records read back (JSON documents, JSONL, CSV, TSV) and
 * written (the mean ± half-width cells, JSONL): the cells each input
 * gives, the line named by each error, the caps, and the round trip
 * through every machine format. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "attngeom.h"

/* What the reader delivered, as text: "key=kind:value;..." per record. */
typedef struct {
    char log[4096];
    size_t len, records;
} collected;

static int collect(const ag_row *row, void *user, ag_error *err)
{
    collected *c = user;
    for (size_t k = 0; k < row->count; k++) {
        const ag_cell *x = &row->cells[k];
        int n;
        if (x->kind == AG_CELL_TEXT)
            n = snprintf(c->log + c->len, sizeof c->log - c->len, "%s=t:%s;", row->keys[k], x->text);
        else
            n = snprintf(c->log + c->len, sizeof c->log - c->len, "%s=%d:%.17g;", row->keys[k],
                         (int)x->kind, x->value);
        c->len = n < 0 || (size_t)n >= sizeof c->log - c->len ? sizeof c->log - 1 : c->len + (size_t)n;
    }
    if (c->len + 1 < sizeof c->log)
        c->len += (size_t)snprintf(c->log + c->len, sizeof c->log - c->len, "\n");
    c->records++;
    (void)err;
    return AG_OK;
}

static collected read_ok(const char *text)
{
    collected c = {0};
    ag_error err = {0};
    int status = ag_records_read_buffer("in", text, strlen(text), collect, &c, &err);
    cr_assert_eq(status, AG_OK, "%s", err.message);
    return c;
}

static void read_fails(const char *text, int status, const char *message)
{
    collected c = {0};
    ag_error err = {0};
    cr_assert_eq(ag_records_read_buffer("in", text, strlen(text), collect, &c, &err), status,
                 "status for %s", text);
    cr_assert_str_eq(err.message, message);
}

/* kinds: 0 null, 1 number, 2 integer, 3 bool, 4 text */
Test(records, json_document)
{
    collected c = read_ok("{\n \"command\": \"x\",\n \"records\": [\n"
                          "  {\"layer\": 0, \"a\": 0.5, \"b\": null, \"c\": true, \"m\": \"g\"},\n"
                          "  {\"layer\": 1, \"a\": 1e-8}\n ]\n}\n");
    cr_assert_eq(c.records, 2);
    cr_assert_str_eq(c.log, "layer=2:0;a=1:0.5;b=0:0;c=3:1;m=t:g;\nlayer=2:1;a=1:1e-08;\n");
}

Test(records, concatenated_documents_and_arrays)
{
    collected c = read_ok("{\"records\": [{\"a\": 1}]}\n{\n \"records\": [{\"a\": 2}]\n}\n"
                          "[{\"a\": 3}, {\"a\": 4}]");
    cr_assert_eq(c.records, 4);
    cr_assert_str_eq(c.log, "a=2:1;\na=2:2;\na=2:3;\na=2:4;\n");
}

Test(records, jsonl)
{
    collected c = read_ok("\xEF\xBB\xBF{\"settings\": {\"command\": \"analyze\"}}\n"
                          "{\"a\": 1.5, \"b\": false}\r\n\n   \n"
                          "{\"settings\": {}}\n{\"a\": -2}");
    cr_assert_eq(c.records, 2, "settings lines and blank lines skipped");
    cr_assert_str_eq(c.log, "a=1:1.5;b=3:0;\na=2:-2;\n");
}

Test(records, csv)
{
    collected c = read_ok("layer,head,a,b,model,t\n"
                          "0,1,0.25,,\"gpt, \"\"2\"\"\",true\n"
                          "\n"
                          "1,2,1e-08,null,\"x\ny\",false\r\n"
                          "3,4,-5,nan,plain,0x10\n");
    cr_assert_eq(c.records, 3);
    cr_assert_str_eq(c.log,
                     "layer=2:0;head=2:1;a=1:0.25;b=0:0;model=t:gpt, \"2\";t=3:1;\n"
                     "layer=2:1;head=2:2;a=1:1e-08;b=0:0;model=t:x\ny;t=3:0;\n"
                     "layer=2:3;head=2:4;a=2:-5;b=t:nan;model=t:plain;t=t:0x10;\n");
}

Test(records, tsv)
{
    collected c = read_ok("layer\thead\ta\n0\t1\t\"q\"\n2\t3\t\n");
    cr_assert_str_eq(c.log, "layer=2:0;head=2:1;a=t:\"q\";\nlayer=2:2;head=2:3;a=0:0;\n",
                     "TSV quotes nothing");
}

Test(records, empty_input)
{
    collected c = read_ok(" \n\n");
    cr_assert_eq(c.records, 0);
    c = read_ok("a,b\n");
    cr_assert_eq(c.records, 0);
}

Test(records, errors_name_the_place)
{
    read_fails("{\"a\": 1}\n{\"a\": [1]}\n", AG_EFORMAT, "in: line 2: key 'a' holds an array, not a value");
    read_fails("{\"a\": 1}\n\n{\"a\": 1,}\n", AG_EFORMAT,
               "in: line 3: string or '}' expected near '}'");
    read_fails("{\"a\": 1}\n7\n", AG_EFORMAT, "in: line 2: '[' or '{' expected near '7'");
    read_fails("{\"a\": 1}\n{\"a\": 1, \"a\": 2}\n", AG_EFORMAT,
               "in: line 2: duplicate object key near '\"a\"'");
    read_fails("{\"records\": [\n{\"a\": 1},\n{\"a\": {}}]}", AG_EFORMAT,
               "in: record 2: key 'a' holds an object, not a value");
    read_fails("[\n{\"a\": 1},\n3]", AG_EFORMAT, "in: record 2: a record is a JSON object, not a value");
    read_fails("a,b\n1,2\n\n3\n", AG_EFORMAT, "in: line 4: 1 cell, the header has 2");
    read_fails("a,a\n1,2\n", AG_EFORMAT, "in: line 1: key 'a' twice in the header");
    read_fails("a,,b\n", AG_EFORMAT, "in: line 1: an empty key");
    read_fails("a,b\n1,\"2\n", AG_EFORMAT, "in: line 2: a quoted cell is not closed");
    read_fails("a,b\n1,\"2\"x\n", AG_EFORMAT, "in: line 2: text after a quoted cell");
    read_fails("a\n1e999\n", AG_EFORMAT, "in: line 2: key 'a': '1e999' is out of range");
}

/* The callback's error is named by the reader. */
static int refuse_second(const ag_row *row, void *user, ag_error *err)
{
    int *seen = user;
    (void)row;
    return ++*seen == 2 ? ag_error_set(err, AG_EFORMAT, "no second record") : AG_OK;
}

Test(records, callback_errors_located)
{
    int seen = 0;
    ag_error err = {0};
    const char *text = "a,b\n1,2\n\n3,4\n";
    cr_assert_eq(ag_records_read_buffer("f.csv", text, strlen(text), refuse_second, &seen, &err),
                 AG_EFORMAT);
    cr_assert_str_eq(err.message, "f.csv: line 4: no second record");
}

Test(records, caps)
{
    /* a header of AG_RECORDS_KEYS_MAX + 1 keys */
    size_t n = AG_RECORDS_KEYS_MAX + 1;
    char *h = malloc(n * 8 + 2), *p = h;
    for (size_t k = 0; k < n; k++)
        p += sprintf(p, "k%zu%s", k, k + 1 < n ? "," : "\n");
    read_fails(h, AG_ELIMIT, "in: line 1: more than 4096 cells");
    free(h);
    /* a key of AG_RECORDS_KEY_MAX + 1 bytes */
    char key[AG_RECORDS_KEY_MAX + 16];
    memset(key, 'k', AG_RECORDS_KEY_MAX + 1);
    strcpy(key + AG_RECORDS_KEY_MAX + 1, "\n1\n");
    read_fails(key, AG_ELIMIT, "in: line 1: a key longer than 256 bytes");
    /* a CSV line over AG_RECORDS_LINE_MAX */
    size_t big = AG_RECORDS_LINE_MAX + 8;
    char *line = malloc(big + 1);
    memcpy(line, "a\n1\n", 4);
    memset(line + 4, '7', big - 4);
    line[big] = '\0';
    read_fails(line, AG_ELIMIT, "in: line 3: longer than 16777216 bytes");
    free(line);
}

/* "{"k0": 0, ..., "kN": N}" of n keys, after `before` (malloc'd). */
static char *wide_object(const char *before, size_t n, const char *after)
{
    char *s = malloc(strlen(before) + n * 16 + strlen(after) + 4), *p = s;
    p += sprintf(p, "%s{", before);
    for (size_t k = 0; k < n; k++)
        p += sprintf(p, "\"k%zu\": %zu%s", k, k, k + 1 < n ? ", " : "");
    sprintf(p, "}%s", after);
    return s;
}

/* A record over the key cap is refused, alone or after another: nothing
 * is stored past the refusal (was a NULL store, then a heap overflow). */
Test(records, more_keys_than_the_cap)
{
    size_t n = AG_RECORDS_KEYS_MAX + 1;
    char *lone = wide_object("", n, "\n"), *second = wide_object("{\"a\": 1}\n", n, "\n");
    char *array = wide_object("[\n{\"a\": 1},\n", n, "]\n");
    read_fails(lone, AG_ELIMIT, "in: line 1: more than 4096 keys in a record");
    read_fails(second, AG_ELIMIT, "in: line 2: more than 4096 keys in a record");
    read_fails(array, AG_ELIMIT, "in: record 2: more than 4096 keys in a record");
    free(lone);
    free(second);
    free(array);
    /* exactly at the cap is a record */
    char *full = wide_object("{\"a\": 1}\n", AG_RECORDS_KEYS_MAX, "\n");
    collected c = read_ok(full);
    cr_assert_eq(c.records, 2);
    free(full);
}

/* A NUL byte inside a CSV cell is refused, not a cell cut short ("ab\0c"
 * was "ab", merged with the group "ab"). */
Test(records, csv_nul_refused)
{
    static const char quoted[] = "model,x\n\"ab\0c\",1\nab,2\n", bare[] = "model\tx\nab\0c\t1\n";
    const char *texts[] = {quoted, bare};
    const size_t lens[] = {sizeof quoted - 1, sizeof bare - 1};
    for (int t = 0; t < 2; t++) {
        collected c = {0};
        ag_error err = {0};
        cr_assert_eq(ag_records_read_buffer("in", texts[t], lens[t], collect, &c, &err), AG_EFORMAT);
        cr_assert_str_eq(err.message, "in: line 2: a NUL byte in a cell");
        cr_assert_eq(c.records, 0);
    }
}

static void *refuse_alloc(size_t n)
{
    (void)n;
    return NULL;
}

/* jansson out of memory is named so (was "in: line 1: " and nothing). */
Test(records, json_out_of_memory_named)
{
    json_set_alloc_funcs(refuse_alloc, free);
    read_fails("{\"a\": 1}\n", AG_ENOMEM, "in: line 1: out of memory");
    read_fails("{\n\"records\": [{\"a\": 1}]}\n", AG_ENOMEM, "in: line 1: out of memory");
    json_set_alloc_funcs(malloc, free);
}

Test(records, file_errors)
{
    ag_error err = {0};
    collected c = {0};
    cr_assert_eq(ag_records_read("/nonexistent/r.json", collect, &c, &err), AG_EIO);
    cr_assert(strstr(err.message, "/nonexistent/r.json"), "%s", err.message);
    cr_assert_eq(ag_records_read("/", collect, &c, &err), AG_EIO);
    cr_assert_str_eq(err.message, "/: is a directory");
}

/* ---- writing --------------------------------------------------------------- */

static char *written(ag_format fmt, const ag_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    cr_assert_eq(ag_table_write(mem, fmt, t, NULL), AG_OK);
    fclose(mem);
    return buf;
}

static void mean_ci_is(double mean, double half, ag_format fmt, const char *want)
{
    static const char *const keys[] = {"K"};
    ag_table t;
    cr_assert_eq(ag_table_init(&t, keys, 1, NULL), AG_OK);
    ag_cell *row = ag_table_add_row(&t, NULL);
    *row = (ag_cell){.kind = AG_CELL_MEAN_CI, .value = mean, .half = half};
    char *out = written(fmt, &t);
    char *last = strrchr(out, '\n');
    *last = '\0';
    last = strrchr(out, '\n');
    const char *cell = last + 1;
    if (fmt == AG_FORMAT_MD) { /* "| cell |" */
        cr_assert(strncmp(cell, "| ", 2) == 0);
        cell += 2;
        out[strlen(out) - 2] = '\0';
    }
    if (fmt == AG_FORMAT_LATEX) { /* "cell \\" before \bottomrule... */
        char *body = strstr(out, "\\midrule\n") + 9;
        *strstr(body, " \\\\") = '\0';
        cell = body;
    }
    if (fmt == AG_FORMAT_TABLE)
        while (*cell == ' ')
            cell++;
    cr_assert_str_eq(cell, want);
    free(out);
    ag_table_free(&t);
}

Test(records, mean_pm_half_width)
{
    mean_ci_is(0.532147, 0.0123456, AG_FORMAT_MD, "0.532 ± 0.012");
    mean_ci_is(0.532147, 0.0123456, AG_FORMAT_LATEX, "$0.532 \\pm 0.012$");
    mean_ci_is(5.4983, 0.9996, AG_FORMAT_TABLE, "5.5 ± 1.0");
    mean_ci_is(1234.4, 56.7, AG_FORMAT_MD, "1234 ± 57");
    mean_ci_is(12345.6, 567, AG_FORMAT_MD, "12350 ± 570");
    mean_ci_is(4.5e-8, 1.234e-8, AG_FORMAT_MD, "(4.5 ± 1.2)e-08");
    mean_ci_is(4.5e-8, 1.234e-8, AG_FORMAT_LATEX, "$(4.5 \\pm 1.2)\\times10^{-8}$");
    mean_ci_is(2.5e7, 3e5, AG_FORMAT_MD, "(2.500 ± 0.030)e+07");
    mean_ci_is(0.75, 0, AG_FORMAT_MD, "0.75 ± 0");
    mean_ci_is(0.75, NAN, AG_FORMAT_LATEX, "0.75");
    mean_ci_is(2.5e-9, NAN, AG_FORMAT_LATEX, "$2.5\\times10^{-9}$");
}

/* A table of every cell kind through each machine format and back. */
Test(records, round_trip)
{
    static const char *const keys[] = {"model", "layer", "x", "ok", "none"};
    ag_table t;
    cr_assert_eq(ag_table_init(&t, keys, 5, NULL), AG_OK);
    for (int r = 0; r < 3; r++) {
        ag_cell *row = ag_table_add_row(&t, NULL);
        cr_assert_eq(ag_table_set_text(&t, &row[0], r ? "a,\"b\"" : "plain", NULL), AG_OK);
        row[1] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r};
        row[2] = (ag_cell){.kind = AG_CELL_NUMBER, .value = 0.1 * r + 1e-17 + 1.0 / 3};
        row[3] = (ag_cell){.kind = AG_CELL_BOOL, .value = r == 1};
    }
    static const ag_format fmts[] = {AG_FORMAT_JSON, AG_FORMAT_JSONL, AG_FORMAT_CSV, AG_FORMAT_TSV};
    collected want = {0};
    for (size_t r = 0; r < t.nrow; r++) {
        ag_row row = ag_table_row(&t, r);
        collect(&row, &want, NULL);
    }
    for (size_t f = 0; f < sizeof fmts / sizeof *fmts; f++) {
        char *out = written(fmts[f], &t);
        collected got = read_ok(out);
        cr_assert_str_eq(got.log, want.log, "format %zu:\n%s", f, out);
        if (fmts[f] == AG_FORMAT_JSONL)
            cr_assert(strncmp(out, "{\"settings\":{\"version\":", 23) == 0, "%s", out);
        free(out);
    }
    ag_table_free(&t);
}

/* A CSV header may hold any byte: keys are escaped as each format needs
 * (found by fuzz_records: a key that is not UTF-8 made the JSON writer
 * fail). */
Test(records, keys_from_any_header)
{
    const char *csv = "\"a,b\",c\xff,d|e\n1,2,3\n";
    ag_table t;
    collected c = read_ok(csv);
    cr_assert_str_eq(c.log, "a,b=2:1;c\xff=2:2;d|e=2:3;\n");
    static const char *const keys[] = {"a,b", "c\xff", "d|e"};
    cr_assert_eq(ag_table_init(&t, keys, 3, NULL), AG_OK);
    ag_cell *row = ag_table_add_row(&t, NULL);
    for (int k = 0; k < 3; k++)
        row[k] = (ag_cell){.kind = AG_CELL_INTEGER, .value = k + 1};
    char *json = written(AG_FORMAT_JSON, &t), *out = written(AG_FORMAT_CSV, &t),
         *md = written(AG_FORMAT_MD, &t);
    cr_assert(strstr(json, "\"c\\\\xff\": 2"), "%s", json);
    cr_assert(strncmp(out, "\"a,b\",c\\xff,d|e\n", 16) == 0, "%s", out);
    cr_assert(strncmp(md, "| a,b | c\\xff | d\\|e |", 22) == 0, "%s", md);
    free(json);
    free(out);
    free(md);
    ag_table_free(&t);
}

/* Integers beyond ±2⁵³ are read as numbers and written as reals (found by
 * fuzz_records: a 120-digit layer cell overflowed the cast to a JSON
 * integer). */
Test(records, huge_integers)
{
    collected c = read_ok("a,b\n99999999999999999999,9007199254740992\n");
    cr_assert_str_eq(c.log, "a=1:1e+20;b=2:9007199254740992;\n");
    static const char *const keys[] = {"a"};
    ag_table t;
    cr_assert_eq(ag_table_init(&t, keys, 1, NULL), AG_OK);
    *ag_table_add_row(&t, NULL) = (ag_cell){.kind = AG_CELL_INTEGER, .value = -1e300};
    char *json = written(AG_FORMAT_JSON, &t);
    cr_assert(strstr(json, "\"a\": -1.0000000000000001e300"), "%s", json);
    free(json);
    ag_table_free(&t);
}
