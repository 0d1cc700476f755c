#!/bin/sh
# tests/cli/plot.sh CLI — end-to-end checks of `attngeom plot` on
# models/tiny-gpt2 and a small corpus: every kind in every format, the files
# checked as files (PNG signature and IHDR size, SVG parsed as XML with its
# page size, PDF header, page size and, where poppler-utils is installed,
# rendered by pdftoppm and its text read by pdftotext), the same bytes for
# the same input, and the error cases: exit 1 (2 for usage errors), exactly
# one stderr line, nothing on stdout, the -o file untouched.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json"

if command -v pdftoppm >/dev/null 2>&1 && command -v pdftotext >/dev/null 2>&1; then
    POPPLER=1
else
    POPPLER=0
    echo "plot.sh: pdftoppm/pdftotext not installed (poppler-utils): PDFs are checked by their header only"
fi

cat >"$T/corpus.txt" <<'EOF'
The cat sat on the mat because it was warm.
A dog barked at the mailman twice.
It was raining all day long in the city.
Every morning she reads the news before work.
EOF
TEXT="The cat sat on the mat because it was warm."

# runj NAME ARGS... : run the CLI, stdout to $T/NAME, must exit 0 with an
# empty stderr (stricter than lib.sh's runj, which it replaces here: every
# run here is a check of its own)
runj() {
    name=$1
    shift
    N=$((N + 1))
    DESC="attngeom $*"
    "$CLI" "$@" >"$T/$name" 2>"$T/$name.err" </dev/null
    rc=$?
    [ $rc -eq 0 ] || fail "exit $rc: $(head -c 300 "$T/$name.err")"
    [ -s "$T/$name.err" ] && fail "stderr not empty: $(head -c 300 "$T/$name.err")"
}

# figure FILE W H DPI [TEXT...] : FILE is a well-formed figure of a W×H
# point page (PNG: DPI pixels per inch); a PDF holds each TEXT (pdftotext).
figure() {
    f=$1 w=$2 h=$3 dpi=$4
    shift 4
    N=$((N + 1))
    DESC="figure $(basename "$f")"
    out=$("$PY" - "$f" "$w" "$h" "$dpi" <<'EOF' 2>&1
import struct, sys
import xml.etree.ElementTree as ET
f, w, h, dpi = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
b = open(f, "rb").read()
if f.endswith(".png"):
    assert b[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
    n, tag = struct.unpack(">I4s", b[8:16])
    assert tag == b"IHDR" and n == 13, "first chunk %r" % tag
    pw, ph = struct.unpack(">II", b[16:24])
    want = (int(w * dpi / 72 + 0.5), int(h * dpi / 72 + 0.5))  # C's round(): half away from 0
    assert (pw, ph) == want, "PNG %dx%d, expected %dx%d" % (pw, ph, want[0], want[1])
    assert b[-8:-4] == b"IEND", "no IEND chunk at the end"
elif f.endswith(".svg"):
    root = ET.fromstring(b)
    assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
    assert root.get("width") == "%gpt" % w and root.get("height") == "%gpt" % h, \
        (root.get("width"), root.get("height"))
    assert root.get("viewBox") == "0 0 %g %g" % (w, h), root.get("viewBox")
    assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 0, "nothing drawn"
else:
    assert b[:7] == b"%PDF-1.", "no PDF header"
    assert b.rstrip().endswith(b"%%EOF"), "no %%EOF"
    assert b"/MediaBox [ 0 0 %g %g ]" % (w, h) in b, "no MediaBox of the page size"
    assert b"CreationDate" not in b and b"ModDate" not in b, "a date in the PDF"
EOF
)
    [ $? -eq 0 ] || { fail "$out"; return; }
    case $f in *.pdf) [ $POPPLER -eq 1 ] || return ;; *) return ;; esac
    rm -f "$T/pp"*
    if ! pdftoppm -r 72 -png "$f" "$T/pp" 2>"$T/pp.err"; then
        fail "pdftoppm cannot render it: $(head -c 200 "$T/pp.err")"
        return
    fi
    out=$("$PY" -c '
import struct, sys, glob
p = sorted(glob.glob(sys.argv[1] + "*.png"))
assert len(p) == 1, "%d pages" % len(p)
pw, ph = struct.unpack(">II", open(p[0], "rb").read()[16:24])
w, h = round(float(sys.argv[2])), round(float(sys.argv[3]))
assert (pw, ph) == (w, h), "pdftoppm page %dx%d, expected %dx%d" % (pw, ph, w, h)
' "$T/pp" "$w" "$h" 2>&1) || fail "$out"
    pdftotext -layout "$f" "$T/pdf.txt" 2>/dev/null || { fail "pdftotext failed"; return; }
    for s in "$@"; do
        grep -qF -- "$s" "$T/pdf.txt" || fail "the PDF's text lacks '$s': $(head -c 300 "$T/pdf.txt")"
    done
}

