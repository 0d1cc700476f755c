#!/bin/sh
# tests/cli/aggregate.sh CLI — `attngeom aggregate`, `compare` and
# --aggregate: every output format works (Markdown and LaTeX print
# mean ± half-width, JSONL starts with its settings line); records read
# from standard input; the same table whatever format the records were
# saved in; bad input (malformed JSON, JSONL, CSV; a missing file; a
# directory; no records) fails with exit 1, exactly one line on stderr
# naming the file and the line or record, nothing on stdout and no -o file
# written or replaced; usage errors exit 2. The numbers themselves are
# checked by tests/ref/check_aggregate.py and tests/stats/test_aggregate.c.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
M=$GPT2
A=$ROOT/examples/tiny_gpt2_attention.npy
cd "$T" || exit 1

printf '%s\n' "The cat sat on the mat." "Call me Ishmael." "All happy families are alike." \
    "In the beginning was the word." > corpus.txt
"$CLI" analyze "$M" --text-file corpus.txt --layers 0,1 --metrics sink_mass,causal,entropy_mean \
    --format json -o per.json || exit 1
for f in jsonl csv tsv; do
    "$CLI" analyze "$M" --text-file corpus.txt --layers 0,1 --metrics sink_mass,causal,entropy_mean \
        --format $f -o per.$f || exit 1
done

# ---- formats ---------------------------------------------------------------
"$CLI" aggregate per.json --format csv > agg.csv
check "aggregate csv header" test "$(head -1 agg.csv)" = \
    "model,layer,head,unit,n,n_units,rows,rows_std,rows_ci_low,rows_ci_high,rows_n,cols,cols_std,cols_ci_low,cols_ci_high,cols_n,causal,causal_std,causal_ci_low,causal_ci_high,causal_n,entropy_mean,entropy_mean_std,entropy_mean_ci_low,entropy_mean_ci_high,entropy_mean_n,sink_mass,sink_mass_std,sink_mass_ci_low,sink_mass_ci_high,sink_mass_n"
check "one record per (layer, head)" test "$(wc -l < agg.csv)" -eq 9
for f in jsonl csv tsv; do
    "$CLI" aggregate per.$f --format csv > agg_$f.csv
    check "aggregate of the $f records = of the json ones" cmp -s agg.csv agg_$f.csv
done
"$CLI" analyze "$M" --text-file corpus.txt --layers 0,1 --metrics sink_mass,causal,entropy_mean \
    --aggregate --format csv > direct.csv
check "analyze --aggregate = aggregate of its records" cmp -s agg.csv direct.csv
cat per.jsonl | "$CLI" aggregate - --format csv > stdin.csv
check "records on standard input" cmp -s agg.csv stdin.csv
for f in table json jsonl csv tsv md latex; do
    "$CLI" aggregate per.json --format $f > out.$f 2> err
    check "aggregate --format $f" test $? -eq 0 -a -s out.$f -a ! -s err
    "$CLI" compare per.json per.csv --format $f > cmp.$f 2> err
    check "compare --format $f" test $? -eq 0 -a -s cmp.$f -a ! -s err
done
check "jsonl: settings first" grep -q '^{"settings":{"command":"aggregate","source":"per.json"' out.jsonl
check "jsonl: one record a line" test "$(wc -l < out.jsonl)" -eq 9
# md and latex: the model, unit and counts (one label in every row) named above the table
check "md: constant columns named" grep -q '^<!-- constant: model = tiny-gpt2, unit = text, n = 4, n_units = 4 -->$' out.md
check "md: mean ± half-width" grep -q '^| 0 | 0 | [0-9.]* ± [0-9.]* |' out.md
check "latex: constant columns named" grep -q '^% constant: model = tiny-gpt2, unit = text, n = 4, n_units = 4$' out.latex
check "latex: \\pm" grep -q '^0 & 0 & \$[0-9.]* \\pm [0-9.]*\$ & ' out.latex
check "table: mean ± half-width" grep -q ' ± ' out.table
# the units are the 4 texts (each the mean of its 8 heads' records)
check "compare of a file with itself: diff 0, p 1" \
    grep -q '^"sink_mass","text",4,4,8,\([0-9.e-]*\),\1,0,-[0-9.e-]*,[0-9.e-]*,0,6,1,1,1,0,' cmp.csv
