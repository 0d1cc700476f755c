/* media.c — the inputs of models whose input is a tensor (docs/cli.md,
 * "Images and audio"): a ViT's pixel_values from --pixels, --image or
 * --image-file, a Whisper encoder's input_features from --features,
 * --audio or --audio-file, preprocessed as the model folder's
 * preprocessor_config.json says (attngeom/image.h, attngeom/audio.h); the
 * one forward call every command makes (cli_forward); --save-input. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* A list file may name at most this many bytes of paths. */
#define LIST_FILE_MAX ((size_t)64 * 1024 * 1024)

int cli_media_option(cli_input *in, const char *cmd, int argc, char **argv, int *i)
{
    static const char *const names[] = {"--pixels", "--image", "--image-file", "--features",
                                        "--audio", "--audio-file", "--save-input"};
    const char **slots[] = {&in->pixels, &in->image, &in->image_file, &in->features,
                            &in->audio, &in->audio_file, &in->save_input};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (cli_is_option(argv[*i], names[k]))
            return (*slots[k] = cli_option_value(cmd, names[k], argc, argv, i)) ? 1 : -1;
    if (!cli_is_option(argv[*i], "--frames"))
        return 0;
    const char *v = cli_option_value(cmd, "--frames", argc, argv, i);
    if (!v)
        return -1;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || *end || errno || v[0] == '-' || n < 1 || n > AG_WHISPER_FRAMES_MAX) {
        cli_usage_error(cmd, "--frames takes a number of frames from 1 to %u, not '%s'",
                        AG_WHISPER_FRAMES_MAX, v);
        return -1;
    }
    in->frames = (size_t)n;
    return 1;
}

static int image_given(const cli_input *in)
{
    return in->pixels || in->image || in->image_file;
}

static int audio_given(const cli_input *in)
{
    return in->features || in->audio || in->audio_file;
}

int cli_media_given(const cli_input *in)
{
    return image_given(in) || audio_given(in) || in->save_input || in->frames;
}

/* The option that names the input, for messages. */
static const char *media_option(const cli_input *in)
{
    return in->pixels ? "--pixels" : in->image ? "--image" : in->image_file ? "--image-file"
         : in->features ? "--features" : in->audio ? "--audio" : "--audio-file";
}

static const char *media_path(const cli_input *in)
{
    return in->pixels ? in->pixels : in->image ? in->image : in->image_file ? in->image_file
         : in->features ? in->features : in->audio ? in->audio : in->audio_file;
}

int cli_model_takes_tensors(const char *model_dir, char type[32])
{
    char path[PATH_MAX];
    json_t *root = NULL;
    type[0] = '\0';
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", model_dir) >= sizeof path)
        return 0;
    /* no config.json (MODEL a tokenizer.json, a folder without one) is no
     * tensor model; one that is there must be a regular file: a FIFO fails */
    if (access(path, F_OK) == 0 && cli_read_json(path, 0, &root) != 0)
        return -1;
    const char *t = json_string_value(json_object_get(root, "model_type"));
    if (t)
        snprintf(type, 32, "%s", t);
    json_decref(root); /* t with it */
    return !strcmp(type, "vit") || !strcmp(type, "whisper");
}

/* ---- option combinations ----------------------------------------------- */

/* Usage errors that depend on the model's input kind: what its input is,
 * one source, --frames and --save-input with what they apply to, no
 * --max-tokens or --skip-long. 0 or 2 after printing. */
