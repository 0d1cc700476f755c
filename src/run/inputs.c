/* inputs.c — attngeom/run.h: what a model run is fed, made once for the
 * CLI and Python (issue 25, step 17): a text's token ids cut as Hugging
 * Face truncates, how a sequence fits the model's positions (--max-tokens,
 * --skip-long), and the input tensor of a ViT or a Whisper encoder from an
 * image, a sound file or an array, preprocessed as the model folder says. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attngeom/io.h"
#include "attngeom/run.h"
#include "run_int.h"

/* ---- texts and token ids ------------------------------------------------ */

/* seq (f ids, the full encoding of text) cut to max: the text's own tokens
 * are found inside the special tokens the post-processor added, cut on the
 * right, and the special tokens after them moved up. */
static int truncate_encoding(const ag_tokenizer *tok, const char *text, size_t len,
                             size_t max, int32_t *seq, size_t *n, ag_error *err)
{
    int32_t *own = NULL;
    size_t c = 0, f = *n, p = 0;
    if (ag_tokenizer_encode_ex(tok, text, len, AG_TOKENIZE_NO_SPECIAL, &own, &c, err) != AG_OK)
        return err->status;
    while (c <= f && p <= f - c && memcmp(seq + p, own, c * sizeof *own) != 0)
        p++;
    free(own);
    if (c > f || p > f - c)
        return ag_error_set(err, AG_EFORMAT, "the special tokens do not surround the text's "
                            "own tokens: --max-tokens cannot cut it");
    if (f - c >= max)
        return ag_error_set(err, AG_EINVAL, "--max-tokens %zu leaves no token of the text: the "
                            "tokenizer adds %zu special tokens", max, f - c);
    size_t keep = max - (f - c); /* of the text's own c tokens */
    memmove(seq + p + keep, seq + p + c, (f - p - c) * sizeof *seq);
    *n = max;
    return AG_OK;
}

