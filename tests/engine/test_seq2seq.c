/* test_seq2seq.c — encoder–decoder passes (ag_seq2seq_forward) on the
 * random-weight folders of tests/data/models/arch/ (t5: v1.0 ReLU, tied,
 * 8 buckets over distance 20 so that short inputs reach the logarithmic
 * buckets; t5-v1_1: gated-gelu, untied, BF16, num_decoder_layers 3 != 2;
 * bart: post-LN, scale_embedding, positions offset by 2, F16;
 * whisper-seq2seq: the encoder on log-mel features and the decoder), compared
 * with the float64 references of tests/ref/hf_forward.py (seq2seq_forward:
 * t5_stack, bart_stack, whisper_decoder with tests/ref/encoders_ref.py's
 * encoder: ports of modeling_t5.py, modeling_bart.py, modeling_whisper.py) in
 * tests/data/archref/<name>/:
 *   f64: |attn − ref| <= 1e-9,  |hidden − ref| <= 1e-9 · max(1, |ref|)
 *   f32: |attn − ref| <= 1e-5,  |hidden − ref| <= 1e-5 · max(1, |ref|)
 * for the encoder's and the decoder's self-attention, the cross-attention
 * and both stacks' hidden states; and a closed form: with W_Q = W_K = 0
 * every self-attention row is the softmax of its relative-position bias
 * (buckets derived here by hand), every cross-attention row uniform. Run
 * from the repository root. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attngeom/core.h"
#include "attngeom/io.h"
#include "attngeom/model.h"
#include "../util/test_io_util.h"
#include "../util/test_model_util.h"

#define ARCH_DIR "tests/data/models/arch"
#define REF_DIR "tests/data/archref"

enum { ENC, DEC, CROSS, EH, DH, NREF };
static const char *ref_names[NREF] = {"encoder_attentions", "decoder_attentions", "cross_attentions",
                                      "encoder_hidden_states", "decoder_hidden_states"};

typedef struct {
    ag_array ref[NREF];
    int32_t *src, *tgt;
    size_t ns, nt;
    ag_array feat; /* whisper: the source, input_features (n_mels, T); else empty */
} s2s_ref;

static void ref_load(const char *name, s2s_ref *r)
{
    char p[512];
    ag_error err = {0};
    for (int k = 0; k < NREF; k++) {
        snprintf(p, sizeof p, REF_DIR "/%s/%s.npy", name, ref_names[k]);
        cr_assert_eq(ag_npy_read(p, &r->ref[k], &err), AG_OK, "%s", err.message);
    }
    snprintf(p, sizeof p, REF_DIR "/%s/ids.json", name);
    r->tgt = read_ids_key(p, "tgt", &r->nt);
    if (strncmp(name, "whisper", 7)) {
        r->src = read_ids_key(p, "src", &r->ns);
        return;
    }
    snprintf(p, sizeof p, REF_DIR "/%s/features.npy", name);
    cr_assert_eq(ag_npy_read(p, &r->feat, &err), AG_OK, "%s", err.message);
    r->ns = r->ref[ENC].shape[2];
}

static void ref_free(s2s_ref *r)
{
    for (int k = 0; k < NREF; k++)
        ag_array_free(&r->ref[k]);
    ag_array_free(&r->feat);
    free(r->src);
    free(r->tgt);
}

/* What the callback saw: the largest error per kind, the order of views. */
typedef struct {
    const s2s_ref *r;
    double err[3];
    int seen[3];
    int last_stack;
} s2s_cmp;

