/* test_inputs.c — attngeom/run.h, "inputs": a text's ids cut as Hugging
 * Face truncates (special tokens kept), how a sequence fits the model's
 * positions (--max-tokens, --skip-long and their messages), and the input
 * tensors of a ViT and a Whisper encoder from an image, a sound, a .npy and
 * an array, with the positions each gives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "attngeom.h"

#define BERT "tests/data/models/tiny-bert"
#define VIT "tests/data/models/tiny-vit"
#define WHISPER "tests/data/models/tiny-whisper"
#define IMAGE "tests/data/images/rgb8_37x23.png"
#define WAV "tests/data/audio/chirp_1s.wav"

static ag_model *load(const char *dir)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s", err.message);
    return m;
}

static const char *const TEXT = "the quick brown fox jumps over the lazy dog again and again";

Test(inputs, cut_keeps_the_special_tokens)
{
    ag_tokenizer *tok = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_load(BERT, &tok, &err), AG_OK, "%s", err.message);
    int32_t *full = NULL, *cut = NULL;
    size_t nf = 0, nc = 0, tokens = 0;
    cr_assert_eq(ag_run_tokenize(tok, TEXT, strlen(TEXT), 0, &full, &nf, &tokens, &err), AG_OK);
    cr_assert_eq(tokens, nf);
    cr_assert_gt(nf, 8);
    cr_assert_str_eq(ag_tokenizer_token(tok, full[0]), "[CLS]");
    cr_assert_str_eq(ag_tokenizer_token(tok, full[nf - 1]), "[SEP]");
    cr_assert_eq(ag_run_tokenize(tok, TEXT, strlen(TEXT), 5, &cut, &nc, &tokens, &err), AG_OK);
    cr_assert_eq(nc, 5);
    cr_assert_eq(tokens, nf);
    /* [CLS], the text's first three tokens, [SEP] */
    for (size_t k = 0; k < 4; k++)
        cr_assert_eq(cut[k], full[k], "id %zu", k);
    cr_assert_eq(cut[4], full[nf - 1]);
    ag_free(cut);
    /* two special tokens leave nothing of the text at 2 */
    cr_assert_eq(ag_run_tokenize(tok, TEXT, strlen(TEXT), 2, &cut, &nc, NULL, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "--max-tokens 2 leaves no token of the text: the tokenizer "
                                  "adds 2 special tokens");
    cr_assert_null(cut);
    cr_assert_eq(nc, 0);
    ag_free(full);
    ag_tokenizer_free(tok);
}

