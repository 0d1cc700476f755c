#!/usr/bin/python3
"""Check the engine's ViT and Whisper encoder (issue 15) against the float64
references of encoders_ref.py, through libattngeom.so (ctypes:
ag_model_load, ag_model_input_positions, ag_model_forward_values).

Usage: /usr/bin/python3 tests/ref/check_encoders.py path/to/attngeom
(the library is the libattngeom.so beside the CLI).

1. The committed folders tests/data/models/tiny-vit (ViTModel names),
   tiny-vit-cls (ViTForImageClassification: "vit." prefix, classifier,
   qkv_bias false, gelu_new) and tiny-whisper (model.encoder.*, decoder
   tensors ignored) are what make_encoders.py writes now, byte for byte.
2. Every case: attention (L, H, n, n) from the layer callback and hidden
   (L + 1, n, d) against the reference: --precision f64 within 1e-8, f32
   within 1e-4 (DINOv2 with registers: 1e-9 and 1e-5) (attention absolute;
   hidden |diff| / max(1, |ref|)), and the
   number of positions n ag_model_input_positions gives. Cases: both ViT
   folders; a non-square ViT (image_size [32, 24], patch [8, 4]) written to a
   temporary folder; tiny-whisper with 3000 frames (n = 1500), 200 and an odd
   199 (n = 100); a WhisperModel-named ("encoder.", no prefix) variant with
   gelu_new, max_source_positions 12, 24 and 7 frames; both ViT folders at
   48x40, 16x24, 64x8, 8x8 (interpolate_pos_encoding: the position table
   resized bicubically) and 33x35 (the configured 4 x 4 grid); DINOv2,
   DINOv2 with registers (tiny-dinov2-reg: 1 + 3 + 16 rows, interpolated
   with torch's antialiased bicubic at 56x56, 16x24, 24x40, 8x8, 64x16; a
   prefixed variant with the default 4 registers) and CLIP's vision tower.
3. Refusals, each one status and a message naming the sizes: ViT pixels
   with no whole patch, another size on the non-square-grid ViT (HF's
   interpolation reshapes to a square), another channel count (AG_ESHAPE), Whisper 3001 frames or 79 mel
   bins (AG_ESHAPE), a NaN input value (AG_ENONFINITE), token ids on a ViT
   model and values on a token model (AG_EINVAL).
Prints the measured maximum errors; exits 1 on any failure.
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import encoders_ref as REF  # noqa: E402
import libattngeom  # noqa: E402
import make_encoders as MK  # noqa: E402

MODELS = os.path.join(ROOT, "tests", "data", "models")
TOL = {"f64": 1e-8, "f32": 1e-4}
TOL29 = {"f64": 1e-9, "f32": 1e-5}  # issue 29's bound for its new types (dinov2_with_registers)
PREC = {"f32": 0, "f64": 1}  # ag_precision
AG_EINVAL, AG_ESHAPE, AG_ENONFINITE = 1, 6, 7


class LayerView(ctypes.Structure):
    _fields_ = [("layer", ctypes.c_int), ("n", ctypes.c_size_t), ("d", ctypes.c_size_t),
                ("n_head", ctypes.c_int), ("x", ctypes.POINTER(ctypes.c_double)),
                ("attn", ctypes.POINTER(ctypes.c_double))]


LAYER_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(LayerView), ctypes.c_void_p)


class ForwardOptions(ctypes.Structure):
    """ag_forward_options (attngeom/model.h)."""
    _fields_ = [("size", ctypes.c_size_t), ("precision", ctypes.c_int), ("pool", ctypes.c_void_p), ("hidden_fn", ctypes.c_void_p),
                ("hidden_user", ctypes.c_void_p)]


class Engine:
    def __init__(self, cli):
        self.lib = lib = libattngeom.load(cli, "check_encoders")
        if lib is None:
            return
        P = ctypes.POINTER
        lib.ag_model_load.argtypes = [ctypes.c_char_p, P(ctypes.c_void_p), P(libattngeom.Error)]
        lib.ag_model_free.argtypes = [ctypes.c_void_p]
        lib.ag_model_load_tower.argtypes = [ctypes.c_char_p, ctypes.c_int, P(ctypes.c_void_p), P(libattngeom.Error)]
        lib.ag_model_input_positions.argtypes = [ctypes.c_void_p, ctypes.c_int, P(ctypes.c_size_t),
                                                 P(ctypes.c_size_t), P(libattngeom.Error)]
        lib.ag_model_forward_values.argtypes = [ctypes.c_void_p, P(ctypes.c_double), ctypes.c_int,
                                                P(ctypes.c_size_t), P(ForwardOptions), LAYER_FN,
                                                ctypes.c_void_p, P(ctypes.c_double), P(libattngeom.Error)]
        lib.ag_model_forward.argtypes = [ctypes.c_void_p, P(ctypes.c_int32), ctypes.c_size_t, ctypes.c_int,
                                         LAYER_FN, ctypes.c_void_p, P(ctypes.c_double), P(libattngeom.Error)]

    def load(self, folder, tower=None):
        """ag_model_load, or ag_model_load_tower with input kind `tower`."""
        m, err = ctypes.c_void_p(), libattngeom.Error()
        if tower is None:
            rc = self.lib.ag_model_load(folder.encode(), ctypes.byref(m), ctypes.byref(err))
        else:
            rc = self.lib.ag_model_load_tower(folder.encode(), tower, ctypes.byref(m), ctypes.byref(err))
        if rc:
            raise RuntimeError("%s: load: %s" % (folder, err.message.decode()))
        return m

    def positions(self, m, shape):
        s = (ctypes.c_size_t * len(shape))(*shape)
        n, err = ctypes.c_size_t(), libattngeom.Error()
        rc = self.lib.ag_model_input_positions(m, len(shape), s, ctypes.byref(n), ctypes.byref(err))
        return rc, n.value, err.message.decode()

    def forward(self, m, x, prec, L, d):
        """(status, message, attn (L, H, n, n), hidden (L + 1, n, d))."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        shape = (ctypes.c_size_t * x.ndim)(*x.shape)
        rc, n, msg = self.positions(m, x.shape)
        if rc:
            return rc, msg, None, None
        hidden = np.zeros((L + 1, n, d))
        attn = []

        def on_layer(view, user):
            v = view.contents
            attn.append(np.ctypeslib.as_array(v.attn, shape=(v.n_head, v.n, v.n)).copy())
            return 0

        cb = LAYER_FN(on_layer)
        opt, err = ForwardOptions(size=ctypes.sizeof(ForwardOptions), precision=PREC[prec]), libattngeom.Error()
        rc = self.lib.ag_model_forward_values(m, x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), x.ndim, shape,
                                              ctypes.byref(opt), cb, None,
                                              hidden.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                                              ctypes.byref(err))
        return rc, err.message.decode(), (np.array(attn) if attn else None), hidden


