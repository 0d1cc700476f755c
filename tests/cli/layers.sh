#!/bin/sh
# tests/cli/layers.sh CLI — end-to-end checks of the commands across layers
# (docs/metrics.md, family G) on models/tiny-gpt2: residual (families A and C of every hidden
# state) against `matrix` on the hidden states `attention --hidden` writes,
# rollout against a numpy rollout of `attention -o`'s probabilities,
# similarity against numpy JS distances of the same probabilities, the
# selections, --text-file, --expect, and the error cases: exit 1 (2 for usage
# errors), exactly one stderr line, nothing on stdout, no file left behind.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json"

TEXT="In the beginning God created the heaven and the earth."
printf 'In the beginning\n\nGod created the heaven\n' >"$T/three.txt"

# Python helpers of this script's checks (pycheck, lib.sh)
PYLIB='
def strrecords(p):
    with open(p) as f:
        return json.load(f, parse_float=str)["records"]
def rollout(A):
    L, H, n, _ = A.shape
    R, out = None, []
    for l in range(L):
        At = 0.5 * A[l].mean(axis=0) + 0.5 * np.eye(n)
        R = At if R is None else At @ R
        out.append(R)
    return np.array(out)
def close(x, y, tol=1e-12):
    if isinstance(x, (bool, type(None))) or isinstance(y, (bool, type(None))):
        return x == y
    return abs(x - y) <= tol * max(1.0, abs(y))
'

runj tok.json tokenize "$GPT2" --text "$TEXT" --format json
IDS=$("$PY" -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["ids"])))' "$T/tok.json" 2>/dev/null)
NTOK=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["ids"]))' "$T/tok.json" 2>/dev/null)

# ---- residual ------------------------------------------------------------------
runj res.json residual "$GPT2" --text "$TEXT" --format json
PYSCRIPT='
r = records(a[0]); n = int(a[1])
assert len(r) == 5, "%d records, expected L+1 = 5" % len(r)
assert [x["layer"] for x in r] == [0, 1, 2, 3, 4], [x["layer"] for x in r]
assert all(x["head"] == -1 and x["rows"] == n and x["cols"] == 128 for x in r), r[0]
keys = {"sigma_max", "sigma_gap", "effective_rank", "stable_rank", "participation_ratio",
        "numerical_rank", "mean_cosine", "pc1_share", "res_ratio"}
for x in r:
    got = set(x) - {"layer", "head", "rows", "cols", "model"}
    assert got == keys, ("keys", got ^ keys)
    assert x["model"] == "tiny-gpt2", x["model"]
    assert 0 < x["res_ratio"] <= 1 and 0 < x["pc1_share"] <= 1, x
'
pycheck "residual --text: 5 records, head -1, cols 128, families A and C" "$T/res.json" "$NTOK"

# residual = matrix on each hidden state of attention --hidden, as printed JSON
# text (matrix reads the [L+1, n, d] file as heads, one per hidden state)
PYSCRIPT='
rs, mx = strrecords(a[0]), strrecords(a[1])
assert len(rs) == len(mx) == 5, (len(rs), len(mx))
for l, (x, y) in enumerate(zip(rs, mx)):
    assert x["layer"] == l and x["head"] == -1 and y["head"] == l, (x["layer"], x["head"], y["head"])
    x = {k: v for k, v in x.items() if k not in ("layer", "head", "model")}
    y = {k: v for k, v in y.items() if k not in ("layer", "head", "model")}
    assert x == y, ("hidden state %d" % l, {k: (x.get(k), y.get(k)) for k in set(x) | set(y) if x.get(k) != y.get(k)})
'
runj att64.out attention "$GPT2" --tokens "$IDS" --precision f64 -o "$T/A64.npy" --hidden "$T/H64.npy"
runj res64.json residual "$GPT2" --tokens "$IDS" --precision f64 --format json
runj mxh64.json matrix "$T/H64.npy" --metrics spectrum,geometry --format json
pycheck "residual --precision f64 = matrix on attention --hidden (exact JSON)" "$T/res64.json" "$T/mxh64.json"
runj att32.out attention "$GPT2" --text "$TEXT" -o "$T/A32.npy" --hidden "$T/H32.npy"
runj mxh32.json matrix "$T/H32.npy" --metrics spectrum,geometry --format json
pycheck "residual (f32) = matrix on attention --hidden (exact JSON)" "$T/res.json" "$T/mxh32.json"

