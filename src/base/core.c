/* core.c — the version, status strings, error recording and the dense array type. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sized_int.h"

static const char *const status_text[AG_STATUS_COUNT] = {
    [AG_OK] = "success",
    [AG_EINVAL] = "invalid argument",
    [AG_ENOMEM] = "out of memory",
    [AG_EIO] = "input/output error",
    [AG_EFORMAT] = "malformed file",
    [AG_EDTYPE] = "unsupported dtype",
    [AG_ESHAPE] = "unsupported or inconsistent shape",
    [AG_ENONFINITE] = "non-finite value",
    [AG_ENOTFOUND] = "not found",
    [AG_ELIMIT] = "exceeds a size limit",
    [AG_ELAPACK] = "LAPACK routine failed",
    [AG_ERANGE] = "selection out of range",
    [AG_EUNSUPPORTED] = "unsupported input",
};

const char *ag_version(void)
{
    return AG_VERSION_STRING;
}

const char *ag_strerror(int status)
{
    if (status < 0 || status >= AG_STATUS_COUNT)
        return "unknown status";
    return status_text[status];
}

int ag_error_set(ag_error *err, int status, const char *fmt, ...)
{
    if (err) {
        /* Names from files may hold newlines, escape sequences or bytes
         * that are not UTF-8: the message is one line of text that is safe
         * to print, whoever prints it. */
        char raw[2 * sizeof err->message];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        ag_text_escape(err->message, sizeof err->message, raw, AG_TEXT_CONTROL);
        err->status = status;
    }
    return status;
}

size_t ag_array_size(const ag_array *a)
{
    size_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i];
    return n;
}

int ag_array_alloc(ag_array *a, int ndim, const size_t *shape, ag_error *err)
{
    memset(a, 0, sizeof *a);
    if (ndim < 0 || ndim > AG_MAX_DIMS)
        return ag_error_set(err, AG_ESHAPE, "array rank %d is outside 0..%d",
                            ndim, AG_MAX_DIMS);
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 0 && n > SIZE_MAX / sizeof(double) / shape[i])
            return ag_error_set(err, AG_ELIMIT, "array of shape too large");
        n *= shape[i];
    }
    a->data = calloc(n ? n : 1, sizeof(double));
    if (!a->data)
        return ag_error_set(err, AG_ENOMEM, "cannot allocate %zu doubles", n);
    a->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        a->shape[i] = shape[i];
    return AG_OK;
}

void ag_array_free(ag_array *a)
{
    if (!a)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- structs that carry their size (ABI rule, core.h) ------------------ */

int ag_sized_read(void *dst, size_t known, const void *src, const char *type, ag_error *err)
{
    size_t given;
    memcpy(&given, src, sizeof given);
    if (given < sizeof given)
        return ag_error_set(err, AG_EINVAL, "%s: size %zu: the size is not set (start from "
                            "its _DEFAULT initializer)", type, given);
    if (given > known)
        return ag_error_set(err, AG_EINVAL, "%s: size %zu is larger than the %zu bytes this "
                            "library (attngeom %s) knows: the program was built against newer "
                            "headers", type, given, known, ag_version());
    memcpy(dst, src, given);
    memcpy(dst, &known, sizeof known);
    return AG_OK;
}
