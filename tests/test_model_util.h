/* test_model_util.h — assertions shared by the engine's tests
 * (test_model.c, test_model_archs.c). Include after <criterion/criterion.h>
 * and attngeom/model.h. */
#ifndef ATTNGEOM_TEST_MODEL_UTIL_H
#define ATTNGEOM_TEST_MODEL_UTIL_H

#include <string.h>

/* ag_model_load(dir) fails with `status`, hands out no model, and its
 * message is one line containing `needle`. */
static inline void expect_load_error(const char *dir, int status, const char *needle)
{
    ag_model *m = NULL;
    ag_error err = {0};
    int rc = ag_model_load(dir, &m, &err);
    cr_assert_eq(rc, status, "status %d (%s), expected %d: %s", rc, ag_strerror(rc), status, err.message);
    cr_assert_null(m);
    cr_assert(strstr(err.message, needle), "message lacks \"%s\": %s", needle, err.message);
    cr_assert_null(strchr(err.message, '\n'));
}

#endif
