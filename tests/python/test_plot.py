"""attngeom.plot against `attngeom plot`: the same bytes for every kind and
format (the figures carry no date: the same input gives the same file), the
same messages for data that do not make a figure."""

import pytest

from conftest import ROOT, cli_error, run_cli

import attngeom

np = pytest.importorskip("numpy")

D = ROOT / "tests" / "golden" / "data"

# (kind, input, CLI options, keywords): the golden set's plot cases
CASES = [
    ("heatmap", D / "h.jsonl", ["--metric", "sigma_max", "--model", "m0", "--values"],
     dict(metric="sigma_max", model="m0", values=True)),
    ("depth", D / "h.jsonl", ["--metric", "entropy_mean"], dict(metric="entropy_mean")),
    ("depth", D / "h.jsonl", ["--metric", "sigma_max", "--model", "m0",
                              "--title", "T", "--size", "500x400", "--relative"],
     dict(metric="sigma_max", model="m0", title="T", size=(500, 400), relative=True)),
    ("attention", D / "A4.npy", ["--layer", "1", "--head", "2", "--tokens", D / "tok.json"],
     dict(layer=1, head=2, tokens=D / "tok.json")),
    ("spectrum", D / "A4.npy", ["--head", "1", "--dpi", "72"], dict(head=1, dpi=72)),
    ("similarity", D / "S.npy", ["--heads-per-layer", "3", "--vmin", "0.1"],
     dict(heads_per_layer=3, vmin=0.1)),
    ("similarity", D / "S.npy", ["--order", "layer"], dict(order="layer")),
    ("forest", D / "h.jsonl", ["--metric", "sigma_max", "--ref", "1"],
     dict(metric="sigma_max", ref=1)),
    ("forest", D / "h.jsonl", ["--metric", "entropy_mean", "--by", "model,layer", "--ci", "0.9",
                               "--unit", "text"],
     dict(metric="entropy_mean", by=["model", "layer"], ci=0.9, unit="text")),
]


def cli_bytes(tmp, kind, path, opts, fmt):
    out = tmp / ("cli." + fmt)
    run_cli("plot", path, "--kind", kind, *opts, "-o", out)
    return out.read_bytes()


@pytest.mark.parametrize("fmt", ["svg", "pdf", "png"])
@pytest.mark.parametrize("kind,path,opts,kw", CASES, ids=[c[0] for c in CASES])
def test_bytes_equal_the_cli(tmp, kind, path, opts, kw, fmt):
    want = cli_bytes(tmp, kind, path, opts, fmt)
    got = attngeom.plot(kind, path, format=fmt, **kw)
    assert got == want
    out = tmp / ("py." + fmt)  # out=: written too, the format from its suffix
    assert attngeom.plot(kind, path, out=out, **kw) == want
    assert out.read_bytes() == want


def vit_attention():
    """[2, 2, 5, 5]: a CLS token and a 2 x 2 patch grid, rows summing to 1."""
    a = np.arange(100, dtype=np.float64).reshape(2, 2, 5, 5) % 7 + 1
    return a / a.sum(axis=-1, keepdims=True)


def test_patches_and_an_array_input(tmp):
    path = tmp / "vit.npy"
    a = vit_attention()
    np.save(path, a)
    opts = ["--layer", "1", "--head", "0", "--query", "3", "--grid", "2x2"]
    want = cli_bytes(tmp, "patches", path, opts, "png")
    kw = dict(layer=1, head=0, query=3, grid="2x2", format="png")
    assert attngeom.plot("patches", path, **kw) == want
    assert attngeom.plot("patches", a, **kw) == want
    want = cli_bytes(tmp, "attention", path, ["--grid", "2x2"], "svg")
    assert attngeom.plot("attention", a, grid=(2, 2)) == want


def test_data_errors_carry_the_cli_message(tmp):
    msg = cli_error("plot", D / "h.jsonl", "--kind", "heatmap", "--metric", "nope",
                    "-o", tmp / "f.svg")
    with pytest.raises(attngeom.Error) as e:
        attngeom.plot("heatmap", D / "h.jsonl", metric="nope")
    assert str(e.value) == msg
    msg = cli_error("plot", D / "S.npy", "--kind", "attention", "--layer", "0", "-o", tmp / "f.svg")
    with pytest.raises(attngeom.Error) as e:
        attngeom.plot("attention", D / "S.npy", layer=0)
    assert str(e.value) == msg
    with pytest.raises(attngeom.Error) as e:
        attngeom.plot("spectrum", np.zeros((2, 3)))
    assert str(e.value) == "<array>: holds [2, 3], not attention [L, H, n, n], [L, n, n] or [n, n]"
    with pytest.raises(ValueError):
        attngeom.plot("bars", D / "S.npy")
    with pytest.raises(ValueError):
        attngeom.plot("similarity", D / "S.npy", format="gif")


