#!/bin/sh
# tests/cli/plot_lens.sh CLI — `attngeom plot --kind lens` (issue 28 item
# 5) on the scores of models/tiny-gpt2 (`attention --scores`): the figure in
# every format; its SVG's structure (one bar path per panel in the
# normaliser's colour, a bar per key with p > 0 where tall enough to draw,
# each bar's height / the panel's height = the key's probability under the
# authors' algorithms ported to numpy in tests/ref/check_normalizers.py, to
# cairo's 1/256-point fixed-point coordinates;
# the masked keys of an earlier query as grey columns); the panel titles
# (with poppler: "sparsemax: k of K keys kept" with the reference's k);
# the same bytes from scores computed at -j1 and -j2 and from two runs;
# `plot --kind depth` of a metric of a new family (sparsemax_support); and
# the errors: exit 1 (2 for usage), one stderr line, the -o file untouched.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json" tests/ref/check_normalizers.py

TEXT="The cat sat on the mat because it was warm."
runj tok.json tokenize "$GPT2" --text "$TEXT" --format json
runj s1.out attention "$GPT2" --text "$TEXT" --scores "$T/S1.npy" -o "$T/A1.npy" -j 1
runj s2.out attention "$GPT2" --text "$TEXT" --scores "$T/S.npy" -o "$T/A.npy" -j 2
runj r.out rollout "$GPT2" --text "$TEXT" -o "$T/R.npy"

# plot NAME ARGS... : `attngeom plot ARGS -o $T/NAME` exits 0, stderr empty
plot() {
    name=$1
    shift
    N=$((N + 1))
    DESC="plot $* -o $name"
    "$CLI" plot "$@" -o "$T/$name" >"$T/p.out" 2>"$T/p.err" </dev/null ||
        fail "exit $?: $(head -c 300 "$T/p.err")"
    [ -s "$T/p.err" ] && fail "stderr: $(head -c 300 "$T/p.err")"
    [ -s "$T/p.out" ] && fail "stdout: $(head -c 300 "$T/p.out")"
}

# ---- every format; the same bytes for the same scores, at -j1 and -j2 -------
for fmt in svg pdf png; do
    plot "lens.$fmt" "$T/S.npy" --kind lens
    plot "lens1.$fmt" "$T/S1.npy" --kind lens
    check "lens.$fmt: the scores of -j1 and -j2 draw the same bytes" cmp -s "$T/lens.$fmt" "$T/lens1.$fmt"
    plot "again.$fmt" "$T/S.npy" --kind lens
    check "lens.$fmt: two runs, the same bytes" cmp -s "$T/lens.$fmt" "$T/again.$fmt"
done
PYSCRIPT='
import re, struct
svg = open(a[0]).read()
w, h = map(float, re.search(r"width=\"([0-9.]+)pt\" height=\"([0-9.]+)pt\"", svg).groups())
assert w >= 432 and h >= 5 * 72, (w, h)
png = open(a[1], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n"
assert struct.unpack(">II", png[16:24]) == (int(w * 150 / 72 + 0.5), int(h * 150 / 72 + 0.5))
pdf = open(a[2], "rb").read()
assert pdf[:7] == b"%PDF-1." and b"/MediaBox [ 0 0 %g %g ]" % (w, h) in pdf
'
pycheck "lens: the SVG, PNG and PDF pages agree" "$T/lens.svg" "$T/lens.png" "$T/lens.pdf"

# ---- the bars are the reference's probabilities ------------------------------
# bars.c fills a panel's bars as one path of rectangles ("M x y L ... Z" a
# bar) in the normaliser's colour (Okabe & Ito: softmax blue, sparsemax
# vermillion, 1.5-entmax bluish green), a bar per key with p > 0; masked
# keys are one grey path per panel. ARGS: the SVG, the scores, layer, head,
# query, the temperatures, the number of masked keys.
PYLIB='
sys.path.insert(0, "tests/ref")
from check_normalizers import sparsemax_ref, entmax15_ref
import re
COLOURS = {"blue": "0%,44.705882%,69.803922%", "vermillion": "83.529412%,36.862745%,0%",
           "green": "0%,61.960784%,45.098039%", "grey": "90%,90%,90%"}
def fills(svg, colour):
    """each path filled with colour: its rectangles as (x, y, width, height)"""
    out = []
    for style, d in re.findall(r"<path style=\"([^\"]*)\" d=\"([^\"]*)\"", svg):
        if "fill:rgb(%s)" % COLOURS[colour] not in style:
            continue
        rects = []
        for sub in d.split("M")[1:]:
            v = [float(t) for t in re.findall(r"-?\d+\.?\d*", sub)]
            if len(v) < 8:
                continue
            xs, ys = v[0:8:2], v[1:8:2]
            rects.append((min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)))
        out.append(rects)
    return out
