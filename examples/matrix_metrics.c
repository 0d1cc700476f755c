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

    ag_metric_set sel;
    ag_metric_set_default(&sel);
    ag_record rec;
    ag_record_init(&rec, 0, 0, n, n);
    ag_error err = {0};
    int status = ag_matrix_metrics(A, n, n, &sel, &rec, &err);
    free(A);
    if (status != AG_OK) {
        fprintf(stderr, "matrix_metrics: %s (%s)\n", err.message, ag_strerror(status));
        return 1;
    }
    ag_output_meta meta = {.command = "example", .source = "causal uniform"};
    return ag_records_write(stdout, AG_FORMAT_JSON, &rec, 1, &sel, &meta) == AG_OK ? 0 : 1;
}
