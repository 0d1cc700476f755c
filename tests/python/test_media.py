"""attngeom.Model on a ViT and a Whisper encoder: analyze(image=...) and
analyze(audio=..., frames=...) equal `attngeom analyze MODEL --image F` /
`--audio F --frames N` to the last bit, pixels=/features= arrays (and .npy
files) equal the file inputs, attention(image=...) equals `attention -o`
bitwise, and a wrong input names its Python parameter."""

import numpy as np
import pytest

import attngeom
from conftest import ROOT, run_cli

VIT = str(ROOT / "tests" / "data" / "models" / "tiny-vit")
WHISPER = str(ROOT / "tests" / "data" / "models" / "tiny-whisper")
IMAGE = "tests/data/images/rgb8_37x23.png"
WAV = "tests/data/audio/chirp_1s.wav"
FRAMES = 40  # Whisper without frames runs 1500 positions: slow


@pytest.fixture(scope="module")
def vit():
    return attngeom.Model(VIT)


@pytest.fixture(scope="module")
def whisper():
    return attngeom.Model(WHISPER)


def same_records(py, cli):
    assert [list(r) for r in py] == [list(r) for r in cli]
    for p, c in zip(py, cli):
        for k in c:
            assert type(p[k]) is type(c[k]) and p[k] == c[k], (k, p[k], c[k])


@pytest.fixture(autouse=True)
def from_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the records' "input" is the path as given


@pytest.mark.parametrize("metrics", [None, "all"])
def test_analyze_image_equals_cli(vit, metrics):
    args = ["--metrics", metrics] if metrics else []
    cli = run_cli("analyze", VIT, "--image", IMAGE, *args, "--format", "json")
    py = vit.analyze(image=IMAGE, metrics=metrics)
    assert len(py) == 8 and py[0]["rows"] == 17 and py[0]["input"] == IMAGE
    same_records(py, cli["records"])


def test_analyze_audio_equals_cli(whisper):
    cli = run_cli("analyze", WHISPER, "--audio", WAV, "--frames", FRAMES, "--precision", "f64",
                  "--layers", "1", "--format", "json")
    py = whisper.analyze(audio=WAV, frames=FRAMES, precision="f64", layers=[1])
    assert py[0]["rows"] == FRAMES // 2 and {r["layer"] for r in py} == {1}
    same_records(py, cli["records"])


def test_pixels_equal_the_image(vit, tmp):
    run_cli("analyze", VIT, "--image", IMAGE, "--save-input", tmp / "in.npy", "--format", "json")
    pixels = np.load(tmp / "in.npy")
    assert pixels.shape == (3, 32, 32) and pixels.dtype == np.float32
    want = vit.analyze(image=IMAGE)
    for given in (pixels, pixels[None], pixels.astype(np.float64)):
        got = vit.analyze(pixels=given)
        assert "input" not in got[0]
        same_records(got, [{k: v for k, v in r.items() if k != "input"} for r in want])
    from_file = vit.analyze(pixels=tmp / "in.npy")
    assert from_file[0]["input"] == str(tmp / "in.npy")
    same_records(from_file, run_cli("analyze", VIT, "--pixels", tmp / "in.npy",
                                    "--format", "json")["records"])


