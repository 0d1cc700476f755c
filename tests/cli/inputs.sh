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
#    line naming both) and stays byte for byte as it was.
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
finish