def frame(svg):
    """the frame of the first panel (stroked 0.8 pt, unfilled): x, width, height"""
    for style, d in re.findall(r"<path style=\"([^\"]*)\" d=\"([^\"]*)\"", svg):
        if "fill:none;stroke-width:0.8;" in style:
            v = [float(t) for t in re.findall(r"-?\d+\.?\d*", d)]
            xs, ys = v[0:8:2], v[1:8:2]
            return min(xs), max(xs) - min(xs), max(ys) - min(ys)
def softmax(s, T):
    e = np.exp((s - s.max()) / T)
    return e / e.sum()
def check_bars(svg_path, scores, layer, head, q, temps, masked):
    S = np.load(scores)
    row = S[layer, head, q]
    s = row[np.isfinite(row)]
    svg = open(svg_path).read()
    want = [("blue", softmax(s, T)) for T in temps]
    want += [("vermillion", sparsemax_ref(s)), ("green", entmax15_ref(s))]
    got = fills(svg, "blue") + fills(svg, "vermillion") + fills(svg, "green")
    assert len(got) == len(want), "%d bar paths, expected %d" % (len(got), len(want))
    px, pw, ph = frame(svg)  # the panel: probability 1 is ph points
    pitch = pw / len(row)  # the bar of key k starts at px + (k + 0.1) pitch
    for (colour, p), rects in zip(want, got):
        drawn = set()
        for x, y, w, h in rects:
            k = int(round((x - px) / pitch - 0.1))
            assert abs(px + (k + 0.1) * pitch - x) < 0.01 and 0 <= k < len(s), (colour, x, k)
            # cairo keeps path coordinates in 24.8 fixed point: each end of a
            # bar or frame is within 1/512 pt of its place
            assert abs(h - p[k] * ph) <= 2 / 256, (colour, k, h / ph, p[k])
            assert p[k] > 0, (colour, k)
            drawn.add(k)
        # a bar of p > 0 is drawn unless it is thinner than cairo draws
        # (a rectangle under 1/256 pt high rounds to nothing)
        tall = {k for k in range(len(p)) if p[k] * ph > 2 / 256}
        assert tall <= drawn and len(drawn) <= int((p > 0).sum()), (colour, tall - drawn)
    grey = fills(svg, "grey")
    assert len(grey) == (len(want) if masked else 0), len(grey)
    assert all(len(g) == masked for g in grey), [len(g) for g in grey]
'
PYSCRIPT='check_bars(a[0], a[1], 0, 0, 10, (0.5, 1, 2), 0)'
pycheck "lens: the default figure (layer 0, head 0, the last query) is the reference's rows" \
    "$T/lens.svg" "$T/S.npy"
plot q3.svg "$T/S.npy" --kind lens --layer 1 --head 2 --query 3 --temperatures 0.25,4 \
    --tokens "$T/tok.json"
PYSCRIPT='check_bars(a[0], a[1], 1, 2, 3, (0.25, 4), 7)'
pycheck "lens --layer 1 --head 2 --query 3 --temperatures 0.25,4: the rows, 7 masked keys grey" \
    "$T/q3.svg" "$T/S.npy"
plot sparse.svg "$T/S.npy" --kind lens --normalizers sparsemax --layer 3 --head 1
PYSCRIPT='
S = np.load(a[1])
p = sparsemax_ref(S[3, 1, 10])
got = fills(open(a[0]).read(), "vermillion")
assert len(got) == 1 and len(got[0]) == (p > 0).sum(), (len(got), p)
assert not fills(open(a[0]).read(), "blue") and not fills(open(a[0]).read(), "green")
'
pycheck "lens --normalizers sparsemax: one panel" "$T/sparse.svg" "$T/S.npy"
N=$((N + 1))
DESC="another head, another figure"
cmp -s "$T/lens.svg" "$T/sparse.svg" && fail "the same bytes"

# Many keys: the fitted page stops at 864 points wide (thinner bars), every
# key still a bar of the reference's height.
"$PY" -c 'import sys, numpy as np
r = np.random.default_rng(7)
S = 3 * r.normal(size=(1, 1, 300, 300))
S[..., ~np.tril(np.ones((300, 300), bool))] = -np.inf
np.save(sys.argv[1], S)' "$T/big.npy"
plot big.svg "$T/big.npy" --kind lens
PYSCRIPT='
check_bars(a[0], a[1], 0, 0, 299, (0.5, 1, 2), 0)
assert "width=\"864pt\"" in open(a[0]).read()
'
pycheck "lens of 300 keys: a page 864 points wide, the reference's rows" "$T/big.svg" "$T/big.npy"

