#!/bin/sh
# tests/cli/image_processors.sh CLI — --image through BitImageProcessor's
# and CLIPImageProcessor's preprocessing (shortest-edge resize, centre crop;
# attngeom/image.h, docs/vision.md) on copies of tests/data/models/tiny-dinov2
# given a preprocessor_config.json: the positions the crop makes (CLS + the
# patches of crop_size / 8, positions interpolated when the grid differs
# from config.json's 32 x 32), --save-input equal to tests/ref/image_ref.py's
# independent numpy port bit for bit, and the configs refused by name (one
# stderr line naming the file and the value). Run from the repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
DINO=$ROOT/tests/data/models/tiny-dinov2
IMG=$ROOT/tests/data/images
need "$DINO/config.json" "$DINO/model.safetensors" "$IMG/rgb8_37x23.png" "$IMG/pal4_18x22.png"
cd "$T" || exit 1

# model FOLDER JSON : a copy of tiny-dinov2 with JSON as its preprocessor_config.json
model() {
    mkdir -p "$1"
    ln -sf "$DINO/config.json" "$DINO/model.safetensors" "$1/"
    printf '%s\n' "$2" >"$1/preprocessor_config.json"
}
# facebook/dinov2-small's file, made to fit a 32 x 32 model
model bit '{"crop_size": {"height": 32, "width": 32}, "do_center_crop": true,
 "do_convert_rgb": true, "do_normalize": true, "do_rescale": true, "do_resize": true,
 "image_mean": [0.485, 0.456, 0.406], "image_processor_type": "BitImageProcessor",
 "image_std": [0.229, 0.224, 0.225], "resample": 3, "rescale_factor": 0.00392156862745098,
 "size": {"shortest_edge": 40}}'
model clip '{"image_processor_type": "CLIPImageProcessor", "size": 20, "crop_size": [24, 40]}'
model bitdef '{"image_processor_type": "BitImageProcessor"}'

PYLIB='
sys.path.insert(0, "'"$ROOT"'/tests/ref")
import image_ref
CLIP = ([0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711])
'
PYSCRIPT='
x, img, kw, n = np.load(a[0]), a[1], eval(a[2]), int(a[4])
want = image_ref.hf_pixels(image_ref.decoded_rgb(img), **kw)
assert x.dtype == np.float32 and x.shape == want.shape, (x.shape, want.shape)
assert np.array_equal(x, want), float(np.abs(x - want).max())
rs = records(a[3])
assert rs and all(r["rows"] == n and r["row_sum_error"] < 1e-12 for r in rs), \
    sorted({r["rows"] for r in rs})
'
runj bit.json analyze bit --image "$IMG/rgb8_37x23.png" --metrics all --precision f64 \
    --format json --save-input bit.npy
pycheck "BitImageProcessor (DINOv2's): 37 x 23 -> 64 x 40 bicubic -> 32 x 32 crop, 17 rows" \
    bit.npy "$IMG/rgb8_37x23.png" \
    'dict(resample=3, shortest_edge=40, crop=(32, 32), mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225], rescale_factor=0.00392156862745098)' \
    bit.json 17
runj clip.json analyze clip --image "$IMG/pal4_18x22.png" --precision f64 --format json \
    --save-input clip.npy
pycheck "CLIPImageProcessor: 18 x 22 -> 20 x 24, crop 24 x 40 zero-padded, CLS + 3 x 5 rows" \
    clip.npy "$IMG/pal4_18x22.png" \
    'dict(resample=3, shortest_edge=20, crop=(24, 40), mean=CLIP[0], std=CLIP[1])' clip.json 16
runj bitdef.json analyze bitdef --image "$IMG/rgb8_37x23.png" --precision f64 --format json \
    --save-input bitdef.npy
pycheck "BitImageProcessor's defaults: shortest edge 224, crop 224, CLS + 28 x 28 rows" \
    bitdef.npy "$IMG/rgb8_37x23.png" \
    'dict(resample=3, shortest_edge=224, crop=(224, 224), mean=CLIP[0], std=CLIP[1])' \
    bitdef.json 785

# ---- refused by name ------------------------------------------------------------
# refused NAME NEEDLE DESC JSON : analyze on a copy with JSON fails naming NEEDLE
refused() {
    model "$1" "$4"
    run_case 1 "$2" "$3" analyze "$1" --image "$IMG/rgb8_37x23.png" -o "$T/o/x.json"
}
refused fast CLIPImageProcessorFast "a fast (torchvision) processor is refused" \
    '{"image_processor_type": "CLIPImageProcessorFast"}'
refused longest shortest_edge "size with longest_edge is refused" \
    '{"image_processor_type": "BitImageProcessor", "size": {"shortest_edge": 30, "longest_edge": 40}}'
refused square use_square_size "use_square_size is refused" \
    '{"image_processor_type": "CLIPImageProcessor", "use_square_size": true}'
refused vitcrop do_center_crop "ViTImageProcessor still refuses do_center_crop" \
    '{"image_processor_type": "ViTImageProcessor", "do_center_crop": true}'

finish
