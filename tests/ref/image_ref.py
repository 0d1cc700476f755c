#!/usr/bin/env python3
"""image_ref.py — an independent numpy reference for attngeom's image
preprocessing (src/media/, docs/vision.md): what transformers'
ViTImageProcessor produces for PIL.Image.open(FILE), without PIL.

  decode     PNG decoded here from the specification (zlib, the five row
             filters, Adam7, bit unpacking), then PIL's mode conversions to
             RGB (PngImagePlugin._MODES, Convert.c). JPEG: the pixels djpeg
             gave at generation time (NAME.jpg.ppm, tests/ref/make_images.py).
  resize     Pillow's Image.resize (libImaging/Resample.c) as dense integer
             matrices: each axis's fixed-point weights in a (out, in) matrix,
             applied with exact int64 products; NEAREST as Geometry.c's
             ImagingScaleAffine.
  rescale,   transformers' image_transforms.rescale / normalize, in numpy
  normalize  with their dtypes.

Used by tests/ref/check_image.py (make ref-test). Run alone:
    /usr/bin/python3 tests/ref/image_ref.py IMAGE H W RESAMPLE OUT.npy
"""
import math
import struct
import sys
import zlib

import numpy as np

PNG_SIG = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]
PRECISION_BITS = 32 - 8 - 2

# ---- PNG -------------------------------------------------------------------


def _unfilter(raw, pos, nrows, rowbytes, bpp):
    """The nrows filtered rows starting at raw[pos]: (rows as bytes, end)."""
    rows, prev = [], bytearray(rowbytes)
    for _ in range(nrows):
        ft, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + rowbytes])
        pos += 1 + rowbytes
        for i in range(rowbytes):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if ft == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ft == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
            elif ft != 0:
                raise ValueError("bad filter type %d" % ft)
        rows.append(bytes(line))
        prev = line
    return rows, pos


def _unpack(row, count, depth):
    """count samples of one row."""
    if depth == 16:
        return np.frombuffer(row, dtype=">u2")[:count].astype(np.int64)
    bits = np.unpackbits(np.frombuffer(row, dtype=np.uint8))
    if depth == 8:
        return np.frombuffer(row, dtype=np.uint8)[:count].astype(np.int64)
    groups = bits[: count * depth].reshape(count, depth)
    return groups @ (1 << np.arange(depth - 1, -1, -1))