# same ARGS... : two runs of `attngeom plot ARGS -o X` give the same bytes;
# the last argument is the figure's name in $T
same() {
    name=$1
    shift
    N=$((N + 1))
    DESC="same bytes: plot $* -o $name"
    "$CLI" plot "$@" -o "$T/again.$name" 2>/dev/null </dev/null
    cmp -s "$T/$name" "$T/again.$name" || fail "two runs differ"
}

# ---- inputs ---------------------------------------------------------------------
runj tok.json tokenize "$GPT2" --text "$TEXT" --format json
runj attention.out attention "$GPT2" --text "$TEXT" -o "$T/A.npy"
runj sim.out similarity "$GPT2" --text-file "$T/corpus.txt" -o "$T/S.npy"
runj rollout.out rollout "$GPT2" --text "$TEXT" -o "$T/R.npy"
runj heads.csv analyze "$GPT2" --text-file "$T/corpus.txt" --metrics sink_ratio,entropy_normalized,causal \
    --format csv
runj heads.json analyze "$GPT2" --text-file "$T/corpus.txt" --metrics sink_ratio,entropy_normalized \
    --format json
runj heads.jsonl analyze "$GPT2" --text-file "$T/corpus.txt" --metrics sink_ratio --format jsonl
runj heads_agg.json analyze "$GPT2" --text-file "$T/corpus.txt" --metrics sink_ratio --aggregate \
    --format json
runj res.jsonl residual "$GPT2" --text-file "$T/corpus.txt" --format jsonl
runj res_agg.csv aggregate "$T/res.jsonl" --format csv

# ---- attention, spectrum, similarity in every format -------------------------------
# --values: the fitted page grows (from 432x324 points, by as much as the
# fonts' widths ask) until every cell holds its value at 7 points (square
# cells at least 16 points); the SVG's size is the page of the other formats.
"$CLI" plot "$T/A.npy" --kind attention --layer 1 --head 2 --tokens "$T/tok.json" --values \
    -o "$T/att_w.svg" 2>/dev/null
