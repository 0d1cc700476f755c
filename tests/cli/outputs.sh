#!/bin/sh
# tests/cli/outputs.sh CLI — the -o rules of docs/cli.md ("Outputs") and
# inputs that must not hang, one case per class:
#  - special files as -o are written in place, never replaced (/dev/null stays
#    a device, also as root), /dev/full fails, a FIFO receives the bytes,
#    /dev/stdout, /proc/self/fd/1 and /dev/fd/N write to the descriptor;
#  - a symlink is followed; a read-only file, a directory, an input of the
#    command and a second output to the same file are refused before anything
#    runs, and leave every file byte-identical;
#  - a failing command (malformed --expect, an output that cannot be written)
#    leaves earlier outputs byte-identical and no temporary file behind;
#  - a FIFO as any input exits 1 at once (each run under `timeout 10`);
#  - --help and --version to a full device exit 1.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
M=$GPT2
BERT=$ROOT/tests/data/models/tiny-bert
A=$ROOT/examples/tiny_gpt2_attention.npy
USE=$ROOT/tests/data/use-lite/qkv.safetensors
X=$ROOT/tests/data/fixtures/use-lite/x_0_layer0.npy
QKV='module/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0'
cd "$T" || exit 1
# run WANT DESC ARGS...: exit status WANT within 10 s; for WANT 1 exactly
# one line on stderr
run() {
    want=$1 desc=$2
    shift 2
    timeout 10 "$CLI" "$@" > out 2> err < /dev/null
    rc=$?
    N=$((N + 1))
    if [ $rc -ne "$want" ] || { [ "$want" -eq 1 ] && [ "$(wc -l < err)" -ne 1 ]; }; then
        FAILS=$((FAILS + 1))
        echo "FAIL [$desc]: exit $rc (want $want): $(head -c 300 err)"
    fi
}
same() { cmp -s "$1" "$2"; }
no_temporaries() { test -z "$(find . -name '*.tmp*' | head -n 1)"; }
MX="matrix $A --metrics sigma_max,entropy_mean"
"$CLI" $MX > plain.txt || exit 1

# ---- special files as -o -------------------------------------------------
run 0 "-o /dev/null" $MX -o /dev/null
check "/dev/null is still a character device" test -c /dev/null
run 1 "-o /dev/full" $MX -o /dev/full
check "/dev/full names the device" grep -q "/dev/full: .*No space left" err
mkfifo fifo
timeout 10 cat fifo > from_fifo &
run 0 "-o FIFO with a reader" $MX -o fifo
wait
check "FIFO received the records" same from_fifo plain.txt
check "FIFO is still a FIFO" test -p fifo
"$CLI" $MX -o /dev/stdout > via_stdout
check "-o /dev/stdout" same via_stdout plain.txt
"$CLI" $MX -o /proc/self/fd/1 > via_proc
check "-o /proc/self/fd/1" same via_proc plain.txt
"$CLI" $MX -o - > via_dash
check "-o - is standard output" same via_dash plain.txt
"$CLI" $MX -o /dev/fd/3 3> via_fd3
check "-o /dev/fd/3 (what bash's >(cmd) passes)" same via_fd3 plain.txt
"$CLI" $MX -o /dev/fd/3 3>&1 | cat > via_pipe
check "-o /dev/fd/3 into a pipe" same via_pipe plain.txt
{ echo first; "$CLI" $MX -o /dev/stdout; echo last; } > grouped
{ echo first; cat plain.txt; echo last; } > grouped_want
check "-o /dev/stdout keeps the descriptor's offset" same grouped grouped_want

# ---- symlinks, read-only files, directories -------------------------------
echo old > target.txt
ln -s target.txt link.txt
run 0 "-o symlink" $MX -o link.txt
check "the symlink is still a symlink" test -L link.txt
check "the symlink's target was written" same target.txt plain.txt
ln -s new_target.txt dangling.txt
run 0 "-o dangling symlink" $MX -o dangling.txt
check "a dangling symlink's target is created" test -L dangling.txt -a -f new_target.txt
echo keep > ro.txt
chmod 444 ro.txt
cp ro.txt ro_before
run 1 "-o read-only file" $MX -o ro.txt
check "read-only file untouched" same ro.txt ro_before
check "read-only file keeps its mode" test "$(stat -c %a ro.txt)" = 444
mkdir adir
run 1 "-o directory" $MX -o adir
check "directory left empty" test -z "$(ls adir)"

# ---- an output that is an input, or another output -------------------------
cp "$A" a.npy
run 1 "matrix a.npy -o a.npy" matrix a.npy -o a.npy
check "input untouched" same a.npy "$A"
ln a.npy hard.npy
run 1 "-o a hard link of the input" matrix a.npy -o hard.npy
check "input untouched (hard link)" same a.npy "$A"
"$CLI" $MX --format json -o gold.json
cp gold.json gold_before
run 1 "--expect equal to -o" $MX --format json --expect gold.json -o gold.json
check "golden file untouched" same gold.json gold_before
L="layer --x $X --weights $USE --qkv $QKV --heads 4 --scale 0.125 --metrics sigma_max"
cp "$X" x.npy
run 1 "--save-attention equal to --x" layer --x x.npy --weights "$USE" --qkv "$QKV" --heads 4 \
    --save-attention x.npy
