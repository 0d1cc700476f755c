#!/bin/sh
# tests/cli/matrix.sh CLI — happy-path checks of `attngeom matrix` (docs/cli.md, Records):
# every --format runs (exit 0, output on stdout, nothing on stderr); JSON parses
# and csv/tsv/md/latex have the expected shape; -o writes the same bytes as
# stdout and prints nothing; --expect against a golden made by the tool passes;
# a golden changed beyond tolerance exits 3 and names the key; --rtol/--atol
# are respected; the LaTeX output compiles when pdflatex and the packages it
# needs are installed (and the check skips, not fails, when they are not);
# rectangular [H, m, n] inputs (cross-attention): family cross by default
# with values derived by hand, the square-only keys null with "not square"
# as their null case, --metrics replacing the default, --scores on them.
# Exits non-zero if any check fails, printing each failure.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
cd "$T" || exit 1

# 3 heads of 6x6: stochastic, causal, signed (nulls for the entropy keys)
"$PY" - <<'EOF' || { echo "matrix.sh: could not make test files" >&2; exit 1; }
import numpy as np
rng = np.random.default_rng(5)
def sm(L):
    E = np.exp(L - L.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)
L = rng.normal(size=(6, 6))
C = rng.normal(size=(6, 6)); C[np.triu_indices(6, 1)] = -np.inf
np.save("heads.npy", np.stack([sm(L), sm(C), rng.normal(size=(6, 6))]))
EOF

# ---- every format ----------------------------------------------------------
for fmt in table json csv tsv md latex; do
    check "--format $fmt"
    "$CLI" matrix heads.npy --format $fmt >"out.$fmt" 2>err; rc=$?
    [ $rc -eq 0 ] || fail "exit $rc: $(head -c 300 err)"
    [ -s "out.$fmt" ] || fail "no output"
    [ -s err ] && fail "stderr not empty: $(head -c 300 err)"
    check "--format $fmt -o"
    rm -f "o.$fmt"
    "$CLI" matrix heads.npy --format $fmt -o "o.$fmt" >stdout 2>err; rc=$?
    [ $rc -eq 0 ] || fail "exit $rc: $(head -c 300 err)"
    [ -s stdout ] && fail "stdout not empty with -o"
    [ -s err ] && fail "stderr not empty: $(head -c 300 err)"
    if [ ! -f "o.$fmt" ]; then
        fail "-o o.$fmt not written"
    elif ! cmp -s "o.$fmt" "out.$fmt"; then
        fail "-o o.$fmt differs from what stdout shows"
    fi
done

check "json parses with python3 -m json.tool"
"$PY" -m json.tool out.json >/dev/null 2>err || fail "$(head -c 300 err)"

check "json structure"
"$PY" - <<'EOF' || fail "see above"
import json, sys
def bad(name):
    raise ValueError("non-finite token " + name)
d = json.load(open("out.json"), parse_constant=bad)
r = d["records"]
ok = True
def err(m):
    global ok
    ok = False
    print("  " + m)
if len(r) != 3:
    err("%d records, expected 3" % len(r))
for h, rec in enumerate(r):
    if (rec.get("layer"), rec.get("head"), rec.get("rows"), rec.get("cols")) != (0, h, 6, 6):
        err("record %d: layer/head/rows/cols %r" % (h, [rec.get(k) for k in ("layer", "head", "rows", "cols")]))
if r and r[2].get("entropy_mean", 0) is not None:
    err("signed head: entropy_mean should be null")
if r and r[1].get("causal") is not True:
    err("causal head: causal should be true")
sys.exit(0 if ok else 1)
EOF

