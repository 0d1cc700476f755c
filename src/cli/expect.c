/* expect.c — --expect GOLDEN.json: compare this run's records with a JSON
 * output saved earlier, key by key, so researchers can pin metrics in CI.
 * Numbers match when |got − expected| ≤ atol + rtol·|expected|; null, booleans
 * and strings must be equal. Only keys present in the golden records are
 * compared; a golden key missing from this run is a mismatch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* A golden file is a few records; a larger one is a mistake. */
#define EXPECT_FILE_MAX ((size_t)256 * 1024 * 1024)

/* A table's rows as JSON objects, through the same writer as --format
 * json. */
static json_t *table_as_json(const ag_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return NULL;
    int status = ag_table_write(mem, AG_FORMAT_JSON, t, NULL);
    fclose(mem);
    json_t *root = status == AG_OK ? json_loadb(buf, len, 0, NULL) : NULL;
    free(buf);
    json_t *arr = root ? json_incref(json_object_get(root, "records")) : NULL;
    json_decref(root);
    return arr;
}

static void value_text(const json_t *v, char *buf, size_t size)
{
    if (!v)
        snprintf(buf, size, "(absent)");
    else if (json_is_null(v))
        snprintf(buf, size, "null");
    else if (json_is_true(v) || json_is_false(v))
        snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
    else if (json_is_number(v))
        snprintf(buf, size, "%.17g", json_number_value(v));
    else if (json_is_string(v))
        snprintf(buf, size, "\"%s\"", json_string_value(v));
    else
        snprintf(buf, size, "(%s)", json_is_object(v) ? "object" : "array");
}

static int values_match(const cli_common *c, const json_t *exp, const json_t *got)
{
    if (!got)
        return 0;
    if (json_is_number(exp) && json_is_number(got)) {
        double e = json_number_value(exp), g = json_number_value(got);
        return fabs(g - e) <= c->atol + c->rtol * fabs(e);
    }
    return json_equal((json_t *)exp, (json_t *)got);
}

static void record_label(const json_t *rec, size_t i, char *buf, size_t size)
{
    const json_t *l = json_object_get(rec, "layer"), *h = json_object_get(rec, "head");
    const json_t *t = json_object_get(rec, "text");
    int n = snprintf(buf, size, "record %zu", i);
    if (json_is_integer(l) && json_is_integer(h) && n > 0 && (size_t)n < size)
        n += snprintf(buf + n, size - n, " (layer %lld, head %lld",
                      (long long)json_integer_value(l), (long long)json_integer_value(h));
    if (json_is_integer(t) && n > 0 && (size_t)n < size)
        n += snprintf(buf + n, size - n, ", text %lld", (long long)json_integer_value(t));
    if (json_is_integer(l) && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - n, ")");
}

static size_t compare_record(const cli_common *c, const json_t *exp,
                             const json_t *got, size_t i)
{
    size_t bad = 0;
    const char *key;
    json_t *ev;
    char label[128], es[64], gs[64];
    record_label(exp, i, label, sizeof label);
    json_object_foreach((json_t *)exp, key, ev) {
        const json_t *gv = json_object_get(got, key);
        if (values_match(c, ev, gv))
            continue;
        value_text(ev, es, sizeof es);
        value_text(gv, gs, sizeof gs);
        cli_note("expect: %s: %s: expected %s, got %s", label, key, es, gs);
        bad++;
    }
    return bad;
}

int cli_expect_table(const cli_common *c, const ag_table *t)
{
    json_error_t jerr;
    ag_error err = {0};
    char *text;
    size_t len;
    if (ag_read_file(c->expect_path, EXPECT_FILE_MAX, &text, &len, &err) != AG_OK)
        return cli_fail_error(&err);
    json_t *golden = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!golden)
        return cli_fail("%s: not a readable JSON file: %s (line %d)",
                        c->expect_path, jerr.text, jerr.line);
    json_t *exp = json_object_get(golden, "records");
    if (!json_is_array(exp)) {
        json_decref(golden);
        return cli_fail("%s: no \"records\" array (expected a file written by --format json)",
                        c->expect_path);
    }
    for (size_t i = 0; i < json_array_size(exp); i++)
        if (!json_is_object(json_array_get(exp, i))) {
            json_decref(golden);
            return cli_fail("%s: record %zu is not an object", c->expect_path, i);
        }
    json_t *got = table_as_json(t);
    if (!got) {
        json_decref(golden);
        return cli_fail("out of memory comparing with %s", c->expect_path);
    }
    size_t bad = 0, n_exp = json_array_size(exp), n_got = json_array_size(got);
    if (n_exp != n_got) {
        cli_note("expect: record count: expected %zu, got %zu", n_exp, n_got);
        bad++;
    }
    for (size_t i = 0; i < n_exp && i < n_got; i++)
        bad += compare_record(c, json_array_get(exp, i), json_array_get(got, i), i);
    if (bad)
        cli_note("expect: %zu mismatch%s against %s (rtol %g, atol %g)", bad,
                bad == 1 ? "" : "es", c->expect_path, c->rtol, c->atol);
    else
        cli_note("expect: %zu records match %s", n_got, c->expect_path);
    json_decref(got);
    json_decref(golden);
    return bad ? EXIT_EXPECT : 0;
}

int cli_expect(const cli_common *c, const ag_record_list *recs)
{
    /* this run's records with their "model", as --format json writes them */
    ag_table t;
    if (cli_records_table(c, recs, &t) != 0)
        return 1;
    int rc = cli_expect_table(c, &t);
    ag_table_free(&t);
    return rc;
}
