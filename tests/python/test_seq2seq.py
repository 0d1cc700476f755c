"""Encoder–decoder folders (t5, bart; issue 30) through the Python package:
Model(folder) loads the pair as the CLI does; analyze's records (with
"stack") equal `attngeom analyze --target-tokens`'s value for value,
attention's three arrays and hidden_states' two equal the .npy files of
`attngeom attention -o --decoder --cross --hidden --decoder-hidden` to the
byte, target="TEXT" is tokenized and shifted right as --target, and the
pairs that do not go together fail with the library's message."""

import json

import numpy as np
import pytest

import attngeom
from conftest import ARCH, run_cli
from test_model import same_records

SRC = [3, 4, 5, 6, 7]
# each folder's decoder input ids: its decoder_start_token_id first
TGT = {"t5": [0, 9, 10], "t5-v1_1": [0, 9, 10, 11], "bart": [2, 0, 6, 7]}
LAYERS = {"t5": (2, 2), "t5-v1_1": (2, 3), "bart": (2, 3)}  # (encoder, decoder)


def csv(ids):
    return ",".join(map(str, ids))


def cli_args(arch, *more):
    return (ARCH / arch, "--tokens", csv(SRC), "--target-tokens", csv(TGT[arch])) + more


@pytest.mark.parametrize("arch", ["t5", "t5-v1_1", "bart"])
@pytest.mark.parametrize("metrics", [None, "all"])
def test_analyze_equals_cli(arch, metrics):
    more = ("--format", "json") + (("--metrics", metrics) if metrics else ())
    cli = run_cli("analyze", *cli_args(arch, *more))["records"]
    py = attngeom.Model(ARCH / arch).analyze(SRC, metrics, target_tokens=TGT[arch])
    same_records(py, cli)
    # encoder layers, then per decoder layer its self- and cross-attention
    enc, dec = LAYERS[arch]
    H = attngeom.Model(ARCH / arch).config["n_head"]
    assert [r["stack"] for r in py] == ["encoder"] * enc * H + (["decoder"] * H + ["cross"] * H) * dec
    n, m = len(SRC), len(TGT[arch])
    shape = {"encoder": (n, n), "decoder": (m, m), "cross": (m, n)}
    assert all((r["rows"], r["cols"]) == shape[r["stack"]] for r in py)
    if metrics is None:  # the default takes family cross (rectangular), as the CLI's
        assert all(r["cross_entropy_normalized"] is not None for r in py if r["stack"] == "cross")
    else:  # families H and K on every stack; a cross head's form has no transpose
        assert all(r["value_norm_mean"] > 0 and r["score_std"] > 0 and r["rank_lift"] > 0
                   for r in py)
        assert all((r["score_asymmetry"] is None) == (r["stack"] == "cross") for r in py)
        # family E on the self-attention stacks only
        assert all((r["jacobian_norm"] is None) == (r["stack"] == "cross") for r in py)


def test_analyze_selection_equals_cli():
    cli = run_cli("analyze", *cli_args("t5-v1_1", "--layers", "1", "--heads", "0,2",
                                       "--precision", "f64", "--metrics", "spectrum,cross",
                                       "--format", "json"))["records"]
    py = attngeom.Model(ARCH / "t5-v1_1").analyze(SRC, "spectrum,cross", layers=1, heads=[2, 0],
                                                   precision="f64", target_tokens=TGT["t5-v1_1"],
                                                   jobs=2)
    same_records(py, cli)
    assert [(r["stack"], r["layer"], r["head"]) for r in py] == [
        ("encoder", 1, 0), ("encoder", 1, 2), ("decoder", 1, 0), ("decoder", 1, 2),
        ("cross", 1, 0), ("cross", 1, 2)]


def test_aggregate_by_stack_equals_cli():
    cli = run_cli("analyze", *cli_args("t5-v1_1", "--metrics", "sigma_max,source_coverage",
                                       "--aggregate", "--by", "stack", "--format", "json"))
    recs = attngeom.Model(ARCH / "t5-v1_1").analyze(SRC, "sigma_max,source_coverage",
                                                     target_tokens=TGT["t5-v1_1"])
    got = attngeom.aggregate(recs, by="stack")
    assert [g["stack"] for g in got] == ["encoder", "decoder", "cross"]
    assert got == cli["records"]
    # 3 heads of 2 encoder layers, of 3 decoder layers
    assert [g["n"] for g in got] == [6, 9, 9]