runj ressel.json residual "$GPT2" --text "$TEXT" --layers 0,4 --metrics res_ratio,pc1_share --format json
PYSCRIPT='
s, r = records(a[0]), records(a[1])
assert [x["layer"] for x in s] == [0, 4], [x["layer"] for x in s]
for x in s:
    y = r[x["layer"]]
    assert set(x) == {"layer", "head", "rows", "cols", "pc1_share", "res_ratio", "model"}, set(x)
    assert x["res_ratio"] == y["res_ratio"] and x["pc1_share"] == y["pc1_share"], (x, y)
'
pycheck "residual --layers 0,4 --metrics res_ratio,pc1_share" "$T/ressel.json" "$T/res.json"

runj resfile.json residual "$GPT2" --text-file "$T/three.txt" --format json
PYSCRIPT='
r = records(a[0])
assert [(x.get("text"), x["layer"]) for x in r] == [(t, l) for t in (0, 2) for l in range(5)], \
    [(x.get("text"), x["layer"]) for x in r]
'
pycheck "residual --text-file (blank middle line): texts 0 and 2, 5 records each" "$T/resfile.json"

# ---- rollout -------------------------------------------------------------------
runj rol64.json rollout "$GPT2" --tokens "$IDS" --precision f64 -o "$T/R64.npy" --format json
PYSCRIPT='
r = records(a[0]); A = np.load(a[1]); R = np.load(a[2])
ref = rollout(A)
assert R.dtype == np.dtype("<f8") and R.shape == ref.shape == (4, A.shape[2], A.shape[2]), (R.dtype, R.shape)
e = abs(R - ref).max()
assert e <= 1e-12, "max |R - numpy R| = %g" % e
assert len(r) == 4 and [(x["layer"], x["head"]) for x in r] == [(l, -1) for l in range(4)], r
up = np.triu(np.ones(R.shape[-1], bool), 1)
assert (R[:, up] == 0).all(), "R not lower triangular"
assert abs(R.sum(axis=-1) - 1).max() <= 1e-14 * R.shape[-1], abs(R.sum(axis=-1) - 1).max()
np.save(a[3], ref)
'
pycheck "rollout -o R.npy = numpy rollout of attention -o (1e-12)" "$T/rol64.json" "$T/A64.npy" \
    "$T/R64.npy" "$T/Rref.npy"
runj mxr.json matrix "$T/Rref.npy" --format json
PYSCRIPT='
r, m = records(a[0]), records(a[1])
assert len(r) == len(m) == 4, (len(r), len(m))
for x, y in zip(r, m):
    assert y["head"] == x["layer"], (x["layer"], y["head"])
    assert set(x) == set(y), set(x) ^ set(y)
    for k in x:
        if k not in ("layer", "head", "model"):
            assert close(x[k], y[k]), ("layer %d %s: rollout %r, matrix %r" % (x["layer"], k, x[k], y[k]))
assert all(x["causal"] is True for x in r), "rollout of causal attention not causal"
'
pycheck "rollout records = matrix on numpy R (1e-12)" "$T/rol64.json" "$T/mxr.json"

runj rol.json rollout "$GPT2" --text "$TEXT" --format json
runj rolsel.json rollout "$GPT2" --text "$TEXT" --layers 1,3 -o "$T/Rsel.npy" --format json
runj rolall.json rollout "$GPT2" --text "$TEXT" -o "$T/Rall.npy" --format json
PYSCRIPT='
full, sel = records(a[0]), records(a[1])
Rsel, Rall, A = np.load(a[2]), np.load(a[3]), np.load(a[4])
assert [x["layer"] for x in sel] == [1, 3], [x["layer"] for x in sel]
assert sel == [full[1], full[3]], "selected records differ from the full run"
assert Rsel.shape == (2,) + Rall.shape[1:] and (Rsel == Rall[[1, 3]]).all(), Rsel.shape
e = abs(Rall - rollout(A)).max()
assert e <= 1e-12, "f32: max |R - numpy R of the f32 attention| = %g" % e
'
pycheck "rollout --layers 1,3 (records and -o) = slices of the full run" "$T/rol.json" "$T/rolsel.json" \
    "$T/Rsel.npy" "$T/Rall.npy" "$T/A32.npy"

