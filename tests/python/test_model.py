"""attngeom.Model equals the CLI on the same model and text: attention as
`attngeom attention -o`, hidden states as --hidden, records as analyze and
weights write them, token ids as tokenize."""

import json
import threading
import time

import numpy as np
import pytest

import attngeom
from conftest import ARCH, TINY_BERT, TINY_GPT2, cli_error, run_cli

TEXT = "In the beginning God created the heaven and the earth."


@pytest.fixture(scope="module")
def gpt2():
    return attngeom.Model(TINY_GPT2)


def test_config_and_tokenize(gpt2):
    assert gpt2.config["model_type"] == "gpt2" and gpt2.config["n_layer"] == 4
    p = run_cli("tokenize", TINY_GPT2, "--text", TEXT, "--format", "json", ok=False)
    cli = json.loads(p.stdout)
    assert gpt2.tokenize(TEXT) == cli["ids"]
    assert gpt2.tokens(cli["ids"]) == cli["tokens"]
    assert gpt2.token_strings(cli["ids"]) == cli["strings"]
    assert "".join(cli["strings"]) == TEXT  # byte-level BPE: every byte kept


@pytest.mark.parametrize("model", [TINY_GPT2, TINY_BERT])
def test_tokenize_offsets_equal_cli(model):
    m = attngeom.Model(model)
    text = "Héllo, wörld: the CAT sat."
    p = run_cli("tokenize", model, "--text", text, "--offsets", "--format", "json", ok=False)
    cli = json.loads(p.stdout)
    ids, spans = m.tokenize(text, offsets=True)
    assert ids == cli["ids"] == m.tokenize(text)
    assert [list(s) for s in spans] == cli["offsets"]
    if model == TINY_GPT2:  # byte-level, no trim: the spans tile the text
        assert "".join(text[a:b] for a, b in spans) == text
    else:  # [CLS] and [SEP] (0, 0); every word piece inside its word
        assert spans[0] == spans[-1] == (0, 0)
        assert text[spans[1][0]:spans[1][1]] == "Héll"
    assert m.tokenize("", offsets=True)[1] == [(0, 0)] * len(m.tokenize(""))


@pytest.mark.parametrize("model", [TINY_GPT2, TINY_BERT])
def test_decode_equals_cli(model):
    m = attngeom.Model(model)
    ids = m.tokenize(TEXT)
    for skip in (False, True):
        p = run_cli("decode", model, "--tokens", ",".join(map(str, ids)), "--format", "json",
                    *(["--skip-special"] if skip else []), ok=False)
        assert m.decode(ids, skip_special=skip) == json.loads(p.stdout)["text"]
    if model == TINY_GPT2:
        assert m.decode(ids) == TEXT
    else:  # BERT: lower-cased, [CLS]/[SEP] unless skipped, "." cleaned up to the word
        assert m.decode(ids) == "[CLS] " + TEXT.lower() + " [SEP]"
        assert m.decode(ids, skip_special=True) == TEXT.lower()
        assert m.token_strings(ids)[:3] == ["[CLS]", " in", " the"]
    assert m.decode([]) == "" and m.token_strings([]) == []
    with pytest.raises(attngeom.Error, match="ids: expected non-negative"):
        m.decode([-1])


@pytest.mark.parametrize("model", [TINY_GPT2, TINY_BERT])
@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_attention_and_hidden_equal_cli(tmp, model, precision):
    m = attngeom.Model(model)
    run_cli("attention", model, "--text", TEXT, "--precision", precision, "-o", tmp / "a.npy",
            "--hidden", tmp / "h.npy")
    a, h = np.load(tmp / "a.npy"), np.load(tmp / "h.npy")
    got = m.attention(TEXT, precision=precision)
    assert got.dtype == np.float64 and got.shape == a.shape
    assert got.tobytes() == a.tobytes()
    assert m.hidden_states(TEXT, precision=precision).tobytes() == h.tobytes()


@pytest.mark.parametrize("arch", ["llama3", "gemma2", "gpt-neox-parallel"])
def test_attention_ids_on_arch_models(tmp, arch):
    model = ARCH / arch
    run_cli("attention", model, "--tokens", "1,5,9,2,7", "--layers", "0", "--heads", "1",
            "-o", tmp / "a.npy")
    got = attngeom.Model(model).attention([1, 5, 9, 2, 7], layers=[0], heads=1)
    assert got.tobytes() == np.load(tmp / "a.npy").tobytes()