def cli_arrays(tmp, arch, *more):
    names = ["-o", "--decoder", "--cross", "--hidden", "--decoder-hidden"]
    outs = [a for k, name in enumerate(names) for a in (name, tmp / ("%d.npy" % k))]
    run_cli("attention", *cli_args(arch, *more, *outs))
    return [np.load(tmp / ("%d.npy" % k)) for k in range(len(names))]


@pytest.mark.parametrize("arch", ["t5", "t5-v1_1", "bart"])
@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_attention_and_hidden_equal_cli(tmp, arch, precision):
    m = attngeom.Model(ARCH / arch)
    enc, dec, cross, eh, dh = cli_arrays(tmp, arch, "--precision", precision)
    a = m.attention(SRC, target_tokens=TGT[arch], precision=precision)
    h = m.hidden_states(tokens=SRC, target_tokens=TGT[arch], precision=precision)
    for got, want in ((a.encoder, enc), (a.decoder, dec), (a.cross, cross), (h.encoder, eh),
                      (h.decoder, dh)):
        assert got.dtype == np.float64 and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    L_enc, L_dec = LAYERS[arch]
    n, t, H = len(SRC), len(TGT[arch]), m.config["n_head"]
    assert a.cross.shape == (L_dec, H, t, n) and a.encoder.shape == (L_enc, H, n, n)
    assert h.decoder.shape == (L_dec + 1, t, m.config["decoder"]["d_model"])
    # rows are distributions; the decoder's self-attention is causal, the
    # cross-attention sees every source token
    for A in a:
        assert np.max(np.abs(A.sum(axis=-1) - 1)) < 1e-5
    assert np.all(a.decoder[..., np.triu(np.ones((t, t), bool), 1)] == 0)
    assert np.all(a.cross > 0)


@pytest.mark.parametrize("arch", ["t5", "bart"])
def test_scores_equal_cli(tmp, arch):
    """scores=True: (Attention, its scores) of one pass, byte-equal to
    `attention --scores --decoder-scores --cross-scores`; softmax of each
    row its attention row."""
    names = ["--scores", "--decoder-scores", "--cross-scores"]
    outs = [a for k, name in enumerate(names) for a in (name, tmp / ("s%d.npy" % k))]
    run_cli("attention", *cli_args(arch, "-o", tmp / "a.npy", "--precision", "f64", *outs))
    a, s = attngeom.Model(ARCH / arch).attention(SRC, target_tokens=TGT[arch], precision="f64",
                                                 scores=True)
    for k, (A, S) in enumerate(zip(a, s)):
        assert S.tobytes() == np.load(tmp / ("s%d.npy" % k)).tobytes()
        e = np.exp(S - S.max(axis=-1, keepdims=True))
        assert np.abs(e / e.sum(axis=-1, keepdims=True) - A).max() < 1e-12
    assert np.isneginf(s.decoder).any() and np.isfinite(s.cross).all()


@pytest.mark.parametrize("lens", [("--temperature", "2"), ("--normalizer", "entmax15")])
def test_lens_equals_cli(lens):
    """A temperature or normaliser on a pair: every stack's records under
    it, value for value the CLI's."""
    more = ("--format", "json", "--metrics", "entropy_mean,sigma_max,cross") + lens
    cli = run_cli("analyze", *cli_args("bart", *more))["records"]
    kw = {"temperature": 2} if lens[0] == "--temperature" else {"normalizer": "entmax15"}
    py = attngeom.Model(ARCH / "bart").analyze(SRC, "entropy_mean,sigma_max,cross",
                                               target_tokens=TGT["bart"], **kw)
    same_records(py, cli)
    assert {r["stack"] for r in py} == {"encoder", "decoder", "cross"}


