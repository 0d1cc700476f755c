#!/bin/sh
# tests/cli/readme.sh CLI — the README's research commands (its "Statistics
# for a paper" block, under the "research:" marker) run as a reader would
# type them, in a scratch folder that sees the repository's models/, docs/
# and tests/ (nothing is written into the repository), and say what the
# README says: the head-level compare has 16 heads a side and Holm/BH
# columns, the paired compare equals scipy's ttest_rel and wilcoxon on the
# per-text means, the LaTeX table is a booktabs float, the figures exist.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json" README.md

mkdir -p "$T/run"
for d in models docs tests; do ln -s "$ROOT/$d" "$T/run/$d"; done

check "the README has the research commands"
"$PY" - README.md "$T/research.sh" <<'PYEOF' || fail "no research block in README.md"
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"<!-- research: .*?-->\n```sh\n(.*?)```", text, re.S)
cmds = m.group(1).replace("\\\n", " ")
assert cmds.count("build/attngeom") >= 8, cmds
open(sys.argv[2], "w").write("set -e\n" + cmds.replace("build/attngeom", '"$CLI"'))
PYEOF

check "the README's research commands run"
(cd "$T/run" && CLI=$CLI sh "$T/research.sh") >"$T/research.out" 2>"$T/research.err" ||
    fail "exit $?: $(tail -c 300 "$T/research.err")"

for f in gpt2.jsonl bert.jsonl heads.tex heads.md forest.svg S.npy similarity.svg; do
    check "$f written" test -s "$T/run/$f"
done

PYSCRIPT='
import scipy.stats as st
tex = open(a[0] + "/heads.tex").read()
for x in ["\\usepackage{booktabs}", "\\caption{Heads of tiny-gpt2}", "\\label{tab:heads}",
          "\\toprule", "Normalized entropy", "\\bottomrule"]:
    assert x in tex, x
md = open(a[0] + "/heads.md").read().split("\n")
assert md[0] == "<!-- constant: unit = layer,head, n_units = 32 -->", md[0]
head = [c.strip() for c in md[1].strip("|").split("|")]
assert {"p (Holm)", "q (BH)", "Hedges\u0027 g"} <= set(head), head
i = head.index("Units A")
assert all(r.split("|")[i + 1].strip() == "16" for r in md[3:] if r), "not 16 heads a side"
# the paired test: per text, the mean over the 16 heads of each model
def means(p, key):
    by = {}
    for l in open(p):
        r = json.loads(l)
        if "settings" in r or r.get(key) is None:
            continue
        by.setdefault(r["text"], []).append(r[key])
    return [np.mean(by[t]) for t in sorted(by)]
out = open(a[1]).read()
for key in ["symmetry_score", "entropy_normalized"]:
    x, y = means(a[0] + "/bert.jsonl", key), means(a[0] + "/gpt2.jsonl", key)
    t = st.ttest_rel(x, y)
    w = st.wilcoxon(x, y)
    line = [l for l in out.split("\n") if l.startswith(key + " ")]
    assert line, (key, out[:300])
    # the table prints 6 significant digits, folded to the terminal width
    # in blocks that each start with the metric: t and the Wilcoxon p among them
    cells = " ".join(line).split()
    assert "%.6g" % t.statistic in cells, (key, t.statistic, cells)
    assert "%.6g" % w.pvalue in cells, (key, w.pvalue, cells)
'
pycheck "the paired compare is scipy's ttest_rel and wilcoxon on the per-text means" "$T/run" "$T/research.out"

finish
