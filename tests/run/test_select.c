/* test_select.c — attngeom/run.h: the one layer/head selection, from a spec
 * "0,2-3" (the CLI's --layers/--heads, its messages byte for byte) and from
 * an index list (Python's select(), sorted and without repeats). */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "run/select_int.h"

static void assert_indices(const ag_selection *s, const int *want, size_t n)
{
    cr_assert_eq(ag_selection_count(s), n);
    const unsigned char *mask = ag_selection_mask(s);
    size_t on = 0;
    for (int i = 0; i < ag_selection_limit(s); i++)
        on += mask[i];
    cr_assert_eq(on, n);
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(ag_selection_index(s, k), want[k], "index %zu", k);
        cr_assert_eq(ag_selection_indices(s)[k], want[k]);
        cr_assert_eq(mask[want[k]], 1);
    }
    cr_assert_eq(ag_selection_index(s, n), -1);
    cr_assert_eq(ag_selection_last(s), n ? want[n - 1] : -1);
}

Test(select, spec_lists_and_ranges)
{
    ag_selection *s = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_selection_parse("0,2-3", 5, "layers", &s, &err), AG_OK);
    cr_assert_eq(ag_selection_limit(s), 5);
    assert_indices(s, (int[]){0, 2, 3}, 3);
    ag_selection_free(s);
    /* repeats and overlapping ranges, in any order */
    cr_assert_eq(ag_selection_parse("3,1-2,2,0-1,3-3", 4, "heads", &s, &err), AG_OK);
    assert_indices(s, (int[]){0, 1, 2, 3}, 4);
    ag_selection_free(s);
    cr_assert_eq(ag_selection_parse("1", 2, "heads", &s, &err), AG_OK);
    assert_indices(s, (int[]){1}, 1);
    ag_selection_free(s);
    /* NULL: every item */
    cr_assert_eq(ag_selection_parse(NULL, 3, "layers", &s, &err), AG_OK);
    assert_indices(s, (int[]){0, 1, 2}, 3);
    ag_selection_free(s);
    ag_selection_free(NULL);
}

Test(select, spec_errors)
{
    static const char *const syntax[] = {"", "x", "1,", ",1", "1-", "3-1", "-1", "1;2",
                                         "1-2-3", "0,,1", "99999999999999999999"};
    ag_selection *s = (ag_selection *)1;
    ag_error err = {0};
    char want[128];
    for (size_t k = 0; k < sizeof syntax / sizeof *syntax; k++) {
        cr_assert_eq(ag_selection_parse(syntax[k], 4, "layers", &s, &err), AG_EINVAL, "%s",
                     syntax[k]);
        cr_assert_null(s);
        snprintf(want, sizeof want, "layers takes a list like 0,2-3, not '%s'", syntax[k]);
        cr_assert_str_eq(err.message, want);
    }
    cr_assert_eq(ag_selection_parse("0,9", 2, "layers", &s, &err), AG_ERANGE);
    cr_assert_null(s);
    cr_assert_str_eq(err.message, "layers 0,9 is out of range: there are 2 layers (0-1)");
    cr_assert_eq(ag_selection_parse("1-4", 4, "heads", &s, &err), AG_ERANGE);
    cr_assert_str_eq(err.message, "heads 1-4 is out of range: there are 4 heads (0-3)");
    /* the first item at fault decides, from the left */
    cr_assert_eq(ag_selection_parse("9,x", 2, "layers", &s, &err), AG_ERANGE);
    cr_assert_eq(ag_selection_parse("x,9", 2, "layers", &s, &err), AG_EINVAL);
}

Test(select, index_lists)
{
    ag_selection *s = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_selection_from_list((int[]){3, 1, 3, 0, 1}, 5, 4, "heads", &s, &err), AG_OK);
    assert_indices(s, (int[]){0, 1, 3}, 3);
    ag_selection_free(s);
    /* NULL: every item; an empty list: none */
    cr_assert_eq(ag_selection_from_list(NULL, 0, 2, "heads", &s, &err), AG_OK);
    assert_indices(s, (int[]){0, 1}, 2);
    ag_selection_free(s);
    int none = 0;
    cr_assert_eq(ag_selection_from_list(&none, 0, 2, "heads", &s, &err), AG_OK);
    assert_indices(s, NULL, 0);
    ag_selection_free(s);
    cr_assert_eq(ag_selection_from_list((int[]){0, 9}, 2, 4, "heads", &s, &err), AG_ERANGE);
    cr_assert_null(s);
    cr_assert_str_eq(err.message, "heads: 9 is outside 0..3");
    cr_assert_eq(ag_selection_from_list((int[]){0, -2}, 2, 4, "layers", &s, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "layers: negative index -2");
}

Test(select, unique_lists_before_the_count)
{
    int *out = NULL;
    size_t n = 7;
    ag_error err = {0};
    cr_assert_eq(agr_select_unique((int[]){5, 2, 5, 0, 2}, 5, "layers", &out, &n, &err), AG_OK);
    cr_assert_eq(n, 3);
    cr_assert(out[0] == 0 && out[1] == 2 && out[2] == 5);
    free(out);
    cr_assert_eq(agr_select_unique(NULL, 0, "layers", &out, &n, &err), AG_OK);
    cr_assert(n == 0 && out == NULL);
    cr_assert_eq(agr_select_unique((int[]){-1}, 1, "heads", &out, &n, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "heads: negative index -1");
}
