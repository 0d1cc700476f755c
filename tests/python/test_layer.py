"""attngeom.layer against `attngeom layer --format json`: the same records
to the last bit (every metric family, kernel options, f64), the same
attention as --save-attention, the same messages."""

import pytest

from conftest import ROOT, TINY_GPT2, cli_error, run_cli

import attngeom

np = pytest.importorskip("numpy")

X = ROOT / "tests" / "golden" / "data" / "x.npy"
W = ROOT / TINY_GPT2 / "model.safetensors"
QKV = ["--qkv", "h.0.attn.c_attn.weight", "--qkv-bias", "h.0.attn.c_attn.bias"]
KW = dict(weights=W, qkv="h.0.attn.c_attn.weight", qkv_bias="h.0.attn.c_attn.bias", heads=4)


def same_records(py, cli):
    assert [list(r) for r in py] == [list(r) for r in cli]
    for p, c in zip(py, cli):
        for k in c:
            assert type(p[k]) is type(c[k]) and p[k] == c[k], (k, p[k], c[k])


CASES = [
    ([], {}),
    (["--causal", "--metrics", "all", "--trials", "3", "--seed", "5"],
     dict(causal=True, metrics="all", trials=3, seed=5, jobs=2)),
    (["--window", "3", "--softcap", "2.5", "--rotary-dim", "8", "--rope-theta", "100",
      "--precision", "f64", "--scale", "0.3", "--label", "L"],
     dict(window=3, softcap=2.5, rotary_dim=8, rope_theta=100, precision="f64", scale=0.3,
          label="L")),
]


@pytest.mark.parametrize("opts,kw", CASES, ids=["default", "all", "kernel"])
def test_records_and_attention_equal_the_cli(tmp, opts, kw):
    cli = run_cli("layer", "--x", X, "--weights", W, *QKV, "--heads", "4", *opts,
                  "--save-attention", tmp / "A.npy", "--format", "json")
    recs, attn = attngeom.layer(X, save_attention=True, **KW, **kw)
    same_records(recs, cli["records"])
    assert attn.tobytes() == np.load(tmp / "A.npy").tobytes()
    assert attn.shape == (4, 10, 10)


def test_separate_tensors_and_an_array_x():
    names = dict(q="h.1.attn.c_attn.weight", k="h.1.attn.c_attn.weight")
    cli = run_cli("layer", "--x", X, "--weights", W, "--q", names["q"], "--k", names["k"],
                  "--heads", "2", "--causal", "--format", "json")
    same_records(attngeom.layer(np.load(X), weights=W, heads=2, causal=True, **names),
                 cli["records"])


def test_messages_are_the_cli_s():
    msg = cli_error("layer", "--x", X, "--weights", W, *QKV, "--heads", "5")
    with pytest.raises(attngeom.Error) as e:
        attngeom.layer(X, **dict(KW, heads=5))
    assert str(e.value) == msg
    with pytest.raises(attngeom.Error) as e:
        attngeom.layer(np.zeros((2, 3, 4)), **KW)
    assert str(e.value) == ("<x>: X must be a non-empty 2-D array [n, d] (after dropping "
                            "leading 1s), it has 3 dimensions")
    with pytest.raises(attngeom.Error, match="exceeds the head dim 32"):
        attngeom.layer(X, rotary_dim=64, **KW)
    with pytest.raises(attngeom.Error, match="^give either qkv= or q= and k=$"):
        attngeom.layer(X, weights=W, heads=4)
    with pytest.raises(attngeom.Error, match="^q= and k= go together$"):
        attngeom.layer(X, weights=W, heads=4, q="h.0.attn.c_attn.weight")
    with pytest.raises(attngeom.Error, match="^heads: a positive number of heads, not 0$"):
        attngeom.layer(X, **dict(KW, heads=0))
