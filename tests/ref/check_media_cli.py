"""The command line's image and audio inputs (docs/cli.md, "Images and
audio") end to end against the independent numpy references of issue 15
(numpy only):

- --image of PNG and JPEG files of other sizes and modes: --save-input
  equals image_ref.py's ViTImageProcessor port within 1e-6, under the
  defaults (no preprocessor_config.json: 32 x 32 bilinear for tiny-vit) and
  under a hidden folder's preprocessor_config.json (bicubic, its own mean
  and std, another rescale);
- attention -o and --hidden of --image and --pixels (a [3, H, W] and a
  [1, 3, H, W] tensor) equal encoders_ref.py's ViTModel within 1e-8 (f64)
  and 1e-4 (f32);
- --features and --audio (a WAV synthesized here) on tiny-whisper: the
  features within 1e-4 of whisper_features_ref.py, --frames N giving
  n = N/2 positions, attention and hidden states as above;
- --audio of a committed WAV: the features within 1e-4 of those
  transformers.js (@huggingface/transformers 3, an engine independent of
  ours and of Hugging Face's Python) computed for it, a fixture made by
  tests/ref/tjs/whisper_features.mjs (its first 400 frames);
- analyze --metrics all on both: layers x heads x inputs records, rows of
  attention summing to 1 (row_sum_error), "input" naming each file, and
  --aggregate over --image-file / --audio-file pooling the inputs (n, and
  each mean equals the records' mean).

usage: python3 tests/ref/check_media_cli.py path/to/attngeom
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import wave

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import encoders_ref  # noqa: E402
import image_ref  # noqa: E402
import whisper_features_ref  # noqa: E402

VIT = os.path.join(ROOT, "tests/data/models/tiny-vit")
WHISPER = os.path.join(ROOT, "tests/data/models/tiny-whisper")
IMAGES = os.path.join(ROOT, "tests/data/images")
TOL = {"f64": 1e-8, "f32": 1e-4}
FAILS = []
CHECKS = [0]


def check(ok, what):
    CHECKS[0] += 1
    if not ok:
        FAILS.append(what)
        print("FAIL:", what)


def run(cli, *args):
    p = subprocess.run([cli] + [str(a) for a in args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("attngeom %s: exit %d: %s" % (" ".join(map(str, args)), p.returncode,
                                                      p.stderr.strip()))
    return p.stdout


def compare_pass(cli, tmp, model, ref_fn, name, input_args, x):
    """attention -o and --hidden of the input against ref_fn(model, x)."""
    A, H = ref_fn(model, x)
    for prec in ("f64", "f32"):
        a, h = os.path.join(tmp, "a.npy"), os.path.join(tmp, "h.npy")
        run(cli, "attention", model, *input_args, "--precision", prec, "-o", a, "--hidden", h)
        ea, eh = np.abs(np.load(a) - A).max(), np.abs(np.load(h) - H).max()
        print("%-44s %s  attention %.2e  hidden %.2e" % (name, prec, ea, eh))
        check(np.load(a).shape == A.shape and ea <= TOL[prec], "%s %s attention %.3g" % (name, prec, ea))
        check(np.load(h).shape == H.shape and eh <= TOL[prec], "%s %s hidden %.3g" % (name, prec, eh))


def check_images(cli, tmp):
    """--image through the defaults and a preprocessor_config.json."""
    folder = os.path.join(tmp, "vit-pre")
    os.mkdir(folder)
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(VIT, f), folder)
    pre = {"do_resize": True, "size": {"height": 32, "width": 32}, "resample": 3,
           "do_rescale": True, "rescale_factor": 1 / 127.5, "do_normalize": True,
           "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}
    with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
        json.dump(pre, f)
    cases = [(VIT, {}), (folder, dict(resample=3, rescale_factor=1 / 127.5,
                                      mean=pre["image_mean"], std=pre["image_std"]))]
    names = ["rgb8_160x120.png", "gray16_26x18.png", "pal4_18x22.png", "rgba8_29x41.png",
             "graya8_31x27.png", "gray1_33x17.png", "rgb8_adam7_45x33.png", "rgb420_40x30.jpg"]
    saved = os.path.join(tmp, "in.npy")
    for model, kw in cases:
        for name in names:
            path = os.path.join(IMAGES, name)
            run(cli, "analyze", model, "--image", path, "--metrics", "sigma_max",
                "--save-input", saved, "--format", "json")
            got = np.load(saved)
            ref = image_ref.hf_pixels(image_ref.decoded_rgb(path), (32, 32), **kw)
            err = np.abs(got.astype(np.float64) - ref).max()
            label = "%s %s" % (os.path.basename(model), name)
            print("%-44s pixels %.2e" % (label, err))
            check(got.dtype == np.float32 and got.shape == (3, 32, 32) and err <= 1e-6,
                  "%s: pixels %.3g" % (label, err))
    x = np.load(saved)  # the last image, as the model saw it
    compare_pass(cli, tmp, folder, encoders_ref.vit_forward, "vit --image " + names[-1],
                 ["--image", os.path.join(IMAGES, names[-1])], x)


def check_pixels(cli, tmp):
    rng = np.random.default_rng(15)
    x = rng.normal(size=(3, 32, 32)).astype(np.float32)
    p, p4 = os.path.join(tmp, "pixels.npy"), os.path.join(tmp, "pixels4.npy")
    np.save(p, x)
    np.save(p4, x[None])
    compare_pass(cli, tmp, VIT, encoders_ref.vit_forward, "vit --pixels [3, 32, 32]", ["--pixels", p], x)
    compare_pass(cli, tmp, VIT, encoders_ref.vit_forward, "vit --pixels [1, 3, 32, 32]", ["--pixels", p4], x)


def write_wav(path, seconds=0.7, rate=16000):
    """A 16-bit PCM mono WAV: two tones and noise, synthesized here."""
    t = np.arange(int(seconds * rate)) / rate
    rng = np.random.default_rng(7)
    s = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 2500 * t) + 0.05 * rng.normal(size=t.size)
    pcm = np.clip(np.round(s * 32767), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def check_audio(cli, tmp):
    rng = np.random.default_rng(16)
    feats = rng.normal(size=(80, 36)).astype(np.float32)
    fp = os.path.join(tmp, "features.npy")
    np.save(fp, feats)
    compare_pass(cli, tmp, WHISPER, encoders_ref.whisper_forward, "whisper --features [80, 36]",
                 ["--features", fp], feats)
    compare_pass(cli, tmp, WHISPER, encoders_ref.whisper_forward, "whisper --features --frames 20",
                 ["--features", fp, "--frames", 20], feats[:, :20])
    wav = os.path.join(tmp, "synth.wav")
    write_wav(wav)
    samples, rate = whisper_features_ref.read_wav(wav)
    ref = whisper_features_ref.log_mel(samples)
    saved = os.path.join(tmp, "feat_in.npy")
    for frames in (48, 100, 3000):
        run(cli, "analyze", WHISPER, "--audio", wav, "--frames", frames, "--metrics", "sigma_max",
            "--layers", 0, "--heads", 0,
            "--save-input", saved, "--format", "json")
        got = np.load(saved)
        err = np.abs(got.astype(np.float64) - ref[:, :frames]).max()
        print("%-44s features %.2e" % ("whisper --audio --frames %d" % frames, err))
        check(got.dtype == np.float32 and got.shape == (80, frames) and err <= 1e-4,
              "--audio --frames %d: features %s %.3g" % (frames, got.shape, err))
    run(cli, "analyze", WHISPER, "--audio", wav, "--frames", 48, "--save-input", saved, "--format", "json")
    compare_pass(cli, tmp, WHISPER, encoders_ref.whisper_forward, "whisper --audio --frames 48",
                 ["--audio", wav, "--frames", 48], np.load(saved))
    a = os.path.join(tmp, "a.npy")
    run(cli, "attention", WHISPER, "--audio", wav, "--frames", 100, "-o", a)
    check(np.load(a).shape == (2, 4, 50, 50), "--frames 100: n = 50, got %s" % (np.load(a).shape,))
    run(cli, "attention", WHISPER, "--audio", wav, "--frames", 37, "-o", a, "--save-input", saved)
    check(np.load(a).shape == (2, 4, 19, 19), "--frames 37: n = ceil(37/2) = 19, got %s" % (np.load(a).shape,))
    check(np.array_equal(np.load(saved), ref[:, :37].astype(np.float32)) or
          np.abs(np.load(saved) - ref[:, :37]).max() <= 1e-4, "--frames 37: the first 37 frames")
    compare_pass(cli, tmp, WHISPER, encoders_ref.whisper_forward, "whisper --audio --frames 37 (odd)",
                 ["--audio", wav, "--frames", 37], np.load(saved))
    return wav


def check_transformers_js(cli, tmp):
    """Features of chirp_noise_2s3.wav against transformers.js's."""
    audio = os.path.join(ROOT, "tests/data/audio")
    js = np.load(os.path.join(audio, "chirp_noise_2s3.tjs.npy"))
    saved = os.path.join(tmp, "tjs_in.npy")
    run(cli, "attention", WHISPER, "--audio", os.path.join(audio, "chirp_noise_2s3.wav"),
        "--frames", js.shape[1], "--layers", 0, "--heads", 0, "-o", os.path.join(tmp, "tjs_a.npy"),
        "--save-input", saved)
    got = np.load(saved)
    err = float(np.abs(got.astype(np.float64) - js).max())
    print("%-44s features %.2e" % ("whisper --audio vs transformers.js", err))
    check(got.shape == js.shape and err <= 1e-4, "--audio vs transformers.js: %s %.3g" % (got.shape, err))