set -- $("$PY" -c 'import re, sys
w, h = map(float, re.search(r"width=\"([0-9.]+)pt\" height=\"([0-9.]+)pt\"",
                            open(sys.argv[1]).read()).groups())
print("%g %g" % (w, h) if w >= 432 and h >= 16 * 11 else "too-small too-small")' "$T/att_w.svg")
ATT_W=$1 ATT_H=$2
for fmt in svg pdf png; do
    runj p.out plot "$T/A.npy" --kind attention --layer 1 --head 2 --tokens "$T/tok.json" --values \
        -o "$T/att.$fmt"
    # the labels are the tokens' strings (tokenize's "strings": " cat"), not
    # their vocabulary strings ("Ġcat")
    figure "$T/att.$fmt" "$ATT_W" "$ATT_H" 150 "attention, layer 1, head 2" "attention weight" query key \
        "cat" "because"
    if [ "$fmt" = pdf ] && [ "$POPPLER" -eq 1 ]; then
        check "attention labels: the tokens' strings, no Ġ"
        grep -qF "Ġ" "$T/pdf.txt" && fail "$(head -c 300 "$T/pdf.txt")"
    fi
    same "att.$fmt" "$T/A.npy" --kind attention --layer 1 --head 2 --tokens "$T/tok.json" --values

    runj p.out plot "$T/A.npy" --kind spectrum --layer 3 --head 0 --size 360x270 --dpi 100 \
        -o "$T/spec.$fmt"
    figure "$T/spec.$fmt" 360 270 100 "singular values, layer 3, head 0" "index i"
    same "spec.$fmt" "$T/A.npy" --kind spectrum --layer 3 --head 0 --size 360x270 --dpi 100

    runj p.out plot "$T/S.npy" --kind similarity --heads-per-layer 4 --size 500x450 \
        -o "$T/sim.$fmt"
    figure "$T/sim.$fmt" 500 450 150 "distance between heads" "Jensen" L0H0 L3H3
    same "sim.$fmt" "$T/S.npy" --kind similarity --heads-per-layer 4 --size 500x450
done

# ---- heatmap and depth, from records ----------------------------------------------
for fmt in svg pdf png; do
    runj p.out plot "$T/heads.csv" --kind heatmap --metric sink_ratio --values -o "$T/hm.$fmt"
    figure "$T/hm.$fmt" 432 324 150 sink_ratio layer head
    same "hm.$fmt" "$T/heads.csv" --kind heatmap --metric sink_ratio --values

    runj p.out plot "$T/res_agg.csv" --kind depth --metric mean_cosine -o "$T/depth.$fmt"
    figure "$T/depth.$fmt" 432 324 150 "mean_cosine by layer" layer
    same "depth.$fmt" "$T/res_agg.csv" --kind depth --metric mean_cosine
done

# The numbers drawn: each cell of the heatmap is the mean over the texts of
# its head, written with 3 significant digits (--values); JSON, JSONL, CSV
# and the aggregated records give the same figure.
if [ $POPPLER -eq 1 ]; then
    N=$((N + 1))
    DESC="heatmap --values: the per-head means of the CSV records"
    pdftotext -raw "$T/hm.pdf" "$T/hm.txt"
    out=$("$PY" - "$T/heads.csv" "$T/hm.txt" <<'EOF' 2>&1
import csv, sys
from collections import defaultdict
vals = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    vals[(int(r["layer"]), int(r["head"]))].append(float(r["sink_ratio"]))
assert len(vals) == 16 and all(len(v) == 4 for v in vals.values()), len(vals)
words = open(sys.argv[2]).read().split()
for k, v in sorted(vals.items()):
    want = "%.3g" % (sum(v) / len(v))
    assert want in words, "cell %s: %s not in the PDF's text %s" % (k, want, words)
EOF
)
    [ $? -eq 0 ] || fail "$out"
fi
for src in heads.json heads.jsonl heads_agg.json; do
    N=$((N + 1))
    DESC="heatmap of $src = heatmap of heads.csv"
    "$CLI" plot "$T/$src" --kind heatmap --metric sink_ratio --values -o "$T/hm_other.svg" 2>/dev/null
    cmp -s "$T/hm.svg" "$T/hm_other.svg" || fail "the figures differ"
done
# a boolean metric: the fraction true (causal is true for every head of GPT-2)
runj p.out plot "$T/heads.csv" --kind heatmap --metric causal --values -o "$T/causal.pdf"
figure "$T/causal.pdf" 432 324 150 causal

# The band: drawn (at 22 % opacity) for aggregated records, not for per-text
# records, whose points are plain means.
N=$((N + 1))
DESC="depth: a confidence band for aggregated records only"
"$CLI" plot "$T/res.jsonl" --kind depth --metric mean_cosine -o "$T/depth_raw.svg" 2>/dev/null
grep -q "fill-opacity:0.22" "$T/depth.svg" || fail "no band in the depth figure of aggregated records"
grep -q "fill-opacity:0.22" "$T/depth_raw.svg" && fail "a band in the depth figure of per-text records"

# one line per model, named in the legend; --model keeps one
"$PY" - "$T/res.jsonl" "$T/two_models.jsonl" <<'EOF'
import json, sys
out = open(sys.argv[2], "w")
for name, scale in (("small", 1.0), ("large", 0.5)):
    for line in open(sys.argv[1]):
        r = json.loads(line)
        if "settings" in r:
            continue
        r["model"] = name
        r["mean_cosine"] *= scale
        out.write(json.dumps(r) + "\n")
EOF
runj p.out plot "$T/two_models.jsonl" --kind depth --metric mean_cosine -o "$T/models.pdf"
figure "$T/models.pdf" 432 324 150 small large
N=$((N + 1))
DESC="--model small = the same records without a model"
"$CLI" plot "$T/two_models.jsonl" --kind depth --metric mean_cosine --model small \
    --title "t" -o "$T/small_t.svg" 2>/dev/null
"$CLI" plot "$T/res.jsonl" --kind depth --metric mean_cosine --title "t" -o "$T/plain_t.svg" 2>/dev/null
cmp -s "$T/small_t.svg" "$T/plain_t.svg" || fail "the figures differ"

# ---- the README's figure ----------------------------------------------------------
# The commands under the README's "figure:" marker, run here with their
# outputs in $T, make docs/figures/sink_ratio.svg byte for byte where the
# figure was made with the same cairo and fonts (elsewhere glyph outlines
# may differ: only the commands are run).
N=$((N + 1))
DESC="README figure"
"$PY" - "$ROOT/README.md" "$T/readme.sh" "$T" <<'EOF' || fail "no figure commands in README.md"
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"<!-- figure: .*?-->\n```sh\n(.*?)```", text, re.S)
cmds = m.group(1).replace("\\\n", " ")
cmds = cmds.replace("-o sink_ratio.csv", "-o %s/readme.csv" % sys.argv[3])
cmds = cmds.replace("plot sink_ratio.csv", "plot %s/readme.csv" % sys.argv[3])
cmds = cmds.replace("-o docs/figures/sink_ratio.svg", "-o %s/readme.svg" % sys.argv[3])
assert cmds.count(sys.argv[3]) == 3, cmds
open(sys.argv[2], "w").write(cmds.replace("build/attngeom", '"$CLI"'))
EOF
if [ -s "$T/readme.sh" ]; then
    (cd "$ROOT" && CLI=$CLI sh "$T/readme.sh") >"$T/readme.out" 2>&1 ||
        fail "the README's commands fail: $(head -c 300 "$T/readme.out")"
    figure "$T/readme.svg" 432 324 150
    DESC="README figure"
    if [ "$(pkg-config --modversion cairo 2>/dev/null)" = 1.16.0 ] &&
        [ "$(dpkg-query -W -f '${Version}' fonts-dejavu-core 2>/dev/null)" = 2.37-6 ]; then
        cmp -s "$T/readme.svg" "$ROOT/docs/figures/sink_ratio.svg" ||
            fail "docs/figures/sink_ratio.svg is not what the README's commands make"
    else
        echo "plot.sh: cairo or DejaVu differ from the README figure's (1.16.0, 2.37-6): not compared"
    fi
