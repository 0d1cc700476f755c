#!/bin/sh
# tests/cli/plot_cross.sh CLI — `attngeom plot` on an encoder–decoder model
# (issue 30), tests/data/models/arch/t5 (random weights, no tokenizer: ids):
#   * --kind attention of `attention --cross` ([L_dec, H, n_tgt, n_src]): the
#     SVG's cells form n_tgt rows by n_src columns (source on the x axis,
#     target on the y axis), each cell's colour rank follows the matrix's
#     values; the PDF's text holds the source labels (--tokens), the target
#     labels (--target-tokens) and every value (--values); the encoder's and
#     the decoder's square matrices as before;
#   * --kind depth/heatmap on records with "stack": refused without --stack
#     (one line naming --stack), one stack with it, the title naming it;
#   * the refusals: exit 1 (2 for usage), one stderr line, -o untouched.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
T5=tests/data/models/arch/t5
need "$T5/config.json"

SRC=5,6,7,8,9,10
TGT=0,11,12,13
runj att.out attention "$T5" --tokens "$SRC" --target-tokens "$TGT" -o "$T/E.npy" \
    --decoder "$T/D.npy" --cross "$T/C.npy"
"$PY" - "$T" <<'EOF'
import json, sys
t = sys.argv[1]
json.dump({"ids": [5, 6, 7, 8, 9, 10], "tokens": ["src%d" % k for k in range(6)]},
          open(t + "/src.json", "w"))
json.dump({"ids": [0, 11, 12, 13], "tokens": ["tgt%d" % k for k in range(4)]},
          open(t + "/tgt.json", "w"))
EOF

# plot NAME ARGS... : `attngeom plot ARGS -o $T/NAME` exits 0 (lib.sh's
# runj) and prints nothing
plot() {
    name=$1
    shift
    runj p.out plot "$@" -o "$T/$name"
    check "plot $* -o $name: silent" test ! -s "$T/p.out" -a ! -s "$T/p.out.err"
}

# The grid's cells in the SVG: cairo writes each filled rectangle as a path
# "M x0 y0 L x1 y0 L x1 y1 L x0 y1 Z"; the cells are the rectangles of one
# size, nrows x ncols of them. Checked: their rows and columns, and that the
# order of their fills' lightness follows the matrix (viridis is monotone in
# lightness: a larger weight is a lighter cell).
PYLIB='
import re
def cells(p):
    svg = open(p).read()
    num = r"(-?[0-9.]+)"
    rect = re.compile(r"fill:rgb\(([0-9.]+)%,([0-9.]+)%,([0-9.]+)%\)[^>]*d=\"M " + num + " " + num +
                      " L " + num + " " + num + " L " + num + " " + num + " L " + num + " " + num +
                      " Z")
    got = {}
    for m in rect.finditer(svg):
        r, g, b, x0, y0, x1, _, _, y1 = [float(v) for v in m.groups()[:9]]
        size = (round(x1 - x0, 3), round(y1 - y0, 3))
        got.setdefault(size, []).append((y0, x0, 0.2126 * r + 0.7152 * g + 0.0722 * b))
    return got
def grid_of(p, rows, cols):
    # the cells of the most common size, and those within a point of it
    # (cairo rounds the last row and column to the edge of the grid)
    got = cells(p)
    top = max(got, key=lambda k: len(got[k]))
    cs = [c for k, v in got.items() if abs(k[0] - top[0]) <= 1 and abs(k[1] - top[1]) <= 1
          for c in v]
    ys = sorted(set(c[0] for c in cs))
    xs = sorted(set(c[1] for c in cs))
    assert (len(cs), len(ys), len(xs)) == (rows * cols, rows, cols), \
        ("not a %d x %d grid of cells" % (rows, cols), len(cs), len(ys), len(xs))
    L = np.zeros((rows, cols))
    for y, x, l in cs:
        L[ys.index(y), xs.index(x)] = l
    return L
def same_order(L, A):
    # lightness rises with the weight: every pair of cells in the same order
    a, l = A.ravel(), L.ravel()
    for i in range(a.size):
        for j in range(a.size):
            if a[i] < a[j] - 1e-3:
                assert l[i] <= l[j] + 1e-9, (i, j, a[i], a[j], l[i], l[j])
'

# ---- the cross-attention: target rows, source columns --------------------------
plot cross.svg "$T/C.npy" --kind attention --layer 1 --head 2
PYSCRIPT='
A = np.load(a[0])
assert A.shape[2:] == (4, 6), A.shape
same_order(grid_of(a[1], 4, 6), A[1, 2])
'
pycheck "cross.svg: a 4 x 6 grid (target rows, source columns) in the matrix's order" \
    "$T/C.npy" "$T/cross.svg"
plot cross.pdf "$T/C.npy" --kind attention --layer 1 --head 2 --tokens "$T/src.json" \
    --target-tokens "$T/tgt.json" --values
plot cross_lab.svg "$T/C.npy" --kind attention --layer 1 --head 2 --tokens "$T/src.json" \
    --target-tokens "$T/tgt.json"
PYSCRIPT='grid_of(a[0], 4, 6)'
pycheck "cross_lab.svg: labelled, still 4 x 6" "$T/cross_lab.svg"
if command -v pdftotext >/dev/null 2>&1; then
    pdftotext -raw "$T/cross.pdf" "$T/cross.txt"
    PYSCRIPT='
A = np.load(a[0])[1, 2]
words = open(a[1]).read().split()
for w in ["cross-attention,", "target", "source", "(query)", "(key)"] + \
         ["src%d" % k for k in range(6)] + ["tgt%d" % k for k in range(4)]:
    assert w in words, (w, words)
