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
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernel/attention_kernel.h"
#include "kernel/vmath.h"
#include "model_int.h"
#include "kernel/sgemm.h"
#include "base/sized_int.h"

/* Fixed task sizes (docs/engine.md, "Threads"): they decide how work is
 * split, and never depend on the thread count. The own sgemm computes the
 * same bytes however a product is split; cblas_sgemm may not, so the split
 * of a projection is part of what it computes there (sgemm.h): lin_cols,
 * from the projection's shape alone. OpenBLAS packs the whole input once
 * per call, which at 128 columns cost 5 % of the pass
 * (bench/bench_forward_floor.c). */
#define LIN_COLS_MAX 1536 /* output columns of a projection per task, at most */
#define ROW_BLOCK 16            /* tokens per task of a row-wise step */
#define CONV_CHUNK ((size_t)1 << 16) /* weights converted per task */

/* Output columns per task of a projection with `out` of them: the fewest
 * tasks of at most LIN_COLS_MAX columns, and at least two (a pool of two
 * splits every projection), 64 columns apart. Each task's sgemm packs the
 * whole input again, so fewer tasks pack less (GPT-2 small: 8 tasks a
 * layer, two per projection; 10 at 1024 columns, 15 at 512). Fixed by the
 * shape alone. */
static size_t lin_cols(size_t out)
{
    size_t tasks = (out + LIN_COLS_MAX - 1) / LIN_COLS_MAX;
    if (tasks < 2)
        tasks = 2;
    size_t cols = ((out + tasks - 1) / tasks + 63) / 64 * 64;
    return cols ? cols : 64;
}

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

/* The double counterpart of agm_sgemm_bias (sgemm.h) for the f64 pass: the
 * product, then the bias. */
static void gemm_bias_f64(int trans, size_t m, size_t n, size_t k, const double *a, size_t lda,
                          const double *b, size_t ldb, const float *bias, double *c, size_t ldc,
                          double *scratch)
{
    (void)scratch;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, trans ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, 1.0, a, (int)lda, b, (int)ldb, 0.0, c, (int)ldc);
    for (size_t i = 0; bias && i < m; i++)
        for (size_t j = 0; j < n; j++)
            c[i * ldc + j] += (double)bias[j];
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

/* What a pass runs on: token ids, or the values of a tensor input (its
 * leading dimensions of size 1 dropped): ViT pixels dim = (C, H, W),
 * Whisper features dim = (n_mels, T), row-major. */
typedef struct {
    const int32_t *ids;
    const double *values;
    size_t dim[3];
    void *cross; /* an encoder–decoder pass's shared buffers (forward_tmpl.h
                    FN(xws): the encoder's output, cross-attention), or NULL */
} fwd_input;

#define R float
#define SFX _f32
#define GEMM_BIAS agm_sgemm_bias
#define RSQRT sqrtf
#define REXP expf
#define RTANH tanhf
#define RERF erff
#define CONV agm_to_float
#define IS_F64 0
#include "forward_tmpl.h"
#undef R
#undef SFX
#undef GEMM_BIAS
#undef RSQRT
#undef REXP
#undef RTANH
#undef RERF
#undef IS_F64
#undef CONV

#define R double
#define SFX _f64
#define GEMM_BIAS gemm_bias_f64
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
    if (g->positions == AG_POS_ROPE && g->rope.type == AG_ROPE_YARN)
        return ag_error_set(err, AG_ERANGE, "input of %zu tokens exceeds %d, the larger of the model's %s = %d and its yarn rope_scaling factor %g times original_max_position_embeddings = %d",
                            n, g->max_tokens, field, g->max_positions, g->rope.factor, g->rope.original_max_positions);
    if (g->max_tokens != g->max_positions)
        return ag_error_set(err, AG_ERANGE, "input of %zu tokens exceeds the %d positions of the model's %s = %d (position 0 is row %d)",
                            n, g->max_tokens, field, g->max_positions, g->position_offset);
    return ag_error_set(err, AG_ERANGE, "input of %zu tokens exceeds the model's %s = %d", n, field,
                        g->max_positions);
}

