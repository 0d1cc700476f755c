/* bench_families.c — each family of the matrix metrics (A spectrum,
 * B attention, C geometry) alone through the library, against its floor:
 * the LAPACK/BLAS calls it cannot avoid, timed alone on the same matrix
 * (docs/performance.md, "Floors of the matrix metrics").
 *
 *   A: dgesdd, JOBZ='N' (the singular values).
 *   B: causal: dsyevr, RANGE='I' (fiedler; the eigenvalues are the
 *      diagonal). Otherwise also dgehrd + dhseqr, JOB='E' (the eigenvalues).
 *      From n = 256 the library replaces both by certified Krylov routes
 *      (analysis/fiedler.c, analysis/lambda2.c), so for B this "floor" is
 *      the dense route it avoids and a ratio below 1 is the gain.
 *   C: the k Lanczos steps' products with X − 1x̄ᵀ and its transpose
 *      (2 dgemv each), k the steps the library takes (ag_svd_max).
 *
 * Random softmax matrices at n = 512 (logits 2·N(0, 1)), causal and not;
 * BLAS on one thread; thread CPU time, the best of 5 to 60 runs (as many
 * as fit in 0.6 s per pair), library and floor runs alternating: the
 * machine may be shared, and the best of many runs is the least disturbed. The library runs with one
 * workspace reused across calls, as a pass over many heads does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <gsl/gsl_rng.h>
#include <lapacke.h>

#include <attngeom.h>

#include "bench_clock.h"

#define N 512
/* The leading dimension of the floors' dgesdd and dgehrd + dhseqr copies:
 * N + 8, as the library pads them (analysis/linalg.c, ag_lapack_ld: n a
 * multiple of 64 puts a matrix's columns into the same cache sets; 32 ms
 * against 22 ms for dgesdd at n = 512). The floor is LAPACK at its best. */
#define LD (N + 8)
#define MIN_RUNS 5     /* at least this many runs of each ... */
#define MAX_RUNS 60    /* ... and more, up to this, */
#define BUDGET 0.6     /* while the pair has used less than this many seconds */

/* This thread's CPU time: the library and the floors run on it. */
static double cpu_now(void)
{
    return bench_now(CLOCK_THREAD_CPUTIME_ID);
}

/* A standard Gaussian draw (Box–Muller; gsl_randist.h would clash with
 * OpenBLAS's cblas.h). */
static double gaussian(gsl_rng *rng)
{
    double u = gsl_rng_uniform_pos(rng), v = gsl_rng_uniform(rng);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* Row-wise softmax of 2·N(0, 1) logits; causal: row i over keys 0..i. */
static void random_attention(double *A, size_t n, int causal, gsl_rng *rng)
{
    for (size_t i = 0; i < n; i++) {
        double *row = A + i * n, top = -INFINITY, z = 0;
        size_t keys = causal ? i + 1 : n;
        for (size_t j = 0; j < keys; j++) {
            row[j] = 2.0 * gaussian(rng);
            top = row[j] > top ? row[j] : top;
        }
        for (size_t j = 0; j < n; j++) {
            row[j] = j < keys ? exp(row[j] - top) : 0.0;
            z += row[j];
        }
        for (size_t j = 0; j < keys; j++)
            row[j] /= z;
    }
}

typedef struct {
    const double *A;   /* the matrix */
    int causal;
    double *copy;      /* n² scratch LAPACK overwrites */
    double *lap;       /* n² symmetric: the fiedler Laplacian's stand-in */
    double *centred;   /* n² X − 1x̄ᵀ */
    double *work;      /* LAPACK WORK */
    lapack_int lwork, *iwork;
    double *vec;       /* 4n scratch vectors */
    int steps;         /* Lanczos steps of family C */
    ag_matrix_work *mw;
} bench_case;

/* One timed library call with the family's keys. */
static double time_library(const bench_case *c, const char *metrics)
{
    ag_metric_set *sel = NULL;
    ag_record *r = ag_record_new();
    ag_error err = {0};
    int status = r ? ag_metric_set_new(AG_FAMILIES_MATRIX, metrics, &sel, &err)
                   : ag_error_set(&err, AG_ENOMEM, "out of memory");
    double t = cpu_now();
    if (status == AG_OK)
        status = ag_matrix_metrics_work(c->A, N, N, sel, NULL, c->mw, r, &err);
    t = cpu_now() - t;
    ag_record_free(r);
    ag_metric_set_free(sel);
    if (status != AG_OK) {
        fprintf(stderr, "bench_families: %s\n", err.message);
        exit(1);
    }
    return t;
}

/* A into the floors' copy, row i at copy + i·LD (the column-major Aᵀ). */
static void load_padded(const bench_case *c)
{
    for (size_t i = 0; i < N; i++)
        memcpy(c->copy + i * LD, c->A + i * N, N * sizeof *c->copy);
}

static double floor_spectrum(const bench_case *c)
{
    load_padded(c);
    double t = cpu_now();
    lapack_int info = LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, 'N', N, N, c->copy, LD, c->vec,
                                          NULL, 1, NULL, 1, c->work, c->lwork, c->iwork);
    t = cpu_now() - t;
    return info == 0 ? t : -1;
}

