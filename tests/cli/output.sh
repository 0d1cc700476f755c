#!/bin/sh
# tests/cli/output.sh CLI — how output files are written: -o and -o=FILE,
# the mode of a new file (0666 less the umask, as any program's) and of a
# replaced one (kept), `attention` writing both of its arrays or neither, and
# --expect refused by commands that print no records (exit 2), and the one
# table writer (ag_table_write) behind info, tokenize and the record
# commands: well-formed Markdown, CSV and LaTeX tables.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
M=$GPT2
A=$ROOT/examples/tiny_gpt2_attention.npy
cd "$T" || exit 1
umask 022
"$CLI" matrix "$A" --metrics sigma_max --format json -o=eq.json
check "-o=FILE writes the file" test -s eq.json
check "new file mode 644" test "$(stat -c %a eq.json)" = 644
chmod 640 eq.json
"$CLI" matrix "$A" --metrics sigma_max --format csv -o eq.json
check "replaced file keeps its mode" test "$(stat -c %a eq.json)" = 640
check "replaced file has the new content" grep -q "^layer,head,rows,cols,sigma_max,model$" eq.json

"$CLI" attention "$M" --tokens 818,262 -o a.npy --hidden h.npy
check "attention writes both arrays" test -s a.npy -a -s h.npy
cp a.npy a_before.npy
"$CLI" attention "$M" --tokens 818 -o a.npy --hidden missing_dir/h.npy 2> err
check "failed --hidden: exit 1, one line" test $? -eq 1 -a "$(wc -l < err)" -eq 1
check "failed --hidden leaves the earlier OUT.npy" cmp -s a.npy a_before.npy
check "no temporary files left" test "$(ls | grep -c part)" -eq 0

for cmd in "attention $M --tokens 818 -o x.npy" "tokenize $M --text hi" "info $M"; do
    # shellcheck disable=SC2086
    "$CLI" $cmd --expect eq.json > out 2> err
    check "--expect refused by ${cmd%% *}" test $? -eq 2 -a ! -s out -a "$(wc -l < err)" -eq 1
done
check "refused attention wrote nothing" test ! -e x.npy

# ---- one table writer: every table is well formed --------------------------------
# md_ok FILE ROWS: every line (after the comment naming the columns left out
# for holding one label in every row) is a row that starts with "| " and ends with " |",
# has the header's number of cells (a cell's "\|" is not a separator), the
# second line is the alignment row, and there are ROWS data rows.
md_ok() {
    grep -v "^<!-- constant: .* -->$" "$1" | awk -v rows="$2" '
        { line = $0; gsub(/\\\|/, "", line); n = gsub(/\|/, "|", line) }
        NR == 1 { cols = n }
        substr($0, 1, 2) != "| " || substr($0, length($0) - 1) != " |" || n != cols { bad = 1 }
        NR == 2 && $0 !~ /^\|( ---:? \|)+$/ { bad = 1 }
        END { exit bad || cols < 2 || NR - 2 != rows }'
}
# csv_ok FILE ROWS: RFC 4180 rows of the header's width (Python's csv module).
csv_ok() {
    "$PY" -c 'import csv, sys
r = list(csv.reader(open(sys.argv[1], newline="")))
sys.exit(not (len(r) == int(sys.argv[2]) + 1 and all(len(x) == len(r[0]) for x in r)))' "$1" "$2"
}
# tex_ok FILE ROWS: a tabular with one column letter per cell of every row.
tex_ok() {
    awk -v rows="$2" '
        /^\\begin\{tabular\}/ { spec = $0; sub(/.*\{tabular\}\{/, "", spec); sub(/\}.*/, "", spec); cols = length(spec) }
        /\\\\$/ { line = $0; gsub(/\\verb(.).*\1/, "V", line); n = split(line, f, " & ");
                      if (n != cols) bad = 1; body++ }
        END { exit bad || cols < 2 || body - 1 != rows || !/end\{tabular\}/ }' "$1"
}
"$CLI" info "$M" --format json > info.json
IROWS=$("$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(len(d["config"]) + 1 + len(d["tensors"]))' info.json)
"$CLI" info "$M" --format md > info.md
check "info --format md: $IROWS rows, each | ... | with 5 cells" md_ok info.md "$IROWS"
check "info --format md: a row as the writer prints it" grep -qxF '| config | model_type | gpt2 | — | — |' info.md
"$CLI" info "$M" --format csv > info.csv
check "info --format csv: $IROWS rows of 5 fields" csv_ok info.csv "$IROWS"
"$CLI" info "$M" --format latex > info.tex
check "info --format latex: $IROWS rows of 5 cells" tex_ok info.tex "$IROWS"
TXT='Hi | "there" & 50% $x_1'
"$CLI" tokenize "$M" --text "$TXT" --format json > tok.json
TROWS=$("$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["ids"]))' tok.json)
for f in md csv latex; do
    "$CLI" tokenize "$M" --text "$TXT" --format $f > tok.$f
done
check "tokenize --format md: $TROWS rows of 4 cells (a token | escaped)" md_ok tok.md "$TROWS"
check "tokenize --format md: numbers right, tokens left" grep -qxF '| ---: | ---: | --- | --- |' tok.md
check "tokenize --format csv: $TROWS rows of 4 fields" csv_ok tok.csv "$TROWS"
check "tokenize --format latex: $TROWS rows of 4 cells" tex_ok tok.latex "$TROWS"
"$CLI" tokenize "$M" --text "$TXT" > tok.table
check "tokenize table: header, then one line per token" test "$(wc -l < tok.table)" -eq $((TROWS + 1))
"$CLI" analyze "$M" --text-file "$ROOT/docs/figures/genesis1.txt" --layers 1 --heads 0-1 \
    --metrics sink_ratio,causal > an.json --format json
AROWS=$("$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["records"]))' an.json)
for f in md csv latex; do
    "$CLI" analyze "$M" --text-file "$ROOT/docs/figures/genesis1.txt" --layers 1 --heads 0-1 \
        --metrics sink_ratio,causal --format $f > an.$f
done
check "analyze --format md: $AROWS rows, each | ... |" md_ok an.md "$AROWS"
check "analyze --format csv: $AROWS rows" csv_ok an.csv "$AROWS"
check "analyze --format latex: $AROWS rows" tex_ok an.latex "$AROWS"
"$CLI" similarity "$M" --text "In the beginning" --layers 0 --heads 0-2 --format md > sim.md
check "similarity --format md: 3 pairs, each | ... |" md_ok sim.md 3
"$CLI" aggregate an.json --format md > agg.md
check "aggregate --format md: 2 groups, each | ... |" md_ok agg.md 2

finish