def errors(a, h, ra, rh):
    return float(np.max(np.abs(a - ra))), float(np.max(np.abs(h - rh) / np.maximum(1.0, np.abs(rh))))


def check_case(eng, name, folder, x, ref_fn, L, d, fails, tol=TOL):
    ra, rh = ref_fn(folder, x)
    m = eng.load(folder)
    try:
        for prec in ("f64", "f32"):
            rc, msg, a, h = eng.forward(m, x, prec, L, d)
            if rc:
                fails.append("%s %s: status %d: %s" % (name, prec, rc, msg))
                continue
            if a.shape != ra.shape or h.shape != rh.shape:
                fails.append("%s %s: shapes %s %s, reference %s %s" % (name, prec, a.shape, h.shape, ra.shape, rh.shape))
                continue
            ea, eh = errors(a, h, ra, rh)
            ok = ea <= tol[prec] and eh <= tol[prec]
            print("%-34s %s n=%-5d attention %.1e  hidden %.1e  %s" % (name, prec, ra.shape[-1], ea, eh,
                                                                         "ok" if ok else "FAIL"))
            if not ok:
                fails.append("%s %s: attention %.2e, hidden %.2e above %g" % (name, prec, ea, eh, tol[prec]))
    finally:
        eng.lib.ag_model_free(m)


