/* test_audio.c — attngeom/audio.h: sound files (the hostile ones of
 * tests/data/audio/, made by tests/ref/make_wavs.py), the mel filters'
 * closed forms, features of silence and of a pure tone, the features .npy
 * reader's checks and preprocessor_config.json. The comparison with the
 * numpy port of Hugging Face's extractor is tests/ref/check_whisper_features.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attngeom.h"
#include "../util/test_io_util.h"

#define AUDIO_DIR "tests/data/audio/"

TestSuite(audio, .fini = tio_cleanup);

/* One line naming the file. */
static void expect_message(const ag_error *err, const char *path, const char *part)
{
    cr_expect(strstr(err->message, path) != NULL, "message names %s: %s", path, err->message);
    cr_expect(strstr(err->message, part) != NULL, "message says '%s': %s", part, err->message);
    cr_expect(strchr(err->message, '\n') == NULL, "one line: %s", err->message);
}

/* ag_audio_read and ag_whisper_features_from_audio both refuse path with
 * status, saying `part`, leaving their outputs empty. */
static void expect_refused(const char *path, int status, const char *part)
{
    ag_audio a = {.n = 7};
    ag_error err = {0};
    cr_expect_eq(ag_audio_read(path, 16000, 480000, &a, &err), status, "%s: %s", path,
                 err.message);
    expect_message(&err, path, part);
    cr_expect(a.samples == NULL && a.n == 0);
    ag_whisper_features f = {.frames = 7};
    ag_error err2 = {0};
    cr_expect_eq(ag_whisper_features_from_audio(path, NULL, 0, &f, &err2), status);
    cr_expect_str_eq(err2.message, err.message);
    cr_expect(f.data == NULL && f.frames == 0);
}

Test(audio, other_rate_refused_naming_both_rates)
{
    expect_refused(AUDIO_DIR "rate_8k.wav", AG_EUNSUPPORTED, "sample rate 8000 Hz; Whisper needs 16000 Hz");
}

Test(audio, stereo_refused)
{
    expect_refused(AUDIO_DIR "stereo.wav", AG_EUNSUPPORTED, "2 channels");
}

Test(audio, truncated_data_chunk_refused)
{
    expect_refused(AUDIO_DIR "truncated.wav", AG_EFORMAT,
                   "truncated: its data chunk declares 32000 bytes, the file holds 2000");
}

Test(audio, header_claiming_2_to_the_40_frames_refused)
{
    expect_refused(AUDIO_DIR "huge_rf64.wav", AG_EFORMAT,
                   "declares 2199023255552 bytes, the file holds 800");
}

Test(audio, zero_samples_refused)
{
    expect_refused(AUDIO_DIR "empty.wav", AG_EFORMAT, "has no samples");
}

Test(audio, not_a_sound_file_refused)
{
    expect_refused(AUDIO_DIR "not_audio.wav", AG_EFORMAT, "not a sound file");
}

Test(audio, missing_file_and_directory_are_io_errors)
{
    expect_refused(AUDIO_DIR "no_such.wav", AG_EIO, "No such file");
    expect_refused("tests/data/audio", AG_EIO, "is a directory");
}

Test(audio, a_file_cut_after_its_header_is_refused)
{
    /* the first 44 bytes of a 1 s file: its header, no samples */
    FILE *in = fopen(AUDIO_DIR "chirp_1s.wav", "rb");
    cr_assert(in);
    unsigned char head[44];
    cr_assert_eq(fread(head, 1, sizeof head, in), sizeof head);
    fclose(in);
    const char *p = tio_path("cut.wav");
    cr_assert_eq(tio_write_bytes(p, head, sizeof head), 0);
    expect_refused(p, AG_EFORMAT, "truncated: its data chunk declares 32000 bytes, the file holds 0");
}

/* 16-bit PCM is s / 32768 exactly: the first samples of the chirp, as
 * make_wavs.py wrote them (round(0.5 sin(phase) * 32768)). */