def records(text):
    return json.loads(text)["records"]


def check_analyze(cli, tmp, model, option, inputs, lists_option, extra=()):
    """analyze --metrics all on each input and on a list of them; --aggregate."""
    cfg = json.load(open(os.path.join(model, "config.json")))
    L = cfg.get("num_hidden_layers", cfg.get("encoder_layers"))
    H = cfg.get("num_attention_heads", cfg.get("encoder_attention_heads"))
    label = os.path.basename(model)
    one = records(run(cli, "analyze", model, option, inputs[0], *extra, "--metrics", "all",
                      "--precision", "f64", "--format", "json"))
    check(len(one) == L * H, "%s: %d records, expected %d" % (label, len(one), L * H))
    check(all(r["input"] == inputs[0] and "text" not in r for r in one), "%s: input column" % label)
    rse = max(r["row_sum_error"] for r in one)
    check(rse < 1e-12, "%s: rows of attention sum to 1 (row_sum_error %.3g)" % (label, rse))
    lst = os.path.join(tmp, "list.txt")
    with open(lst, "w") as f:
        f.write(inputs[0] + "\n\n" + "\n".join(inputs[1:]) + "\n")  # a blank line is counted
    many = records(run(cli, "analyze", model, lists_option, lst, *extra, "--precision", "f64",
                       "--format", "json"))
    check(len(many) == L * H * len(inputs), "%s list: %d records" % (label, len(many)))
    lines = [0] + list(range(2, len(inputs) + 1))
    for k, (inp, line) in enumerate(zip(inputs, lines)):
        rs = [r for r in many if r["text"] == line]
        check(len(rs) == L * H and all(r["input"] == inp for r in rs),
              "%s list: line %d names %s" % (label, line, inp))
    agg = records(run(cli, "analyze", model, lists_option, lst, *extra, "--precision", "f64",
                      "--format", "json", "--aggregate"))
    check(len(agg) == L * H and all("input" not in r and r["n"] == len(inputs) for r in agg),
          "%s --aggregate: %d groups of n = %s" % (label, len(agg), sorted({r.get("n") for r in agg})))
    for g in agg:
        vals = [r["entropy_normalized"] for r in many if r["layer"] == g["layer"] and r["head"] == g["head"]]
        check(abs(g["entropy_normalized"] - np.mean(vals)) < 1e-12,
              "%s --aggregate: mean of layer %d head %d" % (label, g["layer"], g["head"]))


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    cli = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="ag_media_") as tmp:
        check_images(cli, tmp)
        check_pixels(cli, tmp)
        wav = check_audio(cli, tmp)
        check_transformers_js(cli, tmp)
        imgs = [os.path.join(IMAGES, n) for n in ("rgb8_37x23.png", "gray8_40x30.png", "rgb444_33x17.jpg")]
        check_analyze(cli, tmp, VIT, "--image", imgs, "--image-file")
        wav2 = os.path.join(tmp, "short.wav")
        write_wav(wav2, seconds=0.3)
        check_analyze(cli, tmp, WHISPER, "--audio", [wav, wav2], "--audio-file", ("--frames", 64))
    if FAILS:
        raise SystemExit("check_media_cli: %d of %d checks failed" % (len(FAILS), CHECKS[0]))
    print("check_media_cli: ok (%d checks)" % CHECKS[0])


if __name__ == "__main__":
    main()
