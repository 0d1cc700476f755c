/* gelu.h — the tanh-form GELU of the float32 forward pass. Private to the
 * library.
 *
 * activations.py NewGELUActivation, in float32 as the pass computes it:
 *   u = c·(v + ((0.044715·v)·v)·v),  c = √(2/π) rounded to float
 *   gelu(v) = (0.5·v)·(1 + tanh(u))
 * every operation rounded to float, in that order, except tanh(u), which is
 * evaluated in double and rounded once to float: correctly rounded but for
 * ties within about 1e-12 of a float boundary, so at least as accurate as
 * tanhf (glibc's is within 2 ulp; torch's vectorised one within 1 ulp).
 *
 * The AVX-512 path (checked at run time) and the plain C path perform the
 * same IEEE operations in the same order (no fused multiply-add), so they
 * give the same bits. */
#ifndef ATTNGEOM_GELU_H
#define ATTNGEOM_GELU_H

#include <stddef.h>

/* x[i] = gelu(x[i]) for i < cnt. */
void agm_gelu_tanh_f32(float *x, size_t cnt);

/* Tests only: the plain C path whatever the CPU. */
void agm_gelu_tanh_f32_plain(float *x, size_t cnt);

#endif
