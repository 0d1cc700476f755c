/* test_errors.c — the heap errors of attngeom/access.h (base/errors.c): a
 * new one is AG_OK with an empty message, it reads back what ag_error_set
 * recorded, and NULL is answered (AG_EINVAL, "") rather than dereferenced,
 * as a binding may pass it. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "attngeom.h"

Test(errors, heap_error_reads_back)
{
    ag_error *err = ag_error_new();
    cr_assert_not_null(err);
    cr_assert_eq(ag_error_status(err), AG_OK);
    cr_assert_str_empty(ag_error_message(err));
    cr_assert_eq(ag_error_set(err, AG_ERANGE, "layer %d of %d", 7, 4), AG_ERANGE);
    cr_assert_eq(ag_error_status(err), AG_ERANGE);
    cr_assert_str_eq(ag_error_message(err), "layer 7 of 4");
    ag_error_free(err);
    ag_error_free(NULL);
}

Test(errors, null_answered)
{
    cr_assert_eq(ag_error_status(NULL), AG_EINVAL);
    cr_assert_str_empty(ag_error_message(NULL));
    ag_free(NULL);
    ag_free(strdup("library memory")); /* released with the library's free */
}
