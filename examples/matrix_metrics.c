/* matrix_metrics.c — the metrics of an attention matrix built in C, printed
 * as JSON: a causal head that attends uniformly to the tokens seen so far.
 *
 *   make examples && build/examples/matrix_metrics [n]
 *
 * For this matrix the eigenvalues are its diagonal 1/(i+1), so lambda2_abs is
 * exactly 0.5, and every row is uniform over its keys, so
 * entropy_normalized is 1. */
#include <stdio.h>
#include <stdlib.h>

#include <attngeom.h>

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 8;
    if (n == 0 || n > 4096) {
        fprintf(stderr, "usage: matrix_metrics [n], 1 <= n <= 4096\n");
        return 2;
    }
    double *A = calloc(n * n, sizeof *A); // (n, n) row-stochastic, causal
    if (!A)
        return 1;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++)
            A[i * n + j] = 1.0 / (double)(i + 1);

    /* The selection (families A, B, C) and the record list are allocated
     * by the library: their layouts are its own (ABI rule, core.h). */
    ag_error err = {0};
    ag_metric_set *sel = NULL;
    ag_record_list *recs = ag_record_list_new();
    ag_record *rec = recs ? ag_record_list_add(recs, &err) : NULL;
    int status = rec ? ag_metric_set_new(AG_FAMILIES_DEFAULT, NULL, &sel, &err) : AG_ENOMEM;
    if (status == AG_OK) {
        ag_record_init(rec, 0, 0, n, n);
        status = ag_matrix_metrics(A, n, n, sel, rec, &err);
    }
    free(A);
    if (status == AG_OK) {
        ag_output_meta meta = AG_OUTPUT_META_DEFAULT;
        meta.command = "example";
        meta.source = "causal uniform";
        status = ag_records_write(stdout, AG_FORMAT_JSON, recs, sel, &meta);
    } else {
        fprintf(stderr, "matrix_metrics: %s (%s)\n", err.message, ag_strerror(status));
    }
    ag_metric_set_free(sel);
    ag_record_list_free(recs);
    return status == AG_OK ? 0 : 1;
}
