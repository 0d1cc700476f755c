/* access.c — attngeom/access.h, first half: errors, behind pointers the
 * library allocates (why: the header). The matrices of `attngeom matrix`
 * are in matrix.c. */
#include <stdlib.h>

#include "access_int.h"
#include "select_int.h"

/* ---- errors and memory -------------------------------------------------- */

ag_error *ag_error_new(void)
{
    return calloc(1, sizeof(ag_error));
}

void ag_error_free(ag_error *err)
{
    free(err);
}

int ag_error_status(const ag_error *err)
{
    return err ? err->status : AG_EINVAL;
}

const char *ag_error_message(const ag_error *err)
{
    return err ? err->message : "";
}

void ag_free(void *p)
{
    free(p);
}