Test(inputs, empty_text_gives_no_tokens)
{
    ag_tokenizer *tok = NULL;
    ag_error err = {0};
    int32_t *ids = NULL;
    size_t n = 7;
    cr_assert_eq(ag_tokenizer_load("models/tiny-gpt2", &tok, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_run_tokenize(tok, "", 0, 0, &ids, &n, NULL, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "the text gives no tokens");
    cr_assert_null(ids);
    cr_assert_eq(n, 0);
    /* GPT-2 adds no special token: a cut keeps the first ids */
    int32_t *full = NULL, *cut = NULL;
    size_t nf = 0, nc = 0;
    cr_assert_eq(ag_run_tokenize(tok, TEXT, strlen(TEXT), 0, &full, &nf, NULL, &err), AG_OK);
    cr_assert_eq(ag_run_tokenize(tok, TEXT, strlen(TEXT), 3, &cut, &nc, NULL, &err), AG_OK);
    cr_assert_eq(nc, 3);
    cr_assert_eq(memcmp(cut, full, 3 * sizeof *cut), 0);
    ag_free(full);
    ag_free(cut);
    ag_tokenizer_free(tok);
}

typedef struct {
    char lines[4][300];
    int count;
} notes;

static void keep_note(const char *line, void *user)
{
    notes *n = user;
    snprintf(n->lines[n->count++], sizeof n->lines[0], "%s", line);
}

Test(inputs, fit_cuts_skips_or_refuses)
{
    ag_model *m = load(BERT); /* max_position_embeddings 256 */
    ag_error err = {0};
    notes n = {0};
    int skip = -1;
    cr_assert_eq(ag_run_fit(m, "F: line 2", 256, 256, 0, keep_note, &n, &skip, &err), AG_OK);
    cr_assert_eq(skip, 0);
    cr_assert_eq(n.count, 0);
    cr_assert_eq(ag_run_fit(m, "F: line 3", 400, 200, 0, keep_note, &n, &skip, &err), AG_OK);
    cr_assert_eq(skip, 0);
    cr_assert_eq(n.count, 1);
    cr_assert_str_eq(n.lines[0], "F: line 3: 400 tokens, cut to the first 200 (--max-tokens)");
    cr_assert_eq(ag_run_fit(m, "--text", 300, 300, 0, keep_note, &n, &skip, &err), AG_ERANGE);
    cr_assert_str_eq(err.message, "--text: 300 tokens, more than the 256 the model takes "
                                  "(max_position_embeddings = 256): --skip-long skips such "
                                  "texts, --max-tokens 256 cuts them");
    cr_assert_eq(n.count, 1);
    cr_assert_eq(ag_run_fit(m, "--text", 300, 300, 1, keep_note, &n, &skip, &err), AG_OK);
    cr_assert_eq(skip, 1);
    cr_assert_eq(n.count, 2);
    cr_assert_str_eq(n.lines[1], "--text: 300 tokens, more than the 256 the model takes "
                                 "(max_position_embeddings = 256): skipped (--skip-long)");
    /* no note callback: the decision alone */
    cr_assert_eq(ag_run_fit(m, "--text", 300, 300, 1, NULL, NULL, &skip, &err), AG_OK);
    cr_assert_eq(skip, 1);
    cr_assert_eq(ag_run_check_max_tokens(m, 256, &err), AG_OK);
    cr_assert_eq(ag_run_check_max_tokens(m, 0, &err), AG_OK);
    cr_assert_eq(ag_run_check_max_tokens(m, 257, &err), AG_ERANGE);
    cr_assert_str_eq(err.message, "--max-tokens 257 is more than the 256 the model takes "
                                  "(max_position_embeddings = 256)");
    ag_model_free(m);
}

Test(inputs, image_pixels_and_positions)
{
    ag_model *m = load(VIT); /* image_size 32, patch_size 8, no preprocessor_config.json */
    ag_error err = {0};
    ag_run_media_config cfg;
    cr_assert_eq(ag_run_media_config_load(m, VIT, &cfg, &err), AG_OK, "%s", err.message);
    cr_assert_eq(cfg.kind, AG_INPUT_PIXELS);
    cr_assert_eq(cfg.image.height, 32);
    cr_assert_eq(cfg.image.width, 32);
    ag_run_tensor t;
    cr_assert_eq(ag_run_media_read(m, &cfg, AG_RUN_IMAGE, IMAGE, 0, NULL, &t, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(t.ndim, 3);
    cr_assert_eq(t.shape[0], 3);
    cr_assert_eq(t.shape[1], 32);
    cr_assert_eq(t.shape[2], 32);
    cr_assert_eq(t.n, 17); /* CLS + 4 x 4 patches */
    /* the processor's float32 values: ViTImageProcessor's defaults at 32 x 32 */
    ag_image_config ic;
    ag_image_config_default(&ic);
    ic.height = ic.width = 32;
    ag_image_tensor want = {0};
    cr_assert_eq(ag_image_load_pixels(IMAGE, &ic, &want, &err), AG_OK);
    for (size_t k = 0; k < 3 * 32 * 32; k++)
        cr_assert_eq(t.values[k], (double)want.data[k], "value %zu", k);
    /* the same values as a batch of one, (1, 3, 32, 32) */
    ag_array a = {.ndim = 4, .shape = {1, 3, 32, 32}, .data = t.values};
    ag_run_tensor p;
    cr_assert_eq(ag_run_media_array(m, &cfg, AG_RUN_PIXELS, &a, "pixels", 0, &p, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(p.ndim, 3);
    cr_assert_eq(p.n, 17);
    cr_assert_eq(memcmp(p.values, t.values, 3 * 32 * 32 * sizeof *p.values), 0);
    ag_run_tensor_free(&p);
    /* another image size runs with interpolated positions (HF's
     * interpolate_pos_encoding): 16 x 16 is CLS + 2 x 2 patches */
    ag_array small = {.ndim = 3, .shape = {3, 16, 16}, .data = t.values};
    cr_assert_eq(ag_run_media_array(m, &cfg, AG_RUN_PIXELS, &small, "pixels=", 0, &p, &err),
                 AG_OK, "%s", err.message);
    cr_assert_eq(p.n, 5);
    ag_run_tensor_free(&p);
    /* an image without one whole 8 x 8 patch is refused, naming the array */
    ag_array tiny = {.ndim = 3, .shape = {3, 4, 4}, .data = t.values};
    cr_assert_eq(ag_run_media_array(m, &cfg, AG_RUN_PIXELS, &tiny, "pixels=", 0, &p, &err),
                 AG_ESHAPE);
    cr_assert_eq(strncmp(err.message, "pixels=: ", 9), 0, "%s", err.message);
    cr_assert_null(p.values);
    /* a read again must keep its shape */
    ag_run_tensor was = t;
    was.shape[1] = 31;
    cr_assert_eq(ag_run_media_read(m, &cfg, AG_RUN_IMAGE, IMAGE, 0, &was, &p, &err), AG_ESHAPE);
    cr_assert_str_eq(err.message, IMAGE ": changed shape during the run");
    /* audio is not a ViT's input */
    cr_assert_eq(ag_run_media_read(m, &cfg, AG_RUN_AUDIO, WAV, 0, NULL, &p, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "this model does not take audio");
    ag_run_input in = ag_run_tensor_input(&t);
    cr_assert_eq(in.values, t.values);
    cr_assert_eq(in.ndim, 3);
    cr_assert_null(in.ids);
    ag_image_tensor_free(&want);
    ag_run_tensor_free(&t);
    cr_assert_null(t.values);
    ag_model_free(m);
}

Test(inputs, audio_features_and_positions)
{
    ag_model *m = load(WHISPER); /* num_mel_bins 80 */
    ag_error err = {0};
    ag_run_media_config cfg;
    cr_assert_eq(ag_run_media_config_load(m, WHISPER, &cfg, &err), AG_OK, "%s", err.message);
    cr_assert_eq(cfg.kind, AG_INPUT_FEATURES);
    cr_assert_eq(cfg.audio.n_mels, 80);
    ag_run_tensor t, all;
    cr_assert_eq(ag_run_media_read(m, &cfg, AG_RUN_AUDIO, WAV, 40, NULL, &t, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(t.ndim, 2);
    cr_assert_eq(t.shape[0], 80);
    cr_assert_eq(t.shape[1], 40);
    cr_assert_eq(t.n, 20); /* conv2's stride 2 */
    cr_assert_eq(ag_run_media_read(m, &cfg, AG_RUN_AUDIO, WAV, 0, NULL, &all, &err), AG_OK);
    cr_assert_eq(all.shape[1], 3000);
    cr_assert_eq(all.n, 1500);
    /* the first 40 frames of the whole window, row by row */
    for (size_t mel = 0; mel < 80; mel++)
        cr_assert_eq(memcmp(t.values + mel * 40, all.values + mel * 3000, 40 * sizeof(double)), 0,
                     "mel %zu", mel);
    /* those features as an array, cut to 40 frames there: the same values */
    ag_array a = {.ndim = 2, .shape = {80, 3000}, .data = all.values};
    ag_run_tensor f;
    cr_assert_eq(ag_run_media_array(m, &cfg, AG_RUN_FEATURES, &a, "features=", 40, &f, &err),
                 AG_OK, "%s", err.message);
    cr_assert_eq(f.n, 20);
    cr_assert_eq(memcmp(f.values, t.values, 80 * 40 * sizeof(double)), 0);
    ag_run_tensor_free(&f);
    /* and written to a .npy, read back */
    char path[] = "/tmp/ag-test-inputs-XXXXXX.npy";
    int fd = mkstemps(path, 4);
    cr_assert_geq(fd, 0);
    float *f32 = malloc(80 * 40 * sizeof *f32);
    for (size_t k = 0; k < 80 * 40; k++)
        f32[k] = (float)t.values[k];
    cr_assert_eq(ag_npy_write_f32_fd(fd, path, 2, t.shape, f32, &err), AG_OK, "%s", err.message);
    close(fd);
    cr_assert_eq(ag_run_media_read(m, &cfg, AG_RUN_FEATURES, path, 0, NULL, &f, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(f.n, 20);
    cr_assert_eq(memcmp(f.values, t.values, 80 * 40 * sizeof(double)), 0);
    ag_run_tensor_free(&f);
    remove(path);
    free(f32);
    /* 79 mel bins are not this extractor's */
    ag_array bad = {.ndim = 2, .shape = {79, 40}, .data = t.values};
    cr_assert_eq(ag_run_media_array(m, &cfg, AG_RUN_FEATURES, &bad, "features=", 0, &f, &err),
                 AG_ESHAPE);
    cr_assert_str_eq(err.message, "features=: 79 mel bins; the feature extractor has 80");
    /* an image is not a Whisper's input, nor a file read from an array */
    cr_assert_eq(ag_run_media_read(m, &cfg, AG_RUN_IMAGE, IMAGE, 0, NULL, &f, &err), AG_EINVAL);
    cr_assert_eq(ag_run_media_array(m, &cfg, AG_RUN_AUDIO, &a, "audio=", 0, &f, &err), AG_EINVAL);
    ag_run_tensor_free(&t);
    ag_run_tensor_free(&all);
    ag_model_free(m);
}

Test(inputs, token_model_has_no_media_config)
{
    ag_model *m = load(BERT);
    ag_error err = {0};
    ag_run_media_config cfg;
    cr_assert_eq(ag_run_media_config_load(m, BERT, &cfg, &err), AG_EINVAL);
    ag_model_free(m);
}