fi

# rollout's [L, n, n]: --layer alone; a 2-D matrix: neither
runj p.out plot "$T/R.npy" --kind attention --layer 3 --title "rollout R_3" -o "$T/rol.pdf"
figure "$T/rol.pdf" 432 324 150 "rollout R_3"
runj p.out plot "$T/S.npy" --kind spectrum -o "$T/simspec.svg"
figure "$T/simspec.svg" 432 324 150
# --title '' draws none: the text of the default title is gone
runj p.out plot "$T/A.npy" --kind spectrum --title "" -o "$T/notitle.pdf"
figure "$T/notitle.pdf" 432 324 150 "index i"
if [ $POPPLER -eq 1 ] && grep -q "singular values" "$T/pdf.txt"; then
    DESC="--title ''"
    fail "the default title is still drawn"
fi

# What is drawn follows the input: another head, another figure; the
# default title names what the figure shows.
N=$((N + 1))
DESC="another head gives another figure"
"$CLI" plot "$T/A.npy" --kind attention --layer 1 --head 3 --tokens "$T/tok.json" --values \
    -o "$T/att13.svg" 2>/dev/null
cmp -s "$T/att.svg" "$T/att13.svg" && fail "heads 2 and 3 of layer 1 drew the same SVG"

# similarity: clustered by default, --order layer the matrix's order
runj p.out plot "$T/S.npy" --kind similarity --order layer -o "$T/sim_layer.svg"
figure "$T/sim_layer.svg" 432 324 150
N=$((N + 1))
DESC="similarity: --order layer differs from the clustered figure"
"$CLI" plot "$T/S.npy" --kind similarity -o "$T/sim_cluster.svg" 2>/dev/null
cmp -s "$T/sim_layer.svg" "$T/sim_cluster.svg" && fail "the same figure"