static int s2s_cmp_layer(const ag_layer_view *v, void *user)
{
    s2s_cmp *c = user;
    int kind = v->stack == AG_STACK_ENCODER ? ENC : v->stack == AG_STACK_DECODER ? DEC : CROSS;
    cr_assert(v->stack >= AG_STACK_ENCODER && v->stack <= AG_STACK_CROSS, "stack %d", v->stack);
    /* the encoder's layers, then per decoder layer its self- then its cross-attention */
    cr_assert(kind != ENC || c->seen[DEC] == 0, "an encoder layer after the decoder's");
    cr_assert(kind != CROSS || c->last_stack == AG_STACK_DECODER, "cross-attention not after self-attention");
    cr_assert_eq(v->layer, c->seen[kind], "layers out of order");
    const ag_array *a = &c->r->ref[kind];
    size_t nk = kind == CROSS ? c->r->ns : v->n;
    cr_assert_eq(v->n, kind == ENC ? c->r->ns : c->r->nt);
    cr_assert_eq(v->n_kv, nk, "n_kv %zu, expected %zu", v->n_kv, nk);
    cr_assert_eq(a->shape[3], nk);
    cr_assert_not_null(v->x_kv);
    size_t cnt = (size_t)v->n_head * v->n * nk;
    const double *ref = a->data + (size_t)v->layer * cnt;
    for (size_t i = 0; i < cnt; i++) {
        double e = fabs(v->attn[i] - ref[i]);
        if (!(e <= c->err[kind]))
            c->err[kind] = e;
        if (ref[i] == 0.0) // the decoder's causal mask: exactly 0 on both sides
            cr_assert_eq(v->attn[i], 0.0, "masked entry %zu of layer %d is %g", i, v->layer, v->attn[i]);
    }
    if (kind == CROSS) { // every head copied, (H, n, n_kv)
        double *all = malloc((cnt + 1) * sizeof *all);
        all[cnt] = 7.0; // sentinel: nothing past the copy
        cr_assert_eq(ag_layer_view_copy_heads(v, NULL, all), (size_t)v->n_head);
        cr_assert_eq(memcmp(all, v->attn, cnt * sizeof *all), 0);
        cr_assert_eq(all[cnt], 7.0);
        free(all);
    }
    c->seen[kind]++;
    c->last_stack = v->stack;
    return 0;
}

static double hidden_err(const double *h, const ag_array *ref)
{
    double e = 0;
    for (size_t i = 0; i < ag_array_size(ref); i++) {
        double d = fabs(h[i] - ref->data[i]) / fmax(1.0, fabs(ref->data[i]));
        e = d <= e ? e : d;
    }
    return e;
}

static void check_precision(const ag_seq2seq *s, const char *name, const s2s_ref *r, ag_precision prec,
                            double tol)
{
    const char *pn = prec == AG_PRECISION_F64 ? "f64" : "f32";
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.precision = prec;
    ag_error err = {0};
    double *eh = calloc(ag_array_size(&r->ref[EH]), sizeof *eh);
    double *dh = calloc(ag_array_size(&r->ref[DH]), sizeof *dh);
    s2s_cmp c = {.r = r};
    int rc = r->src ? ag_seq2seq_forward(s, r->src, r->ns, r->tgt, r->nt, &o, s2s_cmp_layer, &c, eh, dh, &err)
                    : ag_seq2seq_forward_values(s, r->feat.data, r->feat.ndim, r->feat.shape, r->tgt, r->nt, &o,
                                                s2s_cmp_layer, &c, eh, dh, &err);
    cr_assert_eq(rc, AG_OK, "%s %s: %s", name, pn, err.message);
    for (int k = ENC; k <= CROSS; k++)
        cr_assert_eq((size_t)c.seen[k], r->ref[k].shape[0], "%s %s: %d layers of %s, reference %zu", name, pn,
                     c.seen[k], ref_names[k], r->ref[k].shape[0]);
    double e_eh = hidden_err(eh, &r->ref[EH]), e_dh = hidden_err(dh, &r->ref[DH]);
    fprintf(stderr, "[seq2seq] %-8s %s: enc %.3g dec %.3g cross %.3g, hidden enc %.3g dec %.3g\n", name, pn,
            c.err[ENC], c.err[DEC], c.err[CROSS], e_eh, e_dh);
    for (int k = ENC; k <= CROSS; k++)
        cr_expect_leq(c.err[k], tol, "%s %s: %s error %g", name, pn, ref_names[k], c.err[k]);
    cr_expect_leq(e_eh, tol, "%s %s: encoder hidden error %g", name, pn, e_eh);
    cr_expect_leq(e_dh, tol, "%s %s: decoder hidden error %g", name, pn, e_dh);
    free(eh);
    free(dh);
}