runj rolfile.json rollout "$GPT2" --text-file "$T/three.txt" --format json
PYSCRIPT='
r = records(a[0])
assert [(x.get("text"), x["layer"]) for x in r] == [(t, l) for t in (0, 2) for l in range(4)], \
    [(x.get("text"), x["layer"]) for x in r]
'
pycheck "rollout --text-file: texts 0 and 2, 4 records each" "$T/rolfile.json"

runj rolcsv.csv rollout "$GPT2" --text "$TEXT" --format csv --metrics spectral_gap,res_ratio
PYSCRIPT='
lines = open(a[0]).read().splitlines()
assert lines[0] == "layer,head,rows,cols,spectral_gap,res_ratio,model", lines[0]
assert len(lines) == 5 and all(l.split(",")[1] == "-1" for l in lines[1:]), lines
'
pycheck "rollout --format csv: head -1" "$T/rolcsv.csv"

# ---- similarity ----------------------------------------------------------------
# Closed form: a one-token text gives every head the row [1], so every JS
# distance is 0. Against numpy on attention -o (row-averaged √JSD, natural
# log), 1e-12. A corpus is the mean over its texts, equal weight per text
# (the blank line of three.txt is no text): exactly (S_0 + S_2)/2.
runj sim1.json similarity "$GPT2" --tokens 464 --format json -o "$T/S1.npy"
PYSCRIPT='
r, S = records(a[0]), np.load(a[1])
assert len(r) == 120 and S.shape == (16, 16) and S.dtype == np.dtype("<f8"), (len(r), S.shape)
assert all(x["js_distance"] == 0 for x in r) and not S.any(), "one token: distances not 0"
assert [(x["layer_a"], x["head_a"], x["layer_b"], x["head_b"]) for x in r[:5]] == \
    [(0, 0, 0, 1), (0, 0, 0, 2), (0, 0, 0, 3), (0, 0, 1, 0), (0, 0, 1, 1)], r[:5]
'
pycheck "similarity of a one-token text: 120 pairs, all 0" "$T/sim1.json" "$T/S1.npy"
runj sim.json similarity "$GPT2" --text "$TEXT" --format json -o "$T/S.npy"
PYSCRIPT='
r, S, A = records(a[0]), np.load(a[1]), np.load(a[2])
heads = [(l, h) for l in range(4) for h in range(4)]
def jsd(p, q):
    m = (p + q) / 2
    t = lambda x: np.where(x > 0, x * np.log(np.where(x > 0, x, 1) / np.where(m > 0, m, 1)), 0)
    return np.maximum(0.5 * (t(p).sum(axis=1) + t(q).sum(axis=1)), 0)
R = np.zeros((16, 16))
for i, x in enumerate(heads):
    for j, y in enumerate(heads):
        R[i, j] = np.mean(np.sqrt(jsd(A[x], A[y])))
assert (S == S.T).all() and not np.diag(S).any(), "not symmetric with a zero diagonal"
e = abs(S - R).max()
assert e <= 1e-12, "max |S - numpy| = %g" % e
k = 0
for i in range(16):
    for j in range(i + 1, 16):
        x = r[k]; k += 1
        assert (x["layer_a"], x["head_a"], x["layer_b"], x["head_b"]) == heads[i] + heads[j], x
        assert x["js_distance"] == S[i, j], (x, S[i, j])
assert 0 < S[0, 1] < np.sqrt(np.log(2)), S[0, 1]
'
pycheck "similarity = numpy JS distance of attention -o (1e-12), records = matrix" \
    "$T/sim.json" "$T/S.npy" "$T/A32.npy"
