/* whisper_features.c — Whisper's log-mel input features, step for step as
 * Hugging Face's numpy route computes them, with its dtypes:
 *   transformers/models/whisper/feature_extraction_whisper.py
 *     WhisperFeatureExtractor.__init__ (mel_filter_bank arguments),
 *     __call__ (float32 waveform, padded or cut to n_samples),
 *     _np_extract_fbank_features (drop the last frame, clamp, scale);
 *   transformers/audio_utils.py
 *     hertz_to_mel / mel_to_hertz (mel_scale="slaney"),
 *     mel_filter_bank, _create_triangular_filter_bank (norm="slaney"),
 *     window_function("hann", periodic=True) = np.hanning(n + 1)[:-1],
 *     spectrogram (center=True, pad_mode="reflect", power=2.0,
 *     mel_floor=1e-10, log_mel="log10", dtype=np.float32).
 * Formulas and dtypes in docs/audio.md. The DFT is GSL's mixed-radix real
 * FFT (n_fft = 400 = 2^4 5^2) where numpy uses pocketfft: both float64. */
#include <gsl/gsl_fft_real.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/audio.h"
#include "attngeom/io.h"

#define MEL_FLOOR 1e-10        /* spectrogram(mel_floor=1e-10) */
#define WHISPER_FMAX 8000.0    /* WhisperFeatureExtractor: max_frequency=8000.0 */

/* ---- the mel scale and filters (audio_utils.py) ---------------------------- */

/* hertz_to_mel(mel_scale="slaney"): linear below 1 kHz (3 f / 200), then
 * logarithmic, 27 mels per factor 6.4. */
static double hertz_to_mel_slaney(double f)
{
    if (f >= 1000.0)
        return 15.0 + log(f / 1000.0) * (27.0 / log(6.4));
    return 3.0 * f / 200.0;
}

/* mel_to_hertz(mel_scale="slaney"), its inverse. */
static double mel_to_hertz_slaney(double m)
{
    if (m >= 15.0)
        return 1000.0 * exp(log(6.4) / 27.0 * (m - 15.0));
    return 200.0 * m / 3.0;
}

/* np.linspace(a, b, num)[i]: i * ((b - a) / (num - 1)) + a, the last one b. */
static double linspace_at(double a, double b, size_t num, size_t i)
{
    if (i == num - 1)
        return b;
    return (double)i * ((b - a) / (double)(num - 1)) + a;
}

int ag_whisper_mel_filters(const ag_whisper_fe_config *cfg, ag_array *out, ag_error *err)
{
    ag_whisper_fe_config dflt;
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_whisper_mel_filters: no output");
    *out = (ag_array){0};
    if (!cfg) {
        ag_whisper_fe_config_default(&dflt);
        cfg = &dflt;
    }
    int rc = ag_whisper_fe_config_check(cfg, err);
    if (rc != AG_OK)
        return rc;
    size_t n_freq = (size_t)cfg->n_fft / 2 + 1, n_mels = (size_t)cfg->n_mels;
    double *hz = malloc((n_mels + 2) * sizeof *hz); // (n_mels + 2,) filter edges and centres
    if (!hz)
        return ag_error_set(err, AG_ENOMEM, "mel filters: out of memory");
    if ((rc = ag_array_alloc(out, 2, (size_t[]){n_freq, n_mels}, err)) != AG_OK) {
        free(hz);
        return rc;
    }
    double mel_max = hertz_to_mel_slaney(WHISPER_FMAX);
    for (size_t j = 0; j < n_mels + 2; j++)
        hz[j] = mel_to_hertz_slaney(linspace_at(hertz_to_mel_slaney(0.0), mel_max, n_mels + 2, j));
    /* _create_triangular_filter_bank: with slopes = hz[j] - fft_freq[k],
     * down = -slopes[:, j] / diff[j], up = slopes[:, j + 2] / diff[j + 1],
     * the filter max(0, min(down, up)); then norm="slaney" multiplies
     * filter j by 2 / (hz[j + 2] - hz[j]). fft_freq = linspace(0, sr // 2). */
    for (size_t k = 0; k < n_freq; k++) {
        double f = linspace_at(0.0, (double)(cfg->sampling_rate / 2), n_freq, k);
        for (size_t j = 0; j < n_mels; j++) {
            double down = -(hz[j] - f) / (hz[j + 1] - hz[j]);
            double up = (hz[j + 2] - f) / (hz[j + 2] - hz[j + 1]);
            double tri = fmax(0.0, fmin(down, up));
            out->data[k * n_mels + j] = tri * (2.0 / (hz[j + 2] - hz[j]));
        }
    }
    free(hz);
    return AG_OK;
}

/* ---- the short-time Fourier transform --------------------------------------- */

