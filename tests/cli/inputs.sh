#!/bin/sh
# tests/cli/inputs.sh CLI — what a run reads is safe from what it writes
# and never blocks (docs/cli.md, "Inputs are regular files" and "Outputs"):
#  - a FIFO config.json, preprocessor_config.json or list file fails at once
#    (exit 1, one line naming it) for tokenize, analyze, info and attention
#    — every run here is under `timeout 10`, so a regression fails instead
#    of hanging;
#  - an output that is an input of the run — an entry of an image or audio
#    list, a file a {i} pattern expands to, a symlink to an input, the list
#    itself, a model file — is refused before anything runs (exit 1, one
#    line naming both) and stays byte for byte as it was;
#  - a progressive JPEG of more than 100 scans (AG_JPEG_SCANS_MAX) is
#    refused, alone or in a list, with nothing written.
# Run from the repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
VIT=$ROOT/tests/data/models/tiny-vit
WH=$ROOT/tests/data/models/tiny-whisper
BERT=$ROOT/tests/data/models/tiny-bert
IMG=$ROOT/tests/data/images
AUD=$ROOT/tests/data/audio
need "$VIT/config.json" "$WH/config.json" "$BERT/config.json" "$IMG/rgb8_37x23.png" \
    "$AUD/chirp_1s.wav"
cd "$T" || exit 1

# refuse NEEDLES DESC ARGS... : the CLI with ARGS exits 1 within 10 s with
# one stderr line holding one of the |-separated NEEDLES (judge_error).
refuse() {
    needles=$1 DESC=$2
    shift 2
    N=$((N + 1))
    rm -rf "$T/o"
    mkdir "$T/o"
    timeout 10 "$CLI" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
    rc=$?
    judge_error 1 "$needles"
}

# ---- FIFOs: refused at once ----------------------------------------------------
for m in "$BERT" "$VIT"; do
    rm -rf fm && cp -r "$m" fm && rm fm/config.json && mkfifo fm/config.json
    for c in tokenize analyze attention; do
        refuse "fm/config.json: is not a regular file" "FIFO config.json: $c $(basename "$m")" \
            $c fm --text hi -o o/x.npy
    done
    refuse "fm/config.json: is not a regular file" "FIFO config.json: info $(basename "$m")" info fm
done
rm -rf fp && cp -r "$VIT" fp && mkfifo fp/preprocessor_config.json
for c in analyze attention; do
    refuse "fp/preprocessor_config.json: is not a regular file" "FIFO preprocessor_config.json: $c" \
        $c fp --image "$IMG/rgb8_37x23.png" -o o/x.npy
done
mkfifo list.txt
for c in analyze attention; do
    refuse "list.txt: is not a regular file" "FIFO --image-file: $c" \
        $c "$VIT" --image-file list.txt -o 'o/x_{i}.npy'
    refuse "list.txt: is not a regular file" "FIFO --audio-file: $c" \
        $c "$WH" --audio-file list.txt -o 'o/x_{i}.npy'
done
# ---- the identity rule: an input is never an output ---------------------------
# keep NEEDLES DESC FILE ARGS... : refused as `refuse` says, FILE byte for
# byte as it was; FILE is restored after, so that a regression fails this
# check alone.
keep() {
    needles=$1 desc=$2 file=$3
    shift 3
    cp "$file" "$file.before"
    refuse "$needles" "$desc" "$@"
    check "$desc: $file unchanged" cmp -s "$file" "$file.before"
    cp "$file.before" "$file"
}
cp "$IMG/rgb8_37x23.png" a.png
cp "$IMG/gray8_40x30.png" b.png
printf '%s\n' b.png a.png >l.txt
keep "-o a.png is the same file as a.png, listed in --image-file l.txt" \
    "analyze -o an image of the list" a.png analyze "$VIT" --image-file l.txt -o a.png
cp "$AUD/chirp_1s.wav" c.wav
printf '%s\n' c.wav >al.txt
keep "-o c.wav is the same file as c.wav, listed in --audio-file al.txt" \
    "analyze -o a WAV of the list" c.wav analyze "$WH" --audio-file al.txt --frames 20 -o c.wav
# x_1.npy is line 1 of the list and what -o x_{i}.npy names for it
cp a.png x_1.npy
printf '%s\n' b.png x_1.npy >lx.txt
keep "-o x_1.npy is the same file as x_1.npy, listed in --image-file lx.txt" \
    "attention -o x_{i}.npy naming an image of the list" x_1.npy \
    attention "$VIT" --image-file lx.txt -o 'x_{i}.npy'
check "attention -o x_{i}.npy: no x_0.npy written first" test ! -e x_0.npy
ln -s x_1.npy h_1.npy
keep "--hidden h_1.npy is the same file as x_1.npy" "attention --hidden h_{i}.npy: a symlink to an input" \
    x_1.npy attention "$VIT" --image-file lx.txt -o 'o/a_{i}.npy' --hidden 'h_{i}.npy'
ln -s a.png link.png
keep "-o link.png is the same file as a.png, listed in --image-file l.txt" \
    "analyze -o a symlink to an image of the list" a.png analyze "$VIT" --image-file l.txt -o link.png
printf '%s\n' a.png >list0.txt
keep "-o list0.txt is the same file as --image-file list0.txt" \
    "attention -o list{i}.txt: the list itself" list0.txt \
    attention "$VIT" --image-file list0.txt -o 'list{i}.txt'
# the model's own files: one it takes only for images, and weights reached
# through a symlink of the folder (the file outside it is what is read)
cp -r "$VIT" mv
printf '{"size": {"height": 32, "width": 32}}\n' >mv/preprocessor_config.json
keep "a file of the model folder MODEL mv" "analyze -o the model's preprocessor_config.json" \
    mv/preprocessor_config.json analyze mv --image a.png -o mv/preprocessor_config.json
mv mv/model.safetensors weights.st && ln -s ../weights.st mv/model.safetensors
keep "is the same file as mv/model.safetensors, a file of the model folder MODEL mv" \
    "analyze -o the weights a model file links to" weights.st \
    analyze mv --image-file l.txt -o weights.st
# ---- a progressive JPEG past 100 scans: refused, not decoded for minutes --------
refuse "scans_101_48x36.jpg: progressive JPEG with more than 100 scans" \
    "--image: a JPEG of 101 scans" analyze "$VIT" --image "$IMG/scans_101_48x36.jpg" -o o/x.csv
printf '%s\n' "$IMG/progressive_48x36.jpg" "$IMG/scans_101_48x36.jpg" >scans.txt
refuse "scans_101_48x36.jpg: progressive JPEG with more than 100 scans" \
    "--image-file: a JPEG of 101 scans on line 2" attention "$VIT" --image-file scans.txt -o 'o/x_{i}.npy'

finish