static void check_folder(const char *name)
{
    char dir[512];
    s2s_ref r = {0};
    ref_load(name, &r);
    snprintf(dir, sizeof dir, ARCH_DIR "/%s", name);
    ag_seq2seq *s = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_seq2seq_load(dir, &s, &err), AG_OK, "%s: %s", name, err.message);
    const ag_model_config *ge = ag_model_get_config(ag_seq2seq_stack(s, AG_STACK_ENCODER));
    const ag_model_config *gd = ag_model_get_config(ag_seq2seq_stack(s, AG_STACK_DECODER));
    cr_assert_eq((size_t)ge->n_layer + 1, r.ref[EH].shape[0]);
    cr_assert_eq((size_t)gd->n_layer + 1, r.ref[DH].shape[0]);
    if (!strcmp(name, "whisper-seq2seq")) {
        cr_assert_eq(ge->arch, AG_ARCH_WHISPER);
        cr_assert_eq(ge->input_kind, AG_INPUT_FEATURES);
        cr_assert_eq(gd->input_kind, AG_INPUT_TOKENS);
        cr_assert_eq(gd->max_tokens, 16, "max_target_positions");
    } else if (!strcmp(name, "bart")) {
        cr_assert_eq(ge->arch, AG_ARCH_BART);
        cr_assert_eq(ge->residual, AG_RESIDUAL_POST);
        cr_assert_eq(ge->embed_scale, 4.0, "scale_embedding: sqrt(d_model = 16)");
        cr_assert_eq(ge->position_offset, 2);
    } else {
        cr_assert_eq(ge->arch, AG_ARCH_T5);
        cr_assert_eq(ge->positions, AG_POS_RELATIVE);
        cr_assert_eq(ge->attn_scale, 1.0, "T5 scores are not scaled");
    }
    check_precision(s, name, &r, AG_PRECISION_F64, 1e-9);
    check_precision(s, name, &r, AG_PRECISION_F32, 1e-5);
    ag_seq2seq_free(s);
    ref_free(&r);
}

Test(seq2seq, t5) { check_folder("t5"); }
Test(seq2seq, t5_v1_1) { check_folder("t5-v1_1"); }
Test(seq2seq, bart) { check_folder("bart"); }
Test(seq2seq, whisper) { check_folder("whisper-seq2seq"); }

/* Whisper's folder keeps loading as its encoder alone (ag_model_load, the
 * CLI); its encoder–decoder pass takes features, not ids, and the other way
 * round for a token encoder. */
