#!/bin/sh
# tests/cli/tables.sh CLI — the terminal table fits the terminal's width
# (docs/cli.md, "The terminal table"): COLUMNS when it is a positive
# integer, else the terminal's width, else 80. Folded, no line is wider than
# the width; each block repeats the identifying columns (layer, head, text,
# metric) and every other column is in exactly one block; every cell equals
# the same cell of the unfolded table; the other formats do not change.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
M=$GPT2
cd "$T" || exit 1
printf 'The cat sat on the mat.\nA dog ran far away today, and then it came back home.\n' > corpus.txt

# PYLIB: blocks(path) → a list of blocks, each (header words, rows of
# words); the table's cells hold no blanks (numbers, true/false, null, the
# text index, model names), so words are cells.
PYLIB='
def blocks(p):
    out, cur = [], None
    for line in open(p, encoding="utf-8").read().split("\n")[:-1]:
        if line == "":
            cur = None
            continue
        if cur is None:
            cur = (line.split(), [])
            out.append(cur)
        else:
            cur[1].append(line.split())
    return out
def widest(p):
    return max(len(l) for l in open(p, encoding="utf-8").read().split("\n"))
def named(bs, keys):
    """headers cut with "…" (too wide for any block) named by the key of
    the wide table they begin, at least 7 characters of it"""
    for head, rows in bs:
        for j, k in enumerate(head):
            if k.endswith("…"):
                full = [x for x in keys if x.startswith(k[:-1])]
                assert len(k) >= 8 and len(full) == 1, (k, full)
                head[j] = full[0]
    return bs
def cells(bs):
    """column -> the list of its cells, read from every block"""
    got = {}
    for head, rows in bs:
        for j, k in enumerate(head):
            col = [r[j] for r in rows]
            if k in got:
                assert got[k] == col, (k, "differs between blocks")
            got[k] = col
    return got
'
PYSCRIPT='
path, width, whole, ids = a[0], int(a[1]), a[2], a[3].split(",")
assert widest(path) <= width, (widest(path), width)
full = blocks(whole)
assert len(full) == 1, "the wide table is one block"
keys, rows = full[0][0], full[0][1]
bs = named(blocks(path), keys)
assert len(bs) > 1, "folded"
present = [k for k in ids if k in keys]
seen = []
for head, brows in bs:
    assert head[:len(present)] == present, (head, present)
    assert len(brows) == len(rows), "every row in every block"
    assert all(len(r) == len(head) for r in brows)
    seen += head[len(present):]
others = [k for k in keys if k not in ids]
assert seen == others, "every other column exactly once, in order"
want = {k: [r[j] for r in rows] for j, k in enumerate(keys)}
assert cells(bs) == want, "the cells of the unfolded table"
'
for w in 80 40; do
    COLUMNS=$w runj an$w.txt analyze "$M" --text "The quick brown fox jumps over the lazy dog."
    COLUMNS=100000 runj anwide.txt analyze "$M" --text "The quick brown fox jumps over the lazy dog."
    pycheck "analyze at COLUMNS=$w: folded, no line over $w, every column once" \
        an$w.txt $w anwide.txt layer,head,text,input,metric
    COLUMNS=$w runj co$w.txt analyze "$M" --text-file corpus.txt
    COLUMNS=100000 runj cowide.txt analyze "$M" --text-file corpus.txt
    pycheck "corpus analyze at COLUMNS=$w: text repeated in every block" \
        co$w.txt $w cowide.txt layer,head,text,input,metric
done

"$CLI" analyze "$M" --text-file corpus.txt --format jsonl -o an.jsonl
for w in 80 40; do
    COLUMNS=$w runj cmp$w.txt compare an.jsonl an.jsonl
    COLUMNS=100000 runj cmpwide.txt compare an.jsonl an.jsonl
    pycheck "compare at COLUMNS=$w: metric repeated in every block" \
        cmp$w.txt $w cmpwide.txt layer,head,text,input,metric
done

# The width's sources: without COLUMNS, or with one that is not a positive
# integer, a table written to a file is 80 wide.
for v in unset "" 0 abc -5 12x; do
    if [ "$v" = unset ]; then
        (unset COLUMNS; "$CLI" analyze "$M" --text "The cat." > d.txt)
    else
        COLUMNS=$v "$CLI" analyze "$M" --text "The cat." > d.txt
    fi
    COLUMNS=80 "$CLI" analyze "$M" --text "The cat." > d80.txt
    check "COLUMNS=$v: the width is 80" cmp -s d.txt d80.txt
done
COLUMNS=100 runj w100.txt analyze "$M" --text "The cat."
differ() { ! cmp -s "$1" "$2"; }
check "COLUMNS=100 is another width" differ w100.txt d80.txt
PYSCRIPT='assert 80 < widest(a[0]) <= 100, widest(a[0])'
pycheck "COLUMNS=100: lines up to 100" w100.txt

# A terminal's width when COLUMNS is not set (script(1) gives a tty).
if command -v script >/dev/null 2>&1 && command -v stty >/dev/null 2>&1; then
    (unset COLUMNS; script -qec "stty cols 50; '$CLI' analyze '$M' --text 'The cat.'" /dev/null) |
        tr -d '\r' > tty.txt
    PYSCRIPT='assert 40 < widest(a[0]) <= 50, widest(a[0])'
    pycheck "a terminal 50 columns wide: lines up to 50" tty.txt
fi

# The other formats do not depend on the width.
for f in csv md latex json tsv; do
    COLUMNS=30 "$CLI" analyze "$M" --text "The cat." --format $f > n.$f
    COLUMNS=1000 "$CLI" analyze "$M" --text "The cat." --format $f > w.$f
    check "--format $f is the same at any width" cmp -s n.$f w.$f
