/* forward.c — the forward pass of a loaded model (see attngeom/model.h and
 * docs/engine.md). The pass itself is written once in forward_tmpl.h, for
 * every architecture, and instantiated here for float (HF float32
 * semantics) and double; each head is the attention kernel's
 * (attention_kernel.h).
 *
 * Memory: one layer's attention (H, n, n), O(n·max(d, d_ff)) activations,
 * one weight matrix converted to the pass's type (the model's matrices stay
 * in their mapped files, see model_int.h) and a small scratch per thread of
 * the pool; previous layers' attention is never kept. All of it belongs to
 * the pass, so passes may run concurrently. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "attention_kernel.h"
#include "vmath.h"
#include "model_int.h"
#include "sgemm.h"
#include "sized_int.h"

/* Fixed task sizes (docs/engine.md, "Threads"): they decide how work is
 * split, never what it computes. */
#define LIN_COLS 128            /* output columns of a projection per task */
#define ROW_BLOCK 16            /* tokens per task of a row-wise step */
#define CONV_CHUNK ((size_t)1 << 16) /* weights converted per task */

/* A zeroed buffer of a pass. One of 2 MiB or more is 2 MiB-aligned and
 * asks for transparent huge pages: a pass's big buffers (attention, its
 * double copy, the MLP activations: tens of MB) are new in every pass, and
 * touching them 4 KiB at a time cost thousands of page faults per pass. */
#define BIG_BUFFER ((size_t)2 << 20)

static void *zalloc(size_t bytes)
{
    if (bytes < BIG_BUFFER)
        return calloc(1, bytes ? bytes : 1);
    size_t rounded = (bytes + BIG_BUFFER - 1) / BIG_BUFFER * BIG_BUFFER;
    void *p = NULL;
    if (posix_memalign(&p, BIG_BUFFER, rounded))
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, rounded, MADV_HUGEPAGE); /* advice: ignored where unsupported */
#endif
    memset(p, 0, bytes);
    return p;
}

/* The double counterpart of agm_sgemm (sgemm.h) for the f64 pass. */
static void gemm_tile_f64(int trans, size_t m, size_t n, size_t k, const double *a, size_t lda,
                          const double *b, size_t ldb, double *c, size_t ldc, double *scratch)
{
    (void)scratch;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, trans ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, 1.0, a, (int)lda, b, (int)ldb, 0.0, c, (int)ldc);
}

/* Where a pass met a value that is not finite (an overflow: the weights
 * were checked finite at load). layer -1: outside the blocks; head -1: not
 * per head; row: the token (the query for attention). */
typedef struct {
    char what[96];
    int set, layer, head;
    size_t row;
} fwd_fault;

static int set_fault(fwd_fault *f, const char *what, int layer, int head, size_t row)
{
    snprintf(f->what, sizeof f->what, "%s", what);
    f->set = 1;
    f->layer = layer;
    f->head = head;
    f->row = row;
    return AG_ENONFINITE;
}

/* "layer 3 head 5: attention is not finite at query 2 (float32 overflow;
 * try --precision f64)". The caller names the model folder. */
static void fault_error(const fwd_fault *f, int f64, ag_error *err)
{
    char place[64] = "";
    if (f->layer >= 0 && f->head >= 0)
        snprintf(place, sizeof place, "layer %d head %d: ", f->layer, f->head);
    else if (f->layer >= 0)
        snprintf(place, sizeof place, "layer %d: ", f->layer);
    ag_error_set(err, AG_ENONFINITE, "%s%s is not finite at %s %zu (%s)", place, f->what,
                 f->head >= 0 ? "query" : "token", f->row,
                 f64 ? "float64 overflow" : "float32 overflow; try --precision f64");
}