for v in A.ravel():
    assert "%.3g" % v in words, ("%.3g" % v, words)
'
    pycheck "cross.pdf: the source and target labels, the title, every value" "$T/C.npy" "$T/cross.txt"
fi
# the same bytes twice
plot cross2.svg "$T/C.npy" --kind attention --layer 1 --head 2
check "cross.svg: the same bytes twice" cmp -s "$T/cross.svg" "$T/cross2.svg"

# ---- the square stacks -------------------------------------------------------------
plot enc.svg "$T/E.npy" --kind attention --layer 0 --head 1 --tokens "$T/src.json"
plot dec.svg "$T/D.npy" --kind attention --layer 1 --head 2 --tokens "$T/tgt.json"
PYSCRIPT='
E, D = np.load(a[0]), np.load(a[1])
same_order(grid_of(a[2], 6, 6), E[0, 1])
same_order(grid_of(a[3], 4, 4), D[1, 2])
'
pycheck "encoder 6 x 6, decoder 4 x 4" "$T/E.npy" "$T/D.npy" "$T/enc.svg" "$T/dec.svg"

# ---- depth and heatmap of records with "stack" ----------------------------------
runj rec.jsonl analyze "$T5" --tokens "$SRC" --target-tokens "$TGT" \
    --metrics entropy_normalized,alignment_monotonicity --format jsonl
runj agg.json analyze "$T5" --tokens "$SRC" --target-tokens "$TGT" \
    --metrics alignment_monotonicity --aggregate --by stack,layer --format json
for s in encoder decoder cross; do
    plot "depth_$s.pdf" "$T/rec.jsonl" --kind depth --metric entropy_normalized --stack $s
done
plot depth_mono.pdf "$T/agg.json" --kind depth --metric alignment_monotonicity --stack cross
plot depth_mono.svg "$T/agg.json" --kind depth --metric alignment_monotonicity --stack cross
plot heat_cross.svg "$T/rec.jsonl" --kind heatmap --metric entropy_normalized --stack cross
PYSCRIPT='
rows = [json.loads(l) for l in open(a[0])]
layers = {s: sorted({r["layer"] for r in rows if r.get("stack") == s}) for s in ("encoder", "cross")}
heads = sorted({r["head"] for r in rows if r.get("stack") == "cross"})
assert layers["cross"] and heads, layers
L = grid_of(a[1], len(layers["cross"]), len(heads))
'
pycheck "heatmap --stack cross: the cross records' layers x heads" "$T/rec.jsonl" "$T/heat_cross.svg"
if command -v pdftotext >/dev/null 2>&1; then
    for s in encoder decoder cross; do
        pdftotext -raw "$T/depth_$s.pdf" "$T/depth_$s.txt"
        check "depth --stack $s: the title names the stack" grep -qF "entropy_normalized by layer, t5, $s" "$T/depth_$s.txt"
    done
    pdftotext -raw "$T/depth_mono.pdf" "$T/depth_mono.txt"
    check "depth of alignment_monotonicity: titled" grep -qF "alignment_monotonicity by layer" "$T/depth_mono.txt"
fi
# the records of one stack only (analyze --layers of a decoder) need no --stack
"$PY" - "$T/rec.jsonl" "$T/cross_only.jsonl" <<'EOF'
import json, sys
with open(sys.argv[2], "w") as f:
    for l in open(sys.argv[1]):
        if json.loads(l).get("stack") == "cross":
            f.write(l)
EOF
plot cross_only.svg "$T/cross_only.jsonl" --kind depth --metric entropy_normalized
plot cross_stack.svg "$T/rec.jsonl" --kind depth --metric entropy_normalized --stack cross
check "depth of the cross records alone = depth --stack cross" cmp -s "$T/cross_only.svg" "$T/cross_stack.svg"

# ---- refusals -------------------------------------------------------------------
KEEP=keep.svg
K=$T/o/keep.svg
run_case 1 "--stack" "depth of mixed stacks without --stack" plot "$T/rec.jsonl" --kind depth \
    --metric entropy_normalized -o "$K"
run_case 1 "--stack" "heatmap of mixed stacks without --stack" plot "$T/rec.jsonl" --kind heatmap \
    --metric entropy_normalized -o "$K"
run_case 1 "in --stack encoder" "no encoder record in the cross records" plot "$T/cross_only.jsonl" \
    --kind depth --metric entropy_normalized --stack encoder -o "$K"
run_case 2 "middle" "--stack takes encoder, decoder or cross" plot "$T/rec.jsonl" --kind depth \
    --metric entropy_normalized --stack middle -o "$K"
run_case 2 "--stack" "--stack with attention" plot "$T/C.npy" --kind attention --stack cross -o "$K"
run_case 2 "--target-tokens" "--target-tokens with depth" plot "$T/rec.jsonl" --kind depth \
    --metric entropy_normalized --stack cross --target-tokens "$T/tgt.json" -o "$K"
run_case 1 "--target-tokens" "a labelled source without target labels" plot "$T/C.npy" \
    --kind attention --tokens "$T/src.json" -o "$K"
run_case 1 "4 tokens" "source labels of the wrong count" plot "$T/C.npy" --kind attention \
    --tokens "$T/tgt.json" --target-tokens "$T/tgt.json" -o "$K"
run_case 1 "6 tokens" "target labels of the wrong count" plot "$T/C.npy" --kind attention \
    --tokens "$T/src.json" --target-tokens "$T/src.json" -o "$K"
run_case 1 "not attention" "spectrum of a cross-attention" plot "$T/C.npy" --kind spectrum -o "$K"
run_case 1 "--grid" "--grid on a cross-attention" plot "$T/C.npy" --kind attention --grid 1x3 -o "$K"
KEEP=

finish