Test(seq2seq, whisper_inputs)
{
    ag_model *m = NULL;
    ag_seq2seq *s = NULL, *t = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(ARCH_DIR "/whisper-seq2seq", &m, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_model_input_kind(m), AG_INPUT_FEATURES);
    cr_assert_eq(ag_model_dir_is_seq2seq(ARCH_DIR "/whisper-seq2seq"), 0);
    ag_model_free(m);
    cr_assert_eq(ag_seq2seq_load(ARCH_DIR "/whisper-seq2seq", &s, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_seq2seq_load(ARCH_DIR "/t5", &t, &err), AG_OK, "%s", err.message);
    int32_t ids[2] = {45, 3};
    double feat[8 * 4] = {0};
    size_t shape[2] = {8, 4}, bad_shape[2] = {7, 4};
    cr_assert_eq(ag_seq2seq_forward(s, ids, 2, ids, 2, NULL, NULL, NULL, NULL, NULL, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "ag_seq2seq_forward_values"), "%s", err.message);
    cr_assert_eq(ag_seq2seq_forward_values(t, feat, 2, shape, ids, 2, NULL, NULL, NULL, NULL, NULL, &err), AG_EINVAL);
    cr_assert_eq(ag_seq2seq_forward_values(s, feat, 2, bad_shape, ids, 2, NULL, NULL, NULL, NULL, NULL, &err),
                 AG_ESHAPE);
    cr_assert(strstr(err.message, "source: "), "%s", err.message);
    cr_assert_eq(ag_seq2seq_forward_values(s, feat, 2, shape, ids, 2, NULL, NULL, NULL, NULL, NULL, &err), AG_OK,
                 "%s", err.message);
    ag_seq2seq_free(s);
    ag_seq2seq_free(t);
}

/* The encoder alone (T5EncoderModel's pass) through ag_model_forward: the
 * same attention and hidden states as in the encoder–decoder pass. */
static int enc_only_layer(const ag_layer_view *v, void *user)
{
    s2s_cmp *c = user;
    cr_assert_eq(v->stack, AG_STACK_ENCODER);
    size_t cnt = (size_t)v->n_head * v->n * v->n;
    const double *ref = c->r->ref[ENC].data + (size_t)v->layer * cnt;
    for (size_t i = 0; i < cnt; i++)
        c->err[ENC] = fmax(c->err[ENC], fabs(v->attn[i] - ref[i]));
    c->seen[ENC]++;
    return 0;
}

Test(seq2seq, encoder_alone)
{
    s2s_ref r = {0};
    ref_load("t5", &r);
    ag_seq2seq *s = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_seq2seq_load(ARCH_DIR "/t5", &s, &err), AG_OK, "%s", err.message);
    double *eh = calloc(ag_array_size(&r.ref[EH]), sizeof *eh);
    s2s_cmp c = {.r = &r};
    int rc = ag_model_forward(ag_seq2seq_stack(s, AG_STACK_ENCODER), r.src, r.ns, AG_PRECISION_F64,
                              enc_only_layer, &c, eh, &err);
    cr_assert_eq(rc, AG_OK, "%s", err.message);
    cr_assert_eq((size_t)c.seen[ENC], r.ref[ENC].shape[0]);
    cr_expect_leq(c.err[ENC], 1e-9);
    cr_expect_leq(hidden_err(eh, &r.ref[EH]), 1e-9);
    /* the decoder needs the encoder's output */
    rc = ag_model_forward(ag_seq2seq_stack(s, AG_STACK_DECODER), r.tgt, r.nt, AG_PRECISION_F64, NULL, NULL,
                          NULL, &err);
    cr_assert_eq(rc, AG_EINVAL);
    cr_assert(strstr(err.message, "ag_seq2seq_forward"), "%s", err.message);
    cr_assert_null(ag_seq2seq_stack(s, AG_STACK_CROSS));
    free(eh);
    ag_seq2seq_free(s);
    ref_free(&r);
}

Test(seq2seq, refusals)
{
    expect_load_error(ARCH_DIR "/t5", AG_EUNSUPPORTED, "encoder-decoder");
    cr_assert_eq(ag_model_dir_is_seq2seq(ARCH_DIR "/t5"), 1);
    cr_assert_eq(ag_model_dir_is_seq2seq(ARCH_DIR "/gptj"), 0);
    cr_assert_eq(ag_model_dir_is_seq2seq("/nonexistent"), 0);
    ag_seq2seq *s = NULL;
    ag_error err = {0};
    cr_assert_neq(ag_seq2seq_load(ARCH_DIR "/gptj", &s, &err), AG_OK);
    cr_assert_null(s);
    cr_assert_eq(ag_seq2seq_load(ARCH_DIR "/t5", &s, &err), AG_OK, "%s", err.message);
    int32_t ok[2] = {3, 4}, bad[2] = {3, 4000};
    cr_assert_eq(ag_seq2seq_forward(s, ok, 2, bad, 2, NULL, NULL, NULL, NULL, NULL, &err), AG_ERANGE);
    cr_assert(strstr(err.message, "target: "), "%s", err.message);
    cr_assert_eq(ag_seq2seq_forward(s, ok, 0, ok, 2, NULL, NULL, NULL, NULL, NULL, &err), AG_EINVAL);
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.hidden_fn = (ag_hidden_fn)1; // never called: refused first
    cr_assert_eq(ag_seq2seq_forward(s, ok, 2, ok, 2, &o, NULL, NULL, NULL, NULL, &err), AG_EINVAL);
    ag_seq2seq_free(s);
}