static int check_kind(const cli_model_run *r, const char *cmd, ag_input_kind kind)
{
    const cli_input *in = &r->input;
    const char *type = ag_model_get_config(r->model)->model_type;
    int texts = !!in->text + !!in->text_file + !!in->tokens + !!in->tokens_file;
    int media = !!in->pixels + !!in->image + !!in->image_file + !!in->features + !!in->audio +
                !!in->audio_file;
    if (kind == AG_INPUT_TOKENS && cli_media_given(in))
        return cli_usage_error(cmd, "%s is a %s model: it takes token ids (--text, --text-file, "
                               "--tokens, --tokens-file), not %s", r->model_dir, type,
                               media ? media_option(in) : in->frames ? "--frames" : "--save-input");
    if (kind == AG_INPUT_TOKENS)
        return 0;
    const char *takes = kind == AG_INPUT_PIXELS ? "images (--image, --image-file, --pixels)"
                                                : "audio (--audio, --audio-file, --features)";
    if (texts)
        return cli_usage_error(cmd, "%s is a %s model: it takes %s, not %s", r->model_dir, type,
                               takes, in->text ? "--text" : in->text_file ? "--text-file"
                                      : in->tokens ? "--tokens" : "--tokens-file");
    if ((kind == AG_INPUT_PIXELS && audio_given(in)) || (kind == AG_INPUT_FEATURES && image_given(in)))
        return cli_usage_error(cmd, "%s is a %s model: it takes %s, not %s", r->model_dir, type,
                               takes, media_option(in));
    if (media != 1)
        return cli_usage_error(cmd, media ? "give only one input option" : "missing input: %s",
                               takes);
    if (in->frames && !audio_given(in))
        return cli_usage_error(cmd, "--frames applies to audio (--audio, --audio-file, --features)");
    if (in->save_input && (in->image_file || in->audio_file))
        return cli_usage_error(cmd, "--save-input takes one input, not %s", media_option(in));
    if (in->max_tokens || in->skip_long)
        return cli_usage_error(cmd, "%s does not apply to an image or audio input (its positions "
                               "are fixed by the model)", in->max_tokens ? "--max-tokens" : "--skip-long");
    return 0;
}

/* The kind of r's input option (check_kind allowed one). */
static ag_run_media_kind media_kind(const cli_input *in)
{
    return in->pixels ? AG_RUN_PIXELS : in->image || in->image_file ? AG_RUN_IMAGE
         : in->features ? AG_RUN_FEATURES : AG_RUN_AUDIO;
}

/* ---- the inputs -------------------------------------------------------- */

/* The non-blank lines of LIST as inputs; "text" is the line's 0-based index
 * (blank lines counted, as --text-file's). Paths are taken as given:
 * relative to the current folder. */
static int list_sequences(const char *list, cli_seq **seqs, size_t *count)
{
    char *buf = NULL;
    size_t len = 0, lines = 1;
    const char *name = list;
    if (cli_read_text_file(&name, LIST_FILE_MAX, &buf, &len) != 0)
        return 1;
    for (size_t k = 0; k < len; k++)
        lines += buf[k] == '\n';
    cli_seq *s = calloc(lines, sizeof *s);
    size_t used = 0, start = 0;
    int rc = s ? 0 : cli_fail("%s: out of memory", name);
    for (size_t k = 0, line = 0; rc == 0 && k <= len; k++) {
        if (k < len && buf[k] != '\n')
            continue;
        size_t end = k;
        if (end > start && buf[end - 1] == '\r')
            end--;
        size_t b = start;
        while (b < end && (buf[b] == ' ' || buf[b] == '\t'))
            b++;
        if (b < end) {
            s[used].line = (long)line;
            if (memchr(buf + start, '\0', end - start))
                rc = cli_fail("%s: line %zu: a NUL byte in a path", name, line + 1);
            else if (!(s[used++].source = strndup(buf + start, end - start)))
                rc = cli_fail("%s: out of memory", name);
        }
        start = k + 1;
        line++;
    }
    free(buf);
    if (rc == 0 && used == 0)
        rc = cli_fail("%s: no input (every line is blank)", name);
    if (rc) {
        cli_seqs_free(s, used);
        return rc;
    }
    *seqs = s;
    *count = used;
    return 0;
}

/* Read input s once to check it and learn its positions; a single input
 * keeps its values for the pass. 0, or 1 after printing. */
static int check_input(cli_model_run *r, cli_seq *s, int keep)
{
    ag_error err = {0};
    if (ag_run_media_read_crop(r->model, &r->input.media, &r->input.crop,
                               media_kind(&r->input), s->source,
                          r->input.frames, NULL, &s->tensor, &err) != AG_OK)
        return cli_fail_error(&err);
    s->n = s->tokens = s->tensor.n;
    if (!keep) {
        free(s->tensor.values);
        s->tensor.values = NULL;
    }
    return 0;
}

/* The records' "input": the file of the input whose "text" is `text` (the
 * sequences are in line order). */
static const char *input_name(const void *ctx, long text)
{
    const cli_model_run *r = ctx;
    size_t lo = 0, hi = r->nseq;
    if (text < 0)
        return r->nseq ? r->seqs[0].source : NULL;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->seqs[mid].line < text)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->nseq && r->seqs[lo].line == text ? r->seqs[lo].source : NULL;
}

