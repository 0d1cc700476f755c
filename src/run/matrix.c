/* matrix.c — families A-C and F of every matrix of an array
 * (attngeom/run.h, ag_run_matrix), for `attngeom matrix` (its file's
 * C-order array) and Python (any strides) alike: one task per matrix, the
 * run's tasks, which a distribution spreads. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run_int.h"

/* "(2, 3)", "(5,)", "()" as numpy prints shapes. */
static void shape_text(int ndim, const size_t *shape, char *buf, size_t size)
{
    int n = snprintf(buf, size, "(");
    for (int d = 0; d < ndim && n > 0 && (size_t)n < size; d++)
        n += snprintf(buf + n, size - n, "%zu%s", shape[d],
                      d + 1 < ndim ? ", " : (ndim == 1 ? ",)" : ")"));
    if (ndim == 0)
        snprintf(buf, size, "()");
}

/* The first non-finite element in C order: 1 with its index in idx. */
static int find_nonfinite(const double *data, int ndim, const size_t *shape,
                          const ptrdiff_t *strides, size_t *idx, double *bad)
{
    memset(idx, 0, (size_t)ndim * sizeof *idx);
    for (;;) {
        ptrdiff_t off = 0;
        for (int d = 0; d < ndim; d++)
            off += (ptrdiff_t)idx[d] * strides[d];
        if (!isfinite(data[off]))
            return *bad = data[off], 1;
        int d = ndim - 1;
        while (d >= 0 && ++idx[d] == shape[d])
            idx[d--] = 0;
        if (d < 0)
            return 0;
    }
}

int ag_matrices_check(const double *data, int ndim, const size_t *shape,
                      const ptrdiff_t *strides, ag_error *err)
{
    char text[160];
    if (ndim < 0 || ndim > AG_MAX_DIMS)
        return ag_error_set(err, AG_ESHAPE, "%d-D array; expected 2-D [n,m], 3-D [H,n,m] or "
                            "4-D [L,H,n,m]", ndim);
    shape_text(ndim, shape, text, sizeof text);
    if (ndim < 2 || ndim > 4)
        return ag_error_set(err, AG_ESHAPE, "%d-D array of shape %s; expected 2-D [n,m], "
                            "3-D [H,n,m] or 4-D [L,H,n,m]", ndim, text);
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0)
            return ag_error_set(err, AG_EINVAL, "empty array of shape %s", text);
    /* strides count doubles: an aligned data pointer aligns every element,
     * and a misaligned one is refused before anything is read through it */
    if (!data)
        return ag_error_set(err, AG_EINVAL, "no data (NULL) for an array of shape %s", text);
    if ((uintptr_t)data % _Alignof(double) != 0)
        return ag_error_set(err, AG_EINVAL, "data at %p is not aligned for float64 (%zu bytes)",
                            (const void *)data, _Alignof(double));
    size_t idx[AG_MAX_DIMS];
    double bad;
    if (!find_nonfinite(data, ndim, shape, strides, idx, &bad))
        return AG_OK;
    char where[160];
    int n = snprintf(where, sizeof where, "[");
    for (int d = 0; d < ndim; d++)
        n += snprintf(where + n, sizeof where - n, "%zu%s", idx[d], d + 1 < ndim ? ", " : "]");
    return ag_error_set(err, AG_ENONFINITE, "non-finite value (%s) at index %s",
                        isnan(bad) ? "NaN" : "Inf", where);
}

/* One task per matrix: matrix i is layer i / H, head i % H. */
typedef struct {
    ag_workers *w;
    const double *data;
    size_t H, m, n;
    ptrdiff_t sl, sh, sr, sc; /* strides of layer, head, row, column */
    const ag_metric_set *sel;
    ag_matrix_options mo;
    double **gather;          /* (threads) m·n doubles each, for strided matrices */
    int threads;
    ag_record_list *recs;     /* (L*H) */
    ag_error *errs;           /* (L*H) */
} matrix_job;