done

# --sort KEY[:desc] and --columns KEYS (docs/cli.md, "Choosing and ordering
# rows and columns"): the records of the unsorted run, stably sorted by
# Python, nulls last; the columns asked, in that order.
runj plain.json analyze "$M" --text-file corpus.txt --format json
runj sorted.json analyze "$M" --text-file corpus.txt --format json --sort effective_rank:desc
runj sorted_asc.json analyze "$M" --text-file corpus.txt --format json --sort entropy_mean
PYSCRIPT='
import functools
plain, desc, asc = records(a[0]), records(a[1]), records(a[2])
def order(key, reverse):
    have = [r for r in plain if r[key] is not None]
    none = [r for r in plain if r[key] is None]
    return sorted(have, key=lambda r: r[key], reverse=reverse) + none
assert desc == order("effective_rank", True)
assert asc == order("entropy_mean", False)
assert desc != plain and asc != plain
'
pycheck "--sort: the records stably sorted, desc and asc" plain.json sorted.json sorted_asc.json
runj cols.csv analyze "$M" --text-file corpus.txt --format csv --columns sigma_max,text,head     --sort text:desc
PYSCRIPT='
import csv
rows = list(csv.reader(open(a[1])))
assert rows[0] == ["sigma_max", "text", "head"], rows[0]
plain = records(a[0])
want = sorted(plain, key=lambda r: r["text"], reverse=True)
assert [[float(x[0]), int(x[1]), int(x[2])] for x in rows[1:]] == \
    [[r["sigma_max"], r["text"], r["head"]] for r in want]
'
pycheck "--columns: those columns in that order (csv of a corpus run)" plain.json cols.csv
"$CLI" analyze "$M" --text-file corpus.txt --format jsonl -o an.jsonl
runj agg.json aggregate an.jsonl --by layer --format json --sort sigma_max:desc --columns layer,sigma_max
runj cmp.json compare an.jsonl an.jsonl --format json --sort metric --columns metric,mean_a
PYSCRIPT='
agg, cmp = records(a[0]), records(a[1])
assert all(list(r) == ["layer", "sigma_max"] for r in agg)
assert [r["sigma_max"] for r in agg] == sorted((r["sigma_max"] for r in agg), reverse=True)
assert all(list(r) == ["metric", "mean_a"] for r in cmp)
assert [r["metric"] for r in cmp] == sorted(r["metric"] for r in cmp)
'
pycheck "aggregate and compare take --sort and --columns" agg.json cmp.json
mkdir -p "$T/o" # judge_error: nothing left there
for opt in "--sort nope" "--sort nope:desc" "--columns layer,nope"; do
    check "$opt: a usage error naming nope"
    # shellcheck disable=SC2086
    "$CLI" analyze "$M" --text "The cat." $opt >"$T/stdout" 2>"$T/stderr"
    rc=$?
    judge_error 2 "'nope'"
done
for opt in "--sort x:up" "--columns a,,b" "--sort ''"; do
    check "$opt: refused at parsing"
    eval "\"\$CLI\" analyze \"\$M\" --text 'The cat.' $opt" >"$T/stdout" 2>"$T/stderr"
    rc=$?
    judge_error 2 "--sort|--columns"
done
check "--columns layer,layer: named twice"
"$CLI" aggregate an.jsonl --columns layer,layer >"$T/stdout" 2>"$T/stderr"
rc=$?
judge_error 2 "twice"
check "attention prints no records: --sort refused"
"$CLI" attention "$M" --text hi -o a.npy --sort x >"$T/stdout" 2>"$T/stderr"
rc=$?
judge_error 2 "--sort"

# LaTeX for a paper: a table float with --caption and --tex-label, booktabs
# rules in order, display-name headers, --digits significant digits; the
# same streamed (a corpus run) as at once; the model, one name in every
# row, left out and named in the comment above the table.
runj tab.tex analyze "$M" --text-file corpus.txt --format latex --metrics effective_rank \
    --caption 'Tiny GPT-2 heads' --tex-label tab:heads --digits 3
runj tab.json analyze "$M" --text-file corpus.txt --format json --metrics effective_rank
PYSCRIPT='
lines = open(a[0]).read().split("\n")
need = ["% constant: model = tiny-gpt2", "\\begin{table}", "\\centering", "\\caption{Tiny GPT-2 heads}", "\\label{tab:heads}",
        "\\begin{tabular}{rrrrrr}", "\\toprule", "\\midrule", "\\bottomrule",
        "\\end{tabular}", "\\end{table}"]
at = [lines.index(x) for x in need]
assert at == sorted(at), at
head = lines[at[6] + 1]
assert head == "Layer & Head & Rows & Columns & Effective rank & Text \\\\", head
body = lines[at[7] + 1:at[8]]
recs = records(a[1])
assert len(body) == len(recs)
for line, r in zip(body, recs):
    cell = line.split(" & ")[4]
    assert cell == "%.3g" % r["effective_rank"], (cell, r["effective_rank"])
'
pycheck "latex: float, caption, label, booktabs, display names, --digits 3" tab.tex tab.json
mkdir -p "$T/o"
for opt in "--caption x" "--tex-label y"; do
    check "$opt without --format latex: a usage error"
    # shellcheck disable=SC2086
    "$CLI" analyze "$M" --text "The cat." $opt >"$T/stdout" 2>"$T/stderr"
    rc=$?
    judge_error 2 "--format latex"
done
check "--digits 0: a usage error"
"$CLI" compare an.jsonl an.jsonl --digits 0 >"$T/stdout" 2>"$T/stderr"
rc=$?
judge_error 2 "--digits"

finish