Test(audio, pcm16_is_samples_over_32768_and_capped)
{
    ag_audio a = {0};
    ag_error err = {0};
    cr_assert_eq(ag_audio_read(AUDIO_DIR "chirp_1s.wav", 16000, 100, &a, &err), AG_OK, "%s",
                 err.message);
    cr_expect_eq(a.n, 100);
    cr_expect_eq(a.n_file, 16000);
    cr_expect_eq(a.sample_rate, 16000);
    for (size_t i = 0; i < a.n; i++) {
        double t = (double)i / 16000.0;
        double x = 0.5 * sin(2 * M_PI * (100.0 * t + (6000.0 - 100.0) * t * t / 2.0));
        double s = round(x * 32768.0);
        cr_expect_eq(a.samples[i], (float)(s / 32768.0), "sample %zu: %.9g vs %.9g", i,
                     a.samples[i], s / 32768.0);
    }
    ag_audio_free(&a);
    ag_audio_free(&a); /* zeroed: a no-op */
    cr_expect_eq(ag_audio_read(AUDIO_DIR "chirp_1s.wav", 16000, 0, &a, &err), AG_EINVAL);
    cr_expect_eq(ag_audio_read(AUDIO_DIR "chirp_1s.wav", 16000, AG_AUDIO_SAMPLES_MAX + 1u, &a, &err),
                 AG_EINVAL);
}

/* ---- mel filters ------------------------------------------------------------ */

static double mel_slaney(double f)
{
    return f < 1000.0 ? 3.0 * f / 200.0 : 15.0 + log(f / 1000.0) * 27.0 / log(6.4);
}

/* The triangle of filter j rises from edge j to edge j + 1 and falls to
 * edge j + 2, with edges equally spaced in Slaney mels from 0 Hz to 8 kHz;
 * its peak is 2 / (width in Hz), so its area as a function of frequency is
 * 1 (Slaney's normalisation). */
Test(audio, mel_filters_closed_forms)
{
    ag_array f = {0};
    ag_error err = {0};
    cr_assert_eq(ag_whisper_mel_filters(NULL, &f, &err), AG_OK, "%s", err.message);
    cr_assert_eq(f.ndim, 2);
    cr_assert_eq(f.shape[0], 201);
    cr_assert_eq(f.shape[1], 80);
    double step = mel_slaney(8000.0) / 81.0;
    cr_expect(fabs(mel_slaney(8000.0) - 45.245640471924965) < 1e-12); /* HF's old constant */
    for (size_t j = 0; j < 80; j++) {
        double lo = (double)j * step, hi = (double)(j + 2) * step;
        double hz_lo = lo < 15 ? 200.0 * lo / 3.0 : 1000.0 * exp(log(6.4) / 27.0 * (lo - 15.0));
        double hz_hi = hi < 15 ? 200.0 * hi / 3.0 : 1000.0 * exp(log(6.4) / 27.0 * (hi - 15.0));
        double area = 0.0, peak = 0.0;
        for (size_t k = 0; k < 201; k++) {
            double v = f.data[k * 80 + j], hz = 40.0 * (double)k;
            cr_expect(v >= 0.0);
            if (hz <= hz_lo || hz >= hz_hi)
                cr_expect(v < 1e-12, "filter %zu at %.0f Hz outside (%.2f, %.2f): %g", j, hz,
                          hz_lo, hz_hi, v);
            area += 40.0 * v;
            peak = fmax(peak, v);
        }
        cr_expect(peak <= 2.0 / (hz_hi - hz_lo) * (1 + 1e-12), "filter %zu peak", j);
        cr_expect(peak > 0.0, "filter %zu is empty", j);
        /* sampled every 40 Hz, a triangle over many bins keeps area 1 */
        if (hz_hi - hz_lo > 800.0)
            cr_expect(fabs(area - 1.0) < 0.01, "filter %zu: area %.6f", j, area);
    }
    /* the first filter starts at 0 Hz: zero at bin 0, positive at 40 Hz
     * (its centre is at 200/3 * step = 37.2 Hz); the last ends at 8 kHz */
    cr_expect_eq(f.data[0 * 80 + 0], 0.0);
    cr_expect(f.data[1 * 80 + 0] > 0.0);
    cr_expect(f.data[200 * 80 + 79] < 1e-12);
    cr_expect(f.data[199 * 80 + 79] > 0.0);
    ag_array_free(&f);
}

/* ---- features: closed forms ---------------------------------------------- */

/* Silence: every mel power is floored to 1e-10, log10 gives -10, the clamp
 * keeps it (max - 8 = -18) and (x + 4) / 4 = -1.5 everywhere. */
Test(audio, silence_is_minus_one_and_a_half_everywhere)
{
    ag_whisper_features f = {0};
    ag_error err = {0};
    cr_assert_eq(ag_whisper_features_from_audio(AUDIO_DIR "silence.wav", NULL, 0, &f, &err), AG_OK,
                 "%s", err.message);
    cr_assert_eq(f.n_mels, 80);
    cr_assert_eq(f.frames, 3000);
    for (size_t i = 0; i < f.n_mels * f.frames; i++)
        cr_assert_eq(f.data[i], -1.5f, "value %zu: %g", i, f.data[i]);
    ag_whisper_features_free(&f);
    /* no samples at all: the same */
    cr_assert_eq(ag_whisper_features_from_samples(NULL, NULL, 0, 2, &f, &err), AG_OK);
    cr_expect_eq(f.frames, 2);
    cr_expect_eq(f.data[0], -1.5f);
    ag_whisper_features_free(&f);
}