static int matrix_task(size_t i, int worker, void *user)
{
    const matrix_job *j = user;
    const double *M = j->data + (ptrdiff_t)(i / j->H) * j->sl + (ptrdiff_t)(i % j->H) * j->sh;
    if (j->gather) { /* exact copies into C order: the same values */
        double *g = j->gather[worker];
        for (size_t r = 0; r < j->m; r++)
            for (size_t c = 0; c < j->n; c++)
                g[r * j->n + c] = M[(ptrdiff_t)r * j->sr + (ptrdiff_t)c * j->sc];
        M = g;
    }
    ag_record *rec = ag_record_list_at(j->recs, i);
    ag_record_init(rec, (int)(i / j->H), (int)(i % j->H), j->m, j->n);
    return ag_matrix_metrics_work(M, j->m, j->n, j->sel, &j->mo, ag_workers_work(j->w), rec,
                                  &j->errs[i]);
}

static int gather_new(matrix_job *j, ag_error *err)
{
    if (j->sc == 1 && (j->sr == (ptrdiff_t)j->n || j->m == 1))
        return AG_OK; /* rows contiguous: measured in place */
    j->threads = ag_pool_threads(ag_workers_pool(j->w));
    if (!(j->gather = calloc((size_t)j->threads, sizeof *j->gather)))
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    for (int k = 0; k < j->threads; k++)
        if (!(j->gather[k] = malloc(j->m * j->n * sizeof(double))))
            return ag_error_set(err, AG_ENOMEM, "out of memory for a %zu x %zu matrix", j->m, j->n);
    return AG_OK;
}

static void gather_free(matrix_job *j)
{
    for (int k = 0; j->gather && k < j->threads; k++)
        free(j->gather[k]);
    free(j->gather);
}

static int run_matrices(matrix_job *j, size_t count, const ag_run_options *opt, ag_error *err)
{
    int status = gather_new(j, err);
    ag_run_tasks t = {.size = sizeof t, .count = count, .fn = matrix_task, .user = j,
                      .recs = j->recs, .per_task = 1, .errs = j->errs};
    size_t k = 0;
    if (status == AG_OK && (status = ag_run_tasks_run(j->w, &t, opt, &k)) != AG_OK)
        ag_error_set(err, status, "layer %zu, head %zu: %s", k / j->H, k % j->H,
                     j->errs[k].message);
    gather_free(j);
    return status;
}

int ag_run_matrix(const double *data, int ndim, const size_t *shape, const ptrdiff_t *strides,
                  const ag_run_options *opt, ag_workers *w, ag_record_list **out, ag_error *err)
{
    *out = NULL;
    int status = ag_matrices_check(data, ndim, shape, strides, err);
    if (status != AG_OK)
        return status;
    size_t L = ndim == 4 ? shape[0] : 1, H = ndim >= 3 ? shape[ndim - 3] : 1;
    matrix_job j = {.data = data, .H = H, .m = shape[ndim - 2], .n = shape[ndim - 1],
                    .sl = ndim == 4 ? strides[0] : 0, .sh = ndim >= 3 ? strides[ndim - 3] : 0,
                    .sr = strides[ndim - 2], .sc = strides[ndim - 1],
                    .mo = AG_MATRIX_OPTIONS_DEFAULT};
    j.mo.edge_threshold = agr_options(opt)->edge_threshold;
    ag_metric_set *own_sel = NULL;
    ag_workers *own = NULL;
    status = agr_metrics(opt, AG_FAMILIES_MATRIX, &j.sel, &own_sel, err);
    if (status == AG_OK) {
        j.recs = ag_record_list_alloc(L * H, err);
        j.errs = j.recs ? calloc(L * H, sizeof *j.errs) : NULL;
        if (!j.errs)
            status = ag_error_set(err, AG_ENOMEM, "out of memory for %zu records", L * H);
    }
    if (status == AG_OK)
        status = agr_workers(w, opt, L * H, &j.w, &own, err);
    if (status == AG_OK) {
        j.mo.workers = j.w; /* one head's edges on the threads */
        status = run_matrices(&j, L * H, opt, err);
    }
    if (status == AG_OK)
        *out = j.recs;
    else
        ag_record_list_free(j.recs);
    free(j.errs);
    ag_workers_free(own);
    ag_metric_set_free(own_sel);
    return status;
}

int ag_matrix_records(const double *data, int ndim, const size_t *shape,
                      const ptrdiff_t *strides, const ag_metric_set *sel,
                      const ag_run_options *opt, ag_record_list **out, ag_error *err)
{
    ag_run_options o = *agr_options(opt);
    o.metrics = sel;
    return ag_run_matrix(data, ndim, shape, strides, &o, NULL, out, err);
}