/* ---- closed form: Q = K = 0 ---------------------------------------------- */

/* The t5 folder (8 buckets, max distance 20) by hand, from
 * _relative_position_bucket. Encoder (bidirectional): 4 buckets a side,
 * max_exact 2; |r| >= 2 gets 2 + ⌊ln(|r|/2)/ln 10 · 2⌋ capped at 3, which
 * reaches 3 at |r|/2 >= √10, |r| >= 7; keys after the query add 4.
 * Decoder (unidirectional, r = i − j >= 0): 8 buckets, max_exact 4; r >= 4
 * gets 4 + ⌊ln(r/4)/ln 5 · 4⌋: r = 4, 5 -> 4 (ln 1.25/ln 5·4 = 0.55),
 * r = 6, 7, 8 -> 5 (ln 1.5/ln 5·4 = 1.008, ln 2/ln 5·4 = 1.72). */
static int enc_bucket(int rel)
{
    int r = abs(rel), b = r < 2 ? r : r < 7 ? 2 : 3;
    return b + (rel > 0 ? 4 : 0);
}

static int dec_bucket(int rel)
{
    static const int by_r[9] = {0, 1, 2, 3, 4, 4, 5, 5, 5};
    return by_r[rel < 0 ? -rel : 0];
}

/* File `name` of the t5 folder copied into dir. */
static void copy_t5_file(const char *dir, const char *name)
{
    char src[600], dst[600], *buf = NULL;
    size_t len = 0;
    ag_error err = {0};
    snprintf(src, sizeof src, ARCH_DIR "/t5/%s", name);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    cr_assert_eq(ag_read_file(src, (size_t)1 << 24, &buf, &len, &err), AG_OK, "%s", err.message);
    FILE *f = fopen(dst, "wb");
    cr_assert_not_null(f, "%s", dst);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
    free(buf);
}

/* A copy of the t5 folder with every q and k weight (self and cross) 0. */
static const char *zero_qk_folder(void)
{
    const char *dir = tio_path("t5-qk0");
    cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
    copy_t5_file(dir, "config.json");
    copy_t5_file(dir, "model.safetensors");
    char st_path[600];
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    ag_safetensors *st = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_st_open(st_path, &st, &err), AG_OK, "%s", err.message);
    FILE *f = fopen(st_path, "r+b");
    cr_assert_not_null(f);
    int zeroed = 0;
    for (size_t i = 0; i < ag_st_count(st); i++) {
        const ag_tensor_info *t = ag_st_info(st, i);
        size_t len = strlen(t->name);
        if (len < 9 || (strcmp(t->name + len - 9, ".q.weight") && strcmp(t->name + len - 9, ".k.weight")))
            continue;
        char *zero = calloc(1, t->nbytes);
        cr_assert_eq(fseek(f, (long)t->offset, SEEK_SET), 0);
        cr_assert_eq(fwrite(zero, 1, t->nbytes, f), t->nbytes);
        free(zero);
        zeroed++;
    }
    cr_assert_eq(zeroed, 2 * 2 + 2 * 2 * 2, "q and k of 2 encoder and 2 decoder layers (self, cross)");
    fclose(f);
    ag_st_close(st);
    return dir;
}

/* The encoder's and the decoder's bias tables ((8, H) each) of the t5
 * folder dir: block 0's relative_attention_bias, as the file stores them. */
