#!/usr/bin/python3
"""Write the test audio of tests/data/audio/ (tests/media/test_audio.c,
tests/ref/check_whisper_features.py): small deterministic WAV files made
with the standard library only (wave, struct, math, random).

    /usr/bin/python3 tests/ref/make_wavs.py OUTDIR          # the committed set
    /usr/bin/python3 tests/ref/make_wavs.py OUTDIR --long   # + long_31s.wav

Good files are 16 kHz mono; 16-bit PCM unless the name says otherwise.
Hostile files: another rate, two channels, a data chunk cut short, no
samples, an RF64 header claiming 2^40 frames, and text named .wav. The 31 s
file (1 MB) is made at test time, never committed (--long)."""
import math
import os
import random
import struct
import sys
import wave

RATE = 16000


def clip16(x):
    """A sample in [-1, 1) as 16-bit PCM, rounded to nearest."""
    return max(-32768, min(32767, int(round(x * 32768.0))))


def write_pcm(path, samples, width=2, rate=RATE, channels=1):
    """samples: floats in [-1, 1] (interleaved when channels > 1) as PCM of
    `width` bytes (1: unsigned 8-bit, 2/3/4: signed little-endian)."""
    scale = {1: 128, 2: 32768, 3: 1 << 23, 4: 1 << 31}[width]
    out = bytearray()
    for x in samples:
        v = max(-scale, min(scale - 1, int(round(x * scale))))
        if width == 1:
            out += struct.pack("<B", v + 128)
        else:
            out += (v & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(bytes(out))


def write_float32(path, samples, rate=RATE):
    """IEEE float WAV (format tag 3) with a fact chunk, written by hand:
    the wave module writes PCM only."""
    data = struct.pack("<%df" % len(samples), *samples)
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)
    fact = struct.pack("<I", len(samples))
    body = (b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
            + b"fact" + struct.pack("<I", 4) + fact
            + b"data" + struct.pack("<I", len(data)) + data)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", len(body)) + body)


def chirp(seconds, f0=100.0, f1=6000.0, amp=0.5):
    """Linear chirp from f0 to f1 Hz: phase 2 pi (f0 t + (f1 - f0) t^2 / (2 T))."""
    n = int(round(seconds * RATE))
    T = seconds
    return [amp * math.sin(2 * math.pi * (f0 * t + (f1 - f0) * t * t / (2 * T)))
            for t in (i / RATE for i in range(n))]


def tones_noise(seconds, seed=15):
    """440 Hz and 1500 Hz tones plus Gaussian noise (sigma 0.05, seeded)."""
    rng = random.Random(seed)
    n = int(round(seconds * RATE))
    return [0.3 * math.sin(2 * math.pi * 440 * i / RATE)
            + 0.2 * math.sin(2 * math.pi * 1500 * i / RATE)
            + rng.gauss(0.0, 0.05) for i in range(n)]


def tone(seconds, hz=1000.0, amp=0.5):
    n = int(round(seconds * RATE))
    return [amp * math.sin(2 * math.pi * hz * i / RATE) for i in range(n)]


def write_truncated(path):
    """A 16-bit mono header whose data chunk claims 16000 samples (32000
    bytes) of which 1000 are there: a file cut short in transfer."""
    write_pcm(path, tone(1.0))
    with open(path, "rb") as f:
        head = f.read(44 + 2000)
    with open(path, "wb") as f:
        f.write(head)


def write_huge(path):
    """RF64 (EBU Tech 3306): RIFF and data sizes 0xFFFFFFFF, the real ones
    in the ds64 chunk, which claims 2^40 16-bit frames (2 TiB) over 400
    samples that are there."""
    frames = 1 << 40
    data = struct.pack("<400h", *[clip16(x) for x in tone(400 / RATE)])
    fmt = struct.pack("<HHIIHH", 1, 1, RATE, RATE * 2, 2, 16)
    ds64 = struct.pack("<QQQI", 36 + 2 * frames, 2 * frames, frames, 0)
    body = (b"WAVE" + b"ds64" + struct.pack("<I", len(ds64)) + ds64
            + b"fmt " + struct.pack("<I", len(fmt)) + fmt
            + b"data" + struct.pack("<I", 0xFFFFFFFF) + data)
    with open(path, "wb") as f:
        f.write(b"RF64" + struct.pack("<I", 0xFFFFFFFF) + body)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_wavs.py OUTDIR [--long]")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)  # noqa: E731
    if "--long" in sys.argv[2:]:
        # 31 s: the last second is cut by the 30 s window
        write_pcm(p("long_31s.wav"), chirp(31.0, 50.0, 7500.0, 0.4))
        return
    write_pcm(p("chirp_1s.wav"), chirp(1.0))
    write_pcm(p("tones_noise_3p7s.wav"), tones_noise(3.7))
    write_pcm(p("silence.wav"), [0.0] * (RATE // 2))
    write_pcm(p("tone_pcm8.wav"), tone(0.25), width=1)
    write_pcm(p("tone_pcm24.wav"), tone(0.25), width=3)
    write_pcm(p("tone_pcm32.wav"), tone(0.25), width=4)
    write_float32(p("tone_float.wav"), tone(0.25))
    # hostile
    write_pcm(p("rate_8k.wav"), tone(0.1), rate=8000)
    write_pcm(p("stereo.wav"), [x for x in tone(0.1) for _ in (0, 1)], channels=2)
    write_truncated(p("truncated.wav"))
    write_pcm(p("empty.wav"), [])
    write_huge(p("huge_rf64.wav"))
    with open(p("not_audio.wav"), "w") as f:
        f.write("this is text, not a RIFF file\n")


if __name__ == "__main__":
    main()