@pytest.mark.parametrize("arch,precision", [("gemma2", "f64"), ("mistral-window", "f32"),
                                            ("qwen2-window", "f64")])
def test_attention_scores_equal_cli(tmp, arch, precision):
    """scores=True gives `attention --scores`' bytes for a selection of
    heads, from the same pass (the probabilities unchanged), and the softmax
    of each row is the probability row (-inf exactly where masked)."""
    model = ARCH / arch
    ids = [1, 5, 9, 2, 7, 3, 11, 4]
    run_cli("attention", model, "--tokens", ",".join(map(str, ids)), "--layers", "0,1",
            "--heads", "1,2", "--precision", precision, "-o", tmp / "a.npy",
            "--scores", tmp / "s.npy")
    a, s = attngeom.Model(model).attention(ids, layers=[0, 1], heads=[1, 2],
                                           precision=precision, scores=True)
    assert a.tobytes() == np.load(tmp / "a.npy").tobytes()
    assert s.tobytes() == np.load(tmp / "s.npy").tobytes()
    assert np.array_equal(np.isneginf(s), a == 0) and np.isneginf(s).any()
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    tol = 1e-15 if precision == "f64" else 1e-6
    assert np.max(np.abs(e / e.sum(axis=-1, keepdims=True) - a)) <= tol


def same_records(py, cli):
    assert [list(r) for r in py] == [list(r) for r in cli]
    for p, c in zip(py, cli):
        for k in c:
            assert type(p[k]) is type(c[k]) and p[k] == c[k], (k, p[k], c[k])


@pytest.mark.parametrize("metrics", ["spectrum,attention,geometry", "all"])
def test_analyze_equals_cli(gpt2, metrics):
    cli = run_cli("analyze", TINY_GPT2, "--text", TEXT, "--metrics", metrics, "--format", "json")
    same_records(gpt2.analyze(TEXT, metrics), cli["records"])


def test_analyze_selection_and_options(gpt2):
    cli = run_cli("analyze", TINY_GPT2, "--text", TEXT, "--layers", "1-2", "--heads", "0,3",
                  "--metrics", "stability,curvature", "--epsilon", "0.01", "--trials", "3",
                  "--seed", "7", "--edge-threshold", "0.1", "--precision", "f64",
                  "--format", "json")
    py = gpt2.analyze(gpt2.tokenize(TEXT), "stability,curvature", layers=[1, 2], heads=[3, 0],
                      epsilon=0.01, trials=3, seed=7, edge_threshold=0.1, precision="f64", jobs=2)
    same_records(py, cli["records"])
    assert gpt2.stability(TEXT, epsilon=0.01, trials=3, seed=7, layers=[1, 2], heads=[0, 3],
                          precision="f64") == [
        {k: v for k, v in r.items() if not k.startswith(("edges", "forman", "ollivier"))}
        for r in py]


def test_weights_equal_cli(gpt2):
    cli = run_cli("weights", TINY_GPT2, "--layers", "0,3", "--format", "json")
    same_records(gpt2.weights(layers=[0, 3]), cli["records"])


def test_to_pandas(gpt2):
    pd = pytest.importorskip("pandas")
    df = gpt2.analyze(TEXT, to_pandas=True)
    assert isinstance(df, pd.DataFrame) and len(df) == 16
    assert set(df["model"]) == {"tiny-gpt2"}


# ---- bad input --------------------------------------------------------------

def test_missing_folder(tmp):
    missing = str(tmp / "nope")
    with pytest.raises(attngeom.Error) as e:
        attngeom.Model(missing)
    assert str(e.value) == cli_error("weights", missing)


def test_bad_ids_and_selections(gpt2):
    with pytest.raises(attngeom.Error) as e:
        gpt2.attention([1, 2, 70000])
    msg = cli_error("attention", TINY_GPT2, "--tokens", "1,2,70000", "-o", "/dev/null")
    assert str(e.value) == msg
    with pytest.raises(attngeom.Error, match="heads: 4 is outside 0..3"):
        gpt2.attention("hi", heads=[4])
    with pytest.raises(attngeom.Error, match="text: the text gives no tokens"):
        gpt2.attention("")
    with pytest.raises(attngeom.Error, match="precision takes 'f32' or 'f64'"):
        gpt2.attention("hi", precision="f16")
    with pytest.raises(attngeom.Error, match="^metrics: 'weights' is not computed by Model.analyze$"):
        gpt2.analyze("hi", "weights")
    with pytest.raises(attngeom.Error, match="ids: expected a sequence of non-negative"):
        gpt2.analyze([-1, 3])