/* What one window of the 30 s goes through: the window, the FFT's tables,
 * the filters as rows with the bins where each is non-zero. */
typedef struct {
    size_t n_fft, n_freq, n_mels;
    double *window;             // (n_fft,)
    double *frame;              // (n_fft,) the windowed samples, then their FFT
    double *power;              // (n_freq,)
    double *filt;               // (n_mels, n_freq): the transpose of HF's filters
    size_t *lo, *hi;            // (n_mels,) each filter's non-zero bins [lo, hi)
    gsl_fft_real_wavetable *wt;
    gsl_fft_real_workspace *ws;
} stft_plan;

static void plan_free(stft_plan *p)
{
    free(p->window);
    free(p->frame);
    free(p->power);
    free(p->filt);
    free(p->lo);
    free(p->hi);
    if (p->wt)
        gsl_fft_real_wavetable_free(p->wt);
    if (p->ws)
        gsl_fft_real_workspace_free(p->ws);
    *p = (stft_plan){0};
}

/* window_function(n, "hann", periodic=True): np.hanning(n + 1)[:-1], where
 * np.hanning(M)[i] = 0.5 + 0.5 cos(pi (1 - M + 2 i) / (M - 1)). */
static void hann_periodic(double *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double m = (double)(2 * (long long)i - (long long)n);
        w[i] = 0.5 + 0.5 * cos(M_PI * m / (double)n);
    }
}

/* The filters transposed to rows, with each row's support, so a mel value
 * is a dot product over the bins where its filter is non-zero. */
static void filters_to_rows(stft_plan *p, const ag_array *f)
{
    for (size_t j = 0; j < p->n_mels; j++) {
        p->lo[j] = p->n_freq;
        p->hi[j] = 0;
        for (size_t k = 0; k < p->n_freq; k++) {
            double v = f->data[k * p->n_mels + j];
            p->filt[j * p->n_freq + k] = v;
            if (v != 0.0) {
                if (p->lo[j] == p->n_freq)
                    p->lo[j] = k;
                p->hi[j] = k + 1;
            }
        }
    }
}

static int plan_init(stft_plan *p, const ag_whisper_fe_config *cfg, ag_error *err)
{
    ag_array f = {0};
    int rc = ag_whisper_mel_filters(cfg, &f, err);
    if (rc != AG_OK)
        return rc;
    *p = (stft_plan){.n_fft = (size_t)cfg->n_fft, .n_freq = (size_t)cfg->n_fft / 2 + 1,
                     .n_mels = (size_t)cfg->n_mels};
    p->window = malloc(p->n_fft * sizeof *p->window);
    p->frame = malloc(p->n_fft * sizeof *p->frame);
    p->power = malloc(p->n_freq * sizeof *p->power);
    p->filt = malloc(p->n_mels * p->n_freq * sizeof *p->filt);
    p->lo = malloc(p->n_mels * sizeof *p->lo);
    p->hi = malloc(p->n_mels * sizeof *p->hi);
    /* n_fft is even and at least 2 (config checks), so GSL's only failure
     * left is memory */
    p->wt = gsl_fft_real_wavetable_alloc(p->n_fft);
    p->ws = gsl_fft_real_workspace_alloc(p->n_fft);
    if (!p->window || !p->frame || !p->power || !p->filt || !p->lo || !p->hi || !p->wt || !p->ws) {
        ag_array_free(&f);
        plan_free(p);
        return ag_error_set(err, AG_ENOMEM, "whisper features: out of memory");
    }
    hann_periodic(p->window, p->n_fft);
    filters_to_rows(p, &f);
    ag_array_free(&f);
    return AG_OK;
}

/* One frame of spectrogram(): the n_fft samples from x times the window,
 * np.fft.rfft in float64, stored as complex64 (the spectrogram array's
 * dtype), |.|^2 in float64, the filters, the floor, log10, then float32.
 * mel receives n_mels values, `stride` apart. */
static void stft_frame(stft_plan *p, const double *x, float *mel, size_t stride)
{
    size_t n = p->n_fft;
    for (size_t i = 0; i < n; i++)
        p->frame[i] = x[i] * p->window[i];
    gsl_fft_real_transform(p->frame, 1, n, p->wt, p->ws);
    /* GSL's half-complex order: re_0, (re_k, im_k) for 0 < k < n/2, re_{n/2} */
    for (size_t k = 0; k < p->n_freq; k++) {
        double re = k == 0 ? p->frame[0] : k == n / 2 ? p->frame[n - 1] : p->frame[2 * k - 1];
        double im = k == 0 || k == n / 2 ? 0.0 : p->frame[2 * k];
        double mag = hypot((double)(float)re, (double)(float)im);
        p->power[k] = mag * mag;
    }
    for (size_t j = 0; j < p->n_mels; j++) {
        const double *row = p->filt + j * p->n_freq;
        double s = 0.0;
        for (size_t k = p->lo[j]; k < p->hi[j]; k++)
            s += row[k] * p->power[k];
        mel[j * stride] = (float)log10(fmax(MEL_FLOOR, s));
    }
}

