#!/usr/bin/env python3
"""check_image_pil.py — attngeom's image preprocessing against Pillow
itself: PIL.Image.open(FILE).convert("RGB").resize((W, H), resample), then
transformers' ViTImageProcessor rescale and normalize re-written with numpy
(image_transforms.rescale / normalize), for the images and configs of
check_image.py. Needs Debian's python3-pil (scripts/install-bench-deps.sh);
make test does not run it.

    /usr/bin/python3 tests/ref/check_image_pil.py build/examples/image_pixels
"""
import os
import sys
import warnings

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import image_ref  # noqa: E402
from check_image import check_all  # noqa: E402


def pil_pixels(path, size=(224, 224), resample=2, do_resize=True, do_rescale=True,
               rescale_factor=1 / 255, do_normalize=True, mean=(0.5,) * 3, std=(0.5,) * 3,
               shortest_edge=None, crop=None):
    """(pixel_values[0] (3, H, W), the resized uint8 image) through Pillow;
    BiT's / CLIP's shortest-edge size and centre crop are image_ref's ports
    of get_resize_output_image_size and center_crop."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # P images with tRNS bytes
        im = Image.open(path).convert("RGB")
    if do_resize:
        if shortest_edge is not None:
            size = image_ref.shortest_edge_size(im.height, im.width, shortest_edge)
        im = im.resize((size[1], size[0]), resample=resample)
    u8 = np.array(im)
    if crop is not None:
        u8 = image_ref.center_crop(u8, *crop)
    x = u8
    if do_rescale:
        x = (x.astype(np.float64) * rescale_factor).astype(np.float32)
    if do_normalize:
        x = x.astype(np.float32) if x.dtype == np.uint8 else x
        x = (x - np.array(mean, dtype=np.float32)) / np.array(std, dtype=np.float32)
    return x.transpose(2, 0, 1), u8


if __name__ == "__main__":
    check_all(sys.argv[1], pil_pixels, "check_image_pil (Pillow %s)" % Image.__version__)