/* A 1 kHz tone for 1 s: in the frames well inside it the largest feature
 * is in a filter whose band holds 1 kHz; after it, frames hold silence and
 * sit at the clamp floor (max - 2); nothing is above the max or below it
 * by more than 2 (8 in log10 units over 4). */
Test(audio, tone_peaks_in_its_mel_band_and_the_clamp_holds)
{
    static float x[16000];
    for (size_t i = 0; i < 16000; i++)
        x[i] = (float)(0.5 * sin(2 * M_PI * 1000.0 * (double)i / 16000.0));
    ag_whisper_features f = {0};
    ag_array filt = {0};
    ag_error err = {0};
    cr_assert_eq(ag_whisper_features_from_samples(NULL, x, 16000, 0, &f, &err), AG_OK, "%s",
                 err.message);
    cr_assert_eq(ag_whisper_mel_filters(NULL, &filt, &err), AG_OK);
    float top = -INFINITY, bottom = INFINITY;
    for (size_t i = 0; i < 80 * 3000; i++) {
        top = fmaxf(top, f.data[i]);
        bottom = fminf(bottom, f.data[i]);
    }
    cr_expect(top - bottom <= 2.0f + 1e-6f, "range %g", top - bottom);
    for (size_t t = 10; t < 90; t++) {
        size_t best = 0;
        for (size_t m = 1; m < 80; m++)
            if (f.data[m * 3000 + t] > f.data[best * 3000 + t])
                best = m;
        /* 1000 Hz is bin 25: the peak filter is non-zero there */
        cr_expect(filt.data[25 * 80 + best] > 0.0, "frame %zu peaks in filter %zu", t, best);
    }
    for (size_t m = 0; m < 80; m++)
        cr_expect_float_eq(f.data[m * 3000 + 2000], top - 2.0f, 1e-6, "silence after the tone");
    ag_whisper_features_free(&f);
    ag_array_free(&filt);
}

/* Samples past 30 s are dropped: 31 s of samples give the features of
 * their first 30 s. */
Test(audio, samples_beyond_n_samples_are_cut)
{
    size_t n = 31 * 16000;
    float *x = malloc(n * sizeof *x);
    cr_assert(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(0.3 * sin(0.001 * (double)i * (1.0 + (double)i / 1e6)));
    ag_whisper_features a = {0}, b = {0};
    cr_assert_eq(ag_whisper_features_from_samples(NULL, x, n, 0, &a, NULL), AG_OK);
    cr_assert_eq(ag_whisper_features_from_samples(NULL, x, 480000, 0, &b, NULL), AG_OK);
    cr_expect(memcmp(a.data, b.data, 80 * 3000 * sizeof(float)) == 0);
    ag_whisper_features_free(&a);
    ag_whisper_features_free(&b);
    x[5] = NAN;
    ag_error err = {0};
    cr_expect_eq(ag_whisper_features_from_samples(NULL, x, n, 0, &a, &err), AG_ENONFINITE);
    expect_message(&err, "samples", "sample 5 is not finite");
    free(x);
}

Test(audio, frames_must_be_in_range)
{
    ag_whisper_features f = {0};
    ag_error err = {0};
    size_t bad[] = {3001, 3002, 100000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(ag_whisper_features_from_audio(AUDIO_DIR "chirp_1s.wav", NULL, bad[i], &f,
                                                    &err), AG_EINVAL, "frames %zu", bad[i]);
        expect_message(&err, AUDIO_DIR "chirp_1s.wav", "a count within 1..3000");
        cr_expect(f.data == NULL);
    }
    /* odd counts keep the first columns of the whole window's features */
    ag_whisper_features all = {0};
    cr_assert_eq(ag_whisper_features_from_audio(AUDIO_DIR "chirp_1s.wav", NULL, 0, &all, &err),
                 AG_OK, "%s", err.message);
    size_t good[] = {1, 7, 2999, 3000};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cr_assert_eq(ag_whisper_features_from_audio(AUDIO_DIR "chirp_1s.wav", NULL, good[i], &f,
                                                    &err), AG_OK, "%s", err.message);
        cr_expect_eq(f.frames, good[i]);
        for (size_t r = 0; r < f.n_mels; r++)
            cr_expect(memcmp(f.data + r * f.frames, all.data + r * all.frames,
                             f.frames * sizeof *f.data) == 0, "frames %zu row %zu", good[i], r);
        ag_whisper_features_free(&f);
    }
    ag_whisper_features_free(&all);
}