check "csv/tsv shape"
for f in csv tsv; do
    sep=,; [ $f = tsv ] && sep=$(printf '\t')
    head -n 1 "out.$f" | grep -q "^layer${sep}head${sep}rows${sep}cols${sep}sigma_max${sep}" ||
        fail "$f header: $(head -n 1 "out.$f")"
    n=$(grep -c . "out.$f")
    [ "$n" -eq 4 ] || fail "$f has $n non-empty lines, expected 4 (header + 3 records)"
    cols=$(head -n 1 "out.$f" | awk -F"$sep" '{print NF}')
    awk -F"$sep" -v c="$cols" 'NF && NF != c { exit 1 }' "out.$f" ||
        fail "$f rows do not all have $cols fields"
done

check "md shape"
# layer 0, the sizes and the file, one label in every row, are named above the table
grep -q '^<!-- constant: layer = 0, rows = 6, cols = 6, model = heads.npy -->$' out.md ||
    fail "no comment naming the constant columns: $(head -n 1 out.md)"
grep -q '^| Head | Largest singular value |' out.md ||
    fail "no markdown header row of display names"
grep -Eq '^\|( *:?-+:? *\|)+ *$' out.md || fail "no markdown separator row"
[ "$(grep -c '^|' out.md)" -eq 5 ] || fail "expected 5 table lines (header, rule, 3 records)"

check "latex shape"
grep -q '\\begin{tabular}' out.latex || fail "no \\begin{tabular}"
grep -q '\\end{tabular}' out.latex || fail "no \\end{tabular}"
# headers: the display names (an unknown key escaped: test_table_arrange.c)
grep -q 'Largest singular value \$\\sigma_1\$' out.latex || fail "no display name and symbol of sigma_max"

# latex_compiles FILE — 0 if the LaTeX fragment FILE compiles in an article
# with the packages its first line asks for, 1 (after fail) if it does not,
# 2 (after a message) when pdflatex or one of the files is not installed:
# Debian's texlive-latex-base alone has pdflatex without booktabs.sty.
latex_compiles() {
    command -v pdflatex >/dev/null 2>&1 || {
        echo "matrix.sh: pdflatex not installed, skipping the LaTeX compile check"
        return 2
    }
    pkgs=$(sed -n '1s/.*\\usepackage{\([^}]*\)}.*/\1/p' "$1" | tr ',' ' ')
    missing=""
    for f in article.cls geometry.sty $(for p in $pkgs; do echo "$p.sty"; done); do
        [ -n "$(kpsewhich "$f" 2>/dev/null)" ] || missing="$missing $f"
    done
    if [ -n "$missing" ]; then
        echo "matrix.sh: TeX lacks$missing (Debian: texlive-latex-recommended), skipping the LaTeX compile check"
        return 2
    fi
    {
        printf '%s\n' '\documentclass{article}'
        for p in $pkgs; do printf '\\usepackage{%s}\n' "$p"; done
        printf '%s\n' '\usepackage[margin=5mm,paperwidth=80cm,paperheight=20cm]{geometry}' \
            '\begin{document}'
        cat "$1"
        printf '%s\n' '\end{document}'
    } >doc.tex
    if pdflatex -interaction=nonstopmode -halt-on-error doc.tex >latex.log 2>&1 && [ -s doc.pdf ]; then
        return 0
    fi
    fail "pdflatex failed: $(grep -m3 '^!' latex.log)"
    return 1
}

check "latex names the packages it needs"
head -n 1 out.latex | grep -q '\\usepackage{booktabs}' || fail "first line does not ask for booktabs: $(head -n 1 out.latex)"

check "latex compiles"
latex_compiles out.latex

check "latex check skips when pdflatex lacks booktabs.sty"
mkdir -p fakebin
printf '#!/bin/sh\necho "! LaTeX Error: File \`booktabs.sty'"'"' not found."\nexit 1\n' >fakebin/pdflatex
printf '#!/bin/sh\ncase $1 in booktabs.sty) exit 1 ;; *) echo "/usr/share/texmf/$1" ;; esac\n' >fakebin/kpsewhich
chmod +x fakebin/pdflatex fakebin/kpsewhich
msg=$(PATH=$(pwd)/fakebin:$PATH latex_compiles out.latex)
rc=$?
[ $rc -eq 2 ] || fail "status $rc, expected 2 (skipped): $msg"
case $msg in *"lacks booktabs.sty"*) ;; *) fail "no skip message naming booktabs.sty: $msg" ;; esac