# ---- close() ------------------------------------------------------------------

# Every public method but close, and __enter__: what a closed model refuses.
CLOSED_CALLS = {
    "tokenize": lambda m: m.tokenize(TEXT),
    "tokens": lambda m: m.tokens([1, 2]),
    "decode": lambda m: m.decode([1, 2]),
    "token_strings": lambda m: m.token_strings([1, 2]),
    "attention": lambda m: m.attention([1, 2, 3]),
    "hidden_states": lambda m: m.hidden_states([1, 2, 3]),
    "analyze": lambda m: m.analyze([1, 2, 3]),
    "stability": lambda m: m.stability([1, 2, 3]),
    "weights": lambda m: m.weights(),
    "residual": lambda m: m.residual(tokens=[1, 2, 3]),
    "rollout": lambda m: m.rollout(tokens=[1, 2, 3]),
    "contributions": lambda m: m.contributions(tokens=[1, 2, 3]),
    "similarity": lambda m: m.similarity(tokens=[1, 2, 3]),
    "heads": lambda m: m.heads(length=3),
    "probe_tokens": lambda m: m.probe_tokens(3),
    "__enter__": lambda m: m.__enter__(),
}


# from the class, so that a method added without an entry above fails
METHODS = {n for n in dir(attngeom.Model) if not n.startswith("_")
           and callable(getattr(attngeom.Model, n))} - {"close"} | {"__enter__"}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_use_after_close_raises(name):
    m = attngeom.Model(TINY_GPT2)
    m.tokenize("hi")  # the tokenizer loaded: close frees it too
    m.close()
    with pytest.raises(attngeom.Error) as e:
        CLOSED_CALLS[name](m)
    assert str(e.value) == "model %s is closed" % TINY_GPT2 and e.value.status == 1
    m.close()  # again: nothing to do
    assert m.config["n_layer"] == 4  # plain attributes stay


def test_close_after_with_block():
    with attngeom.Model(TINY_GPT2) as m:
        m.weights(layers=[0])
    with pytest.raises(attngeom.Error, match="is closed"):
        m.weights()


IDS = list(range(1, 31))


def test_close_waits_for_a_call_in_flight(monkeypatch):
    """close() from another thread while analyze runs in the library (GIL
    released) returns only once that call has returned, whose records are
    whole and right; the model is freed after it, not under it."""
    reference = attngeom.Model(TINY_GPT2).analyze(IDS, "all", jobs=1)
    lib = attngeom._lib.lib
    real, entered, ended = lib.ag_model_analyze, threading.Event(), []

    def analyze(*args):
        entered.set()
        status = real(*args)
        ended.append(time.perf_counter())
        return status
    monkeypatch.setattr(lib, "ag_model_analyze", analyze)
    m = attngeom.Model(TINY_GPT2)
    out = {}
    t = threading.Thread(target=lambda: out.update(recs=m.analyze(IDS, "all", jobs=1)))
    t.start()
    assert entered.wait(60)
    m.close()
    closed = time.perf_counter()
    t.join()
    assert ended and ended[0] < closed, "close() returned while analyze was running"
    assert out["recs"] == reference
    with pytest.raises(attngeom.Error, match="is closed"):
        m.analyze(IDS)


def test_close_while_threads_keep_calling():
    """Threads calling analyze in a loop while another closes: every call
    either gives the whole right records or raises "is closed"; none crashes."""
    reference = attngeom.Model(TINY_GPT2).analyze(IDS[:12], jobs=1)
    m = attngeom.Model(TINY_GPT2)
    results, errors = [], []

    def loop():
        while True:
            try:
                results.append(m.analyze(IDS[:12], jobs=1))
            except attngeom.Error as e:
                errors.append(str(e))
                return
    threads = [threading.Thread(target=loop) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while len(results) < 6 and time.monotonic() < deadline:
        time.sleep(0.001)
    m.close()
    for t in threads:
        t.join()
    assert all(r == reference for r in results)
    assert errors == ["model %s is closed" % TINY_GPT2] * 3