check "compare: booleans without spread have no test" grep -q '^"causal","text",4,4,8,1,1,0,,,,,,,,,,$' cmp.csv
check "compare: the metrics, not the sizes rows and cols" test "$(cut -d, -f1 cmp.csv | tr '\n' ' ')" = \
    'metric "causal" "entropy_mean" "sink_mass" '
"$CLI" compare per.json per.csv --metrics rows --format csv > rows.csv
check "compare --metrics rows: a size when asked for" grep -q '^"rows","text",4,4,8,' rows.csv
"$CLI" compare per.json per.jsonl --metrics sink_mass --permutations 200 --seed 3 --format csv > perm.csv
check "compare --permutations adds p_perm" test "$(head -1 perm.csv)" = \
    "metric,unit,n_a,n_b,n_units,mean_a,mean_b,diff,ci_low,ci_high,t,df,p,p_holm,q_bh,hedges_g,hedges_g_ci_low,hedges_g_ci_high,p_perm,p_perm_holm,q_perm_bh"
check "p_perm of a file with itself is 1" grep -q '^"sink_mass",.*,1,1,1$' perm.csv
"$CLI" compare per.json per.jsonl --by layer --metrics sink_mass,entropy_mean --format csv > by.csv
check "compare --by layer: one row per (layer, metric)" test "$(wc -l < by.csv)" -eq 5
check "compare --by layer: the key first" test "$(head -1 by.csv | cut -d, -f1,2)" = "layer,metric"
for cmd in "residual $M --text-file corpus.txt" "rollout $M --text-file corpus.txt" "weights $M" \
    "matrix $A"; do
    # shellcheck disable=SC2086
    "$CLI" $cmd --aggregate --format csv > a.csv 2> err
    check "${cmd%% *} --aggregate" test $? -eq 0 -a "$(head -1 a.csv | cut -d, -f1-6)" = "model,layer,head,unit,n,n_units" -a ! -s err
done

# ---- units, paired, bootstrap (values: tests/python/test_stats.py) --------
"$CLI" aggregate per.json --by model --unit layer,head --format csv > unit.csv
check "--unit layer,head: one value per head" grep -q '^"tiny-gpt2","layer,head",32,8,' unit.csv
"$CLI" analyze "$M" --text-file corpus.txt --layers 0,1 --metrics sink_mass,causal,entropy_mean \
    --aggregate --by model --unit layer,head --format csv > unit_direct.csv
check "--aggregate --unit = aggregate --unit of the records" cmp -s unit.csv unit_direct.csv
"$CLI" analyze "$M" --text "hi" --unit layer > out 2> err
check "--unit without --aggregate: usage error" test $? -eq 2 -a ! -s out
"$CLI" aggregate per.json --bootstrap 400 --seed 2 -j 1 --format csv > b1.csv
"$CLI" aggregate per.json --bootstrap 400 --seed 2 -j 2 --format csv > b2.csv
check "--bootstrap: the same at -j 1 and -j 2" cmp -s b1.csv b2.csv
check "--bootstrap adds percentile and BCa bounds" grep -q ',sink_mass_pct_low,sink_mass_pct_high,sink_mass_bca_low,sink_mass_bca_high$' b1.csv
"$CLI" aggregate per.json --seed 2 > out 2> err
check "--seed without --bootstrap: usage error" test $? -eq 2 -a ! -s out
"$CLI" compare per.json per.csv --paired --by layer,head --format csv > paired.csv
check "compare --paired: p_wilcoxon and dz" test "$(head -1 paired.csv | cut -d, -f21-)" = "p_wilcoxon,dz"
head -4 corpus.txt | tail -3 > short.txt
"$CLI" analyze "$M" --text-file short.txt --layers 0,1 --metrics sink_mass --format json -o short.json
"$CLI" compare short.json per.json --paired --metrics sink_mass > out 2> err
check "compare --paired: an unmatched unit is named" test $? -eq 1 -a ! -s out -a "$(cat err)" = \
    "attngeom: compare --paired: the unit text=3 of per.json has no match in short.json"