static void read_bias_tables(const char *dir, ag_array table[2])
{
    char p[600];
    ag_safetensors *st = NULL;
    ag_error err = {0};
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    cr_assert_eq(ag_st_open(p, &st, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_st_read(st, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", &table[0], &err),
                 AG_OK, "%s", err.message);
    cr_assert_eq(ag_st_read(st, "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", &table[1], &err),
                 AG_OK, "%s", err.message);
    ag_st_close(st);
}

/* A source and a target long enough to reach the logarithmic buckets. */
static const int32_t LONG_SRC[12] = {5, 9, 13, 7, 22, 40, 3, 17, 8, 30, 11, 2},
                     LONG_TGT[9] = {0, 4, 19, 6, 33, 12, 45, 10, 2};

typedef struct {
    ag_array table[2]; /* (8, H) the encoder's and the decoder's bias tables */
    double worst;
    int views;
} closed_cmp;

/* Row i of head h: softmax over the visible keys of table[bucket(j − i), h]. */
static int closed_layer(const ag_layer_view *v, void *user)
{
    closed_cmp *c = user;
    int dec = v->stack == AG_STACK_DECODER;
    size_t H = (size_t)v->n_head, nk = v->n_kv;
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < v->n; i++) {
            double e[16] = {0}, sum = 0;
            size_t hi = dec ? i + 1 : nk;
            for (size_t j = 0; j < hi; j++) {
                int rel = (int)j - (int)i;
                double b = v->stack == AG_STACK_CROSS ? 0.0
                                                      : c->table[dec].data[(size_t)(dec ? dec_bucket(rel) : enc_bucket(rel)) * H + h];
                sum += e[j] = exp(b);
            }
            for (size_t j = 0; j < nk; j++)
                c->worst = fmax(c->worst, fabs(v->attn[(h * v->n + i) * nk + j] - e[j] / sum));
        }
    c->views++;
    return 0;
}

Test(seq2seq, zero_qk_is_softmax_of_bucket_bias)
{
    const char *dir = zero_qk_folder();
    closed_cmp c = {0};
    ag_error err = {0};
    read_bias_tables(dir, c.table);
    ag_seq2seq *s = NULL;
    cr_assert_eq(ag_seq2seq_load(dir, &s, &err), AG_OK, "%s", err.message);
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    for (int prec = 0; prec < 2; prec++) {
        o.precision = prec ? AG_PRECISION_F64 : AG_PRECISION_F32;
        c.worst = 0;
        c.views = 0;
        cr_assert_eq(ag_seq2seq_forward(s, LONG_SRC, 12, LONG_TGT, 9, &o, closed_layer, &c, NULL, NULL, &err), AG_OK, "%s",
                     err.message);
        cr_assert_eq(c.views, 2 + 2 * 2);
        cr_expect_leq(c.worst, prec ? 1e-15 : 1e-6, "%s: max deviation %g from softmax(bias)",
                      prec ? "f64" : "f32", c.worst);
    }
    ag_seq2seq_free(s);
    ag_array_free(&c.table[0]);
    ag_array_free(&c.table[1]);
}

/* ---- q and k of every view: the scores' own rows -------------------------- */

typedef struct {
    const ag_array *table; /* [2] the t5 bias tables (8, H), or NULL (bart) */
    double worst;          /* max |s − q·k − bias| / max(1, |s|) over allowed entries */
    size_t checked;
    int views, no_qk;
} qk_cmp;

/* Every allowed score of the view against q_i·k_j (q pre-scaled: BART;
 * no scale: T5) plus T5's bucket bias in self-attention (by hand, as
 * closed_layer); a cross view's k rows are the n_src source keys. */
static int qk_layer(const ag_layer_view *v, void *user)
{
    qk_cmp *c = user;
    c->views++;
    if (!v->q || !v->k || !v->scores || v->head_dim <= 0) {
        c->no_qk++;
        return 0;
    }
    int dec = v->stack == AG_STACK_DECODER, cross = v->stack == AG_STACK_CROSS;
    size_t H = (size_t)v->n_head, n = v->n, nk = v->n_kv, hd = (size_t)v->head_dim;
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < nk; j++) {
                double s = v->scores[(h * n + i) * nk + j], dot = 0;
                if (s == -INFINITY)
                    continue;
                for (size_t t = 0; t < hd; t++)
                    dot += v->q[(h * n + i) * hd + t] * v->k[(h * nk + j) * hd + t];
                int rel = (int)j - (int)i;
                double b = !c->table || cross ? 0.0
                           : c->table[dec].data[(size_t)(dec ? dec_bucket(rel) : enc_bucket(rel)) * H + h];
                c->worst = fmax(c->worst, fabs(s - dot - b) / fmax(1, fabs(s)));
                c->checked++;
            }
    return 0;
}