def png_samples(data):
    """(samples (h, w, channels) int64, colour type, depth, palette)."""
    assert data[:8] == PNG_SIG, "not a PNG"
    pos, idat, palette = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, dtype=np.uint8).reshape(-1, 3)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw, ch = zlib.decompress(idat), CHANNELS[color]
    bpp = max(1, ch * depth // 8)
    out = np.zeros((h, w, ch), dtype=np.int64)
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    pos = 0
    for x0, y0, dx, dy in passes:
        pw, ph = -(-(w - x0) // dx), -(-(h - y0) // dy)
        if pw <= 0 or ph <= 0:
            continue
        rows, pos = _unfilter(raw, pos, ph, -(-pw * ch * depth // 8), bpp)
        for r, row in enumerate(rows):
            out[y0 + r * dy, x0::dx][:pw] = _unpack(row, pw * ch, depth).reshape(pw, ch)
    return out, color, depth, palette


def png_rgb(data):
    """PIL's Image.open(...).convert("RGB") of a PNG, as (h, w, 3) uint8."""
    s, color, depth, palette = png_samples(data)
    if color == 3:  # PIL's palette: the gray ramp (i, i, i) under the PLTE's entries
        lut = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 3, axis=1)
        lut[: len(palette)] = palette
        return lut[s[..., 0]]
    if color in (0, 4):  # modes 1, L (L;2, L;4 scaled), I;16, LA, LA;16B
        g = s[..., 0]
        if depth < 8:
            g = g * (255 // ((1 << depth) - 1))
        elif depth == 16:
            g = np.minimum(g, 255) if color == 0 else g >> 8
        return np.repeat(g[..., None], 3, axis=2).astype(np.uint8)
    rgb = s[..., :3]
    return (rgb >> 8 if depth == 16 else rgb).astype(np.uint8)


def ppm_rgb(path):
    """A binary PGM/PPM (djpeg's output) as (h, w, 3) uint8."""
    data = open(path, "rb").read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1
    w, h = int(fields[1]), int(fields[2])
    ch = 3 if fields[0] == b"P6" else 1
    img = np.frombuffer(data[pos:pos + w * h * ch], dtype=np.uint8).reshape(h, w, ch)
    return np.repeat(img, 3, axis=2) if ch == 1 else img.copy()


def decoded_rgb(path):
    if path.endswith(".jpg"):
        return ppm_rgb(path + ".ppm")
    return png_rgb(open(path, "rb").read())

# ---- Pillow's filters ------------------------------------------------------


F32_054, F32_046 = float(np.float32(0.54)), float(np.float32(0.46))


def _sinc(x):
    if x == 0.0:
        return 1.0
    x = x * math.pi
    return math.sin(x) / x


FILTERS = {  # PIL.Image.Resampling value: (kernel, support)
    4: (lambda x: 1.0 if -0.5 < x <= 0.5 else 0.0, 0.5),
    2: (lambda x: 1.0 - abs(x) if abs(x) < 1.0 else 0.0, 1.0),
    5: (lambda x: 1.0 if x == 0.0 else 0.0 if abs(x) >= 1.0 else
        math.sin(abs(x) * math.pi) / (abs(x) * math.pi) * (F32_054 + F32_046 * math.cos(abs(x) * math.pi)),
        1.0),
    3: (lambda x: (1.5 * abs(x) - 2.5) * abs(x) * abs(x) + 1 if abs(x) < 1.0 else
        (((abs(x) - 5) * abs(x) + 8) * abs(x) - 4) * -0.5 if abs(x) < 2.0 else 0.0, 2.0),
    1: (lambda x: _sinc(x) * _sinc(x / 3) if -3.0 <= x < 3.0 else 0.0, 3.0),
}


def weight_matrix(n_in, n_out, resample):
    """(n_out, n_in) int64: Pillow's fixed-point weights of one axis."""
    kernel, support = FILTERS[resample]
    scale = n_in / n_out
    fscale = max(scale, 1.0)
    support *= fscale
    inv = 1.0 / fscale
    m = np.zeros((n_out, n_in), dtype=np.int64)
    for i in range(n_out):
        center = (i + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        w = [kernel((j - center + 0.5) * inv) for j in range(lo, hi)]
        total = 0.0
        for v in w:  # summed in order, as Pillow does
            total += v
        for j, v in zip(range(lo, hi), w):
            v = v / total if total != 0.0 else v
            m[i, j] = int(v * (1 << PRECISION_BITS) + (0.5 if v >= 0 else -0.5))
    return m


def _apply(m, img, axis):
    """Weights m along axis (0 rows, 1 columns) of (h, w, 3), rounded and
    clipped to uint8 as clip8 does."""
    acc = np.tensordot(m, img.astype(np.int64), axes=([1], [axis]))  # (out, other, 3)
    acc = (acc + (1 << (PRECISION_BITS - 1))) >> PRECISION_BITS
    acc = np.clip(acc, 0, 255).astype(np.uint8)
    return acc if axis == 0 else acc.transpose(1, 0, 2)


def _nearest_index(n_in, n_out):
    step = float(n_in) / n_out
    pos, idx = step * 0.5, []
    for _ in range(n_out):
        idx.append(-1 if pos < 0 else int(pos))
        pos += step
    return np.array(idx)


def resize(img, h, w, resample):
    """Image.resize((w, h), resample) of an RGB uint8 (h0, w0, 3) array."""
    h0, w0 = img.shape[:2]
    if (h, w) == (h0, w0):
        return img.copy()
    if resample == 0:
        ys, xs = _nearest_index(h0, h), _nearest_index(w0, w)
        out = np.zeros((h, w, 3), dtype=np.uint8)
        okx = (xs >= 0) & (xs < w0)
        for y, yi in enumerate(ys):
            if 0 <= yi < h0:
                out[y, okx] = img[yi, xs[okx]]
        return out
    if w != w0:
        img = _apply(weight_matrix(w0, w, resample), img, 1)
    if h != h0:
        img = _apply(weight_matrix(h0, h, resample), img, 0)
    return img

# ---- transformers' rescale and normalize ---------------------------------


def shortest_edge_size(h0, w0, size):
    """image_utils.get_resize_output_image_size(image, size,
    default_to_square=False) (BitImageProcessor / CLIPImageProcessor's
    resize with {"shortest_edge": size}): (height, width)."""
    short, long = (w0, h0) if w0 <= h0 else (h0, w0)
    new_short, new_long = size, int(size * long / short)
    return (new_long, new_short) if w0 <= h0 else (new_short, new_long)


def center_crop(img, crop_height, crop_width):
    """image_transforms.center_crop of a (H, W, C) array, line by line
    (zero padding where the crop is larger than the image)."""
    orig_height, orig_width = img.shape[:2]
    top = (orig_height - crop_height) // 2
    bottom = top + crop_height
    left = (orig_width - crop_width) // 2
    right = left + crop_width
    if top >= 0 and bottom <= orig_height and left >= 0 and right <= orig_width:
        return img[top:bottom, left:right]
    new_height = max(crop_height, orig_height)
    new_width = max(crop_width, orig_width)
    new_image = np.zeros_like(img, shape=(new_height, new_width) + img.shape[2:])
    top_pad = math.ceil((new_height - orig_height) / 2)
    bottom_pad = top_pad + orig_height
    left_pad = math.ceil((new_width - orig_width) / 2)
    right_pad = left_pad + orig_width
    new_image[top_pad:bottom_pad, left_pad:right_pad] = img
    top += top_pad
    bottom += top_pad
    left += left_pad
    right += left_pad
    return new_image[max(0, top):min(new_height, bottom), max(0, left):min(new_width, right)]


def prepared(rgb, size=(224, 224), resample=2, do_resize=True, shortest_edge=None, crop=None):
    """The uint8 image after resize (to size, or by shortest_edge) and, if
    crop = (height, width), center_crop: BitImageProcessor.preprocess's
    order."""
    if do_resize:
        if shortest_edge is not None:
            size = shortest_edge_size(rgb.shape[0], rgb.shape[1], shortest_edge)
        rgb = resize(rgb, size[0], size[1], resample)
    return center_crop(rgb, *crop) if crop is not None else rgb


def hf_pixels(rgb, size=(224, 224), resample=2, do_resize=True, do_rescale=True,
              rescale_factor=1 / 255, do_normalize=True, mean=(0.5,) * 3, std=(0.5,) * 3,
              shortest_edge=None, crop=None):
    """pixel_values[0] of ViTImageProcessor (BitImageProcessor /
    CLIPImageProcessor with shortest_edge or crop) for a decoded RGB
    image: (3, H, W)."""
    x = prepared(rgb, size, resample, do_resize, shortest_edge, crop)
    if do_rescale:  # image_transforms.rescale: float64 product, cast at the end
        x = (x.astype(np.float64) * rescale_factor).astype(np.float32)
    if do_normalize:  # image_transforms.normalize: in the image's float dtype
        if not np.issubdtype(x.dtype, np.floating):
            x = x.astype(np.float32)
        x = (x - np.array(mean, dtype=x.dtype)) / np.array(std, dtype=x.dtype)
    return x.transpose(2, 0, 1)


if __name__ == "__main__":
    path, h, w, rs, out = sys.argv[1:6]
    np.save(out, hf_pixels(decoded_rgb(path), (int(h), int(w)), int(rs)))