#define R float
#define SFX _f32
#define GEMM_TILE agm_sgemm
#define RSQRT sqrtf
#define REXP expf
#define RTANH tanhf
#define RERF erff
#define CONV agm_to_float
#define IS_F64 0
#include "forward_tmpl.h"
#undef R
#undef SFX
#undef GEMM_TILE
#undef RSQRT
#undef REXP
#undef RTANH
#undef RERF
#undef IS_F64
#undef CONV

#define R double
#define SFX _f64
#define GEMM_TILE gemm_tile_f64
#define RSQRT sqrt
#define REXP exp
#define RTANH tanh
#define RERF erf
#define CONV agm_to_double
#define IS_F64 1
#include "forward_tmpl.h"

/* Why n tokens are too many, naming the config field that bounds them. */
static int too_long(const ag_model *m, size_t n, ag_error *err)
{
    const ag_model_config *g = &m->cfg;
    const char *field = m->arch->k_positions;
    if (g->positions == AG_POS_ROPE && g->rope.type == AG_ROPE_DYNAMIC)
        return ag_error_set(err, AG_ERANGE, "input of %zu tokens exceeds %d, the model's %s = %d times its dynamic rope_scaling factor %g",
                            n, g->max_tokens, field, g->max_positions, g->rope.factor);
    if (g->max_tokens != g->max_positions)
        return ag_error_set(err, AG_ERANGE, "input of %zu tokens exceeds the %d positions of the model's %s = %d (position 0 is row %d)",
                            n, g->max_tokens, field, g->max_positions, g->position_offset);
    return ag_error_set(err, AG_ERANGE, "input of %zu tokens exceeds the model's %s = %d", n, field,
                        g->max_positions);
}

static int check_input(const ag_model *m, const int32_t *ids, size_t n, ag_error *err)
{
    const ag_model_config *g = &m->cfg;
    if (n == 0)
        return ag_error_set(err, AG_EINVAL, "forward pass: no tokens");
    if (!ids)
        return ag_error_set(err, AG_EINVAL, "forward pass: missing token ids");
    if (n > (size_t)g->max_tokens)
        return too_long(m, n, err);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= g->vocab_size)
            return ag_error_set(err, AG_ERANGE, "token id %ld at position %zu is outside the vocabulary (vocab_size = %d)",
                                (long)ids[i], i, g->vocab_size);
    return AG_OK;
}

int ag_model_forward_ex(const ag_model *m, const int32_t *ids, size_t n,
                        const ag_forward_options *opt, ag_layer_fn fn, void *user,
                        double *hidden, ag_error *err)
{
    ag_forward_options given = AG_FORWARD_OPTIONS_DEFAULT;
    if (opt && AG_SIZED_READ(&given, opt, ag_forward_options, err) != AG_OK)
        return AG_EINVAL;
    const ag_forward_options *o = &given;
    if (!m)
        return ag_error_set(err, AG_EINVAL, "forward pass: no model");
    int rc = check_input(m, ids, n, err);
    if (rc != AG_OK)
        return rc;
    if (o->precision == AG_PRECISION_F64)
        return forward_f64(m, ids, n, o, fn, user, hidden, err);
    if (o->precision == AG_PRECISION_F32)
        return forward_f32(m, ids, n, o, fn, user, hidden, err);
    return ag_error_set(err, AG_EINVAL, "forward pass: unknown precision %d", (int)o->precision);
}

size_t ag_layer_view_copy_heads(const ag_layer_view *v, const unsigned char *head_on,
                                double *dst)
{
    size_t nn = v->n * v->n, count = 0;
    for (int h = 0; h < v->n_head; h++)
        if (!head_on || head_on[h])
            memcpy(dst + count++ * nn, v->attn + (size_t)h * nn, nn * sizeof *dst);
    return count;
}

int ag_model_forward(const ag_model *m, const int32_t *ids, size_t n,
                     ag_precision precision, ag_layer_fn fn, void *user,
                     double *hidden, ag_error *err)
{
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.precision = precision;
    return ag_model_forward_ex(m, ids, n, &o, fn, user, hidden, err);
}