static double floor_attention(const bench_case *c)
{
    lapack_int found = 0, info = 0;
    double t = 0, s;
    if (!c->causal) {
        load_padded(c);
        s = cpu_now();
        info |= LAPACKE_dgehrd_work(LAPACK_COL_MAJOR, N, 1, N, c->copy, LD, c->vec, c->work,
                                    c->lwork);
        info |= LAPACKE_dhseqr_work(LAPACK_COL_MAJOR, 'E', 'N', N, 1, N, c->copy, LD, c->vec,
                                    c->vec + N, NULL, 1, c->work, c->lwork);
        t += cpu_now() - s;
    }
    memcpy(c->copy, c->lap, (size_t)N * N * sizeof *c->copy);
    s = cpu_now();
    info |= LAPACKE_dsyevr_work(LAPACK_COL_MAJOR, 'N', 'I', 'U', N, c->copy, N, 0, 0, 2, 2, 0,
                                &found, c->vec, NULL, 1, c->iwork, c->work, c->lwork,
                                c->iwork + 2, 10 * N);
    t += cpu_now() - s;
    return info == 0 ? t : -1;
}

static double floor_geometry(const bench_case *c)
{
    double *v = c->vec, *u = c->vec + N;
    for (size_t j = 0; j < N; j++)
        v[j] = 1.0 / N;
    double t = cpu_now();
    for (int k = 0; k < c->steps; k++) {
        cblas_dgemv(CblasRowMajor, CblasNoTrans, N, N, 1.0, c->centred, N, v, 1, 0.0, u, 1);
        cblas_dgemv(CblasRowMajor, CblasTrans, N, N, 1.0, c->centred, N, u, 1, 0.0, v, 1);
    }
    return cpu_now() - t;
}

/* The scratch of the floors (LAPACK WORK sized by queries) and the inputs
 * of B's and C's floors. */
static int prepare(bench_case *c)
{
    size_t nn = (size_t)N * N;
    c->copy = malloc((size_t)N * LD * sizeof(double));
    c->lap = malloc(nn * sizeof(double));
    c->centred = malloc(nn * sizeof(double));
    c->vec = malloc(4 * N * sizeof(double));
    c->iwork = malloc(12 * N * sizeof(lapack_int));
    c->lwork = 64 * N * N / 16 + 64 * N;
    c->work = malloc((size_t)c->lwork * sizeof(double));
    if (!c->copy || !c->lap || !c->centred || !c->vec || !c->iwork || !c->work ||
        ag_matrix_work_new(&c->mw, NULL) != AG_OK)
        return 0;
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < N; j++)
            c->lap[i * N + j] = -0.5 * (c->A[i * N + j] + c->A[j * N + i]) + (i == j);
    for (size_t j = 0; j < N; j++) {
        double mean = 0;
        for (size_t i = 0; i < N; i++)
            mean += c->A[i * N + j];
        mean /= N;
        for (size_t i = 0; i < N; i++)
            c->centred[i * N + j] = c->A[i * N + j] - mean;
    }
    double sigma1;
    return ag_svd_max(c->centred, N, N, &sigma1, &c->steps) == AG_OK;
}

static void release(bench_case *c)
{
    free(c->copy);
    free(c->lap);
    free(c->centred);
    free(c->vec);
    free(c->iwork);
    free(c->work);
    ag_matrix_work_free(c->mw);
}

typedef double (*floor_fn)(const bench_case *);

/* Best of the runs of the library and of the floor, alternating. */
static void compare(bench_case *c, const char *family, floor_fn fl, const char *calls)
{
    double lib = INFINITY, flo = INFINITY, spent = 0;
    for (int r = 0; r < MAX_RUNS && (r < MIN_RUNS || spent < BUDGET); r++) {
        double a = time_library(c, family), b = fl(c);
        spent += a + b;
        if (b < 0) {
            fprintf(stderr, "bench_families: a LAPACK call of the %s floor failed\n", family);
            exit(1);
        }
        lib = a < lib ? a : lib;
        flo = b < flo ? b : flo;
    }
    printf("%-10s  %-9s  %9.2f  %10.2f  %5.2f  %s\n", c->causal ? "causal" : "non-causal",
           family, 1e3 * flo, 1e3 * lib, lib / flo, calls);
}

int main(void)
{
    openblas_set_num_threads(1);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    double *A = malloc((size_t)N * N * sizeof *A);
    if (!rng || !A)
        return 1;
    printf("bench_families: n = %d random softmax, BLAS 1 thread, thread CPU time, best of "
           "%d to %d runs\n", N, MIN_RUNS, MAX_RUNS);
    printf("%-10s  %-9s  %9s  %10s  %5s  %s\n", "matrix", "family", "floor ms", "library ms",
           "ratio", "floor: the calls it cannot avoid");
    double head[2] = {INFINITY, INFINITY};
    for (int causal = 1; causal >= 0; causal--) {
        gsl_rng_set(rng, 20240611UL + (unsigned long)causal);
        random_attention(A, N, causal, rng);
        bench_case c = {.A = A, .causal = causal};
        if (!prepare(&c)) {
            fprintf(stderr, "bench_families: out of memory or ag_svd_max failed\n");
            return 1;
        }
        char lanczos[96];
        snprintf(lanczos, sizeof lanczos, "%d Lanczos steps x 2 dgemv", c.steps);
        compare(&c, "spectrum", floor_spectrum, "dgesdd JOBZ='N'");
        compare(&c, "attention", floor_attention,
                causal ? "dsyevr RANGE='I' (fiedler)"
                       : "the dense route the Krylov routes replace: dgehrd + dhseqr "
                         "JOB='E'; dsyevr RANGE='I' (fiedler)");
        compare(&c, "geometry", floor_geometry, lanczos);
        for (int r = 0; r < MIN_RUNS; r++) {
            double t = time_library(&c, "spectrum,attention,geometry");
            head[causal] = t < head[causal] ? t : head[causal];
        }
        release(&c);
    }
    printf("default metrics (A, B, C) per head: causal %.1f ms, non-causal %.1f ms\n",
           1e3 * head[1], 1e3 * head[0]);
    free(A);
    gsl_rng_free(rng);
    return 0;
}