def expect_refusal(eng, name, folder, x, status, needles, fails):
    m = eng.load(folder)
    try:
        rc, msg, _, _ = eng.forward(m, x, "f64", 2, 32)
    finally:
        eng.lib.ag_model_free(m)
    missing = [s for s in needles if s not in msg]
    if rc != status or missing or "\n" in msg:
        fails.append("%s: status %d, message %r (expected status %d naming %s)" % (name, rc, msg, status, needles))
    else:
        print("%-34s refused: %s" % (name, msg))


def expect_load_refusal(eng, name, folder, needles, fails):
    m, err = ctypes.c_void_p(), libattngeom.Error()
    rc = eng.lib.ag_model_load(folder.encode(), ctypes.byref(m), ctypes.byref(err))
    msg = err.message.decode()
    if rc == 0:
        eng.lib.ag_model_free(m)
        fails.append("%s: loaded, expected a refusal naming %s" % (name, needles))
    elif [s for s in needles if s not in msg]:
        fails.append("%s: message %r lacks %s" % (name, msg, needles))
    else:
        print("%-34s refused: %s" % (name, msg))


def check_committed(tmp, fails):
    MK.make_all(tmp, quiet=True)
    for name in MK.COMMITTED:
        for f in ("config.json", "model.safetensors"):
            with open(os.path.join(tmp, name, f), "rb") as a, open(os.path.join(MODELS, name, f), "rb") as b:
                if a.read() != b.read():
                    fails.append("%s/%s differs from what make_encoders.py writes" % (name, f))