check "--x untouched" same x.npy "$X"
run 1 "--save-attention equal to -o" $L --save-attention s.npy -o ./s.npy
run 1 "--save-attention - with the records on stdout" $L --save-attention -
run 1 "attention -o X --hidden X" attention "$M" --tokens 818,262 -o X.npy --hidden X.npy
check "nothing written for -o X --hidden X" test ! -e X.npy
run 1 "rollout -o - with the records on stdout" rollout "$M" --tokens 818,262 -o -
cp -r "$M" model
cp model/config.json config_before
run 1 "-o a file of the model folder" analyze model --tokens 818 -o model/config.json
check "config.json untouched" same model/config.json config_before
echo "In the beginning" > texts.txt
cp texts.txt texts_before
run 1 "-o equal to --text-file" analyze "$M" --text-file texts.txt -o texts.txt
check "--text-file untouched" same texts.txt texts_before
check "no temporaries after refusals" no_temporaries

# ---- a failing command leaves earlier outputs untouched --------------------
echo '{"records": [' > bad.json
echo previous > save.npy
cp save.npy save_before
run 1 "layer: malformed --expect" $L --save-attention save.npy --expect bad.json
check "--save-attention untouched by a malformed --expect" same save.npy save_before
run 1 "layer: -o /dev/full" $L --save-attention save.npy -o /dev/full
check "--save-attention untouched by a failing -o" same save.npy save_before
run 1 "layer: -o in a missing folder" $L --save-attention save.npy -o nodir/out.txt
check "--save-attention untouched by a missing folder" same save.npy save_before
echo previous > att.npy
cp att.npy att_before
run 1 "attention: --hidden /dev/full" attention "$M" --tokens 818,262 -o att.npy --hidden /dev/full
check "attention -o untouched by a failing --hidden" same att.npy att_before
run 1 "attention: --hidden read-only" attention "$M" --tokens 818,262 -o att.npy --hidden ro.txt
check "attention -o untouched by a read-only --hidden" same att.npy att_before
echo previous > roll.npy
cp roll.npy roll_before
run 1 "rollout: malformed --expect" rollout "$M" --tokens 818,262 -o roll.npy --expect bad.json
check "rollout -o untouched by a malformed --expect" same roll.npy roll_before
timeout 10 "$CLI" rollout "$M" --tokens 818,262 -o roll.npy > /dev/full 2> err
check "rollout: records to a full device exit 1" test $? -eq 1
check "rollout -o untouched when the records cannot be written" same roll.npy roll_before
echo previous > res.json
cp res.json res_before
run 1 "residual: malformed --expect" residual "$M" --tokens 818,262 -o res.json --expect bad.json
check "residual -o untouched" same res.json res_before
check "no temporaries after failures" no_temporaries
run 0 "layer writes both outputs" $L --save-attention save.npy -o records.txt
check "--save-attention written" test "$(head -c 6 save.npy | tail -c 5)" = NUMPY
check "layer records written" grep -q sigma_max records.txt

# ---- FIFO inputs: exit 1 at once --------------------------------------------
mkfifo in.npy in.safetensors in.json in.txt
run 1 "FIFO .npy" matrix in.npy
check "names the FIFO" grep -q "in.npy: is not a regular file" err
run 1 "FIFO .safetensors" matrix in.safetensors
run 1 "FIFO --expect" $MX --expect in.json
run 1 "FIFO --text-file" analyze "$M" --text-file in.txt
run 1 "FIFO --x" layer --x in.npy --weights "$USE" --qkv "$QKV" --heads 4
run 1 "FIFO --weights" layer --x x.npy --weights in.safetensors --qkv "$QKV" --heads 4
run 1 "FIFO info" info in.safetensors
for f in config.json model.safetensors tokenizer.json; do
    rm -rf fm && cp -r "$M" fm && rm fm/$f && mkfifo fm/$f
    run 1 "FIFO $f in a model folder" analyze fm --text "In the beginning"
done
rm -rf fb && cp -r "$BERT" fb && rm -f fb/tokenizer.json fb/vocab.txt && mkfifo fb/vocab.txt
run 1 "FIFO vocab.txt" tokenize fb --text hello
rm -rf fv && mkdir fv && cp "$M/config.json" fv/ && mkfifo fv/vocab.json && echo '#v' > fv/merges.txt
run 1 "FIFO vocab.json" tokenize fv --text hello
echo "In the beginning" | timeout 10 "$CLI" analyze "$M" --text-file - --layers 0 --heads 0 \
    --metrics sigma_max > stdin_out 2> err
check "--text-file - reads standard input" grep -q "^ *0 *0 " stdin_out

# ---- every write to standard output is checked -------------------------------
for args in "--help" "--version" "matrix --help" "analyze --help"; do
    # shellcheck disable=SC2086
    timeout 10 "$CLI" $args > /dev/full 2> err
    check "$args > /dev/full exits 1" test $? -eq 1 -a "$(wc -l < err)" -eq 1
done
timeout 10 "$CLI" --version >&- 2> err
check "--version with stdout closed exits 1" test $? -eq 1
timeout 10 "$CLI" $MX > /dev/full 2> err
check "records > /dev/full exit 1, one line" test $? -eq 1 -a "$(wc -l < err)" -eq 1

finish
