#!/usr/bin/env python3
"""check_image.py — attngeom's image preprocessing (examples/image_pixels,
through attngeom/image.h) against tests/ref/image_ref.py, the independent
numpy reference, for every image of tests/data/images/ and a set of
preprocessor configs: each of Pillow's six filters at sizes that shrink,
enlarge, and do both (one axis each), ViT's 224 x 224, other rescale /
normalize settings, and no resize (the decoder alone); then
BitImageProcessor's and CLIPImageProcessor's (shortest-edge resize, centre
crop inside and beyond the image, CLIP's mean and std: crop_cases).

The uint8 image after resizing must be bit-identical; the float32 tensor
must agree within 1e-6 (it is expected to agree exactly: the same float32
operations in the same order).

    /usr/bin/python3 tests/ref/check_image.py build/examples/image_pixels
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import image_ref  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "..", "data", "images")
TOL = 1e-6
SIZES = [(12, 16), (70, 50), (60, 10), (224, 224)]  # (height, width)
IMAGENET = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
# image_utils.OPENAI_CLIP_MEAN / _STD: BitImageProcessor's and
# CLIPImageProcessor's defaults.
CLIP = ([0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711])
BIT = dict(resample=3, mean=CLIP[0], std=CLIP[1], shortest_edge=224, crop=(224, 224))


def images():
    """Every test image but the refused ones (cmyk_8x6.jpg and scans_101_48x36.jpg,
    past AG_JPEG_SCANS_MAX: tests/media/test_image.c)."""
    found = glob.glob(os.path.join(IMAGES, "*.png")) + glob.glob(os.path.join(IMAGES, "*.jpg"))
    refused = ("cmyk", "scans_")
    return sorted(p for p in found if not os.path.basename(p).startswith(refused))


def cases():
    """(preprocessor_config.json dict, the keyword arguments of
    image_ref.hf_pixels it means)."""
    for h, w in SIZES:
        for rs in range(6):
            yield ({"size": {"height": h, "width": w}, "resample": rs},
                   dict(size=(h, w), resample=rs))
    yield ({"size": 32, "resample": 3, "image_mean": IMAGENET[0], "image_std": IMAGENET[1]},
           dict(size=(32, 32), resample=3, mean=IMAGENET[0], std=IMAGENET[1]))
    yield ({"size": [20, 24], "do_rescale": False, "image_mean": 127.5, "image_std": 58.0},
           dict(size=(20, 24), do_rescale=False, mean=(127.5,) * 3, std=(58.0,) * 3))
    yield ({"size": {"height": 18, "width": 18}, "do_normalize": False, "rescale_factor": 0.5},
           dict(size=(18, 18), do_normalize=False, rescale_factor=0.5))
    yield ({"do_resize": False, "image_mean": IMAGENET[0], "image_std": IMAGENET[1]},
           dict(do_resize=False, mean=IMAGENET[0], std=IMAGENET[1]))
    yield from crop_cases()


def crop_cases():
    """BitImageProcessor / CLIPImageProcessor: shortest-edge resizes that
    shrink and enlarge, crops inside the image and larger than it on one
    axis or both (zero padding), odd sizes, every filter."""
    bit, clip = "BitImageProcessor", "CLIPImageProcessor"
    yield {"image_processor_type": bit}, BIT
    yield {"image_processor_type": clip}, BIT
    # facebook/dinov2-*'s file
    yield ({"image_processor_type": bit, "size": {"shortest_edge": 256}, "resample": 3,
            "crop_size": {"height": 224, "width": 224}, "do_center_crop": True,
            "image_mean": IMAGENET[0], "image_std": IMAGENET[1],
            "rescale_factor": 0.00392156862745098},
           dict(BIT, shortest_edge=256, mean=IMAGENET[0], std=IMAGENET[1],
                rescale_factor=0.00392156862745098))
    # openai/clip-vit-*'s old form: ints, feature_extractor_type
    yield ({"feature_extractor_type": "CLIPFeatureExtractor", "size": 24, "crop_size": 24},
           dict(BIT, shortest_edge=24, crop=(24, 24)))
    for rs in range(6):
        yield ({"image_processor_type": bit, "size": {"shortest_edge": 17}, "resample": rs,
                "crop_size": {"height": 15, "width": 13}},
               dict(BIT, shortest_edge=17, resample=rs, crop=(15, 13)))
    yield ({"image_processor_type": clip, "size": 9, "crop_size": [20, 7]},
           dict(BIT, shortest_edge=9, crop=(20, 7)))
    yield ({"image_processor_type": bit, "size": 11, "crop_size": 31},
           dict(BIT, shortest_edge=11, crop=(31, 31)))
    yield ({"image_processor_type": bit, "size": {"height": 14, "width": 30}, "crop_size": 12},
           dict(BIT, shortest_edge=None, size=(14, 30), crop=(12, 12)))
    yield ({"image_processor_type": clip, "do_resize": False, "crop_size": [10, 50]},
           dict(BIT, do_resize=False, crop=(10, 50)))
    yield ({"image_processor_type": bit, "size": 19, "do_center_crop": False},
           dict(BIT, shortest_edge=19, crop=None))


def run_c(prog, image, config, tmp):
    """(tensor (3, H, W) float32, resized uint8 (H, W, 3)) from the C side."""
    cfg, out, rsz = (os.path.join(tmp, n) for n in ("c.json", "o.npy", "r.npy"))
    with open(cfg, "w") as f:
        json.dump(config, f)
    subprocess.run([prog, image, cfg, out, rsz], check=True)
    t = np.load(out)
    assert t.dtype == np.float32, "not a float32 array: %s" % t.dtype
    return t.astype(np.float32), np.load(rsz).astype(np.uint8)


def compare(label, tensor, resized, ref_tensor, ref_resized, stats):
    """Record one comparison; returns a failure line or None."""
    if resized.shape != ref_resized.shape or not np.array_equal(resized, ref_resized):
        bad = resized.shape == ref_resized.shape and int(
            np.abs(resized.astype(int) - ref_resized).max())
        return "%s: resized uint8 differs (shape %s vs %s, max diff %s)" % (
            label, resized.shape, ref_resized.shape, bad)
    d = float(np.abs(tensor.astype(np.float64) - ref_tensor).max())
    stats["max"] = max(stats["max"], d)
    stats["n"] += 1
    stats["exact"] += int(d == 0.0)
    return None if d <= TOL else "%s: tensor differs by %g" % (label, d)


def check_all(prog, reference, title):
    """Compare the C side with reference(image, **kw) -> (tensor, resized)
    over every image and case; print the figures, exit 1 on a failure."""
    stats, failures = {"max": 0.0, "n": 0, "exact": 0}, []
    with tempfile.TemporaryDirectory() as tmp:
        for image in images():
            for config, kw in cases():
                tensor, resized = run_c(prog, image, config, tmp)
                ref_t, ref_r = reference(image, **kw)
                label = "%s %s" % (os.path.basename(image), json.dumps(config))
                f = compare(label, tensor, resized, ref_t, ref_r, stats)
                if f:
                    failures.append(f)
    for f in failures[:20]:
        print("FAIL", f)
    print("%s: %d comparisons, %d exact, max |C - reference| = %g (tolerance %g)"
          % (title, stats["n"], stats["exact"], stats["max"], TOL))
    sys.exit(1 if failures or stats["n"] == 0 else 0)


def numpy_reference(image, **kw):
    rgb = image_ref.decoded_rgb(image)
    keys = ("size", "resample", "do_resize", "shortest_edge", "crop")
    resized = image_ref.prepared(rgb, **{k: v for k, v in kw.items() if k in keys})
    return image_ref.hf_pixels(rgb, **kw), resized


if __name__ == "__main__":
    check_all(sys.argv[1], numpy_reference, "check_image")