def check_clip_towers(eng, cli, both, clipv, pixels, fails):
    """A clip folder (CLIPModel, configuration_clip.py CLIPConfig: text_config
    and vision_config nested): clipv's vision tower (same seed) beside the
    text tower of tests/data/models/arch/clip-text. Pixels take the vision
    tower (against clipv's float64 reference), token ids the text tower (the
    CLI's rows equal clip-text's, itself checked by check_archs.py)."""
    text = os.path.join(ROOT, "tests", "data", "models", "arch", "clip-text")
    with open(os.path.join(text, "config.json")) as f:
        tcfg = json.load(f)
    vcfg = MK.clip_vision_config()
    tensors = MK.clip_vision_tensors(vcfg, 25) + sorted(REF.read_safetensors(os.path.join(text, "model.safetensors")).items())
    MK.write_folder(both, {"architectures": ["CLIPModel"], "model_type": "clip", "projection_dim": 16,
                           "text_config": tcfg, "vision_config": vcfg}, tensors)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(text, name), both)
    ra, rh = REF.clip_vision_forward(clipv, pixels)
    m = eng.load(both, tower=1)  # AG_INPUT_PIXELS
    try:
        for prec in ("f64", "f32"):
            rc, msg, a, h = eng.forward(m, pixels, prec, 2, 32)
            ea, eh = errors(a, h, ra, rh) if not rc else (np.inf, np.inf)
            ok = ea <= TOL[prec] and eh <= TOL[prec]
            print("%-34s %s attention %.1e  hidden %.1e  %s" % ("clip vision tower", prec, ea, eh, "ok" if ok else "FAIL"))
            if not ok:
                fails.append("clip vision tower %s: %s attention %.2e hidden %.2e" % (prec, msg, ea, eh))
    finally:
        eng.lib.ag_model_free(m)
    expect_refusal(eng, "clip default tower (text) on pixels", both, pixels, AG_EINVAL, ["takes token ids"], fails)
    rows = []
    for folder in (both, text):
        out = subprocess.run([cli, "analyze", folder, "--text", "a photo of the cat, 2 dogs", "--metrics", "all",
                              "--format", "tsv"], capture_output=True, text=True)
        rows.append([line.rsplit("\t", 1)[0] for line in out.stdout.splitlines()] if out.returncode == 0 else out.stderr)
    ok = isinstance(rows[0], list) and len(rows[0]) == 9 and rows[0] == rows[1]  # header, 2 layers x 4 heads
    print("%-34s %s" % ("clip text tower = clip-text", "ok" if ok else "FAIL"))
    if not ok:
        fails.append("clip text tower: analyze differs from clip-text: %r" % (rows[0][:3],))
    # A size key the nested dict lacks is CLIPTextConfig's default (hidden
    # 512), which the 32-wide tensors then contradict.
    bare = both + "-defaults"
    del tcfg["hidden_size"]
    MK.write_folder(bare, {"model_type": "clip", "text_config": tcfg, "vision_config": vcfg}, tensors)
    expect_load_refusal(eng, "clip text_config without hidden_size", bare, ["512"], fails)
    info = subprocess.run([cli, "info", both, "--format", "json"], capture_output=True, text=True).stdout
    if '"towers"' not in info or '"vision_config"' not in info:
        fails.append("clip info: no towers: %s" % info[:200])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    eng = Engine(sys.argv[1])
    if eng.lib is None:
        return
    fails = []
    rng = np.random.default_rng(2024)
    tmp = tempfile.mkdtemp(prefix="ag_encoders_")
    try:
        check_committed(os.path.join(tmp, "made"), fails)
        pixels = rng.uniform(-1, 1, (3, 32, 32)).astype(np.float32)
        for name in ("tiny-vit", "tiny-vit-cls"):
            check_case(eng, name, os.path.join(MODELS, name), pixels, REF.vit_forward, 2, 32, fails)
        cfg = MK.vit_config(image_size=[32, 24], patch_size=[8, 4], num_hidden_layers=3)
        wide = os.path.join(tmp, "vit-nonsquare")
        MK.write_folder(wide, cfg, MK.vit_tensors(cfg, 21))
        check_case(eng, "vit-nonsquare [32,24]/[8,4]", wide, rng.uniform(-1, 1, (3, 32, 24)).astype(np.float32),
                   REF.vit_forward, 3, 32, fails)

        whisper = os.path.join(MODELS, "tiny-whisper")
        # log-mel features as WhisperFeatureExtractor leaves them: within
        # [max - 2, max] (its clamp), about (log10 + 4) / 4
        for T in (3000, 200, 199):
            feats = (rng.uniform(-0.9, 1.1, (80, T)) * np.linspace(0.5, 1.0, T)).astype(np.float32)
            check_case(eng, "tiny-whisper T=%d" % T, whisper, feats, REF.whisper_forward, 2, 32, fails)
        cfg = MK.whisper_config(activation_function="gelu_new", max_source_positions=12, num_mel_bins=16,
                                architectures=["WhisperModel"])
        small = os.path.join(tmp, "whisper-model-names")
        MK.write_folder(small, cfg, MK.whisper_tensors(cfg, 22, prefix=""))
        for T in (24, 7):
            check_case(eng, "whisper encoder.* gelu_new T=%d" % T, small,
                       rng.uniform(-1, 1, (16, T)).astype(np.float32), REF.whisper_forward, 2, 32, fails)

        vit = os.path.join(MODELS, "tiny-vit")
        # other image sizes: ViTModel(interpolate_pos_encoding=True), the
        # stored 4 x 4 grid resized bicubically (up, down, mixed, one patch),
        # and 33 x 35 (4 x 4 patches: the stored table)
        irng = np.random.default_rng(2025)
        for hw in ((48, 40), (16, 24), (64, 8), (8, 8), (33, 35)):
            for name in ("tiny-vit", "tiny-vit-cls"):
                check_case(eng, "%s %dx%d" % (name, hw[0], hw[1]), os.path.join(MODELS, name),
                           irng.uniform(-1, 1, (3,) + hw).astype(np.float32), REF.vit_forward, 2, 32, fails)
        # DINOv2: the committed folder at its size and interpolated (as
        # HF's Dinov2Embeddings always allows), and Dinov2ForImageClassification
        # names ("dinov2." prefix, classifier), qkv_bias false, gelu_new,
        # mlp_ratio 3 (96), 3 layers
        dino = os.path.join(MODELS, "tiny-dinov2")
        for hw in ((32, 32), (56, 56), (24, 40)):
            check_case(eng, "tiny-dinov2 %dx%d" % hw, dino, irng.uniform(-1, 1, (3,) + hw).astype(np.float32),
                       REF.dinov2_forward, 2, 32, fails)
        cfg = MK.dinov2_config(architectures=["Dinov2ForImageClassification"], qkv_bias=False,
                               hidden_act="gelu_new", mlp_ratio=3, num_hidden_layers=3)
        dcls = os.path.join(tmp, "dinov2-cls")
        MK.write_folder(dcls, cfg, MK.dinov2_tensors(cfg, 23, prefix="dinov2.", classifier=3))
        for hw in ((32, 32), (40, 48)):
            check_case(eng, "dinov2-cls %dx%d" % hw, dcls, irng.uniform(-1, 1, (3,) + hw).astype(np.float32),
                       REF.dinov2_forward, 3, 32, fails)
        # DINOv2 with registers: the committed folder (3 registers) at its
        # size, enlarged, shrunk and mixed (interpolate_pos_encoding's
        # antialiased bicubic: a = -0.5, the filter widened when shrinking);
        # Dinov2WithRegistersForImageClassification names
        # ("dinov2_with_registers." prefix), num_register_tokens absent (the
        # default 4), qkv_bias false, 3 layers
        dreg = os.path.join(MODELS, "tiny-dinov2-reg")
        for hw in ((32, 32), (56, 56), (16, 24), (24, 40), (8, 8), (64, 16)):
            check_case(eng, "tiny-dinov2-reg %dx%d" % hw, dreg, irng.uniform(-1, 1, (3,) + hw).astype(np.float32),
                       REF.dinov2_forward, 2, 32, fails, TOL29)
        cfg = MK.dinov2_registers_config(architectures=["Dinov2WithRegistersForImageClassification"],
                                         qkv_bias=False, num_hidden_layers=3)
        del cfg["num_register_tokens"]
        rcls = os.path.join(tmp, "dinov2-reg-cls")
        MK.write_folder(rcls, cfg, MK.dinov2_registers_tensors(dict(cfg, num_register_tokens=4), 27,
                                                               prefix="dinov2_with_registers.", classifier=3))
        for hw in ((32, 32), (48, 40)):
            check_case(eng, "dinov2-reg-cls (4 registers) %dx%d" % hw, rcls,
                       irng.uniform(-1, 1, (3,) + hw).astype(np.float32), REF.dinov2_forward, 3, 32, fails, TOL29)
        rswi = os.path.join(tmp, "dinov2-reg-swiglu")
        MK.write_folder(rswi, MK.dinov2_registers_config(use_swiglu_ffn=True),
                        MK.dinov2_registers_tensors(MK.dinov2_registers_config(), 28))
        expect_load_refusal(eng, "dinov2_with_registers use_swiglu_ffn", rswi,
                            ["use_swiglu_ffn", "dinov2_with_registers"], fails)
        rfew = os.path.join(tmp, "dinov2-reg-five")
        MK.write_folder(rfew, MK.dinov2_registers_config(num_register_tokens=5),
                        MK.dinov2_registers_tensors(MK.dinov2_registers_config(), 29))
        expect_load_refusal(eng, "register_tokens of 3 rows, config 5", rfew,
                            ["embeddings.register_tokens", "(1, 3, 32)", "(1, 5, 32)"], fails)
        # CLIP's vision tower (clip_vision_model), a temporary folder: its
        # size, interpolated, and the same without the vision_model. prefix
        cfg = MK.clip_vision_config()
        clipv = os.path.join(tmp, "clip-vision")
        MK.write_folder(clipv, cfg, MK.clip_vision_tensors(cfg, 25))
        for hw in ((32, 32), (48, 40)):
            check_case(eng, "clip_vision_model %dx%d" % hw, clipv, irng.uniform(-1, 1, (3,) + hw).astype(np.float32),
                       REF.clip_vision_forward, 2, 32, fails)
        cfg = MK.clip_vision_config(hidden_act="gelu", num_hidden_layers=3)
        clipn = os.path.join(tmp, "clip-vision-bare")
        MK.write_folder(clipn, cfg, MK.clip_vision_tensors(cfg, 26, prefix=""))
        check_case(eng, "clip_vision_model bare gelu 32x32", clipn,
                   irng.uniform(-1, 1, (3, 32, 32)).astype(np.float32), REF.clip_vision_forward, 3, 32, fails)
        check_clip_towers(eng, sys.argv[1], os.path.join(tmp, "clip-both"), clipv,
                          irng.uniform(-1, 1, (3, 32, 32)).astype(np.float32), fails)
        swi = os.path.join(tmp, "dinov2-swiglu")
        MK.write_folder(swi, MK.dinov2_config(use_swiglu_ffn=True), MK.dinov2_tensors(MK.dinov2_config(), 24))
        expect_load_refusal(eng, "dinov2 use_swiglu_ffn", swi, ["use_swiglu_ffn", "dinov2"], fails)
        expect_refusal(eng, "vit 4x64 (no patch row)", vit, np.zeros((3, 4, 64)), AG_ESHAPE,
                       ["(3, 4, 64)", "patches of 8x8"], fails)
        expect_refusal(eng, "vit-nonsquare 40x24", wide, np.zeros((3, 40, 24)), AG_ESHAPE,
                       ["(3, 40, 24)", "square patch grid", "4x6", "(3, 32, 24)"], fails)
        expect_refusal(eng, "vit 1 channel", vit, np.zeros((1, 32, 32)), AG_ESHAPE, ["(1, 32, 32)", "(3, 32, 32)"],
                       fails)
        expect_refusal(eng, "whisper 3001 frames", whisper, np.zeros((80, 3001)), AG_ESHAPE, ["3001", "1..3000"],
                       fails)
        expect_refusal(eng, "whisper 79 mel bins", whisper, np.zeros((79, 100)), AG_ESHAPE, ["79", "80"], fails)
        bad = np.zeros((1, 80, 10))
        bad[0, 3, 4] = np.nan
        expect_refusal(eng, "whisper NaN input", whisper, bad, AG_ENONFINITE, ["input value 34"], fails)
        gpt2 = os.path.join(ROOT, "models", "tiny-gpt2")
        expect_refusal(eng, "values on gpt2", gpt2, np.zeros((3, 4)), AG_EINVAL, ["takes token ids"], fails)
        m = eng.load(vit)
        err = libattngeom.Error()
        ids = (ctypes.c_int32 * 2)(1, 2)
        rc = eng.lib.ag_model_forward(m, ids, 2, 1, LAYER_FN(0), None, None, ctypes.byref(err))
        eng.lib.ag_model_free(m)
        msg = err.message.decode()
        if rc != AG_EINVAL or "takes pixels" not in msg:
            fails.append("token ids on vit: status %d, %r" % (rc, msg))
        else:
            print("%-34s refused: %s" % ("token ids on vit", msg))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in fails:
        print("FAIL " + f)
    print("check_encoders: %s" % ("FAILED (%d)" % len(fails) if fails else "ok"))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