int ag_model_check_ids(const ag_model *m, const int32_t *ids, size_t n, ag_error *err)
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

static const char *input_name(ag_input_kind k)
{
    return k == AG_INPUT_PIXELS ? "pixels" : k == AG_INPUT_FEATURES ? "log-mel features" : "token ids";
}

/* The caller's options over the defaults (NULL: the defaults), read only as
 * far as its size says (ABI rule, attngeom/core.h). */
static int read_options(const ag_forward_options *opt, ag_forward_options *given, ag_error *err)
{
    *given = (ag_forward_options)AG_FORWARD_OPTIONS_DEFAULT;
    if (opt && AG_SIZED_READ(given, opt, ag_forward_options, err) != AG_OK)
        return AG_EINVAL;
    return AG_OK;
}

/* Either precision's pass on a checked input of n positions, options read. */
static int run_pass(const ag_model *m, const fwd_input *in, size_t n, const ag_forward_options *o,
                    ag_layer_fn fn, void *user, double *hidden, ag_error *err)
{
    if (o->precision == AG_PRECISION_F64)
        return forward_f64(m, in, n, o, fn, user, hidden, err);
    if (o->precision == AG_PRECISION_F32)
        return forward_f32(m, in, n, o, fn, user, hidden, err);
    return ag_error_set(err, AG_EINVAL, "forward pass: unknown precision %d", (int)o->precision);
}

int ag_model_forward_ex(const ag_model *m, const int32_t *ids, size_t n,
                        const ag_forward_options *opt, ag_layer_fn fn, void *user,
                        double *hidden, ag_error *err)
{
    ag_forward_options o;
    if (read_options(opt, &o, err) != AG_OK)
        return AG_EINVAL;
    if (!m)
        return ag_error_set(err, AG_EINVAL, "forward pass: no model");
    if (m->cfg.input_kind != AG_INPUT_TOKENS)
        return ag_error_set(err, AG_EINVAL, "forward pass: this model (model_type %s) takes %s, not token ids (ag_model_forward_values)",
                            m->cfg.model_type, input_name(m->cfg.input_kind));
    if (m->cross)
        return ag_error_set(err, AG_EINVAL, "forward pass: the decoder of %s needs the encoder's output (ag_seq2seq_forward)",
                            m->cfg.model_type);
    int rc = ag_model_check_ids(m, ids, n, err);
    if (rc != AG_OK)
        return rc;
    fwd_input in = {.ids = ids};
    return run_pass(m, &in, n, &o, fn, user, hidden, err);
}

