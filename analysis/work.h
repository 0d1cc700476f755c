/* Internal prefix: aga_ (module analysis/; today ag_work_*, renamed in a later step of plan-25). */
/* work.h — the scratch buffers of ag_matrix_work (analysis/work.c), one per
 * purpose. A buffer lives from ag_work_get to the next request of the same
 * slot: a routine that calls another must not hold a slot the callee uses
 * (the callers' slots are listed here with them). */
#ifndef AG_WORK_H
#define AG_WORK_H

#include <stddef.h>

#include <gsl/gsl_rng.h>

#include "attngeom/metrics.h"

typedef enum {
    AG_WK_SCALED,  /* 2^-e·M, the whole pass (analysis/matrix.c) */
    AG_WK_COPY,    /* the matrix a family hands to LAPACK, which overwrites it */
    AG_WK_COPY2,   /* a second one: the Hessenberg form kept for dhsein */
    AG_WK_VECTORS, /* a family's vectors of length n (ag_work_vectors) */
    AG_WK_EIGS,    /* eigenvalues and their order (analysis/eigen.c) */
    AG_WK_BASIS,   /* the Lanczos basis and its vectors (analysis/lanczos.c) */
    AG_WK_LWORK,   /* LAPACK WORK, within one call (analysis/linalg.c) */
    AG_WK_IWORK,   /* LAPACK IWORK and integer arrays, within one call */
    AG_WK_INPUT,   /* the matrix itself, widened by the caller into the
                      workspace (src/run/heads.c); no family touches it */
    AG_WK_CURVATURE, /* family F: one task's Ollivier scratch and transport
                        workspace, carved per task of edges (analysis/curvature.c,
                        oll_init); the edges may run inside a head's task, on
                        that head's workspace, after its other families */
    AG_WK_COUNT
} ag_work_slot;

/* Which route a certified Krylov metric took (analysis/fiedler.c), counted
 * per workspace so that tests can see the fallback run. */
typedef enum {
    AG_WC_FIEDLER_KRYLOV, /* the Lanczos value, certified */
    AG_WC_FIEDLER_DENSE,  /* dsyevr: small n, or the certificate failed */
    AG_WC_LAMBDA2_KRYLOV, /* λ₂ by Krylov–Schur, certified (analysis/lambda2.c) */
    AG_WC_LAMBDA2_DENSE,  /* dhseqr for a non-causal S: small n, or no certificate */
    AG_WC_COUNT
} ag_work_counter;

/* Adds one to counter c. */
void ag_work_count(ag_matrix_work *w, ag_work_counter c);
/* Counter c's value (0 for a NULL w). */
unsigned long ag_work_counted(const ag_matrix_work *w, ag_work_counter c);

/* At least `bytes` bytes (64-byte aligned) in the slot, or NULL when out of
 * memory. The contents are whatever the slot held before. */
void *ag_work_get(ag_matrix_work *w, ag_work_slot slot, size_t bytes);
/* The same for `count` doubles. */
double *ag_work_doubles(ag_matrix_work *w, ag_work_slot slot, size_t count);
/* k vectors of len doubles each, carved from one slot (each 64-byte
 * aligned): v[0..k-1]. AG_OK or AG_ENOMEM. */
int ag_work_vectors(ag_matrix_work *w, ag_work_slot slot, size_t len, size_t k, double **v);
/* The workspace's generator (gsl_rng_mt19937), seeded with seed; NULL when
 * out of memory. */
gsl_rng *ag_work_rng(ag_matrix_work *w, unsigned long seed);

#endif
