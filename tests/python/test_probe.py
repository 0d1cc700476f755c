"""`attngeom heads --probe induction` (docs/metrics.md, "The induction
probe") against numpy over `attngeom attention` of the very ids it drew
(settings.probe.ids): induction_score the mean of A[i, i-T+1] over the rows
of blocks 2..R, induction_baseline the mean of 1/k_i; the Python method
gives the CLI's records; the draw is the same for a seed at any -j."""

import numpy as np
import pytest

from conftest import TINY_BERT, TINY_GPT2, cli_error, run_cli

import attngeom


def probe_json(model, *args):
    return run_cli("heads", model, "--probe", "induction", "--format", "json", *args)


def stripe(model, tmp, ids, start, T, R):
    """(score, baseline) of every (layer, head) of the attention of ids."""
    path = tmp / "attn.npy"
    run_cli("attention", model, "--tokens", ",".join(map(str, ids)), "-o", path)
    A = np.load(path)  # (L, H, n, n)
    n = A.shape[-1]
    rows = np.arange(start + T, start + R * T)
    score = A[:, :, rows, rows - T + 1].mean(axis=-1)
    causal = bool(np.all(np.triu(A, 1) == 0))
    k = rows + 1 if causal else np.full(rows.shape, n)
    return score, np.mean(1.0 / k), causal


@pytest.mark.parametrize("model,T,R,seed,framed", [
    (TINY_GPT2, 9, 3, 11, False),   # GPT-2's tokenizer adds no special token
    (TINY_BERT, 6, 2, 4, True),     # [CLS] ... [SEP]
])
def test_cli_equals_numpy(tmp, model, T, R, seed, framed):
    out = probe_json(model, "--length", T, "--repeats", R, "--seed", seed)
    p = out["settings"]["probe"]
    ids, start = p["ids"], p["start"]
    assert (p["name"], p["length"], p["repeats"]) == ("induction", T, R)
    assert start == int(framed) and len(ids) == R * T + 2 * int(framed)
    body = ids[start:start + R * T]
    assert body == body[:T] * R
    score, base, causal = stripe(model, tmp, ids, start, T, R)
    assert causal == (model == TINY_GPT2)
    recs = out["records"]
    assert [(r["layer"], r["head"]) for r in recs] == \
        [(l, h) for l in range(score.shape[0]) for h in range(score.shape[1])]
    for r in recs:
        assert r["induction_score"] == pytest.approx(score[r["layer"], r["head"]], rel=1e-13)
        assert r["induction_baseline"] == pytest.approx(base, rel=1e-13)
        assert (r["length"], r["repeats"], r["seed"], r["rows"]) == (T, R, seed, len(ids))


def test_same_for_a_seed_at_any_jobs():
    args = ("--length", 12, "--seed", 5, "--layers", "1,3", "--heads", "0,2")
    one, two = probe_json(TINY_GPT2, "-j", 1, *args), probe_json(TINY_GPT2, "-j", 2, *args)
    assert one["records"] == two["records"]
    assert one["settings"]["probe"] == two["settings"]["probe"]
    other = probe_json(TINY_GPT2, "--length", 12, "--seed", 6)
    assert other["settings"]["probe"]["ids"] != one["settings"]["probe"]["ids"]
    assert [(r["layer"], r["head"]) for r in one["records"]] == [(1, 0), (1, 2), (3, 0), (3, 2)]


def test_python_equals_cli():
    out = probe_json(TINY_BERT, "--length", 5, "--seed", 2, "--heads", "1")
    with attngeom.Model(TINY_BERT) as m:
        ids, start = m.probe_tokens(5, 2, 2)
        rows = m.heads(length=5, seed=2, heads=[1])
    assert ids == out["settings"]["probe"]["ids"] and start == out["settings"]["probe"]["start"]
    assert rows == out["records"]


def test_errors():
    assert cli_error("heads", TINY_GPT2, "--probe", "induction", "--length", 129) == \
        "--length 129 --repeats 2: 258 tokens with the special ones, more than the 256 the " \
        "model takes (n_positions = 256)"
    for args, needle in [(("--length", 4, "--repeats", 1), "--repeats takes a whole number"),
                         (("--length", 0), "--length takes a whole number"),
                         ((), "missing --length"),
                         (("--length", 4, "--lenght", 4), "did you mean --length"),
                         (("--length", 4, "--metrics", "all"), "--metrics does not apply")]:
        p = run_cli("heads", TINY_GPT2, "--probe", "induction", *args, ok=False)
        assert p.returncode == 2 and needle in p.stderr, (args, p.stderr)
    p = run_cli("heads", TINY_GPT2, "--probe", "duplicate", "--length", 3, ok=False)
    assert p.returncode == 2 and "--probe takes induction" in p.stderr
    with attngeom.Model(TINY_GPT2) as m, pytest.raises(attngeom.Error, match="probe takes"):
        m.heads("duplicate", length=3)


def test_expect(tmp):
    golden = tmp / "g.json"
    args = ("heads", TINY_GPT2, "--probe", "induction", "--length", 5, "--heads", 2)
    run_cli(*args, "--format", "json", "-o", golden)
    p = run_cli(*args, "--expect", golden, ok=False)
    assert p.returncode == 0 and "4 records match" in p.stderr, p.stderr
    p = run_cli(*args, "--seed", 2, "--expect", golden, ok=False)
    assert p.returncode == 3 and "seed: expected 1, got 2" in p.stderr, p.stderr
    assert p.stdout.startswith("layer")  # a mismatch still writes the records