# -o replaces an existing figure (atomically, outputs.c)
echo old >"$T/old.svg"
runj p.out plot "$T/S.npy" --kind similarity --order layer -o "$T/old.svg"
figure "$T/old.svg" 432 324 150

# ---- forest, from records ------------------------------------------------------
# One row per head: the mean and Student-t interval over the texts (the
# units) that `aggregate` gives, so the per-text records, analyze's
# --aggregate output and aggregate's output of the same records draw the
# same bytes. With poppler the rows' labels read from top to bottom in the
# order of aggregate's means, largest first.
for fmt in svg pdf png; do
    runj p.out plot "$T/heads.jsonl" --kind forest --metric sink_ratio --ref 1 -o "$T/forest.$fmt"
    figure "$T/forest.$fmt" 432 324 150 "sink_ratio: mean and 95% interval per head, tiny-gpt2"
    same "forest.$fmt" "$T/heads.jsonl" --kind forest --metric sink_ratio --ref 1
done
runj agg_forest.json aggregate "$T/heads.jsonl" --format json
for src in heads_agg.json agg_forest.json; do
    runj p.out plot "$T/$src" --kind forest --metric sink_ratio --ref 1 -o "$T/forest_$src.svg"
    N=$((N + 1))
    DESC="forest of $src = forest of the per-text records"
    cmp -s "$T/forest.svg" "$T/forest_$src.svg" || fail "the figures differ"
done
N=$((N + 1))
DESC="forest: --ref draws a line"
"$CLI" plot "$T/heads.jsonl" --kind forest --metric sink_ratio -o "$T/forest_noref.svg" 2>/dev/null
cmp -s "$T/forest.svg" "$T/forest_noref.svg" && fail "the same figure without --ref"
# The SVG's rows: one dot (a filled blue circle) and one bar per head, top
# to bottom in decreasing order of the mean; every dot's x and bar's ends
# are one linear map of aggregate's mean, ci_low and ci_high (to 0.01 pt).
N=$((N + 1))
DESC="forest: one row per head, sorted, at aggregate's values"
"$PY" - "$T/agg_forest.json" "$T/forest.svg" <<'EOF' || fail "the rows are not aggregate's"
import json, re, sys
recs = sorted(json.load(open(sys.argv[1]))["records"], key=lambda r: -r["sink_ratio"])
svg = open(sys.argv[2]).read()
blue = "rgb(0%,44.705882%,69.803922%)"
dots, bars = [], []
for style, d in re.findall(r'<path style="([^"]*)" d="([^"]*)"', svg):
    if blue not in style:
        continue
    v = [float(t) for t in re.findall(r"-?\d+\.?\d*", d)]
    if "fill:" + blue in style:
        dots.append(((v[0] + v[6]) / 2, v[1]))  # the circle's right and left ends
    else:
        bars.append((v[0], v[2], v[1]))         # lo, hi, y
assert len(dots) == len(recs) == 16 and len(bars) == 16, (len(dots), len(bars))
assert [y for _, y in dots] == sorted(y for _, y in dots), "rows not top to bottom"
m = [r["sink_ratio"] for r in recs]
b = (dots[-1][0] - dots[0][0]) / (m[-1] - m[0])
a = dots[0][0] - b * m[0]
assert b > 0, "larger means not to the right"
for (x, _), r, (lo, hi, _) in zip(dots, recs, bars):
    assert abs(x - (a + b * r["sink_ratio"])) < 0.01, (x, r)
    assert abs(lo - (a + b * r["sink_ratio_ci_low"])) < 0.01, (lo, r)
    assert abs(hi - (a + b * r["sink_ratio_ci_high"])) < 0.01, (hi, r)
