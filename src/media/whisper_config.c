/* whisper_config.c — WhisperFeatureExtractor's parameters from a
 * preprocessor_config.json, with Hugging Face's defaults
 * (transformers/models/whisper/feature_extraction_whisper.py, __init__).
 * docs/audio.md, "Parameters". */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "attngeom/audio.h"
#include "io/io_internal.h"

#define CONFIG_FILE_MAX (1u << 20) /* bytes of preprocessor_config.json */

void ag_whisper_fe_config_default(ag_whisper_fe_config *cfg)
{
    *cfg = (ag_whisper_fe_config){.n_mels = 80, .n_fft = 400, .hop_length = 160,
                                  .sampling_rate = 16000, .chunk_length = 30,
                                  .n_samples = 480000, .nb_max_frames = 3000,
                                  .padding_value = 0.0f};
}

/* Bounds shared by the loader and hand-filled configs; `name` is the file
 * (or "config") and status the code to fail with. */
static int check_bounds(const char *name, const ag_whisper_fe_config *c, int status, ag_error *err)
{
    if (c->n_mels < 1 || (unsigned)c->n_mels > AG_WHISPER_MELS_MAX)
        return ag_error_set(err, status, "%s: feature_size %d is outside 1..%u", name, c->n_mels,
                            AG_WHISPER_MELS_MAX);
    if (c->n_fft < 2 || (unsigned)c->n_fft > AG_WHISPER_NFFT_MAX || c->n_fft % 2 != 0)
        return ag_error_set(err, status, "%s: n_fft %d must be even and within 2..%u", name,
                            c->n_fft, AG_WHISPER_NFFT_MAX);
    if (c->hop_length < 1 || c->sampling_rate < 1 || c->chunk_length < 1)
        return ag_error_set(err, status, "%s: hop_length, sampling_rate and chunk_length must be "
                            "positive", name);
    if ((double)c->chunk_length * c->sampling_rate > AG_AUDIO_SAMPLES_MAX ||
        c->n_samples != (size_t)c->chunk_length * (size_t)c->sampling_rate)
        return ag_error_set(err, status, "%s: n_samples %zu must be chunk_length * sampling_rate "
                            "and at most %u", name, c->n_samples, AG_AUDIO_SAMPLES_MAX);
    if (c->n_samples <= (size_t)c->n_fft / 2)
        return ag_error_set(err, status, "%s: n_samples %zu must exceed n_fft / 2 (reflect "
                            "padding)", name, c->n_samples);
    if (c->nb_max_frames != c->n_samples / (size_t)c->hop_length || c->nb_max_frames < 2 ||
        c->nb_max_frames > AG_WHISPER_FRAMES_MAX)
        return ag_error_set(err, status, "%s: nb_max_frames %zu must be n_samples / hop_length "
                            "and within 2..%u", name, c->nb_max_frames, AG_WHISPER_FRAMES_MAX);
    if (!isfinite(c->padding_value))
        return ag_error_set(err, status, "%s: padding_value is not finite", name);
    return AG_OK;
}

int ag_whisper_fe_config_check(const ag_whisper_fe_config *cfg, ag_error *err)
{
    if (!cfg)
        return ag_error_set(err, AG_EINVAL, "ag_whisper_fe_config_check: no config");
    return check_bounds("config", cfg, AG_EINVAL, err);
}

/* ---- preprocessor_config.json ---------------------------------------------- */

/* An integer field in 0..INT32_MAX, or *out unchanged when absent (null
 * counts as absent). */
static int field_int(const char *path, json_t *root, const char *key, long long *out,
                     ag_error *err)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return AG_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return ag_error_set(err, AG_EFORMAT, "%s: field '%s' must be an integer in 0..%d", path,
                            key, INT32_MAX);
    *out = json_integer_value(v);
    return AG_OK;
}

/* A finite number field, or *out unchanged when absent. */
static int field_num(const char *path, json_t *root, const char *key, double *out, ag_error *err)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return AG_OK;
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return ag_error_set(err, AG_EFORMAT, "%s: field '%s' must be a finite number", path, key);
    *out = json_number_value(v);
    return AG_OK;
}