def test_attention_selection_equals_cli(tmp):
    enc, dec, cross, _, _ = cli_arrays(tmp, "t5-v1_1", "--layers", "1", "--heads", "2,0")
    a = attngeom.Model(ARCH / "t5-v1_1").attention(SRC, target_tokens=TGT["t5-v1_1"], layers=[1],
                                                    heads=[2, 0])
    assert a.encoder.shape == (1, 2, 5, 5) and a.cross.shape == (1, 2, 4, 5)
    assert [x.tobytes() for x in a] == [enc.tobytes(), dec.tobytes(), cross.tobytes()]
    # layer 2 exists in the decoder only: an index must exist in both stacks
    with pytest.raises(attngeom.Error, match="layers"):
        attngeom.Model(ARCH / "t5-v1_1").attention(SRC, target_tokens=TGT["t5-v1_1"], layers=[2])


# tests/cli/seq2seq.sh's word-level tokenizer: a text ends with </s> (id 1)
TOKENIZER = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [dict(id=i, content=c, single_word=False, lstrip=False, rstrip=False,
                          normalized=False, special=True) for i, c in ((0, "<pad>"), (1, "</s>"))],
    "normalizer": None, "pre_tokenizer": {"type": "Whitespace"},
    "post_processor": {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "</s>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 0}},
                 {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
    "decoder": None,
    "model": {"type": "WordLevel", "unk_token": "<unk>",
              "vocab": {"<pad>": 0, "</s>": 1, "<unk>": 2, "a": 3, "b": 4, "c": 5, "d": 6, "e": 7}}}


def with_tokenizer(tmp, arch):
    folder = tmp / (arch + "tok")
    folder.mkdir()
    for f in (ARCH / arch).iterdir():
        (folder / f.name).symlink_to(f)
    (folder / "tokenizer.json").write_text(json.dumps(TOKENIZER))
    return folder


def test_target_text_is_shifted_right(tmp):
    """target="d e": labels d e </s> (6, 7, 1) shifted right after
    decoder_start_token_id 0: the arrays of target_tokens=[0, 6, 7], the
    CLI's --target; the unshifted labels give other ones."""
    folder = with_tokenizer(tmp, "t5")
    m = attngeom.Model(folder)
    a = m.attention("a b c", target="d e")
    b = m.attention(tokens=[3, 4, 5, 1], target_tokens=[0, 6, 7])
    assert [x.tobytes() for x in a] == [x.tobytes() for x in b]
    assert a.cross.tobytes() != m.attention("a b c", target_tokens=[6, 7, 1]).cross.tobytes()
    run_cli("attention", folder, "--text", "a b c", "--target", "d e", "-o", tmp / "e.npy",
            "--cross", tmp / "c.npy")
    assert a.encoder.tobytes() == np.load(tmp / "e.npy").tobytes()
    assert a.cross.tobytes() == np.load(tmp / "c.npy").tobytes()
    cli = run_cli("analyze", folder, "--text", "a b c", "--target", "d e", "--format", "json")
    same_records(m.analyze("a b c", target="d e"), cli["records"])


def test_heads_equals_cli(tmp):
    """The induction probe on a pair: the CLI's records (encoder, decoder
    and cross heads, cross scores null), also under a head selection."""
    folder = with_tokenizer(tmp, "t5")
    m = attngeom.Model(folder)
    cli = run_cli("heads", folder, "--probe", "induction", "--length", "2", "--repeats", "3",
                  "--format", "json")["records"]
    py = m.heads(length=2, repeats=3)
    same_records(py, cli)
    assert [r["stack"] for r in py] == ["encoder"] * 6 + (["decoder"] * 3 + ["cross"] * 3) * 2
    assert all((r["induction_score"] is None) == (r["stack"] == "cross") for r in py)
    one = m.heads(length=2, repeats=3, layers=[1], heads=[2])
    assert one == [r for r in py if (r["layer"], r["head"]) == (1, 2)]


def test_bart_target_text(tmp):
    """BART's target: <s> d e </s> (0, 6, 7, 2) shifted right after its
    decoder_start_token_id 2."""
    folder = tmp / "barttok"
    folder.mkdir()
    for f in (ARCH / "bart").iterdir():
        (folder / f.name).symlink_to(f)
    tok = json.loads(json.dumps(TOKENIZER))
    tok["added_tokens"][0].update(id=0, content="<s>")
    tok["added_tokens"][1].update(id=2)
    tok["model"]["vocab"] = {"<s>": 0, "<pad>": 1, "</s>": 2, "a": 3, "b": 4, "c": 5, "d": 6,
                             "e": 7, "<unk>": 8}
    pp = tok["post_processor"]
    pp["single"].insert(0, {"SpecialToken": {"id": "<s>", "type_id": 0}})
    pp["special_tokens"] = {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                            "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    m = attngeom.Model(folder)
    assert m.tokenize("d e") == [0, 6, 7, 2]
    a = m.attention([3, 4, 5, 2], target="d e")
    b = m.attention([3, 4, 5, 2], target_tokens=[2, 0, 6, 7])
    assert [x.tobytes() for x in a] == [x.tobytes() for x in b]


@pytest.mark.parametrize("arch", ["t5", "bart"])
def test_rollout_equals_cli(arch):
    cli = run_cli("rollout", *cli_args(arch, "--format", "json", "--layers", "1"))["records"]
    py = attngeom.Model(ARCH / arch).rollout(tokens=SRC, target_tokens=TGT[arch], layers=[1])
    same_records(py, cli)
    enc, dec = LAYERS[arch]
    want = [("encoder", 1), ("decoder", 1)] + ([("cross", 1)] if dec == 2 else [])
    assert [(r["stack"], r["layer"]) for r in py] == want


def test_similarity_equals_cli():
    cli = run_cli("similarity", *cli_args("t5", "--format", "json"))["records"]
    py, S = attngeom.Model(ARCH / "t5").similarity(tokens=SRC, target_tokens=TGT["t5"])
    assert py == cli
    # 6 heads per stack (2 layers x 3): S is NaN across stacks only
    same = np.kron(np.eye(3), np.ones((6, 6))) == 1
    assert S.shape == (18, 18) and np.all(np.isnan(S[~same])) and not np.any(np.isnan(S[same]))
    assert [r["stack"] for r in py] == ["encoder"] * 15 + ["decoder"] * 15 + ["cross"] * 15


@pytest.mark.parametrize("arch", ["t5", "t5-v1_1", "bart"])
def test_weights_equals_cli(arch):
    cli = run_cli("weights", ARCH / arch, "--format", "json")["records"]
    py = attngeom.Model(ARCH / arch).weights()
    same_records(py, cli)
    # the encoder's layers, then per decoder layer its self- and cross-attention
    enc, dec = LAYERS[arch]
    H = attngeom.Model(ARCH / arch).config["n_head"]
    assert [(r["stack"], r["layer"]) for r in py] == \
        [("encoder", l) for l in range(enc) for _ in range(H)] + \
        [(s, l) for l in range(dec) for s in ("decoder", "cross") for _ in range(H)]
    sel = attngeom.Model(ARCH / arch).weights("qk_sigma_max", layers=[1], heads=[0], jobs=2)
    assert [(r["stack"], r["layer"], r["head"]) for r in sel] == \
        [("encoder", 1, 0), ("decoder", 1, 0), ("cross", 1, 0)]
    whole = {(r["stack"], r["layer"], r["head"]): r["qk_sigma_max"] for r in py}
    assert all(r["qk_sigma_max"] == whole[(r["stack"], 1, 0)] for r in sel)


def test_whisper_weights_read_its_decoder():
    """A whisper folder saved with its decoder: both stacks, as the CLI's;
    one saved without (tiny-whisper): its encoder alone, as before."""
    py = attngeom.Model(ARCH / "whisper-seq2seq").weights("qk_sigma_max,ov_sigma_max")
    cli = run_cli("weights", ARCH / "whisper-seq2seq", "--format", "json", "--metrics",
                  "qk_sigma_max,ov_sigma_max")["records"]
    same_records(py, cli)
    assert [(r["stack"], r["layer"]) for r in py] == \
        [("encoder", l) for l in range(2) for _ in range(2)] + \
        [(s, l) for l in range(3) for s in ("decoder", "cross") for _ in range(2)]
    alone = attngeom.Model(ARCH.parent / "tiny-whisper").weights("qk_sigma_max")
    assert alone and all("stack" not in r for r in alone)


def test_whisper_residual_equals_cli():
    """Whisper's features and a decoder prompt: the encoder's 3 hidden
    states over 10 frames, then the decoder's 4 over the prompt's 7 ids."""
    ws, feats = ARCH / "whisper-seq2seq", ARCH.parent.parent / "archref" / "whisper-seq2seq" / "features.npy"
    prompt = [45, 12, 10, 5, 4, 7, 27]
    py = attngeom.Model(ws).residual(features=feats, target_tokens=prompt, precision="f64")
    cli = run_cli("residual", ws, "--features", feats, "--target-tokens", csv(prompt),
                  "--precision", "f64", "--format", "json")["records"]
    same_records(py, cli)
    assert [(r["stack"], r["rows"]) for r in py] == [("encoder", 10)] * 3 + [("decoder", 7)] * 4


@pytest.mark.parametrize("arch", ["t5", "bart"])
@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_residual_equals_cli(arch, precision):
    cli = run_cli("residual", *cli_args(arch, "--format", "json", "--precision", precision,
                                        "--metrics", "spectrum,geometry,activations"))["records"]
    py = attngeom.Model(ARCH / arch).residual(tokens=SRC, target_tokens=TGT[arch],
                                              precision=precision,
                                              metrics="spectrum,geometry,activations")
    same_records(py, cli)
    enc, dec = LAYERS[arch]
    assert [(r["stack"], r["layer"], r["rows"]) for r in py] == \
        [("encoder", l, len(SRC)) for l in range(enc + 1)] + \
        [("decoder", l, len(TGT[arch])) for l in range(dec + 1)]
    one = attngeom.Model(ARCH / arch).residual(tokens=SRC, target_tokens=TGT[arch], layers=[1],
                                               precision=precision)
    assert [(r["stack"], r["layer"]) for r in one] == [("encoder", 1), ("decoder", 1)]


def test_config_has_both_stacks():
    m = attngeom.Model(ARCH / "bart")
    info = run_cli("info", ARCH / "bart", "--format", "json")
    assert m.config["model_type"] == "bart"
    assert (m.config["n_layer"], m.config["decoder"]["n_layer"]) == \
        (info["config"]["layers"], info["decoder_config"]["layers"]) == (2, 3)
    assert (m.config["causal"], m.config["decoder"]["causal"]) == (0, 1)
    assert "decoder" not in attngeom.Model(ARCH / "roberta").config


def test_what_does_not_go_together(tmp):
    t5 = attngeom.Model(ARCH / "t5")
    need = "t5 is an encoder-decoder model: it needs a target"
    for run in (t5.analyze, t5.attention, t5.hidden_states):
        with pytest.raises(attngeom.Error, match=need):
            run([3, 4])
    roberta = attngeom.Model(ARCH / "roberta")
    one = "a target needs an encoder-decoder model"
    for run in (roberta.analyze, roberta.attention, roberta.hidden_states):
        with pytest.raises(attngeom.Error, match=one):
            run([3, 4], target_tokens=[0, 4])
    with pytest.raises(attngeom.Error, match=one):
        roberta.analyze([3, 4], target="a b")
    with pytest.raises(attngeom.Error, match="give one of target= and target_tokens="):
        t5.analyze([3, 4], target="x", target_tokens=[0])
    with pytest.raises(attngeom.Error, match="target_tokens: token id 99 at position 1 is "
                                             "outside the vocabulary"):
        t5.attention([3, 4], target_tokens=[0, 99])
    for bad in ("0,4", [0, -1]):
        with pytest.raises(attngeom.Error, match="target_tokens: expected"):
            t5.analyze([3, 4], target_tokens=bad)
    with pytest.raises(attngeom.Error, match="target_tokens: no ids"):
        t5.analyze([3, 4], target_tokens=[])
    with pytest.raises(attngeom.Error, match="no tokenizer files"):
        t5.analyze([3, 4], target="a b")
    with pytest.raises(attngeom.Error, match="linear attention is not taken by an "
                                             "encoder-decoder model"):
        t5.analyze([3, 4], target_tokens=[0, 4], normalizer="linear")
    with pytest.raises(attngeom.Error, match=need):
        t5.residual(tokens=[3, 4])
    with pytest.raises(attngeom.Error, match=one):
        roberta.residual(tokens=[3, 4], target_tokens=[0, 4])


# Whisper's decoder (whisper-seq2seq, its byte-level BPE): target= is the
# tokenizer's labels less their last id (HF's fine-tuning collator drops
# the leading <|startoftranscript|>, shift_tokens_right puts it back), as
# `attngeom analyze --target`; without a target the encoder alone
WHISPER_TEXT = "the cat sat on the mat."
WHISPER_IDS = [45, 43, 44, 47, 19, 30, 34, 36, 38, 31, 40, 27]  # the labels less <|endoftext|>


def test_whisper_target_text_equals_cli(tmp):
    ws, feats = ARCH / "whisper-seq2seq", ARCH.parent.parent / "archref" / "whisper-seq2seq" / "features.npy"
    m = attngeom.Model(ws)
    assert m.tokenize(WHISPER_TEXT) == WHISPER_IDS + [46]
    cli = run_cli("analyze", ws, "--features", feats, "--target", WHISPER_TEXT, "--format", "json",
                  "--precision", "f64", "--metrics", "sigma_max,cross")["records"]
    py = m.analyze(features=feats, target=WHISPER_TEXT, metrics="sigma_max,cross", precision="f64")
    same_records(py, cli)
    assert py == m.analyze(features=feats, target_tokens=WHISPER_IDS, metrics="sigma_max,cross",
                           precision="f64")
    assert [(r["rows"], r["cols"]) for r in py if r["stack"] == "cross"] == [(12, 10)] * 6
    a = m.attention(features=feats, target=WHISPER_TEXT)
    run_cli("attention", ws, "--features", feats, "--target", WHISPER_TEXT, "-o", tmp / "e.npy",
            "--decoder", tmp / "d.npy", "--cross", tmp / "c.npy")
    assert [x.tobytes() for x in a] == [np.load(tmp / f).tobytes() for f in ("e.npy", "d.npy", "c.npy")]
    # no target: the encoder alone, the pair's encoder arrays
    assert m.attention(features=feats).tobytes() == a.encoder.tobytes()
    assert "decoder" not in m.config


def test_t5_own_tokenizer_target_text():
    """t5-v1_1's Unigram: target= is [0] + labels[:-1], as the CLI's --target."""
    m = attngeom.Model(ARCH / "t5-v1_1")
    src, tgt = "translate: the cat sat on the mat.", "die katze sat auf der mat"
    assert m.tokenize(tgt) == [41, 42, 32, 44, 45, 34, 1]  # the Rust library's (seq2seq.sh)
    py = m.analyze(src, "sigma_max,cross", target=tgt)
    same_records(py, run_cli("analyze", ARCH / "t5-v1_1", "--text", src, "--target", tgt,
                             "--metrics", "sigma_max,cross", "--format", "json")["records"])
    assert py == m.analyze(src, "sigma_max,cross", target_tokens=[0, 41, 42, 32, 44, 45, 34])


def test_aggregate_by_layer_keeps_stacks_apart():
    """by="layer" on a pair's records: "stack" implied first, one row per
    (stack, layer), as the CLI's --aggregate --by layer."""
    recs = attngeom.Model(ARCH / "t5-v1_1").analyze(SRC, "sigma_max", target_tokens=TGT["t5-v1_1"],
                                                     precision="f64")
    got = attngeom.aggregate(recs, by="layer")
    want = {}
    for r in recs:
        want.setdefault((r["stack"], r["layer"]), []).append(r["sigma_max"])
    assert [(g["stack"], g["layer"]) for g in got] == list(want)
    for g in got:
        assert g["sigma_max"] == pytest.approx(np.mean(want[(g["stack"], g["layer"])]), rel=1e-12)
    assert [(g["stack"], g["n"]) for g in attngeom.aggregate(recs, by="")] == \
        [("encoder", 6), ("decoder", 9), ("cross", 9)]
