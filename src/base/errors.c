/* errors.c — attngeom/access.h's errors and memory: an ag_error on the heap
 * with getters, and ag_free, so that a binding declares no struct and never
 * needs the C library's free (why: access.h). Recording an error is
 * ag_error_set's, in core.c. */
#include <stdlib.h>

#include "attngeom.h"

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