static void check_qk(const char *name, ag_precision prec, int want_qk, double tol)
{
    char dir[512];
    snprintf(dir, sizeof dir, ARCH_DIR "/%s", name);
    ag_error err = {0};
    ag_array table[2] = {{0}};
    int t5 = !strcmp(name, "t5");
    if (t5)
        read_bias_tables(dir, table);
    ag_seq2seq *s = NULL;
    cr_assert_eq(ag_seq2seq_load(dir, &s, &err), AG_OK, "%s", err.message);
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.precision = prec;
    o.want_scores = 1;
    o.want_qk = want_qk;
    qk_cmp c = {.table = t5 ? table : NULL};
    cr_assert_eq(ag_seq2seq_forward(s, LONG_SRC, 12, LONG_TGT, 9, &o, qk_layer, &c, NULL, NULL, &err), AG_OK, "%s",
                 err.message);
    int L_enc = ag_model_get_config(ag_seq2seq_stack(s, AG_STACK_ENCODER))->n_layer,
        L_dec = ag_model_get_config(ag_seq2seq_stack(s, AG_STACK_DECODER))->n_layer;
    cr_assert_eq(c.views, L_enc + 2 * L_dec);
    cr_assert_eq(c.no_qk, want_qk ? 0 : c.views, "%s: q and k exactly when want_qk", name);
    if (want_qk) {
        cr_assert_gt(c.checked, (size_t)(L_enc * 144 + L_dec * (45 + 108)), "%s: allowed entries", name);
        cr_expect_leq(c.worst, tol, "%s (%s): a score differs from q·k + bias by %g", name,
                      prec == AG_PRECISION_F64 ? "f64" : "f32", c.worst);
    }
    ag_seq2seq_free(s);
    ag_array_free(&table[0]);
    ag_array_free(&table[1]);
}

/* T5: s = q·k + the bucket bias (no scale) in both self-attentions, q·k
 * across; BART: s = q·k everywhere (q·scaling in q already). Without
 * want_qk no view has them. */
Test(seq2seq, view_qk_reproduce_scores)
{
    const char *names[] = {"t5", "bart"};
    for (int i = 0; i < 2; i++) {
        check_qk(names[i], AG_PRECISION_F64, 1, 1e-13);
        check_qk(names[i], AG_PRECISION_F32, 1, 1e-5); /* float products of hd terms */
        check_qk(names[i], AG_PRECISION_F64, 0, 0);
    }
}

/* ---- scores: each row's softmax is its attention ------------------------- */

typedef struct {
    double worst;
    int views, inf_hidden;
} scores_cmp;

/* attn[h][i] = softmax(scores[h][i]) for every view, −inf exactly where
 * the decoder's causal mask hides a key (and nowhere else). */
static int scores_layer(const ag_layer_view *v, void *user)
{
    scores_cmp *c = user;
    cr_assert_not_null(v->scores, "stack %d layer %d: no scores", v->stack, v->layer);
    size_t nk = v->n_kv;
    for (size_t r = 0; r < (size_t)v->n_head * v->n; r++) {
        const double *s = v->scores + r * nk, *a = v->attn + r * nk;
        size_t i = r % v->n;
        double mx = -INFINITY, sum = 0;
        for (size_t j = 0; j < nk; j++) {
            int hidden = v->stack == AG_STACK_DECODER && j > i;
            cr_assert_eq(isinf(s[j]) && s[j] < 0, hidden, "stack %d row %zu key %zu: score %g", v->stack, i, j, s[j]);
            c->inf_hidden += hidden;
            mx = fmax(mx, s[j]);
        }
        for (size_t j = 0; j < nk; j++)
            sum += exp(s[j] - mx);
        for (size_t j = 0; j < nk; j++)
            c->worst = fmax(c->worst, fabs(exp(s[j] - mx) / sum - a[j]));
    }
    c->views++;
    return 0;
}