/* --save-input (its path checked with the run's, cli_model_run_check_paths):
 * the float32 tensor staged in r->save_input (committed by
 * cli_model_run_finish). */
static int stage_saved_input(cli_model_run *r)
{
    const ag_run_tensor *s = &r->seqs[0].tensor;
    size_t count = s->shape[0] * s->shape[1] * (s->ndim == 3 ? s->shape[2] : 1);
    float *f = malloc(count * sizeof *f);
    FILE *fp = NULL;
    ag_error err = {0};
    if (!f)
        return cli_fail("%s: out of memory", r->input.save_input);
    for (size_t k = 0; k < count; k++)
        f[k] = (float)s->values[k]; /* exact for the float32 tensors of a processor */
    int rc = cli_outputs_stream(&r->save_input, r->input.save_input, &fp);
    if (rc == 0 && (fflush(fp) != 0 ||
                    ag_npy_write_f32_fd(fileno(fp), r->input.save_input, s->ndim, s->shape, f, &err) != AG_OK))
        rc = err.status ? cli_fail_error(&err) : cli_fail("%s: cannot write", r->input.save_input);
    free(f);
    return rc;
}

int cli_model_inputs(cli_model_run *r, const char *cmd)
{
    ag_input_kind kind = ag_model_input_kind(r->model);
    int rc = check_kind(r, cmd, kind);
    if (rc || kind == AG_INPUT_TOKENS) {
        if (rc == 0)
            rc = cli_input_sequences(&r->input, cmd, r->model, r->model_dir, &r->seqs, &r->nseq);
        return rc ? rc : cli_model_run_check_paths(r);
    }
    ag_error err = {0};
    if (ag_run_media_config_load_crop(r->model, r->model_dir, &r->input.media, &r->input.crop,
                                      &err) != AG_OK)
        return cli_fail_error(&err);
    const char *list = r->input.image_file ? r->input.image_file : r->input.audio_file;
    if (list) {
        rc = list_sequences(list, &r->seqs, &r->nseq);
    } else if (!(r->seqs = calloc(1, sizeof *r->seqs)) ||
               !(r->seqs[0].source = strdup(media_path(&r->input)))) {
        rc = cli_fail("out of memory");
    } else {
        r->nseq = 1;
        r->seqs[0].line = -1;
    }
    /* the identity rule before any input is decoded or any output staged */
    if (rc == 0)
        rc = cli_model_run_check_paths(r);
    for (size_t k = 0; rc == 0 && k < r->nseq; k++)
        rc = check_input(r, &r->seqs[k], !list);
    if (rc == 0 && r->input.save_input)
        rc = stage_saved_input(r);
    r->common.input_name = input_name;
    r->common.input_ctx = r;
    return rc;
}

int cli_seq_input(const cli_model_run *r, const cli_seq *s, ag_run_input *in, double **owned,
                  ag_error *err)
{
    const ag_run_tensor *t = &s->tensor;
    ag_run_tensor read = {0};
    *owned = NULL;
    if (s->source && !t->values &&
        ag_run_media_read_crop(r->model, &r->input.media, &r->input.crop,
                               media_kind(&r->input), s->source,
                          r->input.frames, t, &read, err) != AG_OK)
        return err->status;
    *in = s->source ? ag_run_tensor_input(t) : (ag_run_input)AG_RUN_INPUT_DEFAULT;
    if (!s->source)
        in->ids = s->ids, in->n = s->n;
    if (read.values) /* the shape was checked equal to t's */
        in->values = *owned = read.values;
    in->text = s->line;
    in->target = s->target ? s->target : r->target;
    in->n_target = s->target ? s->n_target : r->n_target;
    return AG_OK;
}

int cli_run_text(const cli_model_run *r, const cli_seq *s, cli_run_fn fn, void *user,
                 ag_error *err)
{
    ag_run_input in;
    double *owned = NULL;
    int status = cli_seq_input(r, s, &in, &owned, err);
    if (status == AG_OK)
        status = fn(r, r->opt, &in, user, err);
    free(owned);
    return status;
}

int cli_forward(const cli_model_run *r, const cli_seq *s, const ag_forward_options *opt,
                ag_layer_fn fn, void *user, double *hidden, ag_error *err)
{
    ag_run_input in;
    double *owned = NULL;
    int status = cli_seq_input(r, s, &in, &owned, err);
    if (status == AG_OK)
        status = ag_run_forward(r->model, &in, opt, fn, user, hidden, err);
    free(owned);
    return status;
}