runj simfile.json similarity "$GPT2" --text-file "$T/three.txt" --format json -o "$T/Sf.npy"
runj simt0.json similarity "$GPT2" --text "In the beginning" --format json -o "$T/St0.npy"
runj simt2.json similarity "$GPT2" --text "God created the heaven" --format json -o "$T/St2.npy"
PYSCRIPT='
Sf, S0, S2 = np.load(a[0]), np.load(a[1]), np.load(a[2])
assert (Sf == (S0 + S2) / 2).all(), abs(Sf - (S0 + S2) / 2).max()
assert "text" not in records(a[3])[0], records(a[3])[0]
'
pycheck "similarity --text-file: the mean of its two texts, exactly" "$T/Sf.npy" "$T/St0.npy" \
    "$T/St2.npy" "$T/simfile.json"
runj simsel.csv similarity "$GPT2" --text "$TEXT" --layers 1,3 --heads 0,2 --format csv -o "$T/Ss.npy"
runj simone.md similarity "$GPT2" --text "$TEXT" --layers 2 --heads 3 --format md -o "$T/So.npy"
runj simtex.tex similarity "$GPT2" --text "$TEXT" --layers 0 --format latex
runj simtab.txt similarity "$GPT2" --text "$TEXT"
runj sim.jsonl similarity "$GPT2" --text "$TEXT" --format jsonl
PYSCRIPT='
import csv
S, Ss = np.load(a[0]), np.load(a[1])
idx = [4, 6, 12, 14]
assert (Ss == S[np.ix_(idx, idx)]).all(), "--layers 1,3 --heads 0,2: not the sub-matrix"
rows = list(csv.reader(open(a[2])))
assert rows[0] == ["layer_a", "head_a", "layer_b", "head_b", "js_distance", "model"], rows[0]
assert len(rows) == 7 and rows[1][:4] == ["1", "0", "1", "2"] and float(rows[1][4]) == Ss[0, 1], rows[1]
one = open(a[3]).read().splitlines()
assert len(one) == 2 and np.load(a[4]).tolist() == [[0.0]], (one, np.load(a[4]))
tex = open(a[5]).read()
assert tex.count("\\\\\n") == 7 and "js\\_distance" in tex and "\\bottomrule" in tex, tex
tab = open(a[6]).read().splitlines()
assert len(tab) == 121 and tab[0].split() == ["layer_a", "head_a", "layer_b", "head_b", "js_distance", "model"], tab[:2]
lines = [json.loads(x) for x in open(a[7])]
s = lines[0]["settings"]
assert list(lines[0]) == ["settings"] and s == load(a[8])["settings"], lines[0]
assert (s["command"], s["source"], s["version"]) == ("similarity", a[9], load(a[8])["version"]), s
assert lines[1:] == records(a[8]), "jsonl records differ from json records"
'
pycheck "similarity --layers/--heads (sub-matrix, csv), one head (md), latex, table, jsonl" "$T/S.npy" \
    "$T/Ss.npy" "$T/simsel.csv" "$T/simone.md" "$T/So.npy" "$T/simtex.tex" "$T/simtab.txt" \
    "$T/sim.jsonl" "$T/sim.json" "$GPT2"

# --expect: each command against its own saved output
for c in residual rollout; do
    N=$((N + 1)); DESC="$c --expect on its own output"
    f=res.json; [ $c = rollout ] && f=rol.json
    "$CLI" $c "$GPT2" --text "$TEXT" --expect "$T/$f" >/dev/null 2>"$T/err"
    rc=$?; [ $rc -eq 0 ] || fail "exit $rc: $(head -c 300 "$T/err")"
done
"$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))
j["records"][2]["res_ratio"] *= 1.001
json.dump(j, open(sys.argv[2], "w"))' "$T/res.json" "$T/bad_golden.json"
N=$((N + 1)); DESC="residual --expect with a changed value: exit 3"
"$CLI" residual "$GPT2" --text "$TEXT" --expect "$T/bad_golden.json" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 3 ] || fail "exit $rc, expected 3"
grep -q res_ratio "$T/err" || fail "the mismatch report does not name res_ratio: $(head -c 300 "$T/err")"