EOF
if [ $POPPLER -eq 1 ]; then
    N=$((N + 1))
    DESC="forest: rows sorted by aggregate's means"
    pdftotext -layout "$T/forest.pdf" "$T/forest.txt" 2>/dev/null
    "$PY" - "$T/agg_forest.json" "$T/forest.txt" <<'EOF' || fail "rows out of order"
import json, re, sys
recs = json.load(open(sys.argv[1]))["records"]
want = ["L%d H%d" % (r["layer"], r["head"])
        for r in sorted(recs, key=lambda r: -r["sink_ratio"])]
got = re.findall(r"L\d+ H\d+", open(sys.argv[2]).read())
assert got == want, (got, want)
EOF
fi
runj p.out plot "$T/heads.jsonl" --kind forest --metric sink_ratio --by layer --ci 0.9 -o "$T/forest_l.pdf"
figure "$T/forest_l.pdf" 432 324 150 "sink_ratio: mean and 90% interval per layer" L0 L3

# ---- the default page fits what it draws -------------------------------------------
# Without --size the page is 432x324, grown where the labels or the cells
# need room (it was 432x324 always: six tokens of 60 characters did not fit).
# Each matrix with the tokens file `tokenize --format json` writes.
"$PY" - "$T" <<'EOF'
import json, sys
import numpy as np
rng = np.random.default_rng(5)
for n, toks in ((1, ["only"]), (2, ["a-rather-long-token-string-number-%d" % k for k in range(2)]),
                (6, ["t%d" % k + "x" * 60 for k in range(6)]), (40, ["tok%d" % k for k in range(40)])):
    A = rng.random((n, n))
    np.save("%s/m%d.npy" % (sys.argv[1], n), A / A.sum(axis=1, keepdims=True))
    json.dump({"ids": list(range(n)), "tokens": toks}, open("%s/m%d.json" % (sys.argv[1], n), "w"))
EOF
# "n W H": the page of the n x n figure, in points, where the text is
# measured with the fonts of the README's figure (cairo 1.16.0, DejaVu
# 2.37-6); elsewhere the page must be at least 432x324.
if [ "$(pkg-config --modversion cairo 2>/dev/null)" = 1.16.0 ] &&
    [ "$(dpkg-query -W -f '${Version}' fonts-dejavu-core 2>/dev/null)" = 2.37-6 ]; then
    FONTS_KNOWN=1
else
    FONTS_KNOWN=0
