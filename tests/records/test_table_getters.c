/* test_table_getters.c — a table read through attngeom/access.h's getters
 * (records/table.c): keys and cells by index with their kinds, a text
 * cell's text and a number cell's value only, zeros and NULLs outside the
 * table or for a NULL table, and ag_table_delete of a heap table. */
#include <criterion/criterion.h>

#include <stdlib.h>

#include "attngeom.h"

Test(table_getters, cells_by_index)
{
    ag_table *t = calloc(1, sizeof *t);
    ag_error err = {0};
    const char *keys[] = {"name", "x", "flag"};
    cr_assert_eq(ag_table_init(t, keys, 3, &err), AG_OK, "%s", err.message);
    for (int r = 0; r < 2; r++) {
        ag_cell *row = ag_table_add_row(t, &err);
        cr_assert_not_null(row, "%s", err.message);
        cr_assert_eq(ag_table_set_text(t, &row[0], r ? "b" : "a", &err), AG_OK);
        row[1] = (ag_cell){.kind = r ? AG_CELL_NULL : AG_CELL_NUMBER, .value = 2.5};
        row[2] = (ag_cell){.kind = AG_CELL_BOOL, .value = r};
    }
    cr_assert(ag_table_columns(t) == 3 && ag_table_rows(t) == 2);
    cr_assert_str_eq(ag_table_key(t, 1), "x");
    cr_assert_null(ag_table_key(t, 3));
    double v = -1;
    const char *s = "stale";
    cr_assert_eq(ag_table_cell(t, 1, 0, &v, &s), AG_CELL_TEXT);
    cr_assert(v == 0 && s && s[0] == 'b' && s[1] == '\0', "a text cell: its text, value 0");
    cr_assert_eq(ag_table_cell(t, 0, 1, &v, &s), AG_CELL_NUMBER);
    cr_assert(v == 2.5 && s == NULL);
    cr_assert_eq(ag_table_cell(t, 1, 1, &v, &s), AG_CELL_NULL);
    cr_assert(v == 0 && s == NULL, "a null cell hides the value it holds");
    cr_assert_eq(ag_table_cell(t, 1, 2, &v, NULL), AG_CELL_BOOL);
    cr_assert_eq(v, 1);
    cr_assert_eq(ag_table_cell(t, 2, 0, &v, &s), AG_CELL_NULL);
    cr_assert(v == 0 && s == NULL, "outside the rows");
    ag_table_delete(t);
}

Test(table_getters, null_table)
{
    double v = -1;
    const char *s = "stale";
    cr_assert(ag_table_columns(NULL) == 0 && ag_table_rows(NULL) == 0);
    cr_assert_null(ag_table_key(NULL, 0));
    cr_assert_eq(ag_table_cell(NULL, 0, 0, &v, &s), AG_CELL_NULL);
    cr_assert(v == 0 && s == NULL);
    ag_table_delete(NULL);
}
