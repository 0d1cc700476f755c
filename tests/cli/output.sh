#!/bin/sh
# tests/cli/output.sh CLI — how output files are written: -o and -o=FILE,
# the mode of a new file (0666 less the umask, as any program's) and of a
# replaced one (kept), `attention` writing both of its arrays or neither, and
# --expect refused by commands that print no records (exit 2).
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
check "replaced file has the new content" grep -q "^layer,head,rows,cols,sigma_max$" eq.json

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

finish
