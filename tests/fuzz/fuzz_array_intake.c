/* fuzz_array_intake.c — ag_matrix_records as the Python package calls it
 * (python/attngeom/_matrix.py): a pointer, ndim, shape and strides (in
 * doubles) over memory the caller owns, here laid out from the input.
 * Input: byte 0 -> ndim = b % 6 (0..5: 2..4 are arrays, the rest refused),
 * byte 1 -> the values' dtype (b % 3: float16, float32, float64, converted
 * exactly to double as the package converts them), byte 2 -> the byte
 * offset of the data (b % 8: misaligned unless 0), then per dimension two
 * bytes: size b % 5 (0 is an empty array) and stride b % 9 - 4 doubles
 * (negative and zero too), then the values, little-endian, repeated to fill
 * the elements (zeros when none). Checks: the checks' statuses in order
 * (shape, empty, alignment, non-finite), every failure one message, and a
 * success equal to the records of the C-ordered copy, bit for bit. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"

#define MAX_DIMS 5

/* Element k of the input's values as a double (exact), or 0. */
static double value_at(const uint8_t *v, size_t nv, int dtype, size_t k)
{
    size_t width = dtype == 0 ? 2 : dtype == 1 ? 4 : 8, count = nv / width;
    if (!count)
        return 0;
    const uint8_t *p = v + (k % count) * width;
    if (dtype == 2) {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    if (dtype == 1) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    unsigned h = p[0] | (unsigned)p[1] << 8, e = (h >> 10) & 31, m = h & 1023;
    double x = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -x : x;
}

/* Offset in doubles of the element at index idx. */
static ptrdiff_t offset_of(int ndim, const size_t *idx, const ptrdiff_t *st)
{
    ptrdiff_t off = 0;
    for (int d = 0; d < ndim; d++)
        off += (ptrdiff_t)idx[d] * st[d];
    return off;
}

/* Next index in C order; 0 after the last. */
static int next_index(int ndim, const size_t *shape, size_t *idx)
{
    int d = ndim - 1;
    while (d >= 0 && ++idx[d] == shape[d])
        idx[d--] = 0;
    return d >= 0;
}

static int same_records(const ag_record_list *a, const ag_record_list *b)
{
    size_t n = ag_record_list_count(a);
    if (n != ag_record_list_count(b))
        return 0;
    for (size_t i = 0; i < n; i++) {
        const ag_record *x = ag_record_list_get(a, i), *y = ag_record_list_get(b, i);
        if (ag_record_layer(x) != ag_record_layer(y) || ag_record_head(x) != ag_record_head(y) ||
            ag_record_rows(x) != ag_record_rows(y) || ag_record_cols(x) != ag_record_cols(y))
            return 0;
        for (int m = 0; m < ag_metric_count(); m++) {
            double u = 0, v = 0;
            if (ag_record_value(x, m, &u) != ag_record_value(y, m, &v) || memcmp(&u, &v, 8) != 0)
                return 0;
        }
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int ndim = data[0] % 6, dtype = data[1] % 3;
    size_t shift = data[2] % 8, pos = 3, count = 1;
    size_t shape[MAX_DIMS] = {0}, idx[MAX_DIMS] = {0};
    ptrdiff_t st[MAX_DIMS] = {0}, lo = 0, hi = 0;
    for (int d = 0; d < ndim; d++, pos += 2) {
        shape[d] = pos < size ? data[pos] % 5 : 1;
        st[d] = pos + 1 < size ? (ptrdiff_t)(data[pos + 1] % 9) - 4 : 1;
        count *= shape[d];
        ptrdiff_t far = shape[d] ? (ptrdiff_t)(shape[d] - 1) * st[d] : 0;
        lo += far < 0 ? far : 0;
        hi += far > 0 ? far : 0;
    }
    const uint8_t *vals = data + (pos < size ? pos : size);
    size_t nvals = pos < size ? size - pos : 0, span = (size_t)(hi - lo + 1);

    /* the elements where the strides put them (the span they cover), the
     * data pointer `shift` bytes past an aligned address */
    unsigned char *raw = calloc(span * 8 + 8, 1);
    double *packed = malloc((count ? count : 1) * sizeof *packed);
    if (!raw || !packed)
        abort();
    unsigned char *base = raw + shift + (size_t)(-lo) * 8;
    int nonfinite = 0;
    for (size_t k = 0; count && ndim; k++) {
        double x = value_at(vals, nvals, dtype, k);
        memcpy(base + offset_of(ndim, idx, st) * 8, &x, 8); /* later writes win, as in C order */
        if (!next_index(ndim, shape, idx))
            break;
    }
    memset(idx, 0, sizeof idx);
    for (size_t k = 0; count && ndim; k++) { /* what is there now, in C order */
        memcpy(&packed[k], base + offset_of(ndim, idx, st) * 8, 8);
        nonfinite |= !isfinite(packed[k]);
        if (!next_index(ndim, shape, idx))
            break;
    }

    ag_error *err = ag_error_new();
    ag_metric_set *sel = NULL;
    ag_record_list *got = NULL, *want = NULL;
    if (!err || ag_metric_set_new(ag_command_families("matrix"), "all", &sel, err) != AG_OK)
        abort();
    const double *p = (const double *)(const void *)base;
    int rc = ag_matrix_records(p, ndim, shape, st, sel, NULL, &got, err);
    int expect = ndim < 2 || ndim > 4 ? AG_ESHAPE
                 : !count ? AG_EINVAL
                 : shift ? AG_EINVAL
                 : nonfinite ? AG_ENONFINITE : -1;
    if (expect >= 0 && rc != expect)
        abort();
    if (shift && count && ndim >= 2 && ndim <= 4 && !strstr(ag_error_message(err), "not aligned"))
        abort();
    if (rc != AG_OK && (ag_error_status(err) != rc || !ag_error_message(err)[0] || got))
        abort();
    if (rc == AG_OK) { /* the same records as the C-ordered copy's */
        ptrdiff_t cst[MAX_DIMS];
        for (int d = ndim - 1; d >= 0; d--)
            cst[d] = d == ndim - 1 ? 1 : cst[d + 1] * (ptrdiff_t)shape[d + 1];
        if (ag_matrix_records(packed, ndim, shape, cst, sel, NULL, &want, err) != AG_OK ||
            !same_records(got, want))
            abort();
    }
    ag_record_list_free(got);
    ag_record_list_free(want);
    ag_metric_set_free(sel);
    ag_error_free(err);
    free(raw);
    free(packed);
    return 0;
}
