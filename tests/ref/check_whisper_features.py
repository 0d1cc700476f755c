#!/usr/bin/python3
"""Whisper's input features from libattngeom (ag_whisper_*, ag_audio_read,
through ctypes) against whisper_features_ref.py, a numpy float64 port of
Hugging Face's numpy route, on the WAVs of tests/data/audio/ (made by
make_wavs.py) and a 31 s one made here.

    /usr/bin/python3 tests/ref/check_whisper_features.py build/attngeom

Checked: the samples as read (bit for bit the float32 of soundfile's
float64), the mel filters (float64), the features within 1e-4 (the max
error is printed: expect about 1e-6, the float32 rounding of log10), the
first N frames, feature_size 128, and .npy written as float32."""
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libattngeom  # noqa: E402
import whisper_features_ref as ref  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
AUDIO = os.path.join(HERE, "..", "data", "audio")
TOL = 1e-4


class Config(ctypes.Structure):
    _fields_ = [("n_mels", ctypes.c_int), ("n_fft", ctypes.c_int), ("hop_length", ctypes.c_int),
                ("sampling_rate", ctypes.c_int), ("chunk_length", ctypes.c_int),
                ("n_samples", ctypes.c_size_t), ("nb_max_frames", ctypes.c_size_t),
                ("padding_value", ctypes.c_float)]


class Features(ctypes.Structure):
    _fields_ = [("n_mels", ctypes.c_size_t), ("frames", ctypes.c_size_t),
                ("data", ctypes.POINTER(ctypes.c_float))]


class Audio(ctypes.Structure):
    _fields_ = [("samples", ctypes.POINTER(ctypes.c_float)), ("n", ctypes.c_size_t),
                ("n_file", ctypes.c_uint64), ("sample_rate", ctypes.c_int)]


failures, passes = [], []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    (passes if ok else failures).append(what)


def features(lib, path, cfg=None, frames=0):
    f, err = Features(), libattngeom.Error()
    rc = lib.ag_whisper_features_from_audio(path.encode(), ctypes.byref(cfg) if cfg else None,
                                            frames, ctypes.byref(f), ctypes.byref(err))
    if rc != 0:
        raise RuntimeError(err.message.decode())
    a = np.ctypeslib.as_array(f.data, shape=(f.n_mels, f.frames)).copy()
    lib.ag_whisper_features_free(ctypes.byref(f))
    return a


def check_samples(lib, path):
    a, err = Audio(), libattngeom.Error()
    rc = lib.ag_audio_read(path.encode(), 16000, 480000, ctypes.byref(a), ctypes.byref(err))
    x, _ = ref.read_wav(path)
    got = np.ctypeslib.as_array(a.samples, shape=(a.n,)).copy() if rc == 0 else None
    lib.ag_audio_free(ctypes.byref(a))
    want = x[:480000].astype(np.float32)
    check(got is not None and got.shape == want.shape and np.array_equal(got, want),
          "%s: %d samples equal soundfile's float64 cast to float32" % (os.path.basename(path),
                                                                       want.size))


def check_features(lib, path, worst):
    x, _ = ref.read_wav(path)
    want = ref.log_mel(x)
    got = features(lib, path)
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if got.shape == want.shape else np.inf
    worst.append(err)
    check(err <= TOL, "%s: features %s, max |C - reference| = %.3g" % (
        os.path.basename(path), got.shape, err))
    return want


def check_filters(lib):
    for n_mels in (80, 128):
        cfg = Config()
        lib.ag_whisper_fe_config_default(ctypes.byref(cfg))
        cfg.n_mels = n_mels
        a, err = libattngeom.Array(), libattngeom.Error()
        rc = lib.ag_whisper_mel_filters(ctypes.byref(cfg), ctypes.byref(a), ctypes.byref(err))
        got = np.ctypeslib.as_array(a.data, shape=(a.shape[0], a.shape[1])).copy() if rc == 0 else None
        lib.ag_array_free(ctypes.byref(a))
        want = ref.mel_filters(n_mels)
        diff = float(np.max(np.abs(got - want))) if got is not None else np.inf
        check(diff <= 1e-15, "mel filters (201, %d): max |C - reference| = %.3g" % (n_mels, diff))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_whisper_features.py build/attngeom")
    lib = libattngeom.load(sys.argv[1], "check_whisper_features")
    if lib is None:
        return
    lib.ag_whisper_features_from_audio.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t,
                                                   ctypes.c_void_p, ctypes.c_void_p]
    lib.ag_audio_read.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t,
                                  ctypes.c_void_p, ctypes.c_void_p]
    lib.ag_whisper_features_write_npy.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
    check_filters(lib)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "make_wavs.py"), tmp, "--long"],
                       check=True)
        names = ["chirp_1s.wav", "tones_noise_3p7s.wav", "silence.wav", "tone_pcm8.wav",
                 "tone_pcm24.wav", "tone_pcm32.wav", "tone_float.wav"]
        paths = [os.path.join(AUDIO, n) for n in names] + [os.path.join(tmp, "long_31s.wav")]
        worst = []
        for p in paths:
            check_samples(lib, p)
            want = check_features(lib, p, worst)
        # the first N frames: columns of the full features (clamped over all 3000)
        p = os.path.join(AUDIO, "tones_noise_3p7s.wav")
        want = ref.log_mel(ref.read_wav(p)[0])
        got = features(lib, p, frames=370)
        check(got.shape == (80, 370) and np.max(np.abs(got - want[:, :370])) <= TOL,
              "frames=370: the first 370 columns of the 3000")
        # large-v3's 128 mel bins
        cfg = Config()
        lib.ag_whisper_fe_config_default(ctypes.byref(cfg))
        cfg.n_mels = 128
        got = features(lib, os.path.join(AUDIO, "chirp_1s.wav"), cfg)
        want = ref.log_mel(ref.read_wav(os.path.join(AUDIO, "chirp_1s.wav"))[0], feature_size=128)
        err = float(np.max(np.abs(got - want)))
        worst.append(err)
        check(got.shape == (128, 3000) and err <= TOL,
              "feature_size 128: max |C - reference| = %.3g" % err)
        # --save-input: float32 .npy, np.load gives the same bits
        f, e = Features(), libattngeom.Error()
        lib.ag_whisper_features_from_audio(os.path.join(AUDIO, "chirp_1s.wav").encode(), None, 0,
                                           ctypes.byref(f), ctypes.byref(e))
        mem = np.ctypeslib.as_array(f.data, shape=(f.n_mels, f.frames)).copy()
        out = os.path.join(tmp, "features.npy")
        rc = lib.ag_whisper_features_write_npy(out.encode(), ctypes.byref(f), ctypes.byref(e))
        lib.ag_whisper_features_free(ctypes.byref(f))
        back = np.load(out) if rc == 0 else None
        check(back is not None and back.dtype == np.float32 and np.array_equal(back, mem),
              "features .npy: float32 (80, 3000), the same bits as in memory")
    print("whisper features: max error over every file %.3g (tolerance %g)" % (max(worst), TOL))
    print("check_whisper_features: %d passed, %d failed" % (len(passes), len(failures)))
    if failures:
        sys.exit("check_whisper_features: %d failed" % len(failures))


if __name__ == "__main__":
    main()
