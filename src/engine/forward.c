/* forward.c — the forward pass of a loaded model (see attngeom/model.h and
 * docs/engine.md). The pass itself is written once in forward_tmpl.h and
 * instantiated here for float (HF float32 semantics) and double.
 *
 * Memory: one layer's attention (H, n, n), O(n·max(d, d_ff)) activations and
 * one weight matrix converted to the pass's type (the model's matrices stay
 * in their mapped files, see model_int.h); previous layers' attention is
 * never kept. All of it belongs to the pass, so passes may run concurrently. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"

/* Where a pass met a value that is not finite (an overflow: the weights
 * were checked finite at load). layer -1: outside the blocks; head -1: not
 * per head; row: the token (the query for attention). */
typedef struct {
    const char *what;
    int layer, head;
    size_t row;
} fwd_fault;

static int set_fault(fwd_fault *f, const char *what, int layer, int head, size_t row)
{
    *f = (fwd_fault){.what = what, .layer = layer, .head = head, .row = row};
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
#define GEMM cblas_sgemm
#define RSQRT sqrtf
#define REXP expf
#define RTANH tanhf
#define RERF erff
#define CONV agm_to_float
#define IS_F64 0
#include "forward_tmpl.h"
#undef R
#undef SFX
#undef GEMM
#undef RSQRT
#undef REXP
#undef RTANH
#undef RERF
#undef IS_F64
#undef CONV

#define R double
#define SFX _f64
#define GEMM cblas_dgemm
#define RSQRT sqrt
#define REXP exp
#define RTANH tanh
#define RERF erf
#define CONV agm_to_double
#define IS_F64 1
#include "forward_tmpl.h"

/* The config field that bounds the sequence length, for messages. */
static const char *positions_field(const ag_model_config *g)
{
    return g->arch == AG_ARCH_GPT2 ? "n_positions" : "max_position_embeddings";
}

static int check_input(const ag_model *m, const int32_t *ids, size_t n, ag_error *err)
{
    const ag_model_config *g = &m->cfg;
    if (n == 0)
        return ag_error_set(err, AG_EINVAL, "forward pass: no tokens");
    if (!ids)
        return ag_error_set(err, AG_EINVAL, "forward pass: missing token ids");
    if (n > (size_t)g->max_positions)
        return ag_error_set(err, AG_ERANGE, "input of %zu tokens exceeds the model's %s = %d",
                            n, positions_field(g), g->max_positions);
    if (g->sliding_window > 0 && n > (size_t)g->sliding_window)
        return ag_error_set(err, AG_EUNSUPPORTED, "input of %zu tokens exceeds sliding_window = %d (sliding-window masks are not implemented)",
                            n, g->sliding_window);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= g->vocab_size)
            return ag_error_set(err, AG_ERANGE, "token id %ld at position %zu is outside the vocabulary (vocab_size = %d)",
                                (long)ids[i], i, g->vocab_size);
    return AG_OK;
}

int ag_model_forward(const ag_model *m, const int32_t *ids, size_t n,
                     ag_precision precision, ag_layer_fn fn, void *user,
                     double *hidden, ag_error *err)
{
    if (!m)
        return ag_error_set(err, AG_EINVAL, "forward pass: no model");
    int rc = check_input(m, ids, n, err);
    if (rc != AG_OK)
        return rc;
    if (precision == AG_PRECISION_F64)
        return forward_f64(m, ids, n, fn, user, hidden, err);
    if (precision == AG_PRECISION_F32)
        return forward_f32(m, ids, n, fn, user, hidden, err);
    return ag_error_set(err, AG_EINVAL, "forward pass: unknown precision %d", (int)precision);
}