/* ---- features ------------------------------------------------------------ */

/* The waveform spectrogram() frames: the float32 samples padded with
 * padding_value or cut to n_samples (SequenceFeatureExtractor.pad), then
 * center-padded by n_fft/2 on each side with numpy's "reflect" (the edge
 * sample not repeated), as float64. (n_samples + n_fft,) on success. */
static double *padded_waveform(const ag_whisper_fe_config *cfg, const float *x, size_t n)
{
    size_t len = cfg->n_samples, half = (size_t)cfg->n_fft / 2;
    double *w = malloc((len + 2 * half) * sizeof *w);
    if (!w)
        return NULL;
    double *mid = w + half;
    for (size_t i = 0; i < len; i++)
        mid[i] = i < n ? (double)x[i] : (double)cfg->padding_value;
    for (size_t i = 0; i < half; i++) {
        mid[-1 - (ptrdiff_t)i] = mid[i + 1];
        mid[len + i] = mid[len - 2 - i];
    }
    return w;
}

/* The 3000 columns (n_mels, F), then the clamp and scaling of
 * _np_extract_fbank_features, in float32: max(x, max - 8), (x + 4) / 4. */
static void clamp_and_scale(float *x, size_t count)
{
    float top = -INFINITY;
    for (size_t i = 0; i < count; i++)
        top = fmaxf(top, x[i]);
    float floor_ = top - 8.0f;
    for (size_t i = 0; i < count; i++)
        x[i] = (fmaxf(x[i], floor_) + 4.0f) / 4.0f;
}

/* frames 0 (all), or a count 1..total (an odd count T runs ceil(T/2)
 * positions: the encoder's second convolution has stride 2). */
static int check_frames(const char *name, size_t frames, size_t total, ag_error *err)
{
    if (frames > total)
        return ag_error_set(err, AG_EINVAL, "%s: %zu frames asked for; a count within "
                            "1..%zu is needed", name, frames, total);
    return AG_OK;
}

/* Keep the first `frames` columns of the (n_mels, F) x in place; frames 0:
 * all of them. */
static int keep_frames(const char *name, float *x, size_t n_mels, size_t total, size_t frames,
                       ag_whisper_features *out, ag_error *err)
{
    int rc = check_frames(name, frames, total, err);
    if (rc != AG_OK)
        return rc;
    if (frames == 0)
        frames = total;
    for (size_t m = 1; m < n_mels; m++)
        memmove(x + m * frames, x + m * total, frames * sizeof *x);
    *out = (ag_whisper_features){.n_mels = n_mels, .frames = frames, .data = x};
    return AG_OK;
}

static int features_compute(const char *name, const ag_whisper_fe_config *cfg, const float *x,
                            size_t n, size_t frames, ag_whisper_features *out, ag_error *err)
{
    stft_plan p;
    int rc = check_frames(name, frames, cfg->nb_max_frames, err);
    if (rc != AG_OK || (rc = plan_init(&p, cfg, err)) != AG_OK)
        return rc;
    size_t total = cfg->nb_max_frames, n_mels = p.n_mels; /* spectrogram's frames less the last */
    double *w = padded_waveform(cfg, x, n);
    float *mel = malloc(n_mels * total * sizeof *mel); // (n_mels, total)
    if (!w || !mel)
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory for the features", name);
    for (size_t t = 0; rc == AG_OK && t < total; t++)
        stft_frame(&p, w + t * (size_t)cfg->hop_length, mel + t, total);
    plan_free(&p);
    free(w);
    if (rc == AG_OK) {
        clamp_and_scale(mel, n_mels * total);
        rc = keep_frames(name, mel, n_mels, total, frames, out, err);
    }
    if (rc != AG_OK)
        free(mel);
    return rc;
}

/* cfg, or the defaults in *dflt; AG_EINVAL unless out is given. */
static int start(const ag_whisper_fe_config **cfg, ag_whisper_fe_config *dflt,
                 ag_whisper_features *out, ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "whisper features: no output");
    *out = (ag_whisper_features){0};
    if (!*cfg) {
        ag_whisper_fe_config_default(dflt);
        *cfg = dflt;
    }
    return ag_whisper_fe_config_check(*cfg, err);
}