static void check_scores(const char *name)
{
    s2s_ref r = {0};
    ref_load(name, &r);
    char dir[512];
    snprintf(dir, sizeof dir, ARCH_DIR "/%s", name);
    ag_seq2seq *s = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_seq2seq_load(dir, &s, &err), AG_OK, "%s", err.message);
    ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
    o.precision = AG_PRECISION_F64;
    o.want_scores = 1;
    scores_cmp c = {0};
    cr_assert_eq(ag_seq2seq_forward(s, r.src, r.ns, r.tgt, r.nt, &o, scores_layer, &c, NULL, NULL, &err), AG_OK,
                 "%s", err.message);
    size_t Ld = r.ref[DEC].shape[0], H = r.ref[DEC].shape[1];
    cr_assert_eq((size_t)c.views, r.ref[ENC].shape[0] + 2 * Ld);
    cr_assert_eq((size_t)c.inf_hidden, Ld * H * r.nt * (r.nt - 1) / 2, "the causal mask's hidden keys");
    cr_expect_leq(c.worst, 1e-15, "%s: softmax(scores) differs from attn by %g", name, c.worst);
    ag_seq2seq_free(s);
    ref_free(&r);
}

Test(seq2seq, scores_t5) { check_scores("t5"); }
Test(seq2seq, scores_bart) { check_scores("bart"); }

/* ---- threads: the same bytes for any pool ------------------------------- */

typedef struct {
    double *all; /* every view's attention, in order */
    size_t len, cap;
} attn_log;

static int log_layer(const ag_layer_view *v, void *user)
{
    attn_log *a = user;
    size_t cnt = (size_t)v->n_head * v->n * v->n_kv;
    cr_assert_leq(a->len + cnt, a->cap);
    memcpy(a->all + a->len, v->attn, cnt * sizeof *a->all);
    a->len += cnt;
    return 0;
}

/* The f32 pass of bart (its heads, projections and cross-attention split
 * over 3 threads) gives the bytes of the pass on the calling thread. */
Test(seq2seq, pool_same_bytes)
{
    s2s_ref r = {0};
    ref_load("bart", &r);
    ag_seq2seq *s = NULL;
    ag_pool *pool = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_seq2seq_load(ARCH_DIR "/bart", &s, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_pool_new(3, &pool, &err), AG_OK, "%s", err.message);
    size_t cap = 0, nh = ag_array_size(&r.ref[DH]);
    for (int k = ENC; k <= CROSS; k++)
        cap += ag_array_size(&r.ref[k]);
    attn_log a[2] = {{calloc(cap, sizeof(double)), 0, cap}, {calloc(cap, sizeof(double)), 0, cap}};
    double *dh[2] = {calloc(nh, sizeof(double)), calloc(nh, sizeof(double))};
    for (int k = 0; k < 2; k++) {
        ag_forward_options o = AG_FORWARD_OPTIONS_DEFAULT;
        o.pool = k ? pool : NULL;
        cr_assert_eq(ag_seq2seq_forward(s, r.src, r.ns, r.tgt, r.nt, &o, log_layer, &a[k], NULL, dh[k], &err), AG_OK,
                     "%s", err.message);
    }
    cr_assert_eq(a[0].len, cap);
    cr_assert_eq(memcmp(a[0].all, a[1].all, cap * sizeof(double)), 0, "attention differs with a pool");
    cr_assert_eq(memcmp(dh[0], dh[1], nh * sizeof(double)), 0, "decoder hidden states differ with a pool");
    for (int k = 0; k < 2; k++) {
        free(a[k].all);
        free(dh[k]);
    }
    ag_pool_free(pool);
    ag_seq2seq_free(s);
    ref_free(&r);
}
