/* Internal prefix: agk_ (module src/kernel/; these are still the engine's agm_ for now). */
/* sgemm.h — the float32 matrix products of the forward pass. Private to the
 * library.
 *
 *   C (m, n) = A (m, k) · op(B),  op(B) = B (k, n) stored (k, n), or
 *                                 op(B) = Bᵀ with B stored (n, k) (trans)
 *
 * row-major, leading dimensions in elements.
 *
 * On a CPU with AVX-512F (checked once, at run time) the products are this
 * file's own kernel, unless OpenBLAS's kernel in force is one of its AVX-512
 * ones (openblas_get_corename(): SkylakeX, Cooperlake, SapphireRapids), or
 * on AMD Zen 4 one of its AVX2 ones (Haswell, Zen), which are faster there;
 * anywhere else they are cblas_sgemm (agm_sgemm_own). The
 * own kernel exists because OpenBLAS 0.3.21 (Debian 12) runs its AVX2
 * ("Haswell") kernels on CPUs it does not know, such as AMD Zen 5, at about
 * half of what the hardware does with AVX-512 (docs/engine.md, "Speed").
 * The choice depends on the machine alone, never on a timing, so a pass
 * gives the same bytes at any thread count on a given machine.
 *
 * Each element of C computed by the kernel is one fixed sequence of float
 * operations: the products a_il·b_lj are summed in order of l by fused
 * multiply-adds, in blocks of AGM_SGEMM_KC (each block's sum starts at 0;
 * C = block 0, then C = C + block b). It does not depend on m, n, on where
 * the element lies in C or on how C is split into calls: a product split
 * into tiles in any way, by any number of threads, gives the same bytes.
 * The cblas_sgemm fallback promises none of this, so callers split C into
 * tiles by a rule that does not depend on the thread count.
 *
 * The kernel reads B (k, n) in place; a transposed B is first copied into
 * the kernel's layout (agm_sgemm_prepare: once, then any number of
 * agm_sgemm_run calls; an attention head copies its keys once and
 * multiplies each block of query rows by them). agm_sgemm does both for one
 * product.
 *
 * Nothing allocates and nothing is kept: buffers are the caller's (64-byte
 * aligned). Thread-safe. */
#ifndef ATTNGEOM_SGEMM_H
#define ATTNGEOM_SGEMM_H

#include <stddef.h>

#define AGM_SGEMM_KC 256 /* the k block: part of the result, see above */

/* op(B) (k, n), as agm_sgemm_run reads it. */
typedef struct {
    const float *b;      /* B as stored, rows ldb apart */
    size_t ldb;
    int trans;           /* op(B) = Bᵀ */
    size_t k, n;
    const float *packed; /* the kernel's copy of a transposed B, or NULL */
} agm_bmat;

/* Floats of the copy agm_sgemm_prepare may make of a (k, n) op(B). */
size_t agm_sgemm_packed_size(size_t k, size_t n);

/* Describe op(B) = B (k, n) or, trans, Bᵀ with B (n, k); the copy, when the
 * kernel needs one, goes to buf (agm_sgemm_packed_size(k, n) floats). */
void agm_sgemm_prepare(agm_bmat *bm, int trans, const float *b, size_t ldb, size_t k, size_t n,
                       float *buf);

/* C (m, n) = A (m, k) · op(B)[0:k, 0:n] (add: C + that), n <= bm->n,
 * k <= bm->k. With add, the product is added block by block as above; a
 * product over k split into calls at multiples of AGM_SGEMM_KC (the first
 * without add) is then the same as one call. */
void agm_sgemm_run(const agm_bmat *bm, size_t m, size_t n, size_t k, const float *a, size_t lda,
                   float *c, size_t ldc, int add);

/* Floats of scratch agm_sgemm needs for a product of n columns. */
size_t agm_sgemm_scratch(size_t n);

/* C = A · op(B) (k == 0: C = 0); a transposed B is copied a block of
 * AGM_SGEMM_KC rows at a time into scratch. */
void agm_sgemm(int trans, size_t m, size_t n, size_t k, const float *a, size_t lda,
               const float *b, size_t ldb, float *c, size_t ldc, float *scratch);

/* C = A · op(B) + 𝟙·biasᵀ (bias: n values, or NULL for none): a linear
 * layer. Under cblas_sgemm the bias is C's starting value (beta = 1), which
 * spares OpenBLAS its pass zeroing C (sgemm_beta: 1.6 % of a GPT-2 pass)
 * and the pass adding the bias afterwards; the own kernel adds it after the
 * product (vmath.h's agm_add_f32), as the pass always did there. */
void agm_sgemm_bias(int trans, size_t m, size_t n, size_t k, const float *a, size_t lda,
                    const float *b, size_t ldb, const float *bias, float *c, size_t ldc,
                    float *scratch);

/* 1 when the AVX-512 paths run (here and in vmath.h): the CPU and the OS
 * have AVX-512F (checked once), unless forced off. */
int agm_avx512(void);

/* 1 when the products run on this file's kernel, 0 when on cblas_sgemm:
 * AVX-512 paths (agm_avx512) and OpenBLAS's kernel in force not one that
 * beats it on this CPU (agm_blas_core_beats_own), unless forced
 * (agm_sgemm_force_own). */
int agm_sgemm_own(void);

/* 1 when OpenBLAS's kernel named core (openblas_get_corename(), NULL:
 * unknown) beats the own kernel: an AVX-512 one (SkylakeX, Cooperlake,
 * SapphireRapids) on any CPU, an AVX2 one (Haswell, Zen) where
 * avx512_halved (AMD Zen 4, whose AVX-512 runs on 256-bit halves); names
 * compared without case, as prefixes. */
int agm_blas_core_beats_own(const char *core, int avx512_halved);

/* Tests and benches only: 1 forces the own kernel (if agm_avx512()), 0 cblas_sgemm,
 * -1 the automatic choice again. Not while a pass runs. */
void agm_sgemm_force_own(int own);

/* Tests only: 0 forces the cblas_sgemm fallback and vmath.h's plain paths,
 * 1 the AVX-512 ones (if the CPU has them), -1 the automatic choice again.
 * Not while a pass runs. */
void agm_avx512_force(int on);

#endif