int ag_whisper_features_from_samples(const ag_whisper_fe_config *cfg, const float *samples,
                                     size_t n, size_t frames, ag_whisper_features *out,
                                     ag_error *err)
{
    ag_whisper_fe_config dflt;
    int rc = start(&cfg, &dflt, out, err);
    if (rc != AG_OK)
        return rc;
    if (n > 0 && !samples)
        return ag_error_set(err, AG_EINVAL, "samples: %zu samples and no pointer", n);
    for (size_t i = 0; i < n && i < cfg->n_samples; i++)
        if (!isfinite(samples[i]))
            return ag_error_set(err, AG_ENONFINITE, "samples: sample %zu is not finite", i);
    return features_compute("samples", cfg, samples, n, frames, out, err);
}

int ag_whisper_features_from_audio(const char *path, const ag_whisper_fe_config *cfg,
                                   size_t frames, ag_whisper_features *out, ag_error *err)
{
    ag_whisper_fe_config dflt;
    int rc = start(&cfg, &dflt, out, err);
    if (rc != AG_OK)
        return rc;
    ag_audio a = {0};
    if ((rc = ag_audio_read(path, cfg->sampling_rate, cfg->n_samples, &a, err)) != AG_OK)
        return rc;
    rc = features_compute(path, cfg, a.samples, a.n, frames, out, err);
    ag_audio_free(&a);
    return rc;
}

/* ---- features files ------------------------------------------------------ */

/* Shape (n_mels, F) or (1, n_mels, F) with cfg's n_mels and F in
 * 1..nb_max_frames (Hugging Face's extractor gives an even F; an odd one
 * runs too); *total is F. */
static int check_features_shape(const char *path, const ag_array *a,
                                const ag_whisper_fe_config *cfg, size_t *total, ag_error *err)
{
    int lead = a->ndim == 3 && a->shape[0] == 1;
    if (a->ndim != 2 && !lead)
        return ag_error_set(err, AG_ESHAPE, "%s: input features must be (n_mels, frames) or "
                            "(1, n_mels, frames); this array has %d dimensions", path, a->ndim);
    size_t mels = a->shape[lead], f = a->shape[lead + 1];
    if (mels != (size_t)cfg->n_mels)
        return ag_error_set(err, AG_ESHAPE, "%s: %zu mel bins; the feature extractor has %d",
                            path, mels, cfg->n_mels);
    if (f < 1 || f > cfg->nb_max_frames)
        return ag_error_set(err, AG_ESHAPE, "%s: %zu frames; a count within 1..%zu is "
                            "needed", path, f, cfg->nb_max_frames);
    *total = f;
    return AG_OK;
}

int ag_whisper_features_from_array(const char *name, const ag_array *a,
                                   const ag_whisper_fe_config *cfg, size_t frames,
                                   ag_whisper_features *out, ag_error *err)
{
    ag_whisper_fe_config dflt;
    int rc = start(&cfg, &dflt, out, err);
    if (rc != AG_OK)
        return rc;
    size_t total = 0;
    if (!a || (a->ndim > 0 && !a->data))
        return ag_error_set(err, AG_EINVAL, "%s: no array", name);
    if ((rc = check_features_shape(name, a, cfg, &total, err)) != AG_OK)
        return rc;
    size_t count = (size_t)cfg->n_mels * total;
    float *x = malloc(count * sizeof *x);
    if (!x)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", name);
    for (size_t i = 0; rc == AG_OK && i < count; i++) {
        if (!isfinite(a->data[i]) || !isfinite((float)a->data[i]))
            rc = ag_error_set(err, AG_ENONFINITE, "%s: value %zu (mel %zu, frame %zu) is not a "
                              "finite float32", name, i, i / total, i % total);
        else
            x[i] = (float)a->data[i];
    }
    if (rc == AG_OK)
        rc = keep_frames(name, x, (size_t)cfg->n_mels, total, frames, out, err);
    if (rc != AG_OK)
        free(x);
    return rc;
}

int ag_whisper_features_read_npy(const char *path, const ag_whisper_fe_config *cfg,
                                 size_t frames, ag_whisper_features *out, ag_error *err)
{
    ag_whisper_fe_config dflt;
    int rc = start(&cfg, &dflt, out, err);
    if (rc != AG_OK)
        return rc;
    ag_array a = {0};
    if ((rc = ag_npy_read(path, &a, err)) != AG_OK)
        return rc;
    rc = ag_whisper_features_from_array(path, &a, cfg, frames, out, err);
    ag_array_free(&a);
    return rc;
}

int ag_whisper_features_write_npy(const char *path, const ag_whisper_features *f, ag_error *err)
{
    if (!path || !f || (f->n_mels * f->frames > 0 && !f->data))
        return ag_error_set(err, AG_EINVAL, "ag_whisper_features_write_npy: no path or features");
    return ag_npy_write_f32(path, 2, (size_t[]){f->n_mels, f->frames}, f->data, err);
}

void ag_whisper_features_free(ag_whisper_features *f)
{
    if (!f)
        return;
    free(f->data);
    *f = (ag_whisper_features){0};
}