/* ---- features files ---------------------------------------------------------- */

/* A .npy of the given descr and shape filled with value v at every place
 * but `odd` (index), which holds `odd_v`. */
static const char *features_file(const char *name, const char *descr, int ndim,
                                 const size_t *shape, double v, size_t odd, double odd_v)
{
    size_t n = 1;
    for (int k = 0; k < ndim; k++)
        n *= shape[k];
    double *x = malloc(n * sizeof *x);
    cr_assert(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (double)(i % 997) / 997.0 - v;
    if (odd < n)
        x[odd] = odd_v;
    const char *p = tio_path(name);
    cr_assert_eq(tio_write_npy(p, descr, 0, 1, ndim, shape, x), 0);
    free(x);
    return p;
}

Test(audio, npy_features_read_with_batch_axis_and_frames)
{
    const char *p = features_file("b.npy", "<f4", 3, (size_t[]){1, 80, 3000}, 0.5, SIZE_MAX, 0);
    ag_whisper_features f = {0};
    ag_error err = {0};
    cr_assert_eq(ag_whisper_features_read_npy(p, NULL, 100, &f, &err), AG_OK, "%s", err.message);
    cr_expect_eq(f.n_mels, 80);
    cr_expect_eq(f.frames, 100);
    for (size_t m = 0; m < 80; m++)
        for (size_t t = 0; t < 100; t++) {
            size_t i = m * 3000 + t;
            cr_assert_eq(f.data[m * 100 + t], (float)((double)(i % 997) / 997.0 - 0.5));
        }
    /* written back as float32 and read again: the same values */
    const char *q = tio_path("back.npy");
    cr_assert_eq(ag_whisper_features_write_npy(q, &f, &err), AG_OK, "%s", err.message);
    ag_array a = {0};
    cr_assert_eq(ag_npy_read(q, &a, &err), AG_OK);
    cr_expect_eq(a.ndim, 2);
    cr_expect_eq(a.shape[0], 80);
    cr_expect_eq(a.shape[1], 100);
    for (size_t i = 0; i < 80 * 100; i++)
        cr_assert_eq(a.data[i], (double)f.data[i]);
    ag_array_free(&a);
    ag_whisper_features_free(&f);
}

Test(audio, npy_features_refused_with_one_line)
{
    struct {
        const char *name, *descr;
        int ndim;
        size_t shape[3];
        size_t odd;
        double odd_v;
        int status;
        const char *part;
    } cases[] = {
        {"long.npy", "<f4", 2, {80, 3001}, SIZE_MAX, 0, AG_ESHAPE, "3001 frames; a count within 1..3000"},
        {"long.npy", "<f4", 2, {80, 3002}, SIZE_MAX, 0, AG_ESHAPE, "3002 frames"},
        {"zero.npy", "<f4", 2, {80, 0}, SIZE_MAX, 0, AG_ESHAPE, "0 frames"},
        {"mels.npy", "<f4", 2, {128, 100}, SIZE_MAX, 0, AG_ESHAPE, "128 mel bins; the feature extractor has 80"},
        {"rank1.npy", "<f4", 1, {80}, SIZE_MAX, 0, AG_ESHAPE, "this array has 1 dimensions"},
        {"batch2.npy", "<f4", 3, {2, 80, 10}, SIZE_MAX, 0, AG_ESHAPE, "has 3 dimensions"},
        {"nan.npy", "<f4", 2, {80, 10}, 17, NAN, AG_ENONFINITE, "value 17 (mel 1, frame 7)"},
        {"big.npy", "<f8", 2, {80, 10}, 3, 1e39, AG_ENONFINITE, "is not a finite float32"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *p = features_file(cases[c].name, cases[c].descr, cases[c].ndim,
                                      cases[c].shape, 0.0, cases[c].odd, cases[c].odd_v);
        ag_whisper_features f = {0};
        ag_error err = {0};
        cr_expect_eq(ag_whisper_features_read_npy(p, NULL, 0, &f, &err), cases[c].status, "%s: %s",
                     cases[c].name, err.message);
        expect_message(&err, p, cases[c].part);
        cr_expect(f.data == NULL);
    }
    const char *p = features_file("ok.npy", "<f8", 2, (size_t[]){80, 10}, 0.0, SIZE_MAX, 0);
    ag_whisper_features f = {0};
    ag_error err = {0};
    cr_expect_eq(ag_whisper_features_read_npy(p, NULL, 12, &f, &err), AG_EINVAL);
    expect_message(&err, p, "12 frames asked for");
    cr_expect_eq(ag_whisper_features_read_npy(p, NULL, 10, &f, &err), AG_OK, "%s", err.message);
    ag_whisper_features_free(&f);
}

/* ---- preprocessor_config.json ---------------------------------------------- */

static const char *config_file(const char *name, const char *json)
{
    const char *p = tio_path(name);
    cr_assert_eq(tio_write_bytes(p, json, strlen(json)), 0);
    return p;
}

/* whisper-tiny's and large-v3's files as published */
Test(audio, config_tiny_and_large_v3)
{
    const char *tiny = config_file("tiny.json",
        "{\"chunk_length\": 30, \"feature_extractor_type\": \"WhisperFeatureExtractor\", "
        "\"feature_size\": 80, \"hop_length\": 160, \"n_fft\": 400, \"n_samples\": 480000, "
        "\"nb_max_frames\": 3000, \"padding_side\": \"right\", \"padding_value\": 0.0, "
        "\"processor_class\": \"WhisperProcessor\", \"return_attention_mask\": false, "
        "\"sampling_rate\": 16000}");
    ag_whisper_fe_config c, d;
    ag_error err = {0};
    ag_whisper_fe_config_default(&d);
    cr_assert_eq(ag_whisper_fe_config_load(tiny, &c, &err), AG_OK, "%s", err.message);
    cr_expect(c.n_mels == d.n_mels && c.n_fft == d.n_fft && c.hop_length == d.hop_length &&
              c.sampling_rate == d.sampling_rate && c.chunk_length == d.chunk_length &&
              c.n_samples == d.n_samples && c.nb_max_frames == d.nb_max_frames &&
              c.padding_value == d.padding_value);
    cr_expect_eq(d.n_mels, 80);
    cr_expect_eq(d.n_samples, 480000);
    const char *large = config_file("large.json", "{\"feature_size\": 128}");
    cr_assert_eq(ag_whisper_fe_config_load(large, &c, &err), AG_OK, "%s", err.message);
    cr_expect_eq(c.n_mels, 128);
    cr_expect_eq(c.nb_max_frames, 3000);
    ag_whisper_features f = {0};
    cr_assert_eq(ag_whisper_features_from_audio(AUDIO_DIR "chirp_1s.wav", &c, 4, &f, &err), AG_OK);
    cr_expect_eq(f.n_mels, 128);
    cr_expect_eq(f.frames, 4);
    ag_whisper_features_free(&f);
}

Test(audio, config_refused_with_one_line)
{
    struct {
        const char *json;
        int status;
        const char *part;
    } cases[] = {
        {"{\"n_samples\": 160000}", AG_EFORMAT, "n_samples 160000 disagrees with chunk_length * sampling_rate = 480000"},
        {"{\"nb_max_frames\": 1500}", AG_EFORMAT, "nb_max_frames 1500 disagrees"},
        {"{\"dither\": 0.5}", AG_EUNSUPPORTED, "dither 0.5"},
        {"{\"feature_extractor_type\": \"ASTFeatureExtractor\"}", AG_EUNSUPPORTED,
         "is not \"WhisperFeatureExtractor\""},
        {"{\"n_fft\": 401}", AG_EFORMAT, "n_fft 401 must be even"},
        {"{\"feature_size\": 0}", AG_EFORMAT, "feature_size 0 is outside 1..256"},
        {"{\"chunk_length\": 60}", AG_EFORMAT, "nb_max_frames 6000 must be"},
        {"{\"chunk_length\": 2000000}", AG_EFORMAT, "must be chunk_length * sampling_rate and at most"},
        {"{\"hop_length\": 0}", AG_EFORMAT, "must be positive"},
        {"{\"hop_length\": -5}", AG_EFORMAT, "field 'hop_length' must be an integer"},
        {"{\"padding_value\": \"x\"}", AG_EFORMAT, "field 'padding_value' must be a finite number"},
        {"[1]", AG_EFORMAT, "not a JSON object"},
        {"{", AG_EFORMAT, "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu.json", i);
        const char *p = config_file(name, cases[i].json);
        ag_whisper_fe_config c;
        ag_error err = {0};
        cr_expect_eq(ag_whisper_fe_config_load(p, &c, &err), cases[i].status, "%s: %s",
                     cases[i].json, err.message);
        expect_message(&err, p, cases[i].part);
    }
}
