/* random.c — Gaussian draws for the analysis modules. Kept in a file of its
 * own because <gsl/gsl_randist.h> declares GSL's own CBLAS, which clashes
 * with OpenBLAS's <cblas.h> in files that do linear algebra. */
#include <gsl/gsl_randist.h>

#include "analysis.h"

void ag_fill_gaussian(gsl_rng *rng, double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = gsl_ran_gaussian(rng, 1.0);
}