size_t ag_layer_view_copy_heads(const ag_layer_view *v, const unsigned char *head_on,
                                double *dst)
{
    size_t nn = v->n * (v->n_kv ? v->n_kv : v->n), count = 0; // a cross view: n_kv keys
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

/* ---- models whose input is a tensor ------------------------------------- */

/* The shape without its leading 1s (down to `rank` dims) into in->dim. */
static int squeeze_shape(const ag_model *m, int ndim, const size_t *shape, fwd_input *in,
                         ag_error *err)
{
    int rank = m->cfg.input_kind == AG_INPUT_PIXELS ? 3 : 2, skip = 0;
    char got[128];
    while (ndim - skip > rank && shape[skip] == 1)
        skip++;
    agm_shape_str(got, sizeof got, ndim, shape);
    if (ndim - skip != rank)
        return ag_error_set(err, AG_ESHAPE, "%s input of shape %s: the model (model_type %s) takes %s",
                            input_name(m->cfg.input_kind), got, m->cfg.model_type,
                            rank == 3 ? "(num_channels, height, width)" : "(num_mel_bins, frames)");
    for (int i = 0; i < rank; i++)
        in->dim[i] = shape[skip + i];
    return AG_OK;
}

/* ViT: (num_channels, H, W). The configured image_size uses the stored
 * position table; any other size with at least one patch each way runs as
 * modeling_vit.py (005db820) ViTModel(interpolate_pos_encoding=True) does:
 * ViTPatchEmbeddings skips its size check, n = 1 + ⌊H/p_h⌋·⌊W/p_w⌋, and the
 * table is resized bicubically (forward_tmpl.h interp_positions), which
 * HF's reshape to √N × √N allows only for a square stored grid. */
static int pixel_positions(const ag_model_config *g, const size_t *dim, size_t *n, ag_error *err)
{
    if (dim[0] != (size_t)g->in_channels)
        return ag_error_set(err, AG_ESHAPE, "pixel_values of shape (%zu, %zu, %zu): the model takes (%d, %d, %d) (num_channels, image_size)",
                            dim[0], dim[1], dim[2], g->in_channels, g->image_height, g->image_width);
    size_t gh = dim[1] / (size_t)g->patch_height, gw = dim[2] / (size_t)g->patch_width;
    size_t gh0 = (size_t)(g->image_height / g->patch_height), gw0 = (size_t)(g->image_width / g->patch_width);
    size_t nreg = (size_t)g->n_registers, most = (size_t)AGM_CAP_DIM - 1 - nreg; /* checked at load: R < cap */
    if (gh == gh0 && gw == gw0) {
        *n = (size_t)g->max_positions + nreg;
        return AG_OK;
    }
    if (gh == 0 || gw == 0 || gh > most / gw)
        return ag_error_set(err, AG_ESHAPE, "pixel_values of shape (%zu, %zu, %zu): the image must hold 1..%zu patches of %dx%d",
                            dim[0], dim[1], dim[2], most, g->patch_height, g->patch_width);
    if (gh0 != gw0)
        return ag_error_set(err, AG_ESHAPE, "pixel_values of shape (%zu, %zu, %zu): interpolating the position embeddings needs a square patch grid (Hugging Face reshapes them to sqrt(N) x sqrt(N)); this model's is %zux%zu, so it takes (%d, %d, %d)",
                            dim[0], dim[1], dim[2], gh0, gw0, g->in_channels, g->image_height, g->image_width);
    *n = 1 + nreg + gh * gw;
    return AG_OK;
}

/* Whisper: num_mel_bins rows, 1..2·max_source_positions frames; n = ⌈T/2⌉
 * (conv2: (T + 2 − 3) / 2 + 1). HF itself takes exactly 2·max_source_positions. */
static int feature_positions(const ag_model_config *g, const size_t *dim, size_t *n, ag_error *err)
{
    if (dim[0] != (size_t)g->in_channels)
        return ag_error_set(err, AG_ESHAPE, "input_features of shape (%zu, %zu): the model takes %d mel bins (num_mel_bins), not %zu",
                            dim[0], dim[1], g->in_channels, dim[0]);
    if (dim[1] == 0 || dim[1] > (size_t)g->max_frames)
        return ag_error_set(err, AG_ESHAPE, "input_features of shape (%zu, %zu): the frames must be 1..%d (2 * max_source_positions = 2 * %d)",
                            dim[0], dim[1], g->max_frames, g->max_positions);
    *n = (dim[1] + 1) / 2;
    return AG_OK;
}

static int input_positions(const ag_model *m, int ndim, const size_t *shape, fwd_input *in,
                           size_t *n, ag_error *err)
{
    if (!m || !shape || !n || ndim < 1 || ndim > AG_MAX_DIMS)
        return ag_error_set(err, AG_EINVAL, "input shape: missing argument or a rank outside 1..%d", AG_MAX_DIMS);
    if (m->cfg.input_kind == AG_INPUT_TOKENS)
        return ag_error_set(err, AG_EINVAL, "forward pass: this model (model_type %s) takes token ids (ag_model_forward)",
                            m->cfg.model_type);
    int rc = squeeze_shape(m, ndim, shape, in, err);
    if (rc != AG_OK)
        return rc;
    return m->cfg.input_kind == AG_INPUT_PIXELS ? pixel_positions(&m->cfg, in->dim, n, err)
                                                : feature_positions(&m->cfg, in->dim, n, err);
}

int ag_model_input_positions(const ag_model *m, int ndim, const size_t *shape, size_t *n,
                             ag_error *err)
{
    fwd_input in = {0};
    return input_positions(m, ndim, shape, &in, n, err);
}

/* Every value finite, and within float32 for the f32 pass (HF's
 * pixel_values.to(float32) would make it Inf). */
static int check_values(const fwd_input *in, size_t cnt, int f32, ag_error *err)
{
    for (size_t i = 0; i < cnt; i++) {
        double v = in->values[i];
        if (!isfinite(v) || (f32 && fabs(v) > FLT_MAX))
            return ag_error_set(err, AG_ENONFINITE, "input value %zu (%g) is %s", i, v,
                                isfinite(v) ? "beyond float32 (try --precision f64)" : "not finite");
    }
    return AG_OK;
}

/* A tensor input checked against m (shape, finite values, float32 range
 * for the f32 pass) into *in, its positions into *n. */
static int values_input(const ag_model *m, const double *input, int ndim, const size_t *shape,
                        int f32, fwd_input *in, size_t *n, ag_error *err)
{
    *in = (fwd_input){.values = input};
    int rc = input_positions(m, ndim, shape, in, n, err);
    if (rc != AG_OK)
        return rc;
    if (!input)
        return ag_error_set(err, AG_EINVAL, "forward pass: missing input values");
    size_t cnt = in->dim[0] * in->dim[1] * (m->cfg.input_kind == AG_INPUT_PIXELS ? in->dim[2] : 1);
    return check_values(in, cnt, f32, err);
}

int ag_model_forward_values(const ag_model *m, const double *input, int ndim,
                            const size_t *shape, const ag_forward_options *opt,
                            ag_layer_fn fn, void *user, double *hidden, ag_error *err)
{
    ag_forward_options o;
    if (read_options(opt, &o, err) != AG_OK)
        return AG_EINVAL;
    fwd_input in = {0};
    size_t n = 0;
    int rc = values_input(m, input, ndim, shape, o.precision == AG_PRECISION_F32, &in, &n, err);
    return rc != AG_OK ? rc : run_pass(m, &in, n, &o, fn, user, hidden, err);
}

/* ---- encoder–decoder models ---------------------------------------------- */

/* modeling_t5.py (6b8b757d) T5Attention._relative_position_bucket: half the
 * buckets (each direction's, when bidirectional) exact for |rel| <
 * max_exact, the rest logarithmic up to max_distance; HF forms the
 * logarithm in float32 (torch.log of relative_position.float(), divided by
 * math.log(...) taken to float32, times the bucket count) and truncates. */
int agm_t5_bucket(int rel, int bidirectional, int num_buckets, int max_distance)
{
    int ret = 0, r;
    if (bidirectional) {
        num_buckets /= 2;
        ret = rel > 0 ? num_buckets : 0;
        r = rel < 0 ? -rel : rel;
    } else
        r = rel < 0 ? -rel : 0; // -min(rel, 0): keys after the query share bucket 0
    int max_exact = num_buckets / 2;
    if (r < max_exact)
        return ret + r;
    float v = logf((float)r / (float)max_exact) / (float)log((double)max_distance / max_exact) *
              (float)(num_buckets - max_exact);
    int large = max_exact + (int)v;
    return ret + (large < num_buckets - 1 ? large : num_buckets - 1);
}

void agm_t5_bias_diagonals(const ag_model *m, size_t n, int h, double *t)
{
    size_t H = (size_t)m->cfg.n_head;
    for (size_t k = 0; k + 1 < 2 * n; k++) {
        int b = agm_t5_bucket((int)k - (int)(n - 1), !m->cfg.causal, m->rel_buckets,
                              m->rel_max_distance);
        t[k] = agm_at(&m->rel_bias, (size_t)b * H + (size_t)h);
    }
}

/* rc with err's message prefixed by which sequence failed. */
static int which_sequence(int rc, const char *which, ag_error *err)
{
    if (rc != AG_OK && err) {
        char why[sizeof err->message];
        memcpy(why, err->message, sizeof why);
        ag_error_set(err, rc, "%s: %s", which, why);
    }
    return rc;
}

/* Options read, both stacks there, the source (ids, or for a tensor
 * encoder its values) and the target ids checked; block_fn (one stack's
 * stream) refused. src NULL: a tensor source (*src_in set). */
static int seq2seq_prepare(const ag_seq2seq *s, const int32_t *src, size_t ns, const int32_t *tgt,
                           size_t nt, const ag_forward_options *opt, ag_forward_options *o,
                           ag_error *err)
{
    const ag_model *enc = ag_seq2seq_stack(s, AG_STACK_ENCODER), *dec = ag_seq2seq_stack(s, AG_STACK_DECODER);
    if (read_options(opt, o, err) != AG_OK)
        return AG_EINVAL;
    if (!enc || !dec)
        return ag_error_set(err, AG_EINVAL, "forward pass: no model");
    if (o->block_fn)
        return ag_error_set(err, AG_EINVAL, "forward pass: block_fn is not supported for an encoder-decoder pass");
    if (o->precision != AG_PRECISION_F32 && o->precision != AG_PRECISION_F64)
        return ag_error_set(err, AG_EINVAL, "forward pass: unknown precision %d", (int)o->precision);
    int tensor = enc->cfg.input_kind != AG_INPUT_TOKENS;
    if (tensor != !src)
        return ag_error_set(err, AG_EINVAL, "forward pass: the encoder of %s takes %s (%s)", enc->cfg.model_type,
                            input_name(enc->cfg.input_kind),
                            tensor ? "ag_seq2seq_forward_values" : "ag_seq2seq_forward");
    int rc = src ? which_sequence(ag_model_check_ids(enc, src, ns, err), "source", err) : AG_OK;
    return rc != AG_OK ? rc : which_sequence(ag_model_check_ids(dec, tgt, nt, err), "target", err);
}

/* Either precision's encoder–decoder pass, everything checked. */
static int run_seq2seq(const ag_seq2seq *s, const fwd_input *in, size_t ns, const int32_t *tgt,
                       size_t nt, const ag_forward_options *o, ag_layer_fn fn, void *user,
                       double *eh, double *dh, ag_error *err)
{
    const ag_model *enc = ag_seq2seq_stack(s, AG_STACK_ENCODER), *dec = ag_seq2seq_stack(s, AG_STACK_DECODER);
    if (o->precision == AG_PRECISION_F64)
        return seq2seq_f64(enc, dec, in, ns, tgt, nt, o, fn, user, eh, dh, err);
    return seq2seq_f32(enc, dec, in, ns, tgt, nt, o, fn, user, eh, dh, err);
}

int ag_seq2seq_forward(const ag_seq2seq *s, const int32_t *src, size_t n_src, const int32_t *tgt,
                       size_t n_tgt, const ag_forward_options *opt, ag_layer_fn fn, void *user,
                       double *enc_hidden, double *dec_hidden, ag_error *err)
{
    ag_forward_options o;
    if (!src)
        return ag_error_set(err, AG_EINVAL, "forward pass: missing source token ids");
    int rc = seq2seq_prepare(s, src, n_src, tgt, n_tgt, opt, &o, err);
    fwd_input in = {.ids = src};
    return rc != AG_OK ? rc : run_seq2seq(s, &in, n_src, tgt, n_tgt, &o, fn, user, enc_hidden, dec_hidden, err);
}

int ag_seq2seq_forward_values(const ag_seq2seq *s, const double *input, int ndim, const size_t *shape,
                              const int32_t *tgt, size_t n_tgt, const ag_forward_options *opt,
                              ag_layer_fn fn, void *user, double *enc_hidden, double *dec_hidden,
                              ag_error *err)
{
    ag_forward_options o;
    fwd_input in;
    size_t ns = 0;
    int rc = seq2seq_prepare(s, NULL, 0, tgt, n_tgt, opt, &o, err);
    if (rc == AG_OK)
        rc = which_sequence(values_input(ag_seq2seq_stack(s, AG_STACK_ENCODER), input, ndim, shape,
                                         o.precision == AG_PRECISION_F32, &in, &ns, err),
                            "source", err);
    return rc != AG_OK ? rc : run_seq2seq(s, &in, ns, tgt, n_tgt, &o, fn, user, enc_hidden, dec_hidden, err);
}