check "--help"
"$CLI" matrix --help >stdout 2>err; rc=$?
[ $rc -eq 0 ] || fail "matrix --help exits $rc"
[ -s stdout ] || fail "matrix --help prints nothing on stdout"

# ---- --expect --------------------------------------------------------------
"$CLI" matrix heads.npy --format json --metrics all -o gold.json 2>err ||
    { DESC="make golden"; fail "exit $?: $(cat err)"; }

# edit KEY of record IDX in gold.json into FILE: mode rel/abs/set VALUE
edit() {
    "$PY" - "$@" <<'EOF'
import json, sys
src, dst, idx, key, mode, val = sys.argv[1:7]
d = json.load(open(src))
r = d["records"][int(idx)]
if mode == "rel":
    r[key] = r[key] * (1 + float(val))
elif mode == "abs":
    r[key] = r[key] + float(val)
else:
    r[key] = json.loads(val)
json.dump(d, open(dst, "w"), indent=1)
EOF
}

# expect WANT_STATUS MUST_NAME ARGS...
expect_run() {
    want=$1 name=$2
    shift 2
    "$CLI" matrix heads.npy --format json --metrics all "$@" >stdout 2>stderr; rc=$?
    [ $rc -eq "$want" ] || fail "exit $rc, expected $want: $(head -c 400 stderr)"
    if [ -n "$name" ] && ! cat stdout stderr | grep -q -- "$name"; then
        fail "output does not name $name: $(head -c 400 stderr)"
    fi
}

check "--expect own golden"
expect_run 0 "" --expect gold.json

check "--expect own golden, csv output"
"$CLI" matrix heads.npy --format csv --metrics all --expect gold.json >stdout 2>stderr; rc=$?
[ $rc -eq 0 ] || fail "exit $rc: $(head -c 300 stderr)"

check "--expect value changed by 1e-3 relative"
edit gold.json g1.json 1 entropy_mean rel 1e-3
expect_run 3 entropy_mean --expect g1.json

check "--expect mismatch names the key, not the other keys"
if grep -q sigma_max stderr; then fail "mismatch output mentions sigma_max too: $(head -c 400 stderr)"; fi

check "--expect boolean changed"
edit gold.json g2.json 1 causal set false
expect_run 3 causal --expect g2.json

check "--expect null changed to a number"
edit gold.json g3.json 2 entropy_mean set 0.5
expect_run 3 entropy_mean --expect g3.json

check "--expect number changed to null"
edit gold.json g4.json 0 fiedler set null
expect_run 3 fiedler --expect g4.json

check "--expect 1e-7 relative change, default rtol 1e-9"
edit gold.json g5.json 0 sigma_max rel 1e-7
expect_run 3 sigma_max --expect g5.json

check "--expect 1e-7 relative change, --rtol 1e-6"
expect_run 0 "" --expect g5.json --rtol 1e-6

check "--expect 1e-7 relative change, --rtol 1e-8"
expect_run 3 sigma_max --expect g5.json --rtol 1e-8

check "--expect 1e-5 absolute change, --rtol 0 --atol 1e-4"
edit gold.json g6.json 1 stable_rank abs 1e-5
expect_run 0 "" --expect g6.json --rtol 0 --atol 1e-4

check "--expect 1e-5 absolute change, --rtol 0 --atol 1e-6"
expect_run 3 stable_rank --expect g6.json --rtol 0 --atol 1e-6

check "--expect 1e-5 absolute change, default tolerances"
expect_run 3 stable_rank --expect g6.json

check "--expect golden missing"
expect_run 1 no_such_golden.json --expect no_such_golden.json