fi
for case in "1 432 324" "2 503 456" "6 619 566" "40 619 566"; do
    set -- $case
    runj p.out plot "$T/m$1.npy" --kind attention --tokens "$T/m$1.json" -o "$T/m$1.svg"
    if [ $FONTS_KNOWN -eq 0 ]; then
        set -- "$1" $("$PY" -c 'import re, sys
w, h = re.search(r"width=\"([0-9.]+)pt\" height=\"([0-9.]+)pt\"", open(sys.argv[1]).read()).groups()
print(max(float(w), 432), max(float(h), 324))' "$T/m$1.svg")
    fi
    figure "$T/m$1.svg" "$2" "$3" 150
    runj p.out plot "$T/m$1.npy" --kind attention --tokens "$T/m$1.json" -o "$T/m$1.pdf"
    figure "$T/m$1.pdf" "$2" "$3" 150 query key
done
# an explicit --size is kept, and may be refused when too small for the labels
runj p.out plot "$T/m40.npy" --kind attention --tokens "$T/m40.json" --size 432x324 -o "$T/m40s.svg"
figure "$T/m40s.svg" 432 324 150
KEEP=keep.svg
K=$T/o/keep.svg
run_case 1 "too small for the labels" "--size too small for long tokens" plot "$T/m6.npy" \
    --kind attention --tokens "$T/m6.json" --size 432x324 -o "$K"
KEEP=

# ---- error cases ----------------------------------------------------------------
# Every failing case below must leave an existing figure alone.
KEEP=keep.svg
K=$T/o/keep.svg
"$PY" -c 'import numpy as np, sys; np.save(sys.argv[1], np.ones((2, 3)))' "$T/rect.npy"
head -c 100 "$T/A.npy" >"$T/trunc.npy"
printf '{"ids": [1, 2], "tokens": ["a", "b"]}\n' >"$T/short.json"
printf 'not json\n' >"$T/bad.json"
printf '{"ids": [1]}\n' >"$T/notok.json"
# strings before the one that is not: read_tokens freed them (LeakSanitizer)
"$PY" -c 'import json, sys; json.dump({"ids": list(range(11)), "tokens": ["a", "b", 3] + ["c"] * 8}, open(sys.argv[1], "w"))' \
    "$T/numtok.json"

run_case 2 ".jpg" "unknown suffix" plot "$T/A.npy" --kind attention -o "$T/o/fig.jpg"
run_case 2 ".svg" "no suffix" plot "$T/A.npy" --kind attention -o "$T/o/fig"
run_case 2 "-o" "missing -o" plot "$T/A.npy" --kind attention
run_case 2 "--kind" "missing --kind" plot "$T/A.npy" -o "$K"
run_case 2 "pie" "unknown --kind" plot "$T/A.npy" --kind pie -o "$K"
run_case 2 "INPUT" "missing INPUT" plot --kind attention -o "$K"
run_case 2 "--metric" "--metric with attention" plot "$T/A.npy" --kind attention --metric x -o "$K"
run_case 2 "--tokens" "--tokens with spectrum" plot "$T/A.npy" --kind spectrum --tokens "$T/tok.json" -o "$K"
run_case 2 "--values" "--values with spectrum" plot "$T/A.npy" --kind spectrum --values -o "$K"
run_case 2 "--layer" "--layer with similarity" plot "$T/S.npy" --kind similarity --layer 1 -o "$K"
run_case 2 "--size" "--size too small" plot "$T/A.npy" --kind attention --size 10x10 -o "$K"
run_case 2 "--size" "--size not WxH" plot "$T/A.npy" --kind attention --size 400 -o "$K"
run_case 2 "--dpi" "--dpi out of range" plot "$T/A.npy" --kind attention --dpi 5000 -o "$K"
run_case 2 "--vmin" "--vmin not below --vmax" plot "$T/A.npy" --kind attention --vmin 1 --vmax 1 -o "$K"
run_case 2 "--layer" "--layer not a number" plot "$T/A.npy" --kind attention --layer x -o "$K"
run_case 2 "--bogus" "unknown option" plot "$T/A.npy" --kind attention --bogus -o "$K"
run_case 1 "--layer 4" "--layer out of range" plot "$T/A.npy" --kind attention --layer 4 -o "$K"
run_case 1 "--head 7" "--head out of range" plot "$T/A.npy" --kind spectrum --head 7 -o "$K"
run_case 1 "rect.npy" "not square (spectrum)" plot "$T/rect.npy" --kind spectrum -o "$K"
run_case 1 "head axis" "--head on rollout's [L, n, n]" plot "$T/R.npy" --kind attention --head 1 -o "$K"
run_case 1 "A.npy" "similarity of a 4-D array" plot "$T/A.npy" --kind similarity -o "$K"
run_case 1 "trunc.npy" "truncated .npy" plot "$T/trunc.npy" --kind attention -o "$K"
run_case 1 "nope.npy" "missing input" plot "$T/nope.npy" --kind attention -o "$K"
run_case 1 "short.json" "token count mismatch" plot "$T/A.npy" --kind attention --tokens "$T/short.json" -o "$K"
run_case 1 "bad.json" "tokens not JSON" plot "$T/A.npy" --kind attention --tokens "$T/bad.json" -o "$K"
run_case 1 "token 2 is not a string" "a token not a string" plot "$T/A.npy" --kind attention \
    --tokens "$T/numtok.json" -o "$K"
run_case 1 "notok.json" "no tokens array" plot "$T/A.npy" --kind attention --tokens "$T/notok.json" -o "$K"
run_case 1 "--heads-per-layer" "heads not whole layers" plot "$T/S.npy" --kind similarity \
    --heads-per-layer 5 -o "$K"
printf 'layer,head,v\n0.5,1,2\n' >"$T/frac.csv"
printf 'layer,head,v\n0,1,abc\n' >"$T/textv.csv"
printf 'layer,head,v\n0,1,\n1,0,\n' >"$T/nulls.csv"
printf 'head,v\n1,2\n' >"$T/nolayer.csv"
printf '{"records": [\n' >"$T/broken.json"
run_case 2 "--metric" "heatmap without --metric" plot "$T/heads.csv" --kind heatmap -o "$K"
run_case 2 "--layer" "--layer with heatmap" plot "$T/heads.csv" --kind heatmap --metric sink_ratio \
    --layer 1 -o "$K"
run_case 2 "--by" "--by with heatmap" plot "$T/heads.csv" --kind heatmap --metric sink_ratio --by head -o "$K"
run_case 2 "--by" "--by layer" plot "$T/heads.csv" --kind depth --metric sink_ratio --by layer -o "$K"
run_case 2 "--values" "--values with depth" plot "$T/heads.csv" --kind depth --metric sink_ratio --values -o "$K"
run_case 1 "nope" "missing metric" plot "$T/heads.csv" --kind heatmap --metric nope -o "$K"
run_case 1 "frac.csv: line 2" "layer not an integer" plot "$T/frac.csv" --kind heatmap --metric v -o "$K"
run_case 1 "textv.csv: line 2" "metric holds text" plot "$T/textv.csv" --kind depth --metric v -o "$K"
run_case 1 "null in every record" "metric always null" plot "$T/nulls.csv" --kind heatmap --metric v -o "$K"
run_case 1 "nolayer.csv" "no layer" plot "$T/nolayer.csv" --kind depth --metric v -o "$K"
run_case 1 "broken.json" "malformed records" plot "$T/broken.json" --kind heatmap --metric v -o "$K"
run_case 1 "head" "heatmap of per-layer records" plot "$T/res_agg.csv" --kind heatmap --metric mean_cosine -o "$K"
# a line per head index would join unrelated heads of successive layers
run_case 2 "unrelated heads" "depth --by head" plot "$T/heads_agg.json" --kind depth --by head \
    --metric sink_ratio -o "$K"
run_case 1 "--model" "two models in a heatmap" plot "$T/two_models.jsonl" --kind heatmap \
    --metric mean_cosine -o "$K"
run_case 1 "--model tiny" "--model of no record" plot "$T/two_models.jsonl" --kind depth \
    --metric mean_cosine --model tiny -o "$K"
# --values on cells too small for 4-point text: refused with the size they need
run_case 1 "too small for the values" "--values on small cells" plot "$T/m40.npy" --kind attention \
    --values --size 432x324 -o "$K"
run_case 2 "--order" "--order with heatmap" plot "$T/heads.csv" --kind heatmap --metric sink_ratio --order layer -o "$K"
run_case 2 "--order" "--order neither cluster nor layer" plot "$T/S.npy" --kind similarity --order size -o "$K"
run_case 2 "--ref" "--ref with heatmap" plot "$T/heads.csv" --kind heatmap --metric sink_ratio --ref 1 -o "$K"
run_case 2 "--ci" "--ci out of (0, 1)" plot "$T/heads.csv" --kind forest --metric sink_ratio --ci 1 -o "$K"
run_case 2 "--values" "--values with forest" plot "$T/heads.csv" --kind forest --metric sink_ratio --values -o "$K"
run_case 2 "--metric" "forest without --metric" plot "$T/heads.csv" --kind forest -o "$K"
run_case 1 "nope" "forest of a missing metric" plot "$T/heads.csv" --kind forest --metric nope -o "$K"
run_case 1 "" "-o into a missing folder" plot "$T/A.npy" --kind attention -o "$T/o/no/fig.svg"
run_case 1 "same file" "-o is the input" plot "$T/o/keep.svg" --kind attention -o "$K"

finish