def test_depth_by_head_is_refused():
    """a line per head index would join unrelated heads of successive layers"""
    with pytest.raises(attngeom.Error, match="unrelated heads"):
        attngeom.plot("depth", D / "h.jsonl", metric="sigma_max", by="head")


def lens_scores():
    """[1, 2, 4, 4] causal scores (-inf above the diagonal): head 1's last
    row is equal scores, uniform under every normaliser."""
    s = np.arange(32, dtype=np.float64).reshape(1, 2, 4, 4) % 5 * 0.4
    s[0, 1, 3] = 0.25
    s[:, :, np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]] = -np.inf
    return s


def test_lens_bytes_equal_the_cli(tmp):
    """kind lens: the same bytes as `plot --kind lens` for the same options,
    from a path or an array; the default query is the last row"""
    path = tmp / "S.npy"
    s = lens_scores()
    np.save(path, s)
    opts = ["--head", "1", "--query", "2", "--normalizers", "softmax,entmax:1.5",
            "--temperatures", "0.25,4"]
    want = cli_bytes(tmp, "lens", path, opts, "svg")
    kw = dict(head=1, query=2, normalizers=["softmax", "entmax:1.5"], temperatures=[0.25, 4])
    assert attngeom.plot("lens", path, **kw) == want
    assert attngeom.plot("lens", s, **kw) == want
    want = cli_bytes(tmp, "lens", path, ["--head", "1"], "png")
    assert attngeom.plot("lens", s, head=1, query=3, format="png") == want
    assert attngeom.plot("lens", s, head=1, format="png") == want
    assert attngeom.plot("lens", s, head=1, query=2, format="png") != want


def test_lens_errors_carry_the_cli_message(tmp):
    path = tmp / "S.npy"
    np.save(path, lens_scores())
    msg = cli_error("plot", path, "--kind", "lens", "--query", "4", "-o", tmp / "f.svg")
    with pytest.raises(attngeom.Error) as e:
        attngeom.plot("lens", path, query=4)
    assert str(e.value) == msg and "0 to 3" in msg
    with pytest.raises(attngeom.Error, match="linear"):
        attngeom.plot("lens", path, normalizers="linear")
    with pytest.raises(attngeom.Error, match="no allowed key"):
        attngeom.plot("lens", np.full((2, 2), -np.inf))


def test_cross_attention_and_stack_equal_the_cli(tmp):
    """issue 30: a rectangular [.., n_target, n_source] cross-attention with
    target_tokens (rows) and tokens (columns), and depth of one stack."""
    import json
    a = np.arange(24, dtype=np.float64).reshape(1, 2, 3, 4) % 5 + 1
    np.save(tmp / "C.npy", a / a.sum(axis=-1, keepdims=True))
    (tmp / "src.json").write_text(json.dumps({"ids": [1, 2, 3, 4], "tokens": list("abcd")}))
    (tmp / "tgt.json").write_text(json.dumps({"ids": [0, 5, 6], "tokens": ["<s>", "x", "y"]}))
    kw = dict(head=1, tokens=tmp / "src.json", target_tokens=tmp / "tgt.json")
    want = cli_bytes(tmp, "attention", tmp / "C.npy",
                     ["--head", "1", "--tokens", tmp / "src.json", "--target-tokens",
                      tmp / "tgt.json"], "svg")
    assert attngeom.plot("attention", tmp / "C.npy", **kw) == want
    assert attngeom.plot("attention", a / a.sum(axis=-1, keepdims=True), **kw) == want
    rec = [{"model": "m", "stack": s, "layer": l, "head": 0, "x": 1.0 + l + (s == "cross")}
           for s in ("encoder", "cross") for l in (0, 1)]
    (tmp / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rec))
    want = cli_bytes(tmp, "depth", tmp / "r.jsonl", ["--metric", "x", "--stack", "cross"], "svg")
    assert attngeom.plot("depth", tmp / "r.jsonl", metric="x", stack="cross") == want
    with pytest.raises(attngeom.Error, match="choose it with --stack"):
        attngeom.plot("depth", tmp / "r.jsonl", metric="x")