# ---- error cases ----------------------------------------------------------------
run_case 2 MODEL "residual: missing MODEL" residual --text "$TEXT"
run_case 2 MODEL "rollout: missing MODEL" rollout --text "$TEXT" -o "$T/o/R.npy"
run_case 2 --text-file "rollout -o with --text-file" rollout "$GPT2" --text-file "$T/three.txt" -o "$T/o/R.npy"
run_case 1 layers "rollout --layers 4 out of range" rollout "$GPT2" --text "$TEXT" --layers 4 -o "$T/o/R.npy"
run_case 1 layers "residual --layers 5 out of range" residual "$GPT2" --text "$TEXT" --layers 5 -o "$T/o/out.json"
run_case 2 "" "rollout --layers bad syntax" rollout "$GPT2" --text "$TEXT" --layers 1- -o "$T/o/R.npy"
run_case 2 heads "rollout --heads" rollout "$GPT2" --text "$TEXT" --heads 0 -o "$T/o/R.npy"
run_case 2 "" "residual --metrics entropy_mean (not computed)" residual "$GPT2" --text "$TEXT" \
    --metrics entropy_mean -o "$T/o/out.json"
run_case 2 "" "residual without input" residual "$GPT2" -o "$T/o/out.json"
run_case 2 "" "rollout: unknown option" rollout "$GPT2" --text "$TEXT" --bogus
run_case 1 nope "rollout: missing model folder" rollout "$T/nope" --text "$TEXT" -o "$T/o/R.npy"
run_case 1 vocab "residual: token id = vocab_size" residual "$GPT2" --tokens 1,50257 -o "$T/o/out.json"
run_case 1 vocab "rollout: token id = vocab_size" rollout "$GPT2" --tokens 1,50257 -o "$T/o/R.npy"
run_case 1 "" "rollout -o into a missing folder" rollout "$GPT2" --text "$TEXT" -o "$T/o/no/R.npy"
run_case 2 metrics "similarity --metrics (no metric keys)" similarity "$GPT2" --text "$TEXT" \
    --metrics entropy_mean -o "$T/o/S.npy"
run_case 2 metrics "similarity --metrics all" similarity "$GPT2" --text "$TEXT" --metrics=all \
    -o "$T/o/S.npy"
run_case 2 expect "similarity --expect" similarity "$GPT2" --text "$TEXT" --expect "$T/sim.json" \
    -o "$T/o/S.npy"
run_case 1 vocab "similarity: token id = vocab_size" similarity "$GPT2" --tokens 1,50257 -o "$T/o/S.npy"
run_case 1 layers "similarity --layers 4 out of range" similarity "$GPT2" --text "$TEXT" --layers 4 \
    -o "$T/o/S.npy"
run_case 1 "" "similarity -o into a missing folder" similarity "$GPT2" --text "$TEXT" -o "$T/o/no/S.npy"

# ---- family I's thresholds (residual only) and family H (analyze only)
run_case 2 "--massive-abs takes a number >= 0, not '-1'" "residual --massive-abs -1" \
    residual "$GPT2" --text "$TEXT" --metrics activations --massive-abs -1
run_case 2 "--massive-ratio takes a number >= 0, not 'x'" "residual --massive-ratio x" \
    residual "$GPT2" --text "$TEXT" --metrics activations --massive-ratio x
run_case 2 "unknown option '--massive-abs'" "analyze takes no --massive-abs" \
    analyze "$GPT2" --text "$TEXT" --massive-abs 5
run_case 2 "'values' is not computed by this command" "rollout --metrics values" \
    rollout "$GPT2" --text "$TEXT" --metrics values
run_case 2 "'act_top1' is not computed by this command" "analyze --metrics act_top1" \
    analyze "$GPT2" --text "$TEXT" --metrics act_top1
# thresholds 0: every entry is massive, act_massive = n·d of every state
runj massive residual "$GPT2" --text "$TEXT" --metrics act_massive,act_median --massive-abs 0 \
    --massive-ratio 0 --format json
PYSCRIPT='
d = load(a[0])
assert d["settings"]["massive_abs"] == 0 and d["settings"]["massive_ratio"] == 0, d["settings"]
for r in d["records"]:
    assert r["act_massive"] == r["rows"] * r["cols"] and r["act_median"] > 0, r
'
pycheck "act_massive counts every entry at thresholds 0; the settings carry them" "$T/massive"

finish
