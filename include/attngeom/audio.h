/* attngeom/audio.h — audio input for Whisper's encoder: sound files read
 * through libsndfile, and the log-mel `input_features` that Hugging Face's
 * WhisperFeatureExtractor computes from them (its numpy route:
 * transformers/models/whisper/feature_extraction_whisper.py,
 * _np_extract_fbank_features, and transformers/audio_utils.py). The
 * pipeline, its formulas and dtypes, and what is refused: docs/audio.md.
 *
 * Ownership: objects filled through `out` belong to the caller and are
 * released with ag_audio_free / ag_whisper_features_free (which accept
 * zeroed or already freed objects). Inputs are borrowed for the call. On
 * failure `out` is left zeroed and err names the file (or "samples" for
 * samples given in memory).
 *
 * Hostile input: nothing is allocated from a size a file declares before it
 * is capped — at most max_samples samples are read from a sound file,
 * whatever its header claims, and a header claiming more data than the
 * file holds is refused as truncated.
 */
#ifndef ATTNGEOM_AUDIO_H
#define ATTNGEOM_AUDIO_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Caps on what a preprocessor_config.json or a features file may ask for. */
#define AG_WHISPER_FRAMES_MAX 3000u   /* feature frames: 30 s at hop 160 */
#define AG_WHISPER_MELS_MAX   256u    /* feature_size (80; 128 for large-v3) */
#define AG_WHISPER_NFFT_MAX   8192u   /* n_fft */
#define AG_AUDIO_SAMPLES_MAX  (1u << 24) /* n_samples (30 s at 16 kHz is 480000) */

/* ---- sound files ---------------------------------------------------------- */

/* A mono sound as the feature extractor sees it: float32 samples, each the
 * float32 rounding of what `soundfile.read(path)` returns as float64 (the
 * extractor casts to float32 first thing). That is libsndfile's
 * normalisation: 16-bit PCM s/32768 exactly, 24-bit s/2^23, 32-bit s/2^31,
 * signed 8-bit s/128, unsigned 8-bit (s-128)/128, float and double files
 * their values. */
typedef struct {
    float *samples;        /* (n,) owned; NULL when n is 0 */
    size_t n;              /* samples held: min(n_file, max_samples) */
    uint64_t n_file;       /* samples the file holds */
    int sample_rate;       /* Hz */
} ag_audio;

/* Read the sound file at `path` (WAV, RF64, and whatever else libsndfile
 * decodes: FLAC, AIFF, ...): its first min(length, max_samples) samples.
 * Refused: a rate other than `sample_rate` (AG_EUNSUPPORTED "PATH: sample
 * rate R Hz; Whisper needs S Hz", no resampling), more than one channel
 * (AG_EUNSUPPORTED, no downmix), no samples (AG_EFORMAT "has no
 * samples"), a file libsndfile cannot open (AG_EFORMAT with its reason),
 * a data chunk declaring more bytes than the file holds or a short read
 * (AG_EFORMAT "truncated"), a sample that is NaN or infinite
 * (AG_ENONFINITE), max_samples 0 or above AG_AUDIO_SAMPLES_MAX (AG_EINVAL).
 * Not a regular file: AG_EIO. */
AG_EXPORT int ag_audio_read(const char *path, int sample_rate, size_t max_samples,
                            ag_audio *out, ag_error *err);
AG_EXPORT void ag_audio_free(ag_audio *a);

/* ---- the feature extractor's parameters ------------------------------------ */

/* WhisperFeatureExtractor's parameters (preprocessor_config.json). */
typedef struct {
    int n_mels;            /* "feature_size": 80 (128 for large-v3) */
    int n_fft;             /* "n_fft": 400; even */
    int hop_length;        /* "hop_length": 160 */
    int sampling_rate;     /* "sampling_rate": 16000 */
    int chunk_length;      /* "chunk_length": 30 (seconds) */
    size_t n_samples;      /* chunk_length * sampling_rate: 480000 */
    size_t nb_max_frames;  /* n_samples / hop_length: 3000 frames */
    float padding_value;   /* "padding_value": 0.0, what the audio is padded with */
} ag_whisper_fe_config;

/* Hugging Face's defaults (WhisperFeatureExtractor.__init__): 80 mels,
 * n_fft 400, hop 160, 16 kHz, 30 s, padding 0. */
AG_EXPORT void ag_whisper_fe_config_default(ag_whisper_fe_config *cfg);

