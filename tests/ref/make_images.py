#!/usr/bin/env python3
"""make_images.py — writes the test images of tests/data/images/ (committed;
make test never runs this).

PNGs are written here from numpy arrays with zlib, byte by byte from the PNG
specification (ISO/IEC 15948): every colour type and bit depth, each of the
five row filters, Adam7 interlacing, palettes with tRNS. JPEGs need cjpeg
and djpeg (Debian's libjpeg-turbo-progs) at generation time only: each
NAME.jpg is committed with NAME.jpg.ppm, djpeg's decoding of it with the
default settings (islow DCT, fancy upsampling), the pixels the decoders are
compared with (tests/ref/image_ref.py). cmyk_8x6.jpg, which must be
refused, is written with Pillow (python3-pil). scans_101_48x36.jpg, refused
too, is progressive_48x36.jpg with one of its scans repeated
(make_many_scans; `make_images.py --scans` writes it alone).

    /usr/bin/python3 tests/ref/make_images.py [--scans] [OUTDIR]
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]  # (x0, y0, dx, dy) of the seven passes
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def pack_row(samples, depth):
    """One row of samples (ints) as bytes: big-endian 16-bit, bytes, or
    bits packed from the most significant end."""
    if depth == 16:
        return np.asarray(samples, dtype=">u2").tobytes()
    if depth == 8:
        return np.asarray(samples, dtype=np.uint8).tobytes()
    per = 8 // depth
    out = bytearray((len(samples) + per - 1) // per)
    for i, v in enumerate(samples):
        out[i // per] |= int(v) << (8 - depth * (i % per + 1))
    return bytes(out)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def filter_rows(rows, bpp, first_filter):
    """Each row prefixed with its filter type, filter types cycling 0..4."""
    out, prev = bytearray(), bytes(len(rows[0])) if rows else b""
    for r, row in enumerate(rows):
        ft = (first_filter + r) % 5
        f = bytearray(len(row))
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][ft]
            f[i] = (x - pred) & 0xFF
        out += bytes([ft]) + f
        prev = row
    return bytes(out)


def write_png(path, samples, color, depth, palette=None, trns=None, interlace=False):
    """samples: (h, w, channels) ints (palette indices for colour type 3)."""
    h, w, ch = samples.shape
    assert ch == CHANNELS[color]
    bpp = max(1, ch * depth // 8)
    flat = samples.reshape(h, w * ch)
    if interlace:
        data = b""
        for p, (x0, y0, dx, dy) in enumerate(ADAM7):
            sub = samples[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                rows = [pack_row(r.reshape(-1), depth) for r in sub]
                data += filter_rows(rows, bpp, p)
    else:
        data = filter_rows([pack_row(r, depth) for r in flat], bpp, 0)
    png = b"\x89PNG\r\n\x1a\n"
    png += chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, 1 if interlace else 0))
    if palette is not None:
        png += chunk(b"PLTE", np.asarray(palette, dtype=np.uint8).tobytes())
    if trns is not None:
        png += chunk(b"tRNS", trns)
    z = zlib.compress(data, 9)
    png += chunk(b"IDAT", z[: len(z) // 2]) + chunk(b"IDAT", z[len(z) // 2:])  # split IDAT
    png += chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def scene(h, w, ch, rng, top=255):
    """Gradients, a diagonal edge and noise: every resampling tap matters."""
    y, x = np.mgrid[0:h, 0:w]
    base = []
    for c in range(ch):
        g = (x * (c + 1) * 37 + y * (3 - c % 3) * 23) % 256
        edge = np.where(x * h > y * w, 200, 30)
        base.append(0.5 * g + 0.3 * edge + 0.2 * rng.integers(0, 256, size=(h, w)))
    img = np.stack(base, axis=-1) * (top / 255.0)
    return np.clip(np.rint(img), 0, top).astype(np.int64)


def make_pngs(out, rng):
    def png(name, *args, **kw):
        write_png(os.path.join(out, name), *args, **kw)

    png("rgb8_37x23.png", scene(23, 37, 3, rng), 2, 8)
    png("rgb8_160x120.png", scene(120, 160, 3, rng), 2, 8)
    png("rgb8_1x1.png", np.array([[[200, 10, 99]]]), 2, 8)
    png("rgb8_3x2.png", scene(2, 3, 3, rng), 2, 8)
    png("rgba8_29x41.png", scene(41, 29, 4, rng), 6, 8)
    png("gray8_40x30.png", scene(30, 40, 1, rng), 0, 8)
    png("gray1_33x17.png", scene(17, 33, 1, rng, top=1), 0, 1)
    png("gray2_19x13.png", scene(13, 19, 1, rng, top=3), 0, 2)
    png("gray4_23x21.png", scene(21, 23, 1, rng, top=15), 0, 4)
    png("graya8_31x27.png", scene(27, 31, 2, rng), 4, 8)
    pal = rng.integers(0, 256, size=(200, 3))
    png("pal8_35x25.png", scene(25, 35, 1, rng) * 199 // 255, 3, 8, palette=pal,
        trns=bytes(range(0, 250, 5)))
    png("pal4_18x22.png", scene(22, 18, 1, rng, top=15), 3, 4, palette=pal[:16])
    png("pal1_13x9.png", scene(9, 13, 1, rng, top=1), 3, 1, palette=pal[:2])
    png("rgb16_27x19.png", scene(19, 27, 3, rng, top=65535), 2, 16)
    # I;16: values below 256 survive convert("RGB"), the rest become 255
    g16 = scene(18, 26, 1, rng, top=600)
    g16[::5] *= 97
    png("gray16_26x18.png", g16, 0, 16, trns=struct.pack(">H", 7))
    png("graya16_21x15.png", scene(15, 21, 2, rng, top=65535), 4, 16)
    png("rgba16_24x16.png", scene(16, 24, 4, rng, top=65535), 6, 16)
    png("rgb8_adam7_45x33.png", scene(33, 45, 3, rng), 2, 8, interlace=True)
    png("gray8_adam7_7x5.png", scene(5, 7, 1, rng), 0, 8, interlace=True)
    png("pal2_adam7_11x10.png", scene(10, 11, 1, rng, top=3), 3, 2, palette=pal[:4],
        interlace=True)
    png("rgb8_trns_20x14.png", scene(14, 20, 3, rng), 2, 8, trns=struct.pack(">HHH", 1, 2, 3))


def write_pnm(path, img):
    h, w, ch = img.shape
    magic = b"P6" if ch == 3 else b"P5"
    with open(path, "wb") as f:
        f.write(magic + b"\n%d %d\n255\n" % (w, h) + img.astype(np.uint8).tobytes())


def make_jpegs(out, rng):
    cases = [("rgb420_40x30.jpg", (30, 40, 3), []),
             ("rgb444_33x17.jpg", (17, 33, 3), ["-sample", "1x1"]),
             ("rgb420_odd_35x21.jpg", (21, 35, 3), ["-quality", "60"]),
             ("progressive_48x36.jpg", (36, 48, 3), ["-progressive"]),
             ("gray_30x22.jpg", (22, 30, 1), [])]
    with tempfile.TemporaryDirectory() as tmp:
        for name, (h, w, ch), opts in cases:
            src = os.path.join(tmp, "in.pnm")
            write_pnm(src, scene(h, w, ch, rng))
            dst = os.path.join(out, name)
            subprocess.run(["cjpeg", "-quality", "90", *opts, "-outfile", dst, src], check=True)
            subprocess.run(["djpeg", "-pnm", "-outfile", dst + ".ppm", dst], check=True)


SCANS_MAX = 100  # AG_JPEG_SCANS_MAX (attngeom/image.h)


def make_many_scans(out):
    """progressive_48x36.jpg with its smallest scan (the SOS segment with its
    entropy-coded data, 56 bytes) repeated right after itself until the file
    has one scan more than AG_JPEG_SCANS_MAX: what a hostile file does to make
    a decoder pass over the image thousands of times. The smallest, so that
    the file (6.9 KB) fits the fuzzer's 8192-byte inputs (tests/fuzz/)."""
    with open(os.path.join(out, "progressive_48x36.jpg"), "rb") as f:
        jpg = f.read()
    # FF DA cannot occur inside entropy-coded data (an FF there is followed
    # by 00 or a restart marker), so the scans start at its occurrences
    starts, at = [], jpg.find(b"\xff\xda")
    while at >= 0:
        starts.append(at)
        at = jpg.find(b"\xff\xda", at + 2)
    ends = starts[1:] + [len(jpg) - 2]  # the last scan ends at EOI
    k = min(range(len(starts)), key=lambda i: ends[i] - starts[i])
    scan = jpg[starts[k]:ends[k]]
    extra = SCANS_MAX + 1 - len(starts)
    with open(os.path.join(out, "scans_101_48x36.jpg"), "wb") as f:
        f.write(jpg[:ends[k]] + scan * extra + jpg[ends[k]:])


def make_cmyk(out):
    """A CMYK JPEG, which the decoder refuses: cjpeg cannot write one, Pillow
    (python3-pil) can."""
    from PIL import Image
    Image.new("CMYK", (8, 6), (10, 200, 30, 40)).save(os.path.join(out, "cmyk_8x6.jpg"))


def main():
    args = [a for a in sys.argv[1:] if a != "--scans"]
    out = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "data", "images")
    os.makedirs(out, exist_ok=True)
    if "--scans" in sys.argv:
        make_many_scans(out)
        return
    rng = np.random.default_rng(15)
    make_pngs(out, rng)
    make_jpegs(out, rng)
    make_many_scans(out)
    make_cmyk(out)
    # indices past a 5-entry PLTE: PIL's palette is a gray ramp beneath it
    # (its own generator, so the files above stay as they were)
    rng = np.random.default_rng(16)
    write_png(os.path.join(out, "pal8_short_12x10.png"), scene(10, 12, 1, rng), 3, 8,
              palette=rng.integers(0, 256, size=(5, 3)))


if __name__ == "__main__":
    main()
