"""attngeom.Model on a two-tower `clip` folder and on image processors
with a resize and crop (issue 29): a text runs on the text tower and
image=/pixels= on the vision tower, as `attngeom analyze CLIP --text S` /
`--image F` choose them (ag_model_load_tower), tower= loads one tower
alone; image= through BitImageProcessor's and CLIPImageProcessor's
shortest-edge resize and centre crop (ag_run_media_*_crop) gives the CLI's
records value for value."""

import json
import shutil
import sys

import numpy as np
import pytest

import attngeom
from conftest import ARCH, ROOT, run_cli
from test_media import from_root, same_records  # noqa: F401 (from_root: autouse, run from ROOT)

sys.path.insert(0, str(ROOT / "tests" / "ref"))
import encoders_ref as REF  # noqa: E402
import make_encoders as MK  # noqa: E402

IMAGE = "tests/data/images/rgb8_37x23.png"
MODELS = ROOT / "tests" / "data" / "models"
TEXT = "a photo of the cat, 2 dogs"
# facebook/dinov2-small's preprocessor_config.json made to fit a 32 x 32
# model, and CLIP's processor (its defaults: bicubic, CLIP's mean and std)
BIT = {"crop_size": {"height": 32, "width": 32}, "do_center_crop": True, "do_convert_rgb": True,
       "do_normalize": True, "do_rescale": True, "do_resize": True,
       "image_mean": [0.485, 0.456, 0.406], "image_processor_type": "BitImageProcessor",
       "image_std": [0.229, 0.224, 0.225], "resample": 3,
       "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 40}}
CLIP_PROC = {"image_processor_type": "CLIPImageProcessor", "size": 20, "crop_size": [24, 40]}


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """A CLIPModel folder: tests/data/models/arch/clip-text's text tower
    (2 layers) beside a 3-layer vision tower (clip_vision_tensors), nested
    text_config / vision_config as configuration_clip.py's CLIPConfig."""
    out = tmp_path_factory.mktemp("clip") / "clip"
    text = ARCH / "clip-text"
    tcfg = json.loads((text / "config.json").read_text())
    vcfg = MK.clip_vision_config(num_hidden_layers=3)
    tensors = MK.clip_vision_tensors(vcfg, 31)
    tensors += sorted(REF.read_safetensors(str(text / "model.safetensors")).items())
    MK.write_folder(str(out), {"architectures": ["CLIPModel"], "model_type": "clip", "projection_dim": 16,
                               "text_config": tcfg, "vision_config": vcfg}, tensors)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(text / name, out)
    return str(out)


def test_clip_text_runs_on_the_text_tower(clip):
    m = attngeom.Model(clip)
    py = m.analyze(TEXT, metrics="all")
    assert len(py) == 8 and m.config["model_type"] == "clip_text_model"
    same_records(py, run_cli("analyze", clip, "--text", TEXT, "--metrics", "all", "--format", "json")["records"])


def test_clip_image_runs_on_the_vision_tower(clip):
    m = attngeom.Model(clip)
    py = m.analyze(image=IMAGE, metrics="all")
    assert len(py) == 12 and py[0]["rows"] == 17 and py[0]["input"] == IMAGE  # 3 layers x 4 heads
    same_records(py, run_cli("analyze", clip, "--image", IMAGE, "--metrics", "all", "--format", "json")["records"])
    hidden = m.hidden_states(image=IMAGE, precision="f64")
    assert hidden.shape == (4, 17, 32)  # the vision tower's 3 layers, not the text tower's 2
    a = m.attention(image=IMAGE, layers=[2])
    assert a.shape == (1, 4, 17, 17) and np.allclose(a.sum(-1), 1)
    # and the text still runs on the text tower after an image
    assert m.analyze(TEXT)[0]["rows"] == len(m.tokenize(TEXT))


def test_clip_pixels_and_residual_on_the_vision_tower(clip, tmp):
    run_cli("analyze", clip, "--image", IMAGE, "--save-input", tmp / "in.npy", "--format", "json")
    m = attngeom.Model(clip)
    want = m.analyze(image=IMAGE)
    got = m.analyze(pixels=np.load(tmp / "in.npy"))
    same_records(got, [{k: v for k, v in r.items() if k != "input"} for r in want])
    same_records(m.residual(image=IMAGE),
                 run_cli("residual", clip, "--image", IMAGE, "--format", "json")["records"])


def test_tower_by_name(clip):
    vision = attngeom.Model(clip, tower="vision")
    assert vision.config["model_type"] == "clip_vision_model" and vision.config["n_layer"] == 3
    same_records(vision.analyze(image=IMAGE), attngeom.Model(clip).analyze(image=IMAGE))
    with pytest.raises(attngeom.Error, match="clip_vision_model model: it takes images"):
        vision.analyze(TEXT)
    text = attngeom.Model(clip, tower="text")
    assert text.config["n_layer"] == 2
    with pytest.raises(attngeom.Error, match="clip_text_model model: it takes token ids"):
        text.analyze(image=IMAGE)
    same_records(text.weights(), run_cli("weights", clip, "--format", "json")["records"])
    assert len(vision.weights()) == 12
    with pytest.raises(attngeom.Error, match="not a two-tower clip folder"):
        attngeom.Model(str(MODELS / "tiny-vit"), tower="vision")
    with pytest.raises(attngeom.Error, match="tower: expected"):
        attngeom.Model(clip, tower="audio")


def test_clip_features_refused(clip):
    with pytest.raises(attngeom.Error, match="clip"):
        attngeom.Model(clip).analyze(features=np.zeros((80, 10)))


def processor_folder(tmp, base, config):
    out = tmp / (base + "-proc")
    shutil.copytree(MODELS / base, out)
    (out / "preprocessor_config.json").write_text(json.dumps(config))
    return str(out)


@pytest.mark.parametrize("base, config, rows", [
    ("tiny-dinov2", BIT, 17),          # 37 x 23 -> 64 x 40 -> crop 32 x 32
    ("tiny-dinov2", CLIP_PROC, 16),    # -> 20 x 24 -> crop 24 x 40 (padded): CLS + 3 x 5
    ("tiny-dinov2-reg", BIT, 20),      # CLS + 3 registers + 16 patches
])
def test_image_processors_with_a_crop_equal_the_cli(tmp, base, config, rows):
    folder = processor_folder(tmp, base, config)
    m = attngeom.Model(folder)
    py = m.analyze(image=IMAGE, metrics="all", precision="f64")
    assert py[0]["rows"] == rows
    cli = run_cli("analyze", folder, "--image", IMAGE, "--metrics", "all", "--precision", "f64",
                  "--format", "json")["records"]
    same_records(py, cli)
    run_cli("analyze", folder, "--image", IMAGE, "--save-input", tmp / "in.npy", "--format", "json")
    pixels = np.load(tmp / "in.npy")
    assert pixels.shape[0] == 3
    # pixels= of the processed image: the folder's processor config loads
    # (a crop is for files; the array is taken as it is)
    same_records(m.analyze(pixels=pixels, metrics="all", precision="f64"),
                 [{k: v for k, v in r.items() if k != "input"} for r in py])


def test_registers_in_config_and_rows():
    m = attngeom.Model(str(MODELS / "tiny-dinov2-reg"))
    assert m.config["n_registers"] == 3 and m.config["model_type"] == "dinov2_with_registers"
    a = m.attention(image=IMAGE, precision="f64")
    assert a.shape == (2, 4, 20, 20) and np.allclose(a.sum(-1), 1, atol=1e-12)
    assert attngeom.Model(str(MODELS / "tiny-dinov2")).config["n_registers"] == 0


def test_plot_registers_equals_cli(tmp):
    folder = str(MODELS / "tiny-dinov2-reg")
    run_cli("attention", folder, "--image", IMAGE, "-o", tmp / "a.npy")
    for kind, extra in (("patches", ["--query", "2"]), ("attention", [])):
        run_cli("plot", tmp / "a.npy", "--kind", kind, "--registers", "3", *extra, "-o", tmp / "c.svg")
        py = attngeom.plot(kind, str(tmp / "a.npy"), registers=3, query=2 if extra else None)
        assert py == (tmp / "c.svg").read_bytes()  # the labels: media.sh reads them in a PDF
    assert py != attngeom.plot("attention", str(tmp / "a.npy"))  # CLS, [REG0].. and (r,c), not indices
    with pytest.raises(attngeom.Error, match="--registers"):
        attngeom.plot("patches", str(tmp / "a.npy"))
