"""Whisper's log-mel input features in numpy, an independent port of Hugging
Face's numpy route (read from transformers, not from attngeom's C):

  models/whisper/feature_extraction_whisper.py
    WhisperFeatureExtractor.__init__   mel_filter_bank(num_frequency_bins=
        1 + n_fft // 2, num_mel_filters=feature_size, min_frequency=0.0,
        max_frequency=8000.0, sampling_rate, norm="slaney", mel_scale="slaney")
    __call__                           float64 input cast to float32; padded
        (padding_value) or truncated to n_samples = chunk_length * rate
    _np_extract_fbank_features         spectrogram(..., power=2.0,
        log_mel="log10"), drop the last frame, max(x, x.max() - 8),
        (x + 4) / 4
  audio_utils.py
    hertz_to_mel / mel_to_hertz ("slaney"), _create_triangular_filter_bank,
    window_function("hann") = np.hanning(n + 1)[:-1],
    spectrogram(center=True, pad_mode="reflect", mel_floor=1e-10,
    dtype=np.float32): float64 frames through np.fft.rfft, stored as
    complex64, np.abs(., dtype=float64) ** 2, filters, floor, log10, float32.

Vectorised over frames (the C code loops frame by frame). Needs numpy only.
"""
import numpy as np

DEFAULTS = dict(feature_size=80, sampling_rate=16000, hop_length=160,
                chunk_length=30, n_fft=400, padding_value=0.0)


def hz_to_mel(f):
    """Slaney's scale: 3 f / 200 below 1 kHz, then 15 + 27 ln(f / 1000) / ln 6.4."""
    f = np.asarray(f, dtype=np.float64)
    lin = 3.0 * f / 200.0
    with np.errstate(divide="ignore"):
        log = 15.0 + np.log(f / 1000.0) * (27.0 / np.log(6.4))
    return np.where(f >= 1000.0, log, lin)


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    lin = 200.0 * m / 3.0
    log = 1000.0 * np.exp(np.log(6.4) / 27.0 * (m - 15.0))
    return np.where(m >= 15.0, log, lin)


def mel_filters(n_mels=80, n_fft=400, sampling_rate=16000, fmax=8000.0):
    """(1 + n_fft // 2, n_mels) float64, Slaney-normalised triangles."""
    edges = mel_to_hz(np.linspace(float(hz_to_mel(0.0)), float(hz_to_mel(fmax)), n_mels + 2))
    bins = np.linspace(0, sampling_rate // 2, 1 + n_fft // 2)
    lower, centre, upper = edges[:-2], edges[1:-1], edges[2:]
    rise = (bins[:, None] - lower[None, :]) / (centre - lower)[None, :]
    fall = (upper[None, :] - bins[:, None]) / (upper - centre)[None, :]
    tri = np.maximum(0.0, np.minimum(rise, fall))
    return tri * (2.0 / (upper - lower))[None, :]


def hann_periodic(n):
    return np.hanning(n + 1)[:-1]


def log_mel(samples, feature_size=80, sampling_rate=16000, hop_length=160,
            chunk_length=30, n_fft=400, padding_value=0.0):
    """Features (feature_size, n_samples // hop_length) float32 of 1-D samples."""
    x = np.asarray(samples, dtype=np.float64).astype(np.float32)
    n_samples = chunk_length * sampling_rate
    x = x[:n_samples]
    if x.size < n_samples:
        x = np.concatenate([x, np.full(n_samples - x.size, padding_value, np.float32)])
    half = n_fft // 2
    x = np.pad(x, (half, half), mode="reflect").astype(np.float64)
    n_frames = 1 + (x.size - n_fft) // hop_length
    idx = np.arange(n_fft)[None, :] + hop_length * np.arange(n_frames)[:, None]
    spec = np.fft.rfft(x[idx] * hann_periodic(n_fft)[None, :], axis=1).astype(np.complex64)
    power = np.abs(spec, dtype=np.float64) ** 2                      # (frames, bins)
    filt = mel_filters(feature_size, n_fft, sampling_rate)
    mel = np.maximum(1e-10, filt.T @ power.T)                        # (mels, frames)
    logm = np.log10(mel).astype(np.float32)[:, :-1]
    logm = np.maximum(logm, logm.max() - 8.0)
    return ((logm + 4.0) / 4.0).astype(np.float32)


def read_wav(path):
    """What soundfile.read(path) gives for the PCM WAVs of make_wavs.py
    (libsndfile's normalisation: s / 2^(bits - 1); unsigned 8-bit
    (s - 128) / 128; IEEE float as stored), float64, with the rate. Reads
    RIFF chunks itself (the wave module knows no float WAVs)."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE", path
    pos, fmt, body = 12, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        if cid == b"fmt ":
            fmt = struct.unpack("<HHIIHH", data[pos + 8:pos + 24])
        elif cid == b"data":
            body = data[pos + 8:pos + 8 + size]
        pos += 8 + size + (size & 1)
    tag, channels, rate, _, _, bits = fmt
    assert channels == 1, path
    if tag == 3:
        return np.frombuffer(body, "<f4").astype(np.float64), rate
    width = bits // 8
    if width == 1:
        return (np.frombuffer(body, np.uint8).astype(np.float64) - 128.0) / 128.0, rate
    if width == 3:
        b = np.frombuffer(body, np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        v = np.where(v >= 1 << 23, v - (1 << 24), v)
        return v.astype(np.float64) / float(1 << 23), rate
    dt = {2: "<i2", 4: "<i4"}[width]
    return np.frombuffer(body, dt).astype(np.float64) / float(1 << (bits - 1)), rate
