/* test_table_column.c — ag_table_add_column: a column of one cell in every
 * row, a number kept as it is, a text copied into the table; on a table
 * with rows and on one without. */
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

Test(table_column, every_row_gets_the_cell)
{
    static const char *const keys[] = {"layer", "head"};
    ag_table t = {0};
    ag_error err = {0};
    cr_assert_eq(ag_table_init(&t, keys, 2, &err), AG_OK);
    for (int r = 0; r < 3; r++) {
        ag_cell *row = ag_table_add_row(&t, &err);
        cr_assert_not_null(row);
        row[0] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r};
        row[1] = (ag_cell){.kind = AG_CELL_NUMBER, .value = 0.5 * r};
    }
    char text[] = "tiny";
    cr_assert_eq(ag_table_add_column(&t, "seed", (ag_cell){.kind = AG_CELL_INTEGER, .value = 7},
                                     &err), AG_OK);
    cr_assert_eq(ag_table_add_column(&t, "model", (ag_cell){.kind = AG_CELL_TEXT, .text = text},
                                     &err), AG_OK);
    text[0] = 'T'; /* the table holds its own copy */
    cr_assert_eq(t.ncol, 4);
    cr_assert_str_eq(t.keys[2], "seed");
    for (size_t r = 0; r < 3; r++) {
        ag_row row = ag_table_row(&t, r);
        cr_assert(row.cells[0].kind == AG_CELL_INTEGER && row.cells[0].value == (double)r);
        cr_assert(row.cells[1].value == 0.5 * (double)r);
        cr_assert(row.cells[2].kind == AG_CELL_INTEGER && row.cells[2].value == 7);
        cr_assert(row.cells[3].kind == AG_CELL_TEXT);
        cr_assert_str_eq(row.cells[3].text, "tiny");
        cr_assert_neq(row.cells[3].text, text);
    }
    ag_table_free(&t);
    /* no rows: the column alone, and rows added later have it (null) */
    ag_table e = {0};
    cr_assert_eq(ag_table_init(&e, keys, 2, &err), AG_OK);
    cr_assert_eq(ag_table_add_column(&e, "length", (ag_cell){.kind = AG_CELL_INTEGER, .value = 3},
                                     &err), AG_OK);
    cr_assert_eq(e.ncol, 3);
    ag_cell *row = ag_table_add_row(&e, &err);
    cr_assert(row && row[2].kind == AG_CELL_NULL);
    ag_table_free(&e);
}