int ag_run_tokenize(const ag_tokenizer *tok, const char *text, size_t len, size_t max_tokens,
                    int32_t **ids, size_t *n, size_t *tokens, ag_error *err)
{
    if (!ids || !n)
        return ag_error_set(err, AG_EINVAL, "ag_run_tokenize: no output");
    *ids = NULL;
    *n = 0;
    int status = ag_tokenizer_encode(tok, text, len, ids, n, err);
    if (status == AG_OK && *n == 0)
        status = ag_error_set(err, AG_EINVAL, "the text gives no tokens");
    if (tokens)
        *tokens = *n;
    if (status == AG_OK && max_tokens && *n > max_tokens)
        status = truncate_encoding(tok, text, len, max_tokens, *ids, n, err);
    if (status != AG_OK) { /* a failed text owns nothing */
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return status;
}

/* Whether m's labels lose a leading decoder_start_token_id before the
 * shift: Whisper's, whose tokenizer template starts with
 * <|startoftranscript|> (the decoder start), as the collator of HF's
 * Whisper fine-tuning (DataCollatorSpeechSeq2SeqWithPadding: "if
 * (labels[:, 0] == decoder_start_token_id).all(): labels = labels[:, 1:]",
 * examples/pytorch/speech-recognition/run_speech_recognition_seq2seq.py and
 * the fine-tune-whisper blog) does before WhisperForConditionalGeneration
 * forms shift_tokens_right(labels) (modeling_whisper.py @5c48f71a). T5's
 * and BART's collator (DataCollatorForSeq2Seq) keeps the labels whole. */
static int drops_start(const ag_model *m)
{
    return ag_model_get_config(m)->arch == AG_ARCH_WHISPER;
}

int ag_run_target_ids(const ag_model *m, const ag_tokenizer *tok, const char *text, size_t len,
                      int32_t **ids, size_t *n, ag_error *err)
{
    *ids = NULL;
    *n = 0;
    const ag_seq2seq *pair = ag_model_seq2seq(m);
    int start = ag_seq2seq_decoder_start(pair);
    if (!pair)
        return ag_error_set(err, AG_EINVAL, "a target needs an encoder-decoder model");
    if (start < 0)
        return ag_error_set(err, AG_EINVAL, "config.json gives no decoder_start_token_id: "
                            "give the decoder's ids with --target-tokens");
    int status = ag_tokenizer_encode(tok, text, len, ids, n, err);
    if (status == AG_OK && *n && (*ids)[0] == start && drops_start(m)) {
        memmove(*ids, *ids + 1, (*n - 1) * sizeof **ids);
        (*n)--;
    }
    if (status == AG_OK && *n == 0)
        status = ag_error_set(err, AG_EINVAL, "the target gives no tokens");
    if (status == AG_OK)
        ag_run_shift_right(*ids, *n, start, *ids);
    else {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return status;
}

size_t agr_positions(const ag_model *m, char why[96])
{
    const ag_model_config *g = ag_model_get_config(m);
    snprintf(why, 96, "%s = %d", g->arch == AG_ARCH_GPT2 ? "n_positions" : "max_position_embeddings",
             g->max_positions);
    return g->max_tokens > 0 ? (size_t)g->max_tokens : 0;
}

int ag_run_check_max_tokens(const ag_model *m, size_t max_tokens, ag_error *err)
{
    char why[96];
    size_t p = m ? agr_positions(m, why) : 0;
    if (max_tokens && p && max_tokens > p)
        return ag_error_set(err, AG_ERANGE, "--max-tokens %zu is more than the %zu the model "
                            "takes (%s)", max_tokens, p, why);
    return AG_OK;
}

/* note's line, formatted (a warning is short: a place and numbers). */
static void notef(ag_run_note_fn note, void *user, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void notef(ag_run_note_fn note, void *user, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    if (!note)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    note(line, user);
}

int ag_run_fit(const ag_model *m, const char *place, size_t tokens, size_t n, int skip_long,
               ag_run_note_fn note, void *user, int *skip, ag_error *err)
{
    char why[96];
    if (!m || !place || !skip)
        return ag_error_set(err, AG_EINVAL, "ag_run_fit: no model, place or skip");
    size_t p = agr_positions(m, why);
    *skip = 0;
    if (tokens > n)
        notef(note, user, "%s: %zu tokens, cut to the first %zu (--max-tokens)", place, tokens, n);
    if (!p || n <= p)
        return AG_OK;
    if (!skip_long)
        return ag_error_set(err, AG_ERANGE, "%s: %zu tokens, more than the %zu the model takes "
                            "(%s): --skip-long skips such texts, --max-tokens %zu cuts them",
                            place, n, p, why, p);
    *skip = 1;
    notef(note, user, "%s: %zu tokens, more than the %zu the model takes (%s): skipped "
          "(--skip-long)", place, n, p, why);
    return AG_OK;
}

/* ---- images and audio --------------------------------------------------- */

/* Both loaders: crop NULL refuses BiT's and CLIP's files. */
static int media_config_load(const ag_model *m, const char *dir, ag_run_media_config *cfg,
                             ag_image_crop *crop, ag_error *err)
{
    ag_input_kind kind = ag_model_input_kind(m);
    if (!m || !dir || !cfg || kind == AG_INPUT_TOKENS)
        return ag_error_set(err, AG_EINVAL, "ag_run_media_config_load: no folder, config or "
                            "model with a tensor input");
    const ag_model_config *g = ag_model_get_config(m);
    char path[PATH_MAX];
    *cfg = (ag_run_media_config){.kind = kind};
    if ((size_t)snprintf(path, sizeof path, "%s/preprocessor_config.json", dir) >= sizeof path)
        return ag_error_set(err, AG_EINVAL, "%s: path too long", dir);
    int present = access(path, F_OK) == 0;
    if (kind == AG_INPUT_PIXELS) {
        ag_image_config_default(&cfg->image);
        cfg->image.height = (size_t)g->image_height;
        cfg->image.width = (size_t)g->image_width;
        if (!present)
            return AG_OK;
        return crop ? ag_image_processor_load(path, &cfg->image, crop, err)
                    : ag_image_config_load(path, &cfg->image, err);
    }
    ag_whisper_fe_config_default(&cfg->audio);
    cfg->audio.n_mels = g->in_channels;
    return present ? ag_whisper_fe_config_load(path, &cfg->audio, err) : AG_OK;
}

int ag_run_media_config_load(const ag_model *m, const char *dir, ag_run_media_config *cfg,
                             ag_error *err)
{
    return media_config_load(m, dir, cfg, NULL, err);
}

int ag_run_media_config_load_crop(const ag_model *m, const char *dir, ag_run_media_config *cfg,
                                  ag_image_crop *crop, ag_error *err)
{
    if (!crop)
        return ag_error_set(err, AG_EINVAL, "ag_run_media_config_load_crop: no crop");
    *crop = (ag_image_crop){0};
    return media_config_load(m, dir, cfg, crop, err);
}

void ag_run_tensor_free(ag_run_tensor *t)
{
    if (!t)
        return;
    free(t->values);
    *t = (ag_run_tensor){0};
}

ag_run_input ag_run_tensor_input(const ag_run_tensor *t)
{
    ag_run_input in = AG_RUN_INPUT_DEFAULT;
    in.values = t->values, in.ndim = t->ndim, in.shape = t->shape;
    return in;
}

/* 1 when kind is an input m takes. */
static int kind_fits(const ag_model *m, ag_run_media_kind kind)
{
    ag_input_kind k = ag_model_input_kind(m);
    return k == ((kind == AG_RUN_IMAGE || kind == AG_RUN_PIXELS) ? AG_INPUT_PIXELS
                                                                    : AG_INPUT_FEATURES);
}

/* pixel_values (3, H, W) of an array, a batch of one ((1, 3, H, W)) being
 * the same values: a's data become t's (a emptied). */
static int pixels_take(const char *name, ag_array *a, ag_run_tensor *t, ag_error *err)
{
    int lead = 0;
    while (a->ndim - lead > 3 && a->shape[lead] == 1)
        lead++;
    if (a->ndim - lead > 3)
        return ag_error_set(err, AG_ESHAPE, "%s: a %d-dimensional array, not pixel_values "
                            "(3, H, W)", name, a->ndim);
    t->ndim = a->ndim - lead;
    for (int k = 0; k < t->ndim; k++)
        t->shape[k] = a->shape[lead + k];
    t->values = a->data;
    a->data = NULL;
    return AG_OK;
}

/* t's values from a processor's float32 tensor f (count values). */
static int widen(const char *name, const float *f, size_t count, ag_run_tensor *t, ag_error *err)
{
    if (!(t->values = malloc((count ? count : 1) * sizeof *t->values)))
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", name);
    for (size_t k = 0; k < count; k++)
        t->values[k] = f[k];
    return AG_OK;
}

static int image_tensor(const char *path, const ag_run_media_config *cfg,
                        const ag_image_crop *crop, ag_run_tensor *t, ag_error *err)
{
    ag_image_tensor p = {0};
    int status = ag_image_load_pixels_crop(path, &cfg->image, crop, &p, err);
    t->ndim = 3, t->shape[0] = p.channels, t->shape[1] = p.height, t->shape[2] = p.width;
    if (status == AG_OK)
        status = widen(path, p.data, p.channels * p.height * p.width, t, err);
    ag_image_tensor_free(&p);
    return status;
}

/* Features of an array a, else of the file `name`: a .npy of them
 * (AG_RUN_FEATURES) or a sound. */
static int features_tensor(ag_run_media_kind kind, const char *name, const ag_array *a,
                           const ag_run_media_config *cfg, size_t frames, ag_run_tensor *t,
                           ag_error *err)
{
    ag_whisper_features w = {0};
    const ag_whisper_fe_config *fe = &cfg->audio;
    int status = a ? ag_whisper_features_from_array(name, a, fe, frames, &w, err)
               : kind == AG_RUN_FEATURES ? ag_whisper_features_read_npy(name, fe, frames, &w, err)
                                         : ag_whisper_features_from_audio(name, fe, frames, &w, err);
    t->ndim = 2, t->shape[0] = w.n_mels, t->shape[1] = w.frames;
    if (status == AG_OK)
        status = widen(name, w.data, w.n_mels * w.frames, t, err);
    ag_whisper_features_free(&w);
    return status;
}

/* The positions of t's pass (t read from `name`; was: an earlier read of
 * it, whose shape it must keep). */
static int positions_of(const ag_model *m, const char *name, const ag_run_tensor *was,
                        ag_run_tensor *t, ag_error *err)
{
    if (was && (was->ndim != t->ndim ||
                memcmp(was->shape, t->shape, (size_t)t->ndim * sizeof *t->shape) != 0))
        return ag_error_set(err, AG_ESHAPE, "%s: changed shape during the run", name);
    if (ag_model_input_positions(m, t->ndim, t->shape, &t->n, err) == AG_OK)
        return AG_OK;
    char inner[sizeof err->message];
    snprintf(inner, sizeof inner, "%s", err->message);
    return ag_error_set(err, err->status, "%s: %s", name, inner);
}

/* Common checks of the two readers; *t starts empty. */
static int media_start(const ag_model *m, const ag_run_media_config *cfg, ag_run_media_kind kind,
                       const void *what, ag_run_tensor *out, ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_run_media: no output");
    *out = (ag_run_tensor){0};
    if (!m || !cfg || !what)
        return ag_error_set(err, AG_EINVAL, "ag_run_media: no model, config or input");
    if (kind < AG_RUN_IMAGE || kind > AG_RUN_FEATURES || !kind_fits(m, kind))
        return ag_error_set(err, AG_EINVAL, "this model does not take %s",
                            kind == AG_RUN_IMAGE ? "an image" : kind == AG_RUN_PIXELS ? "pixels"
                            : kind == AG_RUN_AUDIO ? "audio" : "input features");
    return AG_OK;
}

/* out's end: positions, or emptied on failure. */
static int media_end(const ag_model *m, const char *name, const ag_run_tensor *was,
                     int status, ag_run_tensor *out, ag_error *err)
{
    if (status == AG_OK)
        status = positions_of(m, name, was, out, err);
    if (status != AG_OK)
        ag_run_tensor_free(out);
    return status;
}

int ag_run_media_read(const ag_model *m, const ag_run_media_config *cfg, ag_run_media_kind kind,
                      const char *path, size_t frames, const ag_run_tensor *was,
                      ag_run_tensor *out, ag_error *err)
{
    return ag_run_media_read_crop(m, cfg, NULL, kind, path, frames, was, out, err);
}

int ag_run_media_read_crop(const ag_model *m, const ag_run_media_config *cfg,
                           const ag_image_crop *crop, ag_run_media_kind kind, const char *path,
                           size_t frames, const ag_run_tensor *was, ag_run_tensor *out,
                           ag_error *err)
{
    int status = media_start(m, cfg, kind, path, out, err);
    if (status != AG_OK)
        return status;
    if (kind == AG_RUN_PIXELS) {
        ag_array a = {0};
        if ((status = ag_npy_read(path, &a, err)) == AG_OK)
            status = pixels_take(path, &a, out, err);
        ag_array_free(&a);
    } else if (kind == AG_RUN_IMAGE) {
        status = image_tensor(path, cfg, crop, out, err);
    } else {
        status = features_tensor(kind, path, NULL, cfg, frames, out, err);
    }
    return media_end(m, path, was, status, out, err);
}

int ag_run_media_array(const ag_model *m, const ag_run_media_config *cfg, ag_run_media_kind kind,
                       const ag_array *a, const char *name, size_t frames, ag_run_tensor *out,
                       ag_error *err)
{
    int status = media_start(m, cfg, kind, a, out, err);
    if (status == AG_OK && (kind == AG_RUN_IMAGE || kind == AG_RUN_AUDIO))
        status = ag_error_set(err, AG_EINVAL, "%s: an image or a sound is read from a file",
                              name);
    if (status != AG_OK)
        return status;
    if (kind == AG_RUN_FEATURES)
        return media_end(m, name, NULL, features_tensor(kind, name, a, cfg, frames, out, err), out,
                         err);
    ag_array copy = {0};
    size_t count = 1;
    for (int k = 0; k < a->ndim; k++)
        count *= a->shape[k];
    if (count && !a->data)
        return ag_error_set(err, AG_EINVAL, "%s: no values", name);
    status = ag_array_alloc(&copy, a->ndim, a->shape, err);
    if (status == AG_OK) {
        memcpy(copy.data, a->data, count * sizeof *copy.data);
        status = pixels_take(name, &copy, out, err);
    }
    ag_array_free(&copy);
    return media_end(m, name, NULL, status, out, err);
}