/* Read a preprocessor_config.json: keys absent take the defaults above;
 * "n_samples" and "nb_max_frames", when present, must equal what
 * chunk_length, sampling_rate and hop_length give (Hugging Face recomputes
 * them; a file where they disagree is refused); "feature_extractor_type",
 * when present, must be "WhisperFeatureExtractor"; "dither", when present,
 * must be 0 (Hugging Face's dither adds random noise). Bounds: feature_size
 * 1..AG_WHISPER_MELS_MAX, n_fft even 2..AG_WHISPER_NFFT_MAX, hop_length
 * >= 1, n_samples 1..AG_AUDIO_SAMPLES_MAX and above n_fft / 2, the frame
 * count 2..AG_WHISPER_FRAMES_MAX. Errors: AG_EIO, AG_EFORMAT (naming the
 * file and the field), AG_EUNSUPPORTED. */
AG_EXPORT int ag_whisper_fe_config_load(const char *path, ag_whisper_fe_config *cfg,
                                        ag_error *err);

/* The checks of ag_whisper_fe_config_load on a config filled by hand
 * (AG_EINVAL). */
AG_EXPORT int ag_whisper_fe_config_check(const ag_whisper_fe_config *cfg, ag_error *err);

/* The mel filter bank as Hugging Face builds it (audio_utils.py,
 * mel_filter_bank with norm="slaney", mel_scale="slaney", 0..8000 Hz):
 * *out is a new (1 + n_fft/2, n_mels) array of float64, the layout Hugging
 * Face keeps. cfg NULL: the defaults. */
AG_EXPORT int ag_whisper_mel_filters(const ag_whisper_fe_config *cfg, ag_array *out,
                                     ag_error *err);

/* ---- features ------------------------------------------------------------ */

/* Log-mel input features, float32 as Hugging Face returns them. */
typedef struct {
    size_t n_mels;         /* rows */
    size_t frames;         /* columns; the encoder sees frames / 2 positions */
    float *data;           /* (n_mels, frames) C order, owned */
} ag_whisper_features;

/* `frames` below: 0 keeps every frame; otherwise a count from 1 to the
 * frames there are keeps the first `frames` (AG_EINVAL otherwise; an odd
 * count T gives the encoder ceil(T/2) positions).
 * Frames are dropped after the whole 30 s window was computed and clamped
 * to its maximum - 8 (docs/audio.md), so the frames kept are exactly the
 * first columns of what Hugging Face returns. */

/* The features of n samples (float32, at cfg's rate; cfg NULL: the
 * defaults): padded with padding_value or cut to n_samples, then the
 * extractor's pipeline. n may be 0 (all padding). */
AG_EXPORT int ag_whisper_features_from_samples(const ag_whisper_fe_config *cfg,
                                               const float *samples, size_t n, size_t frames,
                                               ag_whisper_features *out, ag_error *err);

/* The features of a sound file: ag_audio_read at cfg's rate, at most
 * n_samples read, then ag_whisper_features_from_samples. */
AG_EXPORT int ag_whisper_features_from_audio(const char *path, const ag_whisper_fe_config *cfg,
                                             size_t frames, ag_whisper_features *out,
                                             ag_error *err);

/* Features saved by Python (np.save of input_features): a '<f4' or '<f8'
 * .npy of shape (n_mels, F) or (1, n_mels, F), n_mels equal to cfg's, F
 * 1..cfg's frame count (even as Hugging Face writes it, odd accepted), every value finite. '<f8' values are
 * rounded to float32. Errors: those of ag_npy_read, AG_ESHAPE, AG_EINVAL
 * (frames), AG_ENONFINITE, each naming `path`. */
AG_EXPORT int ag_whisper_features_read_npy(const char *path, const ag_whisper_fe_config *cfg,
                                           size_t frames, ag_whisper_features *out,
                                           ag_error *err);

/* The same checks and frames on an array already read (name: the array's
 * name in messages); a is borrowed. */
AG_EXPORT int ag_whisper_features_from_array(const char *name, const ag_array *a,
                                             const ag_whisper_fe_config *cfg, size_t frames,
                                             ag_whisper_features *out, ag_error *err);

/* Write f as a '<f4' .npy of shape (n_mels, frames) (ag_npy_write_f32):
 * np.load gives back the same float32 bits. */
AG_EXPORT int ag_whisper_features_write_npy(const char *path, const ag_whisper_features *f,
                                            ag_error *err);

AG_EXPORT void ag_whisper_features_free(ag_whisper_features *f);

#ifdef __cplusplus
}
#endif
#endif