/* Keys that must not change the computation: another extractor, dither. */
static int check_kind(const char *path, json_t *root, ag_error *err)
{
    json_t *type = json_object_get(root, "feature_extractor_type");
    if (type && !json_is_null(type) &&
        (!json_is_string(type) || strcmp(json_string_value(type), "WhisperFeatureExtractor") != 0))
        return ag_error_set(err, AG_EUNSUPPORTED, "%s: feature_extractor_type is not "
                            "\"WhisperFeatureExtractor\"", path);
    double dither = 0.0;
    int rc = field_num(path, root, "dither", &dither, err);
    if (rc == AG_OK && dither != 0.0)
        rc = ag_error_set(err, AG_EUNSUPPORTED, "%s: dither %g adds random noise; only 0 is "
                          "supported", path, dither);
    return rc;
}

/* The fields into c; n_samples and nb_max_frames follow from the others as
 * Hugging Face computes them, and a file stating other values is refused. */
static int parse_fields(const char *path, json_t *root, ag_whisper_fe_config *c, ag_error *err)
{
    long long mels = c->n_mels, nfft = c->n_fft, hop = c->hop_length, rate = c->sampling_rate,
              chunk = c->chunk_length, nsamp = -1, nframes = -1;
    double pad = c->padding_value;
    int rc;
    if ((rc = check_kind(path, root, err)) != AG_OK ||
        (rc = field_int(path, root, "feature_size", &mels, err)) != AG_OK ||
        (rc = field_int(path, root, "n_fft", &nfft, err)) != AG_OK ||
        (rc = field_int(path, root, "hop_length", &hop, err)) != AG_OK ||
        (rc = field_int(path, root, "sampling_rate", &rate, err)) != AG_OK ||
        (rc = field_int(path, root, "chunk_length", &chunk, err)) != AG_OK ||
        (rc = field_int(path, root, "n_samples", &nsamp, err)) != AG_OK ||
        (rc = field_int(path, root, "nb_max_frames", &nframes, err)) != AG_OK ||
        (rc = field_num(path, root, "padding_value", &pad, err)) != AG_OK)
        return rc;
    *c = (ag_whisper_fe_config){.n_mels = (int)mels, .n_fft = (int)nfft, .hop_length = (int)hop,
                                .sampling_rate = (int)rate, .chunk_length = (int)chunk,
                                .padding_value = (float)pad};
    if (hop > 0) {
        c->n_samples = (size_t)chunk * (size_t)rate;
        c->nb_max_frames = c->n_samples / (size_t)hop;
    }
    if (nsamp >= 0 && (size_t)nsamp != c->n_samples)
        return ag_error_set(err, AG_EFORMAT, "%s: n_samples %lld disagrees with chunk_length * "
                            "sampling_rate = %zu", path, nsamp, c->n_samples);
    if (nframes >= 0 && (size_t)nframes != c->nb_max_frames)
        return ag_error_set(err, AG_EFORMAT, "%s: nb_max_frames %lld disagrees with n_samples / "
                            "hop_length = %zu", path, nframes, c->nb_max_frames);
    return check_bounds(path, c, AG_EFORMAT, err);
}

int ag_whisper_fe_config_load(const char *path, ag_whisper_fe_config *cfg, ag_error *err)
{
    if (!path || !cfg)
        return ag_error_set(err, AG_EINVAL, "ag_whisper_fe_config_load: no path or config");
    json_t *root = NULL;
    int rc = agi_json_load(path, CONFIG_FILE_MAX, JSON_REJECT_DUPLICATES, &root, err);
    if (rc != AG_OK)
        return rc;
    ag_whisper_fe_config c;
    ag_whisper_fe_config_default(&c);
    if (!json_is_object(root))
        rc = ag_error_set(err, AG_EFORMAT, "%s: not a JSON object", path);
    else
        rc = parse_fields(path, root, &c, err);
    json_decref(root);
    if (rc == AG_OK)
        *cfg = c;
    return rc;
}