# ---- errors: exit 1, one line naming the file and the place, nothing written
printf '{"layer": 0, "x": 1}\n{"layer": 0, "x": [1]}\n' > bad.jsonl
printf '{\n "records": [\n  {"x": 1},\n  {"x": 2\n ]\n}\n' > bad.json
printf 'layer,x\n0,1\n0\n' > bad.csv
printf '{\n "records": [{"x": 1}, {"x": {"y": 2}}]\n}\n' > nested.json
: > empty.json
mkdir adir
echo keep > out.json
expect_error() { # DESC NEEDLE ARGS...
    desc=$1 needle=$2
    shift 2
    "$CLI" "$@" -o out.json > stdout 2> stderr
    rc=$?
    check "$desc: exit 1" test $rc -eq 1
    check "$desc: one line" test "$(wc -l < stderr)" -eq 1
    check "$desc: names the place ($needle)" grep -qF -e "$needle" stderr
    check "$desc: nothing on stdout" test ! -s stdout
    check "$desc: -o left as it was" test "$(cat out.json)" = keep
    check "$desc: no temporary left" test "$(ls | grep -c tmp)" -eq 0
}
expect_error "malformed JSONL" "bad.jsonl: line 2: key 'x' holds an array" aggregate per.json bad.jsonl
expect_error "malformed JSON" "bad.json: line 5:" aggregate bad.json
expect_error "CSV row too short" "bad.csv: line 3: 1 cell, the header has 2" aggregate bad.csv
expect_error "nested value" "nested.json: record 2: key 'x' holds an object" aggregate nested.json
expect_error "no records" "empty.json: no records" aggregate empty.json
expect_error "missing file" "nope.json:" aggregate nope.json
expect_error "directory" "adir: is a directory" aggregate adir
expect_error "unknown --by key" "--by 'nope': no record has this key" aggregate per.json --by nope
expect_error "compare: malformed B" "bad.csv: line 3:" compare per.json bad.csv
expect_error "compare: unknown metric" "per.json: 'nope' is not a numeric key" compare per.json per.csv --metrics nope
expect_error "output equal to an input" "is the same file as FILE" aggregate out.json

usage() { # DESC ARGS...
    desc=$1
    shift
    "$CLI" "$@" > stdout 2> stderr
    check "$desc: exit 2, one line, nothing on stdout" \
        test $? -eq 2 -a "$(wc -l < stderr)" -eq 1 -a ! -s stdout
}
usage "aggregate without FILE" aggregate
usage "aggregate --ci 1" aggregate per.json --ci 1
usage "aggregate --by with an empty key" aggregate per.json --by layer,,head
usage "stdin twice" aggregate - -
usage "compare with one file" compare per.json
usage "compare with three files" compare per.json per.csv per.tsv
usage "compare --seed without --permutations" compare per.json per.csv --seed 3
usage "compare --permutations 0" compare per.json per.csv --permutations 0
usage "--by without --aggregate" analyze "$M" --text hi --by layer
usage "--ci without --aggregate" weights "$M" --ci 0.9
usage "--aggregate with --expect" matrix per.json --aggregate --expect per.json
usage "attention takes no --aggregate" attention "$M" --text hi -o x.npy --aggregate
usage "layer takes no --aggregate" layer --aggregate

finish
