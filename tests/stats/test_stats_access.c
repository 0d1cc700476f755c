/* test_stats_access.c — attngeom/access.h's corpus statistics
 * (stats/access.c): --by and --metrics lists split at commas (an empty
 * item refused with the option's name), cells from plain arrays checked
 * before anything is added, and the default names "a" and "b" of the
 * compared inputs in messages. */
#include <criterion/criterion.h>

#include <math.h>

#include "attngeom.h"

static const char *keys[] = {"model", "layer", "x"};
static const int kinds[] = {AG_CELL_TEXT, AG_CELL_INTEGER, AG_CELL_NUMBER};

/* Records (model m, layer l % 2, x = l) for l = 0 .. n-1. */
static void add_records(ag_aggregate *a, const char *m, int n)
{
    ag_error err = {0};
    const char *texts[] = {m, NULL, NULL};
    for (int l = 0; l < n; l++) {
        double values[] = {0, l % 2, l};
        cr_assert_eq(ag_aggregate_add_cells(a, 3, keys, kinds, values, texts, &err), AG_OK,
                     "%s", err.message);
    }
}

Test(stats_access, by_list_groups)
{
    ag_aggregate *a = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_create("model,layer", 0.95, 0, &a, &err), AG_OK, "%s", err.message);
    add_records(a, "m", 4);
    ag_table *t = NULL;
    cr_assert_eq(ag_aggregate_result(a, &t, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_table_rows(t), 2, "layers 0 and 1 of model m");
    cr_assert_str_eq(ag_table_key(t, 0), "model");
    cr_assert_str_eq(ag_table_key(t, 1), "layer");
    double v;
    const char *s;
    cr_assert_eq(ag_table_cell(t, 1, 0, &v, &s), AG_CELL_TEXT);
    cr_assert_str_eq(s, "m");
    cr_assert_eq(ag_table_cell(t, 1, 1, &v, NULL), AG_CELL_INTEGER);
    cr_assert_eq(v, 1);
    ag_table_delete(t);
    ag_aggregate_free(a);
    a = (ag_aggregate *)&err; /* must be reset */
    cr_assert_eq(ag_aggregate_create("model,", 0.95, 0, &a, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "--by 'model,': an empty key");
    cr_assert_null(a);
}

Test(stats_access, cells_checked)
{
    ag_aggregate *a = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_create("", 0.95, 0, &a, &err), AG_OK, "%s", err.message);
    double values[] = {0, 1, 2};
    cr_assert_eq(ag_aggregate_add_cells(a, 3, keys, kinds, values, NULL, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "key 'model': text cell without text");
    int bad[] = {AG_CELL_TEXT, 99, AG_CELL_NUMBER};
    const char *texts[] = {"m", NULL, NULL};
    cr_assert_eq(ag_aggregate_add_cells(a, 3, keys, bad, values, texts, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "key 'layer': cell kind 99");
    cr_assert_eq(ag_aggregate_records(a), 0, "a refused record adds nothing");
    ag_aggregate_free(a);
}

Test(stats_access, compare_names_and_metrics)
{
    ag_aggregate *a = NULL, *b = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_create("model", 0.95, 0, &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_aggregate_create("model", 0.95, 0, &b, &err), AG_OK, "%s", err.message);
    add_records(a, "m", 3);
    add_records(b, "m", 5);
    ag_table *t = (ag_table *)&err; /* must be reset */
    cr_assert_eq(ag_compare_result(a, b, "x,,layer", 0.95, 0, 1, NULL, NULL, &t, &err),
                 AG_EINVAL);
    cr_assert_str_eq(err.message, "--metrics 'x,,layer': an empty key");
    cr_assert_null(t);
    cr_assert_eq(ag_compare_result(a, b, "y", 0.95, 0, 1, NULL, NULL, &t, &err), AG_ENOTFOUND);
    cr_assert_str_eq(err.message, "a: 'y' is not a numeric key of its records");
    cr_assert_eq(ag_compare_result(a, b, "x", 0.95, 0, 1, "old", "new", &t, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(ag_table_rows(t), 1, "one group, one metric");
    /* x = 0, 1, 2 against 0 .. 4: variances 1 and 2.5, so Welch's
     * t = -1 / sqrt(1/3 + 1/2) = -sqrt(6/5) and df = (5/6)^2 / (1/18 + 1/16) = 100/17 */
    /* records without text: each its own unit ("record") */
    const char *want[] = {"model", "metric", "unit", "n_a", "n_b", "n_units", "mean_a", "mean_b",
                          "diff"};
    const double value[] = {0, 0, 0, 3, 5, 8, 1, 2, -1};
    for (size_t c = 0; c < sizeof want / sizeof *want; c++) {
        double v;
        cr_assert_str_eq(ag_table_key(t, c), want[c]);
        ag_table_cell(t, 0, c, &v, NULL);
        cr_assert_eq(v, value[c], "%s = %.17g", want[c], v);
    }
    const char *metric;
    cr_assert_eq(ag_table_cell(t, 0, 1, NULL, &metric), AG_CELL_TEXT);
    cr_assert_str_eq(metric, "x");
    double t_stat, df;
    cr_assert_str_eq(ag_table_key(t, 11), "t");
    ag_table_cell(t, 0, 11, &t_stat, NULL);
    ag_table_cell(t, 0, 12, &df, NULL);
    cr_assert(fabs(t_stat + sqrt(6.0 / 5)) < 1e-15 && fabs(df - 100.0 / 17) < 1e-13,
              "t = %.17g, df = %.17g", t_stat, df);
    ag_table_delete(t);
    ag_aggregate_free(a);
    ag_aggregate_free(b);
}