# The titles, read from the PDF by poppler when installed: the normaliser,
# its temperature and "k of K keys kept" with the reference's k.
if command -v pdftotext >/dev/null 2>&1; then
    plot q3.pdf "$T/S.npy" --kind lens --layer 1 --head 2 --query 3 --tokens "$T/tok.json"
    pdftotext -layout "$T/q3.pdf" "$T/q3.txt" 2>/dev/null
    PYSCRIPT='
S = np.load(a[1])
s = S[1, 2, 3][:4]
text = open(a[0]).read()
for want in ["layer 1, head 2, query 3 (\" on\") under each normaliser",
             "softmax, T = 0.5: 4 of 4 keys kept", "softmax, T = 1: 4 of 4 keys kept",
             "softmax, T = 2: 4 of 4 keys kept",
             "sparsemax: %d of 4 keys kept" % (sparsemax_ref(s) > 0).sum(),
             "1.5-entmax: %d of 4 keys kept" % (entmax15_ref(s) > 0).sum(),
             "key (grey: masked for this query)", "probability", "The", "warm"]:
    assert want in text, (want, text[:600])
'
    pycheck "lens: the PDF names each panel and its support" "$T/q3.txt" "$T/S.npy"
else
    echo "plot_lens.sh: pdftotext not installed (poppler-utils): the titles are not read"
fi

# ---- depth draws any record key, a new family's too --------------------------
"$PY" - "$T/lens.jsonl" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for layer in range(4):
        for head in range(4):
            f.write(json.dumps({"model": "tiny-gpt2", "layer": layer, "head": head,
                                "sparsemax_support": 0.2 + 0.1 * layer + 0.01 * head}) + "\n")
EOF
plot depth.svg "$T/lens.jsonl" --kind depth --metric sparsemax_support
plot depth.png "$T/lens.jsonl" --kind heatmap --metric sparsemax_support

# ---- errors: exit 1 (2: usage), one line, the -o file kept ----------------------
KEEP=keep.svg
K=$T/o/keep.svg
"$PY" - "$T" <<'EOF'
import sys
import numpy as np
np.save(sys.argv[1] + "/masked.npy", np.full((3, 3), -np.inf))
np.save(sys.argv[1] + "/ints.npy", np.zeros((1, 1, 3, 3), dtype=np.int64))
np.save(sys.argv[1] + "/one.npy", np.array([[0.0, -np.inf], [1.0, 2.0]]))
EOF
run_case 1 "R.npy" "a [L, n, n] array" plot "$T/R.npy" --kind lens -o "$K"
run_case 1 "ints.npy" "integer scores" plot "$T/ints.npy" --kind lens -o "$K"
run_case 1 "0 to 10" "--query out of range" plot "$T/S.npy" --kind lens --query 11 -o "$K"
run_case 1 "--layer 4" "--layer out of range" plot "$T/S.npy" --kind lens --layer 4 -o "$K"
run_case 1 "--head 4" "--head out of range" plot "$T/S.npy" --kind lens --head 4 -o "$K"
run_case 1 "no layer axis" "--layer on [n, n]" plot "$T/one.npy" --kind lens --layer 0 -o "$K"
run_case 1 "no allowed key" "a row with every key masked" plot "$T/masked.npy" --kind lens -o "$K"
run_case 1 "linear" "--normalizers linear" plot "$T/S.npy" --kind lens --normalizers softmax,linear -o "$K"
run_case 1 "bogus" "an unknown normaliser" plot "$T/S.npy" --kind lens --normalizers bogus -o "$K"
run_case 1 "--temperatures" "--temperatures without softmax" plot "$T/S.npy" --kind lens \
    --normalizers sparsemax --temperatures 1,2 -o "$K"
run_case 2 "--temperatures" "--temperatures 0" plot "$T/S.npy" --kind lens --temperatures 0.5,0 -o "$K"
run_case 2 "--temperatures" "--temperatures not numbers" plot "$T/S.npy" --kind lens --temperatures a -o "$K"
run_case 2 "--temperatures" "--temperatures with attention" plot "$T/S.npy" --kind attention \
    --temperatures 1 -o "$K"
run_case 2 "--normalizers" "--normalizers with spectrum" plot "$T/S.npy" --kind spectrum \
    --normalizers sparsemax -o "$K"
run_case 2 "--values" "--values with lens" plot "$T/S.npy" --kind lens --values -o "$K"
run_case 2 "--metric" "--metric with lens" plot "$T/S.npy" --kind lens --metric x -o "$K"
run_case 2 "--by" "--by with lens" plot "$T/S.npy" --kind lens --by model -o "$K"
run_case 2 "--by" "--by with attention" plot "$T/S.npy" --kind attention --by model -o "$K"
run_case 2 "--grid" "--grid with lens" plot "$T/S.npy" --kind lens --grid 2x5 -o "$K"
KEEP=
plot one.svg "$T/one.npy" --kind lens --query 0
finish