# ---- rectangular matrices: cross-attention (docs/cli.md) ------------------
# head 0: the 3x4 of tests/analysis/test_cross.c (a = (0, 2, 1): rho 1/2,
# tau 1/3; c = (.625, .875, 1.5, 0) against T/n = .75: coverage 1/2);
# head 1: one-hot a = (0, 1, 3): rho = tau = 1, c = (1, 1, 0, 1): 3/4
"$PY" - <<'EOF' || fail "could not make rect.npy"
import numpy as np
A = np.array([[.5, .25, .25, 0], [.125, .125, .75, 0], [0, .5, .5, 0]])
B = np.zeros((3, 4)); B[0, 0] = B[1, 1] = B[2, 3] = 1
np.save("rect.npy", np.stack([A, B]))
with np.errstate(divide="ignore"):
    np.save("rect_scores.npy", np.log(np.stack([A, B])))
EOF
"$CLI" matrix rect.npy --format json >rect.json 2>err || fail "exit $?: $(head -c 300 err)"
"$CLI" matrix rect.npy --metrics spectrum --format json >rect_spectrum.json 2>err || fail "$(cat err)"
"$CLI" matrix heads.npy --format json >square.json 2>err || fail "$(cat err)"
"$CLI" matrix heads.npy --metrics cross --format json >square_cross.json 2>err || fail "$(cat err)"
"$CLI" matrix --scores rect_scores.npy --format json >rect_scores.json 2>err || fail "$(cat err)"
"$CLI" metrics attention --format json >metrics_b.json 2>err || fail "$(cat err)"
PYSCRIPT='
r = records(a[0])
assert [(x["rows"], x["cols"]) for x in r] == [(3, 4), (3, 4)], r
want = [(0.5, 1 / 3, 0.5), (1, 1, 0.75)]
for x, (rho, tau, cov) in zip(r, want):
    assert abs(x["alignment_monotonicity"] - rho) < 1e-15, x
    assert abs(x["alignment_kendall"] - tau) < 1e-15 and x["source_coverage"] == cov, x
h = (4.75 * math.log(2) - 0.75 * math.log(3)) / (3 * math.log(4))
assert abs(r[0]["cross_entropy_normalized"] - h) < 1e-15 and r[1]["cross_entropy_normalized"] == 0
assert r[0]["entropy_normalized"] == r[0]["cross_entropy_normalized"], r[0]
assert abs(r[0]["max_mass"] - 1.75 / 3) < 1e-15 and r[0]["row_sum_error"] == 0, r[0]
# the keys of a square matrix only: null, and "not square" their null case
square_only = ["causal", "lambda2_abs", "spectral_gap", "fiedler", "asymmetry", "symmetry_score",
               "attention_distance", "self_mass", "prev_token_mass", "lambda2_condition",
               "prev_token_ratio", "self_ratio"]
for x in r:
    for k in square_only:
        assert k in x and x[k] is None, (k, x.get(k, "missing"))
why = {m["key"]: m["null_when"] for m in records(a[5])}
for k in square_only:
    assert why[k].startswith("not square"), (k, why[k])
# rectangular: the default selection plus cross, in the settings too
sel = load(a[0])["settings"]["metrics"]
cross = ["alignment_monotonicity", "alignment_kendall", "source_coverage", "cross_entropy_normalized"]
assert sel[-4:] == cross and "sigma_max" in sel and "edges" not in sel, sel
# --metrics replaces the default: no cross keys
assert all(k not in x for x in records(a[1]) for k in cross)
# square: not by default, on request
assert all(k not in x for x in records(a[2]) for k in cross)
sq = records(a[3])
assert all(set(cross) <= set(x) for x in sq) and load(a[3])["settings"]["metrics"] == cross
# --scores: log A with -inf masked, softmax gives A back
s = records(a[4])
for x, y in zip(s, r):
    for k in cross:
        assert abs(x[k] - y[k]) < 1e-12, (k, x[k], y[k])
'
pycheck "matrix on rectangular [H, m, n]: family cross by default, square-only keys null" \
    rect.json rect_spectrum.json square.json square_cross.json rect_scores.json metrics_b.json

finish