def test_features_equal_the_audio(whisper, tmp):
    run_cli("analyze", WHISPER, "--audio", WAV, "--frames", FRAMES, "--save-input",
            tmp / "in.npy", "--format", "json")
    features = np.load(tmp / "in.npy")
    assert features.shape == (80, FRAMES)
    a = whisper.attention(audio=WAV, frames=FRAMES, layers=[0])
    assert a.shape == (1, 4, FRAMES // 2, FRAMES // 2)
    assert whisper.attention(features=features, layers=[0]).tobytes() == a.tobytes()
    assert whisper.attention(features=tmp / "in.npy", layers=[0]).tobytes() == a.tobytes()
    # frames= cuts features too
    wide = np.concatenate([features, features], axis=1)
    assert whisper.attention(features=wide, frames=FRAMES, layers=[0]).tobytes() == a.tobytes()


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_attention_image_equals_cli(vit, tmp, precision):
    run_cli("attention", VIT, "--image", IMAGE, "--precision", precision, "-o", tmp / "a.npy",
            "--hidden", tmp / "h.npy")
    a, h = np.load(tmp / "a.npy"), np.load(tmp / "h.npy")
    got = vit.attention(image=IMAGE, precision=precision)
    assert got.dtype == np.float64 and got.shape == a.shape == (2, 4, 17, 17)
    assert got.tobytes() == a.tobytes()
    assert vit.hidden_states(image=IMAGE, precision=precision).tobytes() == h.tobytes()


def test_attention_audio_selection_equals_cli(whisper, tmp):
    run_cli("attention", WHISPER, "--audio", WAV, "--frames", FRAMES, "--layers", "1",
            "--heads", "0,2", "-o", tmp / "a.npy")
    got = whisper.attention(audio=WAV, frames=FRAMES, layers=[1], heads=[0, 2])
    assert got.tobytes() == np.load(tmp / "a.npy").tobytes()


def test_file_errors_equal_cli(whisper):
    """The library's message, the CLI's after its prefix, Python's after the
    parameter's name."""
    bad = "tests/data/audio/truncated.wav"
    p = run_cli("analyze", WHISPER, "--audio", bad, "--frames", FRAMES, ok=False)
    assert p.returncode == 1
    with pytest.raises(attngeom.Error) as e:
        whisper.analyze(audio=bad, frames=FRAMES)
    assert "audio=: " + p.stderr.strip()[len("attngeom: "):] == str(e.value)


def test_errors_name_the_parameter(vit, whisper):
    with pytest.raises(attngeom.Error, match=r"^give one input: text, tokens=, image=, audio=, "
                       r"pixels= or features= \(got image=, pixels=\)$"):
        vit.analyze(image=IMAGE, pixels=np.zeros((3, 32, 32)))
    with pytest.raises(attngeom.Error, match=r"^give one input"):
        vit.analyze()
    with pytest.raises(attngeom.Error, match=r"^audio=: .*tiny-vit is a vit model: it takes "
                       r"images \(image= or pixels=\)$"):
        vit.analyze(audio=WAV)
    with pytest.raises(attngeom.Error, match=r"^text: .* is a whisper model: it takes audio"):
        whisper.analyze("hello")
    with pytest.raises(attngeom.Error, match=r"^frames=: applies to audio= or features=, "
                       r"not image=$"):
        vit.analyze(image=IMAGE, frames=4)
    with pytest.raises(attngeom.Error, match=r"^frames=: expected a number of frames >= 1"):
        whisper.attention(audio=WAV, frames=0)
    with pytest.raises(attngeom.Error, match=r"^image=: tests/data/images/nope.png: "):
        vit.analyze(image="tests/data/images/nope.png")
    with pytest.raises(attngeom.Error, match=r"^pixels=: pixel_values of shape \(4, 32, 32\): "
                       r"the model takes \(3, 32, 32\)"):
        vit.analyze(pixels=np.zeros((4, 32, 32)))
    # another image size runs with interpolated positions; none of 8 x 8 patches is refused
    assert len(vit.analyze(pixels=np.zeros((3, 16, 16)))) == 8
    with pytest.raises(attngeom.Error, match=r"^pixels=: pixel_values of shape \(3, 4, 4\): "
                       r"the image must hold 1\.\.1048575 patches of 8x8"):
        vit.analyze(pixels=np.zeros((3, 4, 4)))
    with pytest.raises(attngeom.Error, match=r"^features=: 79 mel bins; the feature extractor "
                       r"has 80$"):
        whisper.analyze(features=np.zeros((79, FRAMES)))
    with pytest.raises(attngeom.Error, match=r"^pixels=: a 5-dimensional array, not "
                       r"pixel_values \(3, H, W\)$"):
        vit.analyze(pixels=np.zeros((2, 1, 3, 32, 32)))


# residual, rollout and similarity take the same inputs: their records and
# arrays equal the CLI's on an image and on audio
MEDIA = [(VIT, {"image": IMAGE}, ["--image", IMAGE]),
         (WHISPER, {"audio": WAV, "frames": FRAMES}, ["--audio", WAV, "--frames", str(FRAMES)])]


@pytest.mark.parametrize("model,given,cli_in", MEDIA)
def test_residual_rollout_media_equal_cli(model, given, cli_in, tmp):
    m = attngeom.Model(model)
    same_records(m.residual(**given), run_cli("residual", model, *cli_in,
                                              "--format", "json")["records"])
    cli = run_cli("rollout", model, *cli_in, "-o", tmp / "R.npy", "--format", "json")
    rows, R = m.rollout(arrays=True, **given)
    same_records(rows, cli["records"])
    assert rows[0]["input"] == cli_in[1]
    assert R.tobytes() == np.load(tmp / "R.npy").tobytes()


@pytest.mark.parametrize("model,given,cli_in", MEDIA)
def test_similarity_media_equals_cli(model, given, cli_in, tmp):
    cli = run_cli("similarity", model, *cli_in, "-o", tmp / "S.npy", "--format", "json")
    rows, S = attngeom.Model(model).similarity(**given)
    assert S.tobytes() == np.load(tmp / "S.npy").tobytes()
    assert [r["js_distance"] for r in rows] == [r["js_distance"] for r in cli["records"]]
